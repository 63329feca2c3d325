/* Versions in the S3 front: Get/PutBucketVersioning, the versionId query of object requests,
 * and the x-amz-version-id / x-amz-delete-marker headers. (Reads, deletes, copies and the
 * version listing call these from their own files.) */
#include "s3ctl/s3ctl.h"
#include "s3/xml.h"

#include <stdio.h>
#include <string.h>

int srv_version_q(srv_req_t *r, srv_out_t *o, const char **vid)
{
    *vid = srv_route_q(&r->route, "versionId");
    if (!*vid)
        return 0;
    if (!store_version_id_valid(*vid))
        return srv_err(o, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
    return 0;
}

void srv_out_version(srv_out_t *o, const char *vid, bool asked)
{
    /* The "null" version is named only when the request named a version: an unversioned
     * bucket's replies carry no version header, as S3's. */
    if (vid && vid[0] && (asked || strcmp(vid, "null") != 0))
        srv_out_header(o, "x-amz-version-id", vid);
}

int srv_version_not_found(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m, const char *vid)
{
    if (m->delete_marker) {
        srv_out_header(o, "x-amz-delete-marker", "true");
        srv_out_version(o, m->version_id, true);
        if (vid) /* the version asked for is a delete marker: it has no bytes to read */
            return srv_err(o, S3_ERR_METHOD_NOT_ALLOWED,
                           "The specified method is not allowed against this resource: the "
                           "version is a delete marker");
        return srv_err(o, S3_ERR_NO_SUCH_KEY, NULL);
    }
    if (vid && store_bucket_exists(srv_st(r), srv_b(r)) == WH_OK)
        return srv_err(o, S3_ERR_NO_SUCH_VERSION, NULL);
    return srv_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
}

int srv_bucket_versioning(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_need_bucket(r, o);
    if (ret)
        return ret;
    store_versioning_t v = STORE_VERSIONING_OFF;
    wh_status_t st = store_bucket_versioning_get(srv_st(r), srv_b(r), &v);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "reading the bucket's versioning");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    if (v == STORE_VERSIONING_OFF) {
        wh_sbuf_puts(&b, XML_DECL "<VersioningConfiguration xmlns=\"" S3_XMLNS "\"/>");
    } else {
        wh_sbuf_puts(&b, XML_DECL "<VersioningConfiguration xmlns=\"" S3_XMLNS "\">");
        s3_xml_elem(&b, "Status", v == STORE_VERSIONING_ENABLED ? "Enabled" : "Suspended");
        wh_sbuf_puts(&b, "</VersioningConfiguration>");
    }
    return srv_ok_xml(o, 200, &b);
}

int srv_bucket_versioning_put_begin(srv_req_t *r, srv_out_t *o)
{
    return srv_need_bucket(r, o); /* 0: read the XML body */
}

int srv_bucket_versioning_put_finish(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_body_md5_check(r, o);
    if (ret)
        return ret;
    int status = 0;
    s3_err_t e = s3_xml_parse_versioning(r->buf.data ? r->buf.data : "", r->buf.len, &status);
    if (e != S3_OK)
        return srv_err(o, e,
                       "The XML you provided was not well-formed or did not validate: a "
                       "VersioningConfiguration with Status Enabled or Suspended");
    wh_status_t st = store_bucket_versioning_set(
        srv_st(r), srv_b(r), status == 1 ? STORE_VERSIONING_ENABLED : STORE_VERSIONING_SUSPENDED);
    /* Object lock keeps versioning Enabled (the store reads it in the same transaction):
     * suspending it would let a PUT replace a locked null version. */
    if (st == WH_ERR_PRECONDITION)
        return srv_err(o, S3_ERR_INVALID_BUCKET_STATE,
                       "An Object Lock configuration is "
                       "present on this bucket, so the versioning state cannot be changed.");
    if (st != WH_OK)
        return srv_err_status(r, o, st, "setting the bucket's versioning");
    return srv_ok(o, 200);
}
