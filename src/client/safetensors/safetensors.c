/* SPDX-License-Identifier: Apache-2.0 */
/* safetensors header parser: strict validation of an untrusted header before any byte of the
 * data section is planned or fetched.
 *
 * Format: u64 LE N, N bytes of UTF-8 JSON (an object; trailing spaces allowed), data section.
 * Each entry but "__metadata__" is {"dtype": str, "shape": [u64...], "data_offsets": [b, e]}
 * with offsets relative to the data section. The reference implementation (huggingface/
 * safetensors) requires that the tensors, sorted by offset, tile the data section exactly:
 * no overlap (two names aliasing bytes) and no hole (polyglot files). We follow it, and
 * refuse unknown fields, duplicate names and sizes that overflow.
 *
 * Errors are written into the caller's buffer (err, errlen): libwharf's wharf_st_* functions
 * (src/client/client/safetensors.c) copy them to wharf_last_error(); the fuzz driver reads them. */
#include "safetensors/safetensors.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A message into the caller's buffer (errlen 0: dropped). */
static void st_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void st_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define ST_NAME_SHOW 96 /* characters of a tensor name quoted in an error */

typedef struct st_dtype {
    const char *name;
    unsigned bits;
} st_dtype_t;

/* The spec's list (safetensors Dtype), including the MX/fp8 additions. */
static const st_dtype_t st_dtypes[] = {
    {"BOOL", 8},        {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},
    {"I8", 8},          {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8},
    {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
    {"I32", 32},        {"U32", 32},    {"F32", 32},    {"C64", 64},    {"F64", 64},
    {"I64", 64},        {"U64", 64},
};

typedef struct st_entry {
    char *name;
    const char *dtype; /* points into st_dtypes */
    uint32_t ndim;
    uint64_t *shape; /* into wharf_st.shapes */
    uint64_t begin, end;
} st_entry_t;

struct wharf_st {
    size_t n;
    st_entry_t *e;
    uint64_t *shapes;
    char *meta_json;
    uint64_t data_off, data_len;
};

unsigned st_dtype_bits(const char *dtype)
{
    if (!dtype)
        return 0;
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(st_dtypes[i].name, dtype) == 0)
            return st_dtypes[i].bits;
    return 0;
}

static const st_dtype_t *st_dtype_find(const char *name)
{
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(st_dtypes[i].name, name) == 0)
            return &st_dtypes[i];
    return NULL;
}

static uint64_t st_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* A tensor name for an error message: truncated, control characters escaped. */
static void st_show(const char *name, char out[ST_NAME_SHOW + 8])
{
    size_t o = 0;
    for (size_t i = 0; name[i] && o < ST_NAME_SHOW; i++) {
        unsigned char ch = (unsigned char)name[i];
        out[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (strlen(name) > ST_NAME_SHOW) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

wharf_status_t st_header_len(const void *prefix8, uint64_t file_size, uint64_t *n, char *err,
                             size_t errlen)
{
    if (!prefix8 || !n) {
        st_errf(err, errlen, "wharf_st_header_len: prefix8 and n must not be NULL");
        return WHARF_ERR_INVALID;
    }
    if (file_size != WHARF_WHOLE && file_size < 8) {
        st_errf(err, errlen,
                "safetensors: the file has %llu bytes, fewer than the 8-byte header "
                "length; it is not a safetensors file",
                (unsigned long long)file_size);
        return WHARF_ERR_INVALID;
    }
    uint64_t len = st_le64(prefix8);
    if (len > WHARF_ST_MAX_HEADER) {
        st_errf(err, errlen,
                "safetensors: header length %llu is over the limit of %llu bytes "
                "(a header bomb, or not a safetensors file)",
                (unsigned long long)len, (unsigned long long)WHARF_ST_MAX_HEADER);
        return WHARF_ERR_TOO_LARGE;
    }
    if (len < 2) {
        st_errf(err, errlen, "safetensors: header length %llu is too small for a JSON object",
                (unsigned long long)len);
        return WHARF_ERR_INVALID;
    }
    if (file_size != WHARF_WHOLE && len > file_size - 8) {
        st_errf(err, errlen,
                "safetensors: header length %llu runs past the end of the %llu-byte file "
                "(truncated, or not a safetensors file)",
                (unsigned long long)len, (unsigned long long)file_size);
        return WHARF_ERR_INVALID;
    }
    *n = len;
    return WHARF_OK;
}

void st_free(wharf_st_t *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++)
        free(st->e[i].name);
    free(st->e);
    free(st->shapes);
    free(st->meta_json);
    free(st);
}

static int st_entry_cmp(const void *a, const void *b)
{
    const st_entry_t *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A JSON integer as a u64; false when it is not an integer or is negative. */
static bool st_json_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v))
        return false;
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return false;
    *out = (uint64_t)i;
    return true;
}

/* Validates one entry's fields into e (shape written to shape_store). */
static wharf_status_t st_entry_parse(const char *name, json_t *v, uint64_t *shape_store,
                                     st_entry_t *e, char *err, size_t errlen)
{
    char show[ST_NAME_SHOW + 8];
    st_show(name, show);
    if (!json_is_object(v)) {
        st_errf(err, errlen, "safetensors header: tensor \"%s\": the entry is not an object", show);
        return WHARF_ERR_INVALID;
    }
    const char *k;
    json_t *f;
    json_object_foreach(v, k, f)
    {
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets")) {
            char showk[ST_NAME_SHOW + 8];
            st_show(k, showk);
            st_errf(err, errlen,
                    "safetensors header: tensor \"%s\": unknown field \"%s\" (allowed: "
                    "dtype, shape, data_offsets)",
                    show, showk);
            return WHARF_ERR_INVALID;
        }
    }
    json_t *jd = json_object_get(v, "dtype");
    json_t *js = json_object_get(v, "shape");
    json_t *jo = json_object_get(v, "data_offsets");
    if (!jd || !js || !jo) {
        st_errf(err, errlen, "safetensors header: tensor \"%s\": missing field \"%s\"", show,
                !jd   ? "dtype"
                : !js ? "shape"
                      : "data_offsets");
        return WHARF_ERR_INVALID;
    }
    if (!json_is_string(jd)) {
        st_errf(err, errlen, "safetensors header: tensor \"%s\": field \"dtype\" is not a string",
                show);
        return WHARF_ERR_INVALID;
    }
    const st_dtype_t *dt = st_dtype_find(json_string_value(jd));
    if (!dt) {
        char showd[ST_NAME_SHOW + 8];
        st_show(json_string_value(jd), showd);
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"dtype\": unknown dtype \"%s\" "
                "(known: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, "
                "C64, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F6_E2M3, "
                "F6_E3M2, F4)",
                show, showd);
        return WHARF_ERR_INVALID;
    }
    if (!json_is_array(js)) {
        st_errf(err, errlen, "safetensors header: tensor \"%s\": field \"shape\" is not an array",
                show);
        return WHARF_ERR_INVALID;
    }
    size_t ndim = json_array_size(js);
    if (ndim > WHARF_ST_MAX_DIMS) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"shape\" has %zu dimensions, "
                "more than %d",
                show, ndim, WHARF_ST_MAX_DIMS);
        return WHARF_ERR_INVALID;
    }
    uint64_t numel = 1;
    bool overflow = false;
    for (size_t d = 0; d < ndim; d++) {
        uint64_t dim;
        if (!st_json_u64(json_array_get(js, d), &dim)) {
            st_errf(err, errlen,
                    "safetensors header: tensor \"%s\": field \"shape\": dimension %zu is "
                    "not a non-negative integer",
                    show, d);
            return WHARF_ERR_INVALID;
        }
        shape_store[d] = dim;
        if (__builtin_mul_overflow(numel, dim, &numel))
            overflow = true;
    }
    if (!json_is_array(jo) || json_array_size(jo) != 2) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"data_offsets\" is not an array "
                "[begin, end]",
                show);
        return WHARF_ERR_INVALID;
    }
    uint64_t begin, end;
    if (!st_json_u64(json_array_get(jo, 0), &begin) || !st_json_u64(json_array_get(jo, 1), &end)) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"data_offsets\": begin and end "
                "must be non-negative integers",
                show);
        return WHARF_ERR_INVALID;
    }
    if (end < begin) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"data_offsets\": end %llu is "
                "before begin %llu",
                show, (unsigned long long)end, (unsigned long long)begin);
        return WHARF_ERR_INVALID;
    }
    uint64_t bits;
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)dt->bits, &bits)) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"shape\": the element count "
                "overflows 64 bits",
                show);
        return WHARF_ERR_INVALID;
    }
    if (bits % 8) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"shape\": %llu elements of %s "
                "(%u bits) do not fill whole bytes",
                show, (unsigned long long)numel, dt->name, dt->bits);
        return WHARF_ERR_INVALID;
    }
    if (end - begin != bits / 8) {
        st_errf(err, errlen,
                "safetensors header: tensor \"%s\": field \"data_offsets\": [%llu, %llu] "
                "spans %llu bytes but its shape and dtype %s need %llu",
                show, (unsigned long long)begin, (unsigned long long)end,
                (unsigned long long)(end - begin), dt->name, (unsigned long long)(bits / 8));
        return WHARF_ERR_INVALID;
    }
    e->dtype = dt->name;
    e->ndim = (uint32_t)ndim;
    e->shape = shape_store;
    e->begin = begin;
    e->end = end;
    return WHARF_OK;
}

/* __metadata__: null, or an object whose values are all strings. */
static wharf_status_t st_meta_parse(json_t *v, wharf_st_t *st, char *err, size_t errlen)
{
    if (json_is_null(v))
        return WHARF_OK;
    if (!json_is_object(v)) {
        st_errf(err, errlen, "safetensors header: \"__metadata__\" is not an object");
        return WHARF_ERR_INVALID;
    }
    const char *k;
    json_t *f;
    json_object_foreach(v, k, f)
    {
        if (!json_is_string(f)) {
            char show[ST_NAME_SHOW + 8];
            st_show(k, show);
            st_errf(err, errlen,
                    "safetensors header: \"__metadata__\": the value of \"%s\" is not a "
                    "string (metadata is a string-to-string map)",
                    show);
            return WHARF_ERR_INVALID;
        }
    }
    st->meta_json = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!st->meta_json) {
        st_errf(err, errlen, "safetensors: out of memory serialising __metadata__");
        return WHARF_ERR_NOMEM;
    }
    return WHARF_OK;
}

wharf_status_t st_parse(const void *buf, size_t len, uint64_t file_size, wharf_st_t **out,
                        char *err, size_t errlen)
{
    wharf_status_t rc = WHARF_OK;
    json_t *root = NULL;
    wharf_st_t *st = NULL;
    uint64_t n;

    if (!buf || !out) {
        st_errf(err, errlen, "wharf_st_parse: buf and out must not be NULL");
        return WHARF_ERR_INVALID;
    }
    if (len < 8) {
        st_errf(err, errlen, "safetensors: %zu bytes given, fewer than the 8-byte header length",
                len);
        return WHARF_ERR_INVALID;
    }
    rc = st_header_len(buf, file_size, &n, err, errlen);
    if (rc != WHARF_OK)
        return rc;
    if (len - 8 < n) {
        st_errf(err, errlen,
                "safetensors: the header is %llu bytes but only %zu were given; read the "
                "first %llu bytes of the file",
                (unsigned long long)n, len - 8, (unsigned long long)(n + 8));
        return WHARF_ERR_INVALID;
    }

    json_error_t jerr;
    root = json_loadb((const char *)buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        st_errf(err, errlen,
                "safetensors header: invalid JSON at byte %d: %s (duplicate tensor names "
                "are refused too)",
                jerr.position, jerr.text);
        return WHARF_ERR_INVALID;
    }
    if (!json_is_object(root)) {
        st_errf(err, errlen, "safetensors header: the JSON is not an object");
        rc = WHARF_ERR_INVALID;
        goto err;
    }

    st = calloc(1, sizeof *st);
    size_t cap = json_object_size(root);
    if (!st || !(st->e = calloc(cap ? cap : 1, sizeof *st->e)) ||
        !(st->shapes = calloc((cap ? cap : 1) * WHARF_ST_MAX_DIMS, sizeof *st->shapes))) {
        st_errf(err, errlen, "safetensors: out of memory for a header of %zu entries", cap);
        rc = WHARF_ERR_NOMEM;
        goto err;
    }
    st->data_off = 8 + n;

    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "__metadata__") == 0) {
            rc = st_meta_parse(v, st, err, errlen);
            if (rc != WHARF_OK)
                goto err;
            continue;
        }
        st_entry_t *e = &st->e[st->n];
        rc = st_entry_parse(key, v, st->shapes + st->n * WHARF_ST_MAX_DIMS, e, err, errlen);
        if (rc != WHARF_OK)
            goto err;
        e->name = strdup(key);
        if (!e->name) {
            st_errf(err, errlen, "safetensors: out of memory");
            rc = WHARF_ERR_NOMEM;
            goto err;
        }
        st->n++;
    }

    /* The data section, when the file size is known; every tensor must lie inside it. */
    bool known = file_size != WHARF_WHOLE;
    uint64_t data_len = known ? file_size - st->data_off : 0;
    for (size_t i = 0; known && i < st->n; i++) {
        if (st->e[i].end > data_len) {
            char show[ST_NAME_SHOW + 8];
            st_show(st->e[i].name, show);
            st_errf(err, errlen,
                    "safetensors header: tensor \"%s\": field \"data_offsets\": end %llu is "
                    "past the data section of %llu bytes (file of %llu bytes, header %llu)",
                    show, (unsigned long long)st->e[i].end, (unsigned long long)data_len,
                    (unsigned long long)file_size, (unsigned long long)n);
            rc = WHARF_ERR_INVALID;
            goto err;
        }
    }

    /* Sorted by offset, the tensors must tile [0, data_len): no overlap, no hole. */
    qsort(st->e, st->n, sizeof *st->e, st_entry_cmp);
    uint64_t expect = 0;
    for (size_t i = 0; i < st->n; i++) {
        st_entry_t *e = &st->e[i];
        char show[ST_NAME_SHOW + 8];
        st_show(e->name, show);
        if (e->begin < expect) {
            char other[ST_NAME_SHOW + 8];
            size_t j = i - 1; /* i > 0 here: expect is 0 before the first tensor */
            for (size_t k = i; k-- > 0;) {
                if (st->e[k].begin <= e->begin && st->e[k].end > e->begin) {
                    j = k;
                    break;
                }
            }
            st_show(st->e[j].name, other);
            st_errf(err, errlen,
                    "safetensors header: tensor \"%s\": field \"data_offsets\": [%llu, %llu] "
                    "overlaps tensor \"%s\" (bytes up to %llu are taken)",
                    show, (unsigned long long)e->begin, (unsigned long long)e->end, other,
                    (unsigned long long)expect);
            rc = WHARF_ERR_INVALID;
            goto err;
        }
        if (e->begin > expect) {
            st_errf(err, errlen,
                    "safetensors header: tensor \"%s\": field \"data_offsets\": begins at %llu "
                    "but the previous tensor ends at %llu (the spec allows no holes in the "
                    "data section)",
                    show, (unsigned long long)e->begin, (unsigned long long)expect);
            rc = WHARF_ERR_INVALID;
            goto err;
        }
        expect = e->end;
    }
    if (known && expect != data_len) {
        st_errf(err, errlen,
                "safetensors: the tensors cover %llu bytes but the data section has %llu "
                "(file of %llu bytes with a %llu-byte header): %s",
                (unsigned long long)expect, (unsigned long long)data_len,
                (unsigned long long)file_size, (unsigned long long)n,
                expect < data_len ? "trailing bytes no tensor owns" : "truncated file");
        rc = WHARF_ERR_INVALID;
        goto err;
    }
    st->data_len = known ? data_len : expect;

    json_decref(root);
    *out = st;
    return WHARF_OK;

err:
    st_free(st);
    json_decref(root);
    return rc;
}

size_t st_count(const wharf_st_t *st)
{
    return st ? st->n : 0;
}

uint64_t st_data_offset(const wharf_st_t *st)
{
    return st ? st->data_off : 0;
}

uint64_t st_data_len(const wharf_st_t *st)
{
    return st ? st->data_len : 0;
}

wharf_status_t st_tensor(const wharf_st_t *st, size_t i, const char **name, const char **dtype,
                         uint32_t *ndim, uint64_t *shape, uint32_t shape_cap, uint64_t *begin,
                         uint64_t *end, char *err, size_t errlen)
{
    if (!st || i >= st->n) {
        st_errf(err, errlen, "wharf_st_tensor: index %zu out of range (%zu tensors)", i,
                st ? st->n : (size_t)0);
        return WHARF_ERR_RANGE;
    }
    const st_entry_t *e = &st->e[i];
    if (ndim)
        *ndim = e->ndim;
    if (shape) {
        if (shape_cap < e->ndim) {
            st_errf(err, errlen,
                    "wharf_st_tensor: shape holds %u entries but tensor %zu has %u "
                    "dimensions (WHARF_ST_MAX_DIMS always suffices)",
                    shape_cap, i, e->ndim);
            return WHARF_ERR_TOO_LARGE;
        }
        memcpy(shape, e->shape, e->ndim * sizeof *shape);
    }
    if (name)
        *name = e->name;
    if (dtype)
        *dtype = e->dtype;
    if (begin)
        *begin = e->begin;
    if (end)
        *end = e->end;
    return WHARF_OK;
}

const char *st_metadata_json(const wharf_st_t *st)
{
    return st ? st->meta_json : NULL;
}
