/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA batches (POST /bucket?rdma-batch, docs/protocol.md "Batches"): one signed request GETs
 * many small objects of one bucket into, or PUTs them from, one client region named by its
 * x-amz-rdma-token. The list (s3/batch.h) is the signed body. Each key is authorized as if it
 * were requested alone and answered on its own line: a key refused, missing or failing its
 * condition does not fail the others. A transfer that fails (the transport, not a key) fails
 * the whole request, as a single GET or PUT would: what landed before is not vouched for. */
#include "s3api/s3api.h"
#include "base/crc.h"
#include "base/log.h"
#include "s3/batch.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD "s3"

/* The request headers a batch does not take: their per-object meaning has no place in it
 * (metadata, ACLs, tags, checksums, conditions are per key or not at all). */
static const char *unserved_header(const front_req_t *r)
{
    static const char *const prefixes[] = {"x-amz-meta-", "x-amz-grant-", "x-amz-checksum-"};
    static const char *const names[] = {
        "x-amz-acl", "x-amz-tagging", "if-none-match",           "if-match",
        "range",     "content-md5",   "x-amz-write-offset-bytes"};
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname;
        for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++)
            if (strncmp(n, prefixes[k], strlen(prefixes[k])) == 0)
                return n;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(n, names[k]) == 0)
                return n;
    }
    return NULL;
}

int s3api_batch_begin(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_need_bucket(r, o);
    if (ret)
        return ret;
    if (r->srv->cfg.admin_cluster) {
        /* A gateway's objects live on its storage servers, which pull a single request's
         * bytes themselves; a batch would need each of them to take its share of the list. */
        s3h_out_header(o, "x-amz-rdma-reply", "501");
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "RDMA batches (?rdma-batch) are not served by a cluster gateway; send "
                       "one GetObject or PutObject per key");
    }
    if (!r->token_req)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "?rdma-batch needs x-amz-rdma-token naming the region its entries are "
                       "offsets into");
    if (r->auth.mode != AUTH_PAYLOAD_SHA256)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "the ?rdma-batch list must be signed: send x-amz-content-sha256 with the "
                       "SHA-256 of the body (not UNSIGNED-PAYLOAD or a streaming payload)");
    const char *cl = front_hdr(r, "content-length");
    uint64_t n;
    if (cl && wh_parse_u64(cl, strlen(cl), &n) == 0 && n > S3_BATCH_MAX_LIST)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "the batch list is %" PRIu64 " bytes; at most %u (max list bytes)", n,
                        S3_BATCH_MAX_LIST);
    const char *h = unserved_header(r);
    if (h)
        return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                        "%s is not taken by ?rdma-batch (a batch stores no metadata, ACL, tags or "
                        "checksums of the client's; If-None-Match is the list's 'n' flag)",
                        h);
    return 0; /* read the list */
}

/* A refusal of s3h_authz_other (or another answer for one key) as the key's status. */
static void status_from(s3_batch_status_t *s, const s3h_out_t *ko, const char *dflt)
{
    snprintf(s->code, sizeof s->code, "%s", ko->code ? ko->code : dflt);
    snprintf(s->message, sizeof s->message, "%.200s", ko->msg);
}

static void status_set(s3_batch_status_t *s, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void status_set(s3_batch_status_t *s, const char *code, const char *fmt, ...)
{
    snprintf(s->code, sizeof s->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
}

/* The request's token narrowed to one entry's bytes: the engine never moves a byte outside
 * [base + off, base + off + len). */
static void sub_token(const xfer_token_arg_t *a, const s3_batch_entry_t *e, xfer_token_arg_t *out)
{
    *out = *a;
    out->tok.base += e->off;
    out->tok.size = e->len;
    if (out->tok.dialect == XFER_TOKEN_DIALECT_CUDA1)
        out->tok.cuda_off += e->off;
}

/* The local files of a composed object, in order (*out malloc'd). */
static wh_status_t extents(data_reader_t *rd, uint64_t len, rdma_extent_t **out, size_t *n)
{
    rdma_extent_t *e = NULL;
    size_t cnt = 0;
    for (uint64_t off = 0; off < len;) {
        int fd;
        uint64_t foff, avail;
        wh_status_t st = store_reader_extent(rd, off, &fd, &foff, &avail);
        rdma_extent_t *ne = st == WH_OK ? realloc(e, (cnt + 1) * sizeof *e) : NULL;
        if (!ne) {
            free(e);
            return st == WH_OK ? WH_ERR_NOMEM : st;
        }
        e = ne;
        uint64_t k = WH_MIN(avail, len - off);
        e[cnt++] = (rdma_extent_t){.fd = fd, .off = foff, .len = k};
        off += k;
    }
    *out = e;
    *n = cnt;
    return WH_OK;
}

/* GET: the keys of a batch are opened and authorized a group at a time (their files stay
 * open until the group's bytes have moved); the objects of a group whose slots follow one
 * another in the region (each object filling its slot up to the next) move as one transfer,
 * one pipeline of the engine over all their files, instead of one per key. */
#define BATCH_GET_GROUP 256
#define BATCH_RUN_MAX (256ull << 20)

typedef struct get_slot {
    size_t i; /* the entry */
    uint64_t off, size;
    int fd;
    data_reader_t *rd;
    uint64_t stored; /* the object's stored crc64nvme, when has_stored */
    bool has_stored;
} get_slot_t;

static void slot_close(get_slot_t *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    store_reader_close(g->rd);
    g->rd = NULL;
}

/* Opens and authorizes one GET entry: true when its bytes are to move (g open), else its
 * status is in s (found empty, missing, refused ...). */
static bool get_prep(front_req_t *r, const s3_batch_entry_t *e, s3_batch_status_t *s, get_slot_t *g)
{
    s3h_out_t ko;
    memset(&ko, 0, sizeof ko);
    const char *b = s3h_b(r);
    g->fd = -1;
    g->rd = NULL;
    if (!store_key_valid(e->key, strlen(e->key))) {
        status_set(s, "InvalidArgument", "not a valid object key");
        return false;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    store_read_args_t ra = {.bucket = b, .key = e->key};
    wh_status_t st = store_object_open(s3h_st(r), &ra, &m, &g->fd);
    if (st == WH_ERR_UNSUPPORTED)
        st = store_object_reader(s3h_st(r), &ra, &m, &g->rd);
    bool go = false;
    if (st == WH_ERR_NOT_FOUND) {
        /* As GetObject alone: who may not list the bucket does not learn the key is absent. */
        if (s3h_authz_other(r, &ko, "s3:GetObject", b, e->key, NULL) ||
            s3h_authz_other(r, &ko, "s3:ListBucket", b, NULL, NULL))
            status_from(s, &ko, "AccessDenied");
        else
            status_set(s, "NoSuchKey", "The specified key does not exist.");
    } else if (st != WH_OK) {
        status_set(s, "InternalError", "opening the object: %s", wh_status_str(st));
    } else if (s3h_authz_other(r, &ko, "s3:GetObject", b, e->key, &m)) {
        status_from(s, &ko, "AccessDenied");
    } else if (m.sse) {
        status_set(s, "NotImplemented",
                   "the object is encrypted at rest; batches do not serve encrypted objects: "
                   "GET it alone");
    } else if (m.size > e->len) {
        status_set(s, "InvalidArgument",
                   "the object is %" PRIu64 " bytes; its entry holds %" PRIu64, m.size, e->len);
    } else {
        s->size = m.size;
        s->has_crc = true;
        s->crc64nvme = 0; /* an empty object: nothing moves */
        snprintf(s->etag, sizeof s->etag, "%s", m.etag);
        snprintf(s->code, sizeof s->code, "OK");
        g->off = e->off;
        g->size = m.size;
        g->has_stored = m.crc64nvme[0] && wh_crc64nvme_from_b64(m.crc64nvme, &g->stored) == 0;
        go = m.size > 0;
    }
    data_obj_meta_free(&m);
    if (!go)
        slot_close(g);
    return go;
}

/* Moves the objects of v[0..k), whose slots follow one another from v[0]->off, as one
 * transfer. Each key's crc64nvme is of exactly its bytes: the transfer's own for one key;
 * for several, the stored ones, once their combination equals the transfer's (else the keys
 * move again one by one, each with its own). */
static wh_status_t run_xfer(front_req_t *r, get_slot_t **v, size_t k, s3_batch_status_t *sv,
                            rdma_result_t *res)
{
    rdma_extent_t *ext = NULL;
    size_t n = 0;
    uint64_t total = 0;
    wh_status_t st = WH_OK;
    for (size_t j = 0; j < k && st == WH_OK; j++) {
        total += v[j]->size;
        rdma_extent_t *more = NULL;
        size_t nm = 1;
        rdma_extent_t one = {.fd = v[j]->fd, .off = 0, .len = v[j]->size};
        if (v[j]->rd && (st = extents(v[j]->rd, v[j]->size, &more, &nm)) != WH_OK)
            break;
        if (nm == 0) { /* no extent: nothing of this object to move (not reached: size > 0) */
            free(more);
            continue;
        }
        rdma_extent_t *ne = realloc(ext, (n + nm) * sizeof *ext);
        if (!ne) {
            free(more);
            st = WH_ERR_NOMEM;
            break;
        }
        ext = ne;
        memcpy(ext + n, more ? more : &one, nm * sizeof *ext);
        n += nm;
        free(more);
    }
    if (st != WH_OK) {
        free(ext);
        *res = (rdma_result_t){.http_status = 500,
                               .s3_code = "InternalError",
                               .message = "cannot map the objects' files"};
        return st;
    }
    s3_batch_entry_t span = {.off = v[0]->off, .len = total};
    xfer_token_arg_t sub;
    sub_token(&r->token, &span, &sub);
    memset(res, 0, sizeof *res);
    st = rdma_get_extents(r->srv->rdma, &sub, &r->peer, ext, n, res);
    free(ext);
    if (st == WH_OK && res->bytes != total) {
        snprintf(res->message, sizeof res->message,
                 "short RDMA transfer: %" PRIu64 " of %" PRIu64 " bytes", res->bytes, total);
        res->http_status = 500;
        res->s3_code = "InternalError";
        st = WH_ERR_TRANSPORT;
    }
    if (st != WH_OK)
        return st;
    if (k == 1) {
        sv[v[0]->i].crc64nvme = res->crc64nvme;
        return WH_OK;
    }
    uint64_t acc = 0;
    for (size_t j = 0; j < k; j++)
        acc = j ? wh_crc64nvme_combine(acc, v[j]->stored, v[j]->size) : v[j]->stored;
    if (acc == res->crc64nvme) {
        for (size_t j = 0; j < k; j++)
            sv[v[j]->i].crc64nvme = v[j]->stored;
        return WH_OK;
    }
    wh_warn(MOD,
            "rdma batch id=%s: %zu keys' stored crc64nvme do not combine to the bytes "
            "moved; moving them one by one",
            r->id, k);
    for (size_t j = 0; j < k && st == WH_OK; j++)
        st = run_xfer(r, &v[j], 1, sv, res);
    return st;
}

static int cmp_slot(const void *a, const void *b)
{
    const get_slot_t *x = *(const get_slot_t *const *)a, *y = *(const get_slot_t *const *)b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

/* One group of GET entries [lo, hi): WH_OK with every key's status in sv, or the transport's
 * failure with res filled (the request fails). */
static wh_status_t get_group(front_req_t *r, const s3_batch_t *bt, size_t lo, size_t hi,
                             s3_batch_status_t *sv, rdma_result_t *res)
{
    get_slot_t g[BATCH_GET_GROUP];
    get_slot_t *v[BATCH_GET_GROUP];
    size_t k = 0;
    for (size_t i = lo; i < hi; i++) {
        g[k].i = i;
        if (get_prep(r, &bt->e[i], &sv[i], &g[k])) {
            v[k] = &g[k];
            k++;
        }
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): v holds pointers */
    qsort(v, k, sizeof *v, cmp_slot);
    wh_status_t st = WH_OK;
    for (size_t a = 0; a < k && st == WH_OK;) {
        size_t z = a + 1;
        uint64_t bytes = v[a]->size;
        while (z < k && v[z - 1]->has_stored && v[z]->has_stored &&
               v[z - 1]->off + v[z - 1]->size == v[z]->off && bytes + v[z]->size <= BATCH_RUN_MAX)
            bytes += v[z++]->size;
        st = run_xfer(r, &v[a], z - a, sv, res);
        a = z;
    }
    for (size_t j = 0; j < k; j++)
        slot_close(v[j]);
    return st;
}

static wh_status_t put_sink(void *arg, const void *p, size_t n)
{
    return store_writer_write(arg, p, n);
}

/* PUT: each key is authorized and given its writer on the request's thread (authorization,
 * layout, encryption), a group at a time; then the group's keys move and commit on a few
 * threads at once: each its transfer into its writer (the MD5 and CRCs of its bytes on the
 * way) and a PutObject's commit (fsync, rename, the metadata transaction), so that the
 * digests use every core and the disk's flushes overlap instead of queueing one behind the
 * other. */
#define BATCH_PUT_GROUP 256
#define BATCH_PUT_THREADS 32

typedef struct put_job {
    front_req_t *r;    /* read only off the request's thread: the engine, token, peer */
    store_writer_t *w; /* ready to move, then to commit; NULL: the status is final */
    const char *bucket;
    const s3_batch_entry_t *e;
    s3_batch_status_t *s;
    const data_obj_meta_t *lock;
    const char *owner;
    data_obj_meta_t m;
    wh_status_t st; /* the transfer's failure (the request fails), with res */
    rdma_result_t res;
} put_job_t;

typedef struct put_group {
    put_job_t *jobs;
    size_t n;
    _Atomic size_t next;
    atomic_bool failed;
} put_group_t;

/* Readies one PUT entry on the request's thread: j->w set, or the key's status in j->s. */
static void put_prepare(front_req_t *r, put_job_t *j)
{
    const s3_batch_entry_t *e = j->e;
    s3_batch_status_t *s = j->s;
    s3h_out_t ko;
    memset(&ko, 0, sizeof ko);
    if (!store_key_valid(e->key, strlen(e->key))) {
        status_set(s, "InvalidArgument", "not a valid object key");
        return;
    }
    if (s3h_authz_other(r, &ko, "s3:PutObject", j->bucket, e->key, NULL)) {
        status_from(s, &ko, "AccessDenied");
        return;
    }
    store_writer_t *w = NULL;
    wh_status_t st = store_writer_open(s3h_st(r), &w);
    if (st != WH_OK) {
        status_set(s, "InternalError", "opening a temp file: %s", wh_status_str(st));
        return;
    }
    /* The bucket's layout and default encryption, as PutObject (both act on r->w). */
    r->w = w;
    int rc = s3api_put_layout(r, &ko);
    if (!rc)
        rc = s3h_sse_writer(r, &ko, false);
    w = r->w;
    r->w = NULL;
    if (rc) {
        store_writer_abort(w);
        status_from(s, &ko, "InternalError");
        return;
    }
    j->w = w;
}

/* Moves one readied key's bytes into its writer and commits it as a PutObject would (durable
 * before it is answered). A failed transfer sets j->st and j->res. */
static void put_move(put_job_t *j)
{
    const s3_batch_entry_t *e = j->e;
    s3_batch_status_t *s = j->s;
    store_writer_t *w = j->w;
    rdma_result_t *res = &j->res;
    xfer_token_arg_t sub;
    sub_token(&j->r->token, e, &sub);
    memset(res, 0, sizeof *res);
    wh_status_t st = rdma_put_tok(j->r->srv->rdma, &sub, &j->r->peer, put_sink, w, res);
    if (st == WH_OK && (res->bytes != e->len || store_writer_size(w) != e->len ||
                        store_writer_crc64nvme(w) != res->crc64nvme)) {
        snprintf(res->message, sizeof res->message,
                 "the transport reported %" PRIu64 " bytes of key '%.100s' but %" PRIu64
                 " reached the store",
                 res->bytes, e->key, store_writer_size(w));
        res->http_status = 500;
        res->s3_code = "InternalError";
        st = WH_ERR_TRANSPORT;
    }
    if (st != WH_OK) {
        store_writer_abort(w);
        j->w = NULL;
        j->st = st;
        return;
    }
    data_obj_meta_t *m = &j->m;
    m->lock_mode = j->lock->lock_mode;
    m->lock_until = j->lock->lock_until;
    m->legal_hold = j->lock->legal_hold;
    snprintf(m->content_type, sizeof m->content_type, "binary/octet-stream");
    snprintf(m->owner, sizeof m->owner, "%s", j->owner);
    char md5[33];
    store_writer_md5_hex(w, md5);
    snprintf(m->etag, sizeof m->etag, "%s", md5);
    char c64[13];
    wh_crc64nvme_b64(res->crc64nvme, c64);
    snprintf(m->crc64nvme, sizeof m->crc64nvme, "%s", c64);
    uint64_t crc = res->crc64nvme;
    data_cond_t cond;
    memset(&cond, 0, sizeof cond);
    if (e->if_none_match)
        cond.kind = DATA_COND_ABSENT;
    st = store_writer_commit(
        w, &(store_commit_args_t){.bucket = j->bucket, .key = e->key, .cond = &cond}, m);
    j->w = NULL; /* consumed either way */
    if (st == WH_OK) {
        snprintf(s->code, sizeof s->code, "OK");
        s->size = e->len;
        s->crc64nvme = crc;
        s->has_crc = true;
        snprintf(s->etag, sizeof s->etag, "%s", m->etag);
    } else if (cond.failed) {
        status_set(s, "PreconditionFailed",
                   "At least one of the pre-conditions you specified did not hold (the key has "
                   "an object)");
    } else if (st == WH_ERR_NOT_FOUND) {
        status_set(s, "NoSuchBucket", "The specified bucket does not exist");
    } else {
        status_set(s, "InternalError", "committing the object: %s", wh_status_str(st));
    }
}

static void *put_worker(void *arg)
{
    put_group_t *g = arg;
    size_t i;
    while (!atomic_load(&g->failed) && (i = atomic_fetch_add(&g->next, 1)) < g->n) {
        put_job_t *j = &g->jobs[i];
        if (!j->w)
            continue;
        put_move(j);
        if (j->st != WH_OK)
            atomic_store(&g->failed, true); /* the request fails: start no other key */
    }
    return NULL;
}

/* One group of PUT entries [lo, hi); as get_group. */
static wh_status_t put_group(front_req_t *r, const s3_batch_t *bt, size_t lo, size_t hi,
                             const data_obj_meta_t *lock, s3_batch_status_t *sv, rdma_result_t *res)
{
    size_t n = hi - lo, ready = 0;
    put_job_t *jobs = calloc(n, sizeof *jobs);
    if (!jobs) {
        *res = (rdma_result_t){.http_status = 500,
                               .s3_code = "InternalError",
                               .message = "out of memory staging the batch"};
        return WH_ERR_NOMEM;
    }
    const char *owner = s3h_owner_stored(r);
    for (size_t k = 0; k < n; k++) {
        jobs[k] = (put_job_t){.r = r,
                              .bucket = s3h_b(r),
                              .e = &bt->e[lo + k],
                              .s = &sv[lo + k],
                              .lock = lock,
                              .owner = owner};
        put_prepare(r, &jobs[k]);
        ready += jobs[k].w != NULL;
    }
    put_group_t g = {.jobs = jobs, .n = n};
    pthread_t th[BATCH_PUT_THREADS];
    unsigned nth = 0;
    for (; nth < BATCH_PUT_THREADS && nth + 1 < ready; nth++)
        if (pthread_create(&th[nth], NULL, put_worker, &g) != 0)
            break;
    put_worker(&g);
    for (unsigned t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    wh_status_t st = WH_OK;
    for (size_t k = 0; k < n; k++) {
        if (jobs[k].st != WH_OK && st == WH_OK) {
            st = jobs[k].st;
            *res = jobs[k].res;
        }
        if (jobs[k].w)
            store_writer_abort(jobs[k].w); /* a failed request commits nothing more */
        data_obj_meta_free(&jobs[k].m);
    }
    free(jobs);
    return st;
}

int s3api_batch_finish(front_req_t *r, s3h_out_t *o)
{
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    if (!rdma_check_tok(r->srv->rdma, &r->token, &r->peer, 0, &res))
        return s3api_rdma_refuse(r, o, &res, WH_ERR_INVALID);
    s3_batch_t b;
    char err[400];
    if (s3_batch_parse(r->buf.data ? r->buf.data : "", r->buf.len, r->token.tok.size, &b, err,
                       sizeof err) != 0)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, err);
    s3_batch_status_t *sv = calloc(b.n, sizeof *sv);
    if (!sv) {
        s3_batch_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory answering the batch");
    }
    int ret = 0;
    data_obj_meta_t lock;
    memset(&lock, 0, sizeof lock);
    /* The bucket's default retention, as each PutObject would take it (no lock headers:
     * refuse_unbuilt refuses them on a batch). */
    if (b.op == S3_BATCH_PUT && (ret = s3h_lock_from_request(r, o, &lock)))
        goto done;
    uint64_t t0 = wh_now_ns(), bytes = 0;
    size_t ok = 0;
    size_t step = b.op == S3_BATCH_GET ? BATCH_GET_GROUP : BATCH_PUT_GROUP;
    for (size_t i = 0; i < b.n; i += step) {
        size_t hi = WH_MIN(b.n, i + step);
        wh_status_t st = b.op == S3_BATCH_GET ? get_group(r, &b, i, hi, sv, &res)
                                              : put_group(r, &b, i, hi, &lock, sv, &res);
        if (st != WH_OK) {
            wh_warn(MOD, "rdma batch failed id=%s entries=[%zu, %zu) of %zu", r->id, i, hi, b.n);
            ret = s3api_rdma_refuse(r, o, &res, st);
            goto done;
        }
    }
    for (size_t i = 0; i < b.n; i++)
        if (strcmp(sv[i].code, "OK") == 0) {
            ok++;
            bytes += sv[i].size;
        }
    wh_sbuf_t body;
    wh_sbuf_init(&body);
    s3_batch_reply_head(b.n, &body);
    for (size_t i = 0; i < b.n; i++)
        s3_batch_reply_line(i, &sv[i], &body);
    if (body.oom) {
        wh_sbuf_free(&body);
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory answering the batch");
        goto done;
    }
    wh_debug(MOD, "rdma batch id=%s op=%s keys=%zu ok=%zu bytes=%" PRIu64 " ms=%.3f", r->id,
             b.op == S3_BATCH_GET ? "GET" : "PUT", b.n, ok, bytes,
             (double)(wh_now_ns() - t0) / 1e6);
    size_t n = body.len;
    struct MHD_Response *resp = front_resp_buffer(wh_sbuf_steal(&body), n);
    if (!resp) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory answering the batch");
        goto done;
    }
    s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
    s3h_out_header(o, "x-amz-rdma-reply", "200");
    s3h_out_header_u64(o, "x-amz-rdma-bytes-transferred", bytes);
    ret = s3h_ok_resp(o, 200, resp, n);
done:
    data_obj_meta_free(&lock);
    free(sv);
    s3_batch_free(&b);
    return ret;
}
