/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table's shared parts: the transaction helper, data references. See meta.h.
 * Which backend a location names is decided above, by the store (store/backend.c), which links
 * both. */
#include "meta/meta.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include <inttypes.h>

#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Serialization conflicts under SERIALIZABLE are normal when writers share a key: retry with a
 * growing, jittered pause (about 1.5 s in all at most); an unreachable database fails fast. */
#define META_TX_ATTEMPTS 24
#define META_TX_UNAVAILABLE_ATTEMPTS 3

bool meta_url_is_pg(const char *url)
{
    return url && (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0);
}

void meta_close(meta_t *m)
{
    if (!m)
        return;
    meta_cache_free(m);
    m->ops->close(m);
}

uint64_t meta_list_rows(meta_t *m)
{
    return __atomic_load_n(&m->list_rows, __ATOMIC_RELAXED);
}

void meta_parts_free(meta_part_t *p, size_t n)
{
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        data_ref_clear(&p[i].ref);
    free(p);
}

/* Cheap per-thread jitter, so retrying writers spread out. */
static uint32_t meta_jitter(void)
{
    static __thread uint32_t x;
    if (!x)
        x = (uint32_t)(uintptr_t)&x ^ (uint32_t)time(NULL) ^ 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

static _Atomic uint64_t meta_tx_retries, meta_tx_retryable;

void meta_tx_note_retryable(void)
{
    atomic_fetch_add_explicit(&meta_tx_retryable, 1, memory_order_relaxed);
}

void meta_tx_stats(uint64_t *retries, uint64_t *retryable)
{
    *retries = atomic_load_explicit(&meta_tx_retries, memory_order_relaxed);
    *retryable = atomic_load_explicit(&meta_tx_retryable, memory_order_relaxed);
}

wh_status_t meta_tx_run(const meta_tx_ops_t *ops, void *conn, meta_tx_fn fn, void *arg)
{
    wh_status_t st = WH_OK;
    for (int attempt = 1;; attempt++) {
        st = ops->begin(conn);
        if (st == WH_OK) {
            st = fn(conn, arg);
            if (st == WH_OK)
                st = ops->commit(conn); /* a failed commit rolls back itself */
            else
                ops->rollback(conn);
        }
        if (st == WH_OK || attempt == META_TX_ATTEMPTS || !ops->retryable ||
            !ops->retryable(conn, st) ||
            (st == WH_ERR_UNAVAILABLE && attempt >= META_TX_UNAVAILABLE_ATTEMPTS))
            return st;
        /* A serialization conflict or a lost connection: back off, then again. */
        atomic_fetch_add_explicit(&meta_tx_retries, 1, memory_order_relaxed);
        long cap_us = 1000L << (attempt < 6 ? attempt : 6); /* 2 ms .. 64 ms */
        long us = cap_us / 2 + (long)(meta_jitter() % (uint32_t)(cap_us / 2 + 1));
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

bool meta_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < want)
        nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

void meta_replicas_format(const data_chunk_t *c, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < c->n_replicas && i < DATA_CHUNK_MAX_REPLICAS && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, i ? ",%u" : "%u", c->replicas[i]);
}

void meta_replicas_parse(const char *s, data_chunk_t *c)
{
    c->n_replicas = 0;
    while (s && *s && c->n_replicas < DATA_CHUNK_MAX_REPLICAS) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s)
            break;
        c->replicas[c->n_replicas++] = (uint32_t)v;
        s = *end == ',' ? end + 1 : end;
    }
}

wh_status_t meta_parts_unchanged(const char *upload_id, const meta_part_t *listed, size_t n,
                                 const meta_part_t *all, size_t n_all)
{
    /* Both lists ascend by number: a merge walk. */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < n_all && all[j].info.number < listed[i].info.number)
            j++;
        if (j == n_all || all[j].info.number != listed[i].info.number ||
            strcmp(all[j].ref.id, listed[i].ref.id) != 0) {
            wh_warn("store", "upload=%s part=%u changed during completion; retry", upload_id,
                    listed[i].info.number);
            return WH_ERR_PRECONDITION;
        }
    }
    return WH_OK;
}

void meta_policies_free(meta_policy_t *p, size_t n)
{
    if (!p)
        return;
    for (size_t i = 0; i < n; i++)
        free(p[i].doc);
    free(p);
}

/* S3 compares ETags as sent: quotes around the client's are tolerated, hex case is not
 * significant (as for a completion's part ETags). */
static bool meta_etag_eq(const char *given, const char *stored)
{
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return n == strlen(stored) && strncasecmp(given, stored, n) == 0;
}

wh_status_t meta_cond_check(data_cond_t *cond, bool exists, const char *etag)
{
    if (!cond || cond->kind == DATA_COND_NONE)
        return WH_OK;
    cond->failed = false;
    if (cond->kind == DATA_COND_ABSENT && exists) {
        cond->failed = true;
        return WH_ERR_PRECONDITION;
    }
    if (cond->kind == DATA_COND_MATCH && !exists) {
        cond->failed = true;
        return WH_ERR_NOT_FOUND;
    }
    if (cond->kind == DATA_COND_MATCH && !meta_etag_eq(cond->etag, etag ? etag : "")) {
        cond->failed = true;
        return WH_ERR_PRECONDITION;
    }
    return WH_OK;
}

wh_status_t meta_version_id_new(uint64_t seq, char out[DATA_VERSION_ID_MAX])
{
    /* Inverted time first: the ids of one key sort newest first; 64 random bits after it
     * make ids unique across gateways that commit in the same microsecond. */
    uint8_t rnd[8];
    if (wh_random_bytes(rnd, sizeof rnd) != 0) {
        wh_error("store", "cannot get random bytes for a version id");
        return WH_ERR_INTERNAL;
    }
    snprintf(out, DATA_VERSION_ID_MAX, "%016" PRIx64, UINT64_MAX - seq);
    wh_hex_encode(rnd, sizeof rnd, out + 16);
    return WH_OK;
}

uint64_t meta_version_seq_next(uint64_t cur_seq)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    return now > cur_seq ? now : cur_seq + 1;
}

wh_status_t meta_lock_refuse(int bypass, int64_t now, data_del_result_t *res, int mode,
                             int64_t until, bool hold)
{
    data_lock_why_t why = data_lock_blocks(mode, until, hold, bypass, now);
    if (why == DATA_LOCK_FREE)
        return WH_OK;
    if (res) {
        res->locked = (int)why;
        res->lock_mode = mode;
        res->lock_until = until;
    }
    return WH_ERR_AUTH;
}

wh_status_t meta_lock_change(const data_lock_set_t *req, int *mode, int64_t *until, bool *hold)
{
    wh_status_t st = data_lock_set_check(*mode, *until, req);
    if (st != WH_OK)
        return st;
    if (req->set_retention) {
        *mode = req->mode;
        *until = req->mode == DATA_LOCK_NONE ? 0 : req->until;
    }
    if (req->set_hold)
        *hold = req->hold;
    return WH_OK;
}
