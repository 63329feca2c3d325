/* SPDX-License-Identifier: Apache-2.0 */
/* x-amz-rdma-token dialects: ofi1, cuda1 and cuobj. Strict: every field has one accepted form
 * (lowercase hex of the stated width), and an error names the field that broke it. */
#include "xfer/token.h"
#include "base/codec.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define TOKEN_MAX_FIELDS 10

typedef struct tok_field {
    const char *p;
    size_t n;
} tok_field_t;

/* Errors: wh_errf (base/status.h) formats the reason and returns the status. */

static int tok_lhex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Lowercase hex of 1..16 digits (or exactly `width` when width > 0). */
static const char *tok_hex_u64(const tok_field_t *f, size_t width, uint64_t *out)
{
    if (f->n == 0)
        return "empty";
    if (width ? f->n != width : f->n > 16)
        return width ? "wrong width" : "more than 16 hex digits";
    uint64_t v = 0;
    for (size_t i = 0; i < f->n; i++) {
        int d = tok_lhex(f->p[i]);
        if (d < 0)
            return (f->p[i] >= 'A' && f->p[i] <= 'F') ? "not lowercase hex" : "not hex";
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return NULL;
}

static const char *tok_hex_bytes(const tok_field_t *f, uint8_t *out)
{
    for (size_t i = 0; i < f->n; i++) {
        int d = tok_lhex(f->p[i]);
        if (d < 0)
            return (f->p[i] >= 'A' && f->p[i] <= 'F') ? "not lowercase hex" : "not hex";
        if (i & 1)
            out[i / 2] = (uint8_t)(out[i / 2] | d);
        else
            out[i / 2] = (uint8_t)(d << 4);
    }
    return NULL;
}

static bool tok_provider_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ';';
}

static bool tok_provider_valid(const char *p, size_t n)
{
    if (n == 0 || n >= XFER_TOKEN_MAX_PROVIDER)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!tok_provider_char(p[i]))
            return false;
    return true;
}

/* The base and size every dialect but cuobj starts with (hex, and base + size must not wrap). */
static wh_status_t tok_parse_base_size(const tok_field_t *f, xfer_token_t *t, char *err,
                                       size_t errlen)
{
    const char *why;
    if ((why = tok_hex_u64(&f[0], 0, &t->base)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'base': %s", why);
    if ((why = tok_hex_u64(&f[1], 0, &t->size)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'size': %s", why);
    if (t->base + t->size < t->base)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'size': base 0x%llx + size 0x%llx wraps past 2^64",
                       (unsigned long long)t->base, (unsigned long long)t->size);
    return WH_OK;
}

/* ---- ofi1 ---------------------------------------------------------------------------------- */

static wh_status_t tok_parse_ofi1(const tok_field_t *f, size_t nf, xfer_token_t *t, char *err,
                                  size_t errlen)
{
    const char *why;
    if (nf != 6)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: ofi1 has 6 fields <base>:<size>:ofi1:<provider>:<ep-name>:<key>, "
                       "got %zu",
                       nf);
    wh_status_t st = tok_parse_base_size(f, t, err, errlen);
    if (st != WH_OK)
        return st;
    if (!tok_provider_valid(f[3].p, f[3].n))
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'provider': must be 1..%d of [a-z0-9_;]",
                       XFER_TOKEN_MAX_PROVIDER - 1);
    memcpy(t->provider, f[3].p, f[3].n);
    t->provider[f[3].n] = '\0';
    if (f[4].n < 2 || f[4].n > 2 * XFER_TOKEN_MAX_EP_NAME || (f[4].n & 1))
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': must be an even number of hex digits, 2..%d",
                       2 * XFER_TOKEN_MAX_EP_NAME);
    if ((why = tok_hex_bytes(&f[4], t->ep_name)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'ep-name': %s", why);
    t->ep_name_len = f[4].n / 2;
    if ((why = tok_hex_u64(&f[5], 0, &t->key)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'key': %s", why);
    t->dialect = XFER_TOKEN_DIALECT_OFI1;
    return WH_OK;
}

/* ---- cuobj --------------------------------------------------------------------------------- */

static const size_t g_cuobj_width[7] = {16, 8, 8, 4, 6, 1, 32};
static const char *const g_cuobj_name[7] = {"addr", "size",        "rkey", "lid",
                                            "dctn", "gid_present", "gid"};
#define CUOBJ_LEN 81

static bool tok_looks_cuobj(const tok_field_t *f, size_t nf)
{
    /* The sender meant cuobj when the field count is cuobj's (7, or 9 for the old form), or
     * the first three fields have cuobj's widths; the strict parse then names the bad field. */
    if (nf == 7 || nf == 9)
        return true;
    return nf >= 3 && f[0].n == g_cuobj_width[0] && f[1].n == g_cuobj_width[1] &&
           f[2].n == g_cuobj_width[2];
}

static wh_status_t tok_parse_cuobj(const tok_field_t *f, size_t nf, size_t len, xfer_token_t *t,
                                   char *err, size_t errlen)
{
    const char *why;
    uint64_t v[6];
    if (nf == 9)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: the %zu-character cuobj form with a trailing ':addr:size' (the "
                       "older 115-character form) is not accepted; send the exactly "
                       "%d-character form addr:size:rkey:lid:dctn:gid_present:gid",
                       len, CUOBJ_LEN);
    if (nf != 7)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: cuobj has 7 fields addr:size:rkey:lid:dctn:gid_present:gid, "
                       "got %zu",
                       nf);
    for (size_t i = 0; i < 6; i++) {
        if ((why = tok_hex_u64(&f[i], g_cuobj_width[i], &v[i])))
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "token field '%s': %s (cuobj wants %zu lowercase hex digits)",
                           g_cuobj_name[i], why, g_cuobj_width[i]);
    }
    if (f[6].n != 32)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'gid': wrong width (cuobj wants 32 lowercase hex digits)");
    if ((why = tok_hex_bytes(&f[6], t->gid)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'gid': %s", why);
    if (v[5] > 1)
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'gid_present': must be 0 or 1");
    t->base = v[0];
    t->size = v[1];
    t->key = v[2];
    t->lid = (uint16_t)v[3];
    t->dctn = (uint32_t)v[4];
    t->gid_present = (uint8_t)v[5];
    if (t->base + t->size < t->base)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'size': addr + size wraps past 2^64");
    t->dialect = XFER_TOKEN_DIALECT_CUOBJ;
    return WH_OK;
}

/* ---- cuda1 --------------------------------------------------------------------------------- */

static wh_status_t tok_parse_cuda1(const tok_field_t *f, size_t nf, xfer_token_t *t, char *err,
                                   size_t errlen)
{
    const char *why;
    if (nf != 6)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: cuda1 has 6 fields <base>:<size>:cuda1:<device-uuid>:<ipc-handle>"
                       ":<alloc-offset>, got %zu",
                       nf);
    wh_status_t st = tok_parse_base_size(f, t, err, errlen);
    if (st != WH_OK)
        return st;
    if (f[3].n != 32)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'device-uuid': wrong width (cuda1 wants 32 lowercase hex "
                       "digits)");
    if ((why = tok_hex_bytes(&f[3], t->cuda_uuid)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'device-uuid': %s", why);
    if (f[4].n != 2 * XFER_TOKEN_CUDA_IPC_LEN)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ipc-handle': wrong width (cuda1 wants %d lowercase hex "
                       "digits)",
                       2 * XFER_TOKEN_CUDA_IPC_LEN);
    if ((why = tok_hex_bytes(&f[4], t->cuda_ipc)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'ipc-handle': %s", why);
    if ((why = tok_hex_u64(&f[5], 0, &t->cuda_off)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'alloc-offset': %s", why);
    if (t->cuda_off + t->size < t->cuda_off)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'alloc-offset': offset + size wraps past 2^64");
    memcpy(t->provider, "cuda", 5);
    t->dialect = XFER_TOKEN_DIALECT_CUDA1;
    return WH_OK;
}

/* ---- entry points ------------------------------------------------------------------------- */

wh_status_t xfer_token_parse(const char *s, size_t len, xfer_token_t *out, char *err, size_t errlen)
{
    tok_field_t f[TOKEN_MAX_FIELDS];
    size_t nf = 0, start = 0;
    xfer_token_t t;
    wh_status_t st;

    if (err && errlen)
        err[0] = '\0';
    if (!s || len == 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "token: empty");
    if (len > XFER_TOKEN_MAX_LEN)
        return wh_errf(WH_ERR_INVALID, err, errlen, "token: longer than %d characters",
                       XFER_TOKEN_MAX_LEN);
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == ':') {
            if (nf == TOKEN_MAX_FIELDS)
                return wh_errf(WH_ERR_INVALID, err, errlen,
                               "token: more than %d ':'-separated fields", TOKEN_MAX_FIELDS);
            f[nf].p = s + start;
            f[nf].n = i - start;
            nf++;
            start = i + 1;
        }
    }
    memset(&t, 0, sizeof t);
    if (nf >= 3 && f[2].n == 4 && memcmp(f[2].p, "ofi1", 4) == 0)
        st = tok_parse_ofi1(f, nf, &t, err, errlen);
    else if (nf >= 3 && f[2].n == 5 && memcmp(f[2].p, "cuda1", 5) == 0)
        st = tok_parse_cuda1(f, nf, &t, err, errlen);
    else if (tok_looks_cuobj(f, nf))
        st = tok_parse_cuobj(f, nf, len, &t, err, errlen);
    else if (nf >= 3) {
        /* Name the dialect only if it is a plain identifier: the message may reach a reply. */
        bool ident = f[2].n > 0 && f[2].n <= 16;
        for (size_t i = 0; ident && i < f[2].n; i++)
            ident = (f[2].p[i] >= 'a' && f[2].p[i] <= 'z') ||
                    (f[2].p[i] >= '0' && f[2].p[i] <= '9') || f[2].p[i] == '_';
        if (ident)
            return wh_errf(WH_ERR_UNSUPPORTED, err, errlen,
                           "unknown token dialect '%.*s' (this server knows ofi1, cuda1 and "
                           "cuobj)",
                           (int)f[2].n, f[2].p);
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: not a known dialect (ofi1 <base>:<size>:ofi1:..., or the "
                       "81-character cuobj form)");
    } else
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token: not a known dialect (ofi1 <base>:<size>:ofi1:..., or the "
                       "81-character cuobj form)");
    if (st == WH_OK)
        *out = t;
    return st;
}

wh_status_t xfer_token_pack_ofi1(uint64_t base, uint64_t size, const char *provider,
                                 const void *ep_name, size_t ep_name_len, uint64_t key, char *out,
                                 size_t outlen)
{
    char hex[2 * XFER_TOKEN_MAX_EP_NAME + 1];
    if (!provider || !tok_provider_valid(provider, strlen(provider)) || !ep_name ||
        ep_name_len == 0 || ep_name_len > XFER_TOKEN_MAX_EP_NAME || base + size < base || !out)
        return WH_ERR_INVALID;
    wh_hex_encode(ep_name, ep_name_len, hex);
    int n = snprintf(out, outlen, "%llx:%llx:ofi1:%s:%s:%llx", (unsigned long long)base,
                     (unsigned long long)size, provider, hex, (unsigned long long)key);
    if (n < 0 || (size_t)n >= outlen)
        return WH_ERR_INVALID;
    return WH_OK;
}

wh_status_t xfer_token_pack_cuobj(const xfer_token_t *t, char out[82])
{
    char gid[33];
    if (!t || t->size > 0xffffffffULL || t->key > 0xffffffffULL || t->dctn > 0xffffff ||
        t->gid_present > 1 || t->base + t->size < t->base)
        return WH_ERR_INVALID;
    wh_hex_encode(t->gid, 16, gid);
    char tmp[128];
    int n = snprintf(tmp, sizeof tmp, "%016llx:%08llx:%08llx:%04x:%06x:%01x:%s",
                     (unsigned long long)t->base, (unsigned long long)t->size,
                     (unsigned long long)t->key, (unsigned)t->lid, (unsigned)t->dctn,
                     (unsigned)t->gid_present, gid);
    if (n != 81)
        return WH_ERR_INTERNAL;
    memcpy(out, tmp, 82);
    return WH_OK;
}

wh_status_t xfer_token_pack_cuda1(uint64_t base, uint64_t size, const uint8_t uuid[16],
                                  const uint8_t ipc[XFER_TOKEN_CUDA_IPC_LEN], uint64_t alloc_off,
                                  char *out, size_t outlen)
{
    char uhex[33], ihex[2 * XFER_TOKEN_CUDA_IPC_LEN + 1];
    if (!uuid || !ipc || !out || base + size < base || alloc_off + size < alloc_off)
        return WH_ERR_INVALID;
    wh_hex_encode(uuid, 16, uhex);
    wh_hex_encode(ipc, XFER_TOKEN_CUDA_IPC_LEN, ihex);
    int n = snprintf(out, outlen, "%llx:%llx:cuda1:%s:%s:%llx", (unsigned long long)base,
                     (unsigned long long)size, uhex, ihex, (unsigned long long)alloc_off);
    if (n < 0 || (size_t)n >= outlen)
        return WH_ERR_INVALID;
    return WH_OK;
}

void xfer_token_arg_parse(xfer_token_arg_t *a, const char *str)
{
    memset(a, 0, sizeof *a);
    a->str = str;
    if (!str) {
        a->st = WH_ERR_INVALID;
        snprintf(a->err, sizeof a->err, "missing");
        return;
    }
    a->st = xfer_token_parse(str, strlen(str), &a->tok, a->err, sizeof a->err);
}
