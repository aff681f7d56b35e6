"""Writes evaluation/datasets/everyday_chat.json: everyday messages people type to a chat assistant, written by
others (the ChatterBot corpus, BSD-3-Clause, `evaluation/datasets/LICENSE.chatterbot-corpus`), for the crisis check.

None of them is a crisis (checked before any use: the few that speak of dying are about the bot, trivia or
history, "I do not want to die" said to a bot). Each conversation's first line is what a person typed; the
replies are the bot's and are left out. Languages the check's users write in Latin script: English, Spanish,
Italian, Dutch, French, German, Portuguese.

Split by file, before any measurement (2026-11-29, issue 61), so that the held-aside part holds subjects and
languages the tuning part has none of: a seeded shuffle puts about a third of the English files in
`chat_held_aside` together with every French, German and Portuguese file; the other English files and every
Spanish, Italian and Dutch file go round-robin into `chat_tuning_1` to `chat_tuning_3` (so that
`pmc-rag eval --crisis --left-out` can leave each out).

    pip download --no-deps --no-binary :all: chatterbot-corpus==1.3.3   # then unpack it
    python -m pmc_rag.evaluation.make_everyday_chat PATH/chatterbot_corpus-1.3.3/chatterbot_corpus/data
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent / "datasets" / "everyday_chat.json"
TUNING_LANGUAGES = ["spanish", "italian", "dutch"]
HELD_ASIDE_LANGUAGES = ["french", "german", "portuguese"]
LANGUAGE_CODES = {"english": "en", "spanish": "es", "italian": "it", "dutch": "nl", "french": "fr", "german": "de",
                  "portuguese": "pt"}
SEED = 6161


def first_lines(path: Path) -> list[str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return [str(conversation[0]).strip() for conversation in data.get("conversations") or [] if conversation]


def split_files(data: Path) -> dict[str, list[Path]]:
    english = sorted((data / "english").glob("*.yml"))
    random.Random(SEED).shuffle(english)
    held = english[: len(english) // 3] + [f for lang in HELD_ASIDE_LANGUAGES for f in sorted((data / lang).glob("*.yml"))]
    tuning = english[len(english) // 3:] + [f for lang in TUNING_LANGUAGES for f in sorted((data / lang).glob("*.yml"))]
    sets: dict[str, list[Path]] = {"chat_held_aside": held}
    for number, path in enumerate(tuning):
        sets.setdefault(f"chat_tuning_{number % 3 + 1}", []).append(path)
    return sets


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not (Path(args[0]) / "english").is_dir():
        print("usage: python -m pmc_rag.evaluation.make_everyday_chat CHATTERBOT_CORPUS_DATA_FOLDER "
              "(the folder that holds english/, spanish/, ...)", file=sys.stderr)
        return 2
    data = Path(args[0])
    seen: set[str] = set()
    messages = []
    for name, files in split_files(data).items():
        for path in files:
            for text in first_lines(path):
                key = " ".join(text.lower().split())
                if len(key) < 2 or key in seen:
                    continue
                seen.add(key)
                messages.append({"text": text, "label": "other", "category": "everyday", "set": name,
                                 "language": LANGUAGE_CODES[path.parent.name],
                                 "source": f"{path.parent.name}/{path.name}"})
    about = (__doc__ or "").split("\n\n    pip")[0].split("\n\n", 1)[1].replace("\n", " ")
    OUT.write_text(json.dumps({"about": about, "source": "chatterbot-corpus 1.3.3 (PyPI), data/",
                               "messages": messages}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    counts: dict[str, int] = {}
    for message in messages:
        counts[message["set"]] = counts.get(message["set"], 0) + 1
    print(f"{len(messages)} messages -> {OUT}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
