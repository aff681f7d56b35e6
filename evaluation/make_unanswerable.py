"""Writes evaluation/datasets/unanswerable_generated.json: questions the sample corpus cannot answer, made
mechanically and checked by SQL against the indexed chunks (`python -m pmc_rag.evaluation.make_unanswerable`).

- `pair`: two subjects the corpus names (MeSH terms of the PubMedQA papers that their own text uses, each in at
  most 0.5% of the chunks, as common nouns), never in one paper: "Is bruxism associated with osteonecrosis?";
- `unknown`: a drug or condition no chunk names, with a subject the corpus does name.

A seeded shuffle puts 50 in `held_aside` (never used to choose anything) and the rest in `generated_tuning`.
A second batch, `generated_tuning_2` (2026-11-27), adds the next 300 pairs of the same shuffle and 40 more drugs
and conditions, once the first tuning set was nearly all caught; the first 175 questions are unchanged.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import psycopg

from pmc_rag.paths import DEV_QUESTIONS

OUT = Path(__file__).resolve().parent / "datasets" / "unanswerable_generated.json"
TEMPLATES = ["Is {a} associated with {b}?", "Does {a} affect {b}?", "What is the effect of {a} on {b}?"]
# Real drugs and conditions (2026), each checked below to be named by no chunk of the sample.
UNKNOWN = ["tirzepatide", "lecanemab", "donanemab", "nirmatrelvir", "zuranolone", "sotatercept", "inclisiran",
           "resmetirom", "teplizumab", "mavacamten", "vutrisiran", "aducanumab", "bimekizumab", "deucravacitinib",
           "ritlecitinib", "olezarsen", "elafibranor", "efgartigimod", "tofersen", "xanomeline",
           "Kikuchi disease", "Erdheim-Chester disease", "Castleman disease", "Susac syndrome", "Takayasu arteritis"]
# The second batch's: none of them is in UNKNOWN.
UNKNOWN_2 = ["semaglutide", "finerenone", "vericiguat", "sotagliflozin", "bempedoic acid", "evinacumab", "lumasiran",
             "nusinersen", "risdiplam", "onasemnogene", "eptinezumab", "atogepant", "rimegepant", "ubrogepant",
             "lasmiditan", "esketamine", "brexanolone", "pitolisant", "solriamfetol", "daridorexant", "lemborexant",
             "tezepelumab", "dupilumab", "tralokinumab", "abrocitinib", "upadacitinib", "filgotinib", "ozanimod",
             "ponesimod", "ofatumumab", "ublituximab", "avacopan", "voclosporin", "anifrolumab", "belimumab",
             "Kawasaki disease", "Whipple disease", "Behcet disease", "Still disease", "Churg-Strauss syndrome"]
SECOND_BATCH_SEED = 3232
KNOWN = ["hypertension", "depression", "asthma", "obesity", "pain", "mortality", "pregnancy", "diabetes",
         "survival", "quality of life"]


def chunk_papers(connection: psycopg.Connection, term: str) -> set[str]:
    rows = connection.execute(
        "SELECT DISTINCT meta->>'source_id' FROM pmc_chunks WHERE content ~* %s OR meta->>'title' ~* %s",
        (rf"\m{re.escape(term)}\M",) * 2).fetchall()
    return {row[0] for row in rows}


def main(seed: int = 32, out: Path = OUT) -> None:
    from pmc_rag.database import ensure_database

    ensure_database()  # the embedded PostgreSQL unless PG_CONN_STR names a server
    dev = json.loads(Path(DEV_QUESTIONS).read_text(encoding="utf-8"))
    with psycopg.connect(os.environ["PG_CONN_STR"]) as connection:
        total = connection.execute("SELECT count(DISTINCT meta->>'source_id') FROM pmc_chunks").fetchone()[0]
        candidates: dict[str, set[str]] = {}
        for item in dev.values():
            context = " ".join(item["CONTEXTS"])
            for mesh in item["MESHES"]:
                term = mesh.lower()
                if "," in mesh or len(term) < 5 or term in candidates:
                    continue
                if not re.search(rf"(?<![A-Za-z]){re.escape(term)}(?![a-z])", context):
                    continue  # the paper's text does not use it as a common noun (a name, a place, a MeSH-only term)
                papers = chunk_papers(connection, term)
                if 0 < len(papers) <= max(2, total // 200):
                    candidates[term] = papers
        rng = random.Random(seed)
        terms = sorted(candidates)
        pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i + 1:] if not candidates[a] & candidates[b]]
        rng.shuffle(pairs)
        questions = made_questions(connection, pairs[:150], UNKNOWN, candidates, rng)
        rng.shuffle(questions)
        for number, question in enumerate(questions):
            question["set"] = "held_aside" if number < 50 else "generated_tuning"
        second = made_questions(connection, pairs[150:450], UNKNOWN_2, candidates, random.Random(SECOND_BATCH_SEED))
        questions += [{**question, "set": "generated_tuning_2"} for question in second]
    out.write_text(json.dumps({"about": __doc__.strip(), "questions": questions}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(questions)} questions ({sum(q['kind'] == 'pair' for q in questions)} pairs) -> {out}")


def made_questions(connection: psycopg.Connection, pairs: list[tuple[str, str]], unknown: list[str],
                   candidates: dict[str, set[str]], rng: random.Random) -> list[dict[str, str]]:
    """A question per pair, then one per unknown name that no chunk names (checked here)."""
    questions = [{"question": rng.choice(TEMPLATES).format(a=a, b=b), "kind": "pair",
                  "checked": f"'{a}' in {len(candidates[a])} paper(s), '{b}' in {len(candidates[b])}, none both"}
                 for a, b in pairs]
    for name in unknown:
        if not chunk_papers(connection, name):
            questions.append({"question": rng.choice(TEMPLATES).format(a=name, b=rng.choice(KNOWN)),
                              "kind": "unknown", "checked": f"no chunk names '{name}'"})
    return questions


if __name__ == "__main__":
    main()
