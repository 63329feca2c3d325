/* Routing: path-style and virtual-host style, sub-resources, decoding, bad input. */
#include "check.h"
#include "s3api/s3api.h"

#include <string.h>

static srv_route_t R(const char *m, const char *p, const char *q, const char *host, bool copy)
{
    srv_route_t r;
    srv_route_parse(m, p, q, host, "127.0.0.1", copy, &r);
    return r;
}

static void test_path_style(void)
{
    srv_route_t r = R("GET", "/", NULL, "127.0.0.1:9000", false);
    CHECK(r.api == SRV_API_LIST_BUCKETS && !r.bucket);
    srv_route_free(&r);

    r = R("PUT", "/bkt", NULL, "127.0.0.1:9000", false);
    CHECK(r.api == SRV_API_CREATE_BUCKET);
    CHECK_STR(r.bucket, "bkt");
    CHECK(!r.key);
    srv_route_free(&r);

    r = R("PUT", "/bkt/", NULL, "localhost:9000", false);
    CHECK(r.api == SRV_API_CREATE_BUCKET && !r.key);
    srv_route_free(&r);

    r = R("GET", "/bkt/a%20b/c+d/%E6%97%A5", NULL, "localhost", false);
    CHECK(r.api == SRV_API_GET_OBJECT);
    CHECK_STR(r.key, "a b/c+d/\xe6\x97\xa5");
    CHECK_EQ_U64(r.key_len, strlen("a b/c+d/\xe6\x97\xa5"));
    srv_route_free(&r);

    r = R("GET", "/bkt/dir//x/../y", NULL, NULL, false); /* no normalisation, ever */
    CHECK_STR(r.key, "dir//x/../y");
    srv_route_free(&r);

    r = R("GET", "/bkt/nul%00byte", NULL, NULL, false);
    CHECK(r.key_len == 8 && strlen(r.key) == 3);
    srv_route_free(&r);
}

static void test_vhost(void)
{
    srv_route_t r = R("GET", "/", "list-type=2", "mybucket.localhost:9000", false);
    CHECK(r.vhost && r.api == SRV_API_LIST_OBJECTS_V2);
    CHECK_STR(r.bucket, "mybucket");
    srv_route_free(&r);

    r = R("GET", "/a/b", NULL, "my.dotted.bucket.localhost", false);
    CHECK_STR(r.bucket, "my.dotted.bucket");
    CHECK_STR(r.key, "a/b");
    srv_route_free(&r);

    r = R("PUT", "/k", NULL, "Bkt.s3.example.com:443", false);
    CHECK(r.vhost && r.api == SRV_API_PUT_OBJECT);
    CHECK_STR(r.bucket, "bkt");
    srv_route_free(&r);

    /* IP literals, dotless names and the endpoint host itself are path-style. */
    r = R("GET", "/b/k", NULL, "10.0.0.1:9000", false);
    CHECK(!r.vhost);
    CHECK_STR(r.bucket, "b");
    srv_route_free(&r);
    r = R("GET", "/b/k", NULL, "[::1]:9000", false);
    CHECK(!r.vhost);
    srv_route_free(&r);
    r = R("GET", "/b/k", NULL, "myhost", false);
    CHECK(!r.vhost);
    srv_route_free(&r);
    srv_route_parse("GET", "/b/k", NULL, "s3.internal:9000", "s3.internal", false, &r);
    CHECK(!r.vhost);
    CHECK_STR(r.bucket, "b");
    srv_route_free(&r);
}

static void test_subresources(void)
{
    struct {
        const char *m, *p, *q;
        bool copy;
        srv_api_t api;
    } cases[] = {
        {"GET", "/b", "location", false, SRV_API_GET_BUCKET_LOCATION},
        {"GET", "/b", "versioning", false, SRV_API_GET_BUCKET_VERSIONING},
        {"GET", "/b", "versions&prefix=x", false, SRV_API_LIST_OBJECT_VERSIONS},
        {"GET", "/b", "uploads", false, SRV_API_LIST_MULTIPART_UPLOADS},
        {"GET", "/b", "prefix=a&marker=b", false, SRV_API_LIST_OBJECTS},
        {"POST", "/b", "delete", false, SRV_API_DELETE_OBJECTS},
        {"DELETE", "/b", NULL, false, SRV_API_DELETE_BUCKET},
        {"HEAD", "/b", NULL, false, SRV_API_HEAD_BUCKET},
        {"POST", "/b/k", "uploads", false, SRV_API_CREATE_MPU},
        {"PUT", "/b/k", "partNumber=2&uploadId=x", false, SRV_API_UPLOAD_PART},
        {"PUT", "/b/k", "partNumber=2&uploadId=x", true, SRV_API_UPLOAD_PART_COPY},
        {"PUT", "/b/k", "uploadId=x", false, SRV_API_BAD_REQUEST},
        {"POST", "/b/k", "uploadId=x", false, SRV_API_COMPLETE_MPU},
        {"DELETE", "/b/k", "uploadId=x", false, SRV_API_ABORT_MPU},
        {"GET", "/b/k", "uploadId=x", false, SRV_API_LIST_PARTS},
        {"PUT", "/b/k", NULL, true, SRV_API_COPY_OBJECT},
        {"HEAD", "/b/k", NULL, false, SRV_API_HEAD_OBJECT},
        {"DELETE", "/b/k", "versionId=null", false, SRV_API_DELETE_OBJECT},
        {"DELETE", "/b/k", "versionId=3HL4kqtJ", false, SRV_API_DELETE_OBJECT},
        {"GET", "/b", "tagging", false, SRV_API_GET_BUCKET_TAGGING},
        {"GET", "/b", "website", false, SRV_API_NOT_IMPLEMENTED},
        {"GET", "/b", "lifecycle", false, SRV_API_GET_BUCKET_LIFECYCLE},
        {"PUT", "/b", "lifecycle", false, SRV_API_PUT_BUCKET_LIFECYCLE},
        {"DELETE", "/b", "lifecycle", false, SRV_API_DELETE_BUCKET_LIFECYCLE},
        {"POST", "/b", "lifecycle", false, SRV_API_METHOD_NOT_ALLOWED},
        {"GET", "/b/k", "lifecycle", false, SRV_API_NOT_IMPLEMENTED},
        {"PUT", "/b/k", "acl", false, SRV_API_PUT_OBJECT_ACL},
        {"GET", "/b/k", "acl", false, SRV_API_GET_OBJECT_ACL},
        {"GET", "/b", "acl", false, SRV_API_GET_BUCKET_ACL},
        {"PUT", "/b", "acl", false, SRV_API_PUT_BUCKET_ACL},
        {"GET", "/b", "policy", false, SRV_API_GET_BUCKET_POLICY},
        {"PUT", "/b", "policy", false, SRV_API_PUT_BUCKET_POLICY},
        {"DELETE", "/b", "policy", false, SRV_API_DELETE_BUCKET_POLICY},
        {"GET", "/b", "policyStatus", false, SRV_API_GET_BUCKET_POLICY_STATUS},
        /* A served sub-resource with a method no row serves is not the plain request. */
        {"DELETE", "/b", "acl", false, SRV_API_METHOD_NOT_ALLOWED},
        {"DELETE", "/b/k", "acl", false, SRV_API_METHOD_NOT_ALLOWED},
        {"POST", "/b", "policy", false, SRV_API_METHOD_NOT_ALLOWED},
        {"PUT", "/b", "policyStatus", false, SRV_API_METHOD_NOT_ALLOWED},
        {"GET", "/b/k", "policy", false, SRV_API_METHOD_NOT_ALLOWED},
        {"PATCH", "/b/k", NULL, false, SRV_API_METHOD_NOT_ALLOWED},
        {"PUT", "/", NULL, false, SRV_API_METHOD_NOT_ALLOWED},
        {"GET", "/health", NULL, false, SRV_API_HEALTH},
        {"GET", "/metrics", NULL, false, SRV_API_METRICS},
        {"GET", "/metrics", "x=1", false, SRV_API_LIST_OBJECTS}, /* a bucket named metrics */
        /* the browser console: /console and below, any method and query */
        {"GET", "/console", NULL, false, SRV_API_CONSOLE},
        {"GET", "/console/", NULL, false, SRV_API_CONSOLE},
        {"POST", "/console/api/login", NULL, false, SRV_API_CONSOLE},
        {"GET", "/console/api/objects", "bucket=b&prefix=a%2F", false, SRV_API_CONSOLE},
        {"GET", "/consoles", NULL, false, SRV_API_LIST_OBJECTS}, /* a bucket named consoles */
        {"GET", "/consoles/k", NULL, false, SRV_API_GET_OBJECT},
        {"GET", "noslash", NULL, false, SRV_API_BAD_REQUEST},
        {"GET", "/b/%zz", NULL, false, SRV_API_BAD_REQUEST},
    };
    /* a key "console" of a virtual-host bucket is S3's */
    srv_route_t v = R("GET", "/console", NULL, "b.localhost:9000", false);
    CHECK(v.api == SRV_API_GET_OBJECT && v.vhost);
    CHECK_STR(v.key, "console");
    srv_route_free(&v);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_route_t r = R(cases[i].m, cases[i].p, cases[i].q, "localhost", cases[i].copy);
        if (r.api != cases[i].api)
            fprintf(stderr, "case %zu: %s %s?%s -> %s\n", i, cases[i].m, cases[i].p,
                    cases[i].q ? cases[i].q : "", srv_api_name(r.api));
        CHECK(r.api == cases[i].api);
        if (r.api == SRV_API_BAD_REQUEST)
            CHECK(r.why != NULL);
        srv_route_free(&r);
    }
}

static void test_query_decoding(void)
{
    srv_route_t r =
        R("GET", "/b", "list-type=2&prefix=a%2Fb+c&delimiter=%2F&empty=&flag", NULL, false);
    CHECK_STR(srv_route_q(&r, "prefix"), "a/b c");
    CHECK_STR(srv_route_q(&r, "delimiter"), "/");
    CHECK_STR(srv_route_q(&r, "empty"), "");
    CHECK_STR(srv_route_q(&r, "flag"), "");
    CHECK(srv_route_q(&r, "absent") == NULL);
    srv_route_free(&r);
    r = R("GET", "/b", "prefix=%2", NULL, false);
    CHECK(r.api == SRV_API_BAD_REQUEST);
    srv_route_free(&r);
}

int main(void)
{
    RUN(test_path_style);
    RUN(test_vhost);
    RUN(test_subresources);
    RUN(test_query_decoding);
    return check_done();
}
