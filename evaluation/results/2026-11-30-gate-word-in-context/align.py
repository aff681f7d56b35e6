"""Trial: the gate's objected word read in context (token vectors of MiniLM) against the closest paper's tokens."""
import json, re, sys, time
from collections import defaultdict
import numpy as np, torch
from transformers import AutoTokenizer, AutoModel
from pmc_rag.components.section_chunker import split_sentences

rows = json.load(open(sys.argv[1]))
path = sys.argv[2]
tok = AutoTokenizer.from_pretrained(path); model = AutoModel.from_pretrained(path).eval()
ANSWERABLE = {"pubmedqa_dev", "vague_dev", "plain_tuning", "plain_held_aside", "vague_held_out"}
LAYERS = [1, 2, 3, 4, 5, 6]

def encode(texts):
    enc = tok(texts, return_tensors="pt", padding=True, truncation=True, max_length=256)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    return enc, out.hidden_states

def word_vectors(text, word):
    """Per layer, the mean of the word's wordpiece vectors where the word occurs in text (first occurrence)."""
    enc, hs = encode([text])
    ids = enc.word_ids(0); offsets = tok(text, return_offsets_mapping=True)["offset_mapping"]
    words = defaultdict(list)
    for i, w in enumerate(ids):
        if w is not None: words[w].append(i)
    for w, pieces in words.items():
        s, e = offsets[pieces[0]][0], offsets[pieces[-1]][1]
        if text[s:e].lower() == word.lower():
            return {L: hs[L][0, pieces].mean(0).numpy() for L in LAYERS}
    return None

def token_matrix(sentences):
    enc, hs = encode(sentences)
    mask = enc["attention_mask"].bool().clone()
    special = (enc["input_ids"] == tok.cls_token_id) | (enc["input_ids"] == tok.sep_token_id)
    mask &= ~special
    return {L: hs[L][mask].numpy() for L in LAYERS}

def norm(m):
    return m / np.linalg.norm(m, axis=-1, keepdims=True)

t0 = time.time(); scored = []
for row in rows:
    words = re.findall(r"'([^']+)'", row["why"])
    if not words or not row["docs"]:
        continue
    top = row["docs"][0][0]
    text = " ".join(c for s, c in row["docs"] if s == top)
    sentences = [s for s in split_sentences(" ".join(text.split())) if len(s.split()) >= 4][:40] or [text[:600]]
    mats = token_matrix(sentences)
    per_layer = defaultdict(list); alone = defaultdict(list)
    for word in words:
        v = word_vectors(row["question"], word)
        a = word_vectors(word, word)
        for L in LAYERS:
            m = norm(mats[L])
            if v is not None:
                per_layer[L].append(float((m @ norm(v[L])).max()))
            if a is not None:
                alone[L].append(float((m @ norm(a[L])).max()))
    if not per_layer:
        continue
    scored.append({"set": row["set"], "question": row["question"], "words": words,
                   "ctx": {L: min(v) for L, v in per_layer.items()},
                   "alone": {L: min(v) for L, v in alone.items()}})
print(f"{len(scored)} questions, {time.time()-t0:.0f} s")

def auc(pos, neg):
    pos, neg = np.array(pos), np.array(neg)
    return float(((pos[:, None] > neg[None]) + 0.5 * (pos[:, None] == neg[None])).mean())

for kind in ("ctx", "alone"):
    for L in LAYERS:
        pos = [r[kind][L] for r in scored if r["set"] in ANSWERABLE and L in r[kind]]
        neg = [r[kind][L] for r in scored if r["set"] not in ANSWERABLE and L in r[kind]]
        print(kind, L, "AUC", round(auc(pos, neg), 3), len(pos), len(neg))
json.dump(scored, open(sys.argv[1].replace(".json", ".align.json"), "w"), indent=0)
