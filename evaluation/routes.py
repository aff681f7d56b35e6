"""`pmc-rag eval --routes`: how often the question router picks the labelled kind, per kind and set, and its cost.

The labelled questions are evaluation/datasets/route_questions.json. The router's similarity layer votes with the
dev questions, so on the dev set each question is measured without its own vote (leave one out); the held-aside
quarter is never an exemplar. Rules alone are reported beside rules + exemplars. The time is the router's own,
per question, after the query embedding (which the pipeline computes for retrieval anyway).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any

from pmc_rag.components.citations import content_words
from pmc_rag.components.question_router import ROUTES, QuestionRouter, labelled_route_questions


def run_routes(progress: bool = True, path: str | None = None, router_pipeline: str | None = None,
               model_questions: int = 100) -> dict[str, Any]:
    """Every labelled question through the router; counts per set, kind and check, the confusion of the
    layered router, the questions it got wrong, and its time per question.

    With `router_pipeline` (a pipeline whose `router` has a `chat_generator`, e.g. rag_routed_llm), a third check
    adds its model layer (the pipeline's local model server is started), and the first `model_questions` PubMedQA
    questions go through it too."""
    from pmc_rag.environment import configure_environment

    configure_environment()  # offline unless allowed
    questions = labelled_route_questions(path)
    router = QuestionRouter(exemplars=path)
    router.warm_up()
    rules_only = QuestionRouter(exemplars="")
    with_model = _router_of(router_pipeline, path) if router_pipeline else None
    embedding_of = _embeddings([row["question"] for row in questions])
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: [0, 0])))
    confusion: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    wrong: list[dict[str, Any]] = []
    times_ms: list[float] = []
    layers: dict[str, int] = defaultdict(int)
    for number, row in enumerate(questions, 1):
        embedding = embedding_of[row["question"]]
        started = time.perf_counter()
        route, layer, _ = router.decide(row["question"], embedding, leave_out=row["set"] != "held_aside")
        times_ms.append((time.perf_counter() - started) * 1000)
        layers[layer] += 1
        by_rules, _, _ = rules_only.decide(row["question"])
        checks = [("rules", by_rules), ("rules + exemplars", route)]
        if with_model is not None:
            by_model, model_layer, _ = with_model.decide(row["question"], embedding,
                                                         leave_out=row["set"] != "held_aside")
            checks.append(("rules + exemplars + model", by_model))
            layers[f"model check: {model_layer}"] += 1
        for check, decided in checks:
            tally = counts[row["set"]][check][row["kind"]]
            tally[0] += decided == row["kind"]
            tally[1] += 1
        confusion[row["set"]][row["kind"]][route] += 1
        if route != row["kind"]:
            wrong.append({"id": row["id"], "set": row["set"], "kind": row["kind"], "route": route, "layer": layer,
                          "question": row["question"]})
        if progress and number % 50 == 0:
            print(f"  {number}/{len(questions)} questions", flush=True)
    times_ms.sort()
    single_findings = _pubmedqa_routes(router)
    single_findings["plain"] = _plain_routes(router)
    if with_model is not None:
        single_findings["with_model"] = _pubmedqa_routes(with_model, model_questions)
    return {"single_findings": single_findings,
            "counts": {s: {c: {k: {"right": t[0], "of": t[1]} for k, t in kinds.items()}
                           for c, kinds in checks.items()} for s, checks in counts.items()},
            "confusion": {s: {k: dict(v) for k, v in kinds.items()} for s, kinds in confusion.items()},
            "layers": dict(layers), "wrong": wrong,
            "time_ms": {"p50": times_ms[len(times_ms) // 2], "p95": times_ms[int(len(times_ms) * 0.95)],
                        "max": times_ms[-1]}}


def _router_of(pipeline_name: str, path: str | None) -> QuestionRouter:
    """The `router` of an answering pipeline, warmed up with its local model server started (and its database:
    the pipeline's other components need it to start)."""
    from pmc_rag.database import ensure_database
    from pmc_rag.pipelines import load_declared_pipeline

    ensure_database()
    pipeline = load_declared_pipeline(pipeline_name)
    pipeline.warm_up()
    router = pipeline.pipeline.get_component("router")
    if getattr(router, "chat_generator", None) is None:
        raise ValueError(f"{pipeline_name}: its router has no chat_generator (see pipelines/rag_routed_llm.yml)")
    if path:  # the labelled questions measured are also the exemplars that vote
        router = QuestionRouter.from_dict({**router.to_dict(), "init_parameters": {
            **router.to_dict()["init_parameters"], "exemplars": path}})
        router.warm_up()
    return router


def _embeddings(texts: list[str]) -> dict[str, list[float]]:
    """Each question's embedding by the query embedder's model (normalised, as the router reads it), embedded the
    first time and read back from PMC_RAG_HOME/models/route-evaluation/ after that (`embedded_once`): the same
    vectors, without embedding some 900 questions again at every run."""
    from pmc_rag.components.onnx_text_embedder import embedded_once

    vectors = embedded_once("sentence-transformers/all-MiniLM-L6-v2", texts, "route-evaluation")
    return {text: vector.tolist() for text, vector in zip(texts, vectors, strict=True)}


def _pubmedqa_routes(router: QuestionRouter, limit: int | None = None) -> dict[str, Any]:
    """The PubMedQA dev questions through the router: every one asks for one finding, yes or no, so each sent to
    another route is a question the router misreads (not labelled by us, and never an exemplar)."""
    from pmc_rag.evaluation.questions import load_questions
    from pmc_rag.paths import DEV_QUESTIONS

    questions = load_questions(DEV_QUESTIONS)[:limit]
    embedding_of = _embeddings([question.question for question in questions])
    elsewhere = []
    for question in questions:
        route, layer, _ = router.decide(question.question, embedding_of[question.question])
        if route != "single":
            elsewhere.append({"route": route, "layer": layer, "question": question.question})
    return {"questions": len(questions), "elsewhere": elsewhere}


def _plain_routes(router: QuestionRouter) -> dict[str, Any]:
    """The plain-language questions (issue 61) through the router: each asks for one finding in a patient's,
    clinician's or researcher's words, written by another method than the labelled route questions. Per half, how
    many take the single path; the questions sent elsewhere are listed for the tuning half only (the other is
    sealed)."""
    from pmc_rag.evaluation.plain_questions import load

    halves: dict[str, dict[str, Any]] = {}
    questions = load()
    embedding_of = _embeddings([question["question"] for question in questions])
    for question in questions:
        route, layer, _ = router.decide(question["question"], embedding_of[question["question"]])
        half = halves.setdefault(question["set"], {"questions": 0, "single": 0, "elsewhere": []})
        half["questions"] += 1
        half["single"] += route == "single"
        if route != "single" and question["set"] == "plain_tuning":
            half["elsewhere"].append({"route": route, "layer": layer, "question": question["question"]})
    return halves


def routes_markdown(report: dict[str, Any]) -> str:
    kinds = [k for k in ROUTES if any(k in checks["rules"] for checks in report["counts"].values())]
    lines = ["| set | check | " + " | ".join(kinds) + " | all |", "|---|---|" + "---:|" * (len(kinds) + 1)]
    for name in sorted(report["counts"], key=lambda s: s == "held_aside"):
        for check, tallies in report["counts"][name].items():
            cells = [f"{tallies[k]['right']}/{tallies[k]['of']}" if k in tallies else "" for k in kinds]
            right = sum(t["right"] for t in tallies.values())
            total = sum(t["of"] for t in tallies.values())
            lines.append(f"| {name} | {check} | " + " | ".join(cells) + f" | {right}/{total} ({right / total:.2f}) |")
    timing = report["time_ms"]
    lines += ["", f"Router time per question (after the query embedding): p50 {timing['p50']:.2f} ms, "
                  f"p95 {timing['p95']:.2f} ms, max {timing['max']:.2f} ms. Decided by: "
              + ", ".join(f"{layer} {n}" for layer, n in sorted(report["layers"].items())), ""]
    for item in report["wrong"]:
        lines.append(f"- {item['set']}: {item['kind']} taken for {item['route']} ({item['layer']}): "
                     f"{item['question']!r}")
    single = report.get("single_findings")
    if single:
        elsewhere = single["elsewhere"]
        lines += ["", f"PubMedQA dev questions (each asks for one finding): {single['questions'] - len(elsewhere)} of "
                      f"{single['questions']} take the single path; {len(elsewhere)} another:"]
        lines += [f"- {item['route']} ({item['layer']}): {item['question']!r}" for item in elsewhere]
        for half, figures in (single.get("plain") or {}).items():
            lines += ["", f"Plain-language questions, {half} (each asks for one finding): {figures['single']} of "
                          f"{figures['questions']} take the single path"
                          + (" (sealed: the others are not listed)" if half != "plain_tuning" else ":")]
            lines += [f"- {item['route']} ({item['layer']}): {item['question']!r}" for item in figures["elsewhere"]]
        model = single.get("with_model")
        if model:
            lines += ["", f"With the model layer, the first {model['questions']} of them: "
                          f"{model['questions'] - len(model['elsewhere'])} take the single path; "
                          f"{len(model['elsewhere'])} another:"]
            lines += [f"- {item['route']} ({item['layer']}): {item['question']!r}" for item in model["elsewhere"]]
    return "\n".join(lines)


def run_route_answers(pipelines: list[str], per_kind: int = 8, question_set: str = "dev", path: str | None = None,
                      progress: bool = True, offset: int = 0, kinds: list[str] | None = None) -> dict[str, Any]:
    """Answer the first `per_kind` questions of each kind (of `question_set`) that the corpus answers, and as many
    labelled `answerable: false`, with each pipeline; per pipeline and kind: the route taken, papers cited per answer, answers citing two or more papers, for summaries whether only
    the named paper is cited and every citation names its section, "not answered", and time p50/p95.

    The figures are checked against the labels, not by the answering pipeline's own checker: the named paper of
    a summary request, the subjects of a comparison (each must be named in a cited paper's evidence sentences).
    """
    from pmc_rag.answering.service import AnswerService
    from pmc_rag.pipelines import load_declared_pipeline

    questions = [q for q in labelled_route_questions(path) if q["set"] == question_set]
    unknown = sorted(set(kinds or []) - set(ROUTES))
    if unknown:
        raise ValueError(f"unknown kind(s) of question: {', '.join(unknown)}; the kinds are {', '.join(ROUTES)}")
    chosen: list[dict[str, Any]] = []
    for kind in kinds or ROUTES:
        # as many questions the corpus cannot answer as it can (up to those labelled), so that every kind's row
        # says whether "not answered" came when it was right
        of_kind = [q for q in questions if q["kind"] == kind]
        chosen += [q for q in of_kind if q.get("answerable", True)][offset: offset + per_kind]
        chosen += [q for q in of_kind if not q.get("answerable", True)][offset: offset + per_kind]
    corpus = _corpus_passages()
    records: list[dict[str, Any]] = []
    for name in pipelines:
        service = AnswerService(load_declared_pipeline(name), name=f"eval-routes {name}")
        for number, row in enumerate(chosen, 1):
            started = time.perf_counter()
            typed, _ = service.answer_for_evaluation(row["question"])
            answer = typed.model_dump()  # the JSON a client reads
            seconds = time.perf_counter() - started
            cited = list(dict.fromkeys(c["source_id"] for c in answer.get("citations", [])))
            evidence = " ".join(c.get("evidence") or "" for c in answer.get("citations", []))
            subjects_named = [s for s in row.get("subjects", []) if content_words(s)
                              and content_words(s) <= content_words(evidence)]
            records.append({
                "pipeline": name, "id": row["id"], "kind": row["kind"], "route": answer.get("route"),
                "answerable": row.get("answerable", True),
                "question": row["question"], "answer": answer.get("answer"), "cited": cited,
                "not_answered": bool(answer.get("flags", {}).get("not_answered")),
                "quoted": bool(answer.get("flags", {}).get("extractive_fallback")),
                "named_paper_only": bool(cited) and set(cited) <= set(row.get("papers") or []) if row.get("papers")
                and row["kind"] == "summarise" else None,
                "sections_given": all(c.get("section") for c in answer.get("citations", [])) if cited else None,
                "subjects": row.get("subjects", []), "subjects_in_evidence": subjects_named,
                "evidence_for_each": _evidence_for_each(row, corpus) if len(row.get("subjects") or []) >= 2 else None,
                **_sentence_checks(answer, corpus), "notes": answer.get("notes", []), "seconds": seconds})
            if progress:
                print(f"  {name} {number}/{len(chosen)} {row['kind']:<10} route={answer.get('route')} "
                      f"cited={len(cited)} {seconds:.1f} s", flush=True)
    return {"records": records, "per_kind": per_kind, "set": question_set, "pipelines": pipelines,
            "summary": _route_answer_summary(records)}


def _sentence_checks(answer: dict[str, Any], corpus: list[tuple[str, set[str]]]) -> dict[str, Any]:
    """The displayed answer's sentences: how many carry a citation, and how many are copied from a cited paper
    (nine in ten of the sentence's content words in one running-text passage of a paper it cites, read by SQL).
    A copied sentence says what the paper says; one that is not copied is the model's own wording, which this
    cannot judge (an entailment model or a reader must)."""
    from pmc_rag.components.citations import canonical_id
    from pmc_rag.components.section_chunker import split_sentences

    if answer.get("flags", {}).get("not_answered") or answer.get("kind", "answer") != "answer":
        return {"sentences": 0, "sentences_cited": 0, "sentences_copied": 0}
    by_number = {str(c["number"]): canonical_id(c["source_id"]) for c in answer.get("citations", [])}
    sentences = [x for x in split_sentences(" ".join((answer.get("answer") or "").split())) if content_words(x)]
    cited = copied = 0
    for sentence in sentences:
        papers = {by_number.get(n) for n in re.findall(r"\[(\d+)\]", sentence)} - {None}
        cited += bool(papers)
        words = content_words(re.sub(r"\[\d+\]", " ", sentence))
        copied += bool(papers) and any(paper in papers and len(words & passage) >= 0.9 * len(words)
                                       for paper, passage in corpus)
    return {"sentences": len(sentences), "sentences_cited": cited, "sentences_copied": copied}


def _corpus_passages() -> list[tuple[str, set[str]]]:
    """Each running-text chunk of the indexed corpus (no captions, no back matter) as (paper, its words with the
    paper's title), read by SQL: what a comparison's evidence and an answer's copied sentences are judged
    against, apart from the pipeline."""
    import os

    import psycopg

    from pmc_rag.components.citations import canonical_id
    from pmc_rag.components.section_kinds import BACK_MATTER

    with psycopg.connect(os.environ["PG_CONN_STR"]) as connection:
        rows = connection.execute(
            "SELECT meta->>'source_id', meta->>'section', meta->>'section_kind', meta->>'title', content "
            "FROM pmc_chunks").fetchall()
    return [(canonical_id(source_id), content_words(f"{title or ''} {content or ''}"))
            for source_id, section, kind, title, content in rows
            if kind != "caption" and not BACK_MATTER.match(section or "")]


def _evidence_for_each(row: dict[str, Any], corpus: list[tuple[str, set[str]]]) -> dict[str, list[str]]:
    """For each compared subject, the papers with a passage naming it and the question's other words ("children"
    with "asthma"; of three or more, all but one): where the corpus holds evidence for that side of the
    comparison."""
    subjects = [content_words(s) for s in row["subjects"]]
    context = content_words(row["question"]) - set().union(*subjects) - _COMPARISON_WORDS
    needed = len(context) - (1 if len(context) >= 3 else 0)
    return {name: sorted({paper for paper, words in corpus if subject <= words and len(context & words) >= needed})
            for name, subject in zip(row["subjects"], subjects)}


# Words that ask for a comparison rather than say what it is about.
_COMPARISON_WORDS = content_words("compare contrast differ difference better worse versus evidence say similarities "
                                  "studies report papers agree disagree outcomes which works accurate")


def _both_sides_in_corpus(record: dict[str, Any]) -> bool:
    """Every subject has evidence in the corpus, and two different papers hold it (so two can be cited)."""
    evidence = record.get("evidence_for_each") or {}
    papers = [set(p) for p in evidence.values()]
    return bool(papers) and all(papers) and len(set().union(*papers)) >= 2


def _route_answer_summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["pipeline"], record["kind"])].append(record)
    for (pipeline, kind), asked in groups.items():
        seconds = sorted(r["seconds"] for r in asked)
        # what the answers cite and say is judged on the questions the corpus can answer
        group = [r for r in asked if r.get("answerable", True)] or asked
        unanswerable = [r for r in asked if not r.get("answerable", True)]
        summaries = [r for r in group if r["named_paper_only"] is not None]
        compares = [r for r in group if len(r["subjects"]) >= 2]
        with_evidence = [r for r in compares if _both_sides_in_corpus(r)]
        rows.append({
            "pipeline": pipeline, "kind": kind, "questions": len(group), "routed": len(asked),
            "route_right": sum(r["route"] == kind for r in asked) if any(r["route"] for r in asked) else None,
            "papers_cited_mean": sum(len(r["cited"]) for r in group) / len(group),
            "two_or_more_papers": sum(len(r["cited"]) >= 2 for r in group),
            "named_paper_only": sum(bool(r["named_paper_only"]) for r in summaries) if summaries else None,
            "sections_given": sum(bool(r["sections_given"]) for r in group if r["cited"]),
            "all_subjects_in_evidence": sum(len(r["subjects_in_evidence"]) == len(r["subjects"]) for r in compares)
            if compares else None,
            "evidence_for_each_in_corpus": len(with_evidence) if compares else None,
            "two_or_more_papers_where_evidence": sum(len(r["cited"]) >= 2 for r in with_evidence)
            if compares else None,
            "sentences": sum(r.get("sentences", 0) for r in group),
            "sentences_cited": sum(r.get("sentences_cited", 0) for r in group),
            "sentences_copied": sum(r.get("sentences_copied", 0) for r in group),
            "not_answered": sum(r["not_answered"] for r in group), "quoted": sum(r["quoted"] for r in group),
            "unanswerable": len(unanswerable),
            "unanswerable_not_answered": sum(r["not_answered"] for r in unanswerable),
            "p50_s": seconds[len(seconds) // 2], "p95_s": seconds[min(len(seconds) - 1, int(len(seconds) * 0.95))]})
    return rows


def route_answers_markdown(report: dict[str, Any]) -> str:
    lines = [f"Set `{report['set']}`, the first {report['per_kind']} questions of each kind that the corpus answers "
             f"(n; the figures up to `quoted` are theirs), and the first {report['per_kind']} it cannot answer "
             "(labelled `answerable: false`; the right answer is \"not answered\").", "",
             "| pipeline | kind | n | route right | papers cited (mean) | >= 2 papers | named paper only | "
             "every subject in cited evidence | >= 2 papers where the corpus has evidence for each subject | "
             "sentences shown | cited | copied from a cited paper | not answered | quoted | "
             "unanswerable: not answered | p50 s | p95 s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    blank = "–"
    for r in report["summary"]:
        route_right = blank if r["route_right"] is None else f"{r['route_right']} of {r.get('routed', r['questions'])}"
        unanswerable = (f"{r['unanswerable_not_answered']} of {r['unanswerable']}" if r.get("unanswerable")
                        else blank)
        lines.append(
            f"| {r['pipeline']} | {r['kind']} | {r['questions']} | "
            f"{route_right} | {r['papers_cited_mean']:.2f} | "
            f"{r['two_or_more_papers']} | {blank if r['named_paper_only'] is None else r['named_paper_only']} | "
            f"{blank if r['all_subjects_in_evidence'] is None else r['all_subjects_in_evidence']} | "
            f"{blank if r.get('evidence_for_each_in_corpus') is None else str(r['two_or_more_papers_where_evidence']) + ' of ' + str(r['evidence_for_each_in_corpus'])} | "
            f"{r['sentences']} | {r['sentences_cited']} | {r['sentences_copied']} | "
            f"{r['not_answered']} | {r['quoted']} | {unanswerable} | {r['p50_s']:.1f} | {r['p95_s']:.1f} |")
    return "\n".join(lines)
