/* SPDX-License-Identifier: Apache-2.0 */
/* Part ETags hashed in parallel (see etag.h). */
#include "data/etag.h"
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ETAG_MAX_HELPERS 8
#define ETAG_READ_CHUNK (1u << 20)

struct data_etag {
    data_writer_t *dw;
    uint64_t part;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t avail; /* bytes the writer holds */
    uint64_t next;  /* next part to hand out */
    uint64_t cap;   /* entries in md5 */
    uint8_t (*md5)[WH_MD5_LEN];
    uint64_t hashed; /* parts finished */
    int stop;        /* 1: hash what is there, then exit; 2: exit now */
    wh_status_t err;
    unsigned nth;
    pthread_t th[ETAG_MAX_HELPERS];
};

/* Caller holds mu. Grows md5 to hold part k. */
static bool etag_grow(data_etag_t *e, uint64_t k)
{
    if (k < e->cap)
        return true;
    uint64_t cap = e->cap ? e->cap * 2 : 64;
    while (cap <= k)
        cap *= 2;
    void *p = realloc(e->md5, cap * sizeof *e->md5);
    if (!p)
        return false;
    e->md5 = p;
    e->cap = cap;
    return true;
}

static void *etag_main(void *arg)
{
    data_etag_t *e = arg;
    uint8_t *buf = malloc(ETAG_READ_CHUNK);
    pthread_mutex_lock(&e->mu);
    if (!buf && !e->err)
        e->err = WH_ERR_NOMEM;
    for (;;) {
        /* A part is ready when it is complete, or when the writer is done (the last one). */
        while (!e->err && e->stop != 2) {
            if ((e->next + 1) * e->part <= e->avail)
                break;
            if (e->stop == 1)
                break; /* the last, partial part (or none) */
            pthread_cond_wait(&e->cv, &e->mu);
        }
        if (e->err || e->stop == 2 || e->next * e->part >= e->avail)
            break;
        uint64_t k = e->next++, from = k * e->part;
        uint64_t to = WH_MIN(from + e->part, e->avail);
        if (!etag_grow(e, k)) {
            e->err = WH_ERR_NOMEM;
            break;
        }
        pthread_mutex_unlock(&e->mu);
        wh_md5_t m;
        wh_status_t st = wh_md5_init(&m) == 0 ? WH_OK : WH_ERR_INTERNAL;
        while (st == WH_OK && from < to) {
            size_t n = (size_t)WH_MIN(to - from, (uint64_t)ETAG_READ_CHUNK);
            st = data_writer_pread(e->dw, buf, n, from);
            if (st == WH_OK) {
                wh_md5_update(&m, buf, n);
                from += n;
            }
        }
        uint8_t d[WH_MD5_LEN];
        if (st == WH_OK)
            wh_md5_final(&m, d);
        else
            wh_md5_free(&m);
        pthread_mutex_lock(&e->mu);
        if (st != WH_OK) {
            if (!e->err)
                e->err = st;
            break;
        }
        memcpy(e->md5[k], d, WH_MD5_LEN);
        e->hashed++;
        pthread_cond_broadcast(&e->cv);
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    free(buf);
    return NULL;
}

wh_status_t data_etag_start(data_writer_t *dw, uint64_t part_size, data_etag_t **out)
{
    if (!data_offers_writer_pread(dw) || part_size == 0)
        return WH_ERR_UNSUPPORTED;
    data_etag_t *e = calloc(1, sizeof *e);
    if (!e)
        return WH_ERR_NOMEM;
    e->dw = dw;
    e->part = part_size;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    /* Helpers from the host: half the cores (the other half copy the bytes in), 1..8. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = ncpu > 2 ? (unsigned)(ncpu / 2) : 1;
    if (want > ETAG_MAX_HELPERS)
        want = ETAG_MAX_HELPERS;
    for (unsigned i = 0; i < want; i++)
        if (pthread_create(&e->th[e->nth], NULL, etag_main, e) == 0)
            e->nth++;
    if (e->nth == 0) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
        free(e);
        return WH_ERR_NOMEM;
    }
    *out = e;
    return WH_OK;
}

void data_etag_avail(data_etag_t *e, uint64_t avail)
{
    pthread_mutex_lock(&e->mu);
    e->avail = avail;
    if ((avail / e->part) > e->next)
        pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void etag_stop(data_etag_t *e, int how)
{
    pthread_mutex_lock(&e->mu);
    e->stop = how;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    for (unsigned i = 0; i < e->nth; i++)
        pthread_join(e->th[i], NULL);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
}

wh_status_t data_etag_finish(data_etag_t *e, uint64_t size, char out[48])
{
    data_etag_avail(e, size);
    etag_stop(e, 1);
    uint64_t nparts = (size + e->part - 1) / e->part;
    wh_status_t st = e->err;
    if (st == WH_OK && e->hashed != nparts) {
        wh_error("store", "part etag incomplete parts=%llu hashed=%llu", (unsigned long long)nparts,
                 (unsigned long long)e->hashed);
        st = WH_ERR_IO;
    }
    if (st == WH_OK) {
        if (nparts <= 1) {
            uint8_t d[WH_MD5_LEN];
            if (nparts == 1)
                memcpy(d, e->md5[0], WH_MD5_LEN);
            else
                wh_md5("", 0, d);
            wh_hex_encode(d, WH_MD5_LEN, out);
        } else {
            uint8_t d[WH_MD5_LEN];
            wh_md5(e->md5, (size_t)nparts * WH_MD5_LEN, d);
            wh_hex_encode(d, WH_MD5_LEN, out);
            snprintf(out + 2 * WH_MD5_LEN, 48 - 2 * WH_MD5_LEN, "-%u",
                     (unsigned)nparts); /* at most 5 TiB / part size: fits */
        }
    }
    free(e->md5);
    free(e);
    return st;
}

void data_etag_abort(data_etag_t *e)
{
    if (!e)
        return;
    etag_stop(e, 2);
    free(e->md5);
    free(e);
}
