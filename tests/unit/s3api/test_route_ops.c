/* SPDX-License-Identifier: Apache-2.0 */
/* The front_ops table (app.c) as the router uses it: every row is reachable, rows and APIs
 * agree, the body kinds and RDMA permissions are the ones the protocol defines, and request
 * parsing limits (query parameter count, value forms) hold. */
#include "check.h"
#include "s3api/s3api.h"

#include <stdio.h>
#include <string.h>

static front_route_t R(const char *m, const char *p, const char *q, bool copy)
{
    front_route_t r;
    s3api_route_parse(m, p, q, "127.0.0.1:9000", "127.0.0.1", copy, &r);
    return r;
}

/* Builds the request a row describes and checks that the router picks that very row. */
static void test_every_row_reachable(void)
{
    for (size_t i = 0; i < s3api_ops_count; i++) {
        const front_op_t *op = &front_ops[i];
        const char *path = op->level == FRONT_AT_SERVICE  ? "/"
                           : op->level == FRONT_AT_BUCKET ? "/bkt"
                                                          : "/bkt/some/key";
        char q[128] = "";
        if (op->q1)
            snprintf(q, sizeof q, "%s=%s", op->q1, op->q1_value ? op->q1_value : "1");
        if (op->q2)
            snprintf(q + strlen(q), sizeof q - strlen(q), "&%s=2", op->q2);
        front_route_t r = R(op->method, path, q[0] ? q : NULL, op->copy);
        if (r.api != op->api || (op->begin && r.op != op))
            fprintf(stderr, "row %zu (%s): %s %s?%s routes to %s\n", i, front_api_name(op->api),
                    op->method, path, q, front_api_name(r.api));
        CHECK(r.api == op->api);
        CHECK(op->begin ? r.op == op : r.op == NULL);
        front_route_free(&r);
    }
}

static void test_rows_consistent(void)
{
    for (size_t i = 0; i < s3api_ops_count; i++) {
        const front_op_t *op = &front_ops[i];
        CHECK(op->method != NULL);
        CHECK(op->q2 == NULL || op->q1 != NULL);
        if (!op->begin) {
            /* only the router's own answers have no handler */
            CHECK(op->api == FRONT_API_BAD_REQUEST);
            continue;
        }
        /* a body is read only when a finish step will consume it */
        CHECK((op->body == FRONT_BODY_NONE) == (op->finish == NULL));
        CHECK(op->body != FRONT_BODY_DISCARD);
    }
    /* every S3 API the router can name is served by some row (the console is its own
     * application, console/console.h) */
    for (int a = 0; a < FRONT_API__COUNT; a++) {
        if (a == FRONT_API_UNKNOWN || a == FRONT_API_HEALTH || a == FRONT_API_METRICS ||
            a == FRONT_API_CONSOLE || a == FRONT_API_NOT_IMPLEMENTED ||
            a == FRONT_API_METHOD_NOT_ALLOWED || a == FRONT_API_BAD_REQUEST)
            continue;
        bool found = false;
        for (size_t i = 0; i < s3api_ops_count; i++)
            found |= front_ops[i].api == (front_api_t)a && front_ops[i].begin;
        if (!found)
            fprintf(stderr, "no row serves %s\n", front_api_name((front_api_t)a));
        CHECK(found);
    }
}

static const front_op_t *op_for(front_api_t api)
{
    for (size_t i = 0; i < s3api_ops_count; i++)
        if (front_ops[i].api == api && front_ops[i].begin)
            return &front_ops[i];
    return NULL;
}

static void test_body_and_rdma(void)
{
    /* x-amz-rdma-token is the data path of object bytes only (an RDMA batch's too) */
    for (size_t i = 0; i < s3api_ops_count; i++) {
        front_api_t a = front_ops[i].api;
        bool want = a == FRONT_API_GET_OBJECT || a == FRONT_API_HEAD_OBJECT ||
                    a == FRONT_API_PUT_OBJECT || a == FRONT_API_UPLOAD_PART ||
                    a == FRONT_API_WHARF_SCATTER || a == FRONT_API_WHARF_GATHER_PART ||
                    a == FRONT_API_RDMA_BATCH;
        CHECK(front_ops[i].rdma == want);
    }
    CHECK(op_for(FRONT_API_PUT_OBJECT)->body == FRONT_BODY_WRITER);
    CHECK(op_for(FRONT_API_UPLOAD_PART)->body == FRONT_BODY_WRITER);
    CHECK(op_for(FRONT_API_CREATE_BUCKET)->body == FRONT_BODY_BUFFER);
    CHECK(op_for(FRONT_API_DELETE_OBJECTS)->body == FRONT_BODY_BUFFER);
    CHECK(op_for(FRONT_API_RDMA_BATCH)->body == FRONT_BODY_BUFFER);
    CHECK(op_for(FRONT_API_COMPLETE_MPU)->body == FRONT_BODY_BUFFER);
    /* the window lists are signed bodies */
    CHECK(op_for(FRONT_API_WHARF_SCATTER)->body == FRONT_BODY_BUFFER);
    CHECK(op_for(FRONT_API_WHARF_GATHER_PART)->body == FRONT_BODY_BUFFER);
    CHECK(op_for(FRONT_API_COPY_OBJECT)->body == FRONT_BODY_NONE);
    CHECK(op_for(FRONT_API_UPLOAD_PART_COPY)->body == FRONT_BODY_NONE);
    CHECK(op_for(FRONT_API_GET_OBJECT)->body == FRONT_BODY_NONE);
}

static void test_order_and_values(void)
{
    struct {
        const char *m, *p, *q;
        bool copy;
        front_api_t api;
    } cases[] = {
        /* a sub-resource's value matters only where the row says so */
        {"GET", "/b", "list-type=1", false, FRONT_API_LIST_OBJECTS},
        {"GET", "/b", "list-type", false, FRONT_API_LIST_OBJECTS},
        {"GET", "/b", "list-type=2&versions", false, FRONT_API_LIST_OBJECT_VERSIONS},
        {"GET", "/b", "location&versioning", false, FRONT_API_GET_BUCKET_LOCATION},
        /* sub-resources of another method do not leak into this one */
        {"POST", "/b", NULL, false, FRONT_API_POST_OBJECT}, /* the browser form upload */
        {"GET", "/b", "delete", false, FRONT_API_LIST_OBJECTS},
        {"POST", "/b/k", NULL, false, FRONT_API_METHOD_NOT_ALLOWED},
        {"POST", "/b/k", "uploads&uploadId=x", false, FRONT_API_CREATE_MPU},
        {"HEAD", "/b/k", "uploadId=x", false, FRONT_API_HEAD_OBJECT},
        {"OPTIONS", "/b", NULL, false, FRONT_API_CORS_PREFLIGHT},
        {"DELETE", "/", NULL, false, FRONT_API_METHOD_NOT_ALLOWED},
        /* a part needs both parameters, with or without a copy source */
        {"PUT", "/b/k", "partNumber=1", false, FRONT_API_BAD_REQUEST},
        {"PUT", "/b/k", "partNumber=1", true, FRONT_API_BAD_REQUEST},
        {"PUT", "/b/k", "uploadId=x", true, FRONT_API_BAD_REQUEST},
        /* the copy source only changes PUT */
        {"GET", "/b/k", NULL, true, FRONT_API_GET_OBJECT},
        {"PUT", "/b", NULL, true, FRONT_API_CREATE_BUCKET},
        /* method names are case-sensitive (RFC 9110) */
        {"get", "/b/k", NULL, false, FRONT_API_METHOD_NOT_ALLOWED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        front_route_t r = R(cases[i].m, cases[i].p, cases[i].q, cases[i].copy);
        if (r.api != cases[i].api)
            fprintf(stderr, "case %zu: %s %s?%s -> %s\n", i, cases[i].m, cases[i].p,
                    cases[i].q ? cases[i].q : "", front_api_name(r.api));
        CHECK(r.api == cases[i].api);
        CHECK(r.op == NULL || r.op->api == r.api);
        if (r.api == FRONT_API_BAD_REQUEST)
            CHECK(r.why != NULL);
        front_route_free(&r);
    }
}

static void test_query_limits(void)
{
    char q[64 * 4 + 16] = "";
    for (int i = 0; i < FRONT_MAX_QPARAMS; i++)
        snprintf(q + strlen(q), sizeof q - strlen(q), "%s%c", i ? "&" : "", 'a' + i % 26);
    front_route_t r = R("GET", "/b", q, false);
    CHECK(r.api == FRONT_API_LIST_OBJECTS && r.nq == FRONT_MAX_QPARAMS);
    front_route_free(&r);
    strcat(q, "&z");
    r = R("GET", "/b", q, false);
    CHECK(r.api == FRONT_API_BAD_REQUEST && r.why && strstr(r.why, "too many"));
    CHECK(r.op == NULL);
    front_route_free(&r);

    /* empty pieces are skipped; "=v" is a parameter with an empty name */
    r = R("GET", "/b", "&&prefix=p&&=v&flag&e=", false);
    CHECK(r.nq == 4);
    CHECK_STR(front_route_q(&r, "prefix"), "p");
    CHECK_STR(front_route_q(&r, ""), "v");
    for (size_t i = 0; i < r.nq; i++) {
        if (strcmp(r.q[i].name, "flag") == 0)
            CHECK(!r.q[i].has_value);
        if (strcmp(r.q[i].name, "e") == 0)
            CHECK(r.q[i].has_value && r.q[i].value[0] == '\0');
    }
    front_route_free(&r);

    /* a bad escape in a name is as bad as one in a value */
    r = R("GET", "/b", "pre%zzfix=1", false);
    CHECK(r.api == FRONT_API_BAD_REQUEST && r.op == NULL);
    front_route_free(&r);
    /* unsupported sub-resources are named, before any method routing */
    r = R("DELETE", "/b", "website", false);
    CHECK(r.api == FRONT_API_NOT_IMPLEMENTED && r.op == NULL);
    CHECK_STR(r.unsupported, "website");
    front_route_free(&r);
    /* ... an object's tagging is served (a bucket's too) */
    r = R("DELETE", "/b/k", "tagging", false);
    CHECK(r.api == FRONT_API_DELETE_OBJECT_TAGGING && r.op != NULL);
    front_route_free(&r);
}

static void test_paths(void)
{
    /* a bucket with an escaped name; the key keeps its slashes and spaces */
    front_route_t r = R("GET", "/b%2Dx/a%2Fb/c", NULL, false);
    CHECK_STR(r.bucket, "b-x");
    CHECK_STR(r.key, "a/b/c");
    front_route_free(&r);
    /* "//" is an empty bucket: service level */
    r = R("GET", "//k", NULL, false);
    CHECK(!r.bucket);
    front_route_free(&r);
    /* the null request target and a missing method */
    s3api_route_parse("GET", NULL, NULL, NULL, NULL, false, &r);
    CHECK(r.api == FRONT_API_BAD_REQUEST && r.why);
    front_route_free(&r);
    s3api_route_parse(NULL, "/b", NULL, NULL, NULL, false, &r);
    CHECK(r.api == FRONT_API_BAD_REQUEST && r.why);
    front_route_free(&r);
    /* front_route_free is safe twice and on NULL */
    front_route_free(&r);
    front_route_free(NULL);
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
