/* SPDX-License-Identifier: Apache-2.0 */
/* Hex and base64 codecs. */
#ifndef WH_BASE_CODEC_H
#define WH_BASE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Value of one hex digit (either case), or -1. */
int wh_hex_digit(char c);
/* Lowercase hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void wh_hex_encode(const void *in, size_t len, char *out);
/* Decodes exactly 2*outlen hex chars (either case). Returns 0, or -1 on a bad char or length. */
int wh_hex_decode(const char *in, size_t inlen, void *out, size_t outlen);
/* Parses 1..16 hex digits into *out; returns -1 on an empty, overlong or non-hex input. */
int wh_hex_u64(const char *in, size_t inlen, uint64_t *out);

/* Standard base64 with padding. out needs 4*((len+2)/3)+1 bytes. Returns the length. */
size_t wh_base64_encode(const void *in, size_t len, char *out);
/* Strict decode (padding required, no whitespace). Returns decoded length or -1. */
long wh_base64_decode(const char *in, size_t inlen, void *out, size_t outcap);

#endif
