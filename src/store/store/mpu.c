/* SPDX-License-Identifier: Apache-2.0 */
/* Multipart uploads: parts are written through the data table like objects and referenced
 * from part rows. Completion moves no bytes where the table composes (local files: the
 * object's reference lists the parts' files as extents, a striped part's files each, and the
 * completing metadata transaction moves them from the part rows to the object row); elsewhere it
 * appends them in order into a new object (a cluster: by reference, the same chunks). Either way
 * the whole object's CRC-64/NVME is derived from the stored per-part CRCs without re-reading. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "store/crypt.h"
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool mpu_id_valid(const char *upload_id)
{
    if (!upload_id || strlen(upload_id) != META_ID_LEN)
        return false;
    for (size_t i = 0; i < META_ID_LEN; i++) {
        char c = upload_id[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

wh_status_t store_mpu_create(store_t *st, const char *bucket, const char *key,
                             const data_obj_meta_t *meta, char upload_id[65])
{
    size_t klen = strlen(key);
    if (!store_key_valid(key, klen)) {
        wh_warn("store", "rejecting multipart upload with an invalid key (%zu bytes)", klen);
        return WH_ERR_INVALID;
    }
    char id[META_ID_LEN + 1];
    wh_status_t s = store_random_id(id);
    if (s != WH_OK)
        return s;
    s = meta_upload_create(st->meta, bucket, key, id, meta, time(NULL));
    if (s == WH_OK)
        memcpy(upload_id, id, sizeof id);
    return s;
}

wh_status_t store_mpu_check(store_t *st, const char *bucket, const char *key, const char *upload_id)
{
    if (!mpu_id_valid(upload_id))
        return WH_ERR_NOT_FOUND;
    return meta_upload_get(st->meta, bucket, key, upload_id, NULL);
}

wh_status_t store_mpu_meta(store_t *st, const char *bucket, const char *key, const char *upload_id,
                           data_obj_meta_t *meta)
{
    if (!mpu_id_valid(upload_id))
        return WH_ERR_NOT_FOUND;
    return meta_upload_get(st->meta, bucket, key, upload_id, meta);
}

wh_status_t store_mpu_part_commit(store_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part, store_writer_t *w,
                                  char etag_out[33])
{
    wh_status_t s;
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    memset(&old, 0, sizeof old);
    if (part < 1 || part > STORE_MAX_PARTS) {
        wh_warn("store", "part number %u out of range 1..%d", part, STORE_MAX_PARTS);
        s = WH_ERR_INVALID;
        goto err;
    }
    if (!mpu_id_valid(upload_id)) {
        s = WH_ERR_NOT_FOUND;
        goto err;
    }
    data_part_info_t info;
    memset(&info, 0, sizeof info);
    store_writer_md5_hex(w, info.etag);  /* may mark the writer broken */
    store_crypt_etag_seal(w, info.etag); /* SSE-C: never the part's MD5 */
    if (w->broken) {
        s = WH_ERR_IO;
        goto err;
    }
    info.number = part;
    info.size = w->size;
    info.mtime = time(NULL);
    wh_crc64nvme_b64(w->crc64, info.crc64nvme);
    if (!w->crc32c_unknown) /* else "": no CRC-32C is known for this part */
        wh_crc32c_b64(w->crc32c, info.crc32c);
    s = store_writer_finish(w, &ref);
    if (s != WH_OK)
        goto err;
    s = meta_part_put(st->meta, bucket, key, upload_id, &info, &ref, &old);
    if (s != WH_OK)
        goto err;
    store_release(st, &old);
    data_ref_clear(&old);
    data_ref_clear(&ref);
    store_writer_free(w);
    memcpy(etag_out, info.etag, sizeof info.etag);
    return WH_OK;
err:
    data_ref_clear(&ref);
    store_writer_fail(w, s);
    return s;
}

wh_status_t store_mpu_list_parts(store_t *st, const char *bucket, const char *key,
                                 const char *upload_id, uint32_t marker, uint32_t max,
                                 data_part_info_t **out, size_t *n, bool *truncated)
{
    if (!mpu_id_valid(upload_id))
        return WH_ERR_NOT_FOUND;
    meta_part_t *parts = NULL;
    size_t np = 0;
    bool trunc = false;
    wh_status_t s =
        meta_part_list(st->meta, bucket, key, upload_id, marker, max, &parts, &np, &trunc);
    if (s != WH_OK)
        return s;
    data_part_info_t *arr = malloc((np ? np : 1) * sizeof *arr);
    if (!arr) {
        meta_parts_free(parts, np);
        return WH_ERR_NOMEM;
    }
    for (size_t i = 0; i < np; i++)
        arr[i] = parts[i].info;
    meta_parts_free(parts, np);
    *out = arr;
    *n = np;
    if (truncated)
        *truncated = trunc;
    return WH_OK;
}

wh_status_t store_mpu_list_uploads(store_t *st, const char *bucket, const char *prefix,
                                   const data_upload_page_t *page, data_upload_info_t **out,
                                   size_t *n)
{
    return meta_upload_list(st->meta, bucket, prefix, page, out, n);
}

typedef struct {
    const char *bucket, *key, *upload_id;
} mpu_abort_arg_t;

static wh_status_t store_mpu_abort_fn(store_t *st, void *arg)
{
    mpu_abort_arg_t *a = arg;
    meta_part_t *parts = NULL;
    size_t np = 0;
    wh_status_t s = meta_upload_delete(st->meta, a->bucket, a->key, a->upload_id, &parts, &np);
    if (s != WH_OK)
        return s;
    for (size_t i = 0; i < np; i++)
        store_release(st, &parts[i].ref);
    meta_parts_free(parts, np);
    return WH_OK;
}

wh_status_t store_mpu_abort(store_t *st, const char *bucket, const char *key, const char *upload_id)
{
    if (!mpu_id_valid(upload_id))
        return WH_ERR_NOT_FOUND;
    mpu_abort_arg_t a = {bucket, key, upload_id};
    return store_run_freeing(st, store_mpu_abort_fn, &a);
}

/* true if the completed object's bytes reuse a part's (a chunked table that completes by
 * reference keeps the part's chunk ids): that part's bytes must then not be released. */
static bool mpu_ref_shares(const data_ref_t *obj, const data_ref_t *part)
{
    if (strcmp(obj->id, part->id) == 0)
        return true;
    for (size_t j = 0; j < obj->n_chunks; j++) /* composed: the part's file is an extent */
        if (strcmp(part->id, obj->chunks[j].id) == 0)
            return true;
    for (size_t i = 0; i < part->n_chunks; i++)
        for (size_t j = 0; j < obj->n_chunks; j++)
            if (strcmp(part->chunks[i].id, obj->chunks[j].id) == 0)
                return true;
    return false;
}

/* Compares a client's ETag with a stored one: quotes around the client's are tolerated, and
 * hex case is not significant. */
static bool mpu_etag_eq(const char *given, const char *stored)
{
    if (!given)
        return false;
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return n == strlen(stored) && strncasecmp(given, stored, n) == 0;
}

/* Compares a base64 checksum the client gave with ours; a "-N" suffix on either is the parts
 * count of a composite value, not part of the digest. */
static bool mpu_sum_eq(const char *given, const char *ours)
{
    size_t gn = strcspn(given, "-"), on = strcspn(ours, "-");
    return gn == on && strncmp(given, ours, gn) == 0;
}

/* The object's CRC-32C of the listed parts: COMPOSITE or FULL_OBJECT (sums->crc32c). */
static wh_status_t mpu_crc32c(const meta_part_t *use, size_t n, store_sum_type_t type, char out[16])
{
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t pc;
        if (!use[i].info.crc32c[0])
            return WH_ERR_UNSUPPORTED; /* a part whose bytes went by a table's own RDMA */
        if (wh_crc32c_from_b64(use[i].info.crc32c, &pc) != 0)
            return WH_ERR_INTERNAL;
        if (type == STORE_SUM_FULL_OBJECT) {
            acc = wh_crc32c_combine(acc, pc, use[i].info.size);
        } else {
            uint8_t be[4] = {(uint8_t)(pc >> 24), (uint8_t)(pc >> 16), (uint8_t)(pc >> 8),
                             (uint8_t)pc};
            acc = wh_crc32c(acc, be, sizeof be);
        }
    }
    char b[9];
    wh_crc32c_b64(acc, b);
    if (type == STORE_SUM_FULL_OBJECT)
        snprintf(out, 16, "%s", b);
    else
        snprintf(out, 16, "%s-%zu", b, n);
    return WH_OK;
}

/* A completion under way: what its steps (validate, resolve, compose, commit) hand on. */
typedef struct {
    store_t *st;
    const store_mpu_complete_args_t *a;
    int *bad;
    data_obj_meta_t om;            /* the upload's metadata, then the object's */
    meta_part_t *have, *use, *all; /* the stored parts; the listed ones; those committed away */
    size_t nhave, nall, nchunks;
    store_writer_t *w;    /* where the parts are appended (a table without compose) */
    data_chunk_t *chunks; /* the extents, where the data table composes */
    data_ref_t ref, old;  /* the object's bytes; those of the object it replaced */
    uint64_t crc;         /* the object's CRC-64/NVME, combined from the parts' */
} mpu_done_t;

static wh_status_t mpu_refuse(mpu_done_t *d, int why)
{
    *d->bad = why;
    return WH_ERR_INVALID;
}

/* The list itself: at least one part, at most STORE_MAX_PARTS. */
static wh_status_t mpu_validate(mpu_done_t *d)
{
    if (d->a->n == 0) {
        wh_warn("store", "complete of upload=%s lists no parts", d->a->upload_id);
        return mpu_refuse(d, STORE_MPU_NO_PARTS);
    }
    if (d->a->n > STORE_MAX_PARTS)
        return mpu_refuse(d, STORE_MPU_BAD_PART);
    return WH_OK;
}

/* The listed parts -> the stored ones (d->use): order, then existence and ETag, and the part
 * checksums listed, then sizes (what S3 reports first). */
static wh_status_t mpu_resolve(mpu_done_t *d)
{
    const store_mpu_complete_args_t *a = d->a;
    const store_complete_part_t *parts = a->parts;
    const store_mpu_sums_t *sums = a->sums;
    size_t n = a->n;
    wh_status_t s = meta_part_list(d->st->meta, a->bucket, a->key, a->upload_id, 0, 0, &d->have,
                                   &d->nhave, NULL);
    if (s != WH_OK)
        return s;
    if (!(d->use = calloc(n, sizeof *d->use)))
        return WH_ERR_NOMEM;
    const meta_part_t *have = d->have;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && parts[i].number <= parts[i - 1].number) {
            wh_info("store",
                    "complete of upload=%s: part %u follows part %u; list parts in "
                    "ascending order",
                    a->upload_id, parts[i].number, parts[i - 1].number);
            return mpu_refuse(d, STORE_MPU_BAD_ORDER);
        }
        while (j < d->nhave && have[j].info.number < parts[i].number)
            j++;
        if (j == d->nhave || have[j].info.number != parts[i].number ||
            !mpu_etag_eq(parts[i].etag, have[j].info.etag)) {
            wh_info("store", "complete of upload=%s: part %u %s", a->upload_id, parts[i].number,
                    (j == d->nhave || have[j].info.number != parts[i].number)
                        ? "was not uploaded"
                        : "has a different etag");
            return mpu_refuse(d, STORE_MPU_BAD_PART);
        }
        const char *pc32 = sums && sums->part_crc32c ? sums->part_crc32c[i] : NULL;
        const char *pc64 = sums && sums->part_crc64nvme ? sums->part_crc64nvme[i] : NULL;
        if ((pc32 && have[j].info.crc32c[0] && !mpu_sum_eq(pc32, have[j].info.crc32c)) ||
            (pc64 && !mpu_sum_eq(pc64, have[j].info.crc64nvme))) {
            wh_info("store", "complete of upload=%s: part %u's checksum is not the one listed",
                    a->upload_id, parts[i].number);
            return mpu_refuse(d, STORE_MPU_BAD_PART_SUM);
        }
        d->use[i] = have[j];
    }
    for (size_t i = 0; i + 1 < n; i++) {
        if (d->use[i].info.size < STORE_MIN_PART_SIZE) {
            wh_info("store",
                    "complete of upload=%s: part %u is %llu bytes, below the %llu "
                    "minimum for all but the last part",
                    a->upload_id, d->use[i].info.number, (unsigned long long)d->use[i].info.size,
                    STORE_MIN_PART_SIZE);
            return mpu_refuse(d, STORE_MPU_TOO_SMALL);
        }
    }
    return WH_OK;
}

/* One part's place among the object's extents, at soff in the stored bytes (stored of them);
 * pcrc: the part's CRC-64/NVME. */
static wh_status_t mpu_part_extents(mpu_done_t *d, const meta_part_t *pp, uint64_t soff,
                                    uint64_t stored, uint64_t pcrc)
{
    const char *upload_id = d->a->upload_id;
    /* A part of no stored bytes (only the last may be) is no extent. */
    if (stored && pp->ref.n_chunks) {
        /* A part composed itself (a striped RDMA UploadPart): its extents, moved to the part's
         * place in the object. */
        uint64_t at = 0;
        for (size_t x = 0; x < pp->ref.n_chunks; x++) {
            data_chunk_t *c = &d->chunks[d->nchunks++];
            *c = pp->ref.chunks[x];
            if (c->offset != at || d->om.sse) {
                wh_error("store", "upload=%s part %u has a damaged extent map in metadata",
                         upload_id, pp->info.number);
                return WH_ERR_INTERNAL;
            }
            at += c->length;
            c->offset += soff;
            c->shared = false;
        }
        if (at != stored) {
            wh_error("store", "upload=%s part %u: extents hold %llu bytes, the part %llu",
                     upload_id, pp->info.number, (unsigned long long)at,
                     (unsigned long long)stored);
            return WH_ERR_INTERNAL;
        }
    } else if (stored) {
        data_chunk_t *c = &d->chunks[d->nchunks++];
        memcpy(c->id, pp->ref.id, sizeof c->id);
        c->offset = soff;
        c->length = stored;
        c->crc64nvme = d->om.sse ? 0 : pcrc; /* the part's CRC is of its plaintext */
    }
    return WH_OK;
}

/* The object's bytes from the parts' and its md5-of-md5s ETag and CRC from the stored per-part
 * values: composed (no copy: the parts' data become the object's extents, d->chunks) or
 * appended into a new writer (d->w, a table without compose). Sets the ETag, size and crc. */
static wh_status_t mpu_compose(mpu_done_t *d)
{
    const meta_part_t *use = d->use;
    size_t n = d->a->n;
    wh_status_t s;
    if (n == 0) /* mpu_validate refused it already (said here for the analyzer) */
        return WH_ERR_INVALID;
    if (data_offers_compose(d->st->data)) {
        size_t next = 0; /* a striped part (several files) brings each of its extents */
        for (size_t i = 0; i < n; i++)
            next += use[i].ref.n_chunks ? use[i].ref.n_chunks : 1;
        if (!(d->chunks = calloc(next, sizeof *d->chunks)))
            return WH_ERR_NOMEM;
    } else if ((s = store_writer_open(d->st, &d->w)) != WH_OK) {
        return s;
    }
    wh_md5_t mm;
    if (wh_md5_init(&mm) != 0)
        return WH_ERR_INTERNAL;
    uint64_t off = 0, soff = 0; /* soff: in the stored bytes (blobs when encrypted) */
    s = WH_OK;
    for (size_t i = 0; i < n && s == WH_OK; i++) {
        const meta_part_t *pp = &use[i];
        uint8_t raw[WH_MD5_LEN];
        uint64_t pcrc;
        if (wh_hex_decode(pp->info.etag, strlen(pp->info.etag), raw, sizeof raw) != 0 ||
            wh_crc64nvme_from_b64(pp->info.crc64nvme, &pcrc) != 0) {
            wh_error("store", "upload=%s part %u has a damaged etag or crc in metadata",
                     d->a->upload_id, pp->info.number);
            s = WH_ERR_INTERNAL;
            break;
        }
        wh_md5_update(&mm, raw, sizeof raw);
        d->crc = i == 0 ? pcrc : wh_crc64nvme_combine(d->crc, pcrc, pp->info.size);

        /* An encrypted upload's parts are blobs (crypt.h), composed or appended as stored. */
        uint64_t stored = d->om.sse ? store_sse_blob_size(pp->info.size) : pp->info.size;
        if (d->chunks) {
            s = mpu_part_extents(d, pp, soff, stored, pcrc);
            soff += stored;
            off += pp->info.size;
            continue;
        }
        data_reader_t *pr = NULL;
        s = store_reader_open_ref(d->st, &pp->ref, stored, &pr);
        if (s == WH_ERR_NOT_FOUND) {
            /* Replaced or aborted concurrently. */
            wh_info("store", "upload=%s part %u vanished during completion", d->a->upload_id,
                    pp->info.number);
            s = WH_ERR_PRECONDITION;
        }
        if (s != WH_OK)
            break;
        s = store_writer_append(d->w, pr, 0, stored);
        store_reader_close(pr);
        off += pp->info.size;
    }
    if (s != WH_OK) {
        wh_md5_free(&mm);
        return s;
    }
    uint8_t dig[WH_MD5_LEN];
    wh_md5_final(&mm, dig);
    wh_hex_encode(dig, sizeof dig, d->om.etag);
    snprintf(d->om.etag + 2 * WH_MD5_LEN, sizeof d->om.etag - 2 * WH_MD5_LEN, "-%zu", n);
    d->om.size = off;
    return WH_OK;
}

/* The rest of the object's metadata (mtime, parts, CRC-32C, part sizes, the encrypted parts'
 * numbers) and the checksums the client expects of the whole object. */
static wh_status_t mpu_describe(mpu_done_t *d, data_obj_meta_t *out_meta)
{
    const store_mpu_sums_t *sums = d->a->sums;
    const char *upload_id = d->a->upload_id;
    const meta_part_t *use = d->use;
    size_t n = d->a->n;
    data_obj_meta_t *om = &d->om;
    wh_status_t s;
    om->mtime = time(NULL);
    om->parts = (uint32_t)n;
    om->crc32c[0] = '\0';
    if (sums && sums->crc32c != STORE_SUM_NONE) {
        s = mpu_crc32c(use, n, sums->crc32c, om->crc32c);
        if (s == WH_ERR_UNSUPPORTED) {
            /* Parts a cluster's storage servers pulled by RDMA have no CRC-32C here: the
             * object gets none rather than a wrong one. */
            wh_info("store", "upload=%s: a part has no CRC-32C; the object gets none", upload_id);
            om->crc32c[0] = '\0';
        } else if (s != WH_OK) {
            wh_error("store", "upload=%s has a part with a damaged crc32c in metadata", upload_id);
            return s;
        }
    }
    /* The part sizes stay with the object: GET ?partNumber=N and GetObjectAttributes. */
    free(om->part_sizes);
    om->part_sizes = NULL;
    wh_sbuf_t ps;
    wh_sbuf_init(&ps);
    for (size_t i = 0; i < n; i++)
        wh_sbuf_printf(&ps, i ? ",%llu" : "%llu", (unsigned long long)use[i].info.size);
    if (ps.oom) {
        wh_sbuf_free(&ps);
        return WH_ERR_NOMEM;
    }
    om->part_sizes = wh_sbuf_steal(&ps);
    if (om->sse) { /* each part's blob authenticates its part number: the reader needs them */
        wh_sbuf_t ns;
        wh_sbuf_init(&ns);
        wh_sbuf_puts(&ns, om->sse);
        for (size_t i = 0; i < n; i++)
            wh_sbuf_printf(&ns, i ? ",%u" : ";n=%u", use[i].info.number);
        if (ns.oom) {
            wh_sbuf_free(&ns);
            return WH_ERR_NOMEM;
        }
        free(om->sse);
        om->sse = wh_sbuf_steal(&ns);
    }
    wh_crc64nvme_b64(d->crc, om->crc64nvme);
    if (sums &&
        ((sums->want_crc64nvme && !mpu_sum_eq(sums->want_crc64nvme, om->crc64nvme)) ||
         (sums->want_crc32c && (!om->crc32c[0] || !mpu_sum_eq(sums->want_crc32c, om->crc32c))))) {
        wh_info("store",
                "complete of upload=%s: the object's checksum is not the one the "
                "client expects",
                upload_id);
        if (out_meta) { /* the values computed, for the error message */
            memcpy(out_meta->crc32c, om->crc32c, sizeof om->crc32c);
            memcpy(out_meta->crc64nvme, om->crc64nvme, sizeof om->crc64nvme);
        }
        return mpu_refuse(d, STORE_MPU_BAD_SUM);
    }
    return WH_OK;
}

/* The object's bytes made final, then one metadata transaction: composed, it drops the part
 * rows and commits the object row that names their files, so a crash leaves either the upload
 * or the object, never both or none. Then what it replaced is released. */
static wh_status_t mpu_commit(mpu_done_t *d, data_obj_meta_t *out_meta)
{
    const store_mpu_complete_args_t *a = d->a;
    store_t *st = d->st;
    wh_status_t s;
    if (d->chunks) {
        if (d->nchunks == 0) /* every listed part is empty: the object is the first part's */
            memcpy(d->chunks[d->nchunks++].id, d->use[0].ref.id, sizeof d->chunks[0].id);
        s = data_compose(st->data, d->chunks, d->nchunks, &d->ref);
    } else {
        s = store_writer_finish(d->w, &d->ref);
    }
    if (s != WH_OK)
        return s;
    s = meta_upload_complete(st->meta, a->bucket, a->key, a->upload_id, d->use, a->n, &d->om,
                             &d->ref, &d->old, &d->all, &d->nall, a->cond);
    if (s != WH_OK)
        return s;
    store_writer_free(d->w);
    d->w = NULL;
    store_release(st, &d->old);
    for (size_t i = 0; i < d->nall; i++)
        if (!mpu_ref_shares(&d->ref, &d->all[i].ref))
            store_release(st, &d->all[i].ref);
    if (out_meta) {
        *out_meta = d->om;
        d->om.user_meta_json = NULL; /* moved */
        d->om.acl = NULL;
        d->om.tags = NULL;
        d->om.part_sizes = NULL;
        d->om.sse = NULL;
    }
    return WH_OK;
}

wh_status_t store_mpu_complete(store_t *st, const store_mpu_complete_args_t *a,
                               data_obj_meta_t *out_meta, int *bad)
{
    mpu_done_t d;
    memset(&d, 0, sizeof d);
    d.st = st;
    d.a = a;
    d.bad = bad;
    *bad = 0;
    if (!mpu_id_valid(a->upload_id))
        return WH_ERR_NOT_FOUND;
    wh_status_t s = meta_upload_get(st->meta, a->bucket, a->key, a->upload_id, &d.om);
    if (s != WH_OK)
        return s;
    if ((s = mpu_validate(&d)) == WH_OK && (s = mpu_resolve(&d)) == WH_OK &&
        (s = mpu_compose(&d)) == WH_OK && (s = mpu_describe(&d, out_meta)) == WH_OK)
        s = mpu_commit(&d, out_meta);
    store_writer_fail(d.w, s);
    data_obj_meta_free(&d.om);
    data_ref_clear(&d.ref);
    data_ref_clear(&d.old);
    meta_parts_free(d.all, d.nall);
    free(d.chunks);
    free(d.use); /* its refs are shallow copies of have's */
    meta_parts_free(d.have, d.nhave);
    return s;
}
