"""Quote the paper's own conclusion instead of asking the model, when it answers the question.

On a CPU, the model's reply is most of an answer's time (reading a ~500-token prompt: 2-4 s on 2 cores), and with
the embedded 0.5B model most replies end up replaced by quoted findings anyway. When the best paper's own
conclusion speaks to a single-path question, this component says so and the model is not asked: the answer
builder quotes the findings as it does when the model's sentences cannot stand. Anything else (another route, a
follow-up, no conclusion of the first paper among the quotations) goes to the model as before.

Usage:
```python
from haystack import Document
from haystack.dataclasses import ChatMessage
from pmc_rag.components.quotation_first import QuotationFirst

first = QuotationFirst()
excerpts = [Document(content="Erlotinib prolonged progression-free survival in EGFR-mutant lung cancer.",
                     meta={"source_id": "PMC3297584", "section": "Conclusions"})]
result = first.run(prompt=[ChatMessage.from_user("...")], documents=excerpts,
                   question="Does erlotinib work in EGFR-mutant lung cancer?")
"skipped_model" in result, "prompt" in result   # True, False: the conclusion is quoted, the model not asked
```
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from pmc_rag.components.follow_up_asks import asked_for
from pmc_rag.components.quotation_chooser import QuotationChooser


@component
class QuotationFirst:
    """
    Passes the prompt on to the generator, or, when the first paper's conclusion answers a question on one of
    `routes`, emits `skipped_model` (why the model was not asked) and no prompt, so the generator does not run.
    """

    def __init__(self, *, routes: list[str] | None = None, source_id_field: str = "source_id",
                 meaning_model: str | None = None, min_conclusion_similarity: float = 0.4):
        """
        :param routes: The routes whose questions may be answered by the conclusion alone; None: ["single"].
            Summaries, comparisons, overviews and two-step questions need the model to put several passages together.
        :param source_id_field: The metadata field holding a document's citation id.
        :param meaning_model: As `CitedAnswerBuilder`'s: a conclusion close to the question in meaning speaks of
            its subject as one sharing its words does. Give both the same, so that they quote the same sentence.
        :param min_conclusion_similarity: As `CitedAnswerBuilder`'s.
        """
        self.routes = list(routes) if routes is not None else ["single"]
        self.source_id_field = source_id_field
        self.meaning_model = meaning_model
        self.min_conclusion_similarity = min_conclusion_similarity
        self.chooser = QuotationChooser(source_id_field=source_id_field, meaning_model=meaning_model,
                                        min_conclusion_similarity=min_conclusion_similarity)

    def warm_up(self) -> None:
        self.chooser.warm_up()

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, routes=self.routes, source_id_field=self.source_id_field,
                               meaning_model=self.meaning_model,
                               min_conclusion_similarity=self.min_conclusion_similarity)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuotationFirst:
        return default_from_dict(cls, data)

    @component.output_types(prompt=list[ChatMessage], skipped_model=str)
    def run(self, prompt: list[ChatMessage], documents: list[Document], question: str, route: str | None = None,
            topic_question: str | None = None, named_paper: str | None = None) -> dict[str, Any]:
        """
        :param prompt: The messages for the model.
        :param documents: The excerpts the prompt shows, best first.
        :param question: The question as asked.
        :param route: The router's route (None: the single path).
        :param topic_question: Set for a follow-up, which always goes to the model: what it asks for (a count, a
            method) is read against its topic, and the conclusion has been quoted already.
        :param named_paper: The paper a single-finding question names and that was read for it (the router's
            `step_paper`): it always goes to the model too. Who names a paper asks about its details ("Which
            lipolytic enzymes did MmPPOX inhibit?"), which its conclusion seldom gives.
        :returns: `prompt` (the model is asked) or `skipped_model` (why it was not), never both.
        """
        if (route or "single") in self.routes and not topic_question and not named_paper:
            conclusion = self.chooser.first_paper_conclusion(question, documents)
            ask = asked_for(question)
            # "How many patients took part in the OHIP-NL validation study?" asks for a detail, which a conclusion
            # seldom gives: quoted first only when it does
            if conclusion is not None and (ask is None or ask.says(conclusion["text"])):
                return {"skipped_model": f"Quoted from the conclusion of {conclusion['cited'][0]}, the best-matching "
                                         "paper, which speaks to the question: no model was asked (quotation_first)."}
        return {"prompt": prompt}
