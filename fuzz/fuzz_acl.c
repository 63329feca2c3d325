/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the ACL parsers. The first byte picks the AccessControlPolicy XML, an
 * x-amz-grant-* header value, a canned ACL name, or the storage text; the rest is the input.
 * Whatever parses must round-trip: XML format -> parse, and serialize -> deserialize, give
 * the same grants. */
#include "auth/authz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OWNER "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

static bool same(const auth_acl_t *a, const auth_acl_t *b)
{
    if (strcmp(a->owner, b->owner) != 0 || a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->g[i].kind != b->g[i].kind || a->g[i].perm != b->g[i].perm ||
            strcmp(a->g[i].id, b->g[i].id) != 0)
            return false;
    return true;
}

static void round_trip(const auth_acl_t *a)
{
    static auth_acl_t b;
    char msg[256];
    wh_sbuf_t t;
    wh_sbuf_init(&t);
    auth_acl_serialize(a, &t);
    if (!t.oom && (auth_acl_deserialize(t.data, "x", &b, msg, sizeof msg) != S3_OK || !same(a, &b)))
        abort();
    wh_sbuf_reset(&t);
    if (a->owner[0]) {
        auth_acl_format_xml(a, "name", &t);
        if (!t.oom &&
            (auth_acl_parse_xml(t.data, t.len, &b, msg, sizeof msg) != S3_OK || !same(a, &b)))
            abort();
    }
    wh_sbuf_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 4;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    size_t len = size - 1;
    static auth_acl_t a;
    char msg[256];
    s3_err_t e;
    switch (which) {
    case 0:
        e = auth_acl_parse_xml(s, len, &a, msg, sizeof msg);
        break;
    case 1:
        auth_acl_private(&a, OWNER);
        e = auth_acl_grant_header(&a, 1u << (data[0] / 4 % 4), s, msg, sizeof msg);
        break;
    case 2:
        e = auth_acl_canned(&a, s, OWNER, OWNER, msg, sizeof msg);
        break;
    default:
        e = auth_acl_deserialize(s, OWNER, &a, msg, sizeof msg);
        break;
    }
    if (e == S3_OK) {
        if (a.n > AUTH_ACL_MAX_GRANTS)
            abort();
        round_trip(&a);
    }
    free(s);
    return 0;
}
