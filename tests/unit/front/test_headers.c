/* SPDX-License-Identifier: Apache-2.0 */
/* The front's header collection (http_headers.c): names are matched without case, repeats are
 * joined with "," in the order they came, lookups find every name after the sort, and the size
 * and line limits refuse a request past them. */
#include "check.h"
#include "front/http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static front_req_t *req_new(void)
{
    return calloc(1, sizeof(front_req_t));
}

static void test_lookup_and_repeats(void)
{
    front_req_t *r = req_new();
    CHECK(r != NULL);
    CHECK(front_req_add_header(r, "X-Amz-Date", "20261208T000000Z"));
    CHECK(front_req_add_header(r, "x-amz-meta-a", "1"));
    CHECK(front_req_add_header(r, "Host", "127.0.0.1:9000"));
    CHECK(front_req_add_header(r, "X-AMZ-META-A", "2"));
    CHECK(front_req_add_header(r, "Empty", NULL));
    CHECK(front_req_add_header(r, "x-amz-meta-a", "3"));
    CHECK(front_req_index_headers(r));
    CHECK_EQ_U64(r->nhdrs, 4); /* the three x-amz-meta-a lines are one */
    CHECK_STR(front_hdr(r, "x-amz-meta-a"), "1,2,3");
    CHECK_STR(front_hdr(r, "host"), "127.0.0.1:9000");
    CHECK_STR(front_hdr(r, "x-amz-date"), "20261208T000000Z");
    CHECK_STR(front_hdr(r, "empty"), "");
    CHECK(front_hdr(r, "x-amz-meta-b") == NULL);
    for (size_t i = 1; i < r->nhdrs; i++) /* sorted by name, which the lookups rely on */
        CHECK(strcmp(r->hdrs[i - 1].lname, r->hdrs[i].lname) < 0);
    front_req_free(r);
}

static void test_line_limit(void)
{
    front_req_t *r = req_new();
    CHECK(r != NULL);
    bool ok = true;
    size_t added = 0;
    char name[32];
    for (size_t i = 0; i < FRONT_MAX_HEADER_LINES + 10 && ok; i++) {
        snprintf(name, sizeof name, "x-h-%zu", i);
        ok = front_req_add_header(r, name, "v");
        added += ok;
    }
    CHECK(!ok);
    CHECK_EQ_U64(added, FRONT_MAX_HEADER_LINES);
    CHECK(!r->hdr_oom); /* refused for the limit, not for memory */
    front_req_free(r);
}

static void test_size_limit(void)
{
    front_req_t *r = req_new();
    CHECK(r != NULL);
    char *big = malloc(FRONT_MAX_HEADER_BYTES);
    CHECK(big != NULL);
    memset(big, 'a', FRONT_MAX_HEADER_BYTES - 1);
    big[FRONT_MAX_HEADER_BYTES - 1] = '\0';
    CHECK(front_req_add_header(r, "a", "short"));
    CHECK(!front_req_add_header(r, "b", big)); /* "b: " + value + CRLF is past the limit */
    free(big);
    front_req_free(r);
}

int main(void)
{
    RUN(test_lookup_and_repeats);
    RUN(test_line_limit);
    RUN(test_size_limit);
    return check_done();
}
