"""`python -m pmc_rag.evaluation.gate_learning --try`: settings parsed, and a column per tried setting."""

from __future__ import annotations

import pytest

from pmc_rag.evaluation.gate_learning import parse_tried, table


class _LetsAllThrough:
    def answerable(self, signals):
        return True


def test_a_tried_setting_becomes_one_gate_per_value():
    assert parse_tried("min_meaning_carried=0.4,none") == {"min_meaning_carried=0.4": {"min_meaning_carried": 0.4},
                                                           "min_meaning_carried=none": {"min_meaning_carried": None}}
    with pytest.raises(ValueError, match="min_meaning_carried=0.4,0.6"):
        parse_tried("min_meaning_carried")


def test_the_table_counts_each_tried_setting_against_the_set_label():
    rows = [{"set": "plain_tuning", "rules_answer": False, "signals": {"best": 0.6}, "tried": {"x=1": True}},
            {"set": "plain_tuning", "rules_answer": True, "signals": {"best": 0.7}, "tried": {"x=1": True}},
            {"set": "generated_tuning", "rules_answer": False, "signals": {"best": 0.4}, "tried": {"x=1": True}},
            {"set": "generated_tuning", "rules_answer": False, "signals": None, "tried": {}}]
    lines = table(rows, _LetsAllThrough()).splitlines()
    assert lines[0].endswith("| x=1 |")
    # answerable: let through is right; unanswerable: turned away is right (a row the gate never saw counts as away)
    assert lines[2] == "| plain_tuning | tuning | 2 | let through | 50.0% | 100.0% | 100.0% |"
    assert lines[3] == "| generated_tuning | tuning | 2 | turned away | 100.0% | 50.0% | 50.0% |"
