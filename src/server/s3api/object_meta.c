/* SPDX-License-Identifier: Apache-2.0 */
/* Object metadata on the S3 wire: what a PUT, a CopyObject with REPLACE or a
 * CreateMultipartUpload keeps from its request headers, and the headers a GET or HEAD sends
 * back.
 *
 * What is kept, and how, follows S3:
 * - x-amz-meta-* headers, and the standard headers in g_kept_headers, are kept byte for byte.
 *   HTTP header values are octets, not text: a value that is not UTF-8 (a client that sent
 *   latin-1 "caf\xe9") is kept as sent and sent back as the same bytes, as S3 returns it. It
 *   cannot be a JSON string, so the metadata JSON holds it as {"base64": "..."}.
 * - User metadata (each x-amz-meta-* name after the prefix, plus its value, in bytes) is at most
 *   2 KB in all, S3's limit; a larger set is refused with 400 MetadataTooLarge, never cut.
 * - Content-Type is kept whole, as long as the request headers may be. The store's field holds
 *   255 bytes, so a longer value is also kept in the metadata JSON under "content-type", which
 *   wins when the object is read. */
#include "s3api/s3api.h"
#include "base/codec.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define META_PREFIX "x-amz-meta-"
#define META_PREFIX_LEN (sizeof META_PREFIX - 1)
/* S3: "the user-defined metadata is limited to 2 KB in size", keys and values in bytes. */
#define S3API_MAX_USER_META 2048
/* The metadata JSON key of a Content-Type too long for the store's field. */
#define META_LONG_CT "content-type"

/* Standard headers kept with the object and returned on GET/HEAD, besides Content-Type. */
static const char *const g_kept_headers[] = {
    "cache-control", "content-disposition", "content-encoding", "content-language", "expires",
};

/* A header value as JSON: a string when it is UTF-8, else {"base64": ...}. NULL: no memory. */
static json_t *value_json(const char *v)
{
    json_t *s = json_string(v);
    if (s)
        return s;
    size_t n = strlen(v);
    char *b = malloc(4 * ((n + 2) / 3) + 1);
    if (!b)
        return NULL;
    wh_base64_encode(v, n, b);
    json_t *o = json_pack("{s:s}", "base64", b);
    free(b);
    return o;
}

/* A stored value back as header bytes (malloc'd), or NULL when it is neither form. */
static char *value_bytes(const json_t *j)
{
    if (json_is_string(j))
        return strdup(json_string_value(j));
    const char *b = json_string_value(json_object_get(j, "base64"));
    if (!b)
        return NULL;
    size_t n = strlen(b);
    char *out = malloc(n + 1);
    long got = out ? wh_base64_decode(b, n, out, n) : -1;
    if (got < 0 || memchr(out, '\0', (size_t)got) || memchr(out, '\r', (size_t)got) ||
        memchr(out, '\n', (size_t)got)) {
        free(out);
        return NULL;
    }
    out[got] = '\0';
    return out;
}

char *s3api_content_encoding_kept(const char *v)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        const char *a = p, *z = e;
        while (a < z && (*a == ' ' || *a == '\t'))
            a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
            z--;
        if (z > a && !((size_t)(z - a) == 11 && strncasecmp(a, "aws-chunked", 11) == 0))
            wh_sbuf_printf(&b, "%s%.*s", b.len ? ", " : "", (int)(z - a), a);
        p = *e ? e + 1 : e;
    }
    if (b.oom) {
        wh_sbuf_free(&b);
        return NULL;
    }
    return wh_sbuf_steal(&b);
}

static bool kept_header(const char *n)
{
    if (strncmp(n, META_PREFIX, META_PREFIX_LEN) == 0 && n[META_PREFIX_LEN])
        return true;
    for (size_t j = 0; j < WH_ARRAY_SIZE(g_kept_headers); j++)
        if (strcmp(n, g_kept_headers[j]) == 0)
            return true;
    return false;
}

int s3api_meta_from_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m)
{
    const char *ct = front_hdr(r, "content-type");
    if (!ct || !*ct)
        ct = "binary/octet-stream";
    size_t ctlen = strlen(ct);
    json_t *j = json_object();
    if (!j)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    int ret = 0;
    size_t user_bytes = 0;
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname, *v = r->hdrs[i].value;
        if (!kept_header(n))
            continue;
        if (strncmp(n, META_PREFIX, META_PREFIX_LEN) == 0)
            user_bytes += strlen(n) - META_PREFIX_LEN + strlen(v);
        char *ce = NULL;
        if (strcmp(n, "content-encoding") == 0) {
            /* aws-chunked is transport framing, not the object's encoding: it leaves the list
             * wherever it stands, and a list of only aws-chunked keeps no Content-Encoding. */
            if (!(ce = s3api_content_encoding_kept(v))) {
                ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the metadata");
                goto out;
            }
            if (!*ce) {
                free(ce);
                continue;
            }
            v = ce;
        }
        json_t *jv = value_json(v);
        free(ce);
        if (!jv || json_object_set_new(j, n, jv) != 0) {
            ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the metadata");
            goto out;
        }
    }
    if (user_bytes > S3API_MAX_USER_META) {
        ret = s3h_errf(o, S3_ERR_METADATA_TOO_LARGE,
                       "the x-amz-meta-* headers hold %zu bytes of names and values; the limit "
                       "is %u",
                       user_bytes, S3API_MAX_USER_META);
        goto out;
    }
    if (ctlen >= sizeof m->content_type) {
        json_t *jv = value_json(ct);
        if (!jv || json_object_set_new(j, META_LONG_CT, jv) != 0) {
            ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the metadata");
            goto out;
        }
        ctlen = sizeof m->content_type - 1; /* the field keeps a prefix; the JSON, all */
    }
    memcpy(m->content_type, ct, ctlen);
    m->content_type[ctlen] = '\0';
    free(m->user_meta_json);
    m->user_meta_json = json_object_size(j) ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (json_object_size(j) && !m->user_meta_json)
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the metadata");
    if (!ret)
        ret = s3h_acl_to_meta(r, o, m); /* its owner, and the ACL x-amz-acl/-grant-* name */
out:
    json_decref(j);
    return ret;
}

/* response-* query parameters: (parameter, stored header, header sent). */
static const char *const g_overrides[][3] = {
    {"response-content-disposition", "content-disposition", "Content-Disposition"},
    {"response-content-encoding", "content-encoding", "Content-Encoding"},
    {"response-content-language", "content-language", "Content-Language"},
    {"response-cache-control", "cache-control", "Cache-Control"},
    {"response-expires", "expires", "Expires"},
};

static bool overridden(front_req_t *r, const char *stored)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(g_overrides); i++)
        if (strcmp(stored, g_overrides[i][1]) == 0 && front_route_q(&r->route, g_overrides[i][0]))
            return true;
    return false;
}

void s3api_object_headers(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, bool whole)
{
    char q[84], date[30];
    s3h_etag_quoted(m->etag, q);
    s3h_out_header(o, MHD_HTTP_HEADER_ETAG, q);
    wh_http_date(m->mtime, date);
    s3h_out_header(o, MHD_HTTP_HEADER_LAST_MODIFIED, date);
    s3h_out_header(o, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    s3h_lock_headers(r, o, m);
    /* As S3: the object's checksums come back only when asked (x-amz-checksum-mode: ENABLED),
     * and only for the whole object. */
    const char *mode = front_hdr(r, "x-amz-checksum-mode");
    if (!mode || strcasecmp(mode, "ENABLED") != 0)
        whole = false;
    json_t *j = m->user_meta_json ? json_loads(m->user_meta_json, 0, NULL) : NULL;
    char *long_ct = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        if (strcmp(k, META_LONG_CT) == 0) {
            free(long_ct); /* jansson keeps one value per key; the analyzer cannot know */
            long_ct = value_bytes(v);
            continue;
        }
        /* A stored checksum covers the whole object, not a range of it. What a multipart
         * upload asked for is said by the checksum itself (below), not echoed. */
        if ((!whole && strncmp(k, "x-amz-checksum-", 15) == 0) || overridden(r, k) ||
            strcmp(k, S3API_MPU_SUM_ALGO) == 0 || strcmp(k, S3API_MPU_SUM_TYPE) == 0)
            continue;
        char *b = value_bytes(v);
        if (b)
            s3h_out_header(o, k, b);
        free(b);
    }
    json_decref(j);
    for (size_t i = 0; i < WH_ARRAY_SIZE(g_overrides); i++) {
        const char *ov = front_route_q(&r->route, g_overrides[i][0]);
        if (ov)
            s3h_out_header(o, g_overrides[i][2], ov);
    }
    s3h_out_tag_count(o, m->tags);
    const char *ct = front_route_q(&r->route, "response-content-type");
    if (!ct)
        ct = long_ct ? long_ct : m->content_type[0] ? m->content_type : "binary/octet-stream";
    s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
    free(long_ct);
    if (whole) {
        if (m->crc32c[0])
            s3h_out_header(o, "x-amz-checksum-crc32c", m->crc32c);
        if (m->crc64nvme[0])
            s3h_out_header(o, "x-amz-checksum-crc64nvme", m->crc64nvme);
        /* A multipart object's CRC-32C of its parts' CRC-32Cs carries "-<parts>". */
        if (m->crc32c[0] || m->crc64nvme[0])
            s3h_out_header(o, S3API_MPU_SUM_TYPE,
                           strchr(m->crc32c, '-') ? "COMPOSITE" : "FULL_OBJECT");
    }
    if (m->parts)
        s3h_out_header_u64(o, "x-amz-mp-parts-count", m->parts);
}
