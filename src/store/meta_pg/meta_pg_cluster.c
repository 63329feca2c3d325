/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: storage nodes of a cluster (registration, identity, heartbeats,
 * zones, drain and removal, reports, the damaged-copy queue, the cluster status), the chunk
 * lookups of repair. The garbage-collection queue, chunk walks and advisory locks are in
 * meta_pg_gc.c. See meta.h and meta_pg_int.h. */
#include "base/log.h"
#include "meta_pg/meta_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- nodes ---- */

typedef struct {
    const char *addr, *uuid;
    bool adopt;
    uint32_t id;
    uint64_t capacity, free;
} pg_node_arg_t;

static wh_status_t tx_node_register(void *conn, void *arg)
{
    pg_node_arg_t *a = arg;
    PGresult *r = NULL;
    wh_status_t st;
    if (a->uuid[0]) {
        /* A live row at this address with another identity: that data directory is gone
         * (replaced, emptied, another disk). Retire it: its copies are lost, repair them now
         * (a heartbeat at the epoch), and free the address. */
        pg_params_t p = {0};
        pp_text(&p, a->addr);
        pp_text(&p, a->uuid);
        pp_i64(&p, a->adopt);
        st = pg_exec(conn,
                     "UPDATE nodes SET retired = true, heartbeat = 'epoch',"
                     " addr = 'retired/' || id || '/' || addr"
                     " WHERE addr = $1 AND uuid <> $2 AND (uuid <> '' OR $3 = 0)"
                     " RETURNING id",
                     &p, &r, "node retire");
        if (st != WH_OK)
            return st;
        for (int i = 0; i < PQntuples(r); i++)
            wh_warn("store",
                    "storage node %lld at %s came back with another data directory:"
                    " retired, its copies are repaired",
                    (long long)pg_i64(r, i, 0), a->addr);
        PQclear(r);
        /* A node removed from the cluster (wharfd node remove) stays out: its directory
         * must be emptied (a new identity) to join again. */
        pg_params_t rq = {0};
        pp_text(&rq, a->uuid);
        st = pg_exec(conn,
                     "SELECT id FROM nodes WHERE uuid = $1 AND state = 'removed' AND NOT retired",
                     &rq, &r, "node removed check");
        if (st != WH_OK)
            return st;
        bool removed = PQntuples(r) > 0;
        PQclear(r);
        if (removed)
            return WH_ERR_PRECONDITION;
        /* The identity known at another address: the node moved (its data moved with it). */
        pg_params_t q = {0};
        pp_text(&q, a->addr);
        pp_text(&q, a->uuid);
        pp_i64(&q, (int64_t)a->capacity);
        pp_i64(&q, (int64_t)a->free);
        st = pg_exec(conn,
                     "UPDATE nodes SET addr = $1, capacity = $3, free = $4,"
                     " heartbeat = now() WHERE uuid = $2 AND NOT retired RETURNING id",
                     &q, &r, "node register");
        if (st != WH_OK)
            return st;
        if (PQntuples(r) > 0) {
            a->id = (uint32_t)pg_i64(r, 0, 0);
            PQclear(r);
            return WH_OK;
        }
        PQclear(r);
    }
    pg_params_t p = {0};
    pp_text(&p, a->addr);
    pp_i64(&p, (int64_t)a->capacity);
    pp_i64(&p, (int64_t)a->free);
    pp_text(&p, a->uuid);
    st = pg_exec(conn,
                 "INSERT INTO nodes(addr, capacity, free, uuid) VALUES($1, $2, $3, $4)"
                 " ON CONFLICT (addr) DO UPDATE SET capacity = EXCLUDED.capacity,"
                 " free = EXCLUDED.free, heartbeat = now(),"
                 " uuid = CASE WHEN nodes.uuid = '' THEN EXCLUDED.uuid ELSE nodes.uuid END"
                 " WHERE nodes.state <> 'removed' RETURNING id",
                 &p, &r, "node register");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_PRECONDITION; /* a removed node's address, without an identity */
    else if (st == WH_OK)
        a->id = (uint32_t)pg_i64(r, 0, 0);
    PQclear(r);
    return st;
}

wh_status_t pg_node_register(meta_t *m, const char *addr, const char *uuid, bool adopt,
                             uint64_t capacity, uint64_t free, uint32_t *id)
{
    if (!addr || !addr[0] || strlen(addr) >= sizeof(((meta_node_t *)0)->addr) ||
        strncmp(addr, "retired/", 8) == 0) {
        wh_error("store", "a storage node address must be 1..255 bytes of host:port");
        return WH_ERR_INVALID;
    }
    if (!uuid || strlen(uuid) >= META_UUID_MAX)
        return WH_ERR_INVALID;
    pg_node_arg_t a = {addr, uuid, adopt, 0, capacity, free};
    wh_status_t st = pg_write(PGM(m), tx_node_register, &a);
    if (st == WH_OK)
        *id = a.id;
    return st;
}

typedef struct {
    char *out;
} pg_cid_arg_t;

static wh_status_t rd_cluster_id(void *conn, void *arg)
{
    pg_cid_arg_t *a = arg;
    PGresult *r;
    wh_status_t st =
        pg_exec(conn, "SELECT id FROM cluster_identity WHERE one = 1", NULL, &r, "cluster id");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    else
        pg_copy(r, 0, 0, a->out, META_UUID_MAX);
    PQclear(r);
    return st;
}

wh_status_t pg_cluster_id(meta_t *m, char out[META_UUID_MAX])
{
    pg_cid_arg_t a = {out};
    return pg_read(PGM(m), rd_cluster_id, &a);
}

typedef struct {
    uint32_t node;
    const char *chunk;
    size_t max;
    meta_gc_item_t *arr;
    size_t n;
} pg_damage_arg_t;

static wh_status_t tx_damage_report(void *conn, void *arg)
{
    pg_damage_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->chunk);
    pp_i64(&p, a->node);
    return pg_exec(conn,
                   "INSERT INTO chunk_damage(chunk_id, node) VALUES($1, $2)"
                   " ON CONFLICT DO NOTHING",
                   &p, NULL, "damage report");
}

wh_status_t pg_damage_report(meta_t *m, uint32_t node, const char *chunk_id)
{
    pg_damage_arg_t a = {node, chunk_id, 0, NULL, 0};
    return pg_write(PGM(m), tx_damage_report, &a);
}

static wh_status_t tx_damage_done(void *conn, void *arg)
{
    pg_damage_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->chunk);
    pp_i64(&p, a->node);
    return pg_exec(conn, "DELETE FROM chunk_damage WHERE chunk_id = $1 AND node = $2", &p, NULL,
                   "damage done");
}

wh_status_t pg_damage_done(meta_t *m, uint32_t node, const char *chunk_id)
{
    pg_damage_arg_t a = {node, chunk_id, 0, NULL, 0};
    return pg_write(PGM(m), tx_damage_done, &a);
}

static wh_status_t rd_damage_take(void *conn, void *arg)
{
    pg_damage_arg_t *a = arg;
    pg_params_t p = {0};
    pp_i64(&p, (int64_t)a->max);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT chunk_id, node FROM chunk_damage ORDER BY found"
                             " LIMIT $1",
                             &p, &r, "damage take");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->n = 0;
    if (!(a->arr = pg_rows_alloc(r, a->arr, sizeof *a->arr)))
        return WH_ERR_NOMEM;
    for (int i = 0; i < rows; i++) {
        pg_copy(r, i, 0, a->arr[i].chunk_id, sizeof a->arr[i].chunk_id);
        a->arr[i].node = (uint32_t)pg_i64(r, i, 1);
    }
    a->n = (size_t)rows;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_damage_take(meta_t *m, size_t max, meta_gc_item_t **out, size_t *n)
{
    pg_damage_arg_t a = {0, NULL, max ? max : 1, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_damage_take, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

typedef struct {
    const char *chunk;
    data_chunk_t *out;
} pg_find_arg_t;

static wh_status_t rd_chunk_find(void *conn, void *arg)
{
    pg_find_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->chunk);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT chunk_id, len, crc64nvme,"
                             " array_to_string(replicas, ','), ec_k, ec_m, ec_index FROM chunks"
                             " WHERE chunk_id = $1 LIMIT 1",
                             &p, &r, "chunk find");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return WH_ERR_NOT_FOUND;
    }
    data_chunk_t *c = a->out;
    memset(c, 0, sizeof *c);
    pg_copy(r, 0, 0, c->id, sizeof c->id);
    c->length = (uint64_t)pg_i64(r, 0, 1);
    c->crc64nvme = (uint64_t)pg_i64(r, 0, 2);
    meta_replicas_parse(PQgetvalue(r, 0, 3), c);
    c->ec_k = (uint32_t)pg_i64(r, 0, 4);
    c->ec_m = (uint32_t)pg_i64(r, 0, 5);
    c->ec_index = (uint32_t)pg_i64(r, 0, 6);
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_chunk_find(meta_t *m, const char *chunk_id, data_chunk_t *out)
{
    pg_find_arg_t a = {chunk_id, out};
    return pg_read(PGM(m), rd_chunk_find, &a);
}

typedef struct {
    const char *chunk;
    data_ref_t *out;
} pg_stripe_arg_t;

static wh_status_t rd_chunk_stripe(void *conn, void *arg)
{
    pg_stripe_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->chunk);
    PGresult *r;
    /* the rows of one data id that lists the shard (a copy shares them: any one will do) */
    wh_status_t st = pg_exec(conn,
                             "SELECT " PG_CHUNK_COLS " FROM chunks c JOIN (SELECT data_id, off"
                             " FROM chunks WHERE chunk_id = $1 AND ec_k > 0 LIMIT 1) s"
                             " ON c.data_id = s.data_id AND c.off = s.off WHERE c.ec_k > 0"
                             " ORDER BY c.idx",
                             &p, &r, "chunk stripe");
    if (st != WH_OK)
        return st;
    data_ref_clear(a->out);
    int rows = PQntuples(r);
    for (int i = 0; i < rows && st == WH_OK; i++)
        st = pg_chunk_add(r, i, 0, a->out);
    if (st == WH_OK && rows == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_chunk_stripe(meta_t *m, const char *chunk_id, data_ref_t *out)
{
    pg_stripe_arg_t a = {chunk_id, out};
    wh_status_t st = pg_read(PGM(m), rd_chunk_stripe, &a);
    if (st != WH_OK)
        data_ref_clear(out);
    return st;
}

static wh_status_t tx_node_heartbeat(void *conn, void *arg)
{
    pg_node_arg_t *a = arg;
    pg_params_t p = {0};
    pp_i64(&p, a->id);
    pp_i64(&p, (int64_t)a->capacity);
    pp_i64(&p, (int64_t)a->free);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "UPDATE nodes SET capacity = $2, free = $3, heartbeat = now()"
                             " WHERE id = $1 AND NOT retired AND state <> 'removed' RETURNING 1",
                             &p, &r, "node heartbeat");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_node_heartbeat(meta_t *m, uint32_t id, uint64_t capacity, uint64_t free)
{
    pg_node_arg_t a = {NULL, NULL, false, id, capacity, free};
    return pg_write(PGM(m), tx_node_heartbeat, &a);
}

typedef struct {
    meta_node_t *arr;
    size_t n;
} pg_nlist_arg_t;

static wh_status_t rd_node_list(void *conn, void *arg)
{
    pg_nlist_arg_t *a = arg;
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT id, addr, capacity, free,"
                             " extract(epoch FROM heartbeat)::bigint,"
                             " extract(epoch FROM now())::bigint, retired, state, zone,"
                             " scrub_progress, scrub_passes, damaged FROM nodes ORDER BY id",
                             NULL, &r, "node list");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->n = 0;
    if (!(a->arr = pg_rows_alloc(r, a->arr, sizeof *a->arr)))
        return WH_ERR_NOMEM;
    for (int i = 0; i < rows; i++) {
        meta_node_t *nd = &a->arr[i];
        nd->id = (uint32_t)pg_i64(r, i, 0);
        pg_copy(r, i, 1, nd->addr, sizeof nd->addr);
        nd->capacity = (uint64_t)pg_i64(r, i, 2);
        nd->free = (uint64_t)pg_i64(r, i, 3);
        nd->heartbeat = (time_t)pg_i64(r, i, 4);
        nd->now = (time_t)pg_i64(r, i, 5);
        nd->retired = PQgetvalue(r, i, 6)[0] == 't';
        const char *state = PQgetvalue(r, i, 7);
        nd->state = !strcmp(state, "draining")  ? META_NODE_DRAINING
                    : !strcmp(state, "removed") ? META_NODE_REMOVED
                                                : META_NODE_ACTIVE;
        pg_copy(r, i, 8, nd->zone, sizeof nd->zone);
        nd->scrub_progress = strtod(PQgetvalue(r, i, 9), NULL);
        nd->scrub_passes = (uint64_t)pg_i64(r, i, 10);
        nd->damaged = (uint64_t)pg_i64(r, i, 11);
    }
    a->n = (size_t)rows;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_node_list(meta_t *m, meta_node_t **out, size_t *n)
{
    pg_nlist_arg_t a = {NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_node_list, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

/* ---- node states: zone, drain, remove ---- */

typedef struct {
    const char *addr, *zone;
    uint32_t id;
    unsigned live_s;
    uint64_t sole;
    meta_node_copies_t *arr;
    size_t n;
} pg_nstate_arg_t;

static wh_status_t tx_node_set_zone(void *conn, void *arg)
{
    pg_nstate_arg_t *a = arg;
    pg_params_t p = {0};
    pp_i64(&p, a->id);
    pp_text(&p, a->zone);
    return pg_exec(conn, "UPDATE nodes SET zone = $2 WHERE id = $1", &p, NULL, "node zone");
}

wh_status_t pg_node_set_zone(meta_t *m, uint32_t id, const char *zone)
{
    if (!zone || strlen(zone) >= META_ZONE_MAX)
        return WH_ERR_INVALID;
    pg_nstate_arg_t a = {.zone = zone, .id = id};
    return pg_write(PGM(m), tx_node_set_zone, &a);
}

/* The live (not retired) row at addr, locked: its id and state text. */
static wh_status_t node_lock(void *conn, const char *addr, uint32_t *id, char state[16])
{
    pg_params_t p = {0};
    pp_text(&p, addr);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT id, state FROM nodes WHERE addr = $1 AND NOT retired"
                             " FOR UPDATE",
                             &p, &r, "node lock");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return WH_ERR_NOT_FOUND;
    }
    *id = (uint32_t)pg_i64(r, 0, 0);
    pg_copy(r, 0, 1, state, 16);
    PQclear(r);
    return WH_OK;
}

static wh_status_t tx_node_drain(void *conn, void *arg)
{
    pg_nstate_arg_t *a = arg;
    char state[16];
    wh_status_t st = node_lock(conn, a->addr, &a->id, state);
    if (st != WH_OK)
        return st;
    if (!strcmp(state, "removed"))
        return WH_ERR_PRECONDITION;
    pg_params_t p = {0};
    pp_i64(&p, a->id);
    return pg_exec(conn, "UPDATE nodes SET state = 'draining' WHERE id = $1", &p, NULL,
                   "node drain");
}

wh_status_t pg_node_drain(meta_t *m, const char *addr, uint32_t *id)
{
    pg_nstate_arg_t a = {.addr = addr};
    wh_status_t st = pg_write(PGM(m), tx_node_drain, &a);
    *id = a.id;
    return st;
}

static wh_status_t tx_node_remove(void *conn, void *arg)
{
    pg_nstate_arg_t *a = arg;
    char state[16];
    wh_status_t st = node_lock(conn, a->addr, &a->id, state);
    if (st != WH_OK)
        return st;
    if (!strcmp(state, "removed"))
        return WH_OK; /* idempotent */
    /* The chunks this node holds that no other live node holds a copy of. */
    pg_params_t p = {0};
    pp_i64(&p, a->id);
    pp_i64(&p, a->live_s);
    PGresult *r;
    st = pg_exec(conn,
                 "SELECT count(DISTINCT c.chunk_id) FROM chunks c WHERE $1 = ANY(c.replicas)"
                 " AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = ANY(c.replicas)"
                 "  AND n.id <> $1 AND NOT n.retired AND n.state <> 'removed'"
                 "  AND n.heartbeat > now() - make_interval(secs => $2))",
                 &p, &r, "node sole copies");
    if (st != WH_OK)
        return st;
    a->sole = (uint64_t)pg_i64(r, 0, 0);
    PQclear(r);
    if (a->sole)
        return WH_ERR_BUSY;
    pg_params_t q = {0};
    pp_i64(&q, a->id);
    return pg_exec(conn, "UPDATE nodes SET state = 'removed' WHERE id = $1", &q, NULL,
                   "node remove");
}

wh_status_t pg_node_remove(meta_t *m, const char *addr, unsigned live_s, uint32_t *id,
                           uint64_t *sole)
{
    pg_nstate_arg_t a = {.addr = addr, .live_s = live_s ? live_s : 1};
    wh_status_t st = pg_write(PGM(m), tx_node_remove, &a);
    *id = a.id;
    *sole = a.sole;
    return st;
}

static wh_status_t rd_node_copies(void *conn, void *arg)
{
    pg_nstate_arg_t *a = arg;
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT u.id, count(DISTINCT c.chunk_id) FROM chunks c,"
                             " unnest(c.replicas) u(id) GROUP BY u.id ORDER BY u.id",
                             NULL, &r, "node copies");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->n = 0;
    if (!(a->arr = pg_rows_alloc(r, a->arr, sizeof *a->arr)))
        return WH_ERR_NOMEM;
    for (int i = 0; i < rows; i++) {
        a->arr[i].id = (uint32_t)pg_i64(r, i, 0);
        a->arr[i].copies = (uint64_t)pg_i64(r, i, 1);
    }
    a->n = (size_t)rows;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_node_copies(meta_t *m, meta_node_copies_t **out, size_t *n)
{
    pg_nstate_arg_t a = {0};
    wh_status_t st = pg_read(PGM(m), rd_node_copies, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

typedef struct {
    uint32_t id;
    double progress;
    uint64_t passes, damaged;
    const meta_cluster_status_t *put;
    meta_cluster_status_t *get;
} pg_report_arg_t;

static wh_status_t tx_node_report(void *conn, void *arg)
{
    pg_report_arg_t *a = arg;
    char prog[32];
    snprintf(prog, sizeof prog, "%.6f", a->progress);
    pg_params_t p = {0};
    pp_i64(&p, a->id);
    pp_text(&p, prog);
    pp_i64(&p, (int64_t)a->passes);
    pp_i64(&p, (int64_t)a->damaged);
    return pg_exec(conn,
                   "UPDATE nodes SET scrub_progress = $2::double precision, scrub_passes = $3,"
                   " damaged = $4 WHERE id = $1",
                   &p, NULL, "node report");
}

wh_status_t pg_node_report(meta_t *m, uint32_t id, double scrub_progress, uint64_t scrub_passes,
                           uint64_t damaged)
{
    pg_report_arg_t a = {id, scrub_progress, scrub_passes, damaged, NULL, NULL};
    return pg_write(PGM(m), tx_node_report, &a);
}

static wh_status_t tx_status_put(void *conn, void *arg)
{
    pg_report_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->put->leader);
    pp_i64(&p, (int64_t)a->put->repair_pending);
    pp_i64(&p, (int64_t)a->put->repair_nodes);
    pp_i64(&p, (int64_t)a->put->drain_pending);
    pp_i64(&p, (int64_t)a->put->damage_pending);
    return pg_exec(conn,
                   "INSERT INTO cluster_status(one, leader, repair_pending, repair_nodes,"
                   " drain_pending, damage_pending) VALUES(1, $1, $2, $3, $4, $5)"
                   " ON CONFLICT (one) DO UPDATE SET leader = EXCLUDED.leader,"
                   " repair_pending = EXCLUDED.repair_pending,"
                   " repair_nodes = EXCLUDED.repair_nodes, drain_pending = EXCLUDED.drain_pending,"
                   " damage_pending = EXCLUDED.damage_pending, updated = now()",
                   &p, NULL, "cluster status put");
}

wh_status_t pg_cluster_status_put(meta_t *m, const meta_cluster_status_t *st)
{
    pg_report_arg_t a = {0, 0, 0, 0, st, NULL};
    return pg_write(PGM(m), tx_status_put, &a);
}

static wh_status_t rd_status_get(void *conn, void *arg)
{
    pg_report_arg_t *a = arg;
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT leader, repair_pending, repair_nodes, drain_pending,"
                             " damage_pending, extract(epoch FROM now() - updated)::bigint"
                             " FROM cluster_status WHERE one = 1",
                             NULL, &r, "cluster status get");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return WH_ERR_NOT_FOUND;
    }
    meta_cluster_status_t *o = a->get;
    pg_copy(r, 0, 0, o->leader, sizeof o->leader);
    o->repair_pending = (uint64_t)pg_i64(r, 0, 1);
    o->repair_nodes = (uint64_t)pg_i64(r, 0, 2);
    o->drain_pending = (uint64_t)pg_i64(r, 0, 3);
    o->damage_pending = (uint64_t)pg_i64(r, 0, 4);
    o->age_s = pg_i64(r, 0, 5);
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_cluster_status_get(meta_t *m, meta_cluster_status_t *st)
{
    memset(st, 0, sizeof *st);
    pg_report_arg_t a = {0, 0, 0, 0, NULL, st};
    return pg_read(PGM(m), rd_status_get, &a);
}
