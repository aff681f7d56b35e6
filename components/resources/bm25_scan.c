/*
 * pmc_rag_bm25_top: the exhaustive BM25 top k of a question, scored from packed posting blocks.
 *
 * The SQL search in pmc_rag.components.bm25_index spends about 0.4 microseconds per posting in PostgreSQL's
 * executor (mostly grouping postings by chunk), which is 250 ms for the longest questions at a million chunks.
 * This function reads the same postings packed 8 bytes each in blocks of consecutive chunk numbers and adds them
 * up in a small array per block: a few nanoseconds per posting, and every posting is scored, so the result is
 * exact by construction.
 *
 * Input (from <table>__bm25_blocks, see bm25_index.py): parallel arrays, ordered by block number, with one entry per
 * question term present in that block:
 *   blocks  int4[]    block number; chunk number = block * block_size + offset
 *   lists   bytea[]   postings of the term in the block: per posting a big-endian int4 (offset << 16 | tf) and a
 *                     big-endian int4 doc_len
 *   idfs    float8[]  the term's idf
 * Output: float8[] of (chunk number, score) pairs, at most k, best first, ordered as the SQL search orders them:
 * round(score * 1e9) descending, then chunk number.
 *
 * Compiled against the server's own headers with portable flags (no -march), so it runs on any CPU of the
 * architecture; every length and offset is checked, so a damaged block is an error, never a crash.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "varatt.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pmc_rag_bm25_top);

typedef struct
{
    double key;   /* rint(score * 1e9): the SQL ordering's first key */
    double score;
    int64 docno;
} Hit;

/* Whether a ranks before b. */
static inline bool
ranks_before(const Hit *a, const Hit *b)
{
    return a->key > b->key || (a->key == b->key && a->docno < b->docno);
}

/* Insert into `top` (sorted, `*found` entries, room for k) if it belongs there. */
static void
offer(Hit *top, int *found, int k, Hit hit)
{
    int i;

    if (*found == k && !ranks_before(&hit, &top[k - 1]))
        return;
    i = (*found < k) ? (*found)++ : k - 1;
    while (i > 0 && ranks_before(&hit, &top[i - 1]))
    {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = hit;
}

static void
deconstruct(ArrayType *array, Oid type, int16 len, bool byval, char align, Datum **values, int *count,
            const char *name)
{
    bool *nulls;
    int i;

    if (ARR_NDIM(array) > 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be a one-dimensional array", name)));
    deconstruct_array(array, type, len, byval, align, values, &nulls, count);
    for (i = 0; i < *count; i++)
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not contain NULL", name)));
}

Datum
pmc_rag_bm25_top(PG_FUNCTION_ARGS)
{
    int k = PG_GETARG_INT32(3);
    double k1 = PG_GETARG_FLOAT8(4);
    double b = PG_GETARG_FLOAT8(5);
    double avgdl = PG_GETARG_FLOAT8(6);
    int block_size = PG_GETARG_INT32(7);
    Datum *blocks, *lists, *idfs, *out;
    int n_blocks, n_lists, n_idfs, found = 0, i, start;
    double *acc;
    Hit *top;

    if (k < 1 || k > 100000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("k must be between 1 and 100000, not %d", k)));
    if (block_size < 1 || block_size > 65536)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("block_size must be between 1 and 65536")));
    if (!(avgdl > 0) || !(k1 >= 0) || !(b >= 0 && b <= 1))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("need avgdl > 0, k1 >= 0, 0 <= b <= 1")));
    deconstruct(PG_GETARG_ARRAYTYPE_P(0), INT4OID, 4, true, TYPALIGN_INT, &blocks, &n_blocks, "blocks");
    deconstruct(PG_GETARG_ARRAYTYPE_P(1), BYTEAOID, -1, false, TYPALIGN_INT, &lists, &n_lists, "lists");
    deconstruct(PG_GETARG_ARRAYTYPE_P(2), FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &idfs, &n_idfs, "idfs");
    if (n_blocks != n_lists || n_lists != n_idfs)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("blocks, lists and idfs differ in length")));

    acc = palloc(sizeof(double) * block_size);
    top = palloc(sizeof(Hit) * k);
    for (start = 0; start < n_lists;)
    {
        int32 block = DatumGetInt32(blocks[start]);
        int end = start, j;

        CHECK_FOR_INTERRUPTS();
        if (block < 0)
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("negative block number %d", block)));
        while (end < n_lists && DatumGetInt32(blocks[end]) == block)
            end++;
        if (end < n_lists && DatumGetInt32(blocks[end]) < block)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("blocks must be in ascending order")));
        memset(acc, 0, sizeof(double) * block_size);
        for (i = start; i < end; i++)
        {
            bytea *list = DatumGetByteaPP(lists[i]);
            const unsigned char *p = (const unsigned char *) VARDATA_ANY(list);
            Size bytes = VARSIZE_ANY_EXHDR(list);
            double idf = DatumGetFloat8(idfs[i]);
            double c0 = k1 * (1 - b), c1 = k1 * b / avgdl;
            Size at;

            if (bytes % 8 != 0)
                ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("a posting block of %zu bytes (not 8 per posting)", bytes)));
            for (at = 0; at < bytes; at += 8, p += 8)
            {
                uint32 offset = ((uint32) p[0] << 8) | p[1];
                double tf = (double) (((uint32) p[2] << 8) | p[3]);
                double doc_len = (double) (((uint32) p[4] << 24) | ((uint32) p[5] << 16) | ((uint32) p[6] << 8) | p[7]);

                if (offset >= (uint32) block_size)
                    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("posting offset %u outside a block of %d", offset, block_size)));
                acc[offset] += idf * tf / (tf + c0 + c1 * doc_len);
            }
        }
        for (j = 0; j < block_size; j++)
            if (acc[j] > 0)
            {
                Hit hit = {rint(acc[j] * 1e9), acc[j], (int64) block * block_size + j};

                offer(top, &found, k, hit);
            }
        start = end;
    }

    out = palloc(sizeof(Datum) * 2 * (found > 0 ? found : 1));
    for (i = 0; i < found; i++)
    {
        out[2 * i] = Float8GetDatum((double) top[i].docno);
        out[2 * i + 1] = Float8GetDatum(top[i].score);
    }
    PG_RETURN_ARRAYTYPE_P(construct_array(out, 2 * found, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
