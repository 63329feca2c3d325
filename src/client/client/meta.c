/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: object delete, listing (ListObjectsV2 with continuation tokens) and buckets. */
#include "client/client_int.h"

#include "base/log.h"
#include "auth/sigv4.h"
#include "s3/xml.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "client"

/* One request that needs no body and expects a 2xx; optional reply body into out. */
static wh_status_t simple_call(wharf_client_t *c, const char *method, const char *bucket,
                               const char *key, const char *query, wh_sbuf_t *out, const char *what)
{
    wc_conn_t *conn = wc_client_conn_get(c);
    if (!conn)
        return WH_ERR_NOMEM;
    wc_req_t req = {.method = method, .bucket = bucket, .key = key, .query = query};
    if (!strcmp(method, "PUT")) {
        req.has_body = true;
        req.payload_hash = AUTH_EMPTY_SHA256;
    }
    req.body_out = out;
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    wc_client_conn_put(c, conn);
    if (st == WH_OK && (r.status < 200 || r.status >= 300))
        st = wc_http_status_map(&r);
    if (st != WH_OK) {
        char msg[WC_ERR_LEN];
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_set_error("%s", msg);
    } else if (out && out->oom) {
        st = WH_ERR_NOMEM;
        wc_set_error("%s: out of memory reading the reply", what);
    }
    wc_resp_fini(&r);
    return st;
}

static bool bucket_ok(const char *bucket)
{
    return bucket && *bucket && !strchr(bucket, '/');
}

WHARF_API wharf_status_t wharf_object_delete(wharf_client_t *c, const char *bucket, const char *key)
{
    wc_client_enter(c);
    if (!c || !bucket_ok(bucket) || !key || !*key) {
        wc_set_error("wharf_object_delete: client, bucket and key are required");
        return WHARF_ERR_INVALID;
    }
    char what[128];
    snprintf(what, sizeof what, "DELETE %s/%s", bucket, key);
    return (wharf_status_t)simple_call(c, "DELETE", bucket, key, NULL, NULL, what);
}

WHARF_API wharf_status_t wharf_bucket_create(wharf_client_t *c, const char *bucket)
{
    wc_client_enter(c);
    if (!c || !bucket_ok(bucket)) {
        wc_set_error("wharf_bucket_create: client and a bucket name without '/' are required");
        return WHARF_ERR_INVALID;
    }
    char what[128];
    snprintf(what, sizeof what, "PUT bucket %s", bucket);
    return (wharf_status_t)simple_call(c, "PUT", bucket, NULL, NULL, NULL, what);
}

WHARF_API wharf_status_t wharf_bucket_delete(wharf_client_t *c, const char *bucket)
{
    wc_client_enter(c);
    if (!c || !bucket_ok(bucket)) {
        wc_set_error("wharf_bucket_delete: client and a bucket name are required");
        return WHARF_ERR_INVALID;
    }
    char what[128];
    snprintf(what, sizeof what, "DELETE bucket %s", bucket);
    return (wharf_status_t)simple_call(c, "DELETE", bucket, NULL, NULL, NULL, what);
}

/* ---- listing ---------------------------------------------------------------------------- */

typedef struct list_walk {
    const char *entry_path; /* ".../Contents" or ".../Bucket" */
    const char *f_key, *f_size, *f_mtime, *f_etag;
    wh_sbuf_t key;
    uint64_t size;
    int64_t mtime;
    char etag[80];
    bool have_key;
    bool truncated;
    wh_sbuf_t next_token;
    char err_code[64];
    wharf_list_cb cb;
    void *arg;
    bool stopped;
    uint64_t n;
} list_walk_t;

static void copy_text(char *dst, size_t dstlen, const char *t, size_t len)
{
    size_t n = WH_MIN(len, dstlen - 1);
    memcpy(dst, t, n);
    dst[n] = '\0';
}

static void list_walk_cb(void *arg, const char *path, const char *text, size_t len)
{
    list_walk_t *w = arg;
    char tmp[64];
    if (!strcmp(path, w->f_key)) {
        wh_sbuf_reset(&w->key);
        wh_sbuf_append(&w->key, text, len);
        w->have_key = true;
    } else if (w->f_size && !strcmp(path, w->f_size)) {
        copy_text(tmp, sizeof tmp, text, len);
        if (wh_parse_u64(tmp, strlen(tmp), &w->size) != 0)
            w->size = 0;
    } else if (!strcmp(path, w->f_mtime)) {
        copy_text(tmp, sizeof tmp, text, len);
        w->mtime = wc_parse_iso8601(tmp);
    } else if (w->f_etag && !strcmp(path, w->f_etag)) {
        copy_text(w->etag, sizeof w->etag, text, len);
    } else if (!strcmp(path, w->entry_path)) {
        if (w->have_key && !w->stopped && !w->key.oom) {
            w->n++;
            if (w->cb(w->arg, w->key.data ? w->key.data : "", w->size, w->mtime, w->etag) != 0)
                w->stopped = true;
        }
        w->have_key = false;
        w->size = 0;
        w->mtime = 0;
        w->etag[0] = '\0';
    } else if (!strcmp(path, "ListBucketResult/IsTruncated")) {
        w->truncated = len == 4 && !memcmp(text, "true", 4);
    } else if (!strcmp(path, "ListBucketResult/NextContinuationToken")) {
        wh_sbuf_reset(&w->next_token);
        wh_sbuf_append(&w->next_token, text, len);
    } else if (!strcmp(path, "Error/Code")) {
        copy_text(w->err_code, sizeof w->err_code, text, len);
    }
}

WHARF_API wharf_status_t wharf_object_list(wharf_client_t *c, const char *bucket,
                                           const char *prefix, wharf_list_cb cb, void *arg)
{
    wc_client_enter(c);
    if (!c || !bucket_ok(bucket) || !cb) {
        wc_set_error("wharf_object_list: client, bucket and cb are required");
        return WHARF_ERR_INVALID;
    }
    list_walk_t w;
    memset(&w, 0, sizeof w);
    w.entry_path = "ListBucketResult/Contents";
    w.f_key = "ListBucketResult/Contents/Key";
    w.f_size = "ListBucketResult/Contents/Size";
    w.f_mtime = "ListBucketResult/Contents/LastModified";
    w.f_etag = "ListBucketResult/Contents/ETag";
    w.cb = cb;
    w.arg = arg;
    wh_sbuf_init(&w.key);
    wh_sbuf_init(&w.next_token);
    wh_sbuf_t q, body, token;
    wh_sbuf_init(&q);
    wh_sbuf_init(&body);
    wh_sbuf_init(&token);
    wh_status_t st = WH_OK;
    char what[160];
    snprintf(what, sizeof what, "LIST %s/%s", bucket, prefix ? prefix : "");
    /* bounded: 1000 keys a page; a server that never stops truncating is a protocol error */
    for (unsigned page = 0; page < 10000000u; page++) {
        wh_sbuf_reset(&q);
        if (token.len) {
            wh_sbuf_puts(&q, "continuation-token=");
            s3_uri_encode(token.data, token.len, 1, &q);
            wh_sbuf_puts(&q, "&");
        }
        wh_sbuf_puts(&q, "list-type=2&max-keys=1000");
        if (prefix && *prefix) {
            wh_sbuf_puts(&q, "&prefix=");
            s3_uri_encode(prefix, strlen(prefix), 1, &q);
        }
        if (q.oom) {
            st = WH_ERR_NOMEM;
            wc_set_error("%s: out of memory", what);
            break;
        }
        wh_sbuf_reset(&body);
        st = simple_call(c, "GET", bucket, NULL, q.data, &body, what);
        if (st != WH_OK)
            break;
        w.truncated = false;
        wh_sbuf_reset(&w.next_token);
        if (s3_xml_walk(body.data ? body.data : "", body.len, list_walk_cb, &w) != 0) {
            st = WH_ERR_PROTOCOL;
            wc_set_error("%s: the reply is not valid ListBucketResult XML", what);
            break;
        }
        if (w.stopped) {
            st = WH_ERR_CANCELED;
            wc_set_error("%s: stopped by the callback", what);
            break;
        }
        if (!w.truncated)
            break;
        if (!w.next_token.len ||
            (token.len == w.next_token.len && !memcmp(token.data, w.next_token.data, token.len))) {
            st = WH_ERR_PROTOCOL;
            wc_set_error("%s: truncated listing without a new NextContinuationToken", what);
            break;
        }
        wh_sbuf_reset(&token);
        wh_sbuf_append(&token, w.next_token.data, w.next_token.len);
    }
    wh_sbuf_free(&w.key);
    wh_sbuf_free(&w.next_token);
    wh_sbuf_free(&q);
    wh_sbuf_free(&body);
    wh_sbuf_free(&token);
    return (wharf_status_t)st;
}

WHARF_API wharf_status_t wharf_bucket_list(wharf_client_t *c, wharf_list_cb cb, void *arg)
{
    wc_client_enter(c);
    if (!c || !cb) {
        wc_set_error("wharf_bucket_list: client and cb are required");
        return WHARF_ERR_INVALID;
    }
    list_walk_t w;
    memset(&w, 0, sizeof w);
    w.entry_path = "ListAllMyBucketsResult/Buckets/Bucket";
    w.f_key = "ListAllMyBucketsResult/Buckets/Bucket/Name";
    w.f_mtime = "ListAllMyBucketsResult/Buckets/Bucket/CreationDate";
    w.cb = cb;
    w.arg = arg;
    wh_sbuf_init(&w.key);
    wh_sbuf_init(&w.next_token);
    wh_sbuf_t body;
    wh_sbuf_init(&body);
    wh_status_t st = simple_call(c, "GET", NULL, NULL, NULL, &body, "LIST buckets");
    if (st == WH_OK) {
        if (s3_xml_walk(body.data ? body.data : "", body.len, list_walk_cb, &w) != 0) {
            st = WH_ERR_PROTOCOL;
            wc_set_error("LIST buckets: the reply is not valid ListAllMyBucketsResult XML");
        } else if (w.stopped) {
            st = WH_ERR_CANCELED;
            wc_set_error("LIST buckets: stopped by the callback");
        }
    }
    wh_sbuf_free(&w.key);
    wh_sbuf_free(&w.next_token);
    wh_sbuf_free(&body);
    return (wharf_status_t)st;
}

WHARF_API wharf_status_t wharf_admin_cluster(wharf_client_t *c, int json, char *buf, size_t cap,
                                             size_t *len)
{
    wc_client_enter(c);
    if (!c || !buf || cap == 0) {
        wc_set_error("wharf_admin_cluster: client and a buffer are required");
        return WHARF_ERR_INVALID;
    }
    wh_sbuf_t body;
    wh_sbuf_init(&body);
    wh_status_t st =
        simple_call(c, "GET", NULL, NULL, json ? "x-wharf-cluster=json" : "x-wharf-cluster=text",
                    &body, "GET cluster status");
    if (st == WH_OK) {
        if (len)
            *len = body.len;
        if (body.len >= cap) {
            st = WH_ERR_TOO_LARGE;
            wc_set_error("GET cluster status: the reply has %zu bytes, the buffer %zu", body.len,
                         cap);
        } else {
            if (body.len)
                memcpy(buf, body.data, body.len);
            buf[body.len] = '\0';
        }
    }
    wh_sbuf_free(&body);
    return (wharf_status_t)st;
}
