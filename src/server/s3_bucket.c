/* Buckets: ListBuckets, CreateBucket, DeleteBucket, HeadBucket, GetBucketLocation and
 * GetBucketVersioning (objects are unversioned: the configuration is always empty). */
#include "server/s3api.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_bucket_list_all(srv_req_t *r, srv_out_t *o)
{
    store_bucket_info_t *bs = NULL;
    size_t n = 0;
    wh_status_t st = store_bucket_list(srv_st(r), &bs, &n);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "listing buckets");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<ListAllMyBucketsResult xmlns=\"" S3_XMLNS "\">");
    srv_xml_owner(r, &b, "Owner");
    wh_sbuf_puts(&b, "<Buckets>");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<Bucket>");
        s3_xml_elem(&b, "Name", bs[i].name);
        srv_xml_time(&b, "CreationDate", bs[i].created);
        wh_sbuf_puts(&b, "</Bucket>");
    }
    wh_sbuf_puts(&b, "</Buckets></ListAllMyBucketsResult>");
    free(bs);
    return srv_ok_xml(o, 200, &b);
}

int srv_bucket_create_begin(srv_req_t *r, srv_out_t *o)
{
    if (!store_bucket_name_valid(srv_b(r)))
        return srv_err(o, S3_ERR_INVALID_BUCKET_NAME,
                       "bucket names are 3-63 characters of a-z, 0-9, '.' and '-', starting "
                       "and ending with a letter or digit");
    return 0; /* read the optional CreateBucketConfiguration */
}

int srv_bucket_create_finish(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_body_md5_check(r, o);
    if (ret)
        return ret;
    char loc[64] = "";
    if (r->buf.len) {
        s3_err_t e = s3_xml_parse_create_bucket(r->buf.data, r->buf.len, loc, sizeof loc);
        if (e != S3_OK)
            return srv_err(o, e, NULL);
    }
    if (loc[0] && strcmp(loc, r->srv->cfg.region) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "The %s location constraint is incompatible with the region "
                                  "of this endpoint (%s).", loc, r->srv->cfg.region);
        return srv_err_raw(o, 400, "IllegalLocationConstraintException", msg);
    }
    wh_status_t st = store_bucket_create(srv_st(r), srv_b(r));
    if (st == WH_ERR_EXISTS)
        return srv_err(o, S3_ERR_BUCKET_EXISTS, NULL);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "creating the bucket");
    char l[80];
    snprintf(l, sizeof l, "/%s", srv_b(r));
    srv_out_header(o, MHD_HTTP_HEADER_LOCATION, l);
    return srv_ok(o, 200);
}

int srv_bucket_delete(srv_req_t *r, srv_out_t *o)
{
    wh_status_t st = store_bucket_delete(srv_st(r), srv_b(r));
    if (st == WH_OK)
        return srv_ok(o, 204);
    if (st == WH_ERR_NOT_FOUND)
        return srv_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st == WH_ERR_NOT_EMPTY)
        return srv_err(o, S3_ERR_BUCKET_NOT_EMPTY, NULL);
    return srv_err_status(r, o, st, "deleting the bucket");
}

int srv_bucket_head(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_need_bucket(r, o);
    if (ret)
        return ret;
    srv_out_header(o, "x-amz-bucket-region", r->srv->cfg.region);
    return srv_ok(o, 200);
}

int srv_bucket_location(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_need_bucket(r, o);
    if (ret)
        return ret;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    /* us-east-1 is the empty constraint, as S3 answers. */
    const char *reg = strcmp(r->srv->cfg.region, "us-east-1") == 0 ? "" : r->srv->cfg.region;
    wh_sbuf_puts(&b, XML_DECL "<LocationConstraint xmlns=\"" S3_XMLNS "\">");
    s3_xml_escape(&b, reg);
    wh_sbuf_puts(&b, "</LocationConstraint>");
    return srv_ok_xml(o, 200, &b);
}

int srv_bucket_versioning(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_need_bucket(r, o);
    if (ret)
        return ret;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<VersioningConfiguration xmlns=\"" S3_XMLNS "\"/>");
    return srv_ok_xml(o, 200, &b);
}
