/* Object tagging: GetObjectTagging, PutObjectTagging, DeleteObjectTagging (each of one version,
 * ?versionId), the x-amz-tagging header of PutObject, CreateMultipartUpload and CopyObject
 * (x-amz-tagging-directive), and x-amz-tagging-count on GET/HEAD. Tags are kept in the
 * canonical query form of s3/tags.h. */
#include "s3ctl/s3ctl.h"
#include "s3/tags.h"
#include "s3/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_tags_from_request(srv_req_t *r, srv_out_t *o, char **tags)
{
    *tags = NULL;
    const char *h = srv_hdr(r, "x-amz-tagging");
    if (!h || !*h)
        return 0;
    s3_tagset_t t;
    char msg[200];
    s3_err_t e = s3_tags_parse_query(h, strlen(h), S3_TAGS_MAX, &t, msg, sizeof msg);
    if (e != S3_OK)
        return srv_err(o, e, msg);
    if (t.n == 0)
        return 0;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(&t, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return srv_err(o, S3_ERR_INTERNAL, "out of memory keeping the tags");
    }
    *tags = wh_sbuf_steal(&b);
    return 0;
}

void srv_out_tag_count(srv_out_t *o, const char *tags)
{
    if (!tags || !*tags)
        return;
    uint64_t n = 1;
    for (const char *p = tags; *p; p++)
        n += *p == '&';
    srv_out_header_u64(o, "x-amz-tagging-count", n);
}

/* The version a tagging request names, looked up: 0 or the error's status. */
static int tagging_target(srv_req_t *r, srv_out_t *o, const char **vid, store_obj_meta_t *m)
{
    int ret;
    memset(m, 0, sizeof *m);
    if ((ret = srv_key_check(r, o)) || (ret = srv_version_q(r, o, vid)))
        return ret;
    wh_status_t st = store_object_open(
        srv_st(r), &(store_read_args_t){.bucket = srv_b(r), .key = srv_k(r), .version_id = *vid}, m,
        NULL);
    if (st == WH_ERR_NOT_FOUND) {
        /* A delete marker has no tags: 405 by versionId, else NoSuchKey (as a GET). */
        ret = srv_version_not_found(r, o, m, *vid);
        store_obj_meta_free(m);
        return ret;
    }
    if (st != WH_OK)
        return srv_err_status(r, o, st, "looking up the object");
    return 0;
}

int srv_tagging_get(srv_req_t *r, srv_out_t *o)
{
    const char *vid;
    store_obj_meta_t m;
    int ret = tagging_target(r, o, &vid, &m);
    if (ret)
        return ret;
    s3_tagset_t t;
    char msg[200];
    const char *tags = m.tags ? m.tags : "";
    if (s3_tags_parse_query(tags, strlen(tags), S3_TAGS_MAX, &t, msg, sizeof msg) != S3_OK) {
        store_obj_meta_free(&m);
        return srv_errf(o, S3_ERR_INTERNAL, "the stored tags are damaged: %s", msg);
    }
    srv_out_version(o, m.version_id, vid != NULL);
    store_obj_meta_free(&m);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL);
    s3_tags_format_xml(&t, &b, S3_XMLNS);
    return srv_ok_xml(o, 200, &b);
}

int srv_tagging_put_begin(srv_req_t *r, srv_out_t *o)
{
    int ret;
    if ((ret = srv_key_check(r, o)) || (ret = srv_need_bucket(r, o)))
        return ret;
    return 0; /* read the Tagging document */
}

/* Sets (tags non-NULL) or removes the tags of the version the request names. */
static int tagging_set(srv_req_t *r, srv_out_t *o, const char *tags, int ok_status)
{
    const char *vid;
    store_obj_meta_t m;
    int ret = tagging_target(r, o, &vid, &m);
    if (ret)
        return ret;
    /* The version found, by id: a concurrent PUT cannot make this land on a newer one. */
    char v[STORE_VERSION_ID_MAX];
    snprintf(v, sizeof v, "%s", m.version_id);
    store_obj_meta_free(&m);
    wh_status_t st = store_object_tags_set(srv_st(r), srv_b(r), srv_k(r), vid ? vid : v, tags);
    if (st == WH_ERR_NOT_FOUND)
        return vid ? srv_err(o, S3_ERR_NO_SUCH_VERSION, NULL)
                   : srv_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "setting the tags");
    srv_out_version(o, v, vid != NULL);
    return srv_ok(o, ok_status);
}

int srv_tagging_put_finish(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_tagset_t t;
    char msg[200];
    s3_err_t e = s3_tags_parse_xml(r->buf.data ? r->buf.data : "", r->buf.len, S3_TAGS_MAX, &t, msg,
                                   sizeof msg);
    if (e != S3_OK)
        return srv_err(o, e, msg);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(&t, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return srv_err(o, S3_ERR_INTERNAL, "out of memory keeping the tags");
    }
    ret = tagging_set(r, o, t.n ? (b.data ? b.data : "") : NULL, 200);
    wh_sbuf_free(&b);
    return ret;
}

int srv_tagging_delete(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_need_bucket(r, o);
    return ret ? ret : tagging_set(r, o, NULL, 204);
}
