/* SPDX-License-Identifier: Apache-2.0 */
/* Object metadata as the S3 front keeps it (src/server/s3api/object_meta.c): request headers into
 * the stored metadata, and the stored metadata back into reply headers, byte for byte. */
#include "check.h"
#include "s3api/s3api.h"

#include <stdlib.h>
#include <string.h>

/* A request with these headers (name, value pairs; sorted here, as http.c keeps them). */
static void req_init(front_req_t *r, front_t *s, const char *const *pairs)
{
    memset(r, 0, sizeof *r);
    memset(s, 0, sizeof *s);
    r->srv = s;
    size_t n = 0;
    while (pairs[2 * n])
        n++;
    r->hdrs = calloc(n ? n : 1, sizeof *r->hdrs);
    for (size_t i = 0; i < n; i++) {
        r->hdrs[i].lname = strdup(pairs[2 * i]);
        r->hdrs[i].value = strdup(pairs[2 * i + 1]);
    }
    for (size_t i = 1; i < n; i++) /* insertion sort by name */
        for (size_t j = i; j > 0 && strcmp(r->hdrs[j - 1].lname, r->hdrs[j].lname) > 0; j--) {
            front_hdr_t t = r->hdrs[j];
            r->hdrs[j] = r->hdrs[j - 1];
            r->hdrs[j - 1] = t;
        }
    r->nhdrs = n;
    s3api_route_parse("GET", "/b/k", NULL, NULL, NULL, false, &r->route);
}

static void req_free(front_req_t *r)
{
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].lname);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    front_route_free(&r->route);
}

static void out_init(s3h_out_t *o)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(&o->xml);
    wh_sbuf_init(&o->hdrs);
}

/* The value of header name in the answer, or NULL. */
static const char *out_hdr(const s3h_out_t *o, const char *name)
{
    for (size_t i = 0; o->hdrs.data && i < o->hdrs.len;) {
        const char *n = o->hdrs.data + i;
        const char *v = n + strlen(n) + 1;
        if (strcmp(n, name) == 0)
            return v;
        i = (size_t)(v - o->hdrs.data) + strlen(v) + 1;
    }
    return NULL;
}

static void round_trip(const char *const *pairs, s3h_out_t *o, data_obj_meta_t *m, int *ret)
{
    front_t s;
    front_req_t r;
    req_init(&r, &s, pairs);
    memset(m, 0, sizeof *m);
    out_init(o);
    *ret = s3api_meta_from_request(&r, o, m);
    if (*ret == 0)
        s3api_object_headers(&r, o, m, true);
    req_free(&r);
}

static void out_free(s3h_out_t *o, data_obj_meta_t *m)
{
    wh_sbuf_free(&o->hdrs);
    wh_sbuf_free(&o->xml);
    data_obj_meta_free(m);
}

static void test_bytes_kept(void)
{
    static const char *const h[] = {"x-amz-meta-city",
                                    "caf\xe9",
                                    "x-amz-meta-utf8",
                                    "\xe6\x97\xa5",
                                    "cache-control",
                                    "\xff no-store",
                                    "content-encoding",
                                    "aws-chunked,gzip",
                                    "x-amz-date",
                                    "d",
                                    NULL};
    s3h_out_t o;
    data_obj_meta_t m;
    int ret;
    round_trip(h, &o, &m, &ret);
    CHECK(ret == 0);
    CHECK_STR(out_hdr(&o, "x-amz-meta-city"), "caf\xe9");
    CHECK_STR(out_hdr(&o, "x-amz-meta-utf8"), "\xe6\x97\xa5");
    CHECK_STR(out_hdr(&o, "cache-control"), "\xff no-store");
    CHECK_STR(out_hdr(&o, "content-encoding"), "gzip"); /* the transport framing is not kept */
    CHECK(out_hdr(&o, "x-amz-date") == NULL);
    CHECK_STR(out_hdr(&o, "Content-Type"), "binary/octet-stream");
    /* the stored form is JSON (UTF-8 only): the latin-1 value travels as base64 */
    CHECK(m.user_meta_json && strstr(m.user_meta_json, "\"base64\":\"Y2Fm6Q==\""));
    out_free(&o, &m);
}

static void test_content_type(void)
{
    char ct[1001];
    memset(ct, 'c', sizeof ct - 1);
    ct[sizeof ct - 1] = '\0';
    memcpy(ct, "text/", 5);
    const char *const h[] = {"content-type", ct, NULL};
    s3h_out_t o;
    data_obj_meta_t m;
    int ret;
    round_trip(h, &o, &m, &ret);
    CHECK(ret == 0);
    CHECK_STR(out_hdr(&o, "Content-Type"), ct);
    CHECK(out_hdr(&o, "content-type") == NULL); /* the JSON copy is not a second header */
    CHECK_EQ_U64(strlen(m.content_type), sizeof m.content_type - 1);
    out_free(&o, &m);

    ct[sizeof m.content_type - 1] = '\0'; /* exactly what the field holds: no JSON copy */
    round_trip(h, &o, &m, &ret);
    CHECK(ret == 0 && m.user_meta_json == NULL);
    CHECK_STR(out_hdr(&o, "Content-Type"), ct);
    out_free(&o, &m);
}

static void test_user_meta_limit(void)
{
    char v[2100];
    memset(v, 'v', sizeof v);
    v[2046] = '\0'; /* "ab" + 2046 = 2048 */
    const char *const ok[] = {"x-amz-meta-ab", v, "cache-control", v, NULL};
    s3h_out_t o;
    data_obj_meta_t m;
    int ret;
    round_trip(ok, &o, &m, &ret); /* standard headers do not count */
    CHECK(ret == 0);
    out_free(&o, &m);
    v[2046] = 'v';
    v[2047] = '\0';
    const char *const over[] = {"x-amz-meta-ab", v, NULL};
    round_trip(over, &o, &m, &ret);
    CHECK(ret == 400);
    CHECK_STR(o.code, "MetadataTooLarge");
    CHECK(strstr(o.msg, "2049") && strstr(o.msg, "2048"));
    CHECK(m.user_meta_json == NULL);
    out_free(&o, &m);
}

static void test_whole_only_and_overrides(void)
{
    front_t s;
    front_req_t r;
    static const char *const none[] = {NULL};
    req_init(&r, &s, none);
    front_route_free(&r.route);
    s3api_route_parse("GET", "/b/k", "response-cache-control=max-age%3D5", NULL, NULL, false,
                      &r.route);
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.etag, sizeof m.etag, "abc");
    snprintf(m.crc64nvme, sizeof m.crc64nvme, "AAAAAAAAAAA=");
    m.user_meta_json = strdup("{\"cache-control\":\"no-store\",\"x-amz-checksum-sha1\":\"x\","
                              "\"x-amz-meta-bad\":{\"base64\":\"AA==\"},\"x-amz-meta-n\":5}");
    s3h_out_t o;
    out_init(&o);
    s3api_object_headers(&r, &o, &m, false);
    CHECK_STR(out_hdr(&o, "Cache-Control"), "max-age=5");
    CHECK(out_hdr(&o, "cache-control") == NULL);
    CHECK(out_hdr(&o, "x-amz-checksum-sha1") == NULL); /* a range is not the whole */
    CHECK(out_hdr(&o, "x-amz-checksum-crc64nvme") == NULL);
    CHECK(out_hdr(&o, "x-amz-meta-bad") == NULL); /* a NUL byte can never be a header */
    CHECK(out_hdr(&o, "x-amz-meta-n") == NULL);   /* neither form */
    CHECK_STR(out_hdr(&o, "ETag"), "\"abc\"");
    wh_sbuf_free(&o.hdrs);
    out_init(&o);
    s3api_object_headers(&r, &o, &m, true); /* whole, but not asked for: none, as S3 */
    CHECK(out_hdr(&o, "x-amz-checksum-sha1") == NULL);
    CHECK(out_hdr(&o, "x-amz-checksum-crc64nvme") == NULL);
    wh_sbuf_free(&o.hdrs);
    req_free(&r);
    static const char *const asked[] = {"x-amz-checksum-mode", "ENABLED", NULL};
    req_init(&r, &s, asked);
    out_init(&o);
    s3api_object_headers(&r, &o, &m, true);
    CHECK_STR(out_hdr(&o, "x-amz-checksum-sha1"), "x");
    CHECK_STR(out_hdr(&o, "x-amz-checksum-crc64nvme"), "AAAAAAAAAAA=");
    wh_sbuf_free(&o.hdrs);
    data_obj_meta_free(&m);
    req_free(&r);
}

int main(void)
{
    RUN(test_bytes_kept);
    RUN(test_content_type);
    RUN(test_user_meta_limit);
    RUN(test_whole_only_and_overrides);
    return check_done();
}
