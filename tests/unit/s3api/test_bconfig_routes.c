/* SPDX-License-Identifier: Apache-2.0 */
/* The bucket configurations' routes: every front_ops row (app.c) served by s3ctl's generic
 * handlers names, by its sub-resource, a kind of bconfig.c's table, and each kind has its get,
 * put and delete rows. */
#include "check.h"
#include "s3api/s3api.h"

#include <string.h>

/* Every front_ops row served by the generic handlers names a kind of the table. */
static void test_routes_name_kinds(void)
{
    size_t rows = 0;
    for (size_t i = 0; i < s3api_ops_count; i++) {
        const front_op_t *op = &front_ops[i];
        if (op->begin == s3h_bconfig_get || op->begin == s3h_bconfig_delete ||
            op->finish == s3h_bconfig_put_finish) {
            rows++;
            CHECK(s3h_bconfig_kind(op->q1) != NULL);
        }
    }
    CHECK_EQ_U64(rows, 18); /* six kinds, get, put and delete each */
    const char *subs[] = {"tagging",           "cors",      "publicAccessBlock",
                          "ownershipControls", "lifecycle", "encryption"};
    for (size_t s = 0; s < sizeof subs / sizeof subs[0]; s++) {
        unsigned get = 0, put = 0, del = 0;
        for (size_t i = 0; i < s3api_ops_count; i++) {
            const front_op_t *op = &front_ops[i];
            if (op->level != FRONT_AT_BUCKET || !op->q1 || strcmp(op->q1, subs[s]) != 0)
                continue;
            get += op->begin == s3h_bconfig_get && strcmp(op->method, "GET") == 0;
            put += op->finish == s3h_bconfig_put_finish && strcmp(op->method, "PUT") == 0 &&
                   op->begin == s3h_bconfig_put_begin && op->body == FRONT_BODY_BUFFER;
            del += op->begin == s3h_bconfig_delete && strcmp(op->method, "DELETE") == 0;
        }
        CHECK(get == 1 && put == 1 && del == 1);
    }
}

int main(void)
{
    RUN(test_routes_name_kinds);
    return check_done();
}
