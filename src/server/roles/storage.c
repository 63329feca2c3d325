/* SPDX-License-Identifier: Apache-2.0 */
/* The storage role (see storage.h): the internal chunk API over libmicrohttpd. */
#include "roles/storage.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "cluster/chunks.h"
#include "cluster/itoken.h"
#include "cluster/rdec.h"
#include "roles/storage_int.h"
#include "front/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MOD "storage"

void role_storage_config_init(role_storage_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_host = "127.0.0.1";
    cfg->heartbeat_ms = 1000;
    cfg->conn_timeout_s = 60;
    cfg->shutdown_grace_s = 30;
    cfg->scrub_rate = 32ULL << 20;
    cfg->scrub_interval_s = 7 * 86400;
    rdma_config_init(&cfg->rdma);
}

typedef struct sreq {
    role_storage_t *s;
    bool started, responded, deferred;
    cl_itoken_t tok;
    char chunk[CL_CHUNK_ID_LEN + 1];
    const char *method;
    cl_chunk_writer_t *w;
    uint64_t rx;
    bool body_bad;
    bool rdec;     /* an rdec: its body (the stripe's description) is gathered in form */
    char *form;    /* CL_RDEC_BODY_MAX bytes */
    size_t form_n; /* bytes in form; more than fit sets body_bad */
} sreq_t;

static void reply_text(struct MHD_Connection *c, sreq_t *q, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_text(struct MHD_Connection *c, sreq_t *q, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof msg - 2)
        n = (int)sizeof msg - 2;
    msg[n++] = '\n';
    struct MHD_Response *resp =
        MHD_create_response_from_buffer((size_t)n, msg, MHD_RESPMEM_MUST_COPY);
    if (status >= 400)
        wh_info(MOD, "refused status=%d reason='%.*s'", status, n - 1, msg);
    if (resp) {
        MHD_add_response_header(resp, "Content-Type", "text/plain");
        MHD_queue_response(c, (unsigned)status, resp);
        MHD_destroy_response(resp);
    }
    if (q)
        q->responded = true;
}

static void reply_sum(struct MHD_Connection *c, sreq_t *q, uint64_t bytes, uint64_t crc,
                      const uint8_t *md5, const char *shard_crcs)
{
    char b[24], h[24], m[33];
    snprintf(b, sizeof b, "%" PRIu64, bytes);
    snprintf(h, sizeof h, "%016" PRIx64, crc);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp) {
        MHD_add_response_header(resp, "x-wharf-bytes", b);
        MHD_add_response_header(resp, "x-wharf-crc64nvme", h);
        if (md5) {
            wh_hex_encode(md5, 16, m);
            MHD_add_response_header(resp, "x-wharf-md5", m);
        }
        if (shard_crcs)
            MHD_add_response_header(resp, "x-wharf-shard-crcs", shard_crcs);
        MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
    }
    q->responded = true;
}

static void serve_metrics(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    role_storage_metrics(s, &b);
    rdma_metrics(s->rdma, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        reply_text(c, q, 500, "out of memory rendering metrics");
        return;
    }
    size_t len = b.len;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, wh_sbuf_steal(&b), MHD_RESPMEM_MUST_FREE);
    if (resp) {
        MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
        MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
    }
    q->responded = true;
}

static wh_status_t rput_sink(void *arg, const void *p, size_t n)
{
    return cl_chunk_writer_write(arg, p, n);
}

static int storage_rdma_http(const rdma_result_t *res)
{
    return res->http_status >= 400 ? res->http_status : 502;
}

void role_storage_damaged(role_storage_t *s, const char *id, int fd)
{
    atomic_fetch_add(&s->checksum_failures, 1);
    wh_error(MOD, "chunk failed its checksum id=%s: moved aside, reported for repair", id);
    if (cl_chunk_quarantine(s->chunks, id, fd) == WH_OK)
        role_storage_damage_flush(s);
}

/* Opens the chunk a request names, or answers 404 (absent) / 500 (damaged footer, reported
 * for repair) and returns false. */
static bool open_chunk(role_storage_t *s, struct MHD_Connection *c, sreq_t *q, int *fd,
                       cl_chunk_info_t *info)
{
    wh_status_t st = cl_chunk_open(s->chunks, q->chunk, fd, info);
    if (st == WH_OK)
        return true;
    atomic_fetch_add(&s->read_errors, 1);
    if (st == WH_ERR_CHECKSUM)
        role_storage_damaged(s, q->chunk, -1);
    reply_text(c, q, st == WH_ERR_NOT_FOUND ? 404 : 500, "chunk %s: %s", q->chunk,
               st == WH_ERR_NOT_FOUND ? "not on this server" : "damaged footer");
    return false;
}

/* GET and rget: open, range-check, verify, then serve. */
static void serve_read(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    int fd = -1;
    cl_chunk_info_t info;
    if (!open_chunk(s, c, q, &fd, &info))
        return;
    const cl_itoken_t *t = &q->tok;
    uint64_t size = info.size;
    if (t->has_crc && cl_chunk_matches(&info, t->crc) != WH_OK) {
        /* not the chunk the map has (replaced, or its footer damaged): served to nobody */
        atomic_fetch_add(&s->read_errors, 1);
        role_storage_damaged(s, q->chunk, fd);
        close(fd);
        cl_chunk_info_free(&info);
        reply_text(c, q, 500,
                   "chunk %s: its crc64nvme %016" PRIx64 " is not the chunk map's %016" PRIx64,
                   q->chunk, info.crc, t->crc);
        return;
    }
    if (t->off > size || t->len > size - t->off) {
        close(fd);
        cl_chunk_info_free(&info);
        reply_text(c, q, 416,
                   "chunk %s: range %" PRIu64 "+%" PRIu64 " beyond its %" PRIu64 " bytes", q->chunk,
                   t->off, t->len, size);
        return;
    }
    uint64_t expect = 0;
    wh_status_t st;
    /* The blocks served are verified before a byte leaves, over HTTP and RDMA alike (neither
     * can take bytes back); rget checks what the engine read against them once more. */
    st = cl_chunk_verify_range(fd, &info, t->off, t->len, &expect);
    cl_chunk_info_free(&info);
    if (st != WH_OK) {
        atomic_fetch_add(&s->read_errors, 1);
        if (st == WH_ERR_CHECKSUM)
            role_storage_damaged(s, q->chunk, fd);
        close(fd);
        reply_text(c, q, 500, "chunk %s: %s", q->chunk,
                   st == WH_ERR_CHECKSUM ? "checksum mismatch (damaged on disk)" : "read error");
        return;
    }
    if (t->op == CL_OP_GET) {
        struct MHD_Response *resp =
            MHD_create_response_from_fd_at_offset64(t->len, fd, (uint64_t)t->off);
        if (!resp) {
            close(fd);
            reply_text(c, q, 500, "out of memory");
            return;
        }
        atomic_fetch_add(&s->http_read_bytes, t->len);
        MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        q->responded = true;
        return;
    }
    /* rget: a whole-chunk read is checked against the footer after it landed; on a mismatch
     * the gateway retries another replica, which overwrites the same range. */
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    st = rdma_get(s->rdma, t->mtok, &t->peer, fd, t->off, t->len, &res);
    if (st != WH_OK) {
        close(fd);
        reply_text(c, q, storage_rdma_http(&res), "chunk %s: rdma write failed: %s", q->chunk,
                   res.message);
        return;
    }
    if (res.crc64nvme != expect) {
        atomic_fetch_add(&s->read_errors, 1);
        role_storage_damaged(s, q->chunk, fd);
        close(fd);
        reply_text(c, q, 500, "chunk %s: checksum mismatch (damaged on disk)", q->chunk);
        return;
    }
    close(fd);
    reply_sum(c, q, res.bytes, res.crc64nvme, NULL, NULL);
}

static void serve_rput(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    cl_chunk_writer_t *w = NULL;
    wh_status_t st = cl_chunk_writer_open(s->chunks, q->chunk, true, &w);
    if (st != WH_OK) {
        reply_text(c, q, 500, "chunk %s: cannot create: %s", q->chunk, wh_status_str(st));
        return;
    }
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    st = rdma_put(s->rdma, q->tok.mtok, &q->tok.peer, rput_sink, w, &res);
    if (st == WH_OK && res.bytes != q->tok.len) {
        cl_chunk_writer_abort(w);
        reply_text(c, q, 400,
                   "chunk %s: memory region holds %" PRIu64 " bytes, the token "
                   "names %" PRIu64,
                   q->chunk, res.bytes, q->tok.len);
        return;
    }
    if (st != WH_OK) {
        cl_chunk_writer_abort(w);
        reply_text(c, q, storage_rdma_http(&res), "chunk %s: rdma read failed: %s", q->chunk,
                   res.message);
        return;
    }
    uint64_t crc = 0;
    uint8_t md5[16];
    if ((st = cl_chunk_writer_commit(w, &crc, md5)) != WH_OK) {
        reply_text(c, q, 507, "chunk %s: cannot store: %s", q->chunk, wh_status_str(st));
        return;
    }
    atomic_fetch_add(&s->chunks_written, 1);
    reply_sum(c, q, res.bytes, crc, md5, NULL);
}

/* push: sends this server's copy of the chunk to another storage server (repair, drain,
 * rebalance, a damaged copy rewritten), so that its bytes never pass through a gateway. The
 * copy is checked against its footer and against the chunk map's crc the gateway signed
 * before a byte leaves; it goes as a cput (signed here with the cluster secret), which the
 * target stores only when the bytes' crc64nvme is that crc. The reply carries what the
 * target acknowledged. */
static void serve_push(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    const cl_itoken_t *t = &q->tok;
    uint64_t want = 0;
    char to[256];
    if (!cl_itoken_copy_args(t, &want, to, sizeof to)) {
        reply_text(c, q, 400, "chunk %s: push token without CRC@ADDR", q->chunk);
        return;
    }
    if (s->tls && !s->cfg.cluster_ca) {
        reply_text(c, q, 501,
                   "chunk %s: push not implemented on a storage server that serves HTTPS "
                   "without --cluster-ca (it cannot dial the others); the gateway relays it",
                   q->chunk);
        return;
    }
    if (strcmp(to, s->addr) == 0) {
        reply_text(c, q, 400, "chunk %s: push to this server itself", q->chunk);
        return;
    }
    int fd = -1;
    cl_chunk_info_t info;
    if (!open_chunk(s, c, q, &fd, &info))
        return;
    uint64_t size = info.size, foot_crc = info.crc;
    cl_chunk_info_free(&info);
    if (size != t->len || foot_crc != want) {
        close(fd);
        reply_text(c, q, 409,
                   "chunk %s: this copy has %" PRIu64 " bytes, crc64nvme %016" PRIx64
                   "; the chunk map says %" PRIu64 ", %016" PRIx64,
                   q->chunk, size, foot_crc, t->len, want);
        return;
    }
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        reply_text(c, q, 500, "chunk %s: out of memory", q->chunk);
        return;
    }
    if (wh_pread_all(fd, buf, size, 0) != 0 || wh_crc64nvme(0, buf, size) != foot_crc) {
        atomic_fetch_add(&s->read_errors, 1);
        role_storage_damaged(s, q->chunk, fd);
        close(fd);
        free(buf);
        reply_text(c, q, 500, "chunk %s: checksum mismatch (damaged on disk)", q->chunk);
        return;
    }
    close(fd);
    cl_job_t j;
    memset(&j, 0, sizeof j);
    j.op = CL_OP_CPUT;
    j.chunk = q->chunk;
    j.len = size;
    j.body = buf;
    j.cand[0] = to;
    j.ncand = 1;
    snprintf(j.mtok, sizeof j.mtok, "%016" PRIx64, want);
    wh_status_t st = cl_client_run(s->client, &j, 1, 1, NULL);
    free(buf);
    if (st != WH_OK || j.crc != want) {
        atomic_fetch_add(&s->push_failures, 1);
        reply_text(c, q, 502, "chunk %s: %s did not store the copy: %s", q->chunk, to,
                   j.err[0] ? j.err : "crc differs");
        return;
    }
    atomic_fetch_add(&s->push_chunks, 1);
    atomic_fetch_add(&s->push_bytes, size);
    reply_sum(c, q, j.bytes, j.crc, NULL, NULL);
}

/* rdec and renc, once the body is in: storage_ec.c does the work. */
static void rdec_finish(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    if (q->body_bad) {
        reply_text(c, q, 400, "stripe %s: rdec body longer than %d bytes", q->chunk,
                   CL_RDEC_BODY_MAX);
        return;
    }
    role_rdec_result_t res;
    if (q->tok.op == CL_OP_RENC)
        role_storage_renc(s, &q->tok, q->form ? q->form : "", q->form_n, &res);
    else
        role_storage_rdec(s, &q->tok, q->form ? q->form : "", q->form_n, &res);
    if (res.http != 200) {
        reply_text(c, q, res.http, "stripe %s: %s", q->chunk, res.message);
        return;
    }
    reply_sum(c, q, res.bytes, res.crc, q->tok.op == CL_OP_RENC ? res.md5 : NULL,
              res.shard_crcs[0] ? res.shard_crcs : NULL);
}

/* The token is checked here, before any byte of the chunk is read or written. */
static void request_begin(role_storage_t *s, struct MHD_Connection *c, sreq_t *q, const char *url)
{
    if (strcmp(url, "/health") == 0 && strcmp(q->method, "GET") == 0) {
        reply_text(c, q, 200, "ok");
        return;
    }
    if (strcmp(url, "/metrics") == 0 && strcmp(q->method, "GET") == 0) {
        serve_metrics(s, c, q);
        return;
    }
    const char *pfx = "/chunk/";
    if (strncmp(url, pfx, strlen(pfx)) != 0 ||
        !cl_chunk_id_valid(url + strlen(pfx), strlen(url + strlen(pfx)))) {
        reply_text(c, q, 404, "no such resource (the storage API is /chunk/<32 hex>)");
        return;
    }
    snprintf(q->chunk, sizeof q->chunk, "%s", url + strlen(pfx));
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, CL_ITOKEN_HEADER);
    char err[256];
    if (!h) {
        atomic_fetch_add(&s->token_rejects, 1);
        reply_text(c, q, 403, "missing %s: storage servers serve gateways only", CL_ITOKEN_HEADER);
        return;
    }
    wh_status_t st = cl_itoken_verify(s->secret, s->secret_len, h, strlen(h), time(NULL), &q->tok,
                                      err, sizeof err);
    if (st != WH_OK) {
        atomic_fetch_add(&s->token_rejects, 1);
        reply_text(c, q, 403, "%s", err);
        return;
    }
    const cl_itoken_t *t = &q->tok;
    const char *want = t->op == CL_OP_GET                          ? "GET"
                       : t->op == CL_OP_PUT || t->op == CL_OP_CPUT ? "PUT"
                       : t->op == CL_OP_DEL                        ? "DELETE"
                                                                   : "POST";
    if (strcmp(t->chunk, q->chunk) != 0 || strcmp(q->method, want) != 0) {
        atomic_fetch_add(&s->token_rejects, 1);
        reply_text(c, q, 403, "itoken is for %s of chunk %s, not %s of %s", cl_op_name(t->op),
                   t->chunk, q->method, q->chunk);
        return;
    }
    /* for this server, and once */
    if ((st = cl_itoken_admit(s->replay, t, s->addr, time(NULL), err, sizeof err)) != WH_OK) {
        atomic_fetch_add(&s->token_rejects, 1);
        reply_text(c, q, st == WH_ERR_AUTH ? 403 : 503, "%s", err);
        return;
    }
    switch (t->op) {
    case CL_OP_GET:
    case CL_OP_RGET:
        serve_read(s, c, q);
        return;
    case CL_OP_RPUT:
        serve_rput(s, c, q);
        return;
    case CL_OP_DEL:
        st = cl_chunk_delete(s->chunks, q->chunk);
        if (st == WH_OK)
            atomic_fetch_add(&s->chunks_deleted, 1);
        reply_text(c, q, st == WH_OK ? 200 : 500, "%s", st == WH_OK ? "deleted" : "failed");
        return;
    case CL_OP_PUSH:
        serve_push(s, c, q);
        return;
    case CL_OP_RDEC:
    case CL_OP_RENC:
        /* the stripe's description follows as the body (the token's MAC covers it through
         * its SHA-256, checked once it is all in) */
        q->rdec = true;
        if (!(q->form = malloc(CL_RDEC_BODY_MAX)))
            reply_text(c, q, 500, "stripe %s: out of memory", q->chunk);
        return;
    case CL_OP_PUT:
    case CL_OP_CPUT:
        if ((st = cl_chunk_writer_open(s->chunks, q->chunk, false, &q->w)) != WH_OK)
            reply_text(c, q, 500, "chunk %s: cannot create: %s", q->chunk, wh_status_str(st));
        return; /* the body follows */
    }
}

static void put_finish(role_storage_t *s, struct MHD_Connection *c, sreq_t *q)
{
    cl_chunk_writer_t *w = q->w;
    q->w = NULL;
    if (q->body_bad || cl_chunk_writer_size(w) != q->tok.len) {
        uint64_t got = cl_chunk_writer_size(w);
        cl_chunk_writer_abort(w);
        reply_text(c, q, q->body_bad ? 507 : 400,
                   "chunk %s: %s (got %" PRIu64 " bytes, token names %" PRIu64 ")", q->chunk,
                   q->body_bad ? "write failed" : "body length differs from the token", got,
                   q->tok.len);
        return;
    }
    uint64_t crc = 0, want = q->tok.crc;
    bool checked = q->tok.op == CL_OP_CPUT && cl_itoken_copy_args(&q->tok, &want, NULL, 0);
    if ((checked || q->tok.has_crc) && cl_chunk_writer_crc(w) != want) {
        /* a copy from another storage server: stored only as the chunk map has it */
        crc = cl_chunk_writer_crc(w);
        cl_chunk_writer_abort(w);
        atomic_fetch_add(&s->copy_refused, 1);
        reply_text(c, q, 409,
                   "chunk %s: the bytes received have crc64nvme %016" PRIx64 ", not the chunk "
                   "map's %016" PRIx64 ": not stored",
                   q->chunk, crc, want);
        return;
    }
    wh_status_t st = cl_chunk_writer_commit(w, &crc, NULL);
    if (st == WH_ERR_EXISTS) {
        reply_text(c, q, 409, "chunk %s: committed here already with other bytes: not replaced",
                   q->chunk);
        return;
    }
    if (st != WH_OK) {
        reply_text(c, q, 507, "chunk %s: cannot store: %s", q->chunk, wh_status_str(st));
        return;
    }
    atomic_fetch_add(&s->chunks_written, 1);
    if (checked) {
        atomic_fetch_add(&s->copy_recv_chunks, 1);
        atomic_fetch_add(&s->copy_recv_bytes, q->tok.len);
    } else {
        atomic_fetch_add(&s->http_write_bytes, q->tok.len);
    }
    reply_sum(c, q, q->tok.len, crc, NULL, NULL);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    role_storage_t *s = cls;
    sreq_t *q = *con_cls;
    if (!q) {
        q = calloc(1, sizeof *q);
        if (!q)
            return MHD_NO;
        q->s = s;
        q->method = method;
        *con_cls = q;
        atomic_fetch_add(&s->inflight, 1);
        /* A reply queued on the first call closes the connection (MHD cannot know whether
         * a body follows), so bodiless requests are handled on the second call. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strcmp(cl, "0") != 0)
            request_begin(s, c, q, url);
        else
            q->deferred = true;
        return MHD_YES;
    }
    if (q->deferred) {
        q->deferred = false;
        request_begin(s, c, q, url);
        if (q->responded)
            return MHD_YES;
    }
    if (*upload_data_size) {
        q->rx += *upload_data_size;
        if (q->w && !q->body_bad) {
            if (q->rx > q->tok.len ||
                cl_chunk_writer_write(q->w, upload_data, *upload_data_size) != WH_OK)
                q->body_bad = q->rx <= q->tok.len; /* too long is reported at the end */
        }
        if (q->rdec && q->form && !q->body_bad) {
            if (*upload_data_size > CL_RDEC_BODY_MAX - q->form_n) {
                q->body_bad = true;
            } else {
                memcpy(q->form + q->form_n, upload_data, *upload_data_size);
                q->form_n += *upload_data_size;
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (q->responded)
        return MHD_YES;
    if (q->w) {
        put_finish(s, c, q);
        return MHD_YES;
    }
    if (q->rdec) {
        rdec_finish(s, c, q);
        return MHD_YES;
    }
    reply_text(c, q, 400, "request without a body where one was expected");
    return MHD_YES;
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    sreq_t *q = *con_cls;
    if (!q)
        return;
    cl_chunk_writer_abort(q->w); /* a PUT cut off mid-body leaves no chunk */
    atomic_fetch_sub(&q->s->inflight, 1);
    free(q->form);
    free(q);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    wh_debug("mhd", "%s", line);
}

wh_status_t role_storage_start(const role_storage_config_t *cfg, role_storage_t **out)
{
    wh_status_t st;
    role_storage_t *s = calloc(1, sizeof *s);
    if (!s)
        return WH_ERR_NOMEM;
    s->cfg = *cfg;
    s->secret = cfg->secret;
    s->secret_len = strlen(cfg->secret);
    /* the address tokens name as their target: set before the first request */
    snprintf(s->addr, sizeof s->addr, "%s:%u", cfg->listen_host, (unsigned)cfg->listen_port);
    if (!(s->replay = cl_replay_new(0))) {
        st = WH_ERR_NOMEM;
        goto err;
    }
    if ((st = cl_chunks_open(cfg->data_dir, &s->chunks)) != WH_OK)
        goto err;
    if ((st = cl_client_new(cfg->secret, &s->client)) != WH_OK ||
        (cfg->cluster_ca && (st = cl_client_set_ca(s->client, cfg->cluster_ca)) != WH_OK))
        goto err;
    rdma_config_t rcfg = cfg->rdma; /* the pool follows RLIMIT_MEMLOCK (rdma_pool.c) */
    if (!rcfg.node && strcmp(cfg->listen_host, "0.0.0.0") != 0)
        rcfg.node = cfg->listen_host;
    if ((st = rdma_init(&rcfg, &s->rdma)) != WH_OK)
        goto err;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(cfg->listen_port)};
    if (inet_pton(AF_INET, cfg->listen_host, &sin.sin_addr) != 1) {
        wh_error(MOD, "listen host must be an IPv4 address, got %s", cfg->listen_host);
        st = WH_ERR_INVALID;
        goto err;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem opts[10];
    size_t n = 0;
    if (cfg->tls_cert || cfg->tls_key) {
        char err[512];
        if (!cfg->tls_cert || !cfg->tls_key) {
            wh_error(MOD, "TLS needs both --tls-cert and --tls-key");
            st = WH_ERR_INVALID;
            goto err;
        }
        if ((st = front_tls_open(cfg->tls_cert, cfg->tls_key, &s->tls, err, sizeof err)) != WH_OK) {
            wh_error(MOD, "%s", err);
            goto err;
        }
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                            front_tls_cert_callback(s->tls)};
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                            (void *)"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1"};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, cfg->conn_timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed_cb, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)&sin};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, access_cb, s, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!s->d) {
        wh_error(MOD, "cannot listen on %s:%u (is the port in use?)", cfg->listen_host,
                 (unsigned)cfg->listen_port);
        st = WH_ERR_IO;
        goto err;
    }
    if ((st = role_storage_membership_start(s)) != WH_OK)
        goto err;
    if ((st = role_storage_scrub_start(s)) != WH_OK)
        goto err;
    wh_info(MOD, "storage serving endpoint=%s://%s:%u data=%s", s->tls ? "https" : "http",
            cfg->listen_host, (unsigned)cfg->listen_port, cfg->data_dir);
    *out = s;
    return WH_OK;
err:
    role_storage_stop(s);
    return st;
}

void role_storage_stop(role_storage_t *s)
{
    if (!s)
        return;
    if (s->d) {
        /* Refuse new connections at once; let the requests in flight finish. */
        MHD_socket ls = MHD_quiesce_daemon(s->d);
        if (ls != MHD_INVALID_SOCKET)
            close(ls);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int64_t n;
        while ((n = atomic_load(&s->inflight)) > 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec >= (time_t)s->cfg.shutdown_grace_s)
                break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (n > 0)
            wh_warn(MOD, "stopping with requests still in flight count=%lld", (long long)n);
    }
    role_storage_scrub_stop(s);
    role_storage_membership_stop(s);
    if (s->d)
        MHD_stop_daemon(s->d);
    front_tls_close(s->tls);
    rdma_fini(s->rdma);
    cl_chunks_close(s->chunks);
    cl_client_free(s->client);
    cl_replay_free(s->replay);
    free(s);
}

void role_storage_set_grace(role_storage_t *s, unsigned secs)
{
    s->cfg.shutdown_grace_s = secs;
}

wh_status_t role_storage_reload_tls(role_storage_t *s)
{
    if (!s->tls)
        return WH_OK;
    char err[512];
    wh_status_t st = front_tls_reload(s->tls, err, sizeof err);
    if (st != WH_OK)
        wh_error(MOD, "SIGHUP: TLS reload failed, keeping the certificate in use: %s", err);
    return st;
}
