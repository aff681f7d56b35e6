"""`python -m pmc_rag.cli`: the `pmc-rag` command."""

import sys

from pmc_rag.cli import main

sys.exit(main())
