/* SPDX-License-Identifier: Apache-2.0 */
/* aws-chunked decoding against AWS's published examples ("Example: PUT Object" in
 * sigv4-streaming, and the signed-trailer example in sigv4-streaming-trailers), fed whole,
 * a byte at a time and in random pieces; then every way a body can be broken. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/util.h"
#include "check.h"
#include "auth/chunked.h"

#include <stdlib.h>
#include <strings.h>

#define SEED_DOC "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1_DOC "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2_DOC "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3_DOC "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define SEED_TRL "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"
#define SIG1_TRL "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2"
#define SIG2_TRL "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7"
#define SIG3_TRL "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"
#define TSIG_TRL "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"

/* ---------------------------------------------------------------------------------------- */

typedef struct sink {
    wh_sbuf_t out;
    uint64_t stop_after; /* 0: never */
} sink_t;

static int sink_cb(void *arg, const void *data, size_t len)
{
    sink_t *s = arg;
    wh_sbuf_append(&s->out, data, len);
    if (s->stop_after && s->out.len >= s->stop_after)
        return -1;
    return 0;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

enum { SPLIT_WHOLE, SPLIT_BYTE, SPLIT_RANDOM, SPLIT_1000 };

/* Decodes body in pieces; returns the first error (feed or finish). */
static s3_err_t decode(const auth_auth_t *auth, const char *body, size_t len, int split, sink_t *s,
                       char *msg, size_t msglen, auth_chunked_t **keep)
{
    auth_chunked_t *c = auth_chunked_new(auth);
    if (!c)
        return S3_ERR_INTERNAL;
    wh_sbuf_init(&s->out);
    s3_err_t e = S3_OK;
    size_t off = 0;
    while (off < len && e == S3_OK) {
        size_t n = len - off;
        if (split == SPLIT_BYTE)
            n = 1;
        else if (split == SPLIT_RANDOM)
            n = WH_MIN(n, 1 + rnd() % 700);
        else if (split == SPLIT_1000)
            n = WH_MIN(n, 1000);
        e = auth_chunked_feed(c, body + off, n, sink_cb, s, msg, msglen);
        off += n;
    }
    if (e == S3_OK)
        e = auth_chunked_finish(c, msg, msglen);
    if (keep)
        *keep = c;
    else
        auth_chunked_free(c);
    return e;
}

static const char *treq_get(void *arg, const char *lname)
{
    const char *const *h = arg;
    for (; h[0]; h += 2)
        if (strcasecmp(h[0], lname) == 0)
            return h[1];
    return NULL;
}

static const char *treq_at(void *arg, size_t i, const char **value)
{
    const char *const *h = arg;
    for (size_t k = 0; h[0]; h += 2, k++)
        if (k == i) {
            *value = h[1];
            return h[0];
        }
    return NULL;
}

static const char *secret_of(void *arg, const char *ak)
{
    (void)arg;
    return strcmp(ak, "AKIAIOSFODNN7EXAMPLE") == 0 ? "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
                                                   : NULL;
}

static void doc_body(wh_sbuf_t *b, const char *s1, const char *s2, const char *s3,
                     const char *trailer)
{
    char a[65536];
    memset(a, 'a', sizeof a);
    wh_sbuf_printf(b, "10000;chunk-signature=%s\r\n", s1);
    wh_sbuf_append(b, a, 65536);
    wh_sbuf_printf(b, "\r\n400;chunk-signature=%s\r\n", s2);
    wh_sbuf_append(b, a, 1024);
    wh_sbuf_printf(b, "\r\n0;chunk-signature=%s\r\n%s\r\n", s3, trailer ? trailer : "");
}

static int all_a(const wh_sbuf_t *b, size_t n)
{
    if (b->len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (b->data[i] != 'a')
            return 0;
    return 1;
}

/* The documented request: its seed signature verifies, then its body decodes. */
static void doc_auth(auth_auth_t *a)
{
    const char *hdrs[] = {
        "Host",
        "s3.amazonaws.com",
        "x-amz-date",
        "20130524T000000Z",
        "x-amz-storage-class",
        "REDUCED_REDUNDANCY",
        "Authorization",
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
        "x-amz-decoded-content-length;x-amz-storage-class,Signature=" SEED_DOC,
        "x-amz-content-sha256",
        AUTH_STREAMING_SIGNED,
        "Content-Encoding",
        "aws-chunked",
        "x-amz-decoded-content-length",
        "66560",
        "Content-Length",
        "66824",
        NULL,
        NULL,
    };
    auth_http_req_t r = {.method = "PUT",
                         .path = "/examplebucket/chunkObject.txt",
                         .get_header = treq_get,
                         .header_at = treq_at,
                         .arg = (void *)hdrs};
    char msg[256];
    time_t now;
    wh_amz_date_parse("20130524T000100Z", &now);
    s3_err_t e = auth_sigv4_verify(&r, secret_of, NULL, now, a, msg, sizeof msg);
    if (e != S3_OK)
        fprintf(stderr, "  verify: %s %s\n", s3_err_code(e), msg);
    CHECK(e == S3_OK);
    CHECK(a->mode == AUTH_PAYLOAD_STREAMING_SIGNED && !a->signed_trailer);
    CHECK_STR(a->signature, SEED_DOC);
}

static void test_doc_example(void)
{
    auth_auth_t a;
    doc_auth(&a);
    char sig[65];
    char aa[65536];
    memset(aa, 'a', sizeof aa);
    auth_chunk_signature(a.signing_key, a.amz_date, a.scope, SEED_DOC, aa, 65536, sig);
    CHECK_STR(sig, SIG1_DOC);

    wh_sbuf_t b;
    wh_sbuf_init(&b);
    doc_body(&b, SIG1_DOC, SIG2_DOC, SIG3_DOC, NULL);
    CHECK_EQ_U64(b.len, 66824); /* the documented Content-Length */
    int splits[] = {SPLIT_WHOLE, SPLIT_BYTE, SPLIT_RANDOM, SPLIT_1000};
    for (size_t i = 0; i < WH_ARRAY_SIZE(splits); i++) {
        sink_t s = {0};
        char msg[256] = "";
        auth_chunked_t *c = NULL;
        s3_err_t e = decode(&a, b.data, b.len, splits[i], &s, msg, sizeof msg, &c);
        if (e != S3_OK)
            fprintf(stderr, "  split %d: %s %s\n", splits[i], s3_err_code(e), msg);
        CHECK(e == S3_OK);
        CHECK(all_a(&s.out, 66560));
        CHECK_EQ_U64(auth_chunked_decoded(c), 66560);
        CHECK(auth_chunked_trailer(c, "x-amz-checksum-crc32c") == NULL);
        auth_chunked_free(c);
        wh_sbuf_free(&s.out);
    }

    /* Each chunk's data or signature tampered: that chunk is named. */
    struct {
        size_t at; /* byte to flip */
        const char *msg_has;
    } flips[] = {
        {100, "chunk 1 (65536 bytes) signature"},
        {b.len - 200, "chunk 2 (1024 bytes) signature"},
        {b.len - 10, "chunk 3 (0 bytes) signature"}, /* final signature */
        {30, "chunk 1 (65536 bytes) signature"},     /* in chunk 1's signature */
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(flips); i++) {
        wh_sbuf_t t;
        wh_sbuf_init(&t);
        wh_sbuf_append(&t, b.data, b.len);
        char *ch = &t.data[flips[i].at];
        *ch = *ch == 'a' ? 'b' : (*ch == '0' ? '1' : '0');
        sink_t s = {0};
        char msg[256] = "";
        s3_err_t e = decode(&a, t.data, t.len, SPLIT_RANDOM, &s, msg, sizeof msg, NULL);
        if (e != S3_ERR_SIGNATURE_MISMATCH || !strstr(msg, flips[i].msg_has))
            fprintf(stderr, "  flip %zu: %s '%s'\n", i, s3_err_code(e), msg);
        CHECK(e == S3_ERR_SIGNATURE_MISMATCH);
        CHECK(strstr(msg, flips[i].msg_has) != NULL);
        wh_sbuf_free(&s.out);
        wh_sbuf_free(&t);
    }

    /* Chunks replayed out of order or from another request's chain. */
    wh_sbuf_t t;
    wh_sbuf_init(&t);
    doc_body(&t, SIG1_TRL, SIG2_DOC, SIG3_DOC, NULL);
    sink_t s = {0};
    char msg[256];
    CHECK(decode(&a, t.data, t.len, SPLIT_WHOLE, &s, msg, sizeof msg, NULL) ==
          S3_ERR_SIGNATURE_MISMATCH);
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&t);

    /* Truncations at every interesting place are an incomplete body, never success. */
    size_t cuts[] = {0,     5,     86,    87,        1000,      65622,
                     65623, 65624, 66700, b.len - 3, b.len - 2, b.len - 1};
    for (size_t i = 0; i < WH_ARRAY_SIZE(cuts); i++) {
        char m[256] = "";
        s3_err_t e = decode(&a, b.data, cuts[i], SPLIT_RANDOM, &s, m, sizeof m, NULL);
        if (e != S3_ERR_INCOMPLETE_BODY)
            fprintf(stderr, "  cut %zu: %s '%s'\n", cuts[i], s3_err_code(e), m);
        CHECK(e == S3_ERR_INCOMPLETE_BODY);
        CHECK(m[0] != '\0');
        wh_sbuf_free(&s.out);
    }
    /* Bytes after the end. */
    wh_sbuf_init(&t);
    wh_sbuf_append(&t, b.data, b.len);
    wh_sbuf_puts(&t, "x");
    CHECK(decode(&a, t.data, t.len, SPLIT_WHOLE, &s, msg, sizeof msg, NULL) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(strstr(msg, "follow the end") != NULL);
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&t);
    /* The trailer-less mode refuses trailers. */
    wh_sbuf_init(&t);
    doc_body(&t, SIG1_DOC, SIG2_DOC, SIG3_DOC, "x-amz-checksum-crc32c:sOO8/Q==\r\n");
    CHECK(decode(&a, t.data, t.len, SPLIT_WHOLE, &s, msg, sizeof msg, NULL) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(strstr(msg, "no trailers") != NULL);
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&t);

    /* A sink that stops the upload. */
    s.stop_after = 1000;
    CHECK(decode(&a, b.data, b.len, SPLIT_1000, &s, msg, sizeof msg, NULL) == S3_ERR_INTERNAL);
    CHECK(s.out.len >= 1000 && s.out.len < 2000); /* stopped at the first piece past 1000 */
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&b);
}

/* The signed-trailer example: same data, crc32c trailer, trailer signature. */
static void test_doc_trailer(void)
{
    auth_auth_t a;
    memset(&a, 0, sizeof a);
    auth_sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1",
                           a.signing_key);
    strcpy(a.amz_date, "20130524T000000Z");
    strcpy(a.scope, "20130524/us-east-1/s3/aws4_request");
    strcpy(a.signature, SEED_TRL);
    a.mode = AUTH_PAYLOAD_STREAMING_SIGNED;
    a.signed_trailer = 1;
    a.has_trailer = 1;

    /* The trailer carries the CRC-32C of the 66560 bytes. */
    char *aa = malloc(66560);
    memset(aa, 'a', 66560);
    uint32_t crc = wh_crc32c(0, aa, 66560);
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    char b64[12];
    wh_base64_encode(be, 4, b64);
    CHECK_STR(b64, "sOO8/Q==");
    free(aa);

    const char *trl = "x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TSIG_TRL "\r\n";
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    doc_body(&b, SIG1_TRL, SIG2_TRL, SIG3_TRL, trl);
    int splits[] = {SPLIT_WHOLE, SPLIT_BYTE, SPLIT_RANDOM};
    for (size_t i = 0; i < WH_ARRAY_SIZE(splits); i++) {
        sink_t s = {0};
        char msg[256] = "";
        auth_chunked_t *c = NULL;
        s3_err_t e = decode(&a, b.data, b.len, splits[i], &s, msg, sizeof msg, &c);
        if (e != S3_OK)
            fprintf(stderr, "  trailer split %d: %s %s\n", splits[i], s3_err_code(e), msg);
        CHECK(e == S3_OK);
        CHECK(all_a(&s.out, 66560));
        CHECK_STR(auth_chunked_trailer(c, "x-amz-checksum-crc32c"), "sOO8/Q==");
        CHECK(auth_chunked_trailer(c, "x-amz-trailer-signature") == NULL);
        auth_chunked_free(c);
        wh_sbuf_free(&s.out);
    }

    struct {
        const char *trailer;
        s3_err_t want;
        const char *msg_has;
    } bad[] = {
        /* value changed */
        {"x-amz-checksum-crc32c:sOO8/Q=A\r\nx-amz-trailer-signature:" TSIG_TRL "\r\n",
         S3_ERR_SIGNATURE_MISMATCH, "trailer-signature does not match"},
        /* signature changed */
        {"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:"
         "e81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n",
         S3_ERR_SIGNATURE_MISMATCH, "trailer-signature does not match"},
        {"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:abc\r\n",
         S3_ERR_SIGNATURE_MISMATCH, "trailer-signature"},
        /* signature missing */
        {"x-amz-checksum-crc32c:sOO8/Q==\r\n", S3_ERR_SIGNATURE_MISMATCH,
         "without x-amz-trailer-signature"},
        {"", S3_ERR_SIGNATURE_MISMATCH, "without x-amz-trailer-signature"},
        /* a trailer after the signature */
        {"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:" TSIG_TRL
         "\r\nx-amz-meta:1\r\n",
         S3_ERR_INCOMPLETE_BODY, "follows x-amz-trailer-signature"},
        {"no colon here\r\n", S3_ERR_INCOMPLETE_BODY, "not 'name:value'"},
        {":empty-name\r\n", S3_ERR_INCOMPLETE_BODY, "not 'name:value'"},
        {"bad name:1\r\n", S3_ERR_INCOMPLETE_BODY, "invalid character"},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad); i++) {
        wh_sbuf_t t;
        wh_sbuf_init(&t);
        doc_body(&t, SIG1_TRL, SIG2_TRL, SIG3_TRL, bad[i].trailer);
        sink_t s = {0};
        char msg[256] = "";
        s3_err_t e = decode(&a, t.data, t.len, SPLIT_RANDOM, &s, msg, sizeof msg, NULL);
        if (e != bad[i].want || !strstr(msg, bad[i].msg_has))
            fprintf(stderr, "  trailer bad[%zu]: %s '%s'\n", i, s3_err_code(e), msg);
        CHECK(e == bad[i].want);
        CHECK(strstr(msg, bad[i].msg_has) != NULL);
        wh_sbuf_free(&s.out);
        wh_sbuf_free(&t);
    }
    /* The LF-then-CRLF variant some clients write, and mixed-case names, are accepted. */
    wh_sbuf_t t;
    wh_sbuf_init(&t);
    doc_body(&t, SIG1_TRL, SIG2_TRL, SIG3_TRL,
             "X-Amz-Checksum-CRC32C: sOO8/Q==\n\r\nx-amz-trailer-signature:" TSIG_TRL "\r\n");
    sink_t s = {0};
    char msg[256] = "";
    auth_chunked_t *c = NULL;
    CHECK(decode(&a, t.data, t.len, SPLIT_BYTE, &s, msg, sizeof msg, &c) == S3_OK);
    CHECK_STR(auth_chunked_trailer(c, "x-amz-checksum-crc32c"), "sOO8/Q==");
    auth_chunked_free(c);
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&t);
    wh_sbuf_free(&b);
}

/* STREAMING-UNSIGNED-PAYLOAD-TRAILER, framed the way botocore frames it. */
static void test_unsigned_trailer(void)
{
    auth_auth_t a;
    memset(&a, 0, sizeof a);
    a.mode = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    a.has_trailer = 1;
    char data[5000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(rnd() & 0xff);
    uint32_t crc = wh_crc32c(0, data, sizeof data);
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    char b64[12];
    wh_base64_encode(be, 4, b64);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, "%x\r\n", 4096);
    wh_sbuf_append(&b, data, 4096);
    wh_sbuf_printf(&b, "\r\n%X;ext=1\r\n", 904);
    wh_sbuf_append(&b, data + 4096, 904);
    wh_sbuf_printf(&b, "\r\n0\r\nx-amz-checksum-crc32c:%s\r\n\r\n", b64);
    int splits[] = {SPLIT_WHOLE, SPLIT_BYTE, SPLIT_RANDOM};
    for (size_t i = 0; i < WH_ARRAY_SIZE(splits); i++) {
        sink_t s = {0};
        char msg[256] = "";
        auth_chunked_t *c = NULL;
        CHECK(decode(&a, b.data, b.len, splits[i], &s, msg, sizeof msg, &c) == S3_OK);
        CHECK(s.out.len == sizeof data && memcmp(s.out.data, data, sizeof data) == 0);
        CHECK_STR(auth_chunked_trailer(c, "x-amz-checksum-crc32c"), b64);
        auth_chunked_free(c);
        wh_sbuf_free(&s.out);
    }
    /* No trailers at all, and an empty body. */
    struct {
        const char *body;
        s3_err_t want;
        const char *msg_has;
        uint64_t decoded;
    } cases[] = {
        {"0\r\n\r\n", S3_OK, "", 0},
        {"3\r\nabc\r\n0\r\n\r\n", S3_OK, "", 3},
        {"3\r\nabc\r\n0\r\nx-amz-checksum-crc64nvme:AAAAAAAAAAA=\r\n\r\n", S3_OK, "", 3},
        {"3;chunk-signature=" SEED_DOC "\r\nabc\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY,
         "carries a chunk-signature", 0},
        {"3\nabc\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "does not end in \\r\\n", 0},
        {"3x\r\nabc\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "is not '<hex-size>'", 0},
        {"\r\nabc\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "hex size", 0},
        {"-3\r\nabc\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "hex size", 0},
        {"11111111111111111\r\n", S3_ERR_INCOMPLETE_BODY, "hex size", 0},
        {"1000001\r\n", S3_ERR_INCOMPLETE_BODY, "at most 16777216", 0},
        {"3\r\nabcd\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "not followed by \\r\\n", 0},
        {"3\r\nab\r\n0\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "not followed by \\r\\n", 0},
        {"3\r\nabc\r\n0\r\nx-amz-trailer-signature:" SEED_DOC "\r\n\r\n", S3_ERR_INCOMPLETE_BODY,
         "x-amz-trailer-signature", 0},
        {"3\r\nabc\r\n0\r\na:1\r\na:2\r\n\r\n", S3_ERR_INCOMPLETE_BODY, "twice", 0},
        {"3\r\nabc\r\n0\r\na:1\r\n", S3_ERR_INCOMPLETE_BODY, "closing empty line", 0},
        {"3\r\nabc\r\n", S3_ERR_INCOMPLETE_BODY, "before the final", 0},
        {"3\r\nab", S3_ERR_INCOMPLETE_BODY, "2 of 3 bytes", 0},
        {"", S3_ERR_INCOMPLETE_BODY, "before the final", 0},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(cases); i++) {
        sink_t s = {0};
        char msg[256] = "";
        auth_chunked_t *c = NULL;
        s3_err_t e =
            decode(&a, cases[i].body, strlen(cases[i].body), SPLIT_BYTE, &s, msg, sizeof msg, &c);
        if (e != cases[i].want || !strstr(msg, cases[i].msg_has))
            fprintf(stderr, "  unsigned case[%zu]: %s '%s'\n", i, s3_err_code(e), msg);
        CHECK(e == cases[i].want);
        CHECK(strstr(msg, cases[i].msg_has) != NULL);
        if (cases[i].want == S3_OK)
            CHECK_EQ_U64(auth_chunked_decoded(c), cases[i].decoded);
        auth_chunked_free(c);
        wh_sbuf_free(&s.out);
    }
    /* Lines and trailer counts are bounded. */
    wh_sbuf_reset(&b);
    wh_sbuf_puts(&b, "0\r\nx-amz-meta-long:");
    for (int i = 0; i < 1100; i++)
        wh_sbuf_puts(&b, "v");
    wh_sbuf_puts(&b, "\r\n\r\n");
    sink_t s = {0};
    char msg[256] = "";
    CHECK(decode(&a, b.data, b.len, SPLIT_RANDOM, &s, msg, sizeof msg, NULL) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(strstr(msg, "longer than 1024") != NULL);
    wh_sbuf_free(&s.out);
    wh_sbuf_reset(&b);
    wh_sbuf_puts(&b, "0\r\n");
    for (int i = 0; i < 17; i++)
        wh_sbuf_printf(&b, "t%d:v\r\n", i);
    wh_sbuf_puts(&b, "\r\n");
    CHECK(decode(&a, b.data, b.len, SPLIT_WHOLE, &s, msg, sizeof msg, NULL) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(strstr(msg, "more than 16 trailers") != NULL);
    wh_sbuf_free(&s.out);
    /* After an error, the decoder stays failed. */
    auth_chunked_t *c = auth_chunked_new(&a);
    CHECK(auth_chunked_feed(c, "zz\r\n", 4, sink_cb, &s, msg, sizeof msg) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(auth_chunked_feed(c, "0\r\n\r\n", 5, sink_cb, &s, msg, sizeof msg) ==
          S3_ERR_INCOMPLETE_BODY);
    CHECK(auth_chunked_finish(c, msg, sizeof msg) == S3_ERR_INCOMPLETE_BODY);
    auth_chunked_free(c);
    auth_chunked_free(NULL);
    wh_sbuf_free(&b);

    /* Not a streaming mode: no decoder. */
    a.mode = AUTH_PAYLOAD_SHA256;
    CHECK(auth_chunked_new(&a) == NULL);
    a.mode = AUTH_PAYLOAD_UNSIGNED;
    CHECK(auth_chunked_new(&a) == NULL);
}

/* The client's side and the server's side together: sign, verify, encode, decode. */
static void test_round_trip(void)
{
    time_t when;
    wh_amz_date_parse("20240601T120000Z", &when);
    char amz[17];
    wh_amz_date(when, amz);
    const char *hn[] = {"host", "x-amz-date", "x-amz-content-sha256", "content-encoding",
                        "x-amz-decoded-content-length"};
    const char *hv[] = {"127.0.0.1:9000", amz, AUTH_STREAMING_SIGNED, "aws-chunked", "300000"};
    auth_sign_input_t in = {.method = "PUT",
                            .canonical_uri = "/b/k",
                            .header_names = hn,
                            .header_values = hv,
                            .n_headers = 5,
                            .payload_hash = AUTH_STREAMING_SIGNED,
                            .access_key = "AKIAIOSFODNN7EXAMPLE",
                            .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                            .region = "eu-west-1",
                            .when = when};
    char authz[512];
    CHECK(auth_sigv4_sign(&in, authz, sizeof authz) == 0);
    const char *hdrs[] = {"host",
                          hv[0],
                          "x-amz-date",
                          amz,
                          "x-amz-content-sha256",
                          hv[2],
                          "content-encoding",
                          hv[3],
                          "x-amz-decoded-content-length",
                          hv[4],
                          "authorization",
                          authz,
                          NULL,
                          NULL};
    auth_http_req_t r = {
        .method = "PUT", .path = "/b/k", .get_header = treq_get, .header_at = treq_at, .arg = hdrs};
    auth_auth_t a;
    char msg[256];
    CHECK(auth_sigv4_verify(&r, secret_of, NULL, when, &a, msg, sizeof msg) == S3_OK);

    /* Encode 300000 bytes in chunks of 65536 (last one shorter), signing with our own key. */
    size_t total = 300000;
    char *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (char)(rnd() & 0xff);
    uint8_t key[32];
    auth_sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20240601", "eu-west-1",
                           key);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    char prev[65], sig[65];
    memcpy(prev, a.signature, 65);
    for (size_t off = 0;; off += 65536) {
        size_t n = off >= total ? 0 : WH_MIN(65536, total - off);
        auth_chunk_signature(key, a.amz_date, a.scope, prev, data + off, n, sig);
        wh_sbuf_printf(&b, "%zx;chunk-signature=%s\r\n", n, sig);
        wh_sbuf_append(&b, data + off, n);
        wh_sbuf_puts(&b, "\r\n");
        memcpy(prev, sig, 65);
        if (n == 0)
            break;
    }
    sink_t s = {0};
    CHECK(decode(&a, b.data, b.len, SPLIT_BYTE, &s, msg, sizeof msg, NULL) == S3_OK);
    CHECK(s.out.len == total && memcmp(s.out.data, data, total) == 0);
    wh_sbuf_free(&s.out);
    /* The same body under a different secret's key fails at chunk 1. */
    auth_auth_t other = a;
    other.signing_key[0] ^= 1;
    CHECK(decode(&other, b.data, b.len, SPLIT_RANDOM, &s, msg, sizeof msg, NULL) ==
          S3_ERR_SIGNATURE_MISMATCH);
    CHECK(strstr(msg, "chunk 1 ") != NULL);
    wh_sbuf_free(&s.out);
    wh_sbuf_free(&b);
    free(data);
}

int main(void)
{
    RUN(test_doc_example);
    RUN(test_doc_trailer);
    RUN(test_unsigned_trailer);
    RUN(test_round_trip);
    return check_done();
}
