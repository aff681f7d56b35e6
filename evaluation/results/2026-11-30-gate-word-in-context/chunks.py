import json, os, psycopg
from pmc_rag.database import ensure_database
ensure_database()
with psycopg.connect(os.environ["PG_CONN_STR"]) as c:
    tables = [r[0] for r in c.execute("select table_name from information_schema.tables where table_schema='public'")]
    print(tables)
    rows = c.execute("select content, meta from pmc_chunks").fetchall() if "pmc_chunks" in tables else []
    print(len(rows))
    json.dump([(r[0], r[1].get("source_id")) for r in rows], open("/tmp/chunks.json", "w"))
