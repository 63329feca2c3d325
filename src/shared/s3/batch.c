/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA batch's list and answer (batch.h has the grammar). Strict: a field that does not
 * match the grammar exactly is an error naming the line and the field, never a guess. */
#include "s3/batch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A decimal u64 without sign or leading zero, exactly s[0..n). */
static bool dec_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into out (cap bytes, NUL-terminated): 0, or -1 on a byte outside
 * 0x21..0x7e, a bad escape, or more than cap - 1 decoded bytes; *len the decoded length. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap, size_t *len)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e)
            return -1;
        if (c == '%') {
            if (n - i < 3)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = (unsigned char)(h << 4 | l);
            i += 2;
        }
        if (k + 1 >= cap)
            return -1;
        out[k++] = (char)c;
    }
    out[k] = '\0';
    *len = k;
    return 0;
}

static void pct_encode(const char *s, size_t n, wh_sbuf_t *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 0x20 && c < 0x7f && c != '%') {
            wh_sbuf_append(out, &s[i], 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            wh_sbuf_append(out, e, 3);
        }
    }
}

/* Splits line[0..n) at single spaces into at most max fields; the count, or max + 1 when
 * there are more (an empty field counts as a bad one: *empty set). */
static size_t split(const char *line, size_t n, const char **f, size_t *fl, size_t max, bool *empty)
{
    size_t k = 0, start = 0;
    *empty = false;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || line[i] == ' ') {
            if (i == start)
                *empty = true;
            if (k == max)
                return max + 1;
            f[k] = line + start;
            fl[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    return k;
}

void s3_batch_free(s3_batch_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free(b->e[i].key);
    free(b->e);
    memset(b, 0, sizeof *b);
}

static int cmp_off(const void *a, const void *b)
{
    const s3_batch_entry_t *x = *(const s3_batch_entry_t *const *)a;
    const s3_batch_entry_t *y = *(const s3_batch_entry_t *const *)b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

static int cmp_key(const void *a, const void *b)
{
    const s3_batch_entry_t *x = *(const s3_batch_entry_t *const *)a;
    const s3_batch_entry_t *y = *(const s3_batch_entry_t *const *)b;
    return strcmp(x->key, y->key);
}

/* Overlaps, and (PUT) keys named twice, over the parsed entries. */
/* NOLINTBEGIN(bugprone-sizeof-expression): v holds pointers, sized by its element */
static int cross_check(s3_batch_t *b, char *err, size_t errlen)
{
    s3_batch_entry_t **v = malloc(b->n * sizeof *v);
    if (!v)
        return fail(err, errlen, "out of memory checking the batch list");
    for (size_t i = 0; i < b->n; i++)
        v[i] = &b->e[i];
    qsort(v, b->n, sizeof *v, cmp_off);
    int ret = 0;
    for (size_t i = 1; i < b->n && !ret; i++)
        if (v[i - 1]->off + v[i - 1]->len > v[i]->off)
            ret =
                fail(err, errlen,
                     "batch entries overlap in the region: key '%.200s' [%" PRIu64 ", +%" PRIu64
                     ") and key '%.200s' [%" PRIu64 ", +%" PRIu64 ")",
                     v[i - 1]->key, v[i - 1]->off, v[i - 1]->len, v[i]->key, v[i]->off, v[i]->len);
    if (!ret && b->op == S3_BATCH_PUT) {
        qsort(v, b->n, sizeof *v, cmp_key);
        for (size_t i = 1; i < b->n && !ret; i++)
            if (strcmp(v[i - 1]->key, v[i]->key) == 0)
                ret = fail(err, errlen, "a PUT batch names key '%.200s' twice", v[i]->key);
    }
    free(v);
    return ret;
}
/* NOLINTEND(bugprone-sizeof-expression) */

int s3_batch_parse(const char *p, size_t n, uint64_t region, s3_batch_t *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n > S3_BATCH_MAX_LIST)
        return fail(err, errlen, "the batch list is %zu bytes; at most %u (max list bytes)", n,
                    S3_BATCH_MAX_LIST);
    const char *end = p + n;
    const char *nl = memchr(p, '\n', n);
    if (!nl)
        return fail(err, errlen, "the batch list has no first line '" S3_BATCH_MAGIC " GET|PUT'");
    size_t hl = (size_t)(nl - p);
    size_t ml = sizeof S3_BATCH_MAGIC - 1;
    if (hl < ml + 1 || memcmp(p, S3_BATCH_MAGIC " ", ml + 1) != 0)
        return fail(err, errlen,
                    "the batch list must begin with '" S3_BATCH_MAGIC " GET|PUT' (another "
                    "version of the format is not understood)");
    if (hl == ml + 4 && memcmp(p + ml + 1, "GET", 3) == 0)
        out->op = S3_BATCH_GET;
    else if (hl == ml + 4 && memcmp(p + ml + 1, "PUT", 3) == 0)
        out->op = S3_BATCH_PUT;
    else
        return fail(err, errlen, "the batch list's operation must be GET or PUT");
    /* Count the entries first: one allocation, and the bound before any work. */
    size_t lines = 0;
    for (const char *q = nl + 1; q < end;) {
        const char *e = memchr(q, '\n', (size_t)(end - q));
        if (!e)
            return fail(err, errlen, "the batch list's line %zu does not end with a newline",
                        lines + 2);
        lines++;
        q = e + 1;
    }
    if (lines == 0)
        return fail(err, errlen, "the batch list names no key");
    if (lines > S3_BATCH_MAX_KEYS)
        return fail(err, errlen, "the batch list names %zu keys; at most %u (max keys)", lines,
                    S3_BATCH_MAX_KEYS);
    out->e = calloc(lines, sizeof *out->e);
    if (!out->e)
        return fail(err, errlen, "out of memory reading the batch list");
    char key[S3_BATCH_MAX_KEY + 1];
    const char *q = nl + 1;
    for (size_t i = 0; i < lines; i++) {
        const char *e = memchr(q, '\n', (size_t)(end - q));
        size_t ln = (size_t)(e - q); /* e is not NULL: counted above */
        const char *f[4];
        size_t fl[4];
        bool empty;
        size_t nf = split(q, ln, f, fl, 4, &empty);
        size_t line = i + 2;
        s3_batch_entry_t *en = &out->e[i];
        int bad = 0;
        size_t klen = 0;
        if (nf != 4 || empty)
            bad = fail(err, errlen,
                       "batch list line %zu: want '<offset> <length> <flags> <key>' separated by "
                       "single spaces",
                       line);
        else if (!dec_u64(f[0], fl[0], &en->off))
            bad = fail(err, errlen, "batch list line %zu: offset is not a decimal number", line);
        else if (!dec_u64(f[1], fl[1], &en->len))
            bad = fail(err, errlen, "batch list line %zu: length is not a decimal number", line);
        else if (en->len == 0)
            bad = fail(err, errlen, "batch list line %zu: length must be at least 1", line);
        else if (en->len > S3_BATCH_MAX_OBJECT)
            bad = fail(err, errlen,
                       "batch list line %zu: length %" PRIu64 " exceeds %llu (max bytes per key)",
                       line, en->len, (unsigned long long)S3_BATCH_MAX_OBJECT);
        else if (en->off > UINT64_MAX - en->len ||
                 (region != UINT64_MAX && en->off + en->len > region))
            bad = fail(err, errlen,
                       "batch list line %zu: [%" PRIu64 ", +%" PRIu64
                       ") lies outside the token's region of %" PRIu64 " bytes",
                       line, en->off, en->len, region);
        else if (fl[2] != 1 || (f[2][0] != '-' && f[2][0] != 'n'))
            bad = fail(err, errlen, "batch list line %zu: flags must be '-' or 'n'", line);
        else if (f[2][0] == 'n' && out->op != S3_BATCH_PUT)
            bad = fail(err, errlen,
                       "batch list line %zu: flag 'n' (If-None-Match: *) is for PUT batches", line);
        else if (pct_decode(f[3], fl[3], key, sizeof key, &klen) != 0 || klen == 0 ||
                 memchr(key, '\0', klen))
            bad = fail(err, errlen,
                       "batch list line %zu: key is not a percent-encoded key of 1 to %u bytes",
                       line, S3_BATCH_MAX_KEY);
        if (bad) {
            out->n = i;
            s3_batch_free(out);
            return -1;
        }
        en->if_none_match = f[2][0] == 'n';
        en->key = malloc(klen + 1);
        if (!en->key) {
            out->n = i;
            s3_batch_free(out);
            return fail(err, errlen, "out of memory reading the batch list");
        }
        memcpy(en->key, key, klen + 1);
        q = e + 1;
    }
    out->n = lines;
    if (cross_check(out, err, errlen) != 0) {
        s3_batch_free(out);
        return -1;
    }
    return 0;
}

void s3_batch_format(s3_batch_op_t op, const s3_batch_entry_t *e, size_t n, wh_sbuf_t *out)
{
    wh_sbuf_printf(out, "%s %s\n", S3_BATCH_MAGIC, op == S3_BATCH_PUT ? "PUT" : "GET");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_printf(out, "%" PRIu64 " %" PRIu64 " %c ", e[i].off, e[i].len,
                       e[i].if_none_match ? 'n' : '-');
        pct_encode(e[i].key, strlen(e[i].key), out);
        wh_sbuf_puts(out, "\n");
    }
}

void s3_batch_reply_head(size_t n, wh_sbuf_t *out)
{
    wh_sbuf_printf(out, "%s %zu\n", S3_BATCH_MAGIC, n);
}

void s3_batch_reply_line(size_t index, const s3_batch_status_t *s, wh_sbuf_t *out)
{
    wh_sbuf_printf(out, "%zu %s %" PRIu64 " ", index, s->code[0] ? s->code : "InternalError",
                   s->size);
    if (s->has_crc)
        wh_sbuf_printf(out, "%016" PRIx64 " ", s->crc64nvme);
    else
        wh_sbuf_puts(out, "- ");
    if (s->etag[0])
        pct_encode(s->etag, strlen(s->etag), out);
    else
        wh_sbuf_puts(out, "-");
    wh_sbuf_puts(out, " ");
    size_t ml = strnlen(s->message, S3_BATCH_MAX_REPLY_MSG);
    if (ml)
        pct_encode(s->message, ml, out);
    else
        wh_sbuf_puts(out, "-");
    wh_sbuf_puts(out, "\n");
}

static bool hex16(const char *s, size_t n, uint64_t *out)
{
    if (n != 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int h = hexval(s[i]);
        if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
            return false;
        v = v << 4 | (uint64_t)h;
    }
    *out = v;
    return true;
}

static bool code_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 48)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

int s3_batch_reply_parse(const char *p, size_t len, size_t n, s3_batch_status_t *out, char *err,
                         size_t errlen)
{
    const char *end = p + len;
    const char *nl = memchr(p, '\n', len);
    size_t ml = sizeof S3_BATCH_MAGIC - 1;
    uint64_t cnt;
    if (!nl || (size_t)(nl - p) <= ml + 1 || memcmp(p, S3_BATCH_MAGIC " ", ml + 1) != 0 ||
        !dec_u64(p + ml + 1, (size_t)(nl - p) - ml - 1, &cnt))
        return fail(err, errlen, "the batch reply does not begin with '" S3_BATCH_MAGIC " <n>'");
    if (cnt != n)
        return fail(err, errlen, "the batch reply answers %" PRIu64 " entries, not %zu", cnt, n);
    const char *q = nl + 1;
    for (size_t i = 0; i < n; i++) {
        const char *e = q < end ? memchr(q, '\n', (size_t)(end - q)) : NULL;
        if (!e)
            return fail(err, errlen, "the batch reply ends before entry %zu", i);
        const char *f[6];
        size_t fl[6];
        bool empty;
        size_t nf = split(q, (size_t)(e - q), f, fl, 6, &empty);
        s3_batch_status_t *s = &out[i];
        memset(s, 0, sizeof *s);
        uint64_t idx;
        size_t dl;
        if (nf != 6 || empty || !dec_u64(f[0], fl[0], &idx) || idx != i || !code_ok(f[1], fl[1]) ||
            !dec_u64(f[2], fl[2], &s->size))
            return fail(err, errlen, "the batch reply's line for entry %zu is malformed", i);
        memcpy(s->code, f[1], fl[1]);
        s->code[fl[1]] = '\0';
        if (!(fl[3] == 1 && f[3][0] == '-')) {
            if (!hex16(f[3], fl[3], &s->crc64nvme))
                return fail(err, errlen, "the batch reply's crc64nvme for entry %zu is malformed",
                            i);
            s->has_crc = true;
        }
        if (!(fl[4] == 1 && f[4][0] == '-') &&
            pct_decode(f[4], fl[4], s->etag, sizeof s->etag, &dl) != 0)
            return fail(err, errlen, "the batch reply's ETag for entry %zu is malformed", i);
        if (!(fl[5] == 1 && f[5][0] == '-') &&
            pct_decode(f[5], fl[5], s->message, sizeof s->message, &dl) != 0)
            return fail(err, errlen, "the batch reply's message for entry %zu is malformed", i);
        q = e + 1;
    }
    if (q != end)
        return fail(err, errlen, "the batch reply has more than %zu entries", n);
    return 0;
}
