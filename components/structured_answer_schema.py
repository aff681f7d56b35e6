"""The JSON schema a model answers in when it must not be able to cite wrongly."""

from __future__ import annotations

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from pmc_rag.components.citations import canonical_id

# A question that starts like this can be answered yes or no: the schema asks for the verdict first.
_YES_NO = re.compile(r"^\s*(?:is|are|was|were|do|does|did|can|could|should|has|have|had|will|would|may|might|"
                     r"must)\b", re.IGNORECASE)


@component
class StructuredAnswerSchema:
    """
    Builds, per question, the `generation_kwargs` that make a generator answer in JSON whose every citation is
    one of the labels of the excerpts it was shown: `{"verdict": "yes"|"no"|"maybe", "sentences": [{"text": ...,
    "cite": <one of the shown labels>}]}`. The verdict comes first, and only for questions that can be answered
    yes or no. The schema is sent in OpenAI's `response_format` form: pmc-rag's local model server turns it into a
    llama.cpp grammar, `RememberingFallbackChatGenerator` gives it to Ollama as its `format`, and other
    OpenAI-compatible servers that support structured outputs take it as it is. `StructuredAnswerReader` turns
    the reply back into cited text.

    Usage:
    ```python
    schema = StructuredAnswerSchema(max_sentences=5)
    kwargs = schema.run(documents=excerpts, question="Does X help?")["generation_kwargs"]
    generator.run(messages=prompt, generation_kwargs=kwargs)
    ```
    """

    def __init__(self, *, max_sentences: int = 5, source_id_field: str = "source_id"):
        """
        :param max_sentences: Most sentences the answer may have.
        :param source_id_field: The metadata field holding a document's citation id (its label in the prompt).
        """
        if max_sentences < 1:
            raise ValueError(f"max_sentences must be at least 1, got {max_sentences}")
        self.max_sentences = max_sentences
        self.source_id_field = source_id_field

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, max_sentences=self.max_sentences, source_id_field=self.source_id_field)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StructuredAnswerSchema:
        return default_from_dict(cls, data)

    @component.output_types(generation_kwargs=dict[str, Any], schema=dict[str, Any])
    def run(self, documents: list[Document], question: str = "") -> dict[str, dict[str, Any]]:
        """
        :param documents: The excerpts in the prompt.
        :param question: The question; a yes/no question gets a `verdict` field first.
        :returns: `generation_kwargs`: `{"response_format": {"type": "json_schema", ...}}`; `schema`: the schema.
        """
        labels = list(dict.fromkeys(canonical_id(str(d.meta.get(self.source_id_field, ""))) for d in documents))
        sentence = {"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]}
        if labels:
            sentence["properties"]["cite"] = {"type": "string", "enum": labels}
            sentence["required"].append("cite")
        properties: dict[str, Any] = {}
        if _YES_NO.match(question):
            properties["verdict"] = {"type": "string", "enum": ["yes", "no", "maybe"]}
        properties["sentences"] = {"type": "array", "items": sentence, "minItems": 1,
                                   "maxItems": self.max_sentences}
        schema = {"type": "object", "properties": properties, "required": list(properties)}
        return {"generation_kwargs": {"response_format": {"type": "json_schema", "json_schema": {
            "name": "cited_answer", "schema": schema, "strict": True}}}, "schema": schema}
