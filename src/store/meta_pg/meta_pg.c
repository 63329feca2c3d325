/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: connections, errors, the transaction helper, the schema and its
 * migrations, buckets. See meta_pg_int.h; objects in meta_pg_obj.c, multipart in meta_pg_mpu.c,
 * cluster members and the GC queue in meta_pg_cluster.c.
 *
 * The schema's steps are in meta_pg_schema.c; pg_migrate applies them at open. */
#include "meta_pg/meta_pg_int.h"
#include "meta/meta_rules.h"

#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters and columns ---- */

void pp_text(pg_params_t *p, const char *s)
{
    p->v[p->n] = s ? s : "";
    p->len[p->n] = 0;
    p->fmt[p->n] = 0;
    p->n++;
}

void pp_bytes(pg_params_t *p, const void *b, size_t n)
{
    p->v[p->n] = n ? b : "";
    p->len[p->n] = (int)n;
    p->fmt[p->n] = 1;
    p->n++;
}

void pp_i64(pg_params_t *p, int64_t v)
{
    snprintf(p->num[p->n], sizeof p->num[p->n], "%" PRId64, v);
    pp_text(p, p->num[p->n]);
}

int64_t pg_i64(const PGresult *r, int row, int col)
{
    const char *v = PQgetvalue(r, row, col);
    return v ? strtoll(v, NULL, 10) : 0;
}

void pg_copy(const PGresult *r, int row, int col, char *dst, size_t cap)
{
    const char *v = PQgetvalue(r, row, col);
    snprintf(dst, cap, "%s", v ? v : "");
}

void *pg_rows_alloc(PGresult *r, void *old, size_t elem)
{
    free(old);
    int rows = PQntuples(r);
    void *arr = calloc(rows ? (size_t)rows : 1, elem);
    if (!arr)
        PQclear(r);
    return arr;
}

char *pg_dup(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NULL;
    return strdup(PQgetvalue(r, row, col));
}

char *pg_hexcol(const PGresult *r, int row, int col, size_t *n)
{
    const char *h = PQgetvalue(r, row, col);
    size_t hl = strlen(h);
    char *out = malloc(hl / 2 + 1);
    if (!out)
        return NULL;
    if (wh_hex_decode(h, hl, out, hl / 2) != 0) {
        free(out);
        return NULL;
    }
    out[hl / 2] = '\0';
    *n = hl / 2;
    return out;
}

/* ---- connections and errors ---- */

wh_status_t pg_fail(pg_conn_t *c, const PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(c->c);
    c->retryable = false;
    if (PQstatus(c->c) != CONNECTION_OK || !state || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0 || strcmp(state, "53300") == 0) {
        wh_warn("store", "PostgreSQL unreachable during %s: %s", what, msg);
        c->retryable = true; /* nothing was committed; a commit clears this itself */
        meta_tx_note_retryable();
        return WH_ERR_UNAVAILABLE;
    }
    if (strcmp(state, "25006") == 0) {
        /* read_only_sql_transaction: this connection's server takes no writes (a standby, or a
         * server set read-only). Another host of a multi-host URL may: reconnect before the
         * next use, and answer 503 meanwhile, never 500. */
        wh_warn("store", "PostgreSQL refused a write during %s (read-only server): %s", what, msg);
        c->stale = true;
        c->retryable = true;
        meta_tx_note_retryable();
        return WH_ERR_UNAVAILABLE;
    }
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0) {
        wh_debug("store", "PostgreSQL %s: serialization conflict, retrying", what);
        c->retryable = true;
        meta_tx_note_retryable();
        return WH_ERR_BUSY;
    }
    if (strcmp(state, "23505") == 0)
        return WH_ERR_EXISTS;
    if (strcmp(state, "53100") == 0) {
        wh_error("store", "PostgreSQL %s: its disk is full: %s", what, msg);
        return WH_ERR_NO_SPACE;
    }
    wh_error("store", "PostgreSQL %s failed (sqlstate %s): %s", what, state, msg);
    return WH_ERR_INTERNAL;
}

static PGconn *pg_connect(const char *url)
{
    /* Bounded waits on a database that stopped answering (a paused or unplugged host): the
     * connect gives up after 3 s, and unacknowledged traffic or silent keepalives after about
     * 10 s, so a request then fails with 503 instead of hanging. */
    /* target_session_attrs: of the hosts of a multi-host URL ("postgresql://h1:p1,h2:p2/db")
     * only one that takes writes; every wharfd role writes. After a failover, a reconnect
     * finds whichever host was promoted. */
    /* The URL comes last: what it sets wins over these defaults. */
    const char *const keys[] = {"connect_timeout",  "target_session_attrs",
                                "application_name", "keepalives",
                                "keepalives_idle",  "keepalives_interval",
                                "keepalives_count", "tcp_user_timeout",
                                "dbname",           NULL};
    const char *const vals[] = {"3", "read-write", "wharfd", "1", "5",
                                "2", "3",          "10000",  url, NULL};
    /* expand_dbname: the "dbname" value is the URL, expanded in place */
    return PQconnectdbParams(keys, vals, 1);
}

/* Session settings, after every (re)connect. */
static wh_status_t pg_session(pg_conn_t *c)
{
    const char *sql = c->m->durable
                          ? "SET synchronous_commit TO on; SET client_min_messages TO warning"
                          : "SET synchronous_commit TO off; SET client_min_messages TO warning";
    PGresult *r = PQexec(c->c, sql);
    wh_status_t st = PQresultStatus(r) == PGRES_COMMAND_OK ? WH_OK : pg_fail(c, r, "session setup");
    PQclear(r);
    return st;
}

/* Makes c usable: connects or resets a broken connection. */
wh_status_t pg_ensure(pg_conn_t *c)
{
    if (c->c && PQstatus(c->c) == CONNECTION_OK && !c->stale)
        return WH_OK;
    c->stale = false;
    if (!c->c) {
        c->c = pg_connect(c->m->url);
        if (!c->c)
            return WH_ERR_NOMEM;
    } else {
        PQreset(c->c);
    }
    if (PQstatus(c->c) != CONNECTION_OK) {
        wh_warn("store", "cannot connect to PostgreSQL: %s", PQerrorMessage(c->c));
        c->retryable = false;
        return WH_ERR_UNAVAILABLE;
    }
    c->in_tx = false;
    c->prepared = 0; /* a new session has no prepared statements */
    wh_info("store", "connected to PostgreSQL server_version=%d", PQserverVersion(c->c));
    return pg_session(c);
}

wh_status_t pg_exec(pg_conn_t *c, const char *sql, const pg_params_t *p, PGresult **res,
                    const char *what)
{
    if (res)
        *res = NULL;
    if (!c->in_tx) {
        wh_status_t st = pg_ensure(c);
        if (st != WH_OK)
            return st;
    }
    PGresult *r = PQexecParams(c->c, sql, p ? p->n : 0, NULL, p ? p->v : NULL, p ? p->len : NULL,
                               p ? p->fmt : NULL, 0);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        wh_status_t st = pg_fail(c, r, what);
        PQclear(r);
        return st;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return WH_OK;
}

pg_conn_t *pg_get(pg_meta_t *m)
{
    pthread_mutex_lock(&m->lock);
    for (;;) {
        for (int i = 0; i < PG_POOL; i++) {
            if (!m->busy[i]) {
                m->busy[i] = true;
                pthread_mutex_unlock(&m->lock);
                m->pool[i].retryable = false;
                return &m->pool[i];
            }
        }
        pthread_cond_wait(&m->cond, &m->lock);
    }
}

void pg_put(pg_conn_t *c)
{
    pg_meta_t *m = c->m;
    pthread_mutex_lock(&m->lock);
    m->busy[c - m->pool] = false;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

/* ---- the transaction helper ---- */

static wh_status_t pg_tx_begin(void *conn)
{
    pg_conn_t *c = conn;
    /* Retryable says what this attempt met: a conflict of the last attempt must not make a
     * precondition this one found false (a 412) retried until the attempts run out. */
    c->retryable = false;
    wh_status_t st = pg_exec(c, "BEGIN ISOLATION LEVEL SERIALIZABLE", NULL, NULL, "begin");
    c->in_tx = st == WH_OK;
    return st;
}

static wh_status_t pg_tx_commit(void *conn)
{
    pg_conn_t *c = conn;
    wh_status_t st = pg_exec(c, "COMMIT", NULL, NULL, "commit");
    c->in_tx = false;
    if (st == WH_ERR_UNAVAILABLE) {
        /* The connection died during COMMIT: it may or may not have committed. Never retry
         * (a replayed upsert would report its own bytes as the replaced ones). */
        c->retryable = false;
    }
    return st;
}

static void pg_tx_rollback(void *conn)
{
    pg_conn_t *c = conn;
    if (c->in_tx && PQstatus(c->c) == CONNECTION_OK) {
        PGresult *r = PQexec(c->c, "ROLLBACK");
        PQclear(r);
    }
    c->in_tx = false;
}

static bool pg_tx_retryable(void *conn, wh_status_t st)
{
    return ((pg_conn_t *)conn)->retryable;
}

static const meta_tx_ops_t PG_TX = {
    .begin = pg_tx_begin,
    .commit = pg_tx_commit,
    .rollback = pg_tx_rollback,
    .retryable = pg_tx_retryable,
};

wh_status_t pg_write(pg_meta_t *m, meta_tx_fn fn, void *arg)
{
    pg_conn_t *c = pg_get(m);
    wh_status_t st = meta_tx_run(&PG_TX, c, fn, arg);
    pg_put(c);
    return st;
}

wh_status_t pg_read(pg_meta_t *m, meta_tx_fn fn, void *arg)
{
    pg_conn_t *c = pg_get(m);
    c->retryable = false;
    wh_status_t st = fn(c, arg);
    if (st == WH_ERR_UNAVAILABLE && c->retryable)
        st = fn(c, arg); /* a connection that broke since its last use: once more, reset */
    pg_put(c);
    return st;
}

/* Any value: a key of pg_advisory_xact_lock only the migration takes. */
#define PG_MIGRATE_LOCK 0x7768617266000001LL

/* ---- schema ---- */

static wh_status_t pg_migrate(pg_conn_t *c)
{
    PGresult *r = NULL;
    pg_params_t p = {0};
    pp_i64(&p, PG_MIGRATE_LOCK);
    wh_status_t st = pg_exec(c, "BEGIN", NULL, NULL, "begin migration");
    if (st != WH_OK)
        return st;
    c->in_tx = true;
    st = pg_exec(c, "SELECT pg_advisory_xact_lock($1)", &p, NULL, "migration lock");
    if (st == WH_OK)
        st = pg_exec(c,
                     "CREATE TABLE IF NOT EXISTS wharf_schema(version integer NOT NULL,"
                     " applied timestamptz NOT NULL DEFAULT now())",
                     NULL, NULL, "schema version table");
    if (st == WH_OK)
        st = pg_exec(c, "SELECT coalesce(max(version), 0) FROM wharf_schema", NULL, &r,
                     "schema version");
    int have = st == WH_OK ? (int)pg_i64(r, 0, 0) : 0;
    PQclear(r);
    if (st == WH_OK && have > META_SCHEMA_VERSION) {
        wh_error("store",
                 "the PostgreSQL schema is version %d, newer than this wharfd knows "
                 "(%d); upgrade wharfd",
                 have, META_SCHEMA_VERSION);
        st = WH_ERR_UNSUPPORTED;
    }
    for (int v = have + 1; st == WH_OK && v <= META_SCHEMA_VERSION; v++) {
        /* Several statements: the simple protocol (PQexec), inside the open transaction. */
        PGresult *mr = PQexec(c->c, pg_schema_steps[v - 1]);
        if (PQresultStatus(mr) != PGRES_COMMAND_OK)
            st = pg_fail(c, mr, "schema migration");
        PQclear(mr);
        pg_params_t pv = {0};
        pp_i64(&pv, v);
        if (st == WH_OK)
            st = pg_exec(c, "INSERT INTO wharf_schema(version) VALUES($1)", &pv, NULL,
                         "schema version record");
        if (st == WH_OK)
            wh_info("store", "PostgreSQL schema migrated to version %d", v);
    }
    if (st == WH_OK)
        st = pg_exec(c, "COMMIT", NULL, NULL, "commit migration");
    else
        pg_tx_rollback(c);
    c->in_tx = false;
    return st;
}

/* ---- buckets ---- */

wh_status_t pg_bucket_check(pg_conn_t *c, const char *bucket)
{
    pg_params_t p = {0};
    PGresult *r;
    pp_text(&p, bucket);
    wh_status_t st = pg_exec(c, "SELECT 1 FROM buckets WHERE name = $1", &p, &r, "bucket lookup");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

typedef struct {
    const char *name;
    time_t created;
    const char *owner, *acl;
} pg_bucket_arg_t;

static wh_status_t tx_bucket_create(void *conn, void *arg)
{
    pg_bucket_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->name);
    pp_i64(&p, (int64_t)a->created);
    pp_text(&p, a->owner);
    pp_text(&p, NULL);
    p.v[p.n - 1] = a->acl; /* NULL stays SQL NULL */
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "INSERT INTO buckets(name, created, owner, acl)"
                             " VALUES($1, $2, $3, $4)"
                             " ON CONFLICT DO NOTHING RETURNING 1",
                             &p, &r, "bucket insert");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_EXISTS;
    PQclear(r);
    return st;
}

static wh_status_t pg_bucket_create(meta_t *m, const char *name, time_t created, const char *owner,
                                    const char *acl)
{
    pg_bucket_arg_t a = {name, created, owner, acl};
    return pg_write(PGM(m), tx_bucket_create, &a);
}

typedef struct {
    const char *name;
    meta_part_t *parts;
    size_t n;
} pg_bdel_arg_t;

/* Objects make the bucket not empty; incomplete uploads do not (S3 drops them with it). */
static wh_status_t tx_bucket_delete(void *conn, void *arg)
{
    pg_bdel_arg_t *a = arg;
    meta_parts_free(a->parts, a->n); /* a retried attempt starts afresh */
    a->parts = NULL;
    a->n = 0;
    wh_status_t st = pg_bucket_check(conn, a->name);
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_text(&p, a->name);
    PGresult *r;
    /* SERIALIZABLE: an object or upload created meanwhile makes one of the two retry. */
    st = pg_exec(conn, "SELECT 1 FROM objects WHERE bucket = $1 LIMIT 1", &p, &r,
                 "bucket emptiness check");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) > 0)
        st = WH_ERR_NOT_EMPTY;
    PQclear(r);
    if (st == WH_OK)
        st = pg_bucket_uploads_drop(conn, a->name, &a->parts, &a->n);
    if (st == WH_OK)
        st = pg_exec(conn, "DELETE FROM buckets WHERE name = $1", &p, NULL, "bucket delete");
    return st;
}

static wh_status_t pg_bucket_delete(meta_t *m, const char *name, meta_part_t **parts, size_t *n)
{
    pg_bdel_arg_t a = {name, NULL, 0};
    wh_status_t st = pg_write(PGM(m), tx_bucket_delete, &a);
    if (st != WH_OK) {
        meta_parts_free(a.parts, a.n);
        a.parts = NULL;
        a.n = 0;
    }
    *parts = a.parts;
    *n = a.n;
    return st;
}

static wh_status_t rd_bucket_exists(void *conn, void *arg)
{
    return pg_bucket_check(conn, arg);
}

static wh_status_t pg_bucket_exists(meta_t *m, const char *name)
{
    return pg_read(PGM(m), rd_bucket_exists, (void *)name);
}

typedef struct {
    data_bucket_info_t *arr;
    size_t n;
} pg_blist_t;

static wh_status_t rd_bucket_list(void *conn, void *arg)
{
    pg_blist_t *a = arg;
    PGresult *r;
    wh_status_t st =
        pg_exec(conn, "SELECT name, created FROM buckets ORDER BY name", NULL, &r, "bucket list");
    if (st != WH_OK)
        return st;
    int n = PQntuples(r);
    free(a->arr);
    a->arr = calloc(n ? (size_t)n : 1, sizeof *a->arr);
    if (!a->arr) {
        PQclear(r);
        return WH_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        pg_copy(r, i, 0, a->arr[i].name, sizeof a->arr[i].name);
        a->arr[i].created = (time_t)pg_i64(r, i, 1);
    }
    a->n = (size_t)n;
    PQclear(r);
    return WH_OK;
}

static wh_status_t pg_bucket_list(meta_t *m, data_bucket_info_t **out, size_t *n)
{
    pg_blist_t a = {0};
    wh_status_t st = pg_read(PGM(m), rd_bucket_list, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

/* ---- open/close ---- */

static wh_status_t pg_set_durable(meta_t *mm, bool durable)
{
    pg_meta_t *m = PGM(mm);
    m->durable = durable;
    /* Apply to every idle connection now; busy ones pick it up at their next reconnect. */
    wh_status_t st = WH_OK;
    for (int i = 0; i < PG_POOL && st == WH_OK; i++) {
        pg_conn_t *c = pg_get(m);
        if (c->c && PQstatus(c->c) == CONNECTION_OK)
            st = pg_session(c);
        pg_put(c);
    }
    return st;
}

static void pg_close(meta_t *mm)
{
    pg_meta_t *m = PGM(mm);
    for (int i = 0; i < PG_POOL; i++)
        if (m->pool[i].c)
            PQfinish(m->pool[i].c);
    pg_locks_close(m);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock_mu);
    free(m->url);
    free(m);
}

static wh_status_t pg_rules_write(meta_t *m, meta_tx_fn fn, void *arg)
{
    return pg_write(PGM(m), fn, arg);
}

/* No group commit, and no auth generation (nothing caches PostgreSQL's authorization reads):
 * every write is pg_write. */
static const meta_rules_t PG_RULES = {
    .write = pg_rules_write,
    .write_group = pg_rules_write,
    .write_auth = pg_rules_write,
    .ver = &PG_VER,
    .mpu = &PG_MPU,
    .ident = &PG_IDENT,
};

static const meta_object_ops_t PG_OBJECTS = {
    .bucket_create = pg_bucket_create,
    .bucket_delete = pg_bucket_delete,
    .bucket_exists = pg_bucket_exists,
    .bucket_list = pg_bucket_list,
    .bucket_auth_get = pg_bucket_auth_get,
    .bucket_set_acl = pg_bucket_set_acl,
    .bucket_set_policy = pg_bucket_set_policy,
    .bucket_attr_set = pg_bucket_attr_set,
    .bucket_attr_get = pg_bucket_attr_get,
    .object_set_acl = pg_object_set_acl,
    .object_get = pg_object_get,
    .object_put = meta_rules_object_put,
    .object_rename = meta_rules_object_rename,
    .object_swap = meta_rules_object_swap,
    .object_delete = meta_rules_object_delete,
    .object_scan = pg_object_scan,
    .data_referenced = pg_data_referenced,
};

static const meta_version_ops_t PG_VERSIONS = {
    .bucket_versioning_get = pg_bucket_versioning_get,
    .bucket_versioning_set = pg_bucket_versioning_set,
    .object_get_version = pg_object_get_version,
    .object_delete_version = meta_rules_object_delete_version,
    .object_lock_set = meta_rules_object_lock_set,
    .version_scan = pg_version_scan,
    .object_tags_set = meta_rules_object_tags_set,
};

static const meta_upload_ops_t PG_UPLOADS = {
    .upload_create = pg_upload_create,
    .upload_get = pg_upload_get,
    .part_put = meta_rules_part_put,
    .part_list = pg_part_list,
    .upload_delete = meta_rules_upload_delete,
    .upload_complete = meta_rules_upload_complete,
    .upload_list = pg_upload_list,
    .upload_count = pg_upload_count,
};

static const meta_ident_ops_t PG_IDENTITY = {
    .user_create = pg_user_create,
    .user_get = pg_user_get,
    .user_list = pg_user_list,
    .user_delete = meta_rules_user_delete,
    .key_create = meta_rules_key_create,
    .key_get = pg_key_get,
    .key_list = pg_key_list,
    .key_delete = pg_key_delete,
    .key_set_active = pg_key_set_active,
    .user_policy_put = meta_rules_user_policy_put,
    .user_policy_get = pg_user_policy_get,
    .user_policy_list = pg_user_policy_list,
    .user_policy_delete = pg_user_policy_delete,
};

static const meta_cluster_ops_t PG_CLUSTER = {
    .node_register = pg_node_register,
    .node_heartbeat = pg_node_heartbeat,
    .node_list = pg_node_list,
    .node_set_zone = pg_node_set_zone,
    .node_drain = pg_node_drain,
    .node_remove = pg_node_remove,
    .node_copies = pg_node_copies,
    .node_report = pg_node_report,
    .cluster_status_put = pg_cluster_status_put,
    .cluster_status_get = pg_cluster_status_get,
    .gc_take = pg_gc_take,
    .gc_done = pg_gc_done,
    .gc_defer = pg_gc_defer,
    .chunks_on_node = pg_chunks_on_node,
    .chunks_page = pg_chunks_page,
    .chunks_on_nodes_count = pg_chunks_on_nodes_count,
    .chunk_move = pg_chunk_move,
    .cluster_id = pg_cluster_id,
    .damage_report = pg_damage_report,
    .damage_take = pg_damage_take,
    .damage_done = pg_damage_done,
    .chunk_find = pg_chunk_find,
    .chunk_stripe = pg_chunk_stripe,
    .lock_try = pg_lock_try,
    .lock_release = pg_lock_release,
};

static const meta_ops_t PG_OPS = {
    .name = "postgresql",
    .close = pg_close,
    .set_durable = pg_set_durable,
    .objects = &PG_OBJECTS,
    .versions = &PG_VERSIONS,
    .uploads = &PG_UPLOADS,
    .ident = &PG_IDENTITY,
    .cluster = &PG_CLUSTER,
};

wh_status_t meta_pg_open(const char *url, meta_t **out)
{
    char err[600];
    if (wh_pq_load(err, sizeof err) != WH_OK) {
        wh_error("store", "cannot open PostgreSQL metadata at %s: %s", url, err);
        return WH_ERR_UNSUPPORTED;
    }
    pg_meta_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    m->base.ops = &PG_OPS;
    m->base.rules = &PG_RULES;
    m->durable = true;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    pthread_mutex_init(&m->lock_mu, NULL);
    for (int i = 0; i < PG_POOL; i++)
        m->pool[i].m = m;
    m->lockc.m = m;
    if (!(m->url = strdup(url))) {
        pg_close(&m->base);
        return WH_ERR_NOMEM;
    }
    /* Connect one now, so a wrong URL fails at start with a clear message; the others
     * connect on first use. */
    pg_conn_t *c = pg_get(m);
    wh_status_t st = pg_ensure(c);
    if (st == WH_OK)
        st = pg_migrate(c);
    pg_put(c);
    if (st != WH_OK) {
        wh_error("store", "cannot open PostgreSQL metadata at %s: %s", url, wh_status_str(st));
        pg_close(&m->base);
        return st;
    }
    *out = &m->base;
    return WH_OK;
}
