/* SPDX-License-Identifier: Apache-2.0 */
/* Versions in the S3 front: Get/PutBucketVersioning, the versionId query of object requests,
 * and the x-amz-version-id / x-amz-delete-marker headers. (Reads, deletes, copies and the
 * version listing call these from their own files.) */
#include "s3ctl/s3ctl.h"
#include "s3/xml.h"

#include <stdio.h>
#include <string.h>

int s3h_version_q(front_req_t *r, s3h_out_t *o, const char **vid)
{
    *vid = front_route_q(&r->route, "versionId");
    if (!*vid)
        return 0;
    if (!store_version_id_valid(*vid))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
    return 0;
}

void s3h_out_version(s3h_out_t *o, const char *vid, bool asked)
{
    /* The "null" version is named only when the request named a version: an unversioned
     * bucket's replies carry no version header, as S3's. */
    if (vid && vid[0] && (asked || strcmp(vid, "null") != 0))
        s3h_out_header(o, "x-amz-version-id", vid);
}

int s3h_version_not_found(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, const char *vid)
{
    if (m->delete_marker) {
        s3h_out_header(o, "x-amz-delete-marker", "true");
        s3h_out_version(o, m->version_id, true);
        if (vid) /* the version asked for is a delete marker: it has no bytes to read */
            return s3h_err(o, S3_ERR_METHOD_NOT_ALLOWED,
                           "The specified method is not allowed against this resource: the "
                           "version is a delete marker");
        return s3h_err(o, S3_ERR_NO_SUCH_KEY, NULL);
    }
    if (vid && store_bucket_exists(s3h_st(r), s3h_b(r)) == WH_OK)
        return s3h_err(o, S3_ERR_NO_SUCH_VERSION, NULL);
    return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
}

int s3h_bucket_versioning(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_need_bucket(r, o);
    if (ret)
        return ret;
    data_versioning_t v = DATA_VERSIONING_OFF;
    wh_status_t st = store_bucket_versioning_get(s3h_st(r), s3h_b(r), &v);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "reading the bucket's versioning");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    if (v == DATA_VERSIONING_OFF) {
        wh_sbuf_puts(&b, S3H_XML_DECL "<VersioningConfiguration xmlns=\"" S3H_XMLNS "\"/>");
    } else {
        wh_sbuf_puts(&b, S3H_XML_DECL "<VersioningConfiguration xmlns=\"" S3H_XMLNS "\">");
        s3_xml_elem(&b, "Status", v == DATA_VERSIONING_ENABLED ? "Enabled" : "Suspended");
        wh_sbuf_puts(&b, "</VersioningConfiguration>");
    }
    return s3h_ok_xml(o, 200, &b);
}

int s3h_bucket_versioning_put_begin(front_req_t *r, s3h_out_t *o)
{
    return s3h_need_bucket(r, o); /* 0: read the XML body */
}

int s3h_bucket_versioning_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    int status = 0;
    s3_err_t e = s3_xml_parse_versioning(r->buf.data ? r->buf.data : "", r->buf.len, &status);
    if (e != S3_OK)
        return s3h_err(o, e,
                       "The XML you provided was not well-formed or did not validate: a "
                       "VersioningConfiguration with Status Enabled or Suspended");
    wh_status_t st = store_bucket_versioning_set(
        s3h_st(r), s3h_b(r), status == 1 ? DATA_VERSIONING_ENABLED : DATA_VERSIONING_SUSPENDED);
    /* Object lock keeps versioning Enabled (the store reads it in the same transaction):
     * suspending it would let a PUT replace a locked null version. */
    if (st == WH_ERR_PRECONDITION)
        return s3h_err(o, S3_ERR_INVALID_BUCKET_STATE,
                       "An Object Lock configuration is "
                       "present on this bucket, so the versioning state cannot be changed.");
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "setting the bucket's versioning");
    return s3h_ok(o, 200);
}
