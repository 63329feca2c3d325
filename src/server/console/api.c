/* SPDX-License-Identifier: Apache-2.0 */
/* The data the console's pages show (console_int.h): the cluster's dashboard, buckets with
 * their object counts and bytes, the object browser, the /metrics text the throughput graph
 * reads, and the recent error replies. Buckets and objects are shown as the S3 API would
 * show them to the same principal: each read is decided by the S3 authorization. */
#include "console/console_int.h"
#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cluster ------------------------------------------------------------------------------ */

/* A single server (wharfd serve) in the cluster dashboard's shape: one node, itself. */
static json_t *single_status(front_req_t *r)
{
    data_space_t sp;
    memset(&sp, 0, sizeof sp);
    bool have = store_space(s3h_st(r), &sp) == WH_OK;
    char addr[300];
    snprintf(addr, sizeof addr, "%s:%u", r->srv->cfg.listen_host,
             (unsigned)r->srv->cfg.listen_port);
    json_t *node = json_pack("{s:i,s:s,s:s,s:s,s:b,s:I,s:I}", "id", 1, "addr", addr, "state", "up",
                             "zone", "", "up", 1, "capacity", (json_int_t)(have ? sp.total : 0),
                             "free", (json_int_t)(have ? sp.free : 0));
    return json_pack("{s:[o],s:{s:i,s:i,s:i},s:I,s:I,s:n,s:n}", "nodes", node, "servers", "up", 1,
                     "down", 0, "total", 1, "capacity", (json_int_t)(have ? sp.total : 0), "free",
                     (json_int_t)(have ? sp.free : 0), "leader", "backlog");
}

void console_api_cluster(front_req_t *r)
{
    const front_config_t *cfg = &r->srv->cfg;
    if (!cfg->admin_cluster) {
        console_reply_json(r, 200,
                           json_pack("{s:s,s:o}", "mode", "single", "status", single_status(r)));
        return;
    }
    /* The dashboard `wharf admin cluster --json` reads (GET /?x-wharf-cluster). */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_status_t st = cfg->admin_cluster(cfg->admin_cluster_arg, true, &b);
    json_error_t jerr;
    json_t *j = st == WH_OK && !b.oom ? json_loadb(b.data ? b.data : "", b.len, 0, &jerr) : NULL;
    wh_sbuf_free(&b);
    if (!j) {
        console_reply_error(r, 503, "ServiceUnavailable",
                            st != WH_OK ? "the cluster's state cannot be read from the database"
                                        : "the cluster's dashboard is not valid JSON");
        return;
    }
    console_reply_json(r, 200, json_pack("{s:s,s:o}", "mode", "cluster", "status", j));
}

/* ---- buckets ------------------------------------------------------------------------------ */

/* The objects of bucket and their bytes, counting at most max (*more: there are more). */
static wh_status_t count_objects(store_t *st, const char *bucket, uint64_t max, uint64_t *n,
                                 uint64_t *bytes, bool *more)
{
    *n = *bytes = 0;
    *more = max == 0;
    if (!max)
        return WH_OK;
    char *after = NULL;
    wh_status_t s = WH_OK;
    for (;;) {
        data_list_params_t p = {.start_after = after, .max_keys = 1000};
        data_list_result_t res;
        memset(&res, 0, sizeof res);
        if ((s = store_object_list(st, bucket, &p, &res)) != WH_OK)
            break;
        for (size_t i = 0; i < res.n_entries; i++) {
            (*n)++;
            *bytes += res.entries[i].size;
        }
        bool go = res.truncated && res.next_marker && res.n_entries;
        free(after);
        after = go ? strdup(res.next_marker) : NULL;
        data_list_result_free(&res);
        if (!go)
            break;
        if (!after) {
            s = WH_ERR_NOMEM;
            break;
        }
        if (*n >= max) {
            *more = true;
            break;
        }
    }
    free(after);
    return s;
}

void console_api_buckets(front_req_t *r)
{
    static const front_op_t list_all = {.level = FRONT_AT_SERVICE,
                                        .method = "GET",
                                        .api = FRONT_API_LIST_BUCKETS,
                                        .action = "s3:ListAllMyBuckets"};
    s3h_out_t o;
    console_out_init(&o);
    if (s3h_authorize(r, &list_all, &o)) {
        console_reply_out(r, &o);
        console_out_free(&o);
        return;
    }
    data_bucket_info_t *bs = NULL;
    size_t nb = 0;
    wh_status_t st = store_bucket_list(s3h_st(r), &bs, &nb);
    if (st != WH_OK) {
        console_out_free(&o);
        console_reply_error(r, 503, "ServiceUnavailable", "the buckets cannot be listed");
        return;
    }
    json_t *arr = json_array();
    uint64_t tot_n = 0, tot_b = 0, tot_seen = 0;
    for (size_t i = 0; i < nb; i++) {
        /* Shown: the buckets the principal may list (root: all), as S3 lists them to it; one
         * it may not list is not named at all. */
        console_out_free(&o);
        console_out_init(&o);
        if (s3h_authz_other(r, &o, "s3:ListBucket", bs[i].name, NULL, NULL))
            continue;
        json_t *e =
            json_pack("{s:s,s:I}", "name", bs[i].name, "created", (json_int_t)bs[i].created);
        {
            uint64_t n, bytes;
            bool more;
            /* at most CONSOLE_COUNT_MAX a bucket, CONSOLE_COUNT_TOTAL over all of them */
            uint64_t left = CONSOLE_COUNT_TOTAL > tot_seen ? CONSOLE_COUNT_TOTAL - tot_seen : 0;
            if (count_objects(s3h_st(r), bs[i].name, WH_MIN(left, CONSOLE_COUNT_MAX), &n, &bytes,
                              &more) == WH_OK) {
                tot_seen += n;
                json_object_set_new(e, "objects", json_integer((json_int_t)n));
                json_object_set_new(e, "bytes", json_integer((json_int_t)bytes));
                json_object_set_new(e, "more", json_boolean(more));
                tot_n += n;
                tot_b += bytes;
            } else {
                json_object_set_new(e, "unavailable", json_true());
            }
        }
        json_array_append_new(arr, e);
    }
    console_out_free(&o);
    free(bs);
    console_reply_json(r, 200,
                       json_pack("{s:o,s:I,s:I,s:i}", "buckets", arr, "objects", (json_int_t)tot_n,
                                 "bytes", (json_int_t)tot_b, "count_max", CONSOLE_COUNT_MAX));
}

/* ---- objects ------------------------------------------------------------------------------ */

/* The bucket query parameter, valid; NULL with a reply sent. */
static const char *q_bucket(front_req_t *r)
{
    const char *b = front_route_q(&r->route, "bucket");
    if (!b || !store_bucket_name_valid(b)) {
        console_reply_error(r, 400, "InvalidBucketName", "the bucket parameter must name a bucket");
        return NULL;
    }
    return b;
}

/* s3:action on bucket/key for r->who: true, or false with the refusal sent. */
static bool allowed(front_req_t *r, const char *action, const char *bucket, const char *key,
                    const data_obj_meta_t *m)
{
    s3h_out_t o;
    console_out_init(&o);
    int st = s3h_authz_other(r, &o, action, bucket, key, m);
    if (st)
        console_reply_out(r, &o);
    console_out_free(&o);
    return st == 0;
}

void console_api_objects(front_req_t *r)
{
    const char *bucket = q_bucket(r);
    if (!bucket || !allowed(r, "s3:ListBucket", bucket, NULL, NULL))
        return;
    const char *prefix = front_route_q(&r->route, "prefix");
    const char *delim = front_route_q(&r->route, "delimiter");
    const char *after = front_route_q(&r->route, "start-after");
    data_list_params_t p = {.prefix = prefix && *prefix ? prefix : NULL,
                            .delimiter = delim && *delim ? delim : NULL,
                            .start_after = after && *after ? after : NULL,
                            .max_keys = CONSOLE_LIST_PAGE};
    data_list_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t st = store_object_list(s3h_st(r), bucket, &p, &res);
    if (st != WH_OK) {
        console_reply_error(r, st == WH_ERR_NOT_FOUND ? 404 : 503,
                            st == WH_ERR_NOT_FOUND ? "NoSuchBucket" : "ServiceUnavailable",
                            st == WH_ERR_NOT_FOUND ? "no such bucket" : "the listing failed");
        return;
    }
    json_t *objs = json_array(), *pfx = json_array();
    for (size_t i = 0; i < res.n_entries; i++) {
        const data_list_entry_t *e = &res.entries[i];
        json_array_append_new(objs, json_pack("{s:o,s:I,s:I,s:o}", "key", console_jstr(e->key),
                                              "size", (json_int_t)e->size, "mtime",
                                              (json_int_t)e->mtime, "etag", console_jstr(e->etag)));
    }
    for (size_t i = 0; i < res.n_prefixes; i++)
        json_array_append_new(pfx, console_jstr(res.prefixes[i]));
    json_t *j = json_pack("{s:s,s:o,s:o,s:o,s:b,s:o}", "bucket", bucket, "prefix",
                          console_jstr(p.prefix ? p.prefix : ""), "objects", objs, "prefixes", pfx,
                          "truncated", res.truncated, "next",
                          console_jstr(res.truncated ? res.next_marker : NULL));
    data_list_result_free(&res);
    console_reply_json(r, 200, j);
}

/* The current version of bucket/key into m, when the principal may read it: true, or false
 * with the reply sent (404 only to who may list the bucket, as S3 answers). */
static bool open_object(front_req_t *r, const char **bucket, const char **key, data_obj_meta_t *m)
{
    if (!(*bucket = q_bucket(r)))
        return false;
    *key = front_route_q(&r->route, "key");
    if (!*key || !store_key_valid(*key, strlen(*key))) {
        console_reply_error(r, 400, "InvalidArgument", "the key parameter must name an object");
        return false;
    }
    memset(m, 0, sizeof *m);
    wh_status_t st =
        store_object_open(s3h_st(r), &(store_read_args_t){.bucket = *bucket, .key = *key}, m, NULL);
    if (st == WH_ERR_NOT_FOUND) {
        if (allowed(r, "s3:ListBucket", *bucket, NULL, NULL))
            console_reply_error(r, 404, "NoSuchKey", "no such object");
        return false;
    }
    if (st != WH_OK) {
        console_reply_error(r, 503, "ServiceUnavailable", "the object's metadata cannot be read");
        return false;
    }
    if (!allowed(r, "s3:GetObject", *bucket, *key, m)) {
        data_obj_meta_free(m);
        return false;
    }
    return true;
}

void console_api_head(front_req_t *r)
{
    const char *bucket, *key;
    data_obj_meta_t m;
    if (!open_object(r, &bucket, &key, &m))
        return;
    json_error_t jerr;
    json_t *um = m.user_meta_json ? json_loads(m.user_meta_json, 0, &jerr) : NULL;
    json_t *j = json_pack(
        "{s:s,s:o,s:I,s:I,s:o,s:o,s:o,s:i,s:o,s:o,s:b,s:o,s:b}", "bucket", bucket, "key",
        console_jstr(key), "size", (json_int_t)m.size, "mtime", (json_int_t)m.mtime, "etag",
        console_jstr(m.etag), "content_type", console_jstr(m.content_type), "version_id",
        console_jstr(m.version_id), "parts", (int)m.parts, "crc64nvme", console_jstr(m.crc64nvme),
        "metadata", um ? um : json_object(), "encrypted", m.sse != NULL, "tags",
        console_jstr(m.tags), "downloadable", m.sse == NULL && m.size <= CONSOLE_DOWNLOAD_MAX);
    data_obj_meta_free(&m);
    console_reply_json(r, 200, j);
}

void console_api_download(front_req_t *r)
{
    const char *bucket, *key;
    data_obj_meta_t m;
    if (!open_object(r, &bucket, &key, &m))
        return;
    if (m.sse) {
        data_obj_meta_free(&m);
        console_reply_error(r, 501, "NotImplemented",
                            "the console does not download encrypted objects: use an S3 client");
        return;
    }
    if (m.size > CONSOLE_DOWNLOAD_MAX) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the object has %" PRIu64 " bytes; the console downloads at most %u: use an "
                 "S3 client",
                 m.size, CONSOLE_DOWNLOAD_MAX);
        data_obj_meta_free(&m);
        console_reply_error(r, 413, "EntityTooLarge", msg);
        return;
    }
    data_obj_meta_free(&m);
    data_reader_t *rd = NULL;
    memset(&m, 0, sizeof m);
    wh_status_t st =
        store_object_reader(s3h_st(r), &(store_read_args_t){.bucket = bucket, .key = key}, &m, &rd);
    size_t n = st == WH_OK ? (size_t)store_reader_size(rd) : 0;
    char *buf = st == WH_OK && !m.sse && n <= CONSOLE_DOWNLOAD_MAX ? malloc(n ? n : 1) : NULL;
    if (buf && n)
        st = store_reader_pread(rd, buf, n, 0);
    store_reader_close(rd);
    data_obj_meta_free(&m);
    if (st != WH_OK || !buf) {
        free(buf);
        console_reply_error(r, st == WH_ERR_NOT_FOUND ? 404 : 503,
                            st == WH_ERR_NOT_FOUND ? "NoSuchKey" : "ServiceUnavailable",
                            st == WH_ERR_NOT_FOUND ? "no such object"
                                                   : "the object cannot be read");
        return;
    }
    /* Always an attachment of opaque bytes: stored HTML never renders in the console's origin. */
    console_reply_bytes(r, 200, "application/octet-stream", buf, n, "attachment");
}

/* ---- throughput and errors ---------------------------------------------------------------- */

void console_api_metrics(front_req_t *r)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    front_metrics_text(r->srv, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        console_reply_error(r, 500, "InternalError", "out of memory rendering metrics");
        return;
    }
    size_t n = b.len;
    console_reply_bytes(r, 200, "text/plain; version=0.0.4", wh_sbuf_steal(&b), n, NULL);
}

void console_api_errors(front_req_t *r)
{
    front_recent_err_t *e = malloc(FRONT_RECENT_ERRORS * sizeof *e);
    if (!e) {
        console_reply_error(r, 500, "InternalError", "out of memory");
        return;
    }
    uint64_t total = 0;
    size_t n = front_recent_copy(&r->srv->recent, e, FRONT_RECENT_ERRORS, &total);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            arr, json_pack("{s:I,s:I,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "seq", (json_int_t)e[i].seq,
                           "time", (json_int_t)e[i].t, "status", e[i].status, "id",
                           console_jstr(e[i].id), "method", console_jstr(e[i].method), "api",
                           console_jstr(e[i].api), "code", console_jstr(e[i].code), "path",
                           console_jstr(e[i].path), "message", console_jstr(e[i].msg), "peer",
                           console_jstr(e[i].peer)));
    free(e);
    console_reply_json(r, 200,
                       json_pack("{s:o,s:I,s:i}", "errors", arr, "total", (json_int_t)total, "kept",
                                 FRONT_RECENT_ERRORS));
}
