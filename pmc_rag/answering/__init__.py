"""Answering a question, whoever asks: the CLI, the HTTP server, MCP and the evaluation all come through here.

- `service.AnswerService`: one question in, one checked answer out (guards, the crisis check, conversations, the
  answer cache, the queue turn), raising its own refusals (`refusals`), never an HTTP error;
- `pipeline_run`: one run of an answering pipeline, with its stage timings and sources;
- the parts the service uses: `guards`, `crisis` (with `crisis_classifier` and `crisis_replies`), `conversation`
  and `history`, `cache`, `answer_slots`, `streaming`, `caller` (who is asking, for how long).

`pmc_rag.serving` holds the HTTP adapters over this package; nothing here imports it (a contract in
pyproject.toml, checked by tests/project/test_layers.py).
"""
