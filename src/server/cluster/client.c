/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's chunk client over libcurl multi (see client.h). */
#include "cluster/client.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "cclient"
#define TOKEN_LIFE_S 60

/* What one storage server's requests took lately (rtt.h), by request kind. */
typedef struct cl_node_est {
    uint32_t id;
    cl_rtt_t op[CL_OP_RPUT + 1];
    uint64_t timeouts;
    uint64_t last_timeout_ms; /* wh_now_ns clock; 0: never */
    bool answered;            /* a request succeeded after the last timeout */
} cl_node_est_t;

struct cl_client {
    char *secret;
    char *ca_file; /* NULL: storage servers speak plain HTTP; else HTTPS verified with it */
    size_t secret_len;
    CURLSH *share; /* the DNS cache only: libcurl does not support sharing connections
                    * between concurrent threads (CURLSHOPT_SHARE), and a 16-core gateway
                    * crashed in curl_multi_perform when it did */
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    /* Idle multi handles, each keeping the connections its last run opened: a run takes one
     * (or makes one), so a connection is only ever used by the thread that holds its multi. */
    pthread_mutex_t mpool_lock;
    CURLM **mpool;
    size_t n_mpool, cap_mpool;
    _Atomic uint64_t requests, failures, retries, timeouts;
    _Atomic uint64_t rx_bytes, tx_bytes; /* chunk bytes received from / sent to storage */
    _Atomic uint64_t hedges, hedge_wins;
    pthread_mutex_t est_lock; /* est, n_est, cap_est */
    cl_node_est_t *est;
    size_t n_est, cap_est;
    cl_node_fail_fn on_fail;
    void *on_fail_arg;
};

void cl_client_on_node_fail(cl_client_t *c, cl_node_fail_fn fn, void *arg)
{
    c->on_fail = fn;
    c->on_fail_arg = arg;
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *arg)
{
    cl_client_t *c = arg;
    pthread_mutex_lock(&c->locks[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *arg)
{
    cl_client_t *c = arg;
    pthread_mutex_unlock(&c->locks[d]);
}

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

wh_status_t cl_client_new(const char *secret, cl_client_t **out)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    cl_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return WH_ERR_NOMEM;
    c->secret = strdup(secret);
    c->secret_len = strlen(secret);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    pthread_mutex_init(&c->est_lock, NULL);
    pthread_mutex_init(&c->mpool_lock, NULL);
    c->share = curl_share_init();
    if (!c->secret || !c->share) {
        cl_client_free(c);
        return WH_ERR_NOMEM;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    *out = c;
    return WH_OK;
}

wh_status_t cl_client_set_ca(cl_client_t *c, const char *ca_file)
{
    char *d = ca_file ? strdup(ca_file) : NULL;
    if (ca_file && !d)
        return WH_ERR_NOMEM;
    free(c->ca_file);
    c->ca_file = d;
    return WH_OK;
}

void cl_client_free(cl_client_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_mpool; i++)
        curl_multi_cleanup(c->mpool[i]);
    free(c->mpool);
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
    pthread_mutex_destroy(&c->est_lock);
    pthread_mutex_destroy(&c->mpool_lock);
    free(c->est);
    free(c->ca_file);
    free(c->secret);
    free(c);
}

void cl_client_stats(cl_client_t *c, cl_client_stats_t *out)
{
    out->requests = atomic_load(&c->requests);
    out->failures = atomic_load(&c->failures);
    out->retries = atomic_load(&c->retries);
    out->timeouts = atomic_load(&c->timeouts);
    out->rx_bytes = atomic_load(&c->rx_bytes);
    out->tx_bytes = atomic_load(&c->tx_bytes);
    out->hedges = atomic_load(&c->hedges);
    out->hedge_wins = atomic_load(&c->hedge_wins);
}

/* ---- latency estimates per storage server ---- */

static uint64_t now_ms(void)
{
    return wh_now_ns() / 1000000;
}

/* The entry of node id, made when create (NULL without memory or when absent). est_lock
 * held. */
static cl_node_est_t *est_of(cl_client_t *c, uint32_t id, bool create)
{
    for (size_t i = 0; i < c->n_est; i++)
        if (c->est[i].id == id)
            return &c->est[i];
    if (!create)
        return NULL;
    if (c->n_est == c->cap_est) {
        size_t cap = c->cap_est ? c->cap_est * 2 : 8;
        cl_node_est_t *v = realloc(c->est, cap * sizeof *v);
        if (!v)
            return NULL;
        c->est = v;
        c->cap_est = cap;
    }
    cl_node_est_t *e = &c->est[c->n_est++];
    memset(e, 0, sizeof *e);
    e->id = id;
    return e;
}

/* j's bounds against its current candidate: the whole request and no progress, ms. */
static void est_bounds(cl_client_t *c, const cl_job_t *j, uint64_t *total_ms, uint64_t *stall_ms)
{
    cl_rtt_t r = {0};
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, j->cand_id[j->_try], false);
    if (e && j->op <= CL_OP_RPUT)
        r = e->op[j->op];
    pthread_mutex_unlock(&c->est_lock);
    *total_ms = cl_rtt_timeout_ms(&r, j->len, j->_backoff);
    /* an rdec reads its stripe's K shards (in up to two rounds of internal GETs, each with
     * its own bound, when one fails) before it writes len bytes: three such bounds */
    if (j->op == CL_OP_RDEC || j->op == CL_OP_RENC)
        *total_ms = 3 * cl_rtt_timeout_ms(&r, WH_MAX(j->len, j->work), j->_backoff);
    *stall_ms = cl_rtt_timeout_ms(&r, 0, j->_backoff); /* one MiB's worth */
}

static uint64_t est_hedge_ms(cl_client_t *c, const cl_job_t *j)
{
    cl_rtt_t r = {0};
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, j->cand_id[j->_try], false);
    if (e && j->op <= CL_OP_RPUT)
        r = e->op[j->op];
    pthread_mutex_unlock(&c->est_lock);
    return cl_rtt_hedge_ms(&r, j->len);
}

static void est_answered(cl_client_t *c, const cl_job_t *j, double seconds)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        if (j->op <= CL_OP_RPUT)
            cl_rtt_sample(&e->op[j->op], j->len, seconds);
        e->answered = true;
    }
    pthread_mutex_unlock(&c->est_lock);
}

static void est_timed_out(cl_client_t *c, const cl_job_t *j)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        e->timeouts++;
        e->last_timeout_ms = now_ms();
        e->answered = false;
    }
    pthread_mutex_unlock(&c->est_lock);
}

/* j's candidate lost a hedged read: it had not answered while another replica sent the whole
 * chunk. Ranked behind the others like a server that timed out, until it answers again or
 * CL_SLOW_MS pass (not counted as a timeout: it was not one). */
static void est_late(cl_client_t *c, const cl_job_t *j)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        e->last_timeout_ms = now_ms();
        e->answered = false;
    }
    pthread_mutex_unlock(&c->est_lock);
}

bool cl_client_node_slow(cl_client_t *c, uint32_t id)
{
    uint64_t now = now_ms();
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, id, false);
    bool slow = e && e->last_timeout_ms && !e->answered && now - e->last_timeout_ms < CL_SLOW_MS;
    pthread_mutex_unlock(&c->est_lock);
    return slow;
}

void cl_client_metrics(cl_client_t *c, uint64_t ref_len, wh_sbuf_t *out)
{
    pthread_mutex_lock(&c->est_lock);
    size_t n = c->n_est;
    cl_node_est_t *v = malloc((n ? n : 1) * sizeof *v);
    if (v && n)
        memcpy(v, c->est, n * sizeof *v);
    pthread_mutex_unlock(&c->est_lock);
    if (!v)
        return;
    uint64_t now = now_ms();
    static const char *const stat[] = {"srtt", "rttvar", "timeout"};
    for (int s = 0; s < 3; s++) {
        if (s == 0)
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_srtt_seconds Smoothed time of a chunk "
                                "request per MiB (a request counts at least 1 MiB), by storage "
                                "server and request kind.\n");
        else if (s == 1)
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_rttvar_seconds Mean deviation of "
                                "wharf_cluster_node_srtt_seconds.\n");
        else
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_timeout_seconds Time bound of a chunk "
                                "request of --chunk-size bytes now (srtt + 4 rttvar, within its "
                                "floor and ceiling).\n");
        wh_sbuf_printf(out, "# TYPE wharf_cluster_node_%s_seconds gauge\n", stat[s]);
        for (size_t i = 0; i < n; i++)
            for (int op = CL_OP_GET; op <= CL_OP_RPUT; op++) {
                const cl_rtt_t *r = &v[i].op[op];
                if (!r->samples)
                    continue;
                double x = s == 0   ? r->srtt
                           : s == 1 ? r->rttvar
                                    : (double)cl_rtt_timeout_ms(r, ref_len, 0) / 1000.0;
                wh_sbuf_printf(out,
                               "wharf_cluster_node_%s_seconds{node=\"%" PRIu32 "\",op=\"%s\"} "
                               "%.6f\n",
                               stat[s], v[i].id, cl_op_name((cl_op_t)op), x);
            }
    }
    wh_sbuf_printf(out, "# HELP wharf_cluster_node_timeouts_total Chunk requests to a storage "
                        "server that were sent and timed out (it is slow: not marked down).\n"
                        "# TYPE wharf_cluster_node_timeouts_total counter\n");
    for (size_t i = 0; i < n; i++)
        wh_sbuf_printf(out, "wharf_cluster_node_timeouts_total{node=\"%" PRIu32 "\"} %" PRIu64 "\n",
                       v[i].id, v[i].timeouts);
    wh_sbuf_printf(out, "# HELP wharf_cluster_node_slow Storage servers ranked last for a "
                        "timeout they have not answered since (1).\n"
                        "# TYPE wharf_cluster_node_slow gauge\n");
    for (size_t i = 0; i < n; i++)
        wh_sbuf_printf(out, "wharf_cluster_node_slow{node=\"%" PRIu32 "\"} %d\n", v[i].id,
                       v[i].last_timeout_ms && !v[i].answered &&
                           now - v[i].last_timeout_ms < CL_SLOW_MS);
    free(v);
}

/* ---- per-request callbacks ---- */

static size_t on_write(char *p, size_t sz, size_t nm, void *arg)
{
    cl_job_t *j = arg;
    size_t n = sz * nm;
    long code = 0;
    curl_easy_getinfo(j->_easy, CURLINFO_RESPONSE_CODE, &code);
    if (j->op != CL_OP_GET || code != 200)
        return n; /* an error's text body, or a body we do not want */
    if (j->_pos + n > j->len)
        return 0; /* more than asked for: fail the transfer */
    memcpy((char *)j->dst + j->_pos, p, n);
    j->crc = wh_crc64nvme(j->crc, p, n);
    j->_pos += n;
    atomic_fetch_add(&j->_client->rx_bytes, n);
    return n;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *arg)
{
    cl_job_t *j = arg;
    size_t n = WH_MIN(sz * nm, (size_t)(j->len - j->_pos));
    memcpy(p, (const char *)j->body + j->_pos, n);
    j->_pos += n;
    atomic_fetch_add(&j->_client->tx_bytes, n);
    return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *arg)
{
    cl_job_t *j = arg;
    size_t n = sz * nm;
    char line[512]; /* x-wharf-shard-crcs: up to 16 crcs */
    if (n >= sizeof line)
        return n;
    memcpy(line, p, n);
    line[n] = '\0';
    unsigned long long v;
    if (sscanf(line, "x-wharf-bytes: %llu", &v) == 1)
        j->bytes = v;
    else if (sscanf(line, "x-wharf-crc64nvme: %llx", &v) == 1)
        j->crc = v;
    else if (strncmp(line, "x-wharf-md5: ", 13) == 0 && n >= 13 + 32 &&
             wh_hex_decode(line + 13, 32, j->md5, 16) == 0)
        j->has_md5 = true;
    else if (strncmp(line, "x-wharf-shard-crcs: ", 20) == 0) {
        /* renc: 16 hex per shard, comma-separated */
        const char *h = line + 20;
        j->n_shard_crc = 0;
        while (j->n_shard_crc < 16 && (size_t)(h - line) + 16 <= n &&
               wh_hex_u64(h, 16, &j->shard_crc[j->n_shard_crc]) == 0) {
            j->n_shard_crc++;
            if (h[16] != ',')
                break;
            h += 17;
        }
    }
    return n;
}

/* Sets up j's request against candidate j->_try. */
static wh_status_t job_start(cl_client_t *c, CURLM *m, cl_job_t *j, const wh_peer_t *peer,
                             char *errbuf)
{
    cl_itoken_t t;
    memset(&t, 0, sizeof t);
    t.op = j->op;
    snprintf(t.chunk, sizeof t.chunk, "%s", j->chunk);
    t.off = j->off;
    t.len = j->len;
    t.expires = (int64_t)time(NULL) + TOKEN_LIFE_S;
    t.peer.is_unix = peer && peer->is_unix;
    snprintf(t.peer.addr, sizeof t.peer.addr, "%s", peer && peer->addr[0] ? peer->addr : "-");
    t.peer.pid = peer ? peer->pid : 0;
    t.peer.uid = peer ? peer->uid : (unsigned)-1;
    if (j->op == CL_OP_RGET || j->op == CL_OP_RPUT || j->op == CL_OP_PUSH || j->op == CL_OP_CPUT ||
        j->op == CL_OP_RDEC || j->op == CL_OP_RENC)
        snprintf(t.mtok, sizeof t.mtok, "%s", j->mtok);
    /* Bound to the server asked, to the chunk's crc where known, and (a fresh nonce each
     * attempt) usable once. */
    snprintf(t.target, sizeof t.target, "%s", j->cand[j->_try]);
    if (j->has_chunk_crc || (j->check_crc && j->op != CL_OP_RDEC)) {
        t.has_crc = true;
        t.crc = j->has_chunk_crc ? j->chunk_crc : j->expect_crc;
    } else if (j->op == CL_OP_PUT) {
        if (!j->body && j->len)
            return WH_ERR_INVALID;
        t.has_crc = true;
        t.crc = j->len ? wh_crc64nvme(0, j->body, (size_t)j->len) : 0;
        j->has_chunk_crc = true; /* once, whatever the attempts */
        j->chunk_crc = t.crc;
    }
    char tok[CL_ITOKEN_MAX + 64] = CL_ITOKEN_HEADER ": ";
    size_t hl = strlen(tok);
    wh_status_t st = cl_itoken_sign(c->secret, c->secret_len, &t, tok + hl, sizeof tok - hl, j->err,
                                    sizeof j->err);
    if (st != WH_OK)
        return st;
    CURL *e = curl_easy_init();
    if (!e)
        return WH_ERR_NOMEM;
    struct curl_slist *h = curl_slist_append(NULL, tok);
    h = curl_slist_append(h, "Expect:");
    char url[400];
    snprintf(url, sizeof url, "%s://%s/chunk/%s", c->ca_file ? "https" : "http", j->cand[j->_try],
             j->chunk);
    curl_easy_setopt(e, CURLOPT_URL, url);
    if (c->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(e, CURLOPT_SHARE, c->share);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)CL_CONNECT_MS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    /* The bounds from what this server's requests of this kind took lately (rtt.h). "No
     * progress": below 1 byte/s for the stall bound. */
    uint64_t total_ms, stall_ms;
    est_bounds(c, j, &total_ms, &stall_ms);
    j->_timeout_ms = total_ms;
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)((stall_ms + 999) / 1000));
    /* libcurl's speed check starts late on a peer that accepted and then stopped (a SIGSTOP'd
     * server: the kernel completes the handshake and buffers the body), so a wall-clock bound
     * too. */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)total_ms);
    switch (j->op) {
    case CL_OP_GET:
        break;
    case CL_OP_PUT:
    case CL_OP_CPUT:
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, j);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)j->len);
        break;
    case CL_OP_DEL:
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
        break;
    case CL_OP_RGET:
    case CL_OP_RPUT:
    case CL_OP_PUSH:
        /* The reply comes only when the transfer is done: a wall-clock bound instead. */
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 0L);
        break;
    case CL_OP_RDEC:
    case CL_OP_RENC:
        /* the stripe's description as the body; the reply comes when the slice landed */
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->form ? j->form : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(j->form ? strlen(j->form) : 0));
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 0L);
        break;
    }
    j->_pos = 0;
    j->http = 0;
    j->bytes = 0;
    j->crc = 0;
    j->has_md5 = false;
    j->n_shard_crc = 0;
    j->timed_out = false;
    j->_easy = e;
    j->_hdrs = h;
    j->_client = c;
    j->_start_ms = now_ms();
    j->_hedge_ms = j->hedge && j->op == CL_OP_GET ? est_hedge_ms(c, j) : 0;
    j->attempts++;
    atomic_fetch_add(&c->requests, 1);
    curl_multi_add_handle(m, e);
    return WH_OK;
}

static void job_end(CURLM *m, cl_job_t *j)
{
    curl_multi_remove_handle(m, j->_easy);
    curl_easy_cleanup(j->_easy);
    curl_slist_free_all(j->_hdrs);
    j->_easy = NULL;
    j->_hdrs = NULL;
}

/* Judges a finished attempt; true when the job is done (either way). */
static bool job_judge(cl_client_t *c, cl_job_t *j, CURLcode rc, const char *errbuf)
{
    bool timed_out = false;
    long code = 0;
    curl_easy_getinfo(j->_easy, CURLINFO_RESPONSE_CODE, &code);
    j->http = (int)code;
    const char *who = j->cand[j->_try];
    if (rc == CURLE_OK && code == 200) {
        if (j->op == CL_OP_GET) {
            if (j->_pos != j->len) {
                snprintf(j->err, sizeof j->err, "storage %s sent %zu of %" PRIu64 " bytes", who,
                         j->_pos, j->len);
                goto retry;
            }
            j->bytes = j->_pos;
        } else if ((j->op == CL_OP_PUT || j->op == CL_OP_RPUT || j->op == CL_OP_RGET ||
                    j->op == CL_OP_PUSH || j->op == CL_OP_CPUT || j->op == CL_OP_RDEC ||
                    j->op == CL_OP_RENC) &&
                   j->bytes != j->len) {
            snprintf(j->err, sizeof j->err, "storage %s moved %" PRIu64 " of %" PRIu64 " bytes",
                     who, j->bytes, j->len);
            goto retry;
        }
        if (j->check_crc && j->crc != j->expect_crc) {
            snprintf(j->err, sizeof j->err,
                     "storage %s: chunk %s crc64nvme %016" PRIx64
                     " differs from the chunk map's %016" PRIx64,
                     who, j->chunk, j->crc, j->expect_crc);
            goto retry;
        }
        curl_off_t us = 0;
        if (curl_easy_getinfo(j->_easy, CURLINFO_TOTAL_TIME_T, &us) == CURLE_OK)
            est_answered(c, j, (double)us / 1e6);
        j->st = WH_OK;
        j->used = j->_try;
        j->used_id = j->cand_id[j->_try];
        j->err[0] = '\0';
        return true;
    }
    long sent = 0;
    if (rc == CURLE_OPERATION_TIMEDOUT)
        curl_easy_getinfo(j->_easy, CURLINFO_REQUEST_SIZE, &sent);
    if (rc == CURLE_OPERATION_TIMEDOUT && sent > 0) {
        /* Sent, and no answer in time: slow (loaded, paused), not dead. Its next attempt (on
         * the next candidate, or a retry elsewhere) gets twice the bound; the server stays up
         * and ranks last for a while. */
        snprintf(j->err, sizeof j->err, "storage %s: no answer within %" PRIu64 " ms (%s)", who,
                 j->_timeout_ms, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        atomic_fetch_add(&c->timeouts, 1);
        est_timed_out(c, j);
        if (j->_backoff < CL_RTO_BACKOFF_MAX)
            j->_backoff++;
        timed_out = j->timed_out = true;
    } else if (rc != CURLE_OK) {
        snprintf(j->err, sizeof j->err, "storage %s: %s", who,
                 errbuf[0] ? errbuf : curl_easy_strerror(rc));
        if (c->on_fail) /* refused, reset, or no connection: the node, not the request */
            c->on_fail(c->on_fail_arg, j->cand_id[j->_try]);
    } else
        snprintf(j->err, sizeof j->err, "storage %s answered %ld", who, code);
retry:
    atomic_fetch_add(&c->failures, 1);
    wh_warn(MOD, "chunk request failed op=%s chunk=%s node=%s reason='%s'", cl_op_name(j->op),
            j->chunk, who, j->err);
    if (code == 403 || code == 400) { /* ours to fix, not the replica's: do not hide it */
        j->st = code == 403 ? WH_ERR_AUTH : WH_ERR_INVALID;
        return true;
    }
    if (j->_try + 1 < j->ncand) {
        j->_try++;
        atomic_fetch_add(&c->retries, 1);
        return false;
    }
    /* The last candidate timed out: once more there, with the doubled bound (a slow server
     * left as the only one is still a server). Only where a late end of the first attempt is
     * harmless: an HTTP read, a delete. A write goes to another server first (its caller,
     * place_and_run, then comes back to this one). Not RDMA: a timed-out pull or push may
     * still move bytes between the server and the client's memory after the reply. */
    if (timed_out && !j->_again && (j->op == CL_OP_GET || j->op == CL_OP_DEL)) {
        j->_again = true;
        atomic_fetch_add(&c->retries, 1);
        return false;
    }
    j->st = WH_ERR_UNAVAILABLE;
    return true;
}

/* A hedge: a second attempt of a job on its next candidate, with a buffer of its own. */
typedef struct hedge {
    cl_job_t j;
    char err[CURL_ERROR_SIZE];
} hedge_t;

static void hedge_free(CURLM *m, cl_job_t *h)
{
    if (!h)
        return;
    if (h->_easy)
        job_end(m, h);
    free(h->dst);
    free(h);
}

/* Starts j's hedge on its next candidate; false when none could be started. */
static bool hedge_start(cl_client_t *c, CURLM *m, cl_job_t *j, const wh_peer_t *peer)
{
    j->_hedged = true;
    hedge_t *h = calloc(1, sizeof *h);
    void *buf = h ? malloc(j->len ? j->len : 1) : NULL;
    if (!h || !buf) {
        free(h);
        return false;
    }
    h->j = *j;
    h->j.dst = buf;
    h->j._try = j->_try + 1;
    h->j.ncand = j->_try + 2; /* that candidate only: a failed hedge is simply dropped */
    h->j._again = true;       /* no second attempt there either */
    h->j.hedge = false;
    h->j._hedge = NULL;
    h->j._hedge_of = j;
    h->j._easy = h->j._hdrs = NULL;
    if (job_start(c, m, &h->j, peer, h->err) != WH_OK) {
        free(buf);
        free(h);
        return false;
    }
    j->_hedge = &h->j;
    atomic_fetch_add(&c->hedges, 1);
    wh_debug(MOD, "hedged read chunk=%s after %" PRIu64 " ms: asking %s too", j->chunk,
             j->_hedge_ms, j->cand[h->j._try]);
    return true;
}

/* At most this many idle multi handles are kept (one per request thread that ran chunk
 * requests at once, and their connections); a run beyond it closes its own when done. */
#define CL_MPOOL_MAX 256

static CURLM *mpool_take(cl_client_t *c)
{
    CURLM *m = NULL;
    pthread_mutex_lock(&c->mpool_lock);
    if (c->n_mpool)
        m = c->mpool[--c->n_mpool];
    pthread_mutex_unlock(&c->mpool_lock);
    return m ? m : curl_multi_init();
}

static void mpool_give(cl_client_t *c, CURLM *m)
{
    pthread_mutex_lock(&c->mpool_lock);
    if (c->n_mpool == c->cap_mpool && c->cap_mpool < CL_MPOOL_MAX) {
        size_t cap = c->cap_mpool ? c->cap_mpool * 2 : 16;
        CURLM **p = realloc(c->mpool, cap * sizeof *p);
        if (p) {
            c->mpool = p;
            c->cap_mpool = cap;
        }
    }
    if (c->n_mpool < c->cap_mpool) {
        c->mpool[c->n_mpool++] = m;
        m = NULL;
    }
    pthread_mutex_unlock(&c->mpool_lock);
    if (m)
        curl_multi_cleanup(m);
}

wh_status_t cl_client_run(cl_client_t *c, cl_job_t *jobs, size_t n, unsigned parallel,
                          const wh_peer_t *peer)
{
    if (n == 0)
        return WH_OK;
    if (!parallel)
        parallel = 1;
    CURLM *m = mpool_take(c);
    if (!m)
        return WH_ERR_NOMEM;
    char(*errbufs)[CURL_ERROR_SIZE] = calloc(n, CURL_ERROR_SIZE);
    if (!errbufs) {
        mpool_give(c, m);
        return WH_ERR_NOMEM;
    }
    size_t next = 0, active = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        jobs[i].st = WH_ERR_UNAVAILABLE;
        jobs[i]._try = 0;
        jobs[i]._again = false;
        jobs[i].attempts = 0;
        jobs[i].err[0] = '\0';
        jobs[i]._hedge = jobs[i]._hedge_of = NULL;
        jobs[i]._easy = jobs[i]._hdrs = NULL;
        jobs[i]._hedged = jobs[i]._waiting = false;
        if (jobs[i].ncand == 0) {
            snprintf(jobs[i].err, sizeof jobs[i].err, "no live storage server holds chunk %s",
                     jobs[i].chunk);
            done++;
        }
    }
    while (done < n) {
        while (active < parallel && next < n) {
            cl_job_t *j = &jobs[next++];
            if (j->ncand == 0)
                continue;
            errbufs[j - jobs][0] = '\0';
            if (job_start(c, m, j, peer, errbufs[j - jobs]) != WH_OK) {
                j->st = WH_ERR_INVALID;
                done++;
                continue;
            }
            active++;
        }
        if (active == 0)
            break;
        /* hedged reads whose candidate is late: ask the next one too */
        uint64_t now = now_ms(), wait_ms = 100;
        for (size_t i = 0; i < next; i++) {
            cl_job_t *j = &jobs[i];
            if (!j->_hedge_ms || !j->_easy || j->_hedged || j->_try + 1 >= j->ncand)
                continue;
            if (now - j->_start_ms >= j->_hedge_ms)
                hedge_start(c, m, j, peer);
            else if (j->_start_ms + j->_hedge_ms - now < wait_ms)
                wait_ms = j->_start_ms + j->_hedge_ms - now;
        }
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            cl_job_t *j = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
            CURLcode rc = msg->data.result;
            if (j->_hedge_of) {
                /* a hedge answered: it wins when good; else the job goes on without it */
                cl_job_t *o = j->_hedge_of;
                bool fin = job_judge(c, j, rc, ((hedge_t *)j)->err);
                job_end(m, j);
                o->_hedge = NULL;
                if (fin && j->st == WH_OK) {
                    memcpy(o->dst, j->dst, j->len);
                    o->st = WH_OK;
                    o->http = j->http;
                    o->bytes = j->bytes;
                    o->crc = j->crc;
                    o->used = j->_try;
                    o->used_id = j->cand_id[j->_try];
                    o->err[0] = '\0';
                    atomic_fetch_add(&c->hedge_wins, 1);
                    if (o->_easy) {
                        est_late(c, o);
                        job_end(m, o); /* the late one is dropped */
                    }
                    o->_waiting = false;
                    active--;
                    done++;
                } else if (o->_waiting) {
                    /* both failed: on from the candidate after the hedge's */
                    o->_waiting = false;
                    o->_try = j->_try;
                    snprintf(o->err, sizeof o->err, "%s", j->err);
                    if (o->_try + 1 < o->ncand) {
                        o->_try++;
                        if (job_start(c, m, o, peer, errbufs[o - jobs]) != WH_OK) {
                            o->st = WH_ERR_INVALID;
                            active--;
                            done++;
                        }
                    } else {
                        o->st = WH_ERR_UNAVAILABLE;
                        active--;
                        done++;
                    }
                }
                hedge_free(m, j);
                continue;
            }
            bool fin = job_judge(c, j, rc, errbufs[j - jobs]);
            job_end(m, j);
            if (j->_hedge && !(fin && j->st == WH_OK) && j->st != WH_ERR_AUTH &&
                j->st != WH_ERR_INVALID) {
                j->_waiting = true; /* its hedge may still answer */
                continue;
            }
            if (fin && j->_hedge) {
                hedge_free(m, j->_hedge); /* answered first (or refused outright) */
                j->_hedge = NULL;
            }
            if (fin) {
                active--;
                done++;
            } else if (job_start(c, m, j, peer, errbufs[j - jobs]) != WH_OK) {
                j->st = WH_ERR_INVALID;
                active--;
                done++;
            }
        }
        if (running)
            curl_multi_poll(m, NULL, 0, (int)(wait_ms ? wait_ms : 1), NULL);
    }
    for (size_t i = 0; i < n; i++) { /* none left after the loop; a broken multi may leave one */
        if (jobs[i]._hedge) {
            hedge_free(m, jobs[i]._hedge);
            jobs[i]._hedge = NULL;
        }
        if (jobs[i]._easy) /* the multi goes back to the pool with no transfer of this run */
            job_end(m, &jobs[i]);
    }
    free(errbufs);
    mpool_give(c, m);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].st != WH_OK)
            return jobs[i].st;
    return WH_OK;
}
