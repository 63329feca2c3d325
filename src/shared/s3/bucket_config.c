/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket configuration documents (bucket_config.h). */
#include "s3/bucket_config.h"
#include "s3/xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- CORS ---- */

static void rule_free(s3_cors_rule_t *r)
{
    free(r->id);
    for (size_t i = 0; i < r->norigins; i++)
        free(r->origins[i]);
    for (size_t i = 0; i < r->nheaders; i++)
        free(r->headers[i]);
    for (size_t i = 0; i < r->nexpose; i++)
        free(r->expose[i]);
    free(r->origins);
    free(r->headers);
    free(r->expose);
    memset(r, 0, sizeof *r);
}

void s3_cors_free(s3_cors_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        rule_free(&c->rules[i]);
    free(c->rules);
    memset(c, 0, sizeof *c);
}

unsigned s3_cors_method_bit(const char *m)
{
    static const struct {
        const char *name;
        unsigned bit;
    } t[] = {{"GET", S3_CORS_GET},
             {"PUT", S3_CORS_PUT},
             {"HEAD", S3_CORS_HEAD},
             {"POST", S3_CORS_POST},
             {"DELETE", S3_CORS_DELETE}};
    for (size_t i = 0; m && i < sizeof t / sizeof t[0]; i++)
        if (strcmp(m, t[i].name) == 0)
            return t[i].bit;
    return 0;
}

typedef struct {
    s3_cors_t *c;
    s3_cors_rule_t cur;
    bool in_rule;
    s3_err_t err;
    char *msg;
    size_t msglen;
    bool other_root;
} cors_x_t;

static int push(char ***arr, size_t *n, const char *text, size_t len, const char *what, cors_x_t *x)
{
    if (*n >= S3_CORS_MAX_ITEMS) {
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "a CORSRule has more than %d %s elements", S3_CORS_MAX_ITEMS, what);
        return -1;
    }
    if (len == 0 || len > S3_CORS_MAX_ITEM || memchr(text, '\0', len)) {
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "a CORSRule's %s is empty, longer than %d bytes or holds NUL", what,
                         S3_CORS_MAX_ITEM);
        return -1;
    }
    char **a = realloc(*arr, (*n + 1) * sizeof *a);
    if (!a || !(a[*n] = strndup(text, len))) {
        if (a)
            *arr = a;
        x->err = S3_ERR_INTERNAL;
        return -1;
    }
    *arr = a;
    (*n)++;
    return 0;
}

static size_t count_stars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '*';
    return n;
}

static void cors_cb(void *arg, const char *path, const char *text, size_t len)
{
    cors_x_t *x = arg;
    if (x->err != S3_OK)
        return;
    if (strncmp(path, "CORSConfiguration", 17) != 0 || (path[17] && path[17] != '/')) {
        x->other_root = true;
        return;
    }
    const char *p = path + 17;
    if (!*p)
        return;
    if (strncmp(p, "/CORSRule", 9) != 0 || (p[9] && p[9] != '/')) {
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "CORSConfiguration holds %s; only CORSRule elements are allowed", p + 1);
        return;
    }
    s3_cors_rule_t *r = &x->cur;
    const char *f = p + 9;
    if (!*f) { /* the end of one CORSRule */
        if (!r->norigins || !r->methods) {
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "a CORSRule needs at least one AllowedOrigin and one AllowedMethod");
            return;
        }
        if (x->c->n >= S3_CORS_MAX_RULES) {
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "a CORS configuration holds at most %d rules", S3_CORS_MAX_RULES);
            return;
        }
        s3_cors_rule_t *rs = realloc(x->c->rules, (x->c->n + 1) * sizeof *rs);
        if (!rs) {
            x->err = S3_ERR_INTERNAL;
            return;
        }
        x->c->rules = rs;
        rs[x->c->n++] = *r;
        memset(r, 0, sizeof *r);
        r->max_age = -1;
        return;
    }
    if (!strcmp(f, "/AllowedOrigin")) {
        if (push(&r->origins, &r->norigins, text, len, "AllowedOrigin", x) == 0 &&
            count_stars(r->origins[r->norigins - 1]) > 1)
            x->err = s3_errf(S3_ERR_INVALID_REQUEST, x->msg, x->msglen,
                             "AllowedOrigin \"%s\" can not have more than one wildcard.",
                             r->origins[r->norigins - 1]);
    } else if (!strcmp(f, "/AllowedHeader")) {
        if (push(&r->headers, &r->nheaders, text, len, "AllowedHeader", x) == 0 &&
            count_stars(r->headers[r->nheaders - 1]) > 1)
            x->err = s3_errf(S3_ERR_INVALID_REQUEST, x->msg, x->msglen,
                             "AllowedHeader \"%s\" can not have more than one wildcard.",
                             r->headers[r->nheaders - 1]);
    } else if (!strcmp(f, "/ExposeHeader")) {
        push(&r->expose, &r->nexpose, text, len, "ExposeHeader", x);
    } else if (!strcmp(f, "/AllowedMethod")) {
        char m[16];
        unsigned bit = 0;
        if (len < sizeof m) {
            memcpy(m, text, len);
            m[len] = '\0';
            bit = s3_cors_method_bit(m);
        }
        if (!bit)
            x->err = s3_errf(S3_ERR_INVALID_REQUEST, x->msg, x->msglen,
                             "Found unsupported HTTP method in CORS config. Unsupported method is "
                             "%.*s (GET, PUT, HEAD, POST and DELETE are)",
                             (int)(len > 32 ? 32 : len), text);
        r->methods |= bit;
    } else if (!strcmp(f, "/MaxAgeSeconds")) {
        long v = 0;
        size_t i = 0;
        for (; i < len && i < 10 && text[i] >= '0' && text[i] <= '9'; i++)
            v = v * 10 + (text[i] - '0');
        if (len == 0 || i != len)
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "MaxAgeSeconds must be a whole number of seconds");
        r->max_age = v;
    } else if (!strcmp(f, "/ID")) {
        if (len > 255 || r->id || !(r->id = strndup(text, len)))
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "a CORSRule's ID is given twice or longer than 255 characters");
    } else {
        x->err =
            s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen, "unknown CORSRule element %s", f + 1);
    }
}

s3_err_t s3_cors_parse(const char *xml, size_t len, s3_cors_t *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (msg && msglen)
        msg[0] = '\0';
    cors_x_t x = {.c = out, .err = S3_OK, .msg = msg, .msglen = msglen};
    x.cur.max_age = -1;
    if (s3_xml_walk(xml, len, cors_cb, &x) != 0 && x.err == S3_OK)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the CORS configuration is not "
                        "well-formed XML");
    if (x.err == S3_OK && x.other_root)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the document is not a "
                        "CORSConfiguration");
    if (x.err == S3_OK && out->n == 0)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "a CORSConfiguration needs at least "
                        "one CORSRule");
    rule_free(&x.cur);
    if (x.err != S3_OK)
        s3_cors_free(out);
    return x.err;
}

void s3_cors_format(const s3_cors_t *c, wh_sbuf_t *b, const char *xmlns)
{
    static const char *const names[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};
    wh_sbuf_printf(b, "<CORSConfiguration xmlns=\"%s\">", xmlns);
    for (size_t i = 0; i < c->n; i++) {
        const s3_cors_rule_t *r = &c->rules[i];
        wh_sbuf_puts(b, "<CORSRule>");
        if (r->id)
            s3_xml_elem(b, "ID", r->id);
        for (size_t j = 0; j < r->norigins; j++)
            s3_xml_elem(b, "AllowedOrigin", r->origins[j]);
        for (size_t j = 0; j < 5; j++)
            if (r->methods & (1u << j))
                s3_xml_elem(b, "AllowedMethod", names[j]);
        for (size_t j = 0; j < r->nheaders; j++)
            s3_xml_elem(b, "AllowedHeader", r->headers[j]);
        for (size_t j = 0; j < r->nexpose; j++)
            s3_xml_elem(b, "ExposeHeader", r->expose[j]);
        if (r->max_age >= 0)
            s3_xml_elem_u64(b, "MaxAgeSeconds", (uint64_t)r->max_age);
        wh_sbuf_puts(b, "</CORSRule>");
    }
    wh_sbuf_puts(b, "</CORSConfiguration>");
}

/* pattern (at most one '*') against s, case-sensitive or not. */
static bool wild_match(const char *pat, const char *s, size_t slen, bool nocase)
{
    const char *star = strchr(pat, '*');
    int (*cmp)(const char *, const char *, size_t) = nocase ? strncasecmp : strncmp;
    if (!star)
        return strlen(pat) == slen && cmp(pat, s, slen) == 0;
    size_t pre = (size_t)(star - pat), post = strlen(star + 1);
    return slen >= pre + post && cmp(pat, s, pre) == 0 && cmp(star + 1, s + slen - post, post) == 0;
}

static bool header_allowed(const s3_cors_rule_t *r, const char *h, size_t hl)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (wild_match(r->headers[i], h, hl, true))
            return true;
    return false;
}

const s3_cors_rule_t *s3_cors_match(const s3_cors_t *c, const char *origin, unsigned method,
                                    const char *req_headers)
{
    if (!c || !origin || !*origin || !method)
        return NULL;
    for (size_t i = 0; i < c->n; i++) {
        const s3_cors_rule_t *r = &c->rules[i];
        if (!(r->methods & method))
            continue;
        bool ok = false;
        for (size_t j = 0; j < r->norigins && !ok; j++)
            ok = wild_match(r->origins[j], origin, strlen(origin), false);
        if (!ok)
            continue;
        /* Every requested header must be allowed. */
        const char *p = req_headers ? req_headers : "";
        while (ok && *p) {
            while (*p == ' ' || *p == '\t' || *p == ',')
                p++;
            size_t n = strcspn(p, ",");
            size_t e = n;
            while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t'))
                e--;
            if (e > 0)
                ok = header_allowed(r, p, e);
            p += n;
        }
        if (ok)
            return r;
    }
    return NULL;
}

/* ---- PublicAccessBlock and OwnershipControls: flat documents ---- */

typedef struct {
    const char *root;
    unsigned bits, seen;
    unsigned own;
    s3_err_t err;
    char *msg;
    size_t msglen;
    bool other_root;
} flat_x_t;

static int parse_bool(const char *t, size_t len, bool *v)
{
    if (len == 4 && strncasecmp(t, "true", 4) == 0)
        *v = true;
    else if (len == 5 && strncasecmp(t, "false", 5) == 0)
        *v = false;
    else
        return -1;
    return 0;
}

static void pab_cb(void *arg, const char *path, const char *text, size_t len)
{
    flat_x_t *x = arg;
    static const struct {
        const char *name;
        unsigned bit;
    } f[] = {{"BlockPublicAcls", S3_PAB_BLOCK_PUBLIC_ACLS},
             {"IgnorePublicAcls", S3_PAB_IGNORE_PUBLIC_ACLS},
             {"BlockPublicPolicy", S3_PAB_BLOCK_PUBLIC_POLICY},
             {"RestrictPublicBuckets", S3_PAB_RESTRICT_PUBLIC_BUCKETS}};
    const char *root = "PublicAccessBlockConfiguration";
    size_t rl = strlen(root);
    if (x->err != S3_OK)
        return;
    if (strncmp(path, root, rl) != 0 || (path[rl] && path[rl] != '/')) {
        x->other_root = true;
        return;
    }
    if (!path[rl])
        return;
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(path + rl + 1, f[i].name) == 0) {
            bool v;
            if ((x->seen & f[i].bit) || parse_bool(text, len, &v) != 0) {
                x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                                 "%s must be given once, as true or false", f[i].name);
                return;
            }
            x->seen |= f[i].bit;
            if (v)
                x->bits |= f[i].bit;
            return;
        }
    }
    x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                     "unknown element %s in PublicAccessBlockConfiguration", path + rl + 1);
}

s3_err_t s3_pab_parse(const char *xml, size_t len, unsigned *bits, char *msg, size_t msglen)
{
    flat_x_t x = {.err = S3_OK, .msg = msg, .msglen = msglen};
    if (msg && msglen)
        msg[0] = '\0';
    if (s3_xml_walk(xml, len, pab_cb, &x) != 0 && x.err == S3_OK)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen, "the document is not well-formed XML");
    if (x.err == S3_OK && x.other_root)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the document is not a PublicAccessBlockConfiguration");
    if (x.err == S3_OK)
        *bits = x.bits;
    return x.err;
}

void s3_pab_format(unsigned bits, wh_sbuf_t *b, const char *xmlns)
{
    wh_sbuf_printf(b,
                   "<PublicAccessBlockConfiguration xmlns=\"%s\">"
                   "<BlockPublicAcls>%s</BlockPublicAcls>"
                   "<IgnorePublicAcls>%s</IgnorePublicAcls>"
                   "<BlockPublicPolicy>%s</BlockPublicPolicy>"
                   "<RestrictPublicBuckets>%s</RestrictPublicBuckets>"
                   "</PublicAccessBlockConfiguration>",
                   xmlns, bits & S3_PAB_BLOCK_PUBLIC_ACLS ? "true" : "false",
                   bits & S3_PAB_IGNORE_PUBLIC_ACLS ? "true" : "false",
                   bits & S3_PAB_BLOCK_PUBLIC_POLICY ? "true" : "false",
                   bits & S3_PAB_RESTRICT_PUBLIC_BUCKETS ? "true" : "false");
}

static const char *const g_own_names[] = {NULL, "ObjectWriter", "BucketOwnerPreferred",
                                          "BucketOwnerEnforced"};

static void own_cb(void *arg, const char *path, const char *text, size_t len)
{
    flat_x_t *x = arg;
    if (x->err != S3_OK)
        return;
    if (strncmp(path, "OwnershipControls", 17) != 0 || (path[17] && path[17] != '/')) {
        x->other_root = true;
        return;
    }
    if (!strcmp(path, "OwnershipControls") || !strcmp(path, "OwnershipControls/Rule"))
        return;
    if (strcmp(path, "OwnershipControls/Rule/ObjectOwnership") != 0) {
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "unknown element %s in OwnershipControls", path + 18);
        return;
    }
    if (x->seen++) {
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "OwnershipControls holds exactly one Rule with one ObjectOwnership");
        return;
    }
    for (unsigned i = 1; i < 4; i++)
        if (strlen(g_own_names[i]) == len && memcmp(g_own_names[i], text, len) == 0) {
            x->own = i;
            return;
        }
    x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                     "ObjectOwnership must be BucketOwnerEnforced, BucketOwnerPreferred or "
                     "ObjectWriter");
}

static const char *const g_sse_names[] = {NULL, "AES256", "aws:kms", "aws:kms:dsse"};
#define SSE_ROOT "ServerSideEncryptionConfiguration"
#define SSE_RULE SSE_ROOT "/Rule"
#define SSE_DEF SSE_RULE "/ApplyServerSideEncryptionByDefault"

static void sse_cb(void *arg, const char *path, const char *text, size_t len)
{
    flat_x_t *x = arg;
    size_t rl = strlen(SSE_ROOT);
    if (x->err != S3_OK)
        return;
    if (strncmp(path, SSE_ROOT, rl) != 0 || (path[rl] && path[rl] != '/')) {
        x->other_root = true;
        return;
    }
    if (!strcmp(path, SSE_ROOT))
        return;
    if (!strcmp(path, SSE_RULE)) {
        if (x->seen & 8) {
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "ServerSideEncryptionConfiguration holds exactly one Rule");
            return;
        }
        x->seen |= 8;
        return;
    }
    if (!strcmp(path, SSE_DEF))
        return;
    if (!strcmp(path, SSE_DEF "/SSEAlgorithm")) {
        if (x->seen & 1) {
            x->err =
                s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen, "SSEAlgorithm must be given once");
            return;
        }
        x->seen |= 1;
        for (unsigned i = 1; i < 4; i++)
            if (strlen(g_sse_names[i]) == len && memcmp(g_sse_names[i], text, len) == 0) {
                x->bits = i;
                return;
            }
        x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                         "SSEAlgorithm must be AES256, aws:kms or aws:kms:dsse");
        return;
    }
    if (!strcmp(path, SSE_DEF "/KMSMasterKeyID")) {
        x->seen |= 2;
        return;
    }
    if (!strcmp(path, SSE_RULE "/BucketKeyEnabled")) {
        bool v;
        if ((x->seen & 4) || parse_bool(text, len, &v) != 0)
            x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                             "BucketKeyEnabled must be given once, as true or false");
        x->seen |= 4;
        return;
    }
    x->err = s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen,
                     "unknown element %.200s in ServerSideEncryptionConfiguration", path + rl + 1);
}

s3_err_t s3_encryption_parse(const char *xml, size_t len, unsigned *alg, char *msg, size_t msglen)
{
    flat_x_t x = {.err = S3_OK, .msg = msg, .msglen = msglen};
    if (msg && msglen)
        msg[0] = '\0';
    if (s3_xml_walk(xml, len, sse_cb, &x) != 0 && x.err == S3_OK)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen, "the document is not well-formed XML");
    if (x.err == S3_OK && x.other_root)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the document is not a ServerSideEncryptionConfiguration");
    if (x.err == S3_OK && !(x.seen & 1))
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "ServerSideEncryptionConfiguration needs a Rule with "
                        "ApplyServerSideEncryptionByDefault/SSEAlgorithm");
    if (x.err == S3_OK && (x.seen & 2) && x.bits == S3_SSE_AES256)
        x.err = s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                        "KMSMasterKeyID is allowed only with SSEAlgorithm aws:kms");
    if (x.err == S3_OK)
        *alg = x.bits;
    return x.err;
}

void s3_encryption_format(unsigned alg, wh_sbuf_t *b, const char *xmlns)
{
    wh_sbuf_printf(b,
                   "<ServerSideEncryptionConfiguration xmlns=\"%s\"><Rule>"
                   "<ApplyServerSideEncryptionByDefault><SSEAlgorithm>%s</SSEAlgorithm>"
                   "</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false"
                   "</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>",
                   xmlns, alg >= 1 && alg <= 3 ? g_sse_names[alg] : "AES256");
}

s3_err_t s3_ownership_parse(const char *xml, size_t len, unsigned *own, char *msg, size_t msglen)
{
    flat_x_t x = {.err = S3_OK, .msg = msg, .msglen = msglen};
    if (msg && msglen)
        msg[0] = '\0';
    if (s3_xml_walk(xml, len, own_cb, &x) != 0 && x.err == S3_OK)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen, "the document is not well-formed XML");
    if (x.err == S3_OK && x.other_root)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen, "the document is not OwnershipControls");
    if (x.err == S3_OK && !x.own)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "OwnershipControls needs a Rule with an ObjectOwnership");
    if (x.err == S3_OK)
        *own = x.own;
    return x.err;
}

void s3_ownership_format(unsigned own, wh_sbuf_t *b, const char *xmlns)
{
    wh_sbuf_printf(b,
                   "<OwnershipControls xmlns=\"%s\"><Rule><ObjectOwnership>%s"
                   "</ObjectOwnership></Rule></OwnershipControls>",
                   xmlns, own >= 1 && own <= 3 ? g_own_names[own] : "ObjectWriter");
}
