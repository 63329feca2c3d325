/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the safetensors header parser (src/client/safetensors, linked as its own
 * layer: wh_roles has no client code). The input is a whole file. Properties: never crashes or
 * reads past len; every failure leaves a message; whatever parses describes tensors that lie inside
 * the data section, in offset order, without overlap, each exactly as long as its shape and dtype
 * say. */
#include "wharf/wharf.h"

#include "safetensors/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parser's message of the last failing call. */
static char g_err[512];

static void check_table(const wharf_st_t *st, uint64_t file_size)
{
    uint64_t data_off = st_data_offset(st), data_len = st_data_len(st);
    if (file_size != WHARF_WHOLE && data_off + data_len != file_size)
        abort();
    uint64_t prev_end = 0;
    for (size_t i = 0; i < st_count(st); i++) {
        const char *name, *dtype;
        uint32_t ndim;
        uint64_t shape[WHARF_ST_MAX_DIMS], b, e;
        if (st_tensor(st, i, &name, &dtype, &ndim, shape, WHARF_ST_MAX_DIMS, &b, &e, NULL, 0) !=
            WHARF_OK)
            abort();
        if (b != prev_end || e < b || e > data_len || ndim > WHARF_ST_MAX_DIMS)
            abort();
        unsigned bits = st_dtype_bits(dtype);
        if (!bits || !name)
            abort();
        unsigned __int128 n = bits;
        for (uint32_t d = 0; d < ndim; d++)
            n *= shape[d];
        if (n % 8 || n / 8 != e - b)
            abort();
        prev_end = e;
    }
    if (prev_end != data_len)
        abort();
    if (st_tensor(st, st_count(st), NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, 0) !=
        WHARF_ERR_RANGE)
        abort();
    const char *meta = st_metadata_json(st);
    if (meta && meta[0] != '{')
        abort();
}

static void parse_as(const uint8_t *buf, size_t size, uint64_t file_size)
{
    g_err[0] = '\0';
    wharf_st_t *st = NULL;
    uint64_t n;
    wharf_status_t rc = st_header_len(buf, file_size, &n, g_err, sizeof g_err);
    if (rc != WHARF_OK) {
        if (g_err[0] == '\0')
            abort(); /* every failure says why */
        return;
    }
    if (n > WHARF_ST_MAX_HEADER || (file_size != WHARF_WHOLE && n + 8 > file_size))
        abort();
    rc = st_parse(buf, size, file_size, &st, g_err, sizeof g_err);
    if (rc != WHARF_OK) {
        if (g_err[0] == '\0' || st != NULL)
            abort();
        return;
    }
    check_table(st, file_size);
    st_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    /* A private copy of exactly size bytes, so ASan catches any read past it. */
    uint8_t *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    parse_as(buf, size, size);        /* the whole file */
    parse_as(buf, size, WHARF_WHOLE); /* a header read without knowing the object size */
    free(buf);
    return 0;
}
