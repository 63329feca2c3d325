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

struct cl_client {
    char *secret;
    char *ca_file; /* NULL: storage servers speak plain HTTP; else HTTPS verified with it */
    size_t secret_len;
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    _Atomic uint64_t requests, failures, retries;
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
    c->share = curl_share_init();
    if (!c->secret || !c->share) {
        cl_client_free(c);
        return WH_ERR_NOMEM;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
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
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
    free(c->ca_file);
    free(c->secret);
    free(c);
}

void cl_client_stats(cl_client_t *c, cl_client_stats_t *out)
{
    out->requests = atomic_load(&c->requests);
    out->failures = atomic_load(&c->failures);
    out->retries = atomic_load(&c->retries);
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
    return n;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *arg)
{
    cl_job_t *j = arg;
    size_t n = WH_MIN(sz * nm, (size_t)(j->len - j->_pos));
    memcpy(p, (const char *)j->body + j->_pos, n);
    j->_pos += n;
    return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *arg)
{
    cl_job_t *j = arg;
    size_t n = sz * nm;
    char line[256];
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
    t.peer_unix = peer && peer->is_unix;
    snprintf(t.peer_addr, sizeof t.peer_addr, "%s", peer && peer->addr[0] ? peer->addr : "-");
    t.peer_pid = peer ? peer->pid : 0;
    t.peer_uid = peer ? peer->uid : (unsigned)-1;
    if (j->op == CL_OP_RGET || j->op == CL_OP_RPUT)
        snprintf(t.mtok, sizeof t.mtok, "%s", j->mtok);
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
    /* "No progress for CL_STALL_MS": below 1 byte/s for that long. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)(CL_STALL_MS / 1000));
    /* libcurl's speed check starts late on a peer that accepted and then stopped (a SIGSTOP'd
     * server: the kernel completes the handshake and buffers the body), so a wall-clock bound
     * too: CL_STALL_MS plus the chunk at CL_MIN_RATE. */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(CL_STALL_MS + j->len * 1000 / CL_MIN_RATE));
    switch (j->op) {
    case CL_OP_GET:
        break;
    case CL_OP_PUT:
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
        /* The reply comes only when the transfer is done: a wall-clock bound instead. */
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 0L);
        break;
    }
    j->_pos = 0;
    j->http = 0;
    j->bytes = 0;
    j->crc = 0;
    j->has_md5 = false;
    j->_easy = e;
    j->_hdrs = h;
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
        } else if ((j->op == CL_OP_PUT || j->op == CL_OP_RPUT || j->op == CL_OP_RGET) &&
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
        j->st = WH_OK;
        j->used = j->_try;
        j->used_id = j->cand_id[j->_try];
        j->err[0] = '\0';
        return true;
    }
    if (rc != CURLE_OK) {
        snprintf(j->err, sizeof j->err, "storage %s: %s", who,
                 errbuf[0] ? errbuf : curl_easy_strerror(rc));
        if (c->on_fail) /* refused, reset or stalled: the node, not the request */
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
    j->st = WH_ERR_UNAVAILABLE;
    return true;
}

wh_status_t cl_client_run(cl_client_t *c, cl_job_t *jobs, size_t n, unsigned parallel,
                          const wh_peer_t *peer)
{
    if (n == 0)
        return WH_OK;
    if (!parallel)
        parallel = 1;
    CURLM *m = curl_multi_init();
    if (!m)
        return WH_ERR_NOMEM;
    char(*errbufs)[CURL_ERROR_SIZE] = calloc(n, CURL_ERROR_SIZE);
    if (!errbufs) {
        curl_multi_cleanup(m);
        return WH_ERR_NOMEM;
    }
    size_t next = 0, active = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        jobs[i].st = WH_ERR_UNAVAILABLE;
        jobs[i]._try = 0;
        jobs[i].attempts = 0;
        jobs[i].err[0] = '\0';
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
            bool fin = job_judge(c, j, rc, errbufs[j - jobs]);
            job_end(m, j);
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
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    free(errbufs);
    curl_multi_cleanup(m);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].st != WH_OK)
            return jobs[i].st;
    return WH_OK;
}
