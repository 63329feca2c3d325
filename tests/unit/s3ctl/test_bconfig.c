/* SPDX-License-Identifier: Apache-2.0 */
/* The bucket configurations' table (bconfig.c): every kind its routes name is in it, and each
 * kind's parser and formatter agree: a document PUT is kept as a value that GET formats back
 * to the same configuration; a bad document is refused with the parser's error; a stored value
 * that says "none" is not configured. (unit/s3api/test_bconfig_routes: the routes that name
 * the kinds.) */
#include "check.h"
#include "s3ctl/s3ctl.h"

#include <stdio.h>
#include <string.h>

/* Parses doc with kind k; on success the value kept is in *v (a NUL-terminated copy). */
static int put(const s3h_bconfig_kind_t *k, const char *doc, s3h_out_t *o, wh_sbuf_t *v,
               bool *unset)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(v);
    *unset = false;
    int ret = k->parse(NULL, o, doc, strlen(doc), v, unset);
    wh_sbuf_append(v, "", 0);
    return ret;
}

/* PUT doc, then format what was kept, then PUT that again: the same value. */
static void round_trip(const char *sub, const char *doc, const char *want_in_xml)
{
    const s3h_bconfig_kind_t *k = s3h_bconfig_kind(sub);
    CHECK(k != NULL);
    if (!k)
        return;
    s3h_out_t o;
    wh_sbuf_t v, v2, x;
    bool unset;
    CHECK(put(k, doc, &o, &v, &unset) == 0);
    CHECK(!unset);
    wh_sbuf_init(&x);
    CHECK(k->format(&o, v.data, &x) == 0);
    wh_sbuf_append(&x, "", 0);
    CHECK(x.data && strstr(x.data, want_in_xml) != NULL);
    CHECK(put(k, x.data, &o, &v2, &unset) == 0);
    CHECK_STR(v2.data, v.data);
    wh_sbuf_free(&v);
    wh_sbuf_free(&v2);
    wh_sbuf_free(&x);
}

static void test_round_trips(void)
{
    round_trip("tagging",
               "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>",
               "<Key>a</Key>");
    round_trip("cors",
               "<CORSConfiguration><CORSRule><AllowedOrigin>https://x.example</AllowedOrigin>"
               "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
               "<AllowedOrigin>https://x.example</AllowedOrigin>");
    round_trip("publicAccessBlock",
               "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>"
               "</PublicAccessBlockConfiguration>",
               "<BlockPublicAcls>true</BlockPublicAcls>");
    round_trip("ownershipControls",
               "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership>"
               "</Rule></OwnershipControls>",
               "BucketOwnerEnforced");
    round_trip("lifecycle",
               "<LifecycleConfiguration><Rule><ID>r1</ID><Filter><Prefix>logs/</Prefix></Filter>"
               "<Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>"
               "</LifecycleConfiguration>",
               "<Days>3</Days>");
}

static void test_refusals_and_none(void)
{
    s3h_out_t o;
    wh_sbuf_t v, x;
    bool unset;
    const char *subs[] = {"tagging",           "cors",      "publicAccessBlock",
                          "ownershipControls", "lifecycle", "encryption"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        const s3h_bconfig_kind_t *k = s3h_bconfig_kind(subs[i]);
        CHECK(k != NULL);
        if (!k)
            continue;
        /* not a document: refused with a 4xx and a message, nothing to keep */
        int st = put(k, "<nope", &o, &v, &unset);
        CHECK(st >= 400 && st < 500);
        CHECK(o.code != NULL && o.msg[0] != '\0');
        wh_sbuf_free(&v);
    }
    /* An empty TagSet removes the tags. */
    const s3h_bconfig_kind_t *tags = s3h_bconfig_kind("tagging");
    CHECK(put(tags, "<Tagging><TagSet></TagSet></Tagging>", &o, &v, &unset) == 0);
    CHECK(unset);
    wh_sbuf_free(&v);
    /* Stored values that say "none": a PublicAccessBlock without its set bit, ownership 0. */
    wh_sbuf_init(&x);
    CHECK(s3h_bconfig_kind("publicAccessBlock")->format(&o, "0", &x) < 0);
    CHECK(s3h_bconfig_kind("ownershipControls")->format(&o, "0", &x) < 0);
    /* A damaged stored value is the server's error, not the client's. */
    memset(&o, 0, sizeof o);
    CHECK(s3h_bconfig_kind("encryption")->format(&o, "rot13", &x) == 500);
    wh_sbuf_free(&x);
    CHECK(s3h_bconfig_kind("policy") == NULL); /* kept in the bucket's auth row: its own handlers */
    CHECK(s3h_bconfig_kind(NULL) == NULL);
}

int main(void)
{
    RUN(test_round_trips);
    RUN(test_refusals_and_none);
    return check_done();
}
