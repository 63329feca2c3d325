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

wh_status_t store_mpu_complete(store_t *st, const store_mpu_complete_args_t *a,
                               data_obj_meta_t *out_meta, int *bad)
{
    const char *bucket = a->bucket, *key = a->key, *upload_id = a->upload_id;
    const store_complete_part_t *parts = a->parts;
    size_t n = a->n;
    const store_mpu_sums_t *sums = a->sums;
    data_cond_t *cond = a->cond;
    meta_part_t *have = NULL, *use = NULL, *all = NULL;
    size_t nhave = 0, nall = 0, nchunks = 0;
    store_writer_t *w = NULL;
    data_chunk_t *chunks = NULL; /* the extents, where the data table composes */
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    memset(&old, 0, sizeof old);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    *bad = 0;
    if (!mpu_id_valid(upload_id))
        return WH_ERR_NOT_FOUND;
    wh_status_t s = meta_upload_get(st->meta, bucket, key, upload_id, &om);
    if (s != WH_OK)
        return s;
    if (n == 0) {
        wh_warn("store", "complete of upload=%s lists no parts", upload_id);
        *bad = STORE_MPU_NO_PARTS;
        s = WH_ERR_INVALID;
        goto out;
    }
    if (n > STORE_MAX_PARTS) {
        *bad = STORE_MPU_BAD_PART;
        s = WH_ERR_INVALID;
        goto out;
    }
    s = meta_part_list(st->meta, bucket, key, upload_id, 0, 0, &have, &nhave, NULL);
    if (s != WH_OK)
        goto out;
    use = calloc(n, sizeof *use);
    if (!use) {
        s = WH_ERR_NOMEM;
        goto out;
    }

    /* Validate: order, then existence and ETag, then sizes (what S3 reports first). */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && parts[i].number <= parts[i - 1].number) {
            wh_info("store",
                    "complete of upload=%s: part %u follows part %u; list parts in "
                    "ascending order",
                    upload_id, parts[i].number, parts[i - 1].number);
            *bad = STORE_MPU_BAD_ORDER;
            s = WH_ERR_INVALID;
            goto out;
        }
        while (j < nhave && have[j].info.number < parts[i].number)
            j++;
        if (j == nhave || have[j].info.number != parts[i].number ||
            !mpu_etag_eq(parts[i].etag, have[j].info.etag)) {
            wh_info("store", "complete of upload=%s: part %u %s", upload_id, parts[i].number,
                    (j == nhave || have[j].info.number != parts[i].number)
                        ? "was not uploaded"
                        : "has a different etag");
            *bad = STORE_MPU_BAD_PART;
            s = WH_ERR_INVALID;
            goto out;
        }
        const char *pc32 = sums && sums->part_crc32c ? sums->part_crc32c[i] : NULL;
        const char *pc64 = sums && sums->part_crc64nvme ? sums->part_crc64nvme[i] : NULL;
        if ((pc32 && have[j].info.crc32c[0] && !mpu_sum_eq(pc32, have[j].info.crc32c)) ||
            (pc64 && !mpu_sum_eq(pc64, have[j].info.crc64nvme))) {
            wh_info("store", "complete of upload=%s: part %u's checksum is not the one listed",
                    upload_id, parts[i].number);
            *bad = STORE_MPU_BAD_PART_SUM;
            s = WH_ERR_INVALID;
            goto out;
        }
        use[i] = have[j];
    }
    for (size_t i = 0; i + 1 < n; i++) {
        if (use[i].info.size < STORE_MIN_PART_SIZE) {
            wh_info("store",
                    "complete of upload=%s: part %u is %llu bytes, below the %llu "
                    "minimum for all but the last part",
                    upload_id, use[i].info.number, (unsigned long long)use[i].info.size,
                    STORE_MIN_PART_SIZE);
            *bad = STORE_MPU_TOO_SMALL;
            s = WH_ERR_INVALID;
            goto out;
        }
    }

    /* md5-of-md5s and the combined CRC from the stored per-part values; the bytes are either
     * composed (no copy: the parts' data become the object's extents) or appended into a new
     * writer (a table without compose). */
    if (data_offers_compose(st->data)) {
        size_t next = 0; /* a striped part (several files) brings each of its extents */
        for (size_t i = 0; i < n; i++)
            next += use[i].ref.n_chunks ? use[i].ref.n_chunks : 1;
        if (!(chunks = calloc(next, sizeof *chunks))) {
            s = WH_ERR_NOMEM;
            goto out;
        }
    } else if ((s = store_writer_open(st, &w)) != WH_OK) {
        goto out;
    }
    wh_md5_t mm;
    if (wh_md5_init(&mm) != 0) {
        s = WH_ERR_INTERNAL;
        goto out;
    }
    uint64_t off = 0, soff = 0, crc = 0; /* soff: in the stored bytes (blobs when encrypted) */
    for (size_t i = 0; i < n; i++) {
        const meta_part_t *pp = &use[i];
        uint8_t raw[WH_MD5_LEN];
        uint64_t pcrc;
        if (wh_hex_decode(pp->info.etag, strlen(pp->info.etag), raw, sizeof raw) != 0 ||
            wh_crc64nvme_from_b64(pp->info.crc64nvme, &pcrc) != 0) {
            wh_error("store", "upload=%s part %u has a damaged etag or crc in metadata", upload_id,
                     pp->info.number);
            wh_md5_free(&mm);
            s = WH_ERR_INTERNAL;
            goto out;
        }
        wh_md5_update(&mm, raw, sizeof raw);
        crc = i == 0 ? pcrc : wh_crc64nvme_combine(crc, pcrc, pp->info.size);

        /* An encrypted upload's parts are blobs (crypt.h), composed or appended as stored. */
        uint64_t stored = om.sse ? store_sse_blob_size(pp->info.size) : pp->info.size;
        if (chunks) {
            /* A part of no stored bytes (only the last may be) is no extent. */
            if (stored && pp->ref.n_chunks) {
                /* A part composed itself (a striped RDMA UploadPart): its extents, moved to
                 * the part's place in the object. */
                uint64_t at = 0;
                for (size_t x = 0; x < pp->ref.n_chunks; x++) {
                    data_chunk_t *c = &chunks[nchunks++];
                    *c = pp->ref.chunks[x];
                    if (c->offset != at || om.sse) {
                        wh_error("store", "upload=%s part %u has a damaged extent map in metadata",
                                 upload_id, pp->info.number);
                        wh_md5_free(&mm);
                        s = WH_ERR_INTERNAL;
                        goto out;
                    }
                    at += c->length;
                    c->offset += soff;
                    c->shared = false;
                }
                if (at != stored) {
                    wh_error("store", "upload=%s part %u: extents hold %llu bytes, the part %llu",
                             upload_id, pp->info.number, (unsigned long long)at,
                             (unsigned long long)stored);
                    wh_md5_free(&mm);
                    s = WH_ERR_INTERNAL;
                    goto out;
                }
            } else if (stored) {
                data_chunk_t *c = &chunks[nchunks++];
                memcpy(c->id, pp->ref.id, sizeof c->id);
                c->offset = soff;
                c->length = stored;
                c->crc64nvme = om.sse ? 0 : pcrc; /* the part's CRC is of its plaintext */
            }
            soff += stored;
            off += pp->info.size;
            continue;
        }
        data_reader_t *pr = NULL;
        s = store_reader_open_ref(st, &pp->ref, stored, &pr);
        if (s != WH_OK) {
            if (s == WH_ERR_NOT_FOUND) {
                /* Replaced or aborted concurrently. */
                wh_info("store", "upload=%s part %u vanished during completion", upload_id,
                        pp->info.number);
                s = WH_ERR_PRECONDITION;
            }
            wh_md5_free(&mm);
            goto out;
        }
        s = store_writer_append(w, pr, 0, stored);
        store_reader_close(pr);
        if (s != WH_OK) {
            wh_md5_free(&mm);
            goto out;
        }
        off += pp->info.size;
    }
    uint8_t dig[WH_MD5_LEN];
    wh_md5_final(&mm, dig);

    wh_hex_encode(dig, sizeof dig, om.etag);
    snprintf(om.etag + 2 * WH_MD5_LEN, sizeof om.etag - 2 * WH_MD5_LEN, "-%zu", n);
    om.size = off;
    om.mtime = time(NULL);
    om.parts = (uint32_t)n;
    om.crc32c[0] = '\0';
    if (sums && sums->crc32c != STORE_SUM_NONE) {
        s = mpu_crc32c(use, n, sums->crc32c, om.crc32c);
        if (s == WH_ERR_UNSUPPORTED) {
            /* Parts a cluster's storage servers pulled by RDMA have no CRC-32C here: the
             * object gets none rather than a wrong one. */
            wh_info("store", "upload=%s: a part has no CRC-32C; the object gets none", upload_id);
            om.crc32c[0] = '\0';
            s = WH_OK;
        } else if (s != WH_OK) {
            wh_error("store", "upload=%s has a part with a damaged crc32c in metadata", upload_id);
            goto out;
        }
    }
    /* The part sizes stay with the object: GET ?partNumber=N and GetObjectAttributes. */
    free(om.part_sizes);
    om.part_sizes = NULL;
    {
        wh_sbuf_t ps;
        wh_sbuf_init(&ps);
        for (size_t i = 0; i < n; i++)
            wh_sbuf_printf(&ps, i ? ",%llu" : "%llu", (unsigned long long)use[i].info.size);
        if (ps.oom) {
            wh_sbuf_free(&ps);
            s = WH_ERR_NOMEM;
            goto out;
        }
        om.part_sizes = wh_sbuf_steal(&ps);
    }
    if (om.sse) { /* each part's blob authenticates its part number: the reader needs them */
        wh_sbuf_t ns;
        wh_sbuf_init(&ns);
        wh_sbuf_puts(&ns, om.sse);
        for (size_t i = 0; i < n; i++)
            wh_sbuf_printf(&ns, i ? ",%u" : ";n=%u", use[i].info.number);
        if (ns.oom) {
            wh_sbuf_free(&ns);
            s = WH_ERR_NOMEM;
            goto out;
        }
        free(om.sse);
        om.sse = wh_sbuf_steal(&ns);
    }
    wh_crc64nvme_b64(crc, om.crc64nvme);
    if (sums &&
        ((sums->want_crc64nvme && !mpu_sum_eq(sums->want_crc64nvme, om.crc64nvme)) ||
         (sums->want_crc32c && (!om.crc32c[0] || !mpu_sum_eq(sums->want_crc32c, om.crc32c))))) {
        wh_info("store",
                "complete of upload=%s: the object's checksum is not the one the "
                "client expects",
                upload_id);
        *bad = STORE_MPU_BAD_SUM;
        s = WH_ERR_INVALID;
        if (out_meta) { /* the values computed, for the error message */
            memcpy(out_meta->crc32c, om.crc32c, sizeof om.crc32c);
            memcpy(out_meta->crc64nvme, om.crc64nvme, sizeof om.crc64nvme);
        }
        goto out;
    }

    if (chunks) {
        if (nchunks == 0) /* every listed part is empty: the object is the first part's */
            memcpy(chunks[nchunks++].id, use[0].ref.id, sizeof chunks[0].id);
        s = data_compose(st->data, chunks, nchunks, &ref);
    } else {
        s = store_writer_finish(w, &ref);
    }
    if (s != WH_OK)
        goto out;
    /* Composed: one transaction drops the part rows and commits the object row that names
     * their files, so a crash leaves either the upload or the object, never both or none. */
    s = meta_upload_complete(st->meta, bucket, key, upload_id, use, n, &om, &ref, &old, &all, &nall,
                             cond);
    if (s != WH_OK)
        goto out;
    store_writer_free(w);
    w = NULL;
    store_release(st, &old);
    for (size_t i = 0; i < nall; i++)
        if (!mpu_ref_shares(&ref, &all[i].ref))
            store_release(st, &all[i].ref);
    if (out_meta) {
        *out_meta = om;
        om.user_meta_json = NULL; /* moved */
        om.acl = NULL;
        om.tags = NULL;
        om.part_sizes = NULL;
        om.sse = NULL;
    }
out:
    store_writer_fail(w, s);
    data_obj_meta_free(&om);
    data_ref_clear(&ref);
    data_ref_clear(&old);
    meta_parts_free(all, nall);
    free(chunks);
    free(use); /* its refs are shallow copies of have's */
    meta_parts_free(have, nhave);
    return s;
}
