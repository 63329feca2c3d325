/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak's well-behaved clients: each owns keys it writes (PUT, multipart), reads back
 * and checks byte for byte, reads others' keys, ranges, stats, deletes and lists. */
#include "soak.h"

/* ---- a well-behaved client ----------------------------------------------------------------- */

static void sk_lat_add(sk_lat_t *l, double s)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 1024;
        double *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = s;
}

typedef struct sk_buf {
    uint8_t *p;
    uint64_t len, mapped, charged;
    wharf_mem_t *mr;
} sk_buf_t;

static int sk_buf_get(sk_client_t *cl, uint64_t len, sk_buf_t *b)
{
    memset(b, 0, sizeof *b);
    b->charged = sk_mem_take(len);
    b->len = len;
    b->mapped = len ? len : 1;
    /* Prefaulted, as registration pins (and so faults in) memory on an RDMA NIC. Without it,
     * tcp;ofi_rxm's recv faulted the pages in one by one inside the client's progress calls,
     * and with 64 threads mapping and unmapping buffers each fault waited for this process's
     * mmap lock behind their munmaps: on the loaded 2-core VM progress calls blocked for up to
     * 8.7 s (xfer's "client progress call blocked" log; 1,379 in a 10-minute run, 1 with this),
     * and one past wharfd's 10 s inactivity timeout failed its transfer (504). */
    b->p = mmap(NULL, b->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                -1, 0);
    if (b->p == MAP_FAILED) {
        sk_mem_give(b->charged);
        b->p = NULL;
        return -1;
    }
    if (cl->transport == WHARF_TRANSPORT_RDMA) {
        wharf_status_t st = wharf_mem_register(cl->c, b->p, b->mapped, WHARF_MEM_HOST, &b->mr);
        if (st != WHARF_OK) {
            sk_error("register", "-", st, wharf_last_error());
            munmap(b->p, b->mapped);
            sk_mem_give(b->charged);
            b->p = NULL;
            return -1;
        }
    }
    return 0;
}

static void sk_buf_put(sk_buf_t *b)
{
    if (!b->p)
        return;
    wharf_mem_deregister(b->mr);
    munmap(b->p, b->mapped);
    sk_mem_give(b->charged);
    b->p = NULL;
}

static wharf_xfer_opts_t sk_opts(const sk_client_t *cl)
{
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = cl->transport;
    return o;
}

/* 503 SlowDown is an answer a well-behaved S3 client retries with backoff, as the SDKs do;
 * it counts as an error only when it persists. */
#define SK_RETRY_BUSY(st, call)                                                                    \
    do {                                                                                           \
        for (unsigned a_ = 0;; a_++) {                                                             \
            (st) = (call);                                                                         \
            if ((st) != WHARF_ERR_BUSY || a_ >= 8 || atomic_load(&g_stop))                         \
                break;                                                                             \
            atomic_fetch_add(&g_busy_retries, 1);                                                  \
            usleep((useconds_t)(WB_MIN(1000u, 25u << a_) * 1000u));                                \
        }                                                                                          \
    } while (0)

/* The report of a transfer that succeeded must say the bytes moved the way asked for. */
static int sk_report_ok(const sk_client_t *cl, const wharf_report_t *r, uint64_t bytes,
                        const char *op, const char *key)
{
    char msg[512];
    if (r->bytes != bytes) {
        snprintf(msg, sizeof msg, "report bytes %" PRIu64 ", wanted %" PRIu64, r->bytes, bytes);
        sk_error(op, key, WHARF_ERR_PROTOCOL, msg);
        return 0;
    }
    if (bytes > 0 && cl->transport == WHARF_TRANSPORT_RDMA &&
        (r->transport != WHARF_TRANSPORT_RDMA || r->fell_back)) {
        snprintf(msg, sizeof msg, "asked for RDMA, report says transport %d fell_back %d (%s)",
                 (int)r->transport, r->fell_back, r->fallback_reason);
        sk_error(op, key, WHARF_ERR_PROTOCOL, msg);
        return 0;
    }
    return 1;
}

static unsigned sk_own_key(sk_client_t *cl)
{
    return cl->id * P.keys_per_client + (unsigned)(sk_rand(&cl->rng) % P.keys_per_client);
}

static void sk_do_put(sk_client_t *cl, unsigned ki, uint64_t size, const char *op)
{
    sk_key_t *k = &g_keys[ki];
    sk_buf_t b;
    if (sk_buf_get(cl, size, &b) != 0)
        return;
    uint64_t v = sk_begin_write(k, size, 0);
    sk_fill(b.p, size, sk_seed(ki, v));
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_put(cl->c, P.bucket, k->name, b.p, size, &o, &r));
    if (st != WHARF_OK)
        sk_error(op, k->name, st, wharf_last_error());
    else if (sk_report_ok(cl, &r, size, op, k->name)) {
        sk_commit(k, v);
        atomic_fetch_add(&g_bytes_put, size);
    }
    sk_buf_put(&b);
}

static void sk_do_delete(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t v = sk_begin_write(k, 0, 1);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_delete(cl->c, P.bucket, k->name));
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND)
        sk_commit(k, v);
    else
        sk_error("delete", k->name, st, wharf_last_error());
}

/* Judges the n bytes a read landed at offset off against the candidate versions; a range
 * read of want bytes returns min(want, size-off) bytes of the version it hit. */
static void sk_judge(const char *op, unsigned ki, const uint8_t *p, uint64_t n, uint64_t off,
                     uint64_t want, wharf_status_t st, const sk_ver_t *cand, unsigned nc)
{
    sk_key_t *k = &g_keys[ki];
    if (nc == 0) {
        atomic_fetch_add(&g_unchecked_reads, 1);
        return;
    }
    if (st == WHARF_ERR_NOT_FOUND) {
        for (unsigned i = 0; i < nc; i++)
            if (cand[i].deleted)
                return;
        sk_wrong_record(op, k->name, "404 for a key that exists", 0);
        return;
    }
    if (st == WHARF_ERR_RANGE) { /* a range at or past the end: only when a version is short */
        for (unsigned i = 0; i < nc; i++)
            if (!cand[i].deleted && cand[i].size <= off)
                return;
        sk_wrong_record(op, k->name, "416 for a range inside every version", 0);
        return;
    }
    uint64_t best = UINT64_MAX;
    for (unsigned i = 0; i < nc; i++) {
        if (cand[i].deleted || cand[i].size < off)
            continue;
        uint64_t expect = WB_MIN(want, cand[i].size - off);
        if (expect != n)
            continue;
        uint64_t bad = sk_wrong(p, n, sk_seed(ki, cand[i].ver), off);
        if (bad == 0)
            return;
        if (bad < best)
            best = bad;
    }
    char what[160];
    if (best == UINT64_MAX) {
        snprintf(what, sizeof what,
                 "%" PRIu64 " bytes at offset %" PRIu64
                 " match no valid version's length (versions %" PRIu64 "..%" PRIu64 ")",
                 n, off, cand[0].ver, cand[nc - 1].ver);
        sk_wrong_record(op, k->name, what, n ? n : 1);
    } else {
        snprintf(what, sizeof what,
                 "%" PRIu64 " of %" PRIu64 " bytes at offset %" PRIu64
                 " differ from every valid version",
                 best, n, off);
        sk_wrong_record(op, k->name, what, best);
    }
}

/* A GET of the whole object by its owner (no writer races it: it is the writer). */
static void sk_do_get_own(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    uint64_t cap = 0;
    for (unsigned i = 0; i < nc; i++)
        cap = WB_MAX(cap, cand[i].size);
    sk_buf_t b;
    if (sk_buf_get(cl, cap, &b) != 0)
        return;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, cap, 0, WHARF_WHOLE, &o, &r));
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "get", k->name))
        goto out;
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND) {
        if (st == WHARF_OK)
            atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("get", ki, b.p, r.bytes, 0, UINT64_MAX, st, cand, nc);
    } else if (st == WHARF_ERR_TOO_LARGE) {
        sk_wrong_record("get", k->name, "object larger than every valid version", 1);
    } else {
        sk_error("get", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
}

/* A read of another client's key while its owner may be overwriting or deleting it: one
 * ranged GET of [0, cap) (atomic: one request sees one version), judged against every version
 * from the one committed at the start to the newest one started by the end. */
static void sk_do_get_other(sk_client_t *cl)
{
    unsigned ki = (unsigned)(sk_rand(&cl->rng) % g_nkeys);
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand0[SK_RING];
    unsigned nc0 = sk_candidates(k, c, cand0);
    uint64_t cap = 1;
    for (unsigned i = 0; i < nc0; i++)
        cap = WB_MAX(cap, cand0[i].size);
    sk_buf_t b;
    if (sk_buf_get(cl, cap, &b) != 0)
        return;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, cap, 0, cap, &o, &r));
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "get_other", k->name))
        goto out;
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND || st == WHARF_ERR_RANGE) {
        if (st == WHARF_OK)
            atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("get_other", ki, b.p, r.bytes, 0, cap, st, cand, nc);
    } else {
        sk_error("get_other", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
}

/* Returns 0 when the key had nothing to range over and was written instead. */
static int sk_do_range(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    if (nc != 1 || cand[0].deleted || cand[0].size == 0) { /* nothing to range: write it */
        sk_do_put(cl, ki, sk_size(&cl->rng, P.max_size), "put");
        return 0;
    }
    uint64_t size = cand[0].size;
    uint64_t off = sk_between(&cl->rng, 0, size - 1);
    uint64_t len = sk_between(&cl->rng, 1, WB_MIN(size - off + 4096, 4 * WB_MIB));
    sk_buf_t b;
    if (sk_buf_get(cl, len, &b) != 0)
        return 1;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, len, off, len, &o, &r));
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "range_get", k->name))
        goto out;
    if (st == WHARF_OK) {
        atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("range_get", ki, b.p, r.bytes, off, len, st, cand, nc);
    } else if (st == WHARF_ERR_NOT_FOUND) {
        sk_judge("range_get", ki, b.p, 0, off, len, st, cand, nc);
    } else {
        sk_error("range_get", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
    return 1;
}

static void sk_do_stat(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_stat(cl->c, P.bucket, k->name, &s));
    if (st != WHARF_OK && st != WHARF_ERR_NOT_FOUND) {
        sk_error("head", k->name, st, wharf_last_error());
        return;
    }
    for (unsigned i = 0; i < nc; i++)
        if ((st == WHARF_ERR_NOT_FOUND && cand[i].deleted) ||
            (st == WHARF_OK && !cand[i].deleted && cand[i].size == s.length))
            return;
    char what[128];
    snprintf(what, sizeof what, "HEAD says %s, length %" PRIu64 ": no valid version",
             st == WHARF_OK ? "present" : "absent", s.length);
    sk_wrong_record("head", k->name, what, 0);
}

typedef struct sk_list_acc {
    const char *names[1024];
    uint64_t len[1024];
    unsigned n, overflow;
    char *store;
    size_t used, cap;
} sk_list_acc_t;

static int sk_list_cb(void *arg, const char *key, uint64_t length, int64_t mtime, const char *etag)
{
    sk_list_acc_t *a = arg;
    size_t kl = strlen(key) + 1;
    if (a->n >= 1024 || a->used + kl > a->cap) {
        a->overflow++;
        return 0;
    }
    memcpy(a->store + a->used, key, kl);
    a->names[a->n] = a->store + a->used;
    a->len[a->n++] = length;
    a->used += kl;
    return 0;
}

/* LIST of the client's own prefix: exactly its live keys, with their lengths. */
static void sk_do_list(sk_client_t *cl)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "c%03u/", cl->id);
    sk_list_acc_t *a = calloc(1, sizeof *a);
    if (!a || !(a->store = malloc(a->cap = 100 << 10))) {
        free(a);
        return;
    }
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_list(cl->c, P.bucket, prefix, sk_list_cb, a));
    if (st != WHARF_OK) {
        sk_error("list", prefix, st, wharf_last_error());
        free(a->store);
        free(a);
        return;
    }
    unsigned seen = 0;
    for (unsigned j = 0; j < P.keys_per_client; j++) {
        unsigned ki = cl->id * P.keys_per_client + j;
        sk_key_t *k = &g_keys[ki];
        uint64_t latest, c = sk_committed(k, &latest);
        sk_ver_t cand[SK_RING];
        unsigned nc = sk_candidates(k, c, cand);
        int found = -1;
        for (unsigned i = 0; i < a->n; i++)
            if (!strcmp(a->names[i], k->name)) {
                found = (int)i;
                break;
            }
        seen += found >= 0;
        int ok = 0;
        for (unsigned i = 0; i < nc && !ok; i++)
            ok = found < 0 ? cand[i].deleted : !cand[i].deleted && cand[i].size == a->len[found];
        if (!ok && nc) {
            char what[160];
            snprintf(what, sizeof what, "LIST %s: %s", prefix,
                     found < 0 ? "a live key is missing" : "wrong length or a deleted key listed");
            sk_wrong_record("list", k->name, what, 0);
        }
    }
    if (seen != a->n)
        sk_wrong_record("list", prefix, "LIST names keys that were never written", 0);
    free(a->store);
    free(a);
}

static void sk_client_op(sk_client_t *cl)
{
    unsigned w = (unsigned)(sk_rand(&cl->rng) % 100), op = 0, acc = 0;
    for (op = 0; op < SK_OP_N; op++) {
        acc += sk_op_weight[op];
        if (w < acc)
            break;
    }
    if (op >= SK_OP_N)
        op = SK_GET;
    double t = wb_now();
    switch (op) {
    case SK_PUT:
        sk_do_put(cl, sk_own_key(cl), sk_size(&cl->rng, P.max_size), "put");
        break;
    case SK_MPU:
        if (P.max_size < SK_MPU_THRESHOLD) {
            op = SK_PUT;
            sk_do_put(cl, sk_own_key(cl), sk_size(&cl->rng, P.max_size), "put");
        } else {
            sk_do_put(cl, sk_own_key(cl),
                      sk_between(&cl->rng, SK_MPU_THRESHOLD, WB_MIN(P.max_size, 3 * SK_PART)),
                      "multipart_put");
        }
        break;
    case SK_GET:
        sk_do_get_own(cl, sk_own_key(cl));
        break;
    case SK_GET_OTHER:
        sk_do_get_other(cl);
        break;
    case SK_RANGE:
        if (!sk_do_range(cl, sk_own_key(cl)))
            op = SK_PUT;
        break;
    case SK_STAT:
        sk_do_stat(cl, sk_own_key(cl));
        break;
    case SK_DELETE:
        sk_do_delete(cl, sk_own_key(cl));
        break;
    default:
        sk_do_list(cl);
        break;
    }
    cl->ops[op]++;
    sk_lat_add(&cl->lat[op], wb_now() - t);
    atomic_fetch_add(&g_ops_total, 1);
}

void *sk_client_main(void *arg)
{
    sk_client_t *cl = arg;
    while (!atomic_load(&g_stop)) {
        sk_client_op(cl);
        if (P.think_ms)
            usleep((useconds_t)sk_between(&cl->rng, P.think_ms / 2, P.think_ms * 3 / 2) * 1000);
    }
    if (P.inject_wrong && cl->id == 0) { /* one byte off in a version published as valid */
        unsigned ki = 0;
        sk_key_t *k = &g_keys[ki];
        uint64_t v = sk_begin_write(k, 4096, 0);
        uint8_t *p = malloc(4096);
        sk_fill(p, 4096, sk_seed(ki, v));
        p[1234] ^= 0x20;
        wharf_xfer_opts_t o;
        wharf_xfer_opts_init(&o, sizeof o);
        o.transport = WHARF_TRANSPORT_HTTP;
        if (wharf_object_put(cl->c, P.bucket, k->name, p, 4096, &o, NULL) == WHARF_OK)
            sk_commit(k, v);
        free(p);
    }
    /* the last word: every key this client owns reads back as its committed version */
    for (unsigned j = 0; j < P.keys_per_client; j++)
        sk_do_get_own(cl, cl->id * P.keys_per_client + j);
    return NULL;
}

wharf_client_t *sk_new_client(const char *provider, char *err, size_t errlen)
{
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    cfg.endpoint = P.endpoint;
    cfg.access_key = P.ak;
    cfg.secret_key = P.sk;
    cfg.region = P.region;
    cfg.provider = provider;
    cfg.unix_socket = !strcmp(provider, "ofi+shm") ? P.unix_socket : NULL;
    cfg.multipart_threshold = SK_MPU_THRESHOLD;
    cfg.part_size = SK_PART;
    cfg.concurrency = 2;
    cfg.timeout_ms = P.op_timeout_ms;
    wharf_client_t *c = NULL;
    wharf_status_t st = wharf_client_create(&cfg, &c);
    if (st != WHARF_OK) {
        snprintf(err, errlen, "%s client: %s: %s", provider, wharf_status_str(st),
                 wharf_last_error());
        return NULL;
    }
    return c;
}
