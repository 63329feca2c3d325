/* SPDX-License-Identifier: Apache-2.0 */
/* Listings: ListObjects (v1, marker), ListObjectsV2 (continuation token, the base64 of the
 * last key) and ListObjectVersions (every version and delete marker; KeyMarker and
 * VersionIdMarker). */
#include "s3api/s3api.h"
#include "base/codec.h"
#include "s3/xml.h"

#include <stdlib.h>
#include <string.h>

typedef enum { LIST_V1, LIST_V2 } list_kind_t;

static int list_objects(front_req_t *r, s3h_out_t *o, list_kind_t kind)
{
    bool url;
    uint64_t max_keys;
    int ret;
    if ((ret = s3h_q_encoding_url(r, o, &url)) ||
        (ret = s3h_q_uint(r, o, "max-keys", 1000, &max_keys)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    if (max_keys > 1000)
        max_keys = 1000;
    const char *prefix = front_route_q(&r->route, "prefix");
    const char *delim = front_route_q(&r->route, "delimiter");
    if (delim && !*delim)
        delim = NULL;
    const char *ctoken = kind == LIST_V2 ? front_route_q(&r->route, "continuation-token") : NULL;
    const char *start_after = NULL;
    char *decoded_token = NULL;
    if (ctoken && *ctoken) {
        size_t tl = strlen(ctoken);
        decoded_token = malloc(tl + 1);
        long n = decoded_token ? wh_base64_decode(ctoken, tl, decoded_token, tl) : -1;
        if (n <= 0 || memchr(decoded_token, '\0', (size_t)n)) {
            free(decoded_token);
            return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
        }
        decoded_token[n] = '\0';
        start_after = decoded_token;
    } else if (kind == LIST_V2) {
        /* An empty continuation-token lists from the start, as an absent one does, and is
         * echoed empty (the s3-tests suite's listv2_continuationtoken_empty; SDKs send it
         * when they seed a paging loop with ""). */
        start_after = front_route_q(&r->route, "start-after");
    } else {
        start_after = front_route_q(&r->route, "marker");
    }
    if (start_after && !*start_after)
        start_after = NULL;

    data_list_params_t p = {
        .prefix = prefix && *prefix ? prefix : NULL,
        .delimiter = delim,
        .start_after = start_after,
        .max_keys = (uint32_t)max_keys,
    };
    data_list_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t st = store_object_list(s3h_st(r), s3h_b(r), &p, &res);
    if (st != WH_OK) {
        free(decoded_token);
        return s3h_err_status(r, o, st, "listing objects");
    }

    bool fetch_owner = kind != LIST_V2;
    const char *fo = front_route_q(&r->route, "fetch-owner");
    if (kind == LIST_V2 && fo && strcmp(fo, "true") == 0)
        fetch_owner = true;

    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ListBucketResult xmlns=\"" S3H_XMLNS "\">");
    s3_xml_elem(&b, "Name", s3h_b(r));
    s3h_xml_enc(&b, "Prefix", prefix ? prefix : "", url);
    if (kind == LIST_V2) {
        if (ctoken)
            s3_xml_elem(&b, "ContinuationToken", ctoken);
        const char *sa = front_route_q(&r->route, "start-after");
        if (sa)
            s3h_xml_enc(&b, "StartAfter", sa, url);
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
    } else {
        const char *mk = front_route_q(&r->route, "marker");
        s3h_xml_enc(&b, "Marker", mk ? mk : "", url);
        if (res.truncated && res.next_marker)
            s3h_xml_enc(&b, "NextMarker", res.next_marker, url);
    }
    s3_xml_elem_u64(&b, "MaxKeys", max_keys);
    if (delim)
        s3h_xml_enc(&b, "Delimiter", delim, url);
    if (url)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
    for (size_t i = 0; i < res.n_entries; i++) {
        const data_list_entry_t *e = &res.entries[i];
        wh_sbuf_puts(&b, "<Contents>");
        s3h_xml_enc(&b, "Key", e->key, url);
        s3h_xml_time(&b, "LastModified", e->mtime);
        s3h_xml_etag(&b, e->etag);
        s3_xml_elem_u64(&b, "Size", e->size);
        if (fetch_owner)
            s3h_xml_owner_of(r, &b, "Owner", e->owner);
        s3_xml_elem(&b, "StorageClass", "STANDARD");
        wh_sbuf_puts(&b, "</Contents>");
    }
    for (size_t i = 0; i < res.n_prefixes; i++) {
        wh_sbuf_puts(&b, "<CommonPrefixes>");
        s3h_xml_enc(&b, "Prefix", res.prefixes[i], url);
        wh_sbuf_puts(&b, "</CommonPrefixes>");
    }
    wh_sbuf_puts(&b, "</ListBucketResult>");
    data_list_result_free(&res);
    free(decoded_token);
    return s3h_ok_xml(o, 200, &b);
}

int s3api_list_v1(front_req_t *r, s3h_out_t *o)
{
    return list_objects(r, o, LIST_V1);
}

int s3api_list_v2(front_req_t *r, s3h_out_t *o)
{
    return list_objects(r, o, LIST_V2);
}

/* ListObjectVersions: every version, keys in order and each key's newest first; delete
 * markers as DeleteMarker elements. Paging by KeyMarker and VersionIdMarker. */
int s3api_list_versions(front_req_t *r, s3h_out_t *o)
{
    bool url;
    uint64_t max_keys;
    int ret;
    if ((ret = s3h_q_encoding_url(r, o, &url)) ||
        (ret = s3h_q_uint(r, o, "max-keys", 1000, &max_keys)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    if (max_keys > 1000)
        max_keys = 1000;
    const char *prefix = front_route_q(&r->route, "prefix");
    const char *delim = front_route_q(&r->route, "delimiter");
    const char *km = front_route_q(&r->route, "key-marker");
    const char *vm = front_route_q(&r->route, "version-id-marker");
    if (delim && !*delim)
        delim = NULL;
    if (vm && *vm && (!km || !*km))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "A version-id marker cannot be specified without a key marker.");
    if (vm && *vm && !store_version_id_valid(vm))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "Invalid version id specified");
    data_version_params_t p = {
        .prefix = prefix && *prefix ? prefix : NULL,
        .delimiter = delim,
        .key_marker = km,
        .version_id_marker = vm,
        .max_keys = (uint32_t)max_keys,
    };
    data_version_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t st = store_version_list(s3h_st(r), s3h_b(r), &p, &res);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "listing versions");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ListVersionsResult xmlns=\"" S3H_XMLNS "\">");
    s3_xml_elem(&b, "Name", s3h_b(r));
    s3h_xml_enc(&b, "Prefix", prefix ? prefix : "", url);
    s3h_xml_enc(&b, "KeyMarker", km ? km : "", url);
    s3_xml_elem(&b, "VersionIdMarker", vm ? vm : "");
    if (res.truncated && res.next_key_marker) {
        s3h_xml_enc(&b, "NextKeyMarker", res.next_key_marker, url);
        if (res.next_version_id_marker[0])
            s3_xml_elem(&b, "NextVersionIdMarker", res.next_version_id_marker);
    }
    s3_xml_elem_u64(&b, "MaxKeys", max_keys);
    if (delim)
        s3h_xml_enc(&b, "Delimiter", delim, url);
    if (url)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
    for (size_t i = 0; i < res.n_entries; i++) {
        const data_version_entry_t *e = &res.entries[i];
        const char *el = e->delete_marker ? "DeleteMarker" : "Version";
        wh_sbuf_printf(&b, "<%s>", el);
        s3h_xml_enc(&b, "Key", e->key, url);
        s3_xml_elem(&b, "VersionId", e->version_id);
        s3_xml_elem(&b, "IsLatest", e->latest ? "true" : "false");
        s3h_xml_time(&b, "LastModified", e->mtime);
        if (!e->delete_marker) {
            s3h_xml_etag(&b, e->etag);
            s3_xml_elem_u64(&b, "Size", e->size);
            s3_xml_elem(&b, "StorageClass", "STANDARD");
        }
        s3h_xml_owner(r, &b, "Owner");
        wh_sbuf_printf(&b, "</%s>", el);
    }
    for (size_t i = 0; i < res.n_prefixes; i++) {
        wh_sbuf_puts(&b, "<CommonPrefixes>");
        s3h_xml_enc(&b, "Prefix", res.prefixes[i], url);
        wh_sbuf_puts(&b, "</CommonPrefixes>");
    }
    wh_sbuf_puts(&b, "</ListVersionsResult>");
    data_version_result_free(&res);
    return s3h_ok_xml(o, 200, &b);
}
