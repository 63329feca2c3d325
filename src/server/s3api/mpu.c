/* SPDX-License-Identifier: Apache-2.0 */
/* Multipart uploads: CreateMultipartUpload, UploadPart (the PUT body path of object_write.c, or
 * RDMA), UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads. */
#include "s3api/s3api.h"
#include "s3/range.h"
#include "s3/xml.h"

#include <openssl/crypto.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int s3api_mpu_part_query(front_req_t *r, s3h_out_t *o)
{
    const char *pn = front_route_q(&r->route, "partNumber");
    uint64_t n;
    if (!pn || wh_parse_u64(pn, strlen(pn), &n) != 0 || n < 1 || n > STORE_MAX_PARTS)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "Part number must be an integer between 1 and 10000, inclusive");
    r->part_number = (uint32_t)n;
    free(r->upload_id);
    r->upload_id = strdup(front_route_q(&r->route, "uploadId"));
    if (!r->upload_id)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    wh_status_t st = store_mpu_check(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "looking up the upload");
    return 0;
}

int s3api_mpu_part_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3api_mpu_part_query(r, o)))
        return ret;
    return s3api_put_begin(r, o, true);
}

int s3api_mpu_part_finish(front_req_t *r, s3h_out_t *o)
{
    return s3api_put_finish(r, o, true);
}

/* Copies [off, off+len) of the source reader (decrypting where encrypted) into the request's
 * writer. */
static int copy_range(front_req_t *r, s3h_out_t *o, data_reader_t *rd, uint64_t off, uint64_t len)
{
    const size_t chunk = 4u << 20;
    char *buf = malloc(chunk);
    if (!buf)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    int ret = 0;
    for (uint64_t done = 0; done < len;) {
        size_t n = (size_t)WH_MIN((uint64_t)chunk, len - done);
        if (store_reader_pread(rd, buf, n, off + done) != WH_OK ||
            store_writer_write(r->w, buf, n) != WH_OK) {
            ret = s3h_err(o, S3_ERR_INTERNAL, "reading the copy source failed");
            break;
        }
        done += n;
    }
    free(buf);
    return ret;
}

int s3api_mpu_part_copy(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3api_mpu_part_query(r, o)))
        return ret;
    s3api_copy_src_t c;
    if ((ret = s3api_copy_src_parse(r, o, &c)))
        return ret;
    data_obj_meta_t sm, rm;
    memset(&sm, 0, sizeof sm);
    memset(&rm, 0, sizeof rm);
    data_reader_t *rd = NULL;
    s3h_sse_req_t sq;
    memset(&sq, 0, sizeof sq);
    if ((ret = s3api_copy_src_open(r, o, &c, &sm, NULL)))
        goto out;
    /* Exactly the version authorized above, through a reader (local or not, encrypted or
     * not). */
    wh_status_t ost = store_object_reader(
        s3h_st(r),
        &(store_read_args_t){.bucket = c.bucket,
                             .key = c.key,
                             .version_id = sm.version_id[0] ? sm.version_id : NULL},
        &rm, &rd);
    if (ost == WH_OK && (strcmp(rm.etag, sm.etag) != 0 || rm.size != sm.size))
        ost = WH_ERR_NOT_FOUND;
    if (ost != WH_OK) {
        ret = ost == WH_ERR_NOT_FOUND ? s3h_err(o, S3_ERR_NO_SUCH_KEY, "the copy source vanished")
                                      : s3h_err_status(r, o, ost, "opening the copy source");
        goto out;
    }
    if ((ret = s3h_sse_request(r, o, true, false, &sq)))
        goto out;
    /* The source's key checked and given to its reader, as a GET's. */
    if ((ret = s3h_sse_open(r, o, &rm, &sq, rd)))
        goto out;
    uint64_t off = 0, len = sm.size;
    const char *rng = front_hdr(r, "x-amz-copy-source-range");
    if (rng && s3_copy_range_parse(rng, sm.size, &off, &len) != S3_RANGE_OK) {
        ret = s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                      "x-amz-copy-source-range must be bytes=first-last within the source");
        goto out;
    }
    wh_status_t st = store_writer_open(s3h_st(r), &r->w);
    if (st != WH_OK) {
        ret = s3h_err_status(r, o, st, "opening a temp file");
        goto out;
    }
    if ((ret = s3api_put_layout(r, o)) || (ret = s3h_sse_writer(r, o, true)) ||
        (ret = copy_range(r, o, rd, off, len)))
        goto out;
    char e[33];
    st =
        store_mpu_part_commit(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id, r->part_number, r->w, e);
    r->w = NULL;
    if (st == WH_ERR_NOT_FOUND) {
        ret = s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
        goto out;
    }
    if (st != WH_OK) {
        ret = s3h_err_status(r, o, st, "committing the part");
        goto out;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<CopyPartResult xmlns=\"" S3H_XMLNS "\">");
    s3h_xml_time(&b, "LastModified", time(NULL));
    s3h_xml_etag(&b, e);
    wh_sbuf_puts(&b, "</CopyPartResult>");
    s3h_sse_reply(r, o);
    ret = s3h_ok_xml(o, 200, &b);
out:
    store_reader_close(rd);
    s3h_sse_req_wipe(&sq);
    data_obj_meta_free(&rm);
    data_obj_meta_free(&sm);
    s3api_copy_src_free(&c);
    return ret;
}

int s3api_mpu_create(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)) ||
        (ret = s3h_mpu_cap_check(r, o)))
        return ret;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    char id[65];
    if ((ret = s3api_meta_from_request(r, o, &m)) || (ret = s3api_mpu_sum_request(r, o, &m)) ||
        (ret = s3h_tags_from_request(r, o, &m.tags)) || (ret = s3h_lock_from_request(r, o, &m))) {
        data_obj_meta_free(&m);
        return ret;
    }
    /* The upload's encryption, which its parts take (their SSE-C key checked against it). */
    s3h_sse_req_t sq;
    uint8_t key[STORE_SSE_KEY_LEN];
    if ((ret = s3h_sse_request(r, o, false, true, &sq)) || (ret = s3h_sse_default(r, o, &sq)) ||
        (ret = s3h_sse_new(r, o, &sq, &m.sse, key))) {
        s3h_sse_req_wipe(&sq);
        data_obj_meta_free(&m);
        return ret;
    }
    OPENSSL_cleanse(key, sizeof key);
    wh_status_t st = store_mpu_create(s3h_st(r), s3h_b(r), s3h_k(r), &m, id);
    if (st == WH_OK)
        s3h_sse_headers(o, m.sse, &sq);
    s3h_sse_req_wipe(&sq);
    data_obj_meta_free(&m);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "creating the upload");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<InitiateMultipartUploadResult xmlns=\"" S3H_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", s3h_b(r));
    s3_xml_elem(&b, "Key", s3h_k(r));
    s3_xml_elem(&b, "UploadId", id);
    wh_sbuf_puts(&b, "</InitiateMultipartUploadResult>");
    return s3h_ok_xml(o, 200, &b);
}

int s3api_mpu_complete_begin(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_key_check(r, o);
    if (ret)
        return ret;
    const char *id = front_route_q(&r->route, "uploadId");
    wh_status_t st = store_mpu_check(s3h_st(r), s3h_b(r), s3h_k(r), id);
    /* A gone upload may be a retry of a Complete that succeeded: the part list decides
     * (s3h_mpu_completed_before), so it is read when the bucket is there. */
    if (st == WH_ERR_NOT_FOUND && store_bucket_exists(s3h_st(r), s3h_b(r)) != WH_OK)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return s3h_err_status(r, o, st, "looking up the upload");
    return 0; /* read the part list */
}

static int complete_xml(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<CompleteMultipartUploadResult xmlns=\"" S3H_XMLNS "\">");
    const char *host = front_hdr(r, "host");
    wh_sbuf_t loc;
    wh_sbuf_init(&loc);
    wh_sbuf_printf(&loc, "http://%s/%s/", host ? host : "localhost", s3h_b(r));
    s3_uri_encode(s3h_k(r), strlen(s3h_k(r)), 0, &loc);
    s3_xml_elem(&b, "Location", loc.data ? loc.data : "");
    wh_sbuf_free(&loc);
    s3_xml_elem(&b, "Bucket", s3h_b(r));
    s3_xml_elem(&b, "Key", s3h_k(r));
    s3h_xml_etag(&b, m->etag);
    if (m->crc32c[0])
        s3_xml_elem(&b, "ChecksumCRC32C", m->crc32c);
    if (m->crc64nvme[0])
        s3_xml_elem(&b, "ChecksumCRC64NVME", m->crc64nvme);
    s3_xml_elem(&b, "ChecksumType", strchr(m->crc32c, '-') ? "COMPOSITE" : "FULL_OBJECT");
    wh_sbuf_puts(&b, "</CompleteMultipartUploadResult>");
    return s3h_ok_xml(o, 200, &b);
}

int s3api_mpu_complete_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_part_ref_t *parts = NULL;
    store_complete_part_t *cp = NULL;
    const char **pc32 = NULL, **pc64 = NULL;
    size_t n = 0;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    s3_err_t e = s3_xml_parse_complete(r->buf.data ? r->buf.data : "", r->buf.len, &parts, &n);
    if (e != S3_OK)
        return s3h_err(o, e, NULL);
    if (n == 0) {
        ret = s3h_err(o, S3_ERR_MALFORMED_XML, "CompleteMultipartUpload lists no parts");
        goto out;
    }
    for (size_t i = 1; i < n; i++) {
        if (parts[i].number <= parts[i - 1].number) {
            ret = s3h_err(o, S3_ERR_INVALID_PART_ORDER, NULL);
            goto out;
        }
    }
    cp = calloc(n, sizeof *cp);
    pc32 = calloc(n, sizeof *pc32);
    pc64 = calloc(n, sizeof *pc64);
    if (!cp || !pc32 || !pc64) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        cp[i].number = parts[i].number;
        cp[i].etag = parts[i].etag;
        pc32[i] = parts[i].crc32c[0] ? parts[i].crc32c : NULL;
        pc64[i] = parts[i].crc64nvme[0] ? parts[i].crc64nvme : NULL;
    }
    store_mpu_sums_t sums;
    if ((ret = s3api_mpu_sum_complete(r, o, &sums))) {
        if (ret == 404 && o->code && strcmp(o->code, "NoSuchUpload") == 0 &&
            s3h_mpu_completed_before(r, cp, n, &m))
            ret = complete_xml(r, o, &m); /* a retry of a Complete that succeeded: 200 */
        goto out;
    }
    sums.part_crc32c = pc32;
    sums.part_crc64nvme = pc64;
    int bad = 0;
    data_cond_t cond;
    if ((ret = s3h_write_cond(r, o, &cond)))
        goto out;
    wh_status_t st = store_mpu_complete(
        s3h_st(r),
        &(store_mpu_complete_args_t){.bucket = s3h_b(r),
                                     .key = s3h_k(r),
                                     .upload_id = front_route_q(&r->route, "uploadId"),
                                     .parts = cp,
                                     .n = n,
                                     .sums = &sums,
                                     .cond = &cond},
        &m, &bad);
    if (st != WH_OK && cond.failed)
        ret = s3h_write_cond_err(r, o, st, &cond, "completing the upload");
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_PART)
        ret = s3h_err(o, S3_ERR_INVALID_PART, NULL);
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_PART_SUM)
        ret = s3h_err(o, S3_ERR_INVALID_PART,
                      "One or more of the specified parts has a checksum "
                      "that does not match the uploaded part's");
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_SUM && sums.want_crc64nvme &&
             !(m.crc64nvme[0] && strncmp(sums.want_crc64nvme, m.crc64nvme, 12) == 0))
        ret = s3h_errf(o, S3_ERR_BAD_DIGEST,
                       "The CRC64NVME you specified (%.20s) did not match "
                       "the calculated checksum (%s).",
                       sums.want_crc64nvme, m.crc64nvme);
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_SUM)
        ret = s3h_errf(o, S3_ERR_BAD_DIGEST,
                       "The CRC32C you specified (%.20s) did not match "
                       "the calculated checksum (%s).",
                       sums.want_crc32c ? sums.want_crc32c : "",
                       m.crc32c[0] ? m.crc32c : "none: the upload names no CRC32C");
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_ORDER)
        ret = s3h_err(o, S3_ERR_INVALID_PART_ORDER, NULL);
    else if (st == WH_ERR_INVALID && bad == STORE_MPU_TOO_SMALL)
        ret = s3h_err(o, S3_ERR_ENTITY_TOO_SMALL, NULL);
    else if (st == WH_ERR_NOT_FOUND && s3h_mpu_completed_before(r, cp, n, &m))
        ret = complete_xml(r, o, &m); /* a retry of a Complete that succeeded: 200 again */
    else if (st == WH_ERR_NOT_FOUND)
        ret = s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    else if (st != WH_OK)
        ret = s3h_write_cond_err(r, o, st, &cond, "completing the upload");
    else {
        s3h_out_version(o, m.version_id, false);
        s3h_sse_headers(o, m.sse, NULL); /* SSE-S3 says so; SSE-C echoes only a key given */
        ret = complete_xml(r, o, &m);
    }
out:
    data_obj_meta_free(&m);
    free(cp);
    free(pc32);
    free(pc64);
    free(parts);
    return ret;
}

int s3api_mpu_abort(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_key_check(r, o);
    if (ret)
        return ret;
    wh_status_t st =
        store_mpu_abort(s3h_st(r), s3h_b(r), s3h_k(r), front_route_q(&r->route, "uploadId"));
    if (st == WH_OK)
        return s3h_ok(o, 204);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    return s3h_err_status(r, o, st, "aborting the upload");
}

int s3api_mpu_list_parts(front_req_t *r, s3h_out_t *o)
{
    uint64_t marker, max;
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_q_uint(r, o, "part-number-marker", 0, &marker)) ||
        (ret = s3h_q_uint(r, o, "max-parts", 1000, &max)))
        return ret;
    if (max > 1000)
        max = 1000;
    if (marker > STORE_MAX_PARTS)
        marker = STORE_MAX_PARTS;
    const char *id = front_route_q(&r->route, "uploadId");
    data_part_info_t *ps = NULL;
    size_t n = 0;
    bool trunc = false;
    wh_status_t st = store_mpu_list_parts(s3h_st(r), s3h_b(r), s3h_k(r), id, (uint32_t)marker,
                                          (uint32_t)max, &ps, &n, &trunc);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "listing parts");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ListPartsResult xmlns=\"" S3H_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", s3h_b(r));
    s3_xml_elem(&b, "Key", s3h_k(r));
    s3_xml_elem(&b, "UploadId", id);
    s3h_xml_owner(r, &b, "Initiator");
    s3h_xml_owner(r, &b, "Owner");
    s3_xml_elem(&b, "StorageClass", "STANDARD");
    s3_xml_elem_u64(&b, "PartNumberMarker", marker);
    s3_xml_elem_u64(&b, "NextPartNumberMarker", n ? ps[n - 1].number : marker);
    s3_xml_elem_u64(&b, "MaxParts", max);
    s3_xml_elem(&b, "IsTruncated", trunc ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<Part>");
        s3_xml_elem_u64(&b, "PartNumber", ps[i].number);
        s3h_xml_time(&b, "LastModified", ps[i].mtime);
        s3h_xml_etag(&b, ps[i].etag);
        s3_xml_elem_u64(&b, "Size", ps[i].size);
        if (ps[i].crc32c[0])
            s3_xml_elem(&b, "ChecksumCRC32C", ps[i].crc32c);
        if (ps[i].crc64nvme[0])
            s3_xml_elem(&b, "ChecksumCRC64NVME", ps[i].crc64nvme);
        wh_sbuf_puts(&b, "</Part>");
    }
    wh_sbuf_puts(&b, "</ListPartsResult>");
    free(ps);
    return s3h_ok_xml(o, 200, &b);
}

/* Where a page of ListMultipartUploads starts: after key-marker, and within that key after
 * upload-id-marker (the upload of that id where it is one, else ids greater than it, as S3
 * words it); with a delimiter, a key-marker that is a common prefix skips the keys under it. */
static bool upload_before_marker(const data_upload_info_t *u, const char *km, const char *um,
                                 bool *seen_um, const char *delim)
{
    int c = strcmp(u->key, km);
    if (c < 0)
        return true;
    if (c == 0) {
        if (!um || !*um)
            return true;
        if (*seen_um)
            return false;
        if (strcmp(u->upload_id, um) == 0) {
            *seen_um = true;
            return true;
        }
        return strcmp(u->upload_id, um) < 0;
    }
    /* A key-marker without an upload-id-marker that ends in the delimiter was a CommonPrefix
     * (a page that ended on one says NextUploadIdMarker ""); with one, it is a key. */
    size_t kl = strlen(km), dl = delim ? strlen(delim) : 0;
    return dl && (!um || !*um) && kl >= dl && strcmp(km + kl - dl, delim) == 0 &&
           strncmp(u->key, km, kl) == 0;
}

/* The first key after every key that starts with p[0..n): p with its last byte raised (a key
 * is UTF-8, which never holds 0xff, so the byte never overflows). */
static void key_past_prefix(char *p, size_t n)
{
    p[n - 1] = (char)((unsigned char)p[n - 1] + 1);
}

int s3api_mpu_list_uploads(front_req_t *r, s3h_out_t *o)
{
    bool url;
    uint64_t max;
    int ret;
    if ((ret = s3h_q_encoding_url(r, o, &url)) ||
        (ret = s3h_q_uint(r, o, "max-uploads", 1000, &max)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    if (max > 1000)
        max = 1000;
    const char *prefix = front_route_q(&r->route, "prefix");
    const char *delim = front_route_q(&r->route, "delimiter");
    const char *km = front_route_q(&r->route, "key-marker");
    const char *um = front_route_q(&r->route, "upload-id-marker");
    if (delim && !*delim)
        delim = NULL;
    size_t plen = prefix ? strlen(prefix) : 0, dl = delim ? strlen(delim) : 0;
    /* Page by page from the metadata: rows from key-marker on (all of key-marker's uploads,
     * for the upload-id-marker rule), max + 1 at a time; a rolled-up CommonPrefix skips to
     * the first key past it. So a page reads about what it shows, never the whole bucket. */
    data_upload_info_t *us = NULL;
    size_t n = 0;
    wh_sbuf_t up, cp;
    wh_sbuf_init(&up);
    wh_sbuf_init(&cp);
    size_t shown = 0;
    bool trunc = false, seen_um = false, done = false;
    char *next_key = NULL, *next_id = NULL, *last_cp = NULL, *from = NULL;
    char from_id[sizeof us->upload_id] = "";
    time_t from_ini = 0;
    size_t last_cp_len = 0;
    if (km && *km && (!prefix || strcmp(km, prefix) > 0) && !(from = strdup(km)))
        up.oom = true;
    size_t kml = from ? strlen(from) : 0;
    if (from && dl && (!um || !*um) && kml >= dl && strcmp(from + kml - dl, delim) == 0)
        key_past_prefix(from, kml); /* a CommonPrefix: past it */
    /* A marker upload that still exists: the metadata lists from just past it in its own
     * order (key, initiated, upload id), so uploads of the marker's key initiated in other
     * seconds are neither shown twice nor skipped. One that is gone: S3's rule, upload ids
     * above the marker (upload_before_marker). */
    if (from && um && *um && strcmp(from, km) == 0) {
        data_obj_meta_t mk;
        memset(&mk, 0, sizeof mk);
        if (store_mpu_meta(s3h_st(r), s3h_b(r), km, um, &mk) == WH_OK &&
            strlen(um) < sizeof from_id) {
            snprintf(from_id, sizeof from_id, "%s", um);
            from_ini = mk.mtime;
            seen_um = true;
        }
        data_obj_meta_free(&mk);
    }
    wh_status_t st = WH_OK;
    while (!done && !up.oom && !cp.oom) {
        data_upload_page_t page = {.from_key = from,
                                   .after_id = from_id[0] ? from_id : NULL,
                                   .after_initiated = from_ini,
                                   .limit = max + 1};
        data_upload_info_free(us, n);
        us = NULL;
        n = 0;
        st = store_mpu_list_uploads(s3h_st(r), s3h_b(r), prefix, &page, &us, &n);
        if (st != WH_OK)
            break;
        size_t i = 0;
        for (; i < n; i++) {
            const data_upload_info_t *u = &us[i];
            if (km && *km && upload_before_marker(u, km, um, &seen_um, delim))
                continue;
            /* With a delimiter, keys with it after the prefix roll up into one
             * CommonPrefix. */
            const char *d = dl ? strstr(u->key + plen, delim) : NULL;
            size_t cl = d ? (size_t)(d - u->key) + dl : 0;
            if (d && last_cp && cl == last_cp_len && strncmp(u->key, last_cp, cl) == 0)
                continue;
            if (shown == max) {
                trunc = true;
                done = true;
                break;
            }
            shown++;
            if (d) {
                free(last_cp);
                if (!(last_cp = strndup(u->key, cl))) {
                    cp.oom = true;
                    break;
                }
                last_cp_len = cl;
                wh_sbuf_puts(&cp, "<CommonPrefixes>");
                s3h_xml_enc(&cp, "Prefix", last_cp, url);
                wh_sbuf_puts(&cp, "</CommonPrefixes>");
                free(next_key);
                next_key = strdup(last_cp);
                free(next_id);
                next_id = NULL;
                /* Past every key under it. */
                free(from);
                if (!next_key || !(from = strdup(last_cp))) {
                    cp.oom = true;
                    break;
                }
                key_past_prefix(from, cl);
                from_id[0] = '\0';
                break; /* fetch again from there */
            }
            wh_sbuf_puts(&up, "<Upload>");
            s3h_xml_enc(&up, "Key", u->key, url);
            s3_xml_elem(&up, "UploadId", u->upload_id);
            s3h_xml_owner_of(r, &up, "Initiator", u->owner); /* who created it, not the caller */
            s3h_xml_owner_of(r, &up, "Owner", u->owner);
            s3_xml_elem(&up, "StorageClass", "STANDARD");
            s3h_xml_time(&up, "Initiated", u->initiated);
            wh_sbuf_puts(&up, "</Upload>");
            free(next_key);
            free(next_id);
            next_key = strdup(u->key);
            next_id = strdup(u->upload_id);
            if (!next_key || !next_id)
                up.oom = true;
        }
        if (done || i < n)
            continue; /* truncated, or a CommonPrefix moved the start */
        if (n <= max) {
            done = true; /* the last rows */
            break;
        }
        /* Every row of a full page was skipped or shown: on from the last one. */
        free(from);
        if (!(from = strdup(us[n - 1].key))) {
            up.oom = true;
            break;
        }
        snprintf(from_id, sizeof from_id, "%s", us[n - 1].upload_id);
        from_ini = us[n - 1].initiated;
    }
    data_upload_info_free(us, n);
    free(from);
    free(last_cp);
    if (st != WH_OK) {
        wh_sbuf_free(&up);
        wh_sbuf_free(&cp);
        free(next_key);
        free(next_id);
        return s3h_err_status(r, o, st, "listing uploads");
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ListMultipartUploadsResult xmlns=\"" S3H_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", s3h_b(r));
    s3h_xml_enc(&b, "KeyMarker", km ? km : "", url);
    s3_xml_elem(&b, "UploadIdMarker", um ? um : "");
    if (trunc && next_key) {
        s3h_xml_enc(&b, "NextKeyMarker", next_key, url);
        s3_xml_elem(&b, "NextUploadIdMarker", next_id ? next_id : "");
    }
    if (delim)
        s3h_xml_enc(&b, "Delimiter", delim, url);
    s3h_xml_enc(&b, "Prefix", prefix ? prefix : "", url);
    s3_xml_elem_u64(&b, "MaxUploads", max);
    if (url)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", trunc ? "true" : "false");
    if (up.len)
        wh_sbuf_append(&b, up.data, up.len);
    if (cp.len)
        wh_sbuf_append(&b, cp.data, cp.len);
    wh_sbuf_puts(&b, "</ListMultipartUploadsResult>");
    b.oom |= up.oom || cp.oom;
    wh_sbuf_free(&up);
    wh_sbuf_free(&cp);
    free(next_key);
    free(next_id);
    return s3h_ok_xml(o, 200, &b);
}
