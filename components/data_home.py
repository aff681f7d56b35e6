"""Where pmc-rag keeps its files: the one definition, which `pmc_rag.paths` and the components that cache models
(the ONNX exports, exemplar vectors, CPU trial markers) share, so that no component imports the set-up layer.

Usage:
```python
from pmc_rag.components.data_home import home, models_dir

models_dir() / "onnx"   # PMC_RAG_HOME/models/onnx (PMC_RAG_HOME defaults to .pmc-rag/ in the checkout)
```
"""

from __future__ import annotations

import os
from pathlib import Path

# The checkout (or, installed, the folder holding the package): the same as pmc_rag.paths.PROJECT_ROOT.
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


def home() -> Path:
    path = Path(os.environ.get("PMC_RAG_HOME") or _PROJECT_ROOT / ".pmc-rag").expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def models_dir() -> Path:
    path = home() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path
