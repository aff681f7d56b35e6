"""Multi-turn evaluation: do follow-ups stay on the conversation's topic, and is "not answered" said when, and only
when, the indexed papers cannot answer? (`pmc-rag eval --conversations`; the set: evaluation/datasets/
conversations.json.)

Each conversation names the papers its topic is about. Per turn:
* **off topic**: an answer citing a paper outside the conversation's topic papers;
* **not answered**: the answer shown says the indexed papers do not answer (the relevance gate's reply, or a
  shown sentence saying so); compared with what the turn expects. A model's reply saying so that the checks
  removed, with the papers' passages quoted in its place, is an answer: the reader is shown the passages;
* **answers what it asks**: for a turn with `answer_has` (words or numbers written by reading the paper, never by
  the system), whether the answer contains one of them: "How many patients ...?" answered with the conclusion
  again does not;
* **repeats the last answer**: an answerable turn whose answer is the one the turn before it got, word for word.

Usage:
```python
report = run_conversations(["rag"], CONVERSATIONS)
print(conversations_markdown(report))
```
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pmc_rag.answering.service import AnswerService
from pmc_rag.pipelines import load_declared_pipeline
from pmc_rag.evaluation.runner import shown_path
from pmc_rag.answering.history import ConversationStore

NOT_ANSWERED = "not_answered"
_SAYS_NOT_ANSWERED = re.compile(r"\b(?:do|does|did)(?: not|n't) (?:answer|address|mention|say|report)",
                                re.IGNORECASE)


def load_conversations(path: str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    conversations = data["conversations"] if isinstance(data, dict) else data
    for conversation in conversations:
        if not conversation.get("turns") or not conversation.get("topic_source_ids"):
            raise ValueError(f"{path}: conversation {conversation.get('id')!r} needs `turns` and `topic_source_ids`")
        for turn in conversation["turns"]:
            if turn.get("expect") not in ("answer", NOT_ANSWERED):
                raise ValueError(f"{path}: conversation {conversation.get('id')!r}: each turn's `expect` must be "
                                 f"`answer` or `{NOT_ANSWERED}`, got {turn.get('expect')!r}")
            has = turn.get("answer_has")
            if has is not None and (not isinstance(has, list) or not has or
                                    not all(isinstance(text, str) and text.strip() for text in has)):
                raise ValueError(f"{path}: conversation {conversation.get('id')!r}: a turn's `answer_has` must be a "
                                 f"list of words or numbers a right answer contains (one at least), got {has!r}")
    return conversations


def said_not_answered(answer: dict[str, Any]) -> bool:
    """Whether the answer shown says the papers do not answer (before 2026-11-27 the model's reply was read, shown
    or not)."""
    return bool(answer.get("flags", {}).get("not_answered")) or bool(_SAYS_NOT_ANSWERED.search(
        answer.get("answer") or ""))


def answers_what_it_asks(turn: dict[str, Any], answer: dict[str, Any]) -> bool | None:
    """Whether the shown answer contains one of the turn's `answer_has` (None: the turn has none, or was not
    answered)."""
    if not turn.get("answer_has"):
        return None
    if said_not_answered(answer):
        return False
    text = answer.get("answer", "").lower()
    return any(expected.lower() in text for expected in turn["answer_has"])


def run_conversations(pipelines: list[str | Path], path: str | Path, progress: bool = True) -> dict[str, Any]:
    """Every conversation through each pipeline, turn by turn, as the server would answer it (same service,
    conversations kept in the database)."""
    conversations = load_conversations(path)
    store = ConversationStore(os.environ["PG_CONN_STR"])
    report: dict[str, Any] = {"meta": {"file": shown_path(Path(path)), "conversations": len(conversations),
                                       "turns": sum(len(c["turns"]) for c in conversations),
                                       "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, "pipelines": {}}
    for target in pipelines:
        pipeline = load_declared_pipeline(target)
        pipeline.warm_up()
        service = AnswerService(pipeline, name=f"eval-conversations {Path(str(target)).stem}", store=store)
        records = []
        bar = tqdm(total=report["meta"]["turns"], desc=Path(str(target)).stem, unit="turn", disable=not progress)
        for conversation in conversations:
            conversation_id, last_answer = None, None
            topic = set(conversation["topic_source_ids"])
            for number, turn in enumerate(conversation["turns"], start=1):
                answer = service.answer(turn["question"], conversation_id=conversation_id).model_dump()
                conversation_id = answer["conversation_id"]
                cited = [r["source_id"] for r in answer["references"]]
                records.append({"conversation": conversation["id"], "turn": number, "question": turn["question"],
                                "expect": turn["expect"], "standalone_query": answer["standalone_query"],
                                "cited": cited, "off_topic": sorted(set(cited) - topic),
                                "not_answered": said_not_answered(answer),
                                "quoted": bool(answer["flags"].get("extractive_fallback")),
                                "answers_what_it_asks": answers_what_it_asks(turn, answer),
                                "repeats_last_answer": answer["answer"] == last_answer,
                                "model": answer.get("model"), "answer": answer["answer"],
                                "notes": answer.get("notes", [])})
                last_answer = answer["answer"]
                bar.update()
        bar.close()
        report["pipelines"][Path(str(target)).stem] = {"summary": summarise_conversations(records),
                                                        "records": records}
    return report


def summarise_conversations(records: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in records if r["expect"] == "answer"]
    unanswerable = [r for r in records if r["expect"] == NOT_ANSWERED]
    share = (lambda part, whole: part / len(whole) if whole else None)
    answered = [r for r in answerable if not r["not_answered"] and r["cited"]]
    return {
        "turns": len(records),
        "answerable_turns": len(answerable),
        "unanswerable_turns": len(unanswerable),
        "off_topic_turns": sum(bool(r["off_topic"]) for r in answered),
        "off_topic_share": share(sum(bool(r["off_topic"]) for r in answered), answered),
        "not_answered_when_it_should": share(sum(r["not_answered"] for r in unanswerable), unanswerable),
        "not_answered_when_it_should_not": share(sum(r["not_answered"] for r in answerable), answerable),
        "unanswerable_answered_with_citations": sum(bool(r["cited"]) and not r["not_answered"]
                                                    for r in unanswerable),
        "quoted_share": share(sum(r["quoted"] for r in records), records),
        "asked_turns": len([r for r in records if r.get("answers_what_it_asks") is not None]),
        "answers_what_it_asks": sum(bool(r.get("answers_what_it_asks")) for r in records),
        "repeats_last_answer": sum(bool(r.get("repeats_last_answer")) for r in answerable),
    }


def conversations_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [f"Conversations: {meta['conversations']} ({meta['turns']} turns) from `{meta['file']}`, {meta['date']}",
             "", "| pipeline | answerable turns | answered off topic | 'not answered' when it should | "
             "'not answered' when it should not | unanswerable answered with citations | quoted passages | "
             "follow-ups answering what they ask | answers repeating the last |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, entry in report["pipelines"].items():
        s = entry["summary"]
        lines.append(f"| {name} | {s['answerable_turns']} | {s['off_topic_turns']} "
                     f"({_pct(s['off_topic_share'])}) | {_pct(s['not_answered_when_it_should'])} of "
                     f"{s['unanswerable_turns']} | {_pct(s['not_answered_when_it_should_not'])} | "
                     f"{s['unanswerable_answered_with_citations']} | {_pct(s['quoted_share'])} | "
                     f"{s.get('answers_what_it_asks', 0)} of {s.get('asked_turns', 0)} | "
                     f"{s.get('repeats_last_answer', 0)} |")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
