/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the state every object operation shares (client/object.h). */
#include "client/object.h"

#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "auth/sigv4.h"
#include "s3/xml.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "client"

void wc_op_init(wc_op_t *op, wharf_client_t *c, const char *bucket, const char *key)
{
    memset(op, 0, sizeof *op);
    op->c = c;
    op->bucket = bucket;
    op->key = key;
    op->t0 = wh_now_s();
    pthread_mutex_init(&op->mu, NULL);
}

void wc_op_fini(wc_op_t *op)
{
    pthread_mutex_destroy(&op->mu);
}

void wc_op_fail(wc_op_t *op, wh_status_t st, const char *fmt, ...)
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
void wc_op_note_reply(wc_op_t *op, const wc_resp_t *r)
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
    if (r->version_id[0])
        snprintf(op->version_id, sizeof op->version_id, "%s", r->version_id);
    pthread_mutex_unlock(&op->mu);
}

/* A 501 from the server on a token request. Returns true when the piece should be re-sent
 * over HTTP (fallback=http); otherwise fails the op with WH_ERR_DECLINED. */
bool wc_op_declined(wc_op_t *op, const char *what, const wc_resp_t *r)
{
    wharf_client_t *c = op->c;
    atomic_fetch_add(&c->st_declines, 1);
    const char *why = r->s3_message[0] ? r->s3_message : "no reason given";
    if (c->fallback != WHARF_FALLBACK_HTTP) {
        wc_op_fail(op, WH_ERR_DECLINED,
                   "%s: server declined RDMA (501: %s); set fallback=http to allow HTTP, or use "
                   "transport http",
                   what, why);
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
void wc_op_execute(wc_op_t *op)
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
    /* Every piece has ended: no bracket of this operation is open. */
    pthread_mutex_lock(&op->mu);
    xfer_t *x = op->unsettled;
    op->unsettled = NULL;
    pthread_mutex_unlock(&op->mu);
    if (x) {
        wh_debug(MOD,
                 "quiescing the data path after an unfinished rdma transfer bucket=%s "
                 "key=%s",
                 op->bucket, op->key);
        xfer_quiesce(x);
    }
}

void wc_op_rdma_ended(wc_op_t *op, xfer_t *x, wh_status_t http_st, const wc_resp_t *r,
                      bool finished)
{
    if (!x)
        return;
    /* A retried request (a connection lost mid-request): the first attempt may have started a
     * transfer that is still going, whatever the last one says. */
    long status = r->status;
    if (!r->retries && (finished || (http_st == WH_OK && ((status >= 400 && status < 500) ||
                                                          status == 501 || status == 503))))
        return; /* finished, or refused before the transfer began: nothing is under way */
    pthread_mutex_lock(&op->mu);
    op->unsettled = x;
    pthread_mutex_unlock(&op->mu);
}

void wc_op_report(wc_op_t *op, wh_status_t st, uint64_t bytes, uint64_t crc, wharf_report_t *report)
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
    snprintf(r.version_id, sizeof r.version_id, "%s", op->version_id);
    if (op->any_rdma) /* GPU memory: cuda+ipc, or the network provider through FI_HMEM */
        snprintf(r.provider, sizeof r.provider, "%s",
                 op->device && op->dev_provider ? op->dev_provider : op->c->provider);
    wc_copy_out(report, &r, sizeof r);
}

/* Picks the transport. Returns WH_OK with op->rdma set, or an error (already in last error). */
wh_status_t wc_op_choose(wc_op_t *op, const wharf_xfer_opts_t *o)
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

wh_status_t wc_opts_resolve(wharf_client_t *c, const wharf_xfer_opts_t *uo, wharf_xfer_opts_t *o)
{
    wharf_xfer_opts_init(o, sizeof *o);
    if (uo) {
        if (uo->size < sizeof(size_t)) {
            wc_set_error("opts->size is 0; call wharf_xfer_opts_init(&opts, sizeof opts)");
            return WH_ERR_INVALID;
        }
        size_t n = WH_MIN(uo->size, sizeof *o);
        memcpy((char *)o + sizeof(size_t), (const char *)uo + sizeof(size_t), n - sizeof(size_t));
    }
    if (o->verify_checksum < 0)
        o->verify_checksum = c->verify_checksum;
    if (o->concurrency == 0)
        o->concurrency = c->concurrency;
    return WH_OK;
}

bool wc_name_ok(const char *bucket, const char *key)
{
    return bucket && *bucket && key && *key;
}
