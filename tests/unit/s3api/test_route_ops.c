/* The srv_ops table (s3api.c) as the router uses it: every row is reachable, rows and APIs
 * agree, the body kinds and RDMA permissions are the ones the protocol defines, and request
 * parsing limits (query parameter count, value forms) hold. */
#include "check.h"
#include "s3api/s3api.h"

#include <stdio.h>
#include <string.h>

static srv_route_t R(const char *m, const char *p, const char *q, bool copy)
{
    srv_route_t r;
    srv_route_parse(m, p, q, "127.0.0.1:9000", "127.0.0.1", copy, &r);
    return r;
}

/* Builds the request a row describes and checks that the router picks that very row. */
static void test_every_row_reachable(void)
{
    for (size_t i = 0; i < srv_ops_count; i++) {
        const srv_op_t *op = &srv_ops[i];
        const char *path = op->level == SRV_AT_SERVICE  ? "/"
                           : op->level == SRV_AT_BUCKET ? "/bkt"
                                                        : "/bkt/some/key";
        char q[128] = "";
        if (op->q1)
            snprintf(q, sizeof q, "%s=%s", op->q1, op->q1_value ? op->q1_value : "1");
        if (op->q2)
            snprintf(q + strlen(q), sizeof q - strlen(q), "&%s=2", op->q2);
        srv_route_t r = R(op->method, path, q[0] ? q : NULL, op->copy);
        if (r.api != op->api || (op->begin && r.op != op))
            fprintf(stderr, "row %zu (%s): %s %s?%s routes to %s\n", i, srv_api_name(op->api),
                    op->method, path, q, srv_api_name(r.api));
        CHECK(r.api == op->api);
        CHECK(op->begin ? r.op == op : r.op == NULL);
        srv_route_free(&r);
    }
}

static void test_rows_consistent(void)
{
    for (size_t i = 0; i < srv_ops_count; i++) {
        const srv_op_t *op = &srv_ops[i];
        CHECK(op->method != NULL);
        CHECK(op->q2 == NULL || op->q1 != NULL);
        if (!op->begin) {
            /* only the router's own answers have no handler */
            CHECK(op->api == SRV_API_BAD_REQUEST);
            continue;
        }
        /* a body is read only when a finish step will consume it */
        CHECK((op->body == SRV_BODY_NONE) == (op->finish == NULL));
        CHECK(op->body != SRV_BODY_DISCARD);
    }
    /* every S3 API the router can name is served by some row (the console is its own
     * application, console/console.h) */
    for (int a = 0; a < SRV_API__COUNT; a++) {
        if (a == SRV_API_UNKNOWN || a == SRV_API_HEALTH || a == SRV_API_METRICS ||
            a == SRV_API_CONSOLE || a == SRV_API_NOT_IMPLEMENTED ||
            a == SRV_API_METHOD_NOT_ALLOWED || a == SRV_API_BAD_REQUEST)
            continue;
        bool found = false;
        for (size_t i = 0; i < srv_ops_count; i++)
            found |= srv_ops[i].api == (srv_api_t)a && srv_ops[i].begin;
        if (!found)
            fprintf(stderr, "no row serves %s\n", srv_api_name((srv_api_t)a));
        CHECK(found);
    }
}

static const srv_op_t *op_for(srv_api_t api)
{
    for (size_t i = 0; i < srv_ops_count; i++)
        if (srv_ops[i].api == api && srv_ops[i].begin)
            return &srv_ops[i];
    return NULL;
}

static void test_body_and_rdma(void)
{
    /* x-amz-rdma-token is the data path of object bytes only */
    for (size_t i = 0; i < srv_ops_count; i++) {
        srv_api_t a = srv_ops[i].api;
        bool want = a == SRV_API_GET_OBJECT || a == SRV_API_HEAD_OBJECT ||
                    a == SRV_API_PUT_OBJECT || a == SRV_API_UPLOAD_PART;
        CHECK(srv_ops[i].rdma == want);
    }
    CHECK(op_for(SRV_API_PUT_OBJECT)->body == SRV_BODY_WRITER);
    CHECK(op_for(SRV_API_UPLOAD_PART)->body == SRV_BODY_WRITER);
    CHECK(op_for(SRV_API_CREATE_BUCKET)->body == SRV_BODY_BUFFER);
    CHECK(op_for(SRV_API_DELETE_OBJECTS)->body == SRV_BODY_BUFFER);
    CHECK(op_for(SRV_API_COMPLETE_MPU)->body == SRV_BODY_BUFFER);
    CHECK(op_for(SRV_API_COPY_OBJECT)->body == SRV_BODY_NONE);
    CHECK(op_for(SRV_API_UPLOAD_PART_COPY)->body == SRV_BODY_NONE);
    CHECK(op_for(SRV_API_GET_OBJECT)->body == SRV_BODY_NONE);
}

static void test_order_and_values(void)
{
    struct {
        const char *m, *p, *q;
        bool copy;
        srv_api_t api;
    } cases[] = {
        /* a sub-resource's value matters only where the row says so */
        {"GET", "/b", "list-type=1", false, SRV_API_LIST_OBJECTS},
        {"GET", "/b", "list-type", false, SRV_API_LIST_OBJECTS},
        {"GET", "/b", "list-type=2&versions", false, SRV_API_LIST_OBJECT_VERSIONS},
        {"GET", "/b", "location&versioning", false, SRV_API_GET_BUCKET_LOCATION},
        /* sub-resources of another method do not leak into this one */
        {"POST", "/b", NULL, false, SRV_API_POST_OBJECT}, /* the browser form upload */
        {"GET", "/b", "delete", false, SRV_API_LIST_OBJECTS},
        {"POST", "/b/k", NULL, false, SRV_API_METHOD_NOT_ALLOWED},
        {"POST", "/b/k", "uploads&uploadId=x", false, SRV_API_CREATE_MPU},
        {"HEAD", "/b/k", "uploadId=x", false, SRV_API_HEAD_OBJECT},
        {"OPTIONS", "/b", NULL, false, SRV_API_CORS_PREFLIGHT},
        {"DELETE", "/", NULL, false, SRV_API_METHOD_NOT_ALLOWED},
        /* a part needs both parameters, with or without a copy source */
        {"PUT", "/b/k", "partNumber=1", false, SRV_API_BAD_REQUEST},
        {"PUT", "/b/k", "partNumber=1", true, SRV_API_BAD_REQUEST},
        {"PUT", "/b/k", "uploadId=x", true, SRV_API_BAD_REQUEST},
        /* the copy source only changes PUT */
        {"GET", "/b/k", NULL, true, SRV_API_GET_OBJECT},
        {"PUT", "/b", NULL, true, SRV_API_CREATE_BUCKET},
        /* method names are case-sensitive (RFC 9110) */
        {"get", "/b/k", NULL, false, SRV_API_METHOD_NOT_ALLOWED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_route_t r = R(cases[i].m, cases[i].p, cases[i].q, cases[i].copy);
        if (r.api != cases[i].api)
            fprintf(stderr, "case %zu: %s %s?%s -> %s\n", i, cases[i].m, cases[i].p,
                    cases[i].q ? cases[i].q : "", srv_api_name(r.api));
        CHECK(r.api == cases[i].api);
        CHECK(r.op == NULL || r.op->api == r.api);
        if (r.api == SRV_API_BAD_REQUEST)
            CHECK(r.why != NULL);
        srv_route_free(&r);
    }
}

static void test_query_limits(void)
{
    char q[64 * 4 + 16] = "";
    for (int i = 0; i < SRV_MAX_QPARAMS; i++)
        snprintf(q + strlen(q), sizeof q - strlen(q), "%s%c", i ? "&" : "", 'a' + i % 26);
    srv_route_t r = R("GET", "/b", q, false);
    CHECK(r.api == SRV_API_LIST_OBJECTS && r.nq == SRV_MAX_QPARAMS);
    srv_route_free(&r);
    strcat(q, "&z");
    r = R("GET", "/b", q, false);
    CHECK(r.api == SRV_API_BAD_REQUEST && r.why && strstr(r.why, "too many"));
    CHECK(r.op == NULL);
    srv_route_free(&r);

    /* empty pieces are skipped; "=v" is a parameter with an empty name */
    r = R("GET", "/b", "&&prefix=p&&=v&flag&e=", false);
    CHECK(r.nq == 4);
    CHECK_STR(srv_route_q(&r, "prefix"), "p");
    CHECK_STR(srv_route_q(&r, ""), "v");
    for (size_t i = 0; i < r.nq; i++) {
        if (strcmp(r.q[i].name, "flag") == 0)
            CHECK(!r.q[i].has_value);
        if (strcmp(r.q[i].name, "e") == 0)
            CHECK(r.q[i].has_value && r.q[i].value[0] == '\0');
    }
    srv_route_free(&r);

    /* a bad escape in a name is as bad as one in a value */
    r = R("GET", "/b", "pre%zzfix=1", false);
    CHECK(r.api == SRV_API_BAD_REQUEST && r.op == NULL);
    srv_route_free(&r);
    /* unsupported sub-resources are named, before any method routing */
    r = R("DELETE", "/b", "website", false);
    CHECK(r.api == SRV_API_NOT_IMPLEMENTED && r.op == NULL);
    CHECK_STR(r.unsupported, "website");
    srv_route_free(&r);
    /* ... an object's tagging is served (a bucket's too) */
    r = R("DELETE", "/b/k", "tagging", false);
    CHECK(r.api == SRV_API_DELETE_OBJECT_TAGGING && r.op != NULL);
    srv_route_free(&r);
}

static void test_paths(void)
{
    /* a bucket with an escaped name; the key keeps its slashes and spaces */
    srv_route_t r = R("GET", "/b%2Dx/a%2Fb/c", NULL, false);
    CHECK_STR(r.bucket, "b-x");
    CHECK_STR(r.key, "a/b/c");
    srv_route_free(&r);
    /* "//" is an empty bucket: service level */
    r = R("GET", "//k", NULL, false);
    CHECK(!r.bucket);
    srv_route_free(&r);
    /* the null request target and a missing method */
    srv_route_parse("GET", NULL, NULL, NULL, NULL, false, &r);
    CHECK(r.api == SRV_API_BAD_REQUEST && r.why);
    srv_route_free(&r);
    srv_route_parse(NULL, "/b", NULL, NULL, NULL, false, &r);
    CHECK(r.api == SRV_API_BAD_REQUEST && r.why);
    srv_route_free(&r);
    /* srv_route_free is safe twice and on NULL */
    srv_route_free(&r);
    srv_route_free(NULL);
}

int main(void)
{
    RUN(test_every_row_reachable);
    RUN(test_rows_consistent);
    RUN(test_body_and_rdma);
    RUN(test_order_and_values);
    RUN(test_query_limits);
    RUN(test_paths);
    return check_done();
}
