/* Listings: ListObjects (v1, marker), ListObjectsV2 (continuation token, the base64 of the
 * last key) and ListObjectVersions (every object is its one "null" version). */
#include "server/s3api.h"
#include "base/codec.h"
#include "s3/xml.h"

#include <stdlib.h>
#include <string.h>

typedef enum { LIST_V1, LIST_V2, LIST_VERSIONS } list_kind_t;

static int list_objects(srv_req_t *r, srv_out_t *o, list_kind_t kind)
{
    bool url;
    uint64_t max_keys;
    int ret;
    if ((ret = srv_q_encoding_url(r, o, &url)) ||
        (ret = srv_q_uint(r, o, "max-keys", 1000, &max_keys)) || (ret = srv_need_bucket(r, o)))
        return ret;
    if (max_keys > 1000)
        max_keys = 1000;
    const char *prefix = srv_route_q(&r->route, "prefix");
    const char *delim = srv_route_q(&r->route, "delimiter");
    if (delim && !*delim)
        delim = NULL;
    const char *ctoken = kind == LIST_V2 ? srv_route_q(&r->route, "continuation-token") : NULL;
    const char *start_after = NULL;
    char *decoded_token = NULL;
    if (ctoken) {
        size_t tl = strlen(ctoken);
        decoded_token = malloc(tl + 1);
        long n = decoded_token ? wh_base64_decode(ctoken, tl, decoded_token, tl) : -1;
        if (n <= 0 || memchr(decoded_token, '\0', (size_t)n)) {
            free(decoded_token);
            return srv_err(o, S3_ERR_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
        }
        decoded_token[n] = '\0';
        start_after = decoded_token;
    } else if (kind == LIST_V2) {
        start_after = srv_route_q(&r->route, "start-after");
    } else if (kind == LIST_V1) {
        start_after = srv_route_q(&r->route, "marker");
    } else {
        start_after = srv_route_q(&r->route, "key-marker");
    }
    if (start_after && !*start_after)
        start_after = NULL;

    store_list_params_t p = {
        .prefix = prefix && *prefix ? prefix : NULL,
        .delimiter = delim,
        .start_after = start_after,
        .max_keys = (uint32_t)max_keys,
    };
    store_list_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t st = store_object_list(srv_st(r), srv_b(r), &p, &res);
    if (st != WH_OK) {
        free(decoded_token);
        return srv_err_status(r, o, st, "listing objects");
    }

    bool fetch_owner = kind != LIST_V2;
    const char *fo = srv_route_q(&r->route, "fetch-owner");
    if (kind == LIST_V2 && fo && strcmp(fo, "true") == 0)
        fetch_owner = true;

    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, XML_DECL "<%s xmlns=\"" S3_XMLNS "\">",
                   kind == LIST_VERSIONS ? "ListVersionsResult" : "ListBucketResult");
    s3_xml_elem(&b, "Name", srv_b(r));
    srv_xml_enc(&b, "Prefix", prefix ? prefix : "", url);
    if (kind == LIST_V2) {
        if (ctoken)
            s3_xml_elem(&b, "ContinuationToken", ctoken);
        const char *sa = srv_route_q(&r->route, "start-after");
        if (sa)
            srv_xml_enc(&b, "StartAfter", sa, url);
        s3_xml_elem_u64(&b, "KeyCount", res.n_entries + res.n_prefixes);
        if (res.truncated && res.next_marker) {
            size_t ml = strlen(res.next_marker);
            char *tok = malloc(4 * ((ml + 2) / 3) + 1);
            if (tok) {
                wh_base64_encode(res.next_marker, ml, tok);
                s3_xml_elem(&b, "NextContinuationToken", tok);
                free(tok);
            } else {
                b.oom = true;
            }
        }
    } else if (kind == LIST_V1) {
        const char *mk = srv_route_q(&r->route, "marker");
        srv_xml_enc(&b, "Marker", mk ? mk : "", url);
        if (res.truncated && res.next_marker)
            srv_xml_enc(&b, "NextMarker", res.next_marker, url);
    } else {
        const char *km = srv_route_q(&r->route, "key-marker");
        srv_xml_enc(&b, "KeyMarker", km ? km : "", url);
        s3_xml_elem(&b, "VersionIdMarker", "");
        if (res.truncated && res.next_marker) {
            srv_xml_enc(&b, "NextKeyMarker", res.next_marker, url);
            s3_xml_elem(&b, "NextVersionIdMarker", "null");
        }
    }
    s3_xml_elem_u64(&b, "MaxKeys", max_keys);
    if (delim)
        srv_xml_enc(&b, "Delimiter", delim, url);
    if (url)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
    for (size_t i = 0; i < res.n_entries; i++) {
        const store_list_entry_t *e = &res.entries[i];
        wh_sbuf_puts(&b, kind == LIST_VERSIONS ? "<Version>" : "<Contents>");
        srv_xml_enc(&b, "Key", e->key, url);
        if (kind == LIST_VERSIONS) {
            s3_xml_elem(&b, "VersionId", "null");
            s3_xml_elem(&b, "IsLatest", "true");
        }
        srv_xml_time(&b, "LastModified", e->mtime);
        srv_xml_etag(&b, e->etag);
        s3_xml_elem_u64(&b, "Size", e->size);
        if (fetch_owner)
            srv_xml_owner_of(r, &b, "Owner", e->owner);
        s3_xml_elem(&b, "StorageClass", "STANDARD");
        wh_sbuf_puts(&b, kind == LIST_VERSIONS ? "</Version>" : "</Contents>");
    }
    for (size_t i = 0; i < res.n_prefixes; i++) {
        wh_sbuf_puts(&b, "<CommonPrefixes>");
        srv_xml_enc(&b, "Prefix", res.prefixes[i], url);
        wh_sbuf_puts(&b, "</CommonPrefixes>");
    }
    wh_sbuf_printf(&b, "</%s>", kind == LIST_VERSIONS ? "ListVersionsResult" : "ListBucketResult");
    store_list_result_free(&res);
    free(decoded_token);
    return srv_ok_xml(o, 200, &b);
}

int srv_list_v1(srv_req_t *r, srv_out_t *o)
{
    return list_objects(r, o, LIST_V1);
}

int srv_list_v2(srv_req_t *r, srv_out_t *o)
{
    return list_objects(r, o, LIST_V2);
}

int srv_list_versions(srv_req_t *r, srv_out_t *o)
{
    return list_objects(r, o, LIST_VERSIONS);
}
