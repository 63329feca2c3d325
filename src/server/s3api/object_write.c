/* SPDX-License-Identifier: Apache-2.0 */
/* Object writes: PutObject (the HTTP body path, shared with UploadPart), CopyObject,
 * DeleteObject and DeleteObjects. */
#include "s3api/s3api.h"
#include "base/crc.h"
#include "base/log.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD "s3"

/* ---- PUT (object and part) -------------------------------------------------------------- */

int s3api_put_begin(front_req_t *r, s3h_out_t *o, bool part)
{
    int ret;
    if (!part) {
        /* Metadata that cannot be kept is refused before the body, not after it, and so is a
         * condition that cannot be checked. */
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        data_cond_t cond;
        ret = s3api_meta_from_request(r, o, &m);
        if (!ret)
            ret = s3h_tags_from_request(r, o, &m.tags);
        if (!ret)
            ret = s3h_lock_from_request(r, o, &m);
        data_obj_meta_free(&m);
        if (ret || (ret = s3h_write_cond(r, o, &cond)))
            return ret;
    }
    if (r->token_req) {
        /* A part of a CRC32C upload: the engine computes CRC-32C too. Encryption is set up
         * by s3api_rdma_put_object, once the writer is open, as for a body (s3h_sse_writer). */
        bool crc32c = false;
        if (part) {
            data_obj_meta_t um;
            memset(&um, 0, sizeof um);
            if (store_mpu_meta(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id, &um) == WH_OK)
                crc32c = s3api_mpu_names_crc32c(&um);
            data_obj_meta_free(&um);
        }
        return s3api_rdma_put_object(r, o, part, crc32c);
    }
    const char *cl = front_hdr(r, "content-length");
    const char *te = front_hdr(r, "transfer-encoding");
    if (!cl && !te)
        return s3h_err(o, S3_ERR_MISSING_CONTENT_LENGTH, NULL);
    uint64_t size = 0;
    const char *dcl = front_hdr(r, "x-amz-decoded-content-length");
    const char *sz = dcl ? dcl : cl;
    if (sz && wh_parse_u64(sz, strlen(sz), &size) != 0)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "Content-Length must be a decimal number");
    /* S3's limit is the same for an object and for a part; the body path enforces it again
     * on the bytes that arrive (aws-chunked bodies may not declare a length). */
    if (size > FRONT_MAX_PUT_SIZE)
        return s3h_err(o, S3_ERR_ENTITY_TOO_LARGE,
                       part ? "a part may carry at most 5 GiB"
                            : "a single PUT may carry at most 5 GiB; use a multipart upload");
    s3_sums_t want; /* validate the headers now; trailers are read at the end */
    if ((ret = s3h_sums_read(r, o, &want)) || (ret = s3h_sums_start(r, o)))
        return ret;
    wh_status_t st = store_writer_open(s3h_st(r), &r->w);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "opening a temp file");
    if (!(ret = s3api_put_layout(r, o))) {
        s3api_put_etag_mode(r, part);
        ret = s3h_sse_writer(r, o, part);
    }
    if (ret) {
        store_writer_abort(r->w); /* now, before the reply: a refused PUT leaves no temp file */
        r->w = NULL;
    }
    return ret; /* 0: the body goes to r->w */
}

int s3api_put_layout(front_req_t *r, s3h_out_t *o)
{
    char lmsg[200];
    wh_status_t st = store_writer_bucket(r->w, s3h_b(r), lmsg, sizeof lmsg);
    if (st == WH_OK)
        return 0;
    if (st == WH_ERR_INVALID)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, lmsg);
    if (st == WH_ERR_UNAVAILABLE && lmsg[0])
        return s3h_err(o, S3_ERR_SERVICE_UNAVAILABLE, lmsg);
    return s3h_err_status(r, o, st, "the bucket's data layout");
}

int s3api_put_commit(front_req_t *r, s3h_out_t *o, bool part, const s3_sums_t *want,
                     const char *etag_hex, const char *c64)
{
    wh_status_t st;
    char etag[80], vid[DATA_VERSION_ID_MAX] = "";
    if (part) {
        char e[33];
        st = store_mpu_part_commit(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id, r->part_number,
                                   r->w, e);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", e);
    } else if (front_hdr(r, "x-amz-write-offset-bytes")) {
        return s3api_append_commit(r, o, want, etag_hex, c64); /* object_append.c */
    } else {
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        data_cond_t cond;
        int ret = s3api_meta_from_request(r, o, &m);
        if (!ret)
            ret = s3h_tags_from_request(r, o, &m.tags);
        if (!ret)
            ret = s3h_lock_from_request(r, o, &m);
        if (ret || (ret = s3h_write_cond(r, o, &cond))) {
            data_obj_meta_free(&m);
            return ret;
        }
        snprintf(m.etag, sizeof m.etag, "%s", etag_hex);
        if (c64)
            snprintf(m.crc64nvme, sizeof m.crc64nvme, "%s", c64);
        s3h_sums_to_meta(&m, want);
        st = store_writer_commit(
            r->w, &(store_commit_args_t){.bucket = s3h_b(r), .key = s3h_k(r), .cond = &cond}, &m);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", m.etag);
        snprintf(vid, sizeof vid, "%s", m.version_id);
        if (st == WH_OK)
            s3h_lc_expiration_header(r, o, s3h_k(r), m.size, m.mtime ? m.mtime : time(NULL),
                                     m.tags);
        data_obj_meta_free(&m);
        if (st != WH_OK && cond.kind != DATA_COND_NONE && (st != WH_ERR_NOT_FOUND || cond.failed))
            return s3h_write_cond_err(r, o, st, &cond, "committing the object");
    }
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, part ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_NO_SUCH_KEY);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, part ? "committing the part" : "committing the object");
    char q[84];
    s3h_etag_quoted(etag, q);
    s3h_out_header(o, MHD_HTTP_HEADER_ETAG, q);
    s3h_out_version(o, vid, false);
    s3h_sums_to_out(o, want);
    return 0;
}

void s3api_put_etag_mode(front_req_t *r, bool part)
{
    /* A part's ETag must be its MD5 (CompleteMultipartUpload hashes the parts' MD5s), and a
     * Content-MD5 needs the whole-object MD5; otherwise large objects take part ETags. */
    if (!part && r->srv->cfg.etag_part_size && !front_hdr(r, "content-md5"))
        store_writer_use_part_etag(r->w, r->srv->cfg.etag_part_size);
}

int s3api_put_finish(front_req_t *r, s3h_out_t *o, bool part)
{
    s3_sums_t want;
    uint64_t t_body = wh_now_ns();
    int ret;
    if ((ret = s3h_trailers_check(r, o)) || (ret = s3h_sums_read(r, o, &want)))
        return ret;
    char md5[33];
    if ((ret = s3h_sums_check(r, o, &want, r->w, md5)))
        return ret; /* cleanup aborts the writer */
    uint64_t t_md5 = wh_now_ns();
    uint64_t size = store_writer_size(r->w);
    char c64[13];
    wh_crc64nvme_b64(store_writer_crc64nvme(r->w), c64);
    ret = s3api_put_commit(r, o, part, &want, md5, c64);
    wh_debug(MOD, "put id=%s bytes=%llu body_ms=%.3f md5_wait_ms=%.3f commit_ms=%.3f", r->id,
             (unsigned long long)size, (double)(t_body - r->t0_ns) / 1e6,
             (double)(t_md5 - t_body) / 1e6, (double)(wh_now_ns() - t_md5) / 1e6);
    if (ret)
        return ret;
    atomic_fetch_add(&r->srv->metrics.http_write_bytes, size);
    atomic_fetch_add(&r->srv->metrics.http_write_ops, 1);
    s3h_out_header(o, "x-amz-checksum-crc64nvme", c64);
    s3h_sse_reply(r, o);
    return s3h_ok(o, 200);
}

int s3api_write_put_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)) ||
        (ret = s3api_append_begin(r, o)))
        return ret;
    return s3api_put_begin(r, o, false);
}

int s3api_write_put_finish(front_req_t *r, s3h_out_t *o)
{
    return s3api_put_finish(r, o, false);
}

/* ---- copy ------------------------------------------------------------------------------- */

void s3api_copy_src_free(s3api_copy_src_t *c)
{
    free(c->bucket);
    free(c->key);
    c->bucket = c->key = NULL;
}

int s3api_copy_src_parse(front_req_t *r, s3h_out_t *o, s3api_copy_src_t *c)
{
    memset(c, 0, sizeof *c);
    const char *h = front_hdr(r, "x-amz-copy-source");
    const char *q = strchr(h, '?');
    size_t n = q ? (size_t)(q - h) : strlen(h);
    if (q && (strncmp(q, "?versionId=", 11) != 0 || !store_version_id_valid(q + 11)))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-copy-source may carry only ?versionId=<a version id>");
    if (q)
        snprintf(c->version_id, sizeof c->version_id, "%s", q + 11);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    if (s3_uri_decode(h, n, &d) != 0 || d.oom || !d.data) {
        wh_sbuf_free(&d);
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-copy-source is not valid: a bad percent-escape");
    }
    const char *s = d.data;
    if (*s == '/')
        s++;
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1]) {
        wh_sbuf_free(&d);
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-copy-source must be bucket/key (URL-encoded)");
    }
    c->bucket = strndup(s, (size_t)(slash - s));
    c->key = strdup(slash + 1);
    size_t klen = d.len - (size_t)(slash + 1 - d.data);
    wh_sbuf_free(&d);
    if (!c->bucket || !c->key) {
        s3api_copy_src_free(c);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    }
    if (klen != strlen(c->key) || !store_key_valid(c->key, klen)) {
        s3api_copy_src_free(c);
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "the x-amz-copy-source key is not valid");
    }
    return 0;
}

int s3api_copy_src_open(front_req_t *r, s3h_out_t *o, const s3api_copy_src_t *c, data_obj_meta_t *m,
                        data_reader_t **rd)
{
    const char *vid = c->version_id[0] ? c->version_id : NULL;
    /* A reader, not an fd: an object composed of its parts' files has no single fd, and a
     * cluster's bytes none at all. */
    store_read_args_t ra = {.bucket = c->bucket, .key = c->key, .version_id = vid};
    wh_status_t st = rd ? store_object_reader(s3h_st(r), &ra, m, rd)
                        : store_object_open(s3h_st(r), &ra, m, NULL);
    /* Reading the source is s3:GetObject (of a version: s3:GetObjectVersion) on it, decided
     * before its bytes are read. */
    int ret = s3h_authz_other(r, o, vid ? "s3:GetObjectVersion" : "s3:GetObject", c->bucket, c->key,
                              st == WH_OK ? m : NULL);
    if (ret) {
        if (rd) {
            store_reader_close(*rd);
            *rd = NULL;
        }
        data_obj_meta_free(m);
        return ret;
    }
    if (st == WH_ERR_NOT_FOUND) {
        if (store_bucket_exists(s3h_st(r), c->bucket) != WH_OK)
            return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, "the copy source bucket does not exist");
        if (m->delete_marker) /* S3: a delete marker is no copy source */
            return s3h_err(o, vid ? S3_ERR_INVALID_REQUEST : S3_ERR_NO_SUCH_KEY,
                           "the copy source is a delete marker");
        return s3h_err(o, vid ? S3_ERR_NO_SUCH_VERSION : S3_ERR_NO_SUCH_KEY,
                       vid ? "the copy source version does not exist"
                           : "the copy source key does not exist");
    }
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "opening the copy source");
    if (s3h_preconditions(r, m, "x-amz-copy-source-")) {
        if (rd) {
            store_reader_close(*rd);
            *rd = NULL;
        }
        data_obj_meta_free(m);
        return s3h_err(o, S3_ERR_PRECONDITION_FAILED, NULL);
    }
    return 0;
}

int s3api_write_copy(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    s3api_copy_src_t c;
    if ((ret = s3api_copy_src_parse(r, o, &c)))
        return ret;
    data_obj_meta_t sm, nm, out_m;
    memset(&sm, 0, sizeof sm);
    memset(&nm, 0, sizeof nm);
    memset(&out_m, 0, sizeof out_m);
    char *new_tags = NULL;
    const char *dir = front_hdr(r, "x-amz-metadata-directive");
    bool replace = dir && strcmp(dir, "REPLACE") == 0;
    if (dir && !replace && strcmp(dir, "COPY") != 0) {
        ret =
            s3h_err(o, S3_ERR_INVALID_ARGUMENT, "x-amz-metadata-directive must be COPY or REPLACE");
        goto out;
    }
    const char *tdir = front_hdr(r, "x-amz-tagging-directive");
    bool tags_replace = tdir && strcmp(tdir, "REPLACE") == 0;
    if (tdir && !tags_replace && strcmp(tdir, "COPY") != 0) {
        ret =
            s3h_err(o, S3_ERR_INVALID_ARGUMENT, "x-amz-tagging-directive must be COPY or REPLACE");
        goto out;
    }
    if (tags_replace && (ret = s3h_tags_from_request(r, o, &new_tags)))
        goto out;
    /* Onto itself only with a change: new metadata or tags, or an older version restored. */
    /* s3api_copy_src_parse returned 0, so
     * c.bucket is set; the analyzer cannot see that s3h_err (s3api.c) returns an HTTP status */
    bool sse_change = front_hdr(r, "x-amz-server-side-encryption") ||
                      front_hdr(r, "x-amz-server-side-encryption-customer-algorithm");
    /* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
    bool onto_itself = strcmp(c.bucket, s3h_b(r)) == 0 && strcmp(c.key, s3h_k(r)) == 0;
    if (!replace && !tags_replace && !c.version_id[0] && !sse_change && onto_itself) {
        ret = s3h_err(o, S3_ERR_INVALID_REQUEST,
                      "This copy request is illegal because it is trying to copy an object to "
                      "itself without changing the object's metadata, storage class, website "
                      "redirect location or encryption attributes.");
        goto out;
    }
    if ((ret = s3api_copy_src_open(r, o, &c, &sm, NULL)))
        goto out;
    if (replace && (ret = s3api_meta_from_request(r, o, &nm)))
        goto out;
    if (!replace) {
        /* The source's metadata, but the copy is the caller's, with the ACL its request
         * names (S3 never copies an ACL). */
        snprintf(nm.content_type, sizeof nm.content_type, "%s", sm.content_type);
        if (sm.user_meta_json && !(nm.user_meta_json = strdup(sm.user_meta_json))) {
            ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
            goto out;
        }
        if ((ret = s3h_acl_to_meta(r, o, &nm)))
            goto out;
    }
    if ((ret = s3h_lock_from_request(r, o, &nm)))
        goto out;
    /* Copy exactly the version authorized above (sm), not whatever is current a moment
     * later; an unversioned key's "null" version can be replaced in between, so the bytes
     * copied are checked to be the authorized ones and the copy undone when not. */
    if (!sm.sse && front_hdr(r, "x-amz-copy-source-server-side-encryption-customer-algorithm")) {
        ret = s3h_err(o, S3_ERR_INVALID_REQUEST,
                      "the copy source is not encrypted with a customer key: send no "
                      "x-amz-copy-source-server-side-encryption-customer-* headers");
        goto out;
    }
    wh_status_t st;
    char copied_etag[80] = "";
    uint64_t copied_size = 0;
    if ((ret = s3h_sse_copy(r, o, c.bucket, c.key, sm.version_id[0] ? sm.version_id : NULL, &nm,
                            &out_m, &st, copied_etag, &copied_size)))
        goto out;
    if (st == WH_ERR_NOT_FOUND) {
        ret = s3h_err(o, S3_ERR_NO_SUCH_KEY, "the copy source vanished or the bucket is gone");
        goto out;
    }
    if (st != WH_OK) {
        ret = s3h_err_status(r, o, st, "copying the object");
        goto out;
    }
    if (strcmp(copied_etag, sm.etag) != 0 || copied_size != sm.size) {
        /* Never acknowledged, so its own new lock does not keep it. */
        st = store_object_delete(
            s3h_st(r),
            &(store_delete_args_t){.bucket = s3h_b(r),
                                   .key = s3h_k(r),
                                   .version_id = out_m.version_id[0] ? out_m.version_id : "null",
                                   .bypass = DATA_BYPASS_ALL},
            NULL);
        wh_warn("s3", "id=%s copy source %s/%s changed after it was authorized; copy undone (%s)",
                r->id, c.bucket, c.key, wh_status_str(st));
        ret = s3h_err_raw(o, 409, "OperationAborted",
                          "the copy source was replaced while it "
                          "was being copied; retry the copy");
        goto out;
    }
    /* REPLACE: the copy gets the request's tag set (the copied one until this lands). */
    if (tags_replace && (!out_m.tags != !new_tags || (new_tags && strcmp(out_m.tags, new_tags)))) {
        st = store_object_tags_set(s3h_st(r), s3h_b(r), s3h_k(r), out_m.version_id, new_tags);
        if (st != WH_OK) {
            ret = s3h_err_status(r, o, st, "setting the copy's tags");
            goto out;
        }
    }
    s3h_out_version(o, out_m.version_id, false);
    if (c.version_id[0])
        s3h_out_header(o, "x-amz-copy-source-version-id", c.version_id);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<CopyObjectResult xmlns=\"" S3H_XMLNS "\">");
    s3h_xml_time(&b, "LastModified", out_m.mtime);
    s3h_xml_etag(&b, out_m.etag);
    if (out_m.crc64nvme[0])
        s3_xml_elem(&b, "ChecksumCRC64NVME", out_m.crc64nvme);
    wh_sbuf_puts(&b, "</CopyObjectResult>");
    ret = s3h_ok_xml(o, 200, &b);
out:
    data_obj_meta_free(&sm);
    data_obj_meta_free(&nm);
    data_obj_meta_free(&out_m);
    s3api_copy_src_free(&c);
    free(new_tags);
    return ret;
}

/* ---- delete ----------------------------------------------------------------------------- */

int s3api_write_delete(front_req_t *r, s3h_out_t *o)
{
    int ret;
    const char *vid;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)) ||
        (ret = s3h_version_q(r, o, &vid)))
        return ret;
    data_del_cond_t cond;
    bool conditional;
    if ((ret = s3h_delete_cond(r, o, NULL, &cond, &conditional)))
        return ret;
    int bypass;
    if ((ret = s3h_lock_bypass(r, o, s3h_k(r), &bypass)))
        return ret;
    data_del_result_t res;
    memset(&res, 0, sizeof res);
    store_delete_args_t da = {.bucket = s3h_b(r),
                              .key = s3h_k(r),
                              .version_id = vid,
                              .bypass = bypass,
                              .cond = conditional ? &cond : NULL};
    wh_status_t st = store_object_delete(s3h_st(r), &da, &res);
    if ((st == WH_ERR_PRECONDITION || st == WH_ERR_NOT_FOUND) && cond.failed)
        return s3h_delete_cond_failed(o, s3h_k(r), &cond);
    if (st == WH_ERR_AUTH && res.locked) {
        char msg[sizeof o->msg];
        s3h_lock_refusal(&res, s3h_k(r), vid, msg, sizeof msg);
        return s3h_err(o, S3_ERR_ACCESS_DENIED, msg);
    }
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return s3h_err_status(r, o, st, "deleting the object");
    if (st == WH_OK) {
        s3h_out_version(o, vid && !res.version_id[0] ? vid : res.version_id,
                        vid != NULL || res.delete_marker);
        if (res.delete_marker)
            s3h_out_header(o, "x-amz-delete-marker", "true");
    }
    return s3h_ok(o, 204);
}

int s3api_write_delete_many_begin(front_req_t *r, s3h_out_t *o)
{
    return s3h_need_bucket(r, o); /* 0: read the XML body */
}

int s3api_write_delete_many_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_delete_req_t d;
    memset(&d, 0, sizeof d);
    s3_err_t e = s3_xml_parse_delete(r->buf.data ? r->buf.data : "", r->buf.len, &d);
    if (e != S3_OK)
        return s3h_err(o, e,
                       e == S3_ERR_NOT_IMPLEMENTED
                           ? "DeleteObjects conditions LastModifiedTime and Size (directory "
                             "buckets) are not implemented by wharfd; ETag is"
                           : NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<DeleteResult xmlns=\"" S3H_XMLNS "\">");
    for (size_t i = 0; i < d.n; i++) {
        const char *k = d.keys[i];
        const char *vid = d.version_ids[i];
        size_t kl = strlen(k);
        /* s3:DeleteObject key by key, as S3 decides it: a refused key is an Error entry. */
        s3h_out_t ko;
        memset(&ko, 0, sizeof ko);
        if (store_key_valid(k, kl) &&
            s3h_authz_other(r, &ko, vid ? "s3:DeleteObjectVersion" : "s3:DeleteObject", s3h_b(r), k,
                            NULL)) {
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            s3_xml_elem(&b, "Code", ko.code ? ko.code : "AccessDenied");
            s3_xml_elem(&b, "Message", ko.msg);
            wh_sbuf_puts(&b, "</Error>");
            continue;
        }
        /* The Object's ETag only (never the request's If-Match): nothing there to parse. */
        data_del_cond_t cond;
        memset(&cond, 0, sizeof cond);
        cond.if_match = d.etags[i];
        bool conditional = d.etags[i] != NULL;
        data_del_result_t res;
        memset(&res, 0, sizeof res);
        int bypass = DATA_BYPASS_NONE;
        if (vid && store_key_valid(k, kl) && s3h_lock_bypass(r, &ko, k, &bypass)) {
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            s3_xml_elem(&b, "VersionId", vid);
            s3_xml_elem(&b, "Code", ko.code ? ko.code : "InternalError");
            s3_xml_elem(&b, "Message", ko.msg);
            wh_sbuf_puts(&b, "</Error>");
            continue;
        }
        wh_status_t st = !store_key_valid(k, kl) ? WH_ERR_INVALID
                         : vid && !store_version_id_valid(vid)
                             ? WH_ERR_RANGE
                             : store_object_delete(s3h_st(r),
                                                   &(store_delete_args_t){
                                                       .bucket = s3h_b(r),
                                                       .key = k,
                                                       .version_id = vid,
                                                       .bypass = bypass,
                                                       .cond = conditional ? &cond : NULL,
                                                   },
                                                   &res);
        if ((st == WH_ERR_PRECONDITION || st == WH_ERR_NOT_FOUND) && cond.failed) {
            s3h_delete_cond_failed(&ko, k, &cond);
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            if (vid)
                s3_xml_elem(&b, "VersionId", vid);
            s3_xml_elem(&b, "Code", ko.code);
            s3_xml_elem(&b, "Message", ko.msg);
            wh_sbuf_puts(&b, "</Error>");
            continue;
        }
        if (st == WH_ERR_AUTH && res.locked) {
            char msg[sizeof ko.msg];
            s3h_lock_refusal(&res, k, vid, msg, sizeof msg);
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            if (vid)
                s3_xml_elem(&b, "VersionId", vid);
            s3_xml_elem(&b, "Code", "AccessDenied");
            s3_xml_elem(&b, "Message", msg);
            wh_sbuf_puts(&b, "</Error>");
            continue;
        }
        if (st == WH_OK || st == WH_ERR_NOT_FOUND) {
            if (!d.quiet) {
                wh_sbuf_puts(&b, "<Deleted>");
                s3_xml_elem(&b, "Key", k);
                if (vid)
                    s3_xml_elem(&b, "VersionId", vid);
                if (res.delete_marker) {
                    s3_xml_elem(&b, "DeleteMarker", "true");
                    if (!vid) /* the marker this delete made */
                        s3_xml_elem(&b, "DeleteMarkerVersionId", res.version_id);
                }
                wh_sbuf_puts(&b, "</Deleted>");
            }
        } else {
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            if (vid)
                s3_xml_elem(&b, "VersionId", vid);
            s3_xml_elem(&b, "Code",
                        st == WH_ERR_INVALID || st == WH_ERR_RANGE ? "InvalidArgument"
                                                                   : "InternalError");
            s3_xml_elem(&b, "Message",
                        st == WH_ERR_RANGE ? "Invalid version id specified" : wh_status_str(st));
            wh_sbuf_puts(&b, "</Error>");
        }
    }
    wh_sbuf_puts(&b, "</DeleteResult>");
    s3_delete_req_free(&d);
    return s3h_ok_xml(o, 200, &b);
}
