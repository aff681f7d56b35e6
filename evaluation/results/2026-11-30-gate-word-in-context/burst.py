"""Trial: is the gate's objected word a subject somewhere in the corpus (concentrated in a paper), or a word spread thin?"""
import json, re, math, sys
from collections import Counter, defaultdict
import numpy as np, snowballstemmer
st = snowballstemmer.stemmer("english")
chunks = json.load(open("/tmp/chunks.json"))
paper_counts = defaultdict(Counter)   # stem -> paper -> count
chunk_df = Counter(); paper_len = Counter()
for content, src in chunks:
    words = [st.stemWord(w) for w in re.findall(r"[a-z][a-z0-9-]+", content.lower())]
    paper_len[src] += len(words)
    for w in set(words): chunk_df[w] += 1
    for w, n in Counter(words).items(): paper_counts[w][src] += n
N = len(chunks); P = len(paper_len)
def feats(word):
    s = st.stemWord(word.lower())
    pc = paper_counts.get(s, Counter())
    total = sum(pc.values()); papers = len(pc)
    top = max(pc.values()) if pc else 0
    df = chunk_df.get(s, 0)
    # residual IDF (Church & Gale): observed idf minus the Poisson prediction over chunks
    ridf = (-math.log2(df / N) + math.log2(1 - math.exp(-total / N))) if df else 0.0
    return {"total": total, "papers": papers, "top": top, "ridf": ridf, "burst": total / papers if papers else 0.0,
            "top_share": top / total if total else 0.0}
ANSWERABLE = {"pubmedqa_dev", "vague_dev", "plain_tuning"}
rows = json.load(open("/tmp/turned.json")); out = []
for row in rows:
    words = re.findall(r"'([^']+)'", row["why"])
    words = [w for w in words if " " not in w]
    if not words: continue
    fs = [feats(w) for w in words]
    out.append({"set": row["set"], "q": row["question"], "words": words, "why": row["why"][:60],
                "top": max(f["top"] for f in fs), "burst": max(f["burst"] for f in fs), "ridf": max(f["ridf"] for f in fs),
                "total": max(f["total"] for f in fs), "papers": max(f["papers"] for f in fs)})
def auc(pos, neg):
    pos, neg = np.array(pos, float), np.array(neg, float)
    return float(((pos[:, None] > neg[None]) + 0.5 * (pos[:, None] == neg[None])).mean())
for k in ("top", "burst", "ridf", "total", "papers"):
    pos = [r[k] for r in out if r["set"] in ANSWERABLE]; neg = [r[k] for r in out if r["set"] not in ANSWERABLE]
    print(k, "AUC (answerable higher)", round(auc(pos, neg), 3), len(pos), len(neg))
for r in out:
    if r["set"] in ANSWERABLE: print(r["set"], r["words"], r["top"], round(r["burst"],2), round(r["ridf"],2), "|", r["q"][:70])
json.dump(out, open("/tmp/burst.json", "w"), indent=0)
