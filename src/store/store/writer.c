/* SPDX-License-Identifier: Apache-2.0 */
/* PUT writers: bytes go to the data table's writer while MD5, CRC32C and CRC-64/NVME are
 * computed as they pass; commit makes them durable and then commits the metadata row. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "data/etag.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A writer moves its MD5 to a helper thread once this much was written (small PUTs stay
 * inline: a thread costs more than hashing a few MiB). */
#define STORE_MD5_THREAD_MIN (4ULL << 20)
#define STORE_MD5_CHUNK (1U << 20)

wh_status_t store_writer_open(store_t *st, store_writer_t **out)
{
    store_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return WH_ERR_NOMEM;
    w->st = st;
    wh_status_t s = WH_OK;
    if (wh_md5_init(&w->md5) != 0) {
        wh_error("store", "cannot initialise md5");
        s = WH_ERR_INTERNAL;
        goto err;
    }
    s = data_writer_open(st->data, &w->dw);
    if (s != WH_OK)
        goto err_md5;
    *out = w;
    return WH_OK;

err_md5:
    wh_md5_free(&w->md5);
err:
    free(w);
    return s;
}

static void *store_md5_main(void *arg)
{
    store_writer_t *w = arg;
    char *buf = malloc(STORE_MD5_CHUNK);
    pthread_mutex_lock(&w->md5_lock);
    if (!buf)
        w->md5_err = WH_ERR_NOMEM;
    while (!w->md5_err) {
        while (w->md5_hashed == w->md5_avail && !w->md5_stop)
            pthread_cond_wait(&w->md5_cond, &w->md5_lock);
        if (w->md5_stop == 2 || w->md5_hashed == w->md5_avail)
            break;
        uint64_t from = w->md5_hashed, to = w->md5_avail;
        pthread_mutex_unlock(&w->md5_lock);
        wh_status_t e = WH_OK;
        while (from < to && e == WH_OK) {
            size_t n = (size_t)WH_MIN(to - from, (uint64_t)STORE_MD5_CHUNK);
            e = data_writer_pread(w->dw, buf, n, from);
            if (e == WH_OK) {
                wh_md5_update(&w->md5, buf, n);
                from += n;
            }
        }
        pthread_mutex_lock(&w->md5_lock);
        if (e != WH_OK)
            w->md5_err = e;
        w->md5_hashed = from;
    }
    pthread_mutex_unlock(&w->md5_lock);
    free(buf);
    return NULL;
}

static void store_md5_start(store_writer_t *w)
{
    if (!data_offers_writer_pread(w->dw) || w->crypt) /* stored bytes are not what was given */
        return;                                       /* bytes are not kept here: hash inline */
    w->md5_avail = w->md5_hashed = w->size;
    w->md5_stop = 0;
    w->md5_err = 0;
    pthread_mutex_init(&w->md5_lock, NULL);
    pthread_cond_init(&w->md5_cond, NULL);
    if (pthread_create(&w->md5_thread, NULL, store_md5_main, w) != 0) {
        /* Not fatal: keep hashing inline. */
        wh_debug("store", "cannot start md5 helper thread, hashing inline");
        pthread_mutex_destroy(&w->md5_lock);
        pthread_cond_destroy(&w->md5_cond);
        return;
    }
    w->md5_threaded = true;
}

/* Stops the helper: how=1 waits until everything written is hashed, how=2 abandons it. */
static void store_md5_join(store_writer_t *w, int how)
{
    if (!w->md5_threaded)
        return;
    pthread_mutex_lock(&w->md5_lock);
    w->md5_stop = how;
    pthread_cond_signal(&w->md5_cond);
    pthread_mutex_unlock(&w->md5_lock);
    pthread_join(w->md5_thread, NULL);
    pthread_mutex_destroy(&w->md5_lock);
    pthread_cond_destroy(&w->md5_cond);
    w->md5_threaded = false;
    if (how == 1 && (w->md5_err || w->md5_hashed != w->size)) {
        wh_error("store", "reading back written bytes for md5 failed: %s",
                 wh_status_str(w->md5_err ? (wh_status_t)w->md5_err : WH_ERR_IO));
        w->broken = true;
    }
}

wh_status_t store_writer_write(store_writer_t *w, const void *p, size_t n)
{
    if (w->broken)
        return WH_ERR_IO;
    if (w->md5_done) {
        wh_error("store", "write after the md5 was finalised; finish writing before asking for "
                          "the digest");
        w->broken = true;
        return WH_ERR_INVALID;
    }
    if (n == 0)
        return WH_OK;
    wh_status_t s = w->crypt ? store_crypt_write(w, p, n) : data_write(w->dw, p, n);
    if (s != WH_OK) {
        w->broken = true;
        return s;
    }
    w->crc64 = wh_crc64nvme(w->crc64, p, n);
    w->crc32c = wh_crc32c(w->crc32c, p, n);
    w->size += n;
    if (w->digest_etag)
        return WH_OK;   /* no MD5: the ETag comes from the CRCs */
    if (w->part_size) { /* part ETags: inline while small, then parallel helpers from 0 */
        if (w->etag) {
            data_etag_avail(w->etag, w->size);
        } else if (w->size < STORE_MD5_THREAD_MIN ||
                   data_etag_start(w->dw, w->part_size, &w->etag) != WH_OK) {
            wh_md5_update(&w->md5, p, n);
            if (w->size >= STORE_MD5_THREAD_MIN)
                w->part_size = 0; /* no helpers: stay a plain MD5, inline */
        } else {
            data_etag_avail(w->etag, w->size);
        }
        return WH_OK;
    }
    if (w->md5_threaded) {
        pthread_mutex_lock(&w->md5_lock);
        w->md5_avail = w->size;
        pthread_cond_signal(&w->md5_cond);
        pthread_mutex_unlock(&w->md5_lock);
    } else {
        wh_md5_update(&w->md5, p, n);
        if (w->size >= STORE_MD5_THREAD_MIN)
            store_md5_start(w);
    }
    return WH_OK;
}

wh_status_t store_writer_begin_at(store_writer_t *w, uint64_t total)
{
    if (w->crypt || !w->digest_etag || w->size || w->md5_done || w->at || w->broken || total == 0)
        return WH_ERR_UNSUPPORTED;
    /* A mapping first (one copy: the feeder's bytes land in the file's pages), else pwrite;
     * a table that offers neither leaves the writer as it was (sequential writes follow). */
    wh_status_t s = data_map_at_begin(w->dw, total);
    if (s == WH_ERR_UNSUPPORTED)
        s = data_write_at_begin(w->dw, total);
    if (s == WH_ERR_UNSUPPORTED)
        return s;
    if (s != WH_OK) {
        w->broken = true;
        return s;
    }
    w->at = true;
    w->at_total = total;
    return WH_OK;
}

wh_status_t store_writer_write_at(store_writer_t *w, const void *p, size_t n, uint64_t off)
{
    if (!w->at || off > w->at_total || n > w->at_total - off)
        return WH_ERR_INVALID;
    if (__atomic_load_n(&w->broken, __ATOMIC_RELAXED))
        return WH_ERR_IO;
    wh_status_t s = data_write_at(w->dw, p, n, off);
    if (s != WH_OK)
        __atomic_store_n(&w->broken, true, __ATOMIC_RELAXED);
    return s;
}

wh_status_t store_writer_map_at(store_writer_t *w, uint64_t off, size_t n, void **p)
{
    if (!w->at || off > w->at_total || n > w->at_total - off)
        return WH_ERR_INVALID;
    if (__atomic_load_n(&w->broken, __ATOMIC_RELAXED))
        return WH_ERR_IO;
    wh_status_t s = data_map_at(w->dw, off, n, p);
    if (s != WH_OK && s != WH_ERR_UNSUPPORTED)
        __atomic_store_n(&w->broken, true, __ATOMIC_RELAXED);
    return s;
}

uint64_t store_writer_stripe_len(const store_writer_t *w)
{
    return w->at ? data_write_at_stripe(w->dw) : 0;
}

uint64_t store_writer_write_unit(const store_writer_t *w)
{
    return w->at ? data_write_at_unit(w->dw) : 0;
}

void store_writer_end_at(store_writer_t *w, uint64_t crc64nvme, bool crc32c_set, uint32_t crc32c)
{
    if (!w->at)
        return;
    w->size = w->at_total;
    w->crc64 = crc64nvme;
    w->crc32c = crc32c_set ? crc32c : 0;
    w->crc32c_unknown = !crc32c_set;
}

wh_status_t store_writer_bucket(store_writer_t *w, const char *bucket, char *msg, size_t msglen)
{
    if (msglen)
        msg[0] = '\0';
    wh_status_t s = data_writer_bucket(w->dw, bucket, msg, msglen);
    return s == WH_ERR_UNSUPPORTED ? WH_OK : s; /* a table of one layout */
}

wh_status_t store_writer_rdma_put(store_writer_t *w, const struct xfer_token_arg *token,
                                  const wh_peer_t *peer, uint64_t size, data_rdma_result_t *res)
{
    memset(res, 0, sizeof *res);
    if (w->crypt)
        return WH_ERR_UNSUPPORTED; /* an encrypted write takes its bytes through the writer */
    if (w->size || w->md5_done) {
        snprintf(res->message, sizeof res->message, "an RDMA PUT must be the writer's only input");
        return WH_ERR_INVALID;
    }
    wh_status_t s = data_rdma_put(w->dw, token, peer, size, res);
    if (s == WH_ERR_UNSUPPORTED) /* the table moves no bytes itself: nothing happened */
        return s;
    if (s != WH_OK) {
        w->broken = true;
        return s;
    }
    w->size = res->bytes;
    w->crc64 = res->crc64nvme;
    w->crc32c_unknown = true;
    w->digest_etag = false; /* the table hashed the bytes itself: its MD5 is the ETag */
    /* The bytes never passed through here: the table's digests stand for them. */
    store_md5_join(w, 2);
    wh_md5_free(&w->md5);
    w->md5_done = true;
    memcpy(w->md5_hex, res->md5_hex, sizeof w->md5_hex);
    return WH_OK;
}

wh_status_t store_writer_append(store_writer_t *w, data_reader_t *r, uint64_t off, uint64_t len)
{
    if (w->broken)
        return WH_ERR_IO;
    wh_status_t s = data_append(w->dw, r, off, len);
    if (s != WH_OK) {
        w->broken = true;
        return s;
    }
    w->size += len;
    return WH_OK;
}

void store_writer_use_digest_etag(store_writer_t *w, uint64_t part_size, bool part)
{
    if (w->size || w->md5_done || !part_size || w->crypt)
        return;
    w->digest_etag = true;
    w->digest_part = part;
    w->digest_part_size = part_size;
    w->part_size = 0;
}

/* 32 hex characters from what the writer knows of its bytes without an MD5 pass. */
static void digest_hex(const store_writer_t *w, char out[33])
{
    uint8_t in[32] = "wharf-etag-1", d[WH_MD5_LEN];
    for (int i = 0; i < 8; i++) {
        in[12 + i] = (uint8_t)(w->crc64 >> (8 * i));
        in[20 + i] = (uint8_t)(w->size >> (8 * i));
    }
    for (int i = 0; i < 4; i++)
        in[28 + i] = w->crc32c_unknown ? 0 : (uint8_t)(w->crc32c >> (8 * i));
    wh_md5(in, sizeof in, d);
    wh_hex_encode(d, sizeof d, out);
}

void store_writer_use_part_etag(store_writer_t *w, uint64_t part_size)
{
    if (w->size == 0 && !w->md5_done && part_size >= STORE_MD5_THREAD_MIN && !w->crypt)
        w->part_size = part_size;
}

wh_status_t store_writer_etag(store_writer_t *w, char out[48])
{
    if (w->digest_etag) {
        char h[33];
        digest_hex(w, h);
        uint64_t n = (w->size + w->digest_part_size - 1) / w->digest_part_size;
        if (w->digest_part)
            memcpy(out, h, 33);
        else /* a PUT is at most 5 GiB and parts at least 4 MiB: n fits an unsigned */
            snprintf(out, 48, "%.32s-%u", h, (unsigned)(n ? (n < 1000000 ? n : 999999) : 1));
        return w->broken ? WH_ERR_IO : WH_OK;
    }
    if (!w->part_size || !w->etag) { /* a plain MD5 (also a small part-ETag object) */
        char m[33];
        store_writer_md5_hex(w, m);
        memcpy(out, m, 33);
        return w->broken ? WH_ERR_IO : WH_OK;
    }
    data_etag_t *e = w->etag;
    w->etag = NULL;
    wh_status_t s = data_etag_finish(e, w->size, out);
    if (s != WH_OK) {
        wh_error("store", "reading back written bytes for the etag failed: %s", wh_status_str(s));
        w->broken = true;
        out[0] = '\0';
    }
    wh_md5_free(&w->md5);
    w->md5_done = true;
    w->md5_hex[0] = '\0';
    return s;
}

uint64_t store_writer_size(const store_writer_t *w)
{
    return w->size;
}

void store_writer_md5_hex(store_writer_t *w, char out[33])
{
    if (w->digest_etag) {
        /* No MD5 was made: a part's ETag is the digest; an object's is store_writer_etag's
         * "hex-N", and there is no whole-object MD5 to give. */
        if (w->digest_part)
            digest_hex(w, out);
        else
            out[0] = '\0';
        return;
    }
    if (w->part_size && w->etag) {
        out[0] = '\0'; /* part ETags: there is no whole-object MD5 */
        return;
    }
    if (!w->md5_done) {
        store_md5_join(w, 1);
        uint8_t d[WH_MD5_LEN];
        wh_md5_final(&w->md5, d);
        wh_hex_encode(d, sizeof d, w->md5_hex);
        w->md5_done = true;
    }
    memcpy(out, w->md5_hex, 33);
}

uint64_t store_writer_crc64nvme(const store_writer_t *w)
{
    return w->crc64;
}

uint32_t store_writer_crc32c(const store_writer_t *w)
{
    return w->crc32c;
}

wh_status_t store_writer_finish(store_writer_t *w, data_ref_t *ref)
{
    wh_status_t s = store_crypt_flush(w);
    if (s != WH_OK) {
        w->broken = true;
        return s;
    }
    return data_finish(w->dw, ref);
}

void store_writer_free(store_writer_t *w)
{
    if (!w)
        return;
    store_md5_join(w, 2);
    data_etag_abort(w->etag);
    store_crypt_free(w);
    data_writer_free(w->dw);
    if (!w->md5_done)
        wh_md5_free(&w->md5);
    free(w);
}

void store_writer_fail(store_writer_t *w, wh_status_t why)
{
    if (w && why == WH_ERR_UNAVAILABLE) {
        /* The metadata commit's outcome is unknown (the database went away during it): the
         * row may exist and name these bytes, so they stay. If it does not, they are an
         * orphan that recovery (local) or garbage collection (a cluster) removes later. */
        wh_warn("store", "metadata unreachable during a commit: keeping the written bytes "
                         "until it is known whether they were committed");
        store_writer_free(w);
        return;
    }
    store_writer_abort(w);
}

void store_writer_abort(store_writer_t *w)
{
    if (!w)
        return;
    store_md5_join(w, 2);
    data_etag_abort(w->etag);
    store_crypt_free(w);
    data_writer_abort(w->dw);
    if (!w->md5_done)
        wh_md5_free(&w->md5);
    free(w);
}

wh_status_t store_writer_commit(store_writer_t *w, const store_commit_args_t *a,
                                data_obj_meta_t *meta)
{
    const char *bucket = a->bucket, *key = a->key;
    wh_status_t s;
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    memset(&old, 0, sizeof old);
    size_t klen = strlen(key);
    if (!store_key_valid(key, klen)) {
        wh_warn("store",
                "rejecting invalid object key (%zu bytes): keys are 1..%d bytes of "
                "valid UTF-8 without NUL",
                klen, STORE_MAX_KEY);
        s = WH_ERR_INVALID;
        goto err;
    }
    char md5[48];
    store_writer_etag(w, md5); /* may mark the writer broken */
    if (w->broken) {
        s = WH_ERR_IO;
        goto err;
    }
    if (meta->size && meta->size != w->size) {
        wh_warn("store", "object size mismatch bucket=%s: expected %llu bytes, received %llu",
                bucket, (unsigned long long)meta->size, (unsigned long long)w->size);
        s = WH_ERR_INVALID;
        goto err;
    }
    meta->size = w->size;
    if (!meta->etag[0]) {
        if (!md5[0]) {
            wh_error("store", "the data table gave no md5 for an RDMA PUT and no etag was set");
            s = WH_ERR_INTERNAL;
            goto err;
        }
        memcpy(meta->etag, md5, sizeof md5);
    }
    /* SSE-C: never the plaintext's MD5 (computed here or the one the caller set). */
    store_crypt_etag_seal(w, meta->etag);
    if (!meta->crc64nvme[0])
        wh_crc64nvme_b64(w->crc64, meta->crc64nvme);
    meta->mtime = time(NULL);
    meta->parts = 0;
    if (store_crypt_sse(w) && !meta->sse && !(meta->sse = strdup(store_crypt_sse(w)))) {
        s = WH_ERR_NOMEM;
        goto err;
    }

    s = store_writer_finish(w, &ref);
    if (s != WH_OK)
        goto err;
    s = meta_object_put(w->st->meta, bucket, key, klen, meta, &ref, &old, a->cond);
    if (s != WH_OK)
        goto err;
    /* Only now may the old version go: a reader that opened it keeps it. */
    store_release(w->st, &old);
    data_ref_clear(&old);
    data_ref_clear(&ref);
    store_writer_free(w);
    return WH_OK;

err:
    data_ref_clear(&ref);
    store_writer_fail(w, s);
    return s;
}
