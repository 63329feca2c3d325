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

static void rename_time_cond(srv_req_t *r, const char *name, bool *has, time_t *t)
{
    const char *v = srv_hdr(r, name);
    /* As on a copy source: a date that does not parse is no condition (RFC 9110). */
    *has = v && wh_http_date_parse(v, t) == 0;
}

static int rename_refused(srv_req_t *r, srv_out_t *o, wh_status_t st, store_rename_fail_t fail,
                          const store_cond_t *cond, const char *src)
{
    switch (fail) {
    case STORE_RENAME_SRC_MISSING:
        return srv_errf(o, S3_ERR_NO_SUCH_KEY, "the rename source %s has no object", src);
    case STORE_RENAME_SRC_COND:
        return srv_err(o, S3_ERR_PRECONDITION_FAILED,
                       "an x-amz-rename-source-if-* condition failed on the source object");
    case STORE_RENAME_DST_COND:
        return srv_write_cond_err(r, o, st, cond, "renaming the object");
    case STORE_RENAME_VERSIONED:
        return srv_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "RenameObject is served only in a bucket whose versioning was never "
                       "enabled (S3 Express has no versioning)");
    case STORE_RENAME_LOCKED:
        return srv_errf(o, S3_ERR_ACCESS_DENIED,
                        "%s is under a retention or legal hold: it cannot be renamed away or "
                        "replaced",
                        src);
    case STORE_RENAME_OK:
        break;
    }
    if (st == WH_ERR_INVALID)
        return srv_err(o, S3_ERR_INVALID_ARGUMENT, "the rename source key is not valid");
    if (st == WH_ERR_PRECONDITION || st == WH_ERR_BUSY) /* a race the store could not order */
        return srv_err(o, S3_ERR_CONDITIONAL_REQUEST_CONFLICT, NULL);
    if (st == WH_ERR_NOT_FOUND)
        return srv_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
    return srv_err_status(r, o, st, "renaming the object");
}

/* s3:GetObject and s3:DeleteObject on the source (its row read for the object's ACL). */
static int rename_authz_source(srv_req_t *r, srv_out_t *o, const char *src)
{
    store_obj_meta_t m;
    memset(&m, 0, sizeof m);
    store_read_args_t ra = {.bucket = srv_b(r), .key = src};
    wh_status_t st = store_object_open(srv_st(r), &ra, &m, NULL);
    const store_obj_meta_t *mp = st == WH_OK ? &m : NULL;
    int ret = srv_authz_other(r, o, "s3:GetObject", srv_b(r), src, mp);
    if (!ret)
        ret = srv_authz_other(r, o, "s3:DeleteObject", srv_b(r), src, NULL);
    store_obj_meta_free(&m);
    return ret;
}

int srv_write_rename(srv_req_t *r, srv_out_t *o)
{
    int ret;
    if ((ret = srv_key_check(r, o)) || (ret = srv_need_bucket(r, o)))
        return ret;
    const char *h = srv_hdr(r, "x-amz-rename-source");
    if (!h)
        return srv_err(
            o, S3_ERR_INVALID_ARGUMENT,
            "RenameObject needs x-amz-rename-source: bucket/key of the object to rename");
    if (srv_hdr(r, "if-modified-since") || srv_hdr(r, "if-unmodified-since"))
        return srv_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "RenameObject takes If-Match and If-None-Match: * on the destination, not "
                       "If-Modified-Since or If-Unmodified-Since");
    char *src = NULL;
    size_t slen = 0;
    const char *why = NULL;
    if (s3_rename_source_parse(h, srv_b(r), &src, &slen, &why))
        return srv_err(o, S3_ERR_INVALID_ARGUMENT, why);
    const char *dst = srv_k(r);
    size_t dlen = strlen(dst);
    if (!store_key_valid(src, slen)) {
        ret = srv_err(o, S3_ERR_INVALID_ARGUMENT, "the rename source key is not valid");
    } else if (src[slen - 1] == '/' || (dlen && dst[dlen - 1] == '/')) {
        ret = srv_err(o, S3_ERR_INVALID_REQUEST,
                      "RenameObject does not rename a key that ends with '/' (as S3 Express)");
    }
    store_cond_t cond;
    if (ret || (ret = srv_write_cond(r, o, &cond)) || (ret = rename_authz_source(r, o, src))) {
        free(src);
        return ret;
    }
    store_rename_src_cond_t sc = {.if_match = srv_hdr(r, "x-amz-rename-source-if-match"),
                                  .if_none_match = srv_hdr(r, "x-amz-rename-source-if-none-match")};
    rename_time_cond(r, "x-amz-rename-source-if-modified-since", &sc.has_ims, &sc.ims);
    rename_time_cond(r, "x-amz-rename-source-if-unmodified-since", &sc.has_ius, &sc.ius);
    bool any_sc = sc.if_match || sc.if_none_match || sc.has_ims || sc.has_ius;
    store_rename_fail_t fail = STORE_RENAME_OK;
    store_rename_args_t a = {.bucket = srv_b(r),
                             .src_key = src,
                             .dst_key = dst,
                             .scond = any_sc ? &sc : NULL,
                             .cond = cond.kind != STORE_COND_NONE ? &cond : NULL};
    wh_status_t st = store_object_rename(srv_st(r), &a, &fail);
    ret = st == WH_OK ? srv_ok(o, 200) : rename_refused(r, o, st, fail, &cond, src);
    free(src);
    return ret;
}
