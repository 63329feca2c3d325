/* SPDX-License-Identifier: Apache-2.0 */
/* Routing: path-style and virtual-host style, sub-resources, decoding, bad input. */
#include "check.h"
#include "s3api/s3api.h"

#include <string.h>

static front_route_t R(const char *m, const char *p, const char *q, const char *host, bool copy)
{
    front_route_t r;
    s3api_route_parse(m, p, q, host, "127.0.0.1", copy, &r);
    return r;
}

static void test_path_style(void)
{
    front_route_t r = R("GET", "/", NULL, "127.0.0.1:9000", false);
    CHECK(r.api == FRONT_API_LIST_BUCKETS && !r.bucket);
    front_route_free(&r);

    r = R("PUT", "/bkt", NULL, "127.0.0.1:9000", false);
    CHECK(r.api == FRONT_API_CREATE_BUCKET);
    CHECK_STR(r.bucket, "bkt");
    CHECK(!r.key);
    front_route_free(&r);

    r = R("PUT", "/bkt/", NULL, "localhost:9000", false);
    CHECK(r.api == FRONT_API_CREATE_BUCKET && !r.key);
    front_route_free(&r);

    r = R("GET", "/bkt/a%20b/c+d/%E6%97%A5", NULL, "localhost", false);
    CHECK(r.api == FRONT_API_GET_OBJECT);
    CHECK_STR(r.key, "a b/c+d/\xe6\x97\xa5");
    CHECK_EQ_U64(r.key_len, strlen("a b/c+d/\xe6\x97\xa5"));
    front_route_free(&r);

    r = R("GET", "/bkt/dir//x/../y", NULL, NULL, false); /* no normalisation, ever */
    CHECK_STR(r.key, "dir//x/../y");
    front_route_free(&r);

    r = R("GET", "/bkt/nul%00byte", NULL, NULL, false);
    CHECK(r.key_len == 8 && strlen(r.key) == 3);
    front_route_free(&r);
}

static void test_vhost(void)
{
    front_route_t r = R("GET", "/", "list-type=2", "mybucket.localhost:9000", false);
    CHECK(r.vhost && r.api == FRONT_API_LIST_OBJECTS_V2);
    CHECK_STR(r.bucket, "mybucket");
    front_route_free(&r);

    r = R("GET", "/a/b", NULL, "my.dotted.bucket.localhost", false);
    CHECK_STR(r.bucket, "my.dotted.bucket");
    CHECK_STR(r.key, "a/b");
    front_route_free(&r);

    r = R("PUT", "/k", NULL, "Bkt.s3.example.com:443", false);
    CHECK(r.vhost && r.api == FRONT_API_PUT_OBJECT);
    CHECK_STR(r.bucket, "bkt");
    front_route_free(&r);

    /* IP literals, dotless names and the endpoint host itself are path-style. */
    r = R("GET", "/b/k", NULL, "10.0.0.1:9000", false);
    CHECK(!r.vhost);
    CHECK_STR(r.bucket, "b");
    front_route_free(&r);
    r = R("GET", "/b/k", NULL, "[::1]:9000", false);
    CHECK(!r.vhost);
    front_route_free(&r);
    r = R("GET", "/b/k", NULL, "myhost", false);
    CHECK(!r.vhost);
    front_route_free(&r);
    s3api_route_parse("GET", "/b/k", NULL, "s3.internal:9000", "s3.internal", false, &r);
    CHECK(!r.vhost);
    CHECK_STR(r.bucket, "b");
    front_route_free(&r);
}

static void test_subresources(void)
{
    struct {
        const char *m, *p, *q;
        bool copy;
        front_api_t api;
    } cases[] = {
        {"GET", "/b", "location", false, FRONT_API_GET_BUCKET_LOCATION},
        {"GET", "/b", "versioning", false, FRONT_API_GET_BUCKET_VERSIONING},
        {"GET", "/b", "versions&prefix=x", false, FRONT_API_LIST_OBJECT_VERSIONS},
        {"GET", "/b", "uploads", false, FRONT_API_LIST_MULTIPART_UPLOADS},
        {"GET", "/b", "prefix=a&marker=b", false, FRONT_API_LIST_OBJECTS},
        {"POST", "/b", "delete", false, FRONT_API_DELETE_OBJECTS},
        {"POST", "/b", "rdma-batch", false, FRONT_API_RDMA_BATCH},
        {"DELETE", "/b", NULL, false, FRONT_API_DELETE_BUCKET},
        {"HEAD", "/b", NULL, false, FRONT_API_HEAD_BUCKET},
        {"POST", "/b/k", "uploads", false, FRONT_API_CREATE_MPU},
        {"PUT", "/b/k", "partNumber=2&uploadId=x", false, FRONT_API_UPLOAD_PART},
        {"PUT", "/b/k", "partNumber=2&uploadId=x", true, FRONT_API_UPLOAD_PART_COPY},
        {"PUT", "/b/k", "uploadId=x", false, FRONT_API_BAD_REQUEST},
        {"POST", "/b/k", "uploadId=x", false, FRONT_API_COMPLETE_MPU},
        {"DELETE", "/b/k", "uploadId=x", false, FRONT_API_ABORT_MPU},
        {"GET", "/b/k", "uploadId=x", false, FRONT_API_LIST_PARTS},
        {"PUT", "/b/k", NULL, true, FRONT_API_COPY_OBJECT},
        {"HEAD", "/b/k", NULL, false, FRONT_API_HEAD_OBJECT},
        {"DELETE", "/b/k", "versionId=null", false, FRONT_API_DELETE_OBJECT},
        {"DELETE", "/b/k", "versionId=3HL4kqtJ", false, FRONT_API_DELETE_OBJECT},
        {"GET", "/b", "tagging", false, FRONT_API_GET_BUCKET_TAGGING},
        {"GET", "/b", "website", false, FRONT_API_NOT_IMPLEMENTED},
        {"GET", "/b", "lifecycle", false, FRONT_API_GET_BUCKET_LIFECYCLE},
        {"PUT", "/b", "lifecycle", false, FRONT_API_PUT_BUCKET_LIFECYCLE},
        {"DELETE", "/b", "lifecycle", false, FRONT_API_DELETE_BUCKET_LIFECYCLE},
        {"POST", "/b", "lifecycle", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"GET", "/b/k", "lifecycle", false, FRONT_API_NOT_IMPLEMENTED},
        {"PUT", "/b/k", "acl", false, FRONT_API_PUT_OBJECT_ACL},
        {"GET", "/b/k", "acl", false, FRONT_API_GET_OBJECT_ACL},
        {"GET", "/b", "acl", false, FRONT_API_GET_BUCKET_ACL},
        {"PUT", "/b", "acl", false, FRONT_API_PUT_BUCKET_ACL},
        {"GET", "/b", "policy", false, FRONT_API_GET_BUCKET_POLICY},
        {"PUT", "/b", "policy", false, FRONT_API_PUT_BUCKET_POLICY},
        {"DELETE", "/b", "policy", false, FRONT_API_DELETE_BUCKET_POLICY},
        {"GET", "/b", "policyStatus", false, FRONT_API_GET_BUCKET_POLICY_STATUS},
        /* A served sub-resource with a method no row serves is not the plain request. */
        {"DELETE", "/b", "acl", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"DELETE", "/b/k", "acl", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"POST", "/b", "policy", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"PUT", "/b", "policyStatus", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"GET", "/b/k", "policy", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"PATCH", "/b/k", NULL, false, FRONT_API_METHOD_NOT_ALLOWED},
        /* wharf's scatter GET and gather UploadPart; their query on another method is never
         * the plain request (a GET served whole, a PUT stored as an UploadPart) */
        {"POST", "/b/k", "x-wharf-scatter=1", false, FRONT_API_WHARF_SCATTER},
        {"GET", "/b/k", "x-wharf-scatter=1", false, FRONT_API_METHOD_NOT_ALLOWED},
        {"POST", "/b/k", "x-wharf-gather=1&uploadId=u&partNumber=1", false,
         FRONT_API_WHARF_GATHER_PART},
        {"PUT", "/b/k", "partNumber=1&uploadId=u&x-wharf-gather=1", false,
         FRONT_API_METHOD_NOT_ALLOWED},
        {"POST", "/b/k", "uploadId=u", false, FRONT_API_COMPLETE_MPU},
        {"PUT", "/", NULL, false, FRONT_API_METHOD_NOT_ALLOWED},
        {"GET", "/health", NULL, false, FRONT_API_HEALTH},
        {"GET", "/metrics", NULL, false, FRONT_API_METRICS},
        {"GET", "/metrics", "x=1", false, FRONT_API_LIST_OBJECTS}, /* a bucket named metrics */
        /* the browser console: /console and below, any method and query */
        {"GET", "/console", NULL, false, FRONT_API_CONSOLE},
        {"GET", "/console/", NULL, false, FRONT_API_CONSOLE},
        {"POST", "/console/api/login", NULL, false, FRONT_API_CONSOLE},
        {"GET", "/console/api/objects", "bucket=b&prefix=a%2F", false, FRONT_API_CONSOLE},
        {"GET", "/consoles", NULL, false, FRONT_API_LIST_OBJECTS}, /* a bucket named consoles */
        {"GET", "/consoles/k", NULL, false, FRONT_API_GET_OBJECT},
        {"GET", "noslash", NULL, false, FRONT_API_BAD_REQUEST},
        {"GET", "/b/%zz", NULL, false, FRONT_API_BAD_REQUEST},
    };
    /* a key "console" of a virtual-host bucket is S3's */
    front_route_t v = R("GET", "/console", NULL, "b.localhost:9000", false);
    CHECK(v.api == FRONT_API_GET_OBJECT && v.vhost);
    CHECK_STR(v.key, "console");
    front_route_free(&v);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        front_route_t r = R(cases[i].m, cases[i].p, cases[i].q, "localhost", cases[i].copy);
        if (r.api != cases[i].api)
            fprintf(stderr, "case %zu: %s %s?%s -> %s\n", i, cases[i].m, cases[i].p,
                    cases[i].q ? cases[i].q : "", front_api_name(r.api));
        CHECK(r.api == cases[i].api);
        if (r.api == FRONT_API_BAD_REQUEST)
            CHECK(r.why != NULL);
        front_route_free(&r);
    }
}

static void test_query_decoding(void)
{
    front_route_t r =
        R("GET", "/b", "list-type=2&prefix=a%2Fb+c&delimiter=%2F&empty=&flag", NULL, false);
    CHECK_STR(front_route_q(&r, "prefix"), "a/b c");
    CHECK_STR(front_route_q(&r, "delimiter"), "/");
    CHECK_STR(front_route_q(&r, "empty"), "");
    CHECK_STR(front_route_q(&r, "flag"), "");
    CHECK(front_route_q(&r, "absent") == NULL);
    front_route_free(&r);
    r = R("GET", "/b", "prefix=%2", NULL, false);
    CHECK(r.api == FRONT_API_BAD_REQUEST);
    front_route_free(&r);
}

int main(void)
{
    RUN(test_path_style);
    RUN(test_vhost);
    RUN(test_subresources);
    RUN(test_query_decoding);
    return check_done();
}
