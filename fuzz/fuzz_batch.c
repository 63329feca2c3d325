/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the RDMA batch's list and reply parsers (s3/batch.h). The first byte
 * picks the parser, the next 8 the region size (little endian). A parsed list has every slot
 * inside the region, none overlapping, keys of 1 to S3_BATCH_MAX_KEY bytes, and formats back
 * to a list that parses to the same entries; a parsed reply formats back to the same body. */
#include "s3/batch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const char *p, size_t n, uint64_t region)
{
    s3_batch_t b;
    char err[400];
    if (s3_batch_parse(p, n, region, &b, err, sizeof err) != 0) {
        if (!err[0])
            abort();
        return;
    }
    if (b.n == 0 || b.n > S3_BATCH_MAX_KEYS)
        abort();
    for (size_t i = 0; i < b.n; i++) {
        const s3_batch_entry_t *e = &b.e[i];
        size_t kl = strlen(e->key);
        if (e->len == 0 || e->len > S3_BATCH_MAX_OBJECT || e->off + e->len > region ||
            e->off + e->len < e->off || kl == 0 || kl > S3_BATCH_MAX_KEY)
            abort();
        for (size_t k = 0; k < i; k++)
            if (b.e[k].off < e->off + e->len && e->off < b.e[k].off + b.e[k].len)
                abort();
    }
    wh_sbuf_t out;
    wh_sbuf_init(&out);
    s3_batch_format(b.op, b.e, b.n, &out);
    s3_batch_t again;
    if (!out.oom) {
        if (s3_batch_parse(out.data, out.len, region, &again, err, sizeof err) != 0)
            abort();
        if (again.n != b.n || again.op != b.op)
            abort();
        for (size_t i = 0; i < b.n; i++)
            if (strcmp(again.e[i].key, b.e[i].key) != 0 || again.e[i].off != b.e[i].off ||
                again.e[i].len != b.e[i].len || again.e[i].if_none_match != b.e[i].if_none_match)
                abort();
        s3_batch_free(&again);
    }
    wh_sbuf_free(&out);
    s3_batch_free(&b);
}

static void check_reply(const char *p, size_t n, size_t want)
{
    s3_batch_status_t *sv = calloc(want ? want : 1, sizeof *sv);
    if (!sv)
        return;
    char err[400];
    if (s3_batch_reply_parse(p, n, want, sv, err, sizeof err) == 0) {
        wh_sbuf_t out;
        wh_sbuf_init(&out);
        s3_batch_reply_head(want, &out);
        for (size_t i = 0; i < want; i++)
            s3_batch_reply_line(i, &sv[i], &out);
        s3_batch_status_t *again = calloc(want ? want : 1, sizeof *again);
        if (!out.oom && again &&
            s3_batch_reply_parse(out.data, out.len, want, again, err, sizeof err) != 0)
            abort();
        for (size_t i = 0; again && !out.oom && i < want; i++)
            if (strcmp(again[i].code, sv[i].code) != 0 || again[i].size != sv[i].size ||
                again[i].has_crc != sv[i].has_crc || again[i].crc64nvme != sv[i].crc64nvme)
                abort();
        free(again);
        wh_sbuf_free(&out);
    }
    free(sv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9)
        return 0;
    uint64_t region = 0;
    for (int i = 8; i >= 1; i--)
        region = region << 8 | data[i];
    const char *p = (const char *)data + 9;
    size_t n = size - 9;
    if (data[0] & 1)
        check_reply(p, n, (size_t)(region % 64));
    else
        check_list(p, n, region);
    return 0;
}
