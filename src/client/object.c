/* libwharf: object GET and PUT over RDMA (x-amz-rdma-token) or plain HTTP.
 *
 * A GET of [offset, offset+length) is split into chunk_size pieces run by up to `concurrency`
 * runners: the calling thread plus workers of the client's pool. Each piece is one ranged GET:
 * over RDMA with a token naming exactly its sub-range of dst, over HTTP with curl writing the
 * body straight into dst+off. A PUT is one request, or multipart with parallel parts at or
 * above multipart_threshold.
 *
 * No silent fallback: a 501 decline is an error (WH_ERR_DECLINED) unless the fallback policy
 * is http; then the request is re-sent without the token, the report says fell_back and why,
 * and the counters record it. */
#include "client/internal.h"

#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "s3/sigv4.h"
#include "s3/xml.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "client"

/* ---- shared per-operation state --------------------------------------------------------- */

typedef struct wc_op {
    wharf_client_t *c;
    const char *bucket, *key;
    bool rdma;          /* try RDMA first */
    bool verify;
    unsigned conc;
    double t0;

    pthread_mutex_t mu;
    wh_status_t st;     /* first error */
    char err[WC_ERR_LEN];
    atomic_bool failed;
    atomic_bool force_http; /* after a decline under fallback=http */
    bool fell_back;
    char reason[256];
    bool any_rdma, any_http;
    double first_byte;  /* seconds from t0, 0 = none yet */
    char etag[80];
    _Atomic uint32_t requests, retries;

    /* pieces */
    unsigned n;
    atomic_uint next;
    void (*run)(struct wc_op *op, unsigned i, wc_conn_t *conn);
    wc_group_t group;
    wc_task_t tasks[WC_POOL_MAX_THREADS];
} wc_op_t;

static void op_init(wc_op_t *op, wharf_client_t *c, const char *bucket, const char *key)
{
    memset(op, 0, sizeof *op);
    op->c = c;
    op->bucket = bucket;
    op->key = key;
    op->t0 = wh_now_s();
    pthread_mutex_init(&op->mu, NULL);
}

static void op_fini(wc_op_t *op)
{
    pthread_mutex_destroy(&op->mu);
}

static void op_fail(wc_op_t *op, wh_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void op_fail(wc_op_t *op, wh_status_t st, const char *fmt, ...)
{
    pthread_mutex_lock(&op->mu);
    if (op->st == WH_OK) {
        op->st = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(op->err, sizeof op->err, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&op->mu);
    atomic_store(&op->failed, true);
}

/* Accounts one reply (timing, requests, retries, etag). */
static void op_note_reply(wc_op_t *op, const wc_resp_t *r)
{
    atomic_fetch_add(&op->requests, 1 + r->retries);
    atomic_fetch_add(&op->retries, r->retries);
    pthread_mutex_lock(&op->mu);
    if (r->t_first > 0) {
        double fb = r->t_first - op->t0;
        if (op->first_byte == 0 || fb < op->first_byte)
            op->first_byte = fb;
    }
    if (r->etag[0] && !op->etag[0])
        snprintf(op->etag, sizeof op->etag, "%s", r->etag);
    pthread_mutex_unlock(&op->mu);
}

/* A 501 from the server on a token request. Returns true when the piece should be re-sent
 * over HTTP (fallback=http); otherwise fails the op with WH_ERR_DECLINED. */
static bool op_declined(wc_op_t *op, const char *what, const wc_resp_t *r)
{
    wharf_client_t *c = op->c;
    atomic_fetch_add(&c->st_declines, 1);
    const char *why = r->s3_message[0] ? r->s3_message : "no reason given";
    if (c->fallback != WHARF_FALLBACK_HTTP) {
        op_fail(op, WH_ERR_DECLINED,
                "%s: server declined RDMA (501: %s); set fallback=http to allow HTTP, or use "
                "transport http", what, why);
        return false;
    }
    pthread_mutex_lock(&op->mu);
    if (!op->fell_back) {
        op->fell_back = true;
        snprintf(op->reason, sizeof op->reason, "server declined RDMA (501: %.200s)", why);
        wh_debug(MOD, "fallback to http op=\"%s\" reason=\"%s\"", what, why);
    }
    pthread_mutex_unlock(&op->mu);
    atomic_store(&op->force_http, true);
    atomic_fetch_add(&c->st_fallbacks, 1);
    return true;
}

static void op_runner(void *arg, wc_conn_t *conn)
{
    wc_op_t *op = arg;
    unsigned i;
    while (!atomic_load(&op->failed) && (i = atomic_fetch_add(&op->next, 1)) < op->n)
        op->run(op, i, conn);
    wc_group_done(&op->group);
}

/* Runs op->run over op->n pieces with up to op->conc runners: this thread and pool workers. */
static void op_execute(wc_op_t *op)
{
    wharf_client_t *c = op->c;
    unsigned runners = WH_MIN(op->conc ? op->conc : 1, op->n);
    if (runners > WC_POOL_MAX_THREADS)
        runners = WC_POOL_MAX_THREADS;
    unsigned helpers = runners > 1 ? runners - 1 : 0;
    if (helpers && wc_pool_ensure(&c->pool, helpers) != WH_OK)
        helpers = 0;
    wc_group_init(&op->group, helpers + 1);
    for (unsigned k = 0; k < helpers; k++) {
        op->tasks[k].fn = op_runner;
        op->tasks[k].arg = op;
        wc_pool_submit(&c->pool, &op->tasks[k]);
    }
    wc_conn_t *conn = wc_client_conn_get(c);
    op_runner(op, conn); /* NULL conn: each piece fails with NOMEM */
    wc_client_conn_put(c, conn);
    /* Every piece is taken: helpers still queued (behind other operations' work) have nothing
     * left to do, so take them back instead of waiting for a worker to reach them. */
    for (unsigned k = 0; k < helpers; k++)
        if (wc_pool_cancel(&c->pool, &op->tasks[k]))
            wc_group_done(&op->group);
    wc_group_wait(&op->group);
    wc_group_fini(&op->group);
}

static void op_report(wc_op_t *op, wh_status_t st, uint64_t bytes, uint64_t crc,
                      wharf_report_t *report)
{
    if (!report)
        return;
    wharf_report_t r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.status = (wharf_status_t)st;
    if (bytes == 0)
        r.transport = WHARF_TRANSPORT_NONE;
    else if (op->any_http)
        r.transport = WHARF_TRANSPORT_HTTP;
    else
        r.transport = WHARF_TRANSPORT_RDMA;
    r.bytes = bytes;
    r.requests = atomic_load(&op->requests);
    r.retries = atomic_load(&op->retries);
    r.fell_back = op->fell_back;
    snprintf(r.fallback_reason, sizeof r.fallback_reason, "%s", op->reason);
    r.wall_s = wh_now_s() - op->t0;
    r.first_byte_s = op->first_byte;
    r.crc64nvme = crc;
    snprintf(r.etag, sizeof r.etag, "%s", op->etag);
    if (op->any_rdma)
        snprintf(r.provider, sizeof r.provider, "%s", op->c->provider);
    wc_copy_out(report, &r, sizeof r);
}

/* Picks the transport. Returns WH_OK with op->rdma set, or an error (already in last error). */
static wh_status_t op_choose(wc_op_t *op, const wharf_xfer_opts_t *o)
{
    wharf_client_t *c = op->c;
    bool have = c->xfer != NULL;
    switch (o->transport) {
    case WHARF_TRANSPORT_AUTO:
        op->rdma = have;
        return WH_OK;
    case WHARF_TRANSPORT_HTTP:
        op->rdma = false;
        return WH_OK;
    case WHARF_TRANSPORT_RDMA:
        if (have) {
            op->rdma = true;
            return WH_OK;
        }
        if (c->fallback == WHARF_FALLBACK_HTTP) {
            op->rdma = false;
            op->fell_back = true;
            snprintf(op->reason, sizeof op->reason, "client has no RDMA provider: %.200s",
                     c->no_rdma_reason);
            atomic_fetch_add(&c->st_fallbacks, 1);
            return WH_OK;
        }
        wc_set_error("RDMA was asked for but this client has no data-path provider (%s); "
                     "create it with provider ofi+shm/ofi+tcp/auto, or set fallback=http",
                     c->no_rdma_reason);
        return WH_ERR_UNSUPPORTED;
    default:
        wc_set_error("transport %d is not AUTO, RDMA or HTTP", (int)o->transport);
        return WH_ERR_INVALID;
    }
}

static wh_status_t opts_resolve(wharf_client_t *c, const wharf_xfer_opts_t *uo,
                                wharf_xfer_opts_t *o)
{
    wharf_xfer_opts_init(o, sizeof *o);
    if (uo) {
        if (uo->size < sizeof(size_t)) {
            wc_set_error("opts->size is 0; call wharf_xfer_opts_init(&opts, sizeof opts)");
            return WH_ERR_INVALID;
        }
        size_t n = WH_MIN(uo->size, sizeof *o);
        memcpy((char *)o + sizeof(size_t), (const char *)uo + sizeof(size_t),
               n - sizeof(size_t));
    }
    if (o->verify_checksum < 0)
        o->verify_checksum = c->verify_checksum;
    if (o->concurrency == 0)
        o->concurrency = c->concurrency;
    return WH_OK;
}

static bool name_ok(const char *bucket, const char *key)
{
    return bucket && *bucket && key && *key;
}

/* ---- GET -------------------------------------------------------------------------------- */

typedef struct get_piece {
    uint64_t got;   /* bytes landed */
    uint64_t crc;   /* of the landed bytes (when computed) */
    bool has_crc;
    bool r416;      /* the piece starts at or past the end of the object */
    uint64_t total; /* object size from Content-Range, 0 = unknown */
    bool has_total;
} get_piece_t;

typedef struct get_op {
    wc_op_t op;
    uint8_t *dst;
    uint64_t offset, length, chunk;
    xfer_mr_t *mr;
    bool crc_all;   /* compute crc of HTTP pieces too (whole-object check) */
    get_piece_t *pieces;
} get_op_t;

/* How many bytes a 2xx reply to "bytes=off-(off+len-1)" carries: from Content-Range (206),
 * or the whole object (200, only valid when off == 0). */
static bool reply_extent(const wc_resp_t *r, uint64_t off, uint64_t len, uint64_t *n,
                         get_piece_t *pc, char *why, size_t whylen)
{
    if (r->status == 206) {
        uint64_t a, b, total;
        bool ht;
        if (!wc_content_range(r->content_range, &a, &b, &total, &ht)) {
            snprintf(why, whylen, "206 with a bad Content-Range \"%s\"", r->content_range);
            return false;
        }
        if (a != off || b - a + 1 > len) {
            snprintf(why, whylen, "asked for bytes %" PRIu64 "-%" PRIu64 " but got %s", off,
                     off + len - 1, r->content_range);
            return false;
        }
        *n = b - a + 1;
        pc->total = total;
        pc->has_total = ht;
        return true;
    }
    if (r->status == 200) {
        /* a server may ignore Range and send the whole object */
        if (off != 0) {
            snprintf(why, whylen, "asked for a range at %" PRIu64 " but got 200 (whole object)",
                     off);
            return false;
        }
        *n = UINT64_MAX; /* the body length decides */
        return true;
    }
    snprintf(why, whylen, "unexpected status %ld", r->status);
    return false;
}

static void get_piece_http(get_op_t *g, unsigned i, wc_conn_t *conn, uint64_t off, uint64_t len,
                           uint8_t *dst)
{
    wc_op_t *op = &g->op;
    wharf_client_t *c = op->c;
    get_piece_t *pc = &g->pieces[i];
    char range[64], what[128];
    snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    snprintf(what, sizeof what, "GET %s/%s (%s, http)", op->bucket, op->key, range);
    wc_req_t req = {.method = "GET", .bucket = op->bucket, .key = op->key};
    wc_req_header(&req, "range", range);
    req.dst = dst;
    req.dst_cap = len;
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    op_note_reply(op, &r);
    char msg[WC_ERR_LEN];
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 416) {
        uint64_t total;
        bool ht;
        pc->r416 = true;
        if (wc_content_range(r.content_range, NULL, NULL, &total, &ht) && ht) {
            pc->total = total;
            pc->has_total = true;
        }
        if (i == 0) {
            wc_http_describe(c, what, WH_ERR_RANGE, &r, msg, sizeof msg);
            op_fail(op, WH_ERR_RANGE, "%s", msg);
        }
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    uint64_t n;
    if (!reply_extent(&r, off, len, &n, pc, msg, sizeof msg)) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: %s", what, msg);
        goto out;
    }
    if (n != UINT64_MAX && r.body_len != n) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: Content-Range says %" PRIu64 " bytes but %" PRIu64
                " arrived", what, n, r.body_len);
        goto out;
    }
    pc->got = r.body_len;
    if (g->crc_all) {
        pc->crc = wh_crc64nvme(0, dst, pc->got);
        pc->has_crc = true;
    }
    atomic_fetch_add(&c->st_http_ops, 1);
    atomic_fetch_add(&c->st_http_bytes, pc->got);
    pthread_mutex_lock(&op->mu);
    op->any_http = true;
    pthread_mutex_unlock(&op->mu);
out:
    wc_resp_fini(&r);
}

/* Returns false when the piece must be re-sent over HTTP (declined, fallback=http). */
static bool get_piece_rdma(get_op_t *g, unsigned i, wc_conn_t *conn, uint64_t off, uint64_t len,
                           uint8_t *dst)
{
    wc_op_t *op = &g->op;
    wharf_client_t *c = op->c;
    get_piece_t *pc = &g->pieces[i];
    char range[64], what[160], token[TOKEN_MAX_LEN];
    snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    snprintf(what, sizeof what, "GET %s/%s (%s, rdma %s)", op->bucket, op->key, range,
             c->provider);
    wh_status_t st = xfer_token_pack(c->xfer, g->mr, dst, len, token, sizeof token);
    if (st != WH_OK) {
        op_fail(op, st, "%s: packing the token for [%p, +%" PRIu64 ") failed (%s)", what,
                (void *)dst, len, wh_status_str(st));
        return true;
    }
    wc_req_t req = {.method = "GET", .bucket = op->bucket, .key = op->key};
    wc_req_header(&req, "range", range);
    wc_req_header(&req, "x-amz-rdma-token", token);
    wc_resp_t r;
    xfer_progress_begin(c->xfer);
    st = wc_http_do(c, conn, &req, &r); /* body: counted, must be 0 */
    xfer_progress_end(c->xfer);
    op_note_reply(op, &r);
    bool done = true;
    char msg[WC_ERR_LEN];
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 501) {
        done = !op_declined(op, what, &r);
        goto out;
    }
    if (r.status == 416) {
        uint64_t total;
        bool ht;
        pc->r416 = true;
        if (wc_content_range(r.content_range, NULL, NULL, &total, &ht) && ht) {
            pc->total = total;
            pc->has_total = true;
        }
        if (i == 0) {
            wc_http_describe(c, what, WH_ERR_RANGE, &r, msg, sizeof msg);
            op_fail(op, WH_ERR_RANGE, "%s", msg);
        }
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    if (!r.has_rdma_reply) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: the reply has no x-amz-rdma-reply header, so the "
                "server ignored the token (is it an RDMA-capable wharfd?)", what);
        goto out;
    }
    uint64_t n;
    if (!reply_extent(&r, off, len, &n, pc, msg, sizeof msg)) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: %s", what, msg);
        goto out;
    }
    if (n == UINT64_MAX)
        n = len; /* 200 for the whole object: all of the range */
    if (!r.has_rdma_bytes || r.rdma_bytes != n) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: x-amz-rdma-bytes-transferred is %s%" PRIu64
                " but %" PRIu64 " bytes were due", what, r.has_rdma_bytes ? "" : "missing, ",
                r.rdma_bytes, n);
        goto out;
    }
    if (r.body_len != 0 || (r.has_content_length && r.content_length != 0)) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: an RDMA reply must carry no body, got %" PRIu64
                " bytes", what, r.has_content_length ? r.content_length : r.body_len);
        goto out;
    }
    pc->got = n;
    if (op->verify || g->crc_all) {
        pc->crc = wh_crc64nvme(0, dst, n);
        pc->has_crc = true;
    }
    if (op->verify) {
        if (!r.has_crc64) {
            op_fail(op, WH_ERR_PROTOCOL, "%s: the reply lacks x-amz-checksum-crc64nvme%s; the "
                    "landed bytes cannot be checked (turn verify_checksum off to skip)", what,
                    r.bad_crc64 ? " (malformed)" : "");
            goto out;
        }
        if (r.crc64 != pc->crc) {
            atomic_fetch_add(&c->st_checksum_failures, 1);
            op_fail(op, WH_ERR_CHECKSUM, "%s: crc64nvme of the landed bytes is %016" PRIx64
                    " but the server sent %016" PRIx64 "; the transport did not land the data "
                    "it reported", what, pc->crc, r.crc64);
            goto out;
        }
    }
    atomic_fetch_add(&c->st_rdma_ops, 1);
    atomic_fetch_add(&c->st_rdma_bytes, n);
    pthread_mutex_lock(&op->mu);
    op->any_rdma = true;
    pthread_mutex_unlock(&op->mu);
out:
    wc_resp_fini(&r);
    return done;
}

static void get_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    get_op_t *g = (get_op_t *)op;
    uint64_t rel = (uint64_t)i * g->chunk;
    uint64_t len = WH_MIN(g->chunk, g->length - rel);
    uint64_t off = g->offset + rel;
    uint8_t *dst = g->dst + rel;
    if (op->rdma && !atomic_load(&op->force_http)) {
        if (get_piece_rdma(g, i, conn, off, len, dst))
            return;
    }
    get_piece_http(g, i, conn, off, len, dst);
}

static wh_status_t head_object(wharf_client_t *c, const char *bucket, const char *key,
                               wharf_stat_t *out, wc_op_t *op);

WHARF_API wharf_status_t wharf_object_get(wharf_client_t *c, const char *bucket,
                                          const char *key, void *dst, uint64_t dst_len,
                                          uint64_t offset, uint64_t length,
                                          const wharf_xfer_opts_t *uopts, wharf_report_t *report)
{
    wc_client_enter(c);
    if (!c || !name_ok(bucket, key) || (!dst && dst_len)) {
        wc_set_error("wharf_object_get: client, bucket, key and dst are required");
        return WHARF_ERR_INVALID;
    }
    wharf_xfer_opts_t o;
    wh_status_t st = opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    get_op_t g;
    memset(&g, 0, sizeof g);
    wc_op_t *op = &g.op;
    op_init(op, c, bucket, key);
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    uint64_t bytes = 0, crc = 0;
    wharf_stat_t sb;
    bool have_stat = false;

    st = op_choose(op, &o);
    if (st != WH_OK)
        goto out;
    if (length == WHARF_WHOLE) {
        wharf_stat_init(&sb, sizeof sb);
        st = head_object(c, bucket, key, &sb, op);
        if (st != WH_OK)
            goto out;
        have_stat = true;
        if (offset > sb.length) {
            st = WH_ERR_RANGE;
            wc_set_error("GET %s/%s: offset %" PRIu64 " is past the end of the object (%" PRIu64
                         " bytes)", bucket, key, offset, sb.length);
            goto out;
        }
        length = sb.length - offset;
    }
    if (length > dst_len) {
        st = WH_ERR_TOO_LARGE;
        wc_set_error("GET %s/%s: the destination holds %" PRIu64 " bytes but %" PRIu64
                     " are asked for; pass a larger buffer or a shorter range", bucket, key,
                     dst_len, length);
        goto out;
    }
    if (offset + length < offset) {
        st = WH_ERR_RANGE;
        wc_set_error("GET %s/%s: offset + length overflows", bucket, key);
        goto out;
    }
    if (length == 0)
        goto out; /* nothing to move (an empty object, or an empty range) */
    g.dst = dst;
    g.offset = offset;
    g.length = length;
    g.chunk = c->chunk_size;
    g.crc_all = op->verify && have_stat && sb.has_crc64nvme && offset == 0;
    if (op->rdma) {
        st = wc_mem_find(c, dst, length, &g.mr);
        if (st != WH_OK) {
            if (c->fallback != WHARF_FALLBACK_HTTP)
                goto out; /* message set by wc_mem_find */
            op->rdma = false;
            op->fell_back = true;
            snprintf(op->reason, sizeof op->reason, "%s", wc_get_error());
            atomic_fetch_add(&c->st_fallbacks, 1);
            wc_clear_error();
            st = WH_OK;
        }
    }
    op->n = (unsigned)((length + g.chunk - 1) / g.chunk);
    if ((uint64_t)op->n * g.chunk < length) { /* absurdly small chunk for a huge range */
        g.chunk = (length + UINT32_MAX - 1) / UINT32_MAX;
        op->n = (unsigned)((length + g.chunk - 1) / g.chunk);
    }
    g.pieces = calloc(op->n, sizeof *g.pieces);
    if (!g.pieces) {
        st = WH_ERR_NOMEM;
        wc_set_error("GET %s/%s: out of memory", bucket, key);
        goto out;
    }
    op->run = get_run;
    op_execute(op);
    if (op->st != WH_OK) {
        st = op->st;
        wc_set_error("%s", op->err);
        goto out;
    }
    /* Stitch the pieces: each is full, except that a range past the object's end ends early
     * (a short piece, then pieces that start past the end). */
    uint64_t total = 0;
    bool has_total = false;
    for (unsigned i = 0; i < op->n; i++) {
        if (g.pieces[i].has_total) {
            total = g.pieces[i].total;
            has_total = true;
        }
    }
    bool ended = false;
    for (unsigned i = 0; i < op->n; i++) {
        get_piece_t *pc = &g.pieces[i];
        uint64_t rel = (uint64_t)i * g.chunk;
        uint64_t len = WH_MIN(g.chunk, length - rel);
        if (ended) {
            if (pc->got != 0) {
                st = WH_ERR_PROTOCOL;
                wc_set_error("GET %s/%s: data after the end of the object at piece %u", bucket,
                             key, i);
                goto out;
            }
            continue;
        }
        if (pc->got == len && !pc->r416) {
            if (pc->has_crc)
                crc = wh_crc64nvme_combine(crc, pc->crc, pc->got);
            bytes += pc->got;
            continue;
        }
        /* short: fine only where the object ends */
        if (!has_total || offset + rel + pc->got != total) {
            st = WH_ERR_PROTOCOL;
            wc_set_error("GET %s/%s: piece %u at %" PRIu64 " got %" PRIu64 " of %" PRIu64
                         " bytes and the object does not end there", bucket, key, i,
                         offset + rel, pc->got, len);
            goto out;
        }
        if (pc->has_crc)
            crc = wh_crc64nvme_combine(crc, pc->crc, pc->got);
        bytes += pc->got;
        ended = true;
    }
    if (g.crc_all && bytes == sb.length && crc != sb.crc64nvme) {
        atomic_fetch_add(&c->st_checksum_failures, 1);
        st = WH_ERR_CHECKSUM;
        wc_set_error("GET %s/%s: crc64nvme of the %" PRIu64 " bytes received is %016" PRIx64
                     " but the object's is %016" PRIx64, bucket, key, bytes, crc,
                     sb.crc64nvme);
        goto out;
    }
out:
    if (st == WH_OK && op->fell_back && !op->any_http && bytes)
        op->any_http = true;
    op_report(op, st, bytes, (g.crc_all || (op->verify && !op->any_http)) ? crc : 0, report);
    free(g.pieces);
    op_fini(op);
    return (wharf_status_t)st;
}

/* ---- stat (HEAD) ------------------------------------------------------------------------ */

static wh_status_t head_object(wharf_client_t *c, const char *bucket, const char *key,
                               wharf_stat_t *out, wc_op_t *op)
{
    wc_conn_t *conn = wc_client_conn_get(c);
    if (!conn)
        return WH_ERR_NOMEM;
    wc_req_t req = {.method = "HEAD", .bucket = bucket, .key = key};
    wc_req_header(&req, "x-amz-checksum-mode", "ENABLED");
    wc_resp_t r;
    char what[128], msg[WC_ERR_LEN];
    snprintf(what, sizeof what, "HEAD %s/%s", bucket, key);
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    wc_client_conn_put(c, conn);
    if (op)
        op_note_reply(op, &r);
    if (st == WH_OK && (r.status < 200 || r.status >= 300)) {
        st = wc_http_status_map(&r);
        if (r.status == 404 && !strcmp(r.s3_code, "NotFound"))
            snprintf(r.s3_code, sizeof r.s3_code, "NoSuchKey");
    }
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_set_error("%s", msg);
        goto out;
    }
    if (!r.has_content_length) {
        st = WH_ERR_PROTOCOL;
        wc_set_error("%s: the reply has no Content-Length", what);
        goto out;
    }
    wharf_stat_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.length = r.content_length;
    time_t t = 0;
    if (r.last_modified[0] && wh_http_date_parse(r.last_modified, &t) == 0)
        s.mtime = (int64_t)t;
    snprintf(s.etag, sizeof s.etag, "%s", r.etag);
    snprintf(s.content_type, sizeof s.content_type, "%s", r.content_type);
    s.has_crc64nvme = r.has_crc64;
    s.crc64nvme = r.has_crc64 ? r.crc64 : 0;
    wc_copy_out(out, &s, sizeof s);
out:
    wc_resp_fini(&r);
    return st;
}

WHARF_API wharf_status_t wharf_object_stat(wharf_client_t *c, const char *bucket,
                                           const char *key, wharf_stat_t *out)
{
    wc_client_enter(c);
    if (!c || !name_ok(bucket, key) || !out || out->size < sizeof(size_t)) {
        wc_set_error("wharf_object_stat: client, bucket, key and out (set up with "
                     "wharf_stat_init) are required");
        return WHARF_ERR_INVALID;
    }
    return (wharf_status_t)head_object(c, bucket, key, out, NULL);
}

/* ---- PUT -------------------------------------------------------------------------------- */

typedef struct put_part {
    char etag[80];
    uint64_t crc;
} put_part_t;

typedef struct put_op {
    wc_op_t op;
    const uint8_t *src;
    uint64_t len, part;
    xfer_mr_t *mr;
    const char *upload_id; /* NULL: single PUT */
    put_part_t *parts;
} put_op_t;

/* One PUT (object or part). Returns false when it must be re-sent over HTTP. */
static bool put_one(put_op_t *p, unsigned i, wc_conn_t *conn, bool rdma)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    uint64_t rel = (uint64_t)i * p->part;
    uint64_t len = p->upload_id ? WH_MIN(p->part, p->len - rel) : p->len;
    const uint8_t *src = p->src + rel;
    char what[192], query[600], token[TOKEN_MAX_LEN], crcb64[13], msg[WC_ERR_LEN];
    wc_req_t req = {.method = "PUT", .bucket = op->bucket, .key = op->key};
    if (p->upload_id) {
        wh_sbuf_t q;
        wh_sbuf_init(&q);
        wh_sbuf_printf(&q, "partNumber=%u&uploadId=", i + 1);
        s3_uri_encode(p->upload_id, strlen(p->upload_id), 1, &q);
        snprintf(query, sizeof query, "%s", q.data ? q.data : "");
        wh_sbuf_free(&q);
        req.query = query;
        snprintf(what, sizeof what, "PUT %s/%s (part %u, %s)", op->bucket, op->key, i + 1,
                 rdma ? c->provider : "http");
    } else {
        snprintf(what, sizeof what, "PUT %s/%s (%s)", op->bucket, op->key,
                 rdma ? c->provider : "http");
    }
    uint64_t crc = 0;
    if (op->verify) {
        crc = wh_crc64nvme(0, src, len);
        wh_crc64nvme_b64(crc, crcb64);
        wc_req_header(&req, "x-amz-checksum-crc64nvme", crcb64);
    }
    req.has_body = true;
    req.payload_hash = S3_UNSIGNED_PAYLOAD;
    if (rdma) {
        wh_status_t pst = xfer_token_pack(c->xfer, p->mr, src, len, token, sizeof token);
        if (pst != WH_OK) {
            op_fail(op, pst, "%s: packing the token for [%p, +%" PRIu64 ") failed (%s)", what,
                    (const void *)src, len, wh_status_str(pst));
            return true;
        }
        wc_req_header(&req, "x-amz-rdma-token", token);
        req.body = NULL;
        req.body_len = 0; /* Content-Length: 0; the token's size is the size */
    } else {
        req.body = src;
        req.body_len = len;
    }
    wc_resp_t r;
    if (rdma)
        xfer_progress_begin(c->xfer);
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    if (rdma)
        xfer_progress_end(c->xfer);
    op_note_reply(op, &r);
    bool done = true;
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    if (rdma && r.status == 501) {
        done = !op_declined(op, what, &r);
        goto out;
    }
    if (r.status != 200) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    if (rdma) {
        if (!r.has_rdma_reply) {
            op_fail(op, WH_ERR_PROTOCOL, "%s: the reply has no x-amz-rdma-reply header: the "
                    "server ignored the token (and may have stored an empty object)", what);
            goto out;
        }
        if (!r.has_rdma_bytes || r.rdma_bytes != len) {
            op_fail(op, WH_ERR_PROTOCOL, "%s: x-amz-rdma-bytes-transferred is %s%" PRIu64
                    " but %" PRIu64 " bytes were sent", what,
                    r.has_rdma_bytes ? "" : "missing, ", r.rdma_bytes, len);
            goto out;
        }
    }
    if (op->verify && r.has_crc64 && r.crc64 != crc) {
        atomic_fetch_add(&c->st_checksum_failures, 1);
        op_fail(op, WH_ERR_CHECKSUM, "%s: the server stored crc64nvme %016" PRIx64
                " but the source's is %016" PRIx64, what, r.crc64, crc);
        goto out;
    }
    if (!r.etag[0]) {
        op_fail(op, WH_ERR_PROTOCOL, "%s: the reply has no ETag", what);
        goto out;
    }
    snprintf(p->parts[i].etag, sizeof p->parts[i].etag, "%s", r.etag);
    p->parts[i].crc = crc;
    if (rdma) {
        atomic_fetch_add(&c->st_rdma_ops, 1);
        atomic_fetch_add(&c->st_rdma_bytes, len);
    } else {
        atomic_fetch_add(&c->st_http_ops, 1);
        atomic_fetch_add(&c->st_http_bytes, len);
    }
    pthread_mutex_lock(&op->mu);
    if (rdma)
        op->any_rdma = true;
    else
        op->any_http = true;
    pthread_mutex_unlock(&op->mu);
out:
    wc_resp_fini(&r);
    return done;
}

static void put_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    put_op_t *p = (put_op_t *)op;
    if (op->rdma && !atomic_load(&op->force_http)) {
        if (put_one(p, i, conn, true))
            return;
    }
    put_one(p, i, conn, false);
}

/* POST ?uploads -> UploadId */
typedef struct walk_one {
    const char *path;
    char *out;
    size_t outlen;
    bool found;
    char code[64], message[256];
} walk_one_t;

static void walk_one_cb(void *arg, const char *path, const char *text, size_t len)
{
    walk_one_t *w = arg;
    size_t n;
    if (!strcmp(path, w->path) && w->out) {
        n = WH_MIN(len, w->outlen - 1);
        memcpy(w->out, text, n);
        w->out[n] = '\0';
        w->found = true;
    } else if (!strcmp(path, "Error/Code")) {
        n = WH_MIN(len, sizeof w->code - 1);
        memcpy(w->code, text, n);
        w->code[n] = '\0';
    } else if (!strcmp(path, "Error/Message")) {
        n = WH_MIN(len, sizeof w->message - 1);
        memcpy(w->message, text, n);
        w->message[n] = '\0';
    }
}

static wh_status_t mp_post(put_op_t *p, wc_conn_t *conn, const char *query, const char *body,
                           const char *want_path, char *out, size_t outlen, const char *what)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    char sha[65], msg[WC_ERR_LEN];
    wh_sbuf_t rb;
    wh_sbuf_init(&rb);
    wc_req_t req = {.method = "POST", .bucket = op->bucket, .key = op->key, .query = query};
    req.has_body = true;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    wh_sha256_hex(body ? body : "", req.body_len, sha);
    req.payload_hash = sha;
    req.body_out = &rb;
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    op_note_reply(op, &r);
    if (st == WH_OK && r.status != 200)
        st = wc_http_status_map(&r);
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        op_fail(op, st, "%s", msg);
        goto out;
    }
    walk_one_t w = {.path = want_path, .out = out, .outlen = outlen};
    if (rb.oom || s3_xml_walk(rb.data ? rb.data : "", rb.len, walk_one_cb, &w) != 0) {
        st = WH_ERR_PROTOCOL;
        op_fail(op, st, "%s: the reply body is not valid XML", what);
        goto out;
    }
    if (w.code[0]) { /* CompleteMultipartUpload can fail inside a 200 */
        st = !strcmp(w.code, "InvalidPart") || !strcmp(w.code, "InvalidPartOrder")
                 ? WH_ERR_INVALID
                 : WH_ERR_HTTP;
        op_fail(op, st, "%s: 200 carrying error %s: %s", what, w.code, w.message);
        goto out;
    }
    if (!w.found || !out[0]) {
        st = WH_ERR_PROTOCOL;
        op_fail(op, st, "%s: the reply lacks %s", what, want_path);
        goto out;
    }
    if (r.etag[0] && !strcmp(want_path, "CompleteMultipartUploadResult/ETag")) {
        pthread_mutex_lock(&op->mu);
        snprintf(op->etag, sizeof op->etag, "%s", r.etag);
        pthread_mutex_unlock(&op->mu);
    }
out:
    wh_sbuf_free(&rb);
    wc_resp_fini(&r);
    return st;
}

static void mp_abort(put_op_t *p, wc_conn_t *conn, const char *upload_id)
{
    wc_op_t *op = &p->op;
    wh_sbuf_t q;
    wh_sbuf_init(&q);
    wh_sbuf_puts(&q, "uploadId=");
    s3_uri_encode(upload_id, strlen(upload_id), 1, &q);
    if (q.oom) {
        wh_sbuf_free(&q);
        return;
    }
    wc_req_t req = {.method = "DELETE", .bucket = op->bucket, .key = op->key, .query = q.data};
    wc_resp_t r;
    wh_status_t st = wc_http_do(op->c, conn, &req, &r);
    if (st != WH_OK || r.status >= 300)
        wh_warn(MOD, "abort multipart failed bucket=%s key=%s upload=%s status=%ld",
                op->bucket, op->key, upload_id, r.status);
    wc_resp_fini(&r);
    wh_sbuf_free(&q);
}

static wh_status_t put_multipart(put_op_t *p)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    char upload_id[512] = "", etag[80] = "", what[160];
    wh_sbuf_t body, q;
    wh_sbuf_init(&body);
    wh_sbuf_init(&q);
    wc_conn_t *conn = wc_client_conn_get(c);
    if (!conn)
        return WH_ERR_NOMEM;
    snprintf(what, sizeof what, "POST %s/%s?uploads", op->bucket, op->key);
    wh_status_t st = mp_post(p, conn, "uploads=", NULL, "InitiateMultipartUploadResult/UploadId",
                             upload_id, sizeof upload_id, what);
    wc_client_conn_put(c, conn);
    conn = NULL;
    if (st != WH_OK)
        goto out;
    p->upload_id = upload_id;
    op->run = put_run;
    op_execute(op);
    conn = wc_client_conn_get(c);
    if (!conn) {
        st = WH_ERR_NOMEM;
        goto out_abort;
    }
    if (op->st != WH_OK) {
        st = op->st;
        goto out_abort;
    }
    wh_sbuf_puts(&body, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < op->n; i++) {
        wh_sbuf_printf(&body, "<Part><PartNumber>%u</PartNumber>", i + 1);
        s3_xml_elem(&body, "ETag", p->parts[i].etag);
        if (op->verify) {
            char b64[13];
            wh_crc64nvme_b64(p->parts[i].crc, b64);
            s3_xml_elem(&body, "ChecksumCRC64NVME", b64);
        }
        wh_sbuf_puts(&body, "</Part>");
    }
    wh_sbuf_puts(&body, "</CompleteMultipartUpload>");
    wh_sbuf_puts(&q, "uploadId=");
    s3_uri_encode(upload_id, strlen(upload_id), 1, &q);
    if (body.oom || q.oom) {
        st = WH_ERR_NOMEM;
        op_fail(op, st, "POST %s/%s: out of memory", op->bucket, op->key);
        goto out_abort;
    }
    snprintf(what, sizeof what, "POST %s/%s?uploadId (complete %u parts)", op->bucket, op->key,
             op->n);
    st = mp_post(p, conn, q.data, body.data, "CompleteMultipartUploadResult/ETag", etag,
                 sizeof etag, what);
    if (st != WH_OK)
        goto out_abort;
    pthread_mutex_lock(&op->mu);
    if (!op->etag[0] || strcmp(op->etag, etag) != 0)
        snprintf(op->etag, sizeof op->etag, "%s", etag);
    pthread_mutex_unlock(&op->mu);
    goto out;
out_abort:
    if (conn)
        mp_abort(p, conn, upload_id);
out:
    wc_client_conn_put(c, conn);
    wh_sbuf_free(&body);
    wh_sbuf_free(&q);
    return st;
}

WHARF_API wharf_status_t wharf_object_put(wharf_client_t *c, const char *bucket,
                                          const char *key, const void *src, uint64_t len,
                                          const wharf_xfer_opts_t *uopts, wharf_report_t *report)
{
    wc_client_enter(c);
    if (!c || !name_ok(bucket, key) || (!src && len)) {
        wc_set_error("wharf_object_put: client, bucket, key and src are required");
        return WHARF_ERR_INVALID;
    }
    wharf_xfer_opts_t o;
    wh_status_t st = opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    put_op_t p;
    memset(&p, 0, sizeof p);
    wc_op_t *op = &p.op;
    op_init(op, c, bucket, key);
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    p.src = src;
    p.len = len;
    uint64_t crc = 0;

    st = op_choose(op, &o);
    if (st != WH_OK)
        goto out;
    if (len == 0) {
        /* Nothing to move; an RDMA token of size 0 names no memory. Plain empty PUT. */
        op->rdma = false;
    }
    if (op->rdma) {
        st = wc_mem_find(c, src, len, &p.mr);
        if (st != WH_OK) {
            if (c->fallback != WHARF_FALLBACK_HTTP)
                goto out;
            op->rdma = false;
            op->fell_back = true;
            snprintf(op->reason, sizeof op->reason, "%s", wc_get_error());
            atomic_fetch_add(&c->st_fallbacks, 1);
            wc_clear_error();
            st = WH_OK;
        }
    }
    if (len >= c->multipart_threshold && len > 0) {
        p.part = c->part_size;
        if ((len + p.part - 1) / p.part > 10000) /* S3's part count limit */
            p.part = (len + 9999) / 10000;
        op->n = (unsigned)((len + p.part - 1) / p.part);
    } else {
        p.part = len ? len : 1;
        op->n = 1;
    }
    p.parts = calloc(op->n, sizeof *p.parts);
    if (!p.parts) {
        st = WH_ERR_NOMEM;
        wc_set_error("PUT %s/%s: out of memory", bucket, key);
        goto out;
    }
    if (op->n == 1 && len < c->multipart_threshold) {
        wc_conn_t *conn = wc_client_conn_get(c);
        if (!conn) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        put_run(op, 0, conn);
        wc_client_conn_put(c, conn);
        st = op->st;
    } else {
        st = put_multipart(&p);
        if (op->st != WH_OK)
            st = op->st;
    }
    if (st != WH_OK) {
        wc_set_error("%s", op->err[0] ? op->err : wh_status_str(st));
        goto out;
    }
    if (op->verify) {
        for (unsigned i = 0; i < op->n; i++) {
            uint64_t plen = op->n == 1 ? len : WH_MIN(p.part, len - (uint64_t)i * p.part);
            crc = wh_crc64nvme_combine(crc, p.parts[i].crc, plen);
        }
    }
out:
    if (st == WH_OK && op->fell_back && !op->any_http && len)
        op->any_http = true;
    op_report(op, st, st == WH_OK ? len : 0, crc, report);
    free(p.parts);
    op_fini(op);
    return (wharf_status_t)st;
}
