"""SectionChunker: invariants over the whole sample corpus, edge cases, and serialization."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from pmc_rag.components.section_chunker import SectionChunker, split_sentences
from pmc_rag.ingestion.sources import expand_paths, read_articles
from pmc_rag.ingestion.xml import IngestError

from conftest import CORPUS


@pytest.fixture(scope="session")
def corpus_sections() -> list[Document]:
    files, _ = expand_paths([str(CORPUS)])
    return [
        doc
        for path in files
        for article in read_articles(Path(path))
        if not isinstance(article, IngestError)
        for doc in article.section_documents()
    ]


def test_invariants_hold_on_every_section_of_the_sample_corpus(corpus_sections):
    chunker = SectionChunker(target_words=120, overlap_words=25)
    chunks = chunker.run(documents=corpus_sections)["documents"]
    sections = {(d.meta["source_id"], d.meta["section_index"]): d for d in corpus_sections}
    by_section = defaultdict(list)
    for chunk in chunks:
        by_section[(chunk.meta["source_id"], chunk.meta["section_index"])].append(chunk)

    assert len({c.id for c in chunks}) == len(chunks), "chunk ids are unique"
    assert set(by_section) == set(sections), "every section yields chunks"
    for key, section_chunks in by_section.items():
        section = sections[key]
        section_words = " ".join(section.content.split())
        for position, chunk in enumerate(section_chunks):
            # Never across a section boundary: each chunk's words come from its own section, in order.
            assert " ".join(chunk.content.split()) in section_words
            assert chunk.meta["section"] == section.meta["section"]
            assert chunk.meta["section_chunk_index"] == position
            assert chunk.meta["word_count"] == len(chunk.content.split()) <= 120
            for field in ("title", "journal", "year", "doi", "authors", "evidence_level", "license"):
                assert chunk.meta[field] == section.meta[field]
        # Nothing is lost: the chunks together hold every word of the section.
        covered = " ".join(c.content for c in section_chunks).split()
        assert set(section_words.split()) <= set(covered)
        for previous, current in zip(section_chunks, section_chunks[1:]):
            overlap = _shared_boundary_words(previous.content, current.content)
            assert overlap <= 25

    per_article = defaultdict(list)
    for chunk in chunks:
        per_article[chunk.meta["source_id"]].append(chunk.meta["chunk_index"])
    assert all(indexes == list(range(len(indexes))) for indexes in per_article.values())


def _shared_boundary_words(previous: str, current: str) -> int:
    """Words at the end of `previous` that start `current` (the overlap)."""
    a, b = previous.split(), current.split()
    return max((n for n in range(0, min(len(a), len(b)) + 1) if a[len(a) - n:] == b[:n]), default=0)


def test_same_input_gives_same_ids_and_changed_text_gives_new_ones(corpus_sections):
    sample = corpus_sections[:200]
    first = [c.id for c in SectionChunker().run(documents=sample)["documents"]]
    again = [c.id for c in SectionChunker().run(documents=[Document(content=d.content, meta=d.meta)
                                                             for d in sample])["documents"]]
    assert first == again
    # An id follows its text: edited chunks get new ids, untouched ones keep theirs.
    original = SectionChunker().run(documents=sample)["documents"]
    edited = SectionChunker().run(
        documents=[Document(content=d.content + " Extra.", meta=d.meta) for d in sample])["documents"]
    assert len(original) == len(edited)
    changed = [(a.id != b.id) for a, b in zip(original, edited)]
    assert changed == [(a.content != b.content) for a, b in zip(original, edited)]
    assert any(changed) and not all(changed)


def test_sentences_are_kept_whole_and_overlap_repeats_whole_sentences():
    text = " ".join(f"Sentence number {i} has exactly seven words." for i in range(10))
    chunks = SectionChunker(target_words=21, overlap_words=7).run(
        documents=[Document(content=text, meta={"source_id": "PMC1"})])["documents"]
    contents = [c.content for c in chunks]
    assert contents[0] == " ".join(f"Sentence number {i} has exactly seven words." for i in range(3))
    assert contents[1].startswith("Sentence number 2 has")  # one sentence of overlap
    assert all(c.endswith("words.") for c in contents)


def test_a_sentence_longer_than_the_target_is_cut_at_words():
    long_sentence = " ".join(f"w{i}" for i in range(25)) + "."
    chunks = SectionChunker(target_words=10, overlap_words=0).run(
        documents=[Document(content=long_sentence, meta={"source_id": "PMC1"})])["documents"]
    assert [c.meta["word_count"] for c in chunks] == [10, 10, 5]
    assert " ".join(c.content for c in chunks) == long_sentence


def test_paragraph_breaks_survive_inside_a_chunk():
    chunks = SectionChunker().run(documents=[Document(content="First para.\n\nSecond para.",
                                                      meta={"source_id": "PMC1"})])["documents"]
    assert [c.content for c in chunks] == ["First para.\n\nSecond para."]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Smith et al. showed it. Then it failed.", ["Smith et al. showed it.", "Then it failed."]),
        ("See Fig. 2 for details. The rate was 3.5 per cent.",
         ["See Fig. 2 for details.", "The rate was 3.5 per cent."]),
        ("Levels rose (p < 0.05). [12] Next one.", ["Levels rose (p < 0.05).", "[12] Next one."]),
        ("Dr. J. Smith agreed. Yes!", ["Dr. J. Smith agreed.", "Yes!"]),
        ("lower case after stop. continues here", ["lower case after stop. continues here"]),
    ],
)
def test_sentence_splitter(text, expected):
    assert split_sentences(text) == expected


def test_invalid_settings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="overlap_words"):
        SectionChunker(target_words=50, overlap_words=50)
    with pytest.raises(ValueError, match="target_words"):
        SectionChunker(target_words=0)


def test_serialization_round_trip():
    chunker = SectionChunker(target_words=99, overlap_words=11, source_id_field="pmid")
    data = chunker.to_dict()
    assert data == {
        "type": "pmc_rag.components.section_chunker.SectionChunker",
        "init_parameters": {"target_words": 99, "overlap_words": 11, "source_id_field": "pmid"},
    }
    restored = SectionChunker.from_dict(data)
    assert (restored.target_words, restored.overlap_words, restored.source_id_field) == (99, 11, "pmid")
    pipeline = Pipeline()
    pipeline.add_component("chunker", chunker)
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=["components.*"]).get_component(
        "chunker").to_dict() == data
