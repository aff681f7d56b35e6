"""An optional LLM judge of faithfulness (`pmc-rag eval --judge-model llama3.1:8b`), off by default.

Haystack's `FaithfulnessEvaluator` asks the judge to split the answer into statements and to say, for each,
whether the excerpts the model was shown support it; the score is the supported share. The judge runs on
Ollama (`$OLLAMA_HOST`, else localhost) in JSON mode. A judge is slow and itself fallible: read its score next to
the support score, which is deterministic.

Usage:
```python
judge = FaithfulnessJudge("llama3.1:8b")
judge.score("Does X reduce Y?", "Yes, X reduced Y [1].", ["X reduced Y by 20% (p<0.01)."])   # 1.0
```
"""

from __future__ import annotations

import math

from haystack.components.evaluators import FaithfulnessEvaluator
from haystack_integrations.components.generators.ollama import OllamaChatGenerator


class FaithfulnessJudge:
    def __init__(self, model: str, url: str | None = None, timeout: int = 300):
        self.model = model
        generator = OllamaChatGenerator(model=model, url=url, timeout=timeout, response_format="json",
                                        generation_kwargs={"temperature": 0.0, "num_ctx": 8192, "seed": 0})
        self._evaluator = FaithfulnessEvaluator(chat_generator=generator, progress_bar=False,
                                                raise_on_failure=False)

    def score(self, question: str, answer: str, excerpts: list[str]) -> float | None:
        """The share of the answer's statements the excerpts support; None without an answer or a usable reply."""
        if not answer.strip() or not excerpts:
            return None
        result = self._evaluator.run(questions=[question], contexts=[excerpts], predicted_answers=[answer])
        value = result["individual_scores"][0]
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
