/* SPDX-License-Identifier: Apache-2.0 */
/* Appends (store.h, store_writer_commit_append): the new bytes become one more extent of the
 * object, as a completed multipart upload's parts are its extents (mpu.c); nothing is copied. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "meta/meta.h"
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STORE_APPEND_MAX_SEGMENTS 10000 /* S3's part limit; S3 Express counts appends so */

/* The old object's extents, then the new bytes' (at offset), into one composed reference. */
static wh_status_t append_compose(store_t *st, const data_ref_t *oref, uint64_t osize,
                                  uint64_t ocrc, const data_ref_t *sref, uint64_t ssize,
                                  uint64_t scrc, data_ref_t *out)
{
    size_t n_old = oref->n_chunks ? oref->n_chunks : (osize ? 1 : 0);
    size_t n_seg = sref->n_chunks ? sref->n_chunks : 1;
    data_chunk_t *c = calloc(n_old + n_seg, sizeof *c);
    if (!c)
        return WH_ERR_NOMEM;
    size_t n = 0;
    if (oref->n_chunks) {
        for (size_t i = 0; i < oref->n_chunks; i++)
            c[n++] = oref->chunks[i];
    } else if (osize) {
        memcpy(c[n].id, oref->id, sizeof c[n].id);
        c[n].length = osize;
        c[n++].crc64nvme = ocrc;
    }
    if (sref->n_chunks) {
        for (size_t i = 0; i < sref->n_chunks; i++) {
            c[n] = sref->chunks[i];
            c[n++].offset += osize;
        }
    } else {
        memcpy(c[n].id, sref->id, sizeof c[n].id);
        c[n].offset = osize;
        c[n].length = ssize;
        c[n++].crc64nvme = scrc;
    }
    for (size_t i = 0; i < n; i++)
        c[i].shared = false;
    wh_status_t s = data_compose(st->data, c, n, out);
    free(c);
    return s;
}

/* The appended object's row: the old one's metadata, its digests combined with the new bytes'. */
static wh_status_t append_meta(data_obj_meta_t *nm, const data_obj_meta_t *om, uint64_t ocrc,
                               const store_writer_t *w, const char *seg_etag)
{
    uint64_t seg = w->size;
    nm->size = om->size + seg;
    nm->mtime = time(NULL);
    wh_crc64nvme_b64(wh_crc64nvme_combine(ocrc, w->crc64, seg), nm->crc64nvme);
    uint32_t oc32;
    nm->crc32c[0] = '\0';
    if (om->crc32c[0] && !strchr(om->crc32c, '-') && !w->crc32c_unknown &&
        wh_crc32c_from_b64(om->crc32c, &oc32) == 0)
        wh_crc32c_b64(wh_crc32c_combine(oc32, w->crc32c, seg), nm->crc32c);
    uint32_t segments = (om->parts ? om->parts : 1) + 1;
    nm->parts = segments;
    wh_md5_t m;
    if (wh_md5_init(&m) != 0)
        return WH_ERR_INTERNAL;
    wh_md5_update(&m, om->etag, strlen(om->etag));
    wh_md5_update(&m, "\n", 1);
    wh_md5_update(&m, seg_etag, strlen(seg_etag));
    uint8_t dig[WH_MD5_LEN];
    wh_md5_final(&m, dig);
    wh_hex_encode(dig, sizeof dig, nm->etag);
    snprintf(nm->etag + 2 * WH_MD5_LEN, sizeof nm->etag - 2 * WH_MD5_LEN, "-%u", segments);
    wh_sbuf_t ps;
    wh_sbuf_init(&ps);
    if (om->part_sizes)
        wh_sbuf_puts(&ps, om->part_sizes);
    else
        wh_sbuf_printf(&ps, "%llu", (unsigned long long)om->size);
    wh_sbuf_printf(&ps, ",%llu", (unsigned long long)seg);
    if (ps.oom) {
        wh_sbuf_free(&ps);
        return WH_ERR_NOMEM;
    }
    free(nm->part_sizes);
    nm->part_sizes = wh_sbuf_steal(&ps);
    return WH_OK;
}

/* A new object: no object under the key and offset 0 (S3 Express creates it). */
static wh_status_t append_create(store_writer_t *w, const char *bucket, const char *key,
                                 data_obj_meta_t *meta, store_append_fail_t *fail)
{
    data_cond_t cond = {.kind = DATA_COND_ABSENT};
    wh_status_t s = store_writer_commit(
        w, &(store_commit_args_t){.bucket = bucket, .key = key, .cond = &cond}, meta);
    if (s == WH_ERR_PRECONDITION) /* created meanwhile: offset 0 is no longer its size */
        *fail = STORE_APPEND_OFFSET;
    return s;
}

wh_status_t store_writer_commit_append(store_writer_t *w, const char *bucket, const char *key,
                                       uint64_t offset, data_obj_meta_t *meta,
                                       store_append_fail_t *fail)
{
    store_t *st = w->st;
    size_t klen = strlen(key);
    data_obj_meta_t om, nm;
    data_ref_t oref, sref, nref, old;
    memset(&om, 0, sizeof om);
    memset(&nm, 0, sizeof nm);
    memset(&oref, 0, sizeof oref);
    memset(&sref, 0, sizeof sref);
    memset(&nref, 0, sizeof nref);
    memset(&old, 0, sizeof old);
    bool finished = false;
    *fail = STORE_APPEND_OK;
    wh_status_t s = WH_OK;
    if (!store_key_valid(key, klen)) {
        s = WH_ERR_INVALID;
        goto err;
    }
    if (w->size == 0) {
        *fail = STORE_APPEND_EMPTY;
        s = WH_ERR_INVALID;
        goto err;
    }
    if (store_crypt_sse(w)) {
        *fail = STORE_APPEND_ENCRYPTED;
        s = WH_ERR_UNSUPPORTED;
        goto err;
    }
    int vstate = 0;
    if ((s = meta_bucket_versioning_get(st->meta, bucket, &vstate)) != WH_OK)
        goto err;
    if (vstate != DATA_VERSIONING_OFF) {
        *fail = STORE_APPEND_VERSIONED;
        s = WH_ERR_UNSUPPORTED;
        goto err;
    }
    s = meta_object_get(st->meta, bucket, key, klen, &om, &oref);
    if (s == WH_ERR_NOT_FOUND || (s == WH_OK && om.delete_marker)) {
        data_obj_meta_free(&om);
        data_ref_clear(&oref);
        if (offset != 0) {
            *fail = STORE_APPEND_OFFSET;
            s = WH_ERR_INVALID;
            goto err;
        }
        return append_create(w, bucket, key, meta, fail);
    }
    if (s != WH_OK)
        goto err;
    uint64_t ocrc = 0;
    if (om.sse) {
        *fail = STORE_APPEND_ENCRYPTED;
        s = WH_ERR_UNSUPPORTED;
    } else if (offset != om.size) {
        *fail = STORE_APPEND_OFFSET;
        s = WH_ERR_INVALID;
    } else if (!data_offers_compose(st->data)) {
        *fail = STORE_APPEND_NO_COMPOSE;
        s = WH_ERR_UNSUPPORTED;
    } else if (om.parts + 1 >= STORE_APPEND_MAX_SEGMENTS) {
        *fail = STORE_APPEND_TOO_MANY;
        s = WH_ERR_INVALID;
    } else if (wh_crc64nvme_from_b64(om.crc64nvme, &ocrc) != 0) {
        wh_error("store", "append bucket=%s: the object has no CRC-64/NVME in metadata", bucket);
        s = WH_ERR_INTERNAL;
    }
    if (s != WH_OK)
        goto err;
    char seg_etag[48];
    store_writer_etag(w, seg_etag); /* may mark the writer broken */
    if (w->broken) {
        s = WH_ERR_IO;
        goto err;
    }
    if ((s = store_writer_finish(w, &sref)) != WH_OK)
        goto err;
    finished = true;
    nm = om; /* content type, user metadata, owner, ACL, tags stay the object's */
    memset(&om, 0, sizeof om);
    om.size = nm.size;
    om.parts = nm.parts;
    memcpy(om.etag, nm.etag, sizeof om.etag);
    memcpy(om.crc32c, nm.crc32c, sizeof om.crc32c);
    om.part_sizes = nm.part_sizes ? strdup(nm.part_sizes) : NULL;
    if ((nm.part_sizes && !om.part_sizes) ||
        (s = append_meta(&nm, &om, ocrc, w, seg_etag)) != WH_OK ||
        (s = append_compose(st, &oref, om.size, ocrc, &sref, w->size, w->crc64, &nref)) != WH_OK)
        goto err;
    /* The old object's extents are the new one's: its reference (old) is not released. */
    s = meta_object_swap(st->meta, bucket, key, klen, oref.id, &nm, &nref, &old);
    if (s != WH_OK) {
        *fail = s == WH_ERR_PRECONDITION  ? STORE_APPEND_OFFSET
                : s == WH_ERR_AUTH        ? STORE_APPEND_LOCKED
                : s == WH_ERR_UNSUPPORTED ? STORE_APPEND_VERSIONED
                                          : STORE_APPEND_OK;
        goto err;
    }
    store_writer_free(w);
    data_obj_meta_free(meta);
    *meta = nm;
    data_obj_meta_free(&om);
    data_ref_clear(&oref);
    data_ref_clear(&sref);
    data_ref_clear(&nref);
    data_ref_clear(&old);
    return WH_OK;

err:
    if (finished) {
        /* The new bytes were made durable but no row names them: they go, unless the
         * commit's outcome is unknown (then recovery decides). */
        if (s != WH_ERR_UNAVAILABLE)
            store_release(st, &sref);
        store_writer_free(w);
    } else {
        store_writer_fail(w, s);
    }
    data_obj_meta_free(&om);
    data_obj_meta_free(&nm);
    data_ref_clear(&oref);
    data_ref_clear(&sref);
    data_ref_clear(&nref);
    data_ref_clear(&old);
    return s;
}
