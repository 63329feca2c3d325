/* SPDX-License-Identifier: Apache-2.0 */
/* Percent-encoding as SigV4 and S3 use it (URI paths, query strings, form values). It lives
 * below the SigV4 code (src/shared/auth) because the S3 documents (tags.c) encode with it too. */
#include "s3/uri.h"

#include "base/codec.h"

static int uri_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

void s3_uri_encode(const char *s, size_t n, int encode_slash, wh_sbuf_t *out)
{
    static const char hexu[] = "0123456789ABCDEF";
    char buf[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (k + 3 > sizeof buf) {
            wh_sbuf_append(out, buf, k);
            k = 0;
        }
        if (uri_unreserved(c) || (c == '/' && !encode_slash)) {
            buf[k++] = (char)c;
        } else {
            buf[k++] = '%';
            buf[k++] = hexu[c >> 4];
            buf[k++] = hexu[c & 15];
        }
    }
    wh_sbuf_append(out, buf, k);
}

static int uri_decode(const char *s, size_t n, int plus_is_space, wh_sbuf_t *out)
{
    char buf[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k == sizeof buf) {
            wh_sbuf_append(out, buf, k);
            k = 0;
        }
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = wh_hex_digit((char)s[i + 1]), lo = wh_hex_digit((char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            buf[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            buf[k++] = ' ';
        } else {
            buf[k++] = c;
        }
    }
    wh_sbuf_append(out, buf, k);
    return 0;
}

int s3_uri_decode(const char *s, size_t n, wh_sbuf_t *out)
{
    return uri_decode(s, n, 0, out);
}

int s3_uri_decode_form(const char *s, size_t n, wh_sbuf_t *out)
{
    return uri_decode(s, n, 1, out);
}
