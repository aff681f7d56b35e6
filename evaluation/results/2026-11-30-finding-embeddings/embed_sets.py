"""Embed the finding-sentence sets with MiniLM (as the chooser's WordMeaning reads them) and save arrays."""
import json, time, sys
import numpy as np
from pmc_rag.evaluation.finding_sentences import abstract_sentences, held_aside_sentences, split_by_paper
from pmc_rag.components.onnx_text_embedder import OnnxTextEmbedder

learn, tuning = split_by_paper(abstract_sentences())
held = held_aside_sentences()
emb = OnnxTextEmbedder(model="sentence-transformers/all-MiniLM-L6-v2", normalize_embeddings=True)
emb.warm_up()
out = {}
for name, items in (("learn", learn), ("tuning", tuning), ("held", held)):
    t = time.time()
    texts = [i.sentence for i in items]
    vecs = []
    for k in range(0, len(texts), 256):
        vecs += emb.embed_many(texts[k:k+256])
        print(name, k, len(texts), f"{time.time()-t:.0f}s", flush=True)
    np.save(f"/tmp/fe/{name}.npy", np.array(vecs, dtype=np.float32))
    json.dump([{"paper": i.paper, "kind": i.kind, "sentence": i.sentence, "finding": i.finding,
                "own": i.its_own_finding} for i in items], open(f"/tmp/fe/{name}.json", "w"))
