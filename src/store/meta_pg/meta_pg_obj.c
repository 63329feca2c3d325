/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: object rows, chunk maps and the listing scan. See meta_pg_int.h. */
#include "base/log.h"
#include "base/util.h"
#include "meta_pg/meta_pg_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_SCAN_BATCH 256

/* ---- chunk maps ---- */

static void pg_chunk_read(const PGresult *r, int row, int col, data_chunk_t *ch)
{
    memset(ch, 0, sizeof *ch);
    pg_copy(r, row, col, ch->id, sizeof ch->id);
    ch->offset = (uint64_t)pg_i64(r, row, col + 1);
    ch->length = (uint64_t)pg_i64(r, row, col + 2);
    ch->crc64nvme = (uint64_t)pg_i64(r, row, col + 3);
    meta_replicas_parse(PQgetvalue(r, row, col + 4), ch);
    ch->ec_k = (uint32_t)pg_i64(r, row, col + 5);
    ch->ec_m = (uint32_t)pg_i64(r, row, col + 6);
    ch->ec_index = (uint32_t)pg_i64(r, row, col + 7);
    ch->ec_stripe = (uint64_t)pg_i64(r, row, col + 8);
}

wh_status_t pg_chunk_add(const PGresult *r, int row, int col, data_ref_t *ref)
{
    if (PQgetisnull(r, row, col))
        return WH_OK;
    data_chunk_t *n = realloc(ref->chunks, (ref->n_chunks + 1) * sizeof *n);
    if (!n)
        return WH_ERR_NOMEM;
    ref->chunks = n;
    pg_chunk_read(r, row, col, &ref->chunks[ref->n_chunks++]);
    return WH_OK;
}

/* Chunks taken by reference (a copy, UploadPartCopy, a completion's parts): the rows they
 * were read from must still list them now, and stay (FOR SHARE holds them until this
 * transaction ends, so a concurrent delete waits and its GC entries are then stale). A
 * source deleted (and perhaps collected) since it was read fails the commit with NOT_FOUND
 * instead of committing a map whose bytes are gone. */
static wh_status_t pg_chunks_hold_shared(pg_conn_t *c, const data_ref_t *ref)
{
    wh_sbuf_t ids;
    wh_sbuf_init(&ids);
    wh_sbuf_puts(&ids, "{");
    size_t n = 0;
    for (size_t i = 0; i < ref->n_chunks; i++)
        if (ref->chunks[i].shared)
            wh_sbuf_printf(&ids, "%s\"%s\"", n++ ? "," : "", ref->chunks[i].id);
    wh_sbuf_puts(&ids, "}");
    if (!n || ids.oom) {
        wh_sbuf_free(&ids);
        return ids.oom ? WH_ERR_NOMEM : WH_OK;
    }
    pg_params_t p = {0};
    pp_text(&p, ids.data);
    pp_text(&p, ref->id);
    PGresult *r;
    wh_status_t st = pg_exec(c,
                             "SELECT count(DISTINCT chunk_id), (SELECT count(DISTINCT u)"
                             " FROM unnest($1::text[]) u) FROM (SELECT chunk_id FROM chunks"
                             " WHERE chunk_id = ANY($1::text[]) AND data_id <> $2"
                             " FOR SHARE) held",
                             &p, &r, "shared chunks hold");
    wh_sbuf_free(&ids);
    if (st != WH_OK)
        return st;
    if (pg_i64(r, 0, 0) != pg_i64(r, 0, 1)) {
        wh_warn("store",
                "a copy's source was deleted before the copy committed (%lld of %lld "
                "shared chunks left): refused",
                (long long)pg_i64(r, 0, 0), (long long)pg_i64(r, 0, 1));
        st = WH_ERR_NOT_FOUND;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_chunks_put(void *conn, const data_ref_t *ref)
{
    pg_conn_t *c = conn;
    if (!ref->n_chunks)
        return WH_OK;
    /* One statement for the whole map: arrays, unnested server-side. */
    wh_sbuf_t a[9];
    for (int i = 0; i < 9; i++) {
        wh_sbuf_init(&a[i]);
        wh_sbuf_puts(&a[i], "{");
    }
    for (size_t i = 0; i < ref->n_chunks; i++) {
        const data_chunk_t *ch = &ref->chunks[i];
        const char *sep = i ? "," : "";
        wh_sbuf_printf(&a[0], "%s\"%s\"", sep, ch->id);
        wh_sbuf_printf(&a[1], "%s%" PRId64, sep, (int64_t)ch->offset);
        wh_sbuf_printf(&a[2], "%s%" PRId64, sep, (int64_t)ch->length);
        wh_sbuf_printf(&a[3], "%s%" PRId64, sep, (int64_t)ch->crc64nvme);
        wh_sbuf_printf(&a[4], "%s\"", sep);
        for (uint32_t k = 0; k < ch->n_replicas && k < DATA_CHUNK_MAX_REPLICAS; k++)
            wh_sbuf_printf(&a[4], k ? ",%u" : "%u", ch->replicas[k]);
        wh_sbuf_puts(&a[4], "\"");
        wh_sbuf_printf(&a[5], "%s%u", sep, ch->ec_k);
        wh_sbuf_printf(&a[6], "%s%u", sep, ch->ec_m);
        wh_sbuf_printf(&a[7], "%s%u", sep, ch->ec_index);
        wh_sbuf_printf(&a[8], "%s%" PRId64, sep, (int64_t)ch->ec_stripe);
    }
    bool oom = false;
    pg_params_t p = {0};
    pp_text(&p, ref->id);
    for (int i = 0; i < 9; i++) {
        wh_sbuf_puts(&a[i], "}");
        oom |= a[i].oom;
        pp_text(&p, a[i].data);
    }
    wh_status_t st = oom ? WH_ERR_NOMEM : pg_chunks_hold_shared(c, ref);
    if (st == WH_OK)
        st = pg_exec(c,
                     "INSERT INTO chunks(data_id, idx, chunk_id, off, len, crc64nvme,"
                     " replicas, ec_k, ec_m, ec_index, ec_stripe)"
                     " SELECT $1, (t.ord - 1)::int, t.cid, t.off, t.len, t.crc,"
                     " coalesce(string_to_array(nullif(t.reps, ''), ',')::integer[],"
                     " '{}'), t.k, t.m, t.ix, t.st"
                     " FROM unnest($2::text[], $3::bigint[], $4::bigint[],"
                     " $5::bigint[], $6::text[], $7::int[], $8::int[], $9::int[],"
                     " $10::bigint[]) WITH ORDINALITY"
                     " AS t(cid, off, len, crc, reps, k, m, ix, st, ord)",
                     &p, NULL, "chunk map insert");
    for (int i = 0; i < 9; i++)
        wh_sbuf_free(&a[i]);
    bool shared = false;
    for (size_t i = 0; i < ref->n_chunks; i++)
        shared |= ref->chunks[i].shared;
    if (st == WH_OK && shared) {
        /* Replicas as the held rows list them now (a repair may have moved one since the
         * source was read). */
        pg_params_t q = {0};
        pp_text(&q, ref->id);
        st = pg_exec(c,
                     "UPDATE chunks n SET replicas = s.replicas FROM (SELECT DISTINCT ON"
                     " (chunk_id) chunk_id, replicas FROM chunks WHERE data_id <> $1 AND"
                     " chunk_id IN (SELECT chunk_id FROM chunks WHERE data_id = $1)) s"
                     " WHERE n.data_id = $1 AND n.chunk_id = s.chunk_id"
                     " AND n.replicas <> s.replicas",
                     &q, NULL, "shared chunks replicas");
    }
    return st;
}

wh_status_t pg_chunks_get(void *conn, data_ref_t *ref)
{
    pg_conn_t *c = conn;
    pg_params_t p = {0};
    pp_text(&p, ref->id);
    PGresult *r;
    wh_status_t st = pg_exec(c,
                             "SELECT " PG_CHUNK_COLS " FROM chunks c WHERE c.data_id = $1"
                             " ORDER BY c.idx",
                             &p, &r, "chunk map lookup");
    for (int i = 0; st == WH_OK && i < PQntuples(r); i++)
        st = pg_chunk_add(r, i, 0, ref);
    PQclear(r);
    return st;
}

wh_status_t pg_chunks_drop(void *conn, const char *id)
{
    pg_conn_t *c = conn;
    if (!id[0])
        return WH_OK;
    pg_params_t p = {0};
    pp_text(&p, id);
    return pg_exec(c,
                   "WITH d AS (DELETE FROM chunks WHERE data_id = $1"
                   " RETURNING chunk_id, replicas)"
                   " INSERT INTO gc_queue(chunk_id, node)"
                   " SELECT chunk_id, unnest(replicas) FROM d",
                   &p, NULL, "chunk map drop");
}

/* ---- objects ---- */

wh_status_t pg_obj_ref(pg_conn_t *c, const char *bucket, const char *key, size_t klen,
                       data_ref_t *ref)
{
    pg_params_t p = {0};
    pp_text(&p, bucket);
    pp_bytes(&p, key, klen);
    PGresult *r;
    data_ref_clear(ref);
    wh_status_t st = pg_exec(c, "SELECT data_id FROM objects WHERE bucket = $1 AND key = $2", &p,
                             &r, "object data lookup");
    if (st == WH_OK && PQntuples(r) > 0)
        pg_copy(r, 0, 0, ref->id, sizeof ref->id);
    PQclear(r);
    if (st == WH_OK && ref->id[0])
        st = pg_chunks_get(c, ref);
    return st;
}

wh_status_t pg_obj_upsert(void *conn, const char *bucket, const char *key, size_t klen,
                          const data_obj_meta_t *meta, const data_ref_t *ref, int64_t seq)
{
    pg_conn_t *c = conn;
    pg_params_t p = {0};
    pp_text(&p, bucket);
    pp_bytes(&p, key, klen);
    pp_i64(&p, (int64_t)meta->size);
    pp_i64(&p, (int64_t)meta->mtime);
    pp_text(&p, meta->etag);
    pp_text(&p, meta->content_type);
    pp_text(&p, NULL);
    p.v[p.n - 1] = meta->user_meta_json; /* NULL stays SQL NULL (and below) */
    pp_text(&p, meta->crc32c);
    pp_text(&p, meta->crc64nvme);
    pp_i64(&p, meta->parts);
    pp_text(&p, ref->id);
    pp_text(&p, meta->owner);
    pp_text(&p, NULL);
    p.v[p.n - 1] = meta->acl;
    pp_text(&p, meta->version_id[0] ? meta->version_id : "null");
    pp_i64(&p, seq);
    pp_i64(&p, meta->delete_marker ? 1 : 0);
    pp_text(&p, NULL);
    p.v[p.n - 1] = meta->tags;
    pp_text(&p, NULL);
    p.v[p.n - 1] = meta->part_sizes;
    pp_text(&p, NULL);
    p.v[p.n - 1] = meta->sse;
    pp_i64(&p, meta->lock_mode);
    pp_i64(&p, meta->lock_until);
    pp_i64(&p, meta->legal_hold ? 1 : 0);
    wh_status_t st = pg_exec(c,
                             "INSERT INTO objects(bucket, key, " PG_OBJ_COLS ")"
                             " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,"
                             " $14, $15, $16, $17, $18, $19, $20, $21, $22)"
                             " ON CONFLICT (bucket, key) DO UPDATE SET size = EXCLUDED.size,"
                             " mtime = EXCLUDED.mtime, etag = EXCLUDED.etag,"
                             " content_type = EXCLUDED.content_type,"
                             " user_meta = EXCLUDED.user_meta, crc32c = EXCLUDED.crc32c,"
                             " crc64nvme = EXCLUDED.crc64nvme, parts = EXCLUDED.parts,"
                             " data_id = EXCLUDED.data_id, owner = EXCLUDED.owner,"
                             " acl = EXCLUDED.acl, version_id = EXCLUDED.version_id,"
                             " seq = EXCLUDED.seq, dm = EXCLUDED.dm, tags = EXCLUDED.tags,"
                             " part_sizes = EXCLUDED.part_sizes, sse = EXCLUDED.sse,"
                             " lock_mode = EXCLUDED.lock_mode, lock_until = EXCLUDED.lock_until,"
                             " legal_hold = EXCLUDED.legal_hold",
                             &p, NULL, "object upsert");
    return st == WH_OK ? pg_chunks_put(c, ref) : st;
}

wh_status_t pg_obj_row(const PGresult *r, int row, int col, data_obj_meta_t *m, data_ref_t *ref)
{
    if (ref)
        pg_copy(r, row, col + 8, ref->id, sizeof ref->id);
    if (!m)
        return WH_OK;
    m->size = (uint64_t)pg_i64(r, row, col + 0);
    m->mtime = (time_t)pg_i64(r, row, col + 1);
    pg_copy(r, row, col + 2, m->etag, sizeof m->etag);
    pg_copy(r, row, col + 3, m->content_type, sizeof m->content_type);
    pg_copy(r, row, col + 5, m->crc32c, sizeof m->crc32c);
    pg_copy(r, row, col + 6, m->crc64nvme, sizeof m->crc64nvme);
    m->parts = (uint32_t)pg_i64(r, row, col + 7);
    pg_copy(r, row, col + 9, m->owner, sizeof m->owner);
    pg_copy(r, row, col + 11, m->version_id, sizeof m->version_id);
    m->delete_marker = pg_i64(r, row, col + 13) != 0;
    m->lock_mode = (int)pg_i64(r, row, col + 17);
    m->lock_until = pg_i64(r, row, col + 18);
    m->legal_hold = pg_i64(r, row, col + 19) != 0;
    static const int heap[] = {4, 10, 14, 15, 16};
    char **dst[] = {&m->user_meta_json, &m->acl, &m->tags, &m->part_sizes, &m->sse};
    for (size_t i = 0; i < sizeof heap / sizeof heap[0]; i++)
        if (!PQgetisnull(r, row, col + heap[i]) && !(*dst[i] = pg_dup(r, row, col + heap[i])))
            return WH_ERR_NOMEM;
    return WH_OK;
}

wh_status_t pg_object_get(meta_t *m, const char *bucket, const char *key, size_t klen,
                          data_obj_meta_t *meta, data_ref_t *ref)
{
    return pg_object_get_version(m, bucket, key, klen, NULL, meta, ref);
}

static wh_status_t rd_data_referenced(void *conn, void *arg)
{
    pg_params_t p = {0};
    pp_text(&p, arg);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT 1 FROM objects WHERE data_id = $1"
                             " UNION ALL SELECT 1 FROM versions WHERE data_id = $1"
                             " UNION ALL SELECT 1 FROM parts WHERE data_id = $1"
                             " UNION ALL SELECT 1 FROM chunks WHERE chunk_id = $1"
                             " LIMIT 1",
                             &p, &r, "data reference lookup");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_data_referenced(meta_t *m, const char *id)
{
    return pg_read(PGM(m), rd_data_referenced, (void *)id);
}

typedef struct {
    const char *bucket;
    const void *from;
    size_t flen;
    bool inclusive;
    meta_scan_fn fn;
    void *arg;
} pg_scan_arg_t;

/* In batches: each one a single statement from the last key seen. */
static wh_status_t rd_object_scan(void *conn, void *arg)
{
    pg_scan_arg_t *a = arg;
    char *cur = NULL;
    size_t clen = 0;
    const void *from = a->from;
    size_t flen = a->flen;
    bool incl = a->inclusive;
    wh_status_t st = WH_OK;
    for (;;) {
        pg_params_t p = {0};
        pp_text(&p, a->bucket);
        pp_bytes(&p, from, flen);
        pp_i64(&p, PG_SCAN_BATCH);
        PGresult *r;
        st = pg_exec(conn,
                     incl ? "SELECT encode(key, 'hex'), size, mtime, etag, owner FROM objects"
                            " WHERE bucket = $1 AND key >= $2 AND dm = 0 ORDER BY key LIMIT $3"
                          : "SELECT encode(key, 'hex'), size, mtime, etag, owner FROM objects"
                            " WHERE bucket = $1 AND key > $2 AND dm = 0 ORDER BY key LIMIT $3",
                     &p, &r, "object list");
        if (st != WH_OK)
            break;
        int n = PQntuples(r), stop = 0;
        for (int i = 0; i < n && !stop; i++) {
            size_t klen;
            char *k = pg_hexcol(r, i, 0, &klen);
            if (!k) {
                st = WH_ERR_NOMEM;
                break;
            }
            stop = a->fn(a->arg, k, klen, (uint64_t)pg_i64(r, i, 1), (time_t)pg_i64(r, i, 2),
                         PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
            free(cur);
            cur = k;
            clen = klen;
        }
        PQclear(r);
        if (stop < 0)
            st = (wh_status_t)stop;
        if (st != WH_OK || stop || n < PG_SCAN_BATCH)
            break;
        from = cur;
        flen = clen;
        incl = false;
    }
    free(cur);
    return st;
}

wh_status_t pg_object_scan(meta_t *m, const char *bucket, const void *from, size_t flen,
                           bool inclusive, meta_scan_fn fn, void *arg)
{
    pg_scan_arg_t a = {bucket, from, flen, inclusive, fn, arg};
    /* Not retried on a lost connection: the walk may already have handed rows out. */
    pg_conn_t *c = pg_get(PGM(m));
    wh_status_t st = rd_object_scan(c, &a);
    pg_put(c);
    return st;
}
