"""The directions study's choice of a judge model's threshold (evaluation/directions.py)."""


def test_the_directions_model_threshold_is_the_lowest_reaching_95_percent_with_ten_shown(monkeypatch):
    from pmc_rag.evaluation import directions

    class Judge:  # stands in for YesNoJudge: the log-odds are given, no model is loaded
        model = "given"

        def __init__(self, name):
            pass

        def close(self):
            pass

    # 20 sure and right "yes" (log-odds 2), 10 sure-ish and wrong (1.0), 10 unsure (0.2)
    rows = [{"question": "q", "conclusion": "c", "verdict": v} for v in ["yes"] * 20 + ["no"] * 10 + ["yes"] * 10]
    given = [2.0] * 20 + [1.0] * 10 + [0.2] * 10
    monkeypatch.setattr("pmc_rag.local_llm.yes_no.YesNoJudge", Judge)
    monkeypatch.setattr(directions, "model_log_odds", lambda part, judge: given)
    report = directions.model_report(rows, rows, "given")
    assert report["chosen_log_odds"] == 1.5  # from 1.0 the 10 wrong ones are shown too
    shown = {r["method"]: r for r in report["rows"] if r["set"] == "held aside" and "shown" in r}
    assert shown["given, shown from log-odds 1.5"]["precision"] == 1.0
    assert shown["given, shown from log-odds 1.0"]["precision"] == 20 / 30
