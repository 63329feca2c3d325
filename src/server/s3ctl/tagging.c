/* SPDX-License-Identifier: Apache-2.0 */
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

int s3h_tags_from_request(front_req_t *r, s3h_out_t *o, char **tags)
{
    *tags = NULL;
    const char *h = front_hdr(r, "x-amz-tagging");
    if (!h || !*h)
        return 0;
    s3_tagset_t t;
    char msg[200];
    s3_err_t e = s3_tags_parse_query(h, strlen(h), S3_TAGS_MAX, &t, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    if (t.n == 0)
        return 0;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(&t, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the tags");
    }
    *tags = wh_sbuf_steal(&b);
    return 0;
}

void s3h_out_tag_count(s3h_out_t *o, const char *tags)
{
    if (!tags || !*tags)
        return;
    uint64_t n = 1;
    for (const char *p = tags; *p; p++)
        n += *p == '&';
    s3h_out_header_u64(o, "x-amz-tagging-count", n);
}

/* The version a tagging request names, looked up: 0 or the error's status. */
static int tagging_target(front_req_t *r, s3h_out_t *o, const char **vid, data_obj_meta_t *m)
{
    int ret;
    memset(m, 0, sizeof *m);
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_version_q(r, o, vid)))
        return ret;
    wh_status_t st = store_object_open(
        s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r), .version_id = *vid}, m,
        NULL);
    if (st == WH_ERR_NOT_FOUND) {
        /* A delete marker has no tags: 405 by versionId, else NoSuchKey (as a GET). */
        ret = s3h_version_not_found(r, o, m, *vid);
        data_obj_meta_free(m);
        return ret;
    }
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "looking up the object");
    return 0;
}

int s3h_tagging_get(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    data_obj_meta_t m;
    int ret = tagging_target(r, o, &vid, &m);
    if (ret)
        return ret;
    s3_tagset_t t;
    char msg[200];
    const char *tags = m.tags ? m.tags : "";
    if (s3_tags_parse_query(tags, strlen(tags), S3_TAGS_MAX, &t, msg, sizeof msg) != S3_OK) {
        data_obj_meta_free(&m);
        return s3h_errf(o, S3_ERR_INTERNAL, "the stored tags are damaged: %s", msg);
    }
    s3h_out_version(o, m.version_id, vid != NULL);
    data_obj_meta_free(&m);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_tags_format_xml(&t, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_tagging_put_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    return 0; /* read the Tagging document */
}

/* Sets (tags non-NULL) or removes the tags of the version the request names. */
static int tagging_set(front_req_t *r, s3h_out_t *o, const char *tags, int ok_status)
{
    const char *vid;
    data_obj_meta_t m;
    int ret = tagging_target(r, o, &vid, &m);
    if (ret)
        return ret;
    /* The version found, by id: a concurrent PUT cannot make this land on a newer one. */
    char v[DATA_VERSION_ID_MAX];
    snprintf(v, sizeof v, "%s", m.version_id);
    data_obj_meta_free(&m);
    wh_status_t st = store_object_tags_set(s3h_st(r), s3h_b(r), s3h_k(r), vid ? vid : v, tags);
    if (st == WH_ERR_NOT_FOUND)
        return vid ? s3h_err(o, S3_ERR_NO_SUCH_VERSION, NULL)
                   : s3h_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "setting the tags");
    s3h_out_version(o, v, vid != NULL);
    return s3h_ok(o, ok_status);
}

int s3h_tagging_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_tagset_t t;
    char msg[200];
    s3_err_t e = s3_tags_parse_xml(r->buf.data ? r->buf.data : "", r->buf.len, S3_TAGS_MAX, &t, msg,
                                   sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(&t, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the tags");
    }
    ret = tagging_set(r, o, t.n ? (b.data ? b.data : "") : NULL, 200);
    wh_sbuf_free(&b);
    return ret;
}

int s3h_tagging_delete(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_need_bucket(r, o);
    return ret ? ret : tagging_set(r, o, NULL, 204);
}
