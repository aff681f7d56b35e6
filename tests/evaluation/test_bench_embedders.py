"""`pmc-rag bench embedders`: its figures on hand-computed cases, and the split zip read across part boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from pmc_rag import nomic_embed_model
from pmc_rag.evaluation.bench_embedders import auc, measure, paper_ranks
from pmc_rag.evaluation.gate_learning import gold_sets


def test_a_paper_ranks_by_its_best_chunk():
    papers = np.array(["A", "A", "B", "C"])
    assert paper_ranks(np.array([0.9, 0.8, 0.7, 0.95]), papers, "A") == 2   # C first, then A
    assert paper_ranks(np.array([0.9, 0.8, 0.7, 0.95]), papers, "B") == 3
    assert paper_ranks(np.array([0.9, 0.8, 0.7, 0.95]), papers, "Z") == 999


def test_auc_counts_pairs_and_ties_half():
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5]) == 0.5


def test_measure_gives_ranks_for_answerable_sets_only():
    sets = {"a": [("q1", "P1")], "u": [("q2", None)]}
    chunks = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    queries = np.array([[0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    result = measure(sets, queries, chunks, np.array(["P0", "P1"]))
    assert result["a"] == {"ranks": [1], "best": [1.0]}
    assert result["u"]["ranks"] == [] and result["u"]["best"] == [pytest.approx(0.8)]


def test_the_sets_keep_held_aside_apart_and_gold_only_where_answerable():
    sets = gold_sets()
    assert len(sets["plain_held_aside"]) >= 100 and all(gold for _, gold in sets["plain_held_aside"])
    assert all(gold is None for _, gold in sets["unanswerable_held_out"] + sets["generated_held_aside"])
    tuning = {q for name in ("plain_tuning", "pubmedqa_dev") for q, _ in sets[name]}
    assert not tuning & {q for q, _ in sets["plain_held_aside"]}


def test_the_split_stream_is_read_across_part_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(nomic_embed_model, "PART_SIZE", 4)
    monkeypatch.setattr(nomic_embed_model, "FIRST_PART", 3)   # offsets count from part 1: parts 1-2 are 8 bytes
    parts = []
    for index, data in enumerate([b"abcd", b"efgh", b"ij"]):
        parts.append(tmp_path / f"zip.{index}")
        parts[-1].write_bytes(data)
    assert nomic_embed_model._read(parts, 8, 10) == b"abcdefghij"
    assert nomic_embed_model._read(parts, 11, 3) == b"def"


def test_parts_of_another_version_are_refused(tmp_path, monkeypatch):
    part = tmp_path / "zip.9"
    part.write_bytes(b"\0" * 200)
    monkeypatch.setattr(nomic_embed_model, "FIRST_PART", 1)
    monkeypatch.setattr(nomic_embed_model, "MEMBER_OFFSET", 10)
    with pytest.raises(nomic_embed_model.NomicModelError, match="another version"):
        nomic_embed_model._carve([part], tmp_path / "out.gguf")
