/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: the garbage-collection queue, the chunk walks of repair, drain
 * and rebalance, chunk moves, and session-level advisory locks (one repairer at a time).
 * Storage nodes are in meta_pg_cluster.c. See meta.h and meta_pg_int.h. */
#include "base/log.h"
#include "meta_pg/meta_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- garbage collection ---- */

typedef struct {
    size_t max;
    unsigned live_s;
    meta_gc_item_t *arr;
    size_t n;
    const meta_gc_item_t *done;
} pg_gc_arg_t;

static wh_status_t tx_gc_take(void *conn, void *arg)
{
    pg_gc_arg_t *a = arg;
    /* Entries whose copy a committed row lists (completion by reference, a PUT's intent once
     * committed) are stale: drop them. The rest are copies no row lists: safe to delete. */
    wh_status_t st = pg_exec(conn,
                             "DELETE FROM gc_queue g WHERE EXISTS"
                             " (SELECT 1 FROM chunks c WHERE c.chunk_id = g.chunk_id"
                             "  AND g.node = ANY(c.replicas))",
                             NULL, NULL, "gc queue prune");
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_i64(&p, (int64_t)a->max);
    pp_i64(&p, a->live_s);
    PGresult *r;
    st = pg_exec(conn,
                 "SELECT g.seq, g.chunk_id, g.node FROM gc_queue g"
                 " LEFT JOIN nodes n ON n.id = g.node WHERE g.not_before <= now()"
                 " AND ($2 = 0 OR n.id IS NULL OR n.retired OR n.state = 'removed'"
                 "  OR n.heartbeat > now() - make_interval(secs => $2))"
                 " ORDER BY g.seq LIMIT $1",
                 &p, &r, "gc queue take");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->n = 0;
    if (!(a->arr = pg_rows_alloc(r, a->arr, sizeof *a->arr)))
        return WH_ERR_NOMEM;
    for (int i = 0; i < rows; i++) {
        a->arr[i].seq = (uint64_t)pg_i64(r, i, 0);
        pg_copy(r, i, 1, a->arr[i].chunk_id, sizeof a->arr[i].chunk_id);
        a->arr[i].node = (uint32_t)pg_i64(r, i, 2);
    }
    a->n = (size_t)rows;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_gc_take(meta_t *m, size_t max, unsigned live_s, meta_gc_item_t **out, size_t *n)
{
    pg_gc_arg_t a = {max ? max : 1, live_s, NULL, 0, NULL};
    wh_status_t st = pg_write(PGM(m), tx_gc_take, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

static wh_status_t tx_gc_done(void *conn, void *arg)
{
    pg_gc_arg_t *a = arg;
    wh_status_t st = WH_OK;
    for (size_t i = 0; st == WH_OK && i < a->n; i++) {
        pg_params_t p = {0};
        pp_i64(&p, (int64_t)a->done[i].seq);
        st = pg_exec(conn, "DELETE FROM gc_queue WHERE seq = $1", &p, NULL, "gc queue done");
    }
    return st;
}

wh_status_t pg_gc_done(meta_t *m, const meta_gc_item_t *items, size_t n)
{
    pg_gc_arg_t a = {0, 0, NULL, n, items};
    return pg_write(PGM(m), tx_gc_done, &a);
}

typedef struct {
    const meta_gc_item_t *items;
    size_t n;
    unsigned delay;
} pg_defer_arg_t;

static wh_status_t tx_gc_defer(void *conn, void *arg)
{
    pg_defer_arg_t *a = arg;
    wh_status_t st = WH_OK;
    for (size_t i = 0; st == WH_OK && i < a->n; i++) {
        pg_params_t p = {0};
        pp_text(&p, a->items[i].chunk_id);
        pp_i64(&p, a->items[i].node);
        pp_i64(&p, a->delay);
        st = pg_exec(conn,
                     "INSERT INTO gc_queue(chunk_id, node, not_before)"
                     " VALUES($1, $2, now() + make_interval(secs => $3))",
                     &p, NULL, "gc defer");
    }
    return st;
}

wh_status_t pg_gc_defer(meta_t *m, const meta_gc_item_t *items, size_t n, unsigned delay_s)
{
    pg_defer_arg_t a = {items, n, delay_s};
    return n ? pg_write(PGM(m), tx_gc_defer, &a) : WH_OK;
}

typedef struct {
    uint32_t node;
    const char *after;
    size_t max;
    data_chunk_t *arr;
    size_t n;
} pg_onnode_arg_t;

static wh_status_t rd_chunks_on_node(void *conn, void *arg)
{
    pg_onnode_arg_t *a = arg;
    pg_params_t p = {0};
    pp_i64(&p, a->node);
    pp_text(&p, a->after);
    pp_i64(&p, (int64_t)a->max);
    PGresult *r;
    /* node 0 (no node has it): every chunk (rebalance) */
    wh_status_t st = pg_exec(conn,
                             "SELECT DISTINCT ON (chunk_id) chunk_id, len, crc64nvme,"
                             " array_to_string(replicas, ','), ec_k, ec_m, ec_index FROM chunks"
                             " WHERE ($1 = 0 OR $1 = ANY(replicas)) AND chunk_id > $2"
                             " ORDER BY chunk_id LIMIT $3",
                             &p, &r, "chunks on node");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->n = 0;
    if (!(a->arr = pg_rows_alloc(r, a->arr, sizeof *a->arr)))
        return WH_ERR_NOMEM;
    for (int i = 0; i < rows; i++) {
        data_chunk_t *c = &a->arr[i];
        pg_copy(r, i, 0, c->id, sizeof c->id);
        c->length = (uint64_t)pg_i64(r, i, 1);
        c->crc64nvme = (uint64_t)pg_i64(r, i, 2);
        meta_replicas_parse(PQgetvalue(r, i, 3), c);
        c->ec_k = (uint32_t)pg_i64(r, i, 4);
        c->ec_m = (uint32_t)pg_i64(r, i, 5);
        c->ec_index = (uint32_t)pg_i64(r, i, 6);
    }
    a->n = (size_t)rows;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_chunks_on_node(meta_t *m, uint32_t node, const char *after, size_t max,
                              data_chunk_t **out, size_t *n)
{
    pg_onnode_arg_t a = {node, after ? after : "", max ? max : 1, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_chunks_on_node, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

wh_status_t pg_chunks_page(meta_t *m, const char *after, size_t max, data_chunk_t **out, size_t *n)
{
    pg_onnode_arg_t a = {0, after ? after : "", max ? max : 1, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_chunks_on_node, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

typedef struct {
    const uint32_t *nodes;
    size_t n;
    uint64_t count;
} pg_count_arg_t;

static wh_status_t rd_chunks_count(void *conn, void *arg)
{
    pg_count_arg_t *a = arg;
    char arr[64 * 12 + 4];
    size_t o = 0;
    arr[o++] = '{';
    for (size_t i = 0; i < a->n && i < 64; i++)
        o += (size_t)snprintf(arr + o, sizeof arr - o, "%s%u", i ? "," : "", a->nodes[i]);
    snprintf(arr + o, sizeof arr - o, "}");
    pg_params_t p = {0};
    pp_text(&p, arr);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT count(DISTINCT chunk_id) FROM chunks"
                             " WHERE replicas && $1::integer[]",
                             &p, &r, "repair backlog");
    if (st != WH_OK)
        return st;
    a->count = (uint64_t)pg_i64(r, 0, 0);
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_chunks_on_nodes_count(meta_t *m, const uint32_t *nodes, size_t n, uint64_t *count)
{
    pg_count_arg_t a = {nodes, n, 0};
    *count = 0;
    if (!n)
        return WH_OK;
    wh_status_t st = pg_read(PGM(m), rd_chunks_count, &a);
    if (st == WH_OK)
        *count = a.count;
    return st;
}

typedef struct {
    const char *chunk;
    uint32_t from, to;
    unsigned delay_s;
} pg_move_arg_t;

static wh_status_t tx_chunk_move(void *conn, void *arg)
{
    pg_move_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->chunk);
    pp_i64(&p, a->from);
    pp_i64(&p, a->to);
    wh_status_t st = pg_exec(conn,
                             "UPDATE chunks SET replicas = array_replace(replicas,"
                             " $2::integer, $3::integer) WHERE chunk_id = $1"
                             " AND $2 = ANY(replicas) AND NOT $3 = ANY(replicas)",
                             &p, NULL, "chunk move");
    if (st != WH_OK)
        return st;
    pg_params_t q = {0};
    pp_text(&q, a->chunk);
    pp_i64(&q, a->from);
    pp_i64(&q, a->delay_s);
    return pg_exec(conn,
                   "INSERT INTO gc_queue(chunk_id, node, not_before)"
                   " VALUES($1, $2, now() + make_interval(secs => $3))",
                   &q, NULL, "chunk move gc");
}

wh_status_t pg_chunk_move(meta_t *m, const char *chunk_id, uint32_t from, uint32_t to,
                          unsigned gc_delay_s)
{
    pg_move_arg_t a = {chunk_id, from, to, gc_delay_s};
    return pg_write(PGM(m), tx_chunk_move, &a);
}

/* ---- advisory locks ---- */

/* The lock connection, connected (or reconnected: its locks are then gone). Lock held. */
static wh_status_t pg_lockc_ready(pg_meta_t *m)
{
    pg_conn_t *c = &m->lockc;
    if (c->c && PQstatus(c->c) == CONNECTION_OK && !c->stale)
        return WH_OK;
    if (m->n_held)
        wh_warn("store",
                "the PostgreSQL session holding %zu advisory lock(s) was lost; they "
                "are released",
                m->n_held);
    m->n_held = 0;
    return pg_exec(c, "SELECT 1", NULL, NULL, "lock session"); /* connects */
}

wh_status_t pg_lock_try(meta_t *mm, int64_t key)
{
    pg_meta_t *m = PGM(mm);
    pthread_mutex_lock(&m->lock_mu);
    wh_status_t st = pg_lockc_ready(m);
    if (st != WH_OK)
        goto out;
    for (size_t i = 0; i < m->n_held; i++) {
        if (m->held[i] != key)
            continue;
        /* Ours, if the session that took it is still the one we talk to and still holds it:
         * a PostgreSQL restart ends the session (and its locks) while libpq still says
         * CONNECTION_OK until the next query, and another process may have taken the lock
         * since. Ask the server. */
        pg_params_t q = {0};
        pp_i64(&q, key);
        PGresult *r;
        st = pg_exec(&m->lockc,
                     "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                     " AND pid = pg_backend_pid() AND granted AND objsubid = 1"
                     " AND ((classid::bigint << 32) | objid::bigint) = $1",
                     &q, &r, "advisory lock check");
        bool still = st == WH_OK && pg_i64(r, 0, 0) > 0;
        if (st == WH_OK)
            PQclear(r);
        if (still)
            goto out;
        wh_warn("store",
                "advisory lock %lld is no longer held by this process (the "
                "PostgreSQL session was lost); taking it again",
                (long long)key);
        m->held[i] = m->held[--m->n_held];
        if ((st = pg_lockc_ready(m)) != WH_OK)
            goto out;
        break;
    }
    if (m->n_held == PG_MAX_LOCKS) {
        st = WH_ERR_TOO_LARGE;
        goto out;
    }
    pg_params_t p = {0};
    pp_i64(&p, key);
    PGresult *r;
    st = pg_exec(&m->lockc, "SELECT pg_try_advisory_lock($1)", &p, &r, "advisory lock");
    if (st == WH_OK) {
        if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
            m->held[m->n_held++] = key;
        else
            st = WH_ERR_BUSY;
        PQclear(r);
    }
out:
    pthread_mutex_unlock(&m->lock_mu);
    return st;
}

wh_status_t pg_lock_release(meta_t *mm, int64_t key)
{
    pg_meta_t *m = PGM(mm);
    pthread_mutex_lock(&m->lock_mu);
    wh_status_t st = WH_ERR_NOT_FOUND;
    for (size_t i = 0; i < m->n_held; i++) {
        if (m->held[i] != key)
            continue;
        m->held[i] = m->held[--m->n_held];
        st = WH_OK;
        if (m->lockc.c && PQstatus(m->lockc.c) == CONNECTION_OK) {
            pg_params_t p = {0};
            pp_i64(&p, key);
            st = pg_exec(&m->lockc, "SELECT pg_advisory_unlock($1)", &p, NULL, "advisory unlock");
        }
        break;
    }
    pthread_mutex_unlock(&m->lock_mu);
    return st;
}

void pg_locks_close(pg_meta_t *m)
{
    if (m->lockc.c)
        PQfinish(m->lockc.c); /* ends the session: its locks go with it */
    m->lockc.c = NULL;
    m->n_held = 0;
}
