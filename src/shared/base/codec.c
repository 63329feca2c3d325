/* SPDX-License-Identifier: Apache-2.0 */
#include "base/codec.h"

static const char g_hex[] = "0123456789abcdef";

void wh_hex_encode(const void *in, size_t len, char *out)
{
    const uint8_t *p = in;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = g_hex[p[i] >> 4];
        out[2 * i + 1] = g_hex[p[i] & 15];
    }
    out[2 * len] = '\0';
}

int wh_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int wh_hex_decode(const char *in, size_t inlen, void *out, size_t outlen)
{
    uint8_t *o = out;
    if (inlen != 2 * outlen)
        return -1;
    for (size_t i = 0; i < outlen; i++) {
        int hi = wh_hex_digit(in[2 * i]), lo = wh_hex_digit(in[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        o[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int wh_hex_u64(const char *in, size_t inlen, uint64_t *out)
{
    uint64_t v = 0;
    if (inlen == 0 || inlen > 16)
        return -1;
    for (size_t i = 0; i < inlen; i++) {
        int d = wh_hex_digit(in[i]);
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

static const char g_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t wh_base64_encode(const void *in, size_t len, char *out)
{
    const uint8_t *p = in;
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = g_b64[v >> 18];
        out[o++] = g_b64[(v >> 12) & 63];
        out[o++] = g_b64[(v >> 6) & 63];
        out[o++] = g_b64[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        out[o++] = g_b64[v >> 18];
        out[o++] = g_b64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? g_b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long wh_base64_decode(const char *in, size_t inlen, void *out, size_t outcap)
{
    uint8_t *o = out;
    size_t n = 0;
    if (inlen % 4 != 0)
        return -1;
    for (size_t i = 0; i < inlen; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == inlen && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad)
                    return -1;
                v[k] = b64val(in[i + k]);
                if (v[k] < 0)
                    return -1;
            }
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t b[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int k = 0; k < 3 - pad; k++) {
            if (n >= outcap)
                return -1;
            o[n++] = b[k];
        }
    }
    return (long)n;
}
