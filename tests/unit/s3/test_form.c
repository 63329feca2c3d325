/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/shared/s3/form.c: multipart/form-data as it streams in (the same events whatever the
 * pieces), delimiter look-alikes inside a file, preamble, padding and epilogue, the refusals,
 * and the Content-Type boundary parameter. */
#include "check.h"
#include "base/util.h"
#include "s3/form.h"

#include <stdio.h>
#include <string.h>

/* Every event as text: "B name|filename|ctype\n", data bytes as they come, "E\n". */
typedef struct events {
    wh_sbuf_t log;
    int stop_at_begin; /* 1-based part number whose begin fails, 0: none */
    int parts;
} events_t;

static s3_err_t on_begin(void *arg, const s3_form_part_t *p)
{
    events_t *e = arg;
    if (++e->parts == e->stop_at_begin)
        return S3_ERR_ACCESS_DENIED;
    wh_sbuf_printf(&e->log, "B %s|%s|%s\n", p->name, p->filename ? p->filename : "-",
                   p->content_type ? p->content_type : "-");
    return S3_OK;
}

static s3_err_t on_data(void *arg, const void *p, size_t n)
{
    events_t *e = arg;
    wh_sbuf_append(&e->log, p, n);
    return S3_OK;
}

static s3_err_t on_end(void *arg)
{
    wh_sbuf_puts(&((events_t *)arg)->log, "\nE\n");
    return S3_OK;
}

static const s3_form_cb_t g_cb = {on_begin, on_data, on_end};

/* Parses body in pieces of piece bytes (0: all at once); the log in out (caller frees). */
static s3_err_t parse(const char *body, size_t n, size_t piece, wh_sbuf_t *out, char *msg)
{
    events_t e;
    memset(&e, 0, sizeof e);
    wh_sbuf_init(&e.log);
    s3_form_t *f = s3_form_new("XyZ", &g_cb, &e);
    s3_err_t r = S3_OK;
    for (size_t i = 0; i < n && r == S3_OK;) {
        size_t k = piece && piece < n - i ? piece : n - i;
        r = s3_form_feed(f, body + i, k, msg, 200);
        i += k;
    }
    if (r == S3_OK)
        r = s3_form_finish(f, msg, 200);
    s3_form_free(f);
    *out = e.log;
    return r;
}

static const char g_form[] =
    "preamble to ignore\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"key\"\r\n\r\n"
    "user/${filename}\r\n"
    "--XyZ  \r\n" /* transport padding */
    "content-disposition: form-data; name=acl\r\n\r\n"
    "private\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"a \\\"q\\\".bin\"\r\n"
    "Content-Type: image/png\r\n\r\n"
    "\r\n--XyQ \r\r\n--Xy\r\n-\r\n-XyZZ " /* delimiter look-alikes: data */
    "\r\n--XyZ--\r\n"
    "epilogue --XyZ ignored";

static const char g_want[] = "B key|-|-\nuser/${filename}\nE\n"
                             "B acl|-|-\nprivate\nE\n"
                             "B file|a \"q\".bin|image/png\n"
                             "\r\n--XyQ \r\r\n--Xy\r\n-\r\n-XyZZ \nE\n";

static void test_pieces(void)
{
    wh_sbuf_t log;
    char msg[200] = "";
    /* Every piece size gives the same events: delimiters split across feeds. */
    for (size_t piece = 0; piece <= 13; piece++) {
        CHECK(parse(g_form, strlen(g_form), piece, &log, msg) == S3_OK);
        CHECK(log.data && strcmp(log.data, g_want) == 0);
        wh_sbuf_free(&log);
    }
    /* The delimiter inside a file's bytes ends the part: what follows must be "--" or CRLF. */
    const char *bad = "--XyZ\r\nContent-Disposition: form-data; name=file\r\n\r\nab\r\n--XyZ!";
    CHECK(parse(bad, strlen(bad), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(strstr(msg, "followed by 0x21") != NULL);
    wh_sbuf_free(&log);
}

static void test_edges(void)
{
    wh_sbuf_t log;
    char msg[200] = "";
    /* The body may open with the delimiter itself; an empty file part. */
    const char *a = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n\r\n--XyZ--";
    CHECK(parse(a, strlen(a), 1, &log, msg) == S3_OK);
    CHECK_STR(log.data, "B file|-|-\n\nE\n");
    wh_sbuf_free(&log);
    /* A CR right before the delimiter is data. */
    const char *b = "--XyZ\r\nContent-Disposition: form-data; name=f\r\n\r\nx\r\r\n--XyZ--\r\n";
    CHECK(parse(b, strlen(b), 1, &log, msg) == S3_OK);
    CHECK_STR(log.data, "B f|-|-\nx\r\nE\n");
    wh_sbuf_free(&log);
}

static void test_refusals(void)
{
    wh_sbuf_t log;
    char msg[200] = "";
    const char *nofin = "--XyZ\r\nContent-Disposition: form-data; name=f\r\n\r\nabc";
    CHECK(parse(nofin, strlen(nofin), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(strstr(msg, "closing boundary") != NULL);
    wh_sbuf_free(&log);
    const char *noname = "--XyZ\r\nContent-Disposition: form-data; filename=a\r\n\r\nx\r\n--XyZ--";
    CHECK(parse(noname, strlen(noname), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(strstr(msg, "no Content-Disposition name") != NULL);
    wh_sbuf_free(&log);
    const char *nodisp = "--XyZ\r\nContent-Type: a/b\r\n\r\nx\r\n--XyZ--";
    CHECK(parse(nodisp, strlen(nodisp), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    wh_sbuf_free(&log);
    const char *attach = "--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--XyZ--";
    CHECK(parse(attach, strlen(attach), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    wh_sbuf_free(&log);
    const char *quote = "--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XyZ--";
    CHECK(parse(quote, strlen(quote), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    wh_sbuf_free(&log);
    const char *lone = "--XyZ-x";
    CHECK(parse(lone, strlen(lone), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    wh_sbuf_free(&log);
    const char *crnolf = "--XyZ\rx";
    CHECK(parse(crnolf, strlen(crnolf), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    wh_sbuf_free(&log);
    /* A header section past the cap. */
    static char big[S3_FORM_PART_HEADER_MAX + 200];
    size_t n = (size_t)snprintf(big, sizeof big, "--XyZ\r\nX-Pad: ");
    memset(big + n, 'a', S3_FORM_PART_HEADER_MAX);
    n += S3_FORM_PART_HEADER_MAX;
    memcpy(big + n, "\r\n\r\n", 5);
    CHECK(parse(big, strlen(big), 0, &log, msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(strstr(msg, "header section exceeds") != NULL);
    wh_sbuf_free(&log);
    /* A callback's refusal is passed up as is, and the parser stays stopped. */
    events_t e;
    memset(&e, 0, sizeof e);
    wh_sbuf_init(&e.log);
    e.stop_at_begin = 2;
    s3_form_t *f = s3_form_new("XyZ", &g_cb, &e);
    CHECK(s3_form_feed(f, g_form, strlen(g_form), msg, sizeof msg) == S3_ERR_ACCESS_DENIED);
    CHECK(s3_form_feed(f, "x", 1, msg, sizeof msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(s3_form_finish(f, msg, sizeof msg) != S3_OK);
    s3_form_free(f);
    wh_sbuf_free(&e.log);
    CHECK(s3_form_new("", &g_cb, NULL) == NULL);
}

static void test_boundary(void)
{
    char b[S3_FORM_BOUNDARY_MAX + 1], msg[200];
    CHECK(s3_form_boundary("multipart/form-data; boundary=abc", b, msg, sizeof msg) == S3_OK);
    CHECK_STR(b, "abc");
    CHECK(s3_form_boundary("Multipart/Form-Data;charset=utf-8; BOUNDARY=\"a b:c\"", b, msg,
                           sizeof msg) == S3_OK);
    CHECK_STR(b, "a b:c");
    CHECK(s3_form_boundary("multipart/form-data", b, msg, sizeof msg) ==
          S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(strstr(msg, "no boundary") != NULL);
    CHECK(s3_form_boundary(NULL, b, msg, sizeof msg) == S3_ERR_MALFORMED_POST_REQUEST);
    CHECK(s3_form_boundary("multipart/form-datax; boundary=a", b, msg, sizeof msg) != S3_OK);
    CHECK(s3_form_boundary("application/x-www-form-urlencoded", b, msg, sizeof msg) != S3_OK);
    CHECK(s3_form_boundary("multipart/form-data; boundary=\"a\rb\"", b, msg, sizeof msg) != S3_OK);
    CHECK(s3_form_boundary("multipart/form-data; boundary=\"ab \"", b, msg, sizeof msg) != S3_OK);
    CHECK(s3_form_boundary("multipart/form-data; boundary=\"\"", b, msg, sizeof msg) != S3_OK);
    CHECK(s3_form_boundary("multipart/form-data; boundary=\"abc", b, msg, sizeof msg) != S3_OK);
    char lng[200];
    snprintf(lng, sizeof lng, "multipart/form-data; boundary=%071d", 0);
    CHECK(s3_form_boundary(lng, b, msg, sizeof msg) != S3_OK);
    snprintf(lng, sizeof lng, "multipart/form-data; boundary=%070d", 0);
    CHECK(s3_form_boundary(lng, b, msg, sizeof msg) == S3_OK && strlen(b) == 70);
}

int main(void)
{
    RUN(test_pieces);
    RUN(test_edges);
    RUN(test_refusals);
    RUN(test_boundary);
    return check_done();
}
