/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the POST Object parsers: the streaming multipart/form-data parser
 * (src/shared/s3/form.c), the Content-Type boundary parameter, and the POST policy document
 * (src/shared/auth/post_policy.c). The first byte picks: bit 7 the policy, bit 6 the boundary, else
 * the form with boundary "XyZ", parsed at once and again in pieces of (byte % 31) + 1: both
 * must give the same events and status, and no part's bytes may hold the delimiter. */
#include "base/util.h"
#include "s3/form.h"
#include "auth/post_policy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct log {
    wh_sbuf_t ev;   /* every event */
    wh_sbuf_t part; /* the current part's bytes */
    int parts;
} log_t;

static s3_err_t on_begin(void *arg, const s3_form_part_t *p)
{
    log_t *l = arg;
    if (!p->name || !*p->name)
        abort(); /* the parser promises a name */
    wh_sbuf_printf(&l->ev, "B%s|%s|%s\n", p->name, p->filename ? p->filename : "",
                   p->content_type ? p->content_type : "");
    l->part.len = 0;
    /* A part named "stop" is refused, as a handler refuses a form. */
    return strcmp(p->name, "stop") == 0 ? S3_ERR_ACCESS_DENIED : S3_OK;
}

static s3_err_t on_data(void *arg, const void *p, size_t n)
{
    log_t *l = arg;
    wh_sbuf_append(&l->ev, p, n);
    wh_sbuf_append(&l->part, p, n);
    return S3_OK;
}

static s3_err_t on_end(void *arg)
{
    log_t *l = arg;
    if (l->part.len && memmem(l->part.data, l->part.len, "\r\n--XyZ", 7))
        abort();
    wh_sbuf_puts(&l->ev, "\nE\n");
    l->part.len = 0;
    return S3_OK;
}

static s3_err_t run(const char *in, size_t len, size_t piece, log_t *l)
{
    static const s3_form_cb_t cb = {on_begin, on_data, on_end};
    wh_sbuf_init(&l->ev);
    wh_sbuf_init(&l->part);
    s3_form_t *f = s3_form_new("XyZ", &cb, l);
    if (!f)
        abort();
    char msg[256];
    s3_err_t e = S3_OK;
    for (size_t i = 0; i < len && e == S3_OK;) {
        size_t k = piece && piece < len - i ? piece : len - i;
        msg[0] = '\0';
        e = s3_form_feed(f, in + i, k, msg, sizeof msg);
        if (e == S3_ERR_MALFORMED_POST_REQUEST && !msg[0])
            abort(); /* every refusal names its fault */
        i += k;
    }
    if (e == S3_OK)
        e = s3_form_finish(f, msg, sizeof msg);
    s3_form_free(f);
    wh_sbuf_free(&l->part);
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    char msg[256] = "";
    if (data[0] & 0x80) {
        static const auth_post_field_t fields[] = {
            {"key", "user/a"}, {"Content-Type", "image/png"}, {"acl", "private"},
            {"policy", "p"},   {"x-amz-signature", "s"},      {"x-amz-meta-m", ""},
        };
        auth_post_range_t r;
        s3_err_t e = auth_post_policy_check(in, len, 1700000000, "bucket", fields,
                                            sizeof fields / sizeof fields[0], &r, msg, sizeof msg);
        if (e != S3_OK && !msg[0])
            abort();
        if (e == S3_OK && r.set && r.min > r.max)
            abort();
        return 0;
    }
    if (data[0] & 0x40) {
        char *ct = malloc(len + 1);
        if (!ct)
            return 0;
        memcpy(ct, in, len);
        ct[len] = '\0';
        char b[S3_FORM_BOUNDARY_MAX + 1];
        if (s3_form_boundary(ct, b, msg, sizeof msg) == S3_OK) {
            size_t bl = strlen(b);
            if (bl == 0 || bl > S3_FORM_BOUNDARY_MAX || strpbrk(b, "\r\n"))
                abort();
            static const s3_form_cb_t cb = {0};
            s3_form_t *f = s3_form_new(b, &cb, NULL);
            if (!f)
                abort();
            s3_form_free(f);
        } else if (!msg[0]) {
            abort();
        }
        free(ct);
        return 0;
    }
    log_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    s3_err_t ea = run(in, len, 0, &a);
    s3_err_t eb = run(in, len, (size_t)(data[0] % 31) + 1, &b);
    if (ea != eb || a.ev.len != b.ev.len || (a.ev.len && memcmp(a.ev.data, b.ev.data, a.ev.len)))
        abort();
    wh_sbuf_free(&a.ev);
    wh_sbuf_free(&b.ev);
    return 0;
}
