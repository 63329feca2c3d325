/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for S3 checksum negotiation (src/shared/s3/checksum.c). The input is
 * "headers\n\ntrailers\n\nbody": header and trailer sections are "name:value" lines. It reads
 * the claims (s3_sums_read), asks which algorithms are named (s3_sum_named), checks the
 * declared trailers arrived (s3_trailers_check), digests the body with every algorithm and
 * compares. A failure always says why; a claim that was read always round-trips through its
 * canonical base64; a body always matches its own digests. */
#include "base/codec.h"
#include "s3/checksum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXH 32

typedef struct kv {
    char *name[MAXH];
    char *value[MAXH];
    size_t n;
} kv_t;

static const char *kv_get(void *arg, const char *lname)
{
    const kv_t *k = arg;
    for (size_t i = 0; i < k->n; i++)
        if (strcasecmp(k->name[i], lname) == 0)
            return k->value[i];
    return NULL;
}

typedef struct both {
    kv_t h, t;
} both_t;

static const char *hdr_cb(void *arg, const char *lname)
{
    return kv_get(&((both_t *)arg)->h, lname);
}

static const char *trl_cb(void *arg, const char *lname)
{
    return kv_get(&((both_t *)arg)->t, lname);
}

/* Splits s (modified in place) into lines of "name:value". */
static void kv_parse(char *s, kv_t *k)
{
    for (char *line = s; line && *line && k->n < MAXH;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *c = strchr(line, ':');
        if (c) {
            *c = '\0';
            k->name[k->n] = line;
            k->value[k->n] = c + 1;
            k->n++;
        }
        line = nl ? nl + 1 : NULL;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    both_t b;
    memset(&b, 0, sizeof b);
    const uint8_t *body = data;
    size_t body_len = size;
    char *sep = strstr(buf, "\n\n");
    if (sep) {
        *sep = '\0';
        char *trl = sep + 2;
        char *sep2 = strstr(trl, "\n\n");
        if (sep2) {
            *sep2 = '\0';
            body = data + (size_t)(sep2 + 2 - buf);
            body_len = size - (size_t)(sep2 + 2 - buf);
        } else {
            body_len = 0;
        }
        kv_parse(buf, &b.h);
        kv_parse(trl, &b.t);
    }

    s3_sums_t w;
    char msg[200] = "";
    s3_err_t e = s3_sums_read(hdr_cb, b.t.n ? trl_cb : NULL, &b, &w, msg, sizeof msg);
    if (e != S3_OK && !msg[0])
        abort();
    if (e == S3_OK) {
        for (int i = 0; i < S3_SUM__COUNT; i++) {
            if (!w.set[i])
                continue;
            uint8_t d[S3_SUM_MAX_LEN + 8];
            if (wh_base64_decode(w.b64[i], strlen(w.b64[i]), d, sizeof d) !=
                    (long)s3_sum_len((s3_sum_t)i) ||
                memcmp(d, w.val[i], s3_sum_len((s3_sum_t)i)) != 0)
                abort();
        }
    }
    bool on[S3_SUM__COUNT];
    for (int i = 0; i < S3_SUM__COUNT; i++)
        on[i] = s3_sum_named(hdr_cb, &b, (s3_sum_t)i) || (size & 1);
    msg[0] = '\0';
    if (s3_trailers_check(kv_get(&b.h, "x-amz-trailer"), trl_cb, &b, msg, sizeof msg) != S3_OK &&
        !msg[0])
        abort();

    s3_sum_ctx_t c;
    if (s3_sum_ctx_init(&c, on) == 0) {
        size_t half = body_len / 2;
        s3_sum_ctx_update(&c, body, half);
        s3_sum_ctx_update(&c, body + half, body_len - half);
        uint8_t got[S3_SUM__COUNT][S3_SUM_MAX_LEN];
        s3_sum_ctx_final(&c, got);
        /* the body matches a claim made of its own digests */
        s3_sums_t self;
        memset(&self, 0, sizeof self);
        for (int i = 0; i < S3_SUM__COUNT; i++) {
            self.set[i] = on[i];
            memcpy(self.val[i], got[i], S3_SUM_MAX_LEN);
            wh_base64_encode(got[i], s3_sum_len((s3_sum_t)i), self.b64[i]);
            if (s3_sums_compare(&self, (s3_sum_t)i, got[i], msg, sizeof msg) != S3_OK)
                abort();
            msg[0] = '\0';
            if (e == S3_OK && s3_sums_compare(&w, (s3_sum_t)i, got[i], msg, sizeof msg) != S3_OK &&
                !msg[0])
                abort();
        }
        s3_sum_ctx_free(&c); /* after final: must be harmless */
    }
    free(buf);
    return 0;
}
