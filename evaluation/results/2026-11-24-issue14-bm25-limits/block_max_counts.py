"""How many postings exact BM25 must read at 1M chunks, by method: the analysis behind this folder's README.

A one-off study, kept so that it can be repeated, not part of the package. Needs the `bench_scale_1000000` table
(`pmc-rag bench scale --sizes 1000000 --keep`) and its embeddings dumped to /tmp/bmx/emb.npy, a (max docno + 1) x 384
float32 array indexed by docno. Usage: `python block_max_counts.py 40 [clusters]`.
"""
import json, os, sys, time

import numpy as np
from pmc_rag.database import ensure_database
ensure_database()
import psycopg
from pmc_rag.components import bm25_index as I
from pmc_rag.components import bm25_retriever as R
TABLE="bench_scale_1000000"; N=int(sys.argv[1]); K=25; k1, b = 1.2, 0.75
T=I.BM25Tables("public", TABLE, "english")
c=psycopg.connect(os.environ["PG_CONN_STR"], autocommit=True)
emb=np.load("/tmp/bmx/emb.npy"); n=len(emb)
rng=np.random.default_rng(0)
def kmeans(X, k, it=12):
    C=X[rng.choice(len(X),k,replace=False)].copy()
    for _ in range(it):
        a=np.argmax(X@C.T,1)
        for j in range(k):
            m=X[a==j]
            if len(m): C[j]=m.mean(0)
        C/=np.linalg.norm(C,axis=1,keepdims=True)+1e-9
    return C
t=time.time()
C=kmeans(emb[1+rng.choice(n-1,60000,replace=False)], int(sys.argv[2]) if len(sys.argv)>2 else 1024)
assign=np.concatenate([np.argmax(emb[i:i+100000]@C.T,1) for i in range(0,n,100000)])
# order clusters along a greedy chain of nearest centroids, so neighbouring blocks are related
order_c=[0]; left=set(range(1,len(C)))
while left:
    l=np.array(sorted(left)); nxt=l[np.argmax(C[l]@C[order_c[-1]])]; order_c.append(nxt); left.remove(nxt)
rank_c=np.empty(len(C),int); rank_c[order_c]=np.arange(len(C))
perm=np.lexsort((np.arange(n), rank_c[assign]))  # new position -> docno
newpos=np.empty(n,np.int64); newpos[perm]=np.arange(n)
print(f"clustered in {time.time()-t:.0f}s; cluster sizes p50 {np.median(np.bincount(assign)):.0f}", flush=True)
c=psycopg.connect(os.environ["PG_CONN_STR"], autocommit=True)
avgdl=c.execute(T.format("select total_len::float8/doc_count from {stats}")).fetchone()[0]
terms_sql=T.format(R._QUESTION_TERMS + " SELECT (SELECT array_agg(term_id ORDER BY idf DESC, term_id) FROM scored_terms), (SELECT array_agg(idf ORDER BY idf DESC, term_id) FROM scored_terms)")
qs=[q["QUESTION"] for q in json.load(open("evaluation/datasets/pubmedqa_dev_questions.json")).values()][:N]
cache={}
def postings(tid):
    if tid not in cache:
        d,tf,dl,mt,ml=c.execute(T.format("select array_agg(docno), array_agg(tf), array_agg(doc_len), (select max_tf from {terms} where term_id=%s), (select min_len from {terms} where term_id=%s) from {postings} where term_id=%s"),(tid,tid,tid)).fetchone()
        cache[tid]=(np.array(d),np.array(tf,float),np.array(dl,float),mt,ml)
    return cache[tid]
rows=[]
for qi,q in enumerate(qs):
    ids,idfs=c.execute(terms_sql,(q,32)).fetchone()
    if not ids: continue
    top=c.execute(T.format("SELECT * FROM {top}(%s,%s,%s,1.2,0.75)"),(ids,idfs,K)).fetchall()
    kth=top[-1][1]*(1-1e-9) if len(top)>=K else 0
    P=[postings(t) for t in ids]
    imp=[idf*tf/(tf+k1*(1-b+b*dl/avgdl)) for (d,tf,dl,mt,ml),idf in zip(P,idfs)]
    df=np.array([len(p[0]) for p in P])
    gb=np.array([idf*mt/(mt+k1*(1-b+b*ml/avgdl)) for (d,tf,dl,mt,ml),idf in zip(P,idfs)])
    o=np.argsort(gb); weak=np.cumsum(gb[o])<kth; strong=o[~weak]
    r={"q":q[:50],"terms":len(ids),"kth":kth,"all":int(df.sum()),"maxscore":int(df[strong].sum())}
    for name,pos in (("orig",None),("clus",newpos)):
        for B in (64,256,1024,4096):
            nb=n//B+1
            M=np.zeros((nb,len(ids))); cnt=np.zeros((nb,len(ids)))
            for j,(p,im) in enumerate(zip(P,imp)):
                blk=(p[0] if pos is None else pos[p[0]])//B
                np.maximum.at(M[:,j],blk,im); np.add.at(cnt[:,j],blk,1)
            live=M.sum(1)>=kth
            # block-max MaxScore: inside a live block, terms whose block bounds add up below kth are only looked up
            Ms=np.sort(M,1); osr=np.argsort(M,1); cs=np.cumsum(Ms,1)<kth
            cnt_sorted=np.take_along_axis(cnt,osr,1)
            strong_cnt=(cnt_sorted*(~cs)).sum(1)
            r[f"{name}{B}_blocks"]=live.mean(); r[f"{name}{B}_all"]=int(cnt[live].sum()); r[f"{name}{B}_bmm"]=int(strong_cnt[live].sum())
    rows.append(r)
    if qi%10==0: print(qi, r["maxscore"], r["clus1024_bmm"], flush=True)
json.dump(rows,open("/tmp/bmx/rows.json","w"))
def pct(key):
    v=np.array([x[key] for x in rows]); return f"p50 {np.percentile(v,50):>9.0f}  p95 {np.percentile(v,95):>9.0f}  mean {v.mean():>9.0f}"
print("postings read per question,", len(rows), "questions")
for key in ["all","maxscore"]+[f"{nm}{B}_{s}" for nm in ("orig","clus") for B in (64,256,1024,4096) for s in ("all","bmm")]:
    print(f"{key:>16}: {pct(key)}")
for nm in ("orig","clus"):
    for B in (64,256,1024,4096):
        print(nm,B,"live blocks mean", np.mean([x[f'{nm}{B}_blocks'] for x in rows]).round(3))
