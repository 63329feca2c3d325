/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's chunk client over libcurl multi (see client.h); its latency estimates are
 * client_est.c. */
#include "cluster/client.h"
#include "cluster/client_int.h"
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
    cl_est_bounds(c, j, &total_ms, &stall_ms);
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
    j->_start_ms = cl_now_ms();
    j->_hedge_ms = j->hedge && j->op == CL_OP_GET ? cl_est_hedge_ms(c, j) : 0;
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
            cl_est_answered(c, j, (double)us / 1e6);
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
        cl_est_timed_out(c, j);
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
        uint64_t now = cl_now_ms(), wait_ms = 100;
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
                        cl_est_late(c, o);
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
