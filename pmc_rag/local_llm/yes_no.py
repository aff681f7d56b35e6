"""An embedded model's yes or no to a question, read as the log-odds of its first word rather than as text.

Generating a word and parsing it throws away how sure the model was; the log-odds of "yes" against "no" as the
first token of its reply keep it, so that a caller can act only where the model is sure enough (a threshold
measured on labelled data: `evaluation/directions.py`, `evaluation/sentence_pairs.py`).

Usage:
```python
from pmc_rag.local_llm.yes_no import YesNoJudge

judge = YesNoJudge("qwen2.5-coder-1.5b-instruct")   # an installed model of `pmc-rag model list`
judge.log_odds("Answer with one word: yes or no.", "Is water wet?")   # > 0: "yes" is the likelier first word
```
"""

from __future__ import annotations

from typing import Any

from pmc_rag.models import EMBEDDED_LLMS, ModelError


def chatml(system: str, user: str) -> str:
    """The prompt in ChatML, the chat template of the Qwen2.5 models, ready for the assistant's first token."""
    return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


class YesNoJudge:
    """Loads an installed embedded model (a ChatML GGUF of `EMBEDDED_LLMS`) once, in this process."""

    def __init__(self, model: str = "qwen2.5-coder-1.5b-instruct", n_ctx: int = 1024):
        if model not in EMBEDDED_LLMS:
            raise ModelError(f"Unknown model {model!r}: `pmc-rag model list` names the models")
        self.path = EMBEDDED_LLMS[model].path
        if not self.path.exists():
            raise ModelError(f"{model} is not installed ({self.path} is missing): pmc-rag model install {model}")
        self.model = model
        self.n_ctx = n_ctx
        self._llm: Any = None
        self._tokens: dict[str, int] = {}

    def warm_up(self) -> None:
        if self._llm is None:
            from pmc_rag.local_llm.server import load_llama

            self._llm = load_llama(str(self.path), self.n_ctx)
            self._tokens = {w: self._llm.tokenize(w.encode(), add_bos=False, special=False)[0]
                            for w in ("yes", "Yes", "no", "No")}

    def close(self) -> None:
        """Free the model now (llama.cpp's own clean-up fails noisily when left to the interpreter's exit)."""
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def log_odds(self, system: str, user: str) -> float:
        """log P(first word "yes" or "Yes") - log P("no" or "No"): positive when the model leans to yes."""
        import numpy as np

        self.warm_up()
        llm = self._llm
        llm.reset()
        llm.eval(llm.tokenize(chatml(system, user).encode(), add_bos=False, special=True))
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        t = self._tokens
        return float(np.logaddexp(logits[t["yes"]], logits[t["Yes"]]) - np.logaddexp(logits[t["no"]], logits[t["No"]]))
