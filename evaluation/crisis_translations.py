"""Labelled crisis-check messages in other languages, put into English by the answering pipeline's own translator.

The crisis check reads a message as typed and, when the answering service has translated it, in English too
(`check_crisis_read_in_english`). To measure that, each message the translator would translate is translated
once, by the pipeline's `QuestionTranslator` and its model (the embedded one: start it with `pmc-rag model start`).
The embedded model's translations of the labelled messages are recorded in `datasets/crisis_translations.json`
(so tests and CI measure without a model); a message not recorded there (a new one) is translated and kept under
PMC_RAG_HOME/eval, so that later runs read the same translation.

    python -m pmc_rag.evaluation.crisis_translations            # translate what is not yet recorded or kept
    python -m pmc_rag.evaluation.crisis_translations --record   # translate all again and record (a new translator)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pmc_rag.paths import home

CACHE_NAME = "crisis-translations.json"
RECORDED = Path(__file__).resolve().parent / "datasets" / "crisis_translations.json"


def cache_path() -> Path:
    return home() / "eval" / CACHE_NAME


def pipeline_translator(pipeline: str = "rag"):  # -> QuestionTranslator
    """The translator `pipeline` declares, built from its YAML and warmed up."""
    from pmc_rag.components.question_translator import QuestionTranslator
    from pmc_rag.environment import configure_environment
    from pmc_rag.local_llm.spec import api_key
    from pmc_rag.pipelines import pipeline_spec

    configure_environment()  # its generators may be ours (a fallback chain), which Haystack loads when allowed
    api_key()  # exported for the YAML's generator, as `pmc-rag ask` does
    _, spec = pipeline_spec(pipeline)
    translator = QuestionTranslator.from_dict(spec["components"]["translator"])
    translator.warm_up()
    return translator


def recorded_translations() -> dict[str, str]:
    """The embedded model's translations of the labelled messages, as recorded: message -> English."""
    return json.loads(RECORDED.read_text(encoding="utf-8"))["translations"]


def kept_translations(path: Path | None = None) -> dict[str, str]:
    """The translations recorded and kept so far: message -> English (itself: English, nothing to translate;
    absent: not yet translated, or the model failed)."""
    path = path or cache_path()
    kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return {**kept, **recorded_translations()}


def translate_all(texts: list[str], path: Path | None = None, progress: bool = True) -> dict[str, str]:
    """Every text the translator would translate, translated (kept ones read from `path`, new ones written to it);
    a text it passes on as English maps to itself. One it could not translate (the model failed) is not kept, and
    maps to itself this time: the service would read it as typed only."""
    path = path or cache_path()
    kept = kept_translations(path)
    translator = None
    todo = [t for t in dict.fromkeys(texts) if t not in kept]
    started = time.perf_counter()
    for number, text in enumerate(todo, 1):
        if translator is None:
            translator = pipeline_translator()
        if not translator.language(text):
            kept[text] = text
            continue
        translated = translator.run(question=text)
        if translated["question"] != text:
            kept[text] = translated["question"]
        if progress and number % 25 == 0:
            print(f"  {number}/{len(todo)} messages read, in English where needed "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(kept, ensure_ascii=False, indent=0), encoding="utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, ensure_ascii=False, indent=0), encoding="utf-8")
    return {text: kept.get(text, text) for text in texts}


def record_again(texts: list[str], about: str, model: str, progress: bool = True) -> dict[str, str]:
    """Every text the translator would translate, translated afresh by the pipeline's translator and recorded in
    `datasets/crisis_translations.json` (its `about` and `model` replaced): after the translator's model changed."""
    translator = pipeline_translator()
    todo = [t for t in dict.fromkeys(texts) if translator.language(t)]
    recorded: dict[str, str] = {}
    started = time.perf_counter()
    for number, text in enumerate(todo, 1):
        english = translator.run(question=text)["question"]
        if english != text:
            recorded[text] = english
        if progress and number % 25 == 0:
            print(f"  {number}/{len(todo)} translated ({time.perf_counter() - started:.0f} s)", flush=True)
    RECORDED.write_text(json.dumps({"about": about, "model": model, "translations": recorded}, ensure_ascii=False,
                                   indent=0), encoding="utf-8")
    return recorded


def main(argv: list[str] | None = None) -> int:
    import argparse

    from pmc_rag.answering.crisis_exemplars import labelled_messages

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", metavar="ABOUT", help="translate every message again and record the "
                        "translations in datasets/crisis_translations.json, with this text as its `about`")
    parser.add_argument("--model", default="", help="with --record: the translating model, as the file names it")
    args = parser.parse_args(argv)
    texts = [m["text"] for m in labelled_messages()]
    if args.record:
        recorded = record_again(texts, args.record, args.model)
        print(f"{len(recorded)} messages recorded in English -> {RECORDED}")
        return 0
    translated = translate_all(texts)
    changed = sum(1 for t, e in translated.items() if e != t)
    print(f"{changed} of {len(translated)} messages read in English by the translator -> {cache_path()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
