/* SPDX-License-Identifier: Apache-2.0 */
/* Appends: PutObject with S3 Express's x-amz-write-offset-bytes, over HTTP and RDMA alike (both
 * commit through s3api_put_commit). The offset must be the object's size (else 400
 * InvalidWriteOffset); no object and offset 0 creates it. What an append cannot keep is refused
 * before the body moves: conditions (501), encryption (501), Object Lock headers and, on an
 * existing object, user metadata and tags (400, as S3 Express), an empty body (400), and a
 * bucket whose versioning is not off (501: S3 Express has no versioning). The offset is checked
 * again in the commit's transaction (store_writer_commit_append), which racing appends cannot
 * both pass. */
#include "s3api/s3api.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

static const char OFFSET_HDR[] = "x-amz-write-offset-bytes";

/* 0 with *off, or the error's status. */
static int append_offset(front_req_t *r, s3h_out_t *o, uint64_t *off)
{
    const char *v = front_hdr(r, OFFSET_HDR);
    if (!v || !*v || wh_parse_u64(v, strlen(v), off) != 0)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-write-offset-bytes must be a decimal number of bytes");
    return 0;
}

static int append_refuse_headers(front_req_t *r, s3h_out_t *o, bool exists)
{
    if (front_hdr(r, "if-match") || front_hdr(r, "if-none-match"))
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "x-amz-write-offset-bytes is its own condition: If-Match and "
                       "If-None-Match are not served with it");
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname;
        if (strncmp(n, "x-amz-server-side-encryption", 28) == 0)
            return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                           "appending to an encrypted object is not served");
        if (strncmp(n, "x-amz-object-lock-", 18) == 0)
            return s3h_errf(o, S3_ERR_INVALID_REQUEST, "%s cannot be set by an append", n);
        if (exists && (strncmp(n, "x-amz-meta-", 11) == 0 || strcmp(n, "x-amz-tagging") == 0))
            return s3h_err(o, S3_ERR_INVALID_REQUEST,
                           "Cannot specify both a write offset value and user-defined object "
                           "metadata (or tags) for existing objects");
    }
    const char *cl = front_hdr(r, "x-amz-decoded-content-length");
    if (!cl)
        cl = front_hdr(r, "content-length");
    if (!r->token_req && cl && strcmp(cl, "0") == 0)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "Request body cannot be empty when 'write offset' is specified");
    return 0;
}

int s3api_append_begin(front_req_t *r, s3h_out_t *o)
{
    if (!front_hdr(r, OFFSET_HDR))
        return 0;
    uint64_t off = 0;
    int ret;
    if ((ret = append_offset(r, o, &off)))
        return ret;
    data_versioning_t v = DATA_VERSIONING_OFF;
    if (store_bucket_versioning_get(s3h_st(r), s3h_b(r), &v) == WH_OK && v != DATA_VERSIONING_OFF)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "appends are served only in a bucket whose versioning was never enabled "
                       "(S3 Express has no versioning)");
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    store_read_args_t ra = {.bucket = s3h_b(r), .key = s3h_k(r)};
    wh_status_t st = store_object_open(s3h_st(r), &ra, &m, NULL);
    bool exists = st == WH_OK;
    uint64_t size = m.size;
    bool sse = m.sse != NULL;
    data_obj_meta_free(&m);
    if ((ret = append_refuse_headers(r, o, exists)))
        return ret;
    if (exists && sse)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED, "appending to an encrypted object is not served");
    /* Checked now so a wrong offset moves no byte; the commit checks it again. */
    if (exists ? off != size : off != 0)
        return s3h_errf(o, S3_ERR_INVALID_WRITE_OFFSET,
                        "x-amz-write-offset-bytes is %llu; the object's size is %llu",
                        (unsigned long long)off, (unsigned long long)(exists ? size : 0));
    return 0;
}

int s3api_append_commit(front_req_t *r, s3h_out_t *o, const s3_sums_t *want, const char *etag_hex,
                        const char *c64)
{
    uint64_t off = 0;
    int ret;
    if ((ret = append_offset(r, o, &off)))
        return ret;
    data_obj_meta_t m; /* a new object's (offset 0, no object) */
    memset(&m, 0, sizeof m);
    if ((ret = s3api_meta_from_request(r, o, &m)))
        return ret;
    snprintf(m.etag, sizeof m.etag, "%s", etag_hex);
    if (c64)
        snprintf(m.crc64nvme, sizeof m.crc64nvme, "%s", c64);
    s3h_sums_to_meta(&m, want);
    store_append_fail_t fail = STORE_APPEND_OK;
    wh_status_t st = store_writer_commit_append(r->w, s3h_b(r), s3h_k(r), off, &m, &fail);
    r->w = NULL;
    char etag[84];
    s3h_etag_quoted(m.etag, etag);
    uint64_t size = m.size;
    data_obj_meta_free(&m);
    switch (fail) {
    case STORE_APPEND_OFFSET:
        return s3h_errf(o, S3_ERR_INVALID_WRITE_OFFSET,
                        "x-amz-write-offset-bytes is %llu, no longer the object's size: another "
                        "write changed it first",
                        (unsigned long long)off);
    case STORE_APPEND_EMPTY:
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "Request body cannot be empty when 'write offset' is specified");
    case STORE_APPEND_ENCRYPTED:
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "appending to an encrypted object (or under a bucket's default "
                       "encryption) is not served");
    case STORE_APPEND_VERSIONED:
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "appends are served only in a bucket whose versioning was never enabled");
    case STORE_APPEND_LOCKED:
        return s3h_err(o, S3_ERR_ACCESS_DENIED,
                       "the object is under a retention or legal hold: it cannot be appended to");
    case STORE_APPEND_TOO_MANY:
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "the object already has 10000 segments: no more appends");
    case STORE_APPEND_NO_COMPOSE:
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "appends are served by a single server's local data, not by a cluster");
    case STORE_APPEND_OK:
        break;
    }
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "appending to the object");
    s3h_out_header(o, MHD_HTTP_HEADER_ETAG, etag);
    s3h_out_header_u64(o, "x-amz-object-size", size);
    return 0;
}
