/* SPDX-License-Identifier: Apache-2.0 */
/* S3 XML: the writer round-trips through the parser, request bodies parse as S3 clients send
 * them, and hostile documents (DTDs, entity bombs, deep nesting, huge input) are refused. */
#include "check.h"
#include "s3/xml.h"

#include <stdlib.h>

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

typedef struct collect {
    wh_sbuf_t out; /* "path=text\n" per element */
    int n;
} collect_t;

static void collect_cb(void *arg, const char *path, const char *text, size_t len)
{
    collect_t *c = arg;
    wh_sbuf_printf(&c->out, "%s=", path);
    wh_sbuf_append(&c->out, text, len);
    wh_sbuf_append(&c->out, "\n", 1);
    c->n++;
}

static int walk(const char *xml, collect_t *c)
{
    wh_sbuf_init(&c->out);
    c->n = 0;
    return s3_xml_walk(xml, strlen(xml), collect_cb, c);
}

static void test_writer(void)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_xml_escape(&b, "a&b<c>d\"e'f\r\x01\x1f\tg\n");
    CHECK_STR(b.data, "a&amp;b&lt;c&gt;d&quot;e&apos;f&#xD;&#x1;&#x1F;\tg\n");
    wh_sbuf_reset(&b);
    s3_xml_elem(&b, "Key", "dir/a b&c.txt");
    s3_xml_elem_u64(&b, "Size", 18446744073709551615ULL);
    s3_xml_elem(&b, "Empty", NULL);
    CHECK_STR(b.data,
              "<Key>dir/a b&amp;c.txt</Key><Size>18446744073709551615</Size><Empty></Empty>");
    wh_sbuf_reset(&b);
    s3_xml_error(&b, "NoSuchKey", "The specified key does not exist.", "/b/k<1>", "req-1");
    CHECK_STR(b.data, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
                      "<Message>The specified key does not exist.</Message>"
                      "<Resource>/b/k&lt;1&gt;</Resource><RequestId>req-1</RequestId></Error>");
    wh_sbuf_reset(&b);
    s3_xml_error(&b, "AccessDenied", "Access Denied", NULL, NULL);
    CHECK(strstr(b.data, "Resource") == NULL && strstr(b.data, "RequestId") == NULL);

    /* Every character XML 1.0 can carry survives escape -> parse, \r included. (Other
     * controls are written as &#xN; like S3 does, but XML 1.0 parsers refuse them.) */
    wh_sbuf_t key;
    wh_sbuf_init(&key);
    wh_sbuf_puts(&key, "\t\r\n\r\n");
    for (int c = 0x20; c < 0x80; c++) {
        char ch = (char)c;
        wh_sbuf_append(&key, &ch, 1);
    }
    wh_sbuf_puts(&key, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 end ");
    wh_sbuf_reset(&b);
    wh_sbuf_puts(&b, "<Delete><Object>");
    s3_xml_elem(&b, "Key", key.data);
    wh_sbuf_puts(&b, "</Object></Delete>");
    s3_delete_req_t d = {0};
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_OK);
    CHECK(d.n == 1 && strcmp(d.keys[0], key.data) == 0);
    s3_delete_req_free(&d);
    memset(&d, 0, sizeof d);
    s3_delete_req_free(NULL);
    wh_sbuf_free(&key);
    wh_sbuf_free(&b);
}

static void test_walk(void)
{
    collect_t c;
    const char *list = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<ListBucketResult " NS ">\n  <Name>b</Name>\n"
                       "  <Contents><Key>a &amp; b</Key><Size>3</Size></Contents>\n"
                       "  <Contents><Key> x </Key><Size>0</Size></Contents>\n"
                       "  <CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes>\n"
                       "  <Empty/>\n"
                       "</ListBucketResult>";
    CHECK(walk(list, &c) == 0);
    CHECK_STR(c.out.data, "ListBucketResult/Name=b\n"
                          "ListBucketResult/Contents/Key=a & b\n"
                          "ListBucketResult/Contents/Size=3\n"
                          "ListBucketResult/Contents=\n"
                          "ListBucketResult/Contents/Key= x \n"
                          "ListBucketResult/Contents/Size=0\n"
                          "ListBucketResult/Contents=\n"
                          "ListBucketResult/CommonPrefixes/Prefix=p/\n"
                          "ListBucketResult/CommonPrefixes=\n"
                          "ListBucketResult/Empty=\n"
                          "ListBucketResult=\n");
    wh_sbuf_free(&c.out);
    /* prefixed names are reported by local name; CDATA is text */
    CHECK(walk("<s3:Error xmlns:s3=\"urn:x\"><s3:Code><![CDATA[A<B]]></s3:Code></s3:Error>", &c) ==
          0);
    CHECK_STR(c.out.data, "Error/Code=A<B\nError=\n");
    wh_sbuf_free(&c.out);

    const char *bad[] = {
        "",
        "   ",
        "<a>",
        "<a></b>",
        "<a>&undefined;</a>",
        "<a></a><b></b>",
        "text",
        "<a>\x01</a>",
        "<a>&#0;</a>",
        "<a b='1' b='2'/>",
        "<a>\xff\xfe</a>",
        "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
        "<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>",
        "<!DOCTYPE a><a/>",
        "<:/>",
        "<a:/>",
        "<a><b:></b:></a>", /* no local name (found by fuzz_xml) */
        ("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 "
         "\"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]><lolz>&lol2;</lolz>"),
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad); i++) {
        int r = walk(bad[i], &c);
        if (r != -1)
            fprintf(stderr, "  accepted bad[%zu]\n", i);
        CHECK(r == -1);
        wh_sbuf_free(&c.out);
    }
    /* depth: 32 levels fine, 33 refused */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    for (int d = 0; d < 32; d++)
        wh_sbuf_puts(&b, "<a>");
    for (int d = 0; d < 32; d++)
        wh_sbuf_puts(&b, "</a>");
    CHECK(walk(b.data, &c) == 0 && c.n == 32);
    wh_sbuf_free(&c.out);
    wh_sbuf_reset(&b);
    for (int d = 0; d < 33; d++)
        wh_sbuf_puts(&b, "<a>");
    for (int d = 0; d < 33; d++)
        wh_sbuf_puts(&b, "</a>");
    CHECK(walk(b.data, &c) == -1);
    wh_sbuf_free(&c.out);
    wh_sbuf_free(&b);
    CHECK(s3_xml_walk(NULL, 0, collect_cb, &c) == -1);
}

static void test_complete(void)
{
    s3_part_ref_t *p = NULL;
    size_t n = 0;
    const char *ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<CompleteMultipartUpload " NS ">\n"
                     " <Part><ETag>\"0cc175b9c0f1b6a831c399e269772661\"</ETag>"
                     "<PartNumber>1</PartNumber></Part>\n"
                     " <Part>\n  <PartNumber> 3 </PartNumber>\n"
                     "  <ETag>&quot;92eb5ffee6ae2fec3ad71c777531578f&quot;</ETag>\n"
                     "  <ChecksumCRC32C>yZRlqg==</ChecksumCRC32C>\n"
                     "  <ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME>\n"
                     "  <ChecksumSHA256>ignored</ChecksumSHA256>\n </Part>\n"
                     " <Part><PartNumber>2</PartNumber><ETag>unquoted</ETag></Part>\n"
                     "</CompleteMultipartUpload>";
    CHECK(s3_xml_parse_complete(ok, strlen(ok), &p, &n) == S3_OK);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(p[0].number == 1);
        CHECK_STR(p[0].etag, "0cc175b9c0f1b6a831c399e269772661");
        CHECK_STR(p[0].crc32c, "");
        CHECK(p[1].number == 3); /* order as sent: the caller checks it */
        CHECK_STR(p[1].etag, "92eb5ffee6ae2fec3ad71c777531578f");
        CHECK_STR(p[1].crc32c, "yZRlqg==");
        CHECK_STR(p[1].crc64nvme, "AAAAAAAAAAA=");
        CHECK(p[2].number == 2);
        CHECK_STR(p[2].etag, "unquoted");
    }
    free(p);

    struct {
        const char *xml;
        s3_err_t want;
    } bad[] = {
        {"", S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload></CompleteMultipartUpload>", S3_ERR_MALFORMED_XML},
        {"<Other><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></Other>",
         S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><ETag>x</ETag></Part></CompleteMultipartUpload>",
         S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><PartNumber>2</PartNumber>"
         "<ETag>x</ETag></Part></CompleteMultipartUpload>",
         S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>x</ETag></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>x</ETag></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>x</ETag></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>x</ETag></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_INVALID_ARGUMENT},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"\"</ETag></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_INVALID_PART},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"
         "0123456789012345678901234567890123456789012345678901234567890123456789012345678901"
         "</ETag></Part></CompleteMultipartUpload>",
         S3_ERR_INVALID_PART},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag>"
         "<ChecksumCRC32C>AAAAAAAAAAAAAAAAAAAAAAAAAAAAA</ChecksumCRC32C></Part>"
         "</CompleteMultipartUpload>",
         S3_ERR_MALFORMED_XML},
        {"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part>",
         S3_ERR_MALFORMED_XML},
        {"<!DOCTYPE CompleteMultipartUpload [<!ENTITY e \"1\">]><CompleteMultipartUpload><Part>"
         "<PartNumber>&e;</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
         S3_ERR_MALFORMED_XML},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad); i++) {
        p = (s3_part_ref_t *)0x1;
        n = 77;
        s3_err_t e = s3_xml_parse_complete(bad[i].xml, strlen(bad[i].xml), &p, &n);
        if (e != bad[i].want)
            fprintf(stderr, "  complete bad[%zu]: %s\n", i, s3_err_code(e));
        CHECK(e == bad[i].want);
        CHECK(p == (s3_part_ref_t *)0x1 && n == 77); /* outputs untouched on failure */
    }

    /* 10000 parts fine, 10001 refused */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, "<CompleteMultipartUpload>");
    for (int i = 1; i <= 10000; i++)
        wh_sbuf_printf(&b, "<Part><PartNumber>%d</PartNumber><ETag>\"e%d\"</ETag></Part>", i, i);
    size_t mark = b.len;
    wh_sbuf_puts(&b, "</CompleteMultipartUpload>");
    CHECK(s3_xml_parse_complete(b.data, b.len, &p, &n) == S3_OK);
    CHECK(n == 10000 && p[9999].number == 10000 && strcmp(p[9999].etag, "e10000") == 0);
    free(p);
    b.len = mark;
    wh_sbuf_puts(&b, "<Part><PartNumber>1</PartNumber><ETag>x</ETag></Part>"
                     "</CompleteMultipartUpload>");
    CHECK(s3_xml_parse_complete(b.data, b.len, &p, &n) == S3_ERR_MALFORMED_XML);
    wh_sbuf_free(&b);
}

static void test_delete(void)
{
    s3_delete_req_t d;
    const char *ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Delete " NS ">"
                     "<Quiet> TRUE </Quiet>"
                     "<Object><Key>a</Key></Object>"
                     "<Object><Key> spaced key </Key><VersionId>null</VersionId></Object>"
                     "<Object><Key>dir/&lt;x&gt;</Key></Object>"
                     "<Object><Key></Key></Object>"
                     "</Delete>";
    CHECK(s3_xml_parse_delete(ok, strlen(ok), &d) == S3_OK);
    CHECK(d.n == 4 && d.quiet == 1);
    if (d.n == 4) {
        CHECK_STR(d.keys[0], "a");
        CHECK_STR(d.keys[1], " spaced key ");
        CHECK_STR(d.keys[2], "dir/<x>");
        CHECK_STR(d.keys[3], "");
    }
    s3_delete_req_free(&d);
    CHECK(d.n == 0 && d.keys == NULL);
    const char *loud = "<Delete><Object><Key>a</Key></Object><Quiet>false</Quiet></Delete>";
    CHECK(s3_xml_parse_delete(loud, strlen(loud), &d) == S3_OK);
    CHECK(d.n == 1 && d.quiet == 0);
    s3_delete_req_free(&d);

    struct {
        const char *xml;
        s3_err_t want;
    } bad[] = {
        {"<Delete></Delete>", S3_ERR_MALFORMED_XML},
        {"<Delete><Quiet>true</Quiet></Delete>", S3_ERR_MALFORMED_XML},
        {"<Delete><Object></Object></Delete>", S3_ERR_MALFORMED_XML},
        {"<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>", S3_ERR_MALFORMED_XML},
        {"<Delete><Object><Key>a</Key></Object><Quiet>yes</Quiet></Delete>", S3_ERR_MALFORMED_XML},
        {"<Delete><Object><Key>a</Key></Object><Quiet>true</Quiet><Quiet>true</Quiet></Delete>",
         S3_ERR_MALFORMED_XML},
        {"<Remove><Object><Key>a</Key></Object></Remove>", S3_ERR_MALFORMED_XML},
        {"<Delete><Object><Key>a</Key></Object>", S3_ERR_MALFORMED_XML},
        {"<!DOCTYPE Delete [<!ENTITY k SYSTEM \"file:///etc/passwd\">]>"
         "<Delete><Object><Key>&k;</Key></Object></Delete>",
         S3_ERR_MALFORMED_XML},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad); i++) {
        memset(&d, 0x5a, sizeof d);
        s3_err_t e = s3_xml_parse_delete(bad[i].xml, strlen(bad[i].xml), &d);
        if (e != bad[i].want)
            fprintf(stderr, "  delete bad[%zu]: %s\n", i, s3_err_code(e));
        CHECK(e == bad[i].want);
    }

    /* key length: 1024 bytes fine, 1025 is KeyTooLong */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    char k[1026];
    memset(k, 'k', sizeof k);
    k[1024] = '\0';
    wh_sbuf_printf(&b, "<Delete><Object><Key>%s</Key></Object></Delete>", k);
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_OK && strlen(d.keys[0]) == 1024);
    s3_delete_req_free(&d);
    wh_sbuf_reset(&b);
    k[1024] = 'k';
    k[1025] = '\0';
    wh_sbuf_printf(&b, "<Delete><Object><Key>%s</Key></Object></Delete>", k);
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_ERR_KEY_TOO_LONG);

    /* 1000 keys fine, 1001 refused */
    wh_sbuf_reset(&b);
    wh_sbuf_puts(&b, "<Delete>");
    for (int i = 0; i < 1000; i++)
        wh_sbuf_printf(&b, "<Object><Key>key-%d</Key></Object>", i);
    size_t mark = b.len;
    wh_sbuf_puts(&b, "</Delete>");
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_OK && d.n == 1000);
    CHECK(d.n == 1000 && strcmp(d.keys[999], "key-999") == 0);
    s3_delete_req_free(&d);
    b.len = mark;
    wh_sbuf_puts(&b, "<Object><Key>one-too-many</Key></Object></Delete>");
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_ERR_MALFORMED_XML);

    /* oversized input: refused before parsing */
    wh_sbuf_reset(&b);
    wh_sbuf_puts(&b, "<Delete><Object><Key>a</Key></Object>");
    while (b.len <= S3_XML_MAX_BYTES)
        wh_sbuf_puts(&b, "<!-- padding padding padding padding padding padding padding -->");
    wh_sbuf_puts(&b, "</Delete>");
    CHECK(!b.oom);
    CHECK(s3_xml_parse_delete(b.data, b.len, &d) == S3_ERR_MALFORMED_XML);
    wh_sbuf_free(&b);
}

static void test_create_bucket(void)
{
    char loc[64];
    memset(loc, 'x', sizeof loc);
    CHECK(s3_xml_parse_create_bucket("", 0, loc, sizeof loc) == S3_OK);
    CHECK_STR(loc, "");
    CHECK(s3_xml_parse_create_bucket(" \r\n", 3, loc, sizeof loc) == S3_OK);
    CHECK_STR(loc, "");
    const char *x = "<CreateBucketConfiguration " NS "><LocationConstraint> eu-west-1 "
                    "</LocationConstraint></CreateBucketConfiguration>";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, sizeof loc) == S3_OK);
    CHECK_STR(loc, "eu-west-1");
    x = "<CreateBucketConfiguration/>";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, sizeof loc) == S3_OK);
    CHECK_STR(loc, "");
    x = "<CreateBucketConfiguration><LocationConstraint>a</LocationConstraint>"
        "<LocationConstraint>b</LocationConstraint></CreateBucketConfiguration>";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, sizeof loc) == S3_ERR_MALFORMED_XML);
    x = "<Config><LocationConstraint>a</LocationConstraint></Config>";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, sizeof loc) == S3_ERR_MALFORMED_XML);
    x = "<CreateBucketConfiguration><LocationConstraint>a";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, sizeof loc) == S3_ERR_MALFORMED_XML);
    x = "<CreateBucketConfiguration><LocationConstraint>0123456789</LocationConstraint>"
        "</CreateBucketConfiguration>";
    CHECK(s3_xml_parse_create_bucket(x, strlen(x), loc, 8) == S3_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    RUN(test_writer);
    RUN(test_walk);
    RUN(test_complete);
    RUN(test_delete);
    RUN(test_create_bucket);
    return check_done();
}
