"""FindingsFirst: in each paper's places, its findings, then its other running text, then its captions and back
matter, each in the order given."""

from __future__ import annotations

from haystack import Document

from pmc_rag.components.findings_first import FindingsFirst


def _excerpt(name: str, section: str, kind: str = "abstract", paper: str = "PMC1") -> Document:
    return Document(id=name, content=f"{name} text", meta={"source_id": paper, "section": section,
                                                            "section_kind": kind})


def test_a_paper_s_findings_come_first_and_each_group_keeps_the_ranker_s_order():
    ranked = [_excerpt("caption", "Table 2", kind="caption"), _excerpt("registration", "Materials and Methods"),
              _excerpt("aim", "Abstract: Objective"), _excerpt("conclusion", "Abstract: Conclusion"),
              _excerpt("funding", "Funding", kind="body"), _excerpt("results", "Abstract: Results"),
              _excerpt("discussion", "Discussion", kind="body")]
    ordered = [d.id for d in FindingsFirst().run(documents=ranked)["documents"]]
    assert ordered == ["conclusion", "results", "discussion", "registration", "aim", "caption", "funding"]


def test_papers_keep_their_places():
    ranked = [_excerpt("aim A", "Abstract: Objective", paper="A"), _excerpt("result B", "Results", paper="B"),
              _excerpt("conclusion A", "Abstract: Conclusion", paper="A"), _excerpt("methods B", "Methods", paper="B"),
              _excerpt("result C", "Abstract: Results", paper="C")]
    ordered = [d.id for d in FindingsFirst().run(documents=ranked)["documents"]]
    assert ordered == ["conclusion A", "result B", "aim A", "methods B", "result C"]


def test_nothing_is_dropped_or_added():
    assert FindingsFirst().run(documents=[])["documents"] == []
    ranked = [_excerpt(f"m{i}", "Methods") for i in range(4)]
    assert FindingsFirst().run(documents=ranked)["documents"] == ranked


def test_serialization_round_trip():
    data = FindingsFirst().to_dict()
    assert data == {"type": "pmc_rag.components.findings_first.FindingsFirst", "init_parameters": {}}
    assert FindingsFirst.from_dict(data).to_dict() == data
