/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/shared/s3/tags.c: the x-amz-tagging query form and the Tagging document, S3's
 * limits, and the canonical stored form. */
#include "check.h"
#include "s3/tags.h"

#include <stdio.h>
#include <string.h>

static s3_err_t q(const char *s, s3_tagset_t *t, char *msg)
{
    return s3_tags_parse_query(s, strlen(s), S3_TAGS_MAX, t, msg, 200);
}

static void test_query(void)
{
    s3_tagset_t t;
    char msg[200];
    CHECK(q("a=1&b=two%20words&c=x+y&empty=", &t, msg) == S3_OK && t.n == 4);
    CHECK_STR(t.tags[1].value, "two words");
    CHECK_STR(t.tags[2].value, "x y");
    CHECK_STR(t.tags[3].value, "");
    CHECK(q("", &t, msg) == S3_OK && t.n == 0);
    CHECK(q("novalue", &t, msg) == S3_OK && t.n == 1 && t.tags[0].value[0] == '\0');
    CHECK(q("=v", &t, msg) == S3_ERR_INVALID_TAG && strstr(msg, "TagKey"));
    CHECK(q("a=%zz", &t, msg) == S3_ERR_INVALID_ARGUMENT);
    CHECK(q("a=%4", &t, msg) == S3_ERR_INVALID_ARGUMENT);
    CHECK(q("a=1&a=2", &t, msg) == S3_ERR_INVALID_TAG && strstr(msg, "same key"));
    CHECK(q("aws:x=1", &t, msg) == S3_ERR_INVALID_TAG && strstr(msg, "aws:"));
    CHECK(q("a=%00", &t, msg) == S3_ERR_INVALID_TAG);
    CHECK(q("a=%ED%A0%80", &t, msg) == S3_ERR_INVALID_TAG); /* a surrogate */
    CHECK(q("a=%C0%AF", &t, msg) == S3_ERR_INVALID_TAG);    /* overlong */
    char buf[4096];
    size_t n = 0;
    for (int i = 0; i < 11; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%sk%d=v", i ? "&" : "", i);
    CHECK(q(buf, &t, msg) == S3_ERR_INVALID_TAG && strstr(msg, "greater than 10"));
    /* 128 characters of key (multi-byte too), 256 of value: the limits, inclusive. */
    n = 0;
    for (int i = 0; i < 128; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%%C3%%A9");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "=");
    for (int i = 0; i < 256; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "v");
    CHECK(q(buf, &t, msg) == S3_OK && t.n == 1);
    memcpy(buf + n, "v", 2);
    CHECK(q(buf, &t, msg) == S3_ERR_INVALID_TAG && strstr(msg, "TagValue"));
}

static void test_xml_and_round_trip(void)
{
    s3_tagset_t t, back;
    char msg[200];
    const char *x = "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
                    "<Tag><Key>k &amp; k</Key><Value>v=1&amp;2</Value></Tag>"
                    "<Tag><Key>e</Key><Value></Value></Tag></TagSet></Tagging>";
    CHECK(s3_tags_parse_xml(x, strlen(x), S3_TAGS_MAX, &t, msg, sizeof msg) == S3_OK && t.n == 2);
    CHECK_STR(t.tags[0].key, "k & k");
    CHECK_STR(t.tags[0].value, "v=1&2");
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(&t, &b);
    CHECK_STR(b.data, "k%20%26%20k=v%3D1%262&e=");
    CHECK(s3_tags_parse_query(b.data, b.len, S3_TAGS_MAX, &back, msg, sizeof msg) == S3_OK &&
          back.n == 2);
    CHECK_STR(back.tags[0].key, "k & k");
    CHECK_STR(back.tags[0].value, "v=1&2");
    wh_sbuf_free(&b);
    static const char *const bad[] = {
        "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
        ("<Tagging><TagSet><Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag></TagSet>"
         "</Tagging>"),
        "<Other><TagSet/></Other>",
        "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(s3_tags_parse_xml(bad[i], strlen(bad[i]), S3_TAGS_MAX, &t, msg, sizeof msg) ==
              S3_ERR_MALFORMED_XML);
    const char *dup = "<Tagging><TagSet><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k"
                      "</Key><Value>2</Value></Tag></TagSet></Tagging>";
    CHECK(s3_tags_parse_xml(dup, strlen(dup), S3_TAGS_MAX, &t, msg, sizeof msg) ==
          S3_ERR_INVALID_TAG);
    const char *empty = "<Tagging><TagSet></TagSet></Tagging>";
    CHECK(s3_tags_parse_xml(empty, strlen(empty), S3_TAGS_MAX, &t, msg, sizeof msg) == S3_OK &&
          t.n == 0);
}

int main(void)
{
    RUN(test_query);
    RUN(test_xml_and_round_trip);
    return check_done();
}
