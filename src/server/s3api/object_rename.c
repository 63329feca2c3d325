/* SPDX-License-Identifier: Apache-2.0 */
/* RenameObject, S3 Express's request shape: PUT /bucket/dst?renameObject with
 * x-amz-rename-source: bucket/src. A metadata move in one transaction (store_object_rename): no
 * byte is copied, the object keeps its ETag, checksums, metadata, ACL and Last-Modified.
 *
 * Authorization: s3:PutObject on the destination (the route's row), s3:GetObject and
 * s3:DeleteObject on the source (here, before anything changes). Conditions: If-Match and
 * If-None-Match: * on the destination, x-amz-rename-source-if-match, -if-none-match,
 * -if-modified-since and -if-unmodified-since on the source, all checked in the rename's
 * transaction. If-Modified-Since and If-Unmodified-Since on the destination are refused (501).
 * A bucket whose versioning is on or suspended (so any bucket with Object Lock) is refused with
 * 501: S3 Express has no versioning, and a rename there would have to leave a delete marker. */
#include "s3/rename.h"
#include "s3api/s3api.h"

#include <stdlib.h>
#include <string.h>

static void rename_time_cond(front_req_t *r, const char *name, bool *has, time_t *t)
{
    const char *v = front_hdr(r, name);
    /* As on a copy source: a date that does not parse is no condition (RFC 9110). */
    *has = v && wh_http_date_parse(v, t) == 0;
}

static int rename_refused(front_req_t *r, s3h_out_t *o, wh_status_t st, data_rename_fail_t fail,
                          const data_cond_t *cond, const char *src)
{
    switch (fail) {
    case DATA_RENAME_SRC_MISSING:
        return s3h_errf(o, S3_ERR_NO_SUCH_KEY, "the rename source %s has no object", src);
    case DATA_RENAME_SRC_COND:
        return s3h_err(o, S3_ERR_PRECONDITION_FAILED,
                       "an x-amz-rename-source-if-* condition failed on the source object");
    case DATA_RENAME_DST_COND:
        return s3h_write_cond_err(r, o, st, cond, "renaming the object");
    case DATA_RENAME_VERSIONED:
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "RenameObject is served only in a bucket whose versioning was never "
                       "enabled (S3 Express has no versioning)");
    case DATA_RENAME_LOCKED:
        return s3h_errf(o, S3_ERR_ACCESS_DENIED,
                        "%s is under a retention or legal hold: it cannot be renamed away or "
                        "replaced",
                        src);
    case DATA_RENAME_OK:
        break;
    }
    if (st == WH_ERR_INVALID)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "the rename source key is not valid");
    if (st == WH_ERR_PRECONDITION || st == WH_ERR_BUSY) /* a race the store could not order */
        return s3h_err(o, S3_ERR_CONDITIONAL_REQUEST_CONFLICT, NULL);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
    return s3h_err_status(r, o, st, "renaming the object");
}

/* s3:GetObject and s3:DeleteObject on the source (its row read for the object's ACL). */
static int rename_authz_source(front_req_t *r, s3h_out_t *o, const char *src)
{
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    store_read_args_t ra = {.bucket = s3h_b(r), .key = src};
    wh_status_t st = store_object_open(s3h_st(r), &ra, &m, NULL);
    const data_obj_meta_t *mp = st == WH_OK ? &m : NULL;
    int ret = s3h_authz_other(r, o, "s3:GetObject", s3h_b(r), src, mp);
    if (!ret)
        ret = s3h_authz_other(r, o, "s3:DeleteObject", s3h_b(r), src, NULL);
    data_obj_meta_free(&m);
    return ret;
}

int s3api_write_rename(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    const char *h = front_hdr(r, "x-amz-rename-source");
    if (!h)
        return s3h_err(
            o, S3_ERR_INVALID_ARGUMENT,
            "RenameObject needs x-amz-rename-source: bucket/key of the object to rename");
    if (front_hdr(r, "if-modified-since") || front_hdr(r, "if-unmodified-since"))
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "RenameObject takes If-Match and If-None-Match: * on the destination, not "
                       "If-Modified-Since or If-Unmodified-Since");
    char *src = NULL;
    size_t slen = 0;
    const char *why = NULL;
    if (s3_rename_source_parse(h, s3h_b(r), &src, &slen, &why))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, why);
    const char *dst = s3h_k(r);
    size_t dlen = strlen(dst);
    if (!store_key_valid(src, slen)) {
        ret = s3h_err(o, S3_ERR_INVALID_ARGUMENT, "the rename source key is not valid");
    } else if (src[slen - 1] == '/' || (dlen && dst[dlen - 1] == '/')) {
        ret = s3h_err(o, S3_ERR_INVALID_REQUEST,
                      "RenameObject does not rename a key that ends with '/' (as S3 Express)");
    }
    data_cond_t cond;
    if (ret || (ret = s3h_write_cond(r, o, &cond)) || (ret = rename_authz_source(r, o, src))) {
        free(src);
        return ret;
    }
    data_rename_src_cond_t sc = {.if_match = front_hdr(r, "x-amz-rename-source-if-match"),
                                 .if_none_match =
                                     front_hdr(r, "x-amz-rename-source-if-none-match")};
    rename_time_cond(r, "x-amz-rename-source-if-modified-since", &sc.has_ims, &sc.ims);
    rename_time_cond(r, "x-amz-rename-source-if-unmodified-since", &sc.has_ius, &sc.ius);
    bool any_sc = sc.if_match || sc.if_none_match || sc.has_ims || sc.has_ius;
    data_rename_fail_t fail = DATA_RENAME_OK;
    store_rename_args_t a = {.bucket = s3h_b(r),
                             .src_key = src,
                             .dst_key = dst,
                             .scond = any_sc ? &sc : NULL,
                             .cond = cond.kind != DATA_COND_NONE ? &cond : NULL};
    wh_status_t st = store_object_rename(s3h_st(r), &a, &fail);
    ret = st == WH_OK ? s3h_ok(o, 200) : rename_refused(r, o, st, fail, &cond, src);
    free(src);
    return ret;
}
