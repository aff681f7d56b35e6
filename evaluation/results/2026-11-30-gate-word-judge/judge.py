import json, re, sys, time
from collections import defaultdict
import numpy as np
from pmc_rag.components.subject_words import phrase_around
from pmc_rag.components.section_chunker import split_sentences
from pmc_rag.local_llm.yes_no import YesNoJudge
from pmc_rag.components.word_meaning import WordMeaning

rows = json.load(open(sys.argv[1])); model = sys.argv[2]; limit = int(sys.argv[3]) if len(sys.argv) > 3 else 10**9
SYSTEM = ("You check whether a passage from a medical paper speaks of a given thing: in the same words, or in other "
          "words (a medical term for an everyday word, a synonym, a paraphrase). Answer with one word: yes or no.")
USER = "Passage: {passage}\n\nThing: \"{phrase}\"\n\nDoes the passage speak of \"{phrase}\"?"
meaning = WordMeaning.loaded("sentence-transformers/all-MiniLM-L6-v2", min_similarity=0.7)
judge = YesNoJudge(model); judge.warm_up()
ANSWERABLE = {"pubmedqa_dev", "vague_dev", "plain_tuning", "plain_held_aside", "vague_held_out"}
per_set = defaultdict(list); t0 = time.time(); n = 0
for row in rows:
    words = re.findall(r"'([^']+)'", row["why"])
    if not words or not row["docs"]:
        score = None
    else:
        top = row["docs"][0][0]
        text = " ".join(c for s, c in row["docs"] if s == top)
        sentences = [s for s in split_sentences(" ".join(text.split())) if len(s.split()) >= 4] or [text[:600]]
        scores = []
        for word in words:
            phrase = phrase_around(row["question"], word)
            v = meaning.vectors([phrase])[0]; sv = meaning.vectors(sentences)
            best = [sentences[i] for i in np.argsort(-(sv @ v))[:3]]
            scores.append(judge.log_odds(SYSTEM, USER.format(passage=" ".join(best)[:1200], phrase=phrase)))
            n += 1
        score = min(scores)
    row["score"] = score; row["words"] = words
    per_set[row["set"]].append(score)
    if sum(len(v) for v in per_set.values()) >= limit: break
print(f"{n} judgements, {time.time()-t0:.0f} s")
pos = [r["score"] for r in rows if "score" in r and r["score"] is not None and r["set"] in ANSWERABLE]
neg = [r["score"] for r in rows if "score" in r and r["score"] is not None and r["set"] not in ANSWERABLE]
auc = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg]) if pos and neg else float("nan")
print("AUC", round(float(auc), 3), "answerable", len(pos), "unanswerable", len(neg))
for t in (-1, 0, 0.5, 1, 1.5, 2, 3):
    print(t, {s: sum(1 for x in v if x is not None and x >= t) for s, v in per_set.items()}, {s: len(v) for s, v in per_set.items()})
json.dump(rows, open(sys.argv[1].replace(".json", f".{model}.json"), "w"), indent=1)
