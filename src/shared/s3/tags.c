/* SPDX-License-Identifier: Apache-2.0 */
/* S3 object tags (tags.h). */
#include "s3/tags.h"

#include "s3/uri.h"
#include "s3/xml.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Code points of valid UTF-8 (no overlongs, surrogates or U+FFFE/U+FFFF: what an XML
 * document can carry) without control characters; -1 when invalid. */
static long utf8_chars(const char *s, size_t n)
{
    long chars = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (k == 0 || i + k > n || (k == 1 && (c < 0x20 || c == 0x7f)))
            return -1;
        unsigned long cp = k == 1 ? c : k == 2 ? c & 0x1f : k == 3 ? c & 0x0f : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            unsigned char d = (unsigned char)s[i + j];
            if ((d & 0xc0) != 0x80)
                return -1;
            cp = (cp << 6) | (d & 0x3f);
        }
        static const unsigned long min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
            cp == 0xffff)
            return -1;
        i += k;
        chars++;
    }
    return chars;
}

/* Adds one tag, checking S3's limits: at most 10, keys 1..128 characters and unique, values
 * 0..256, no "aws:" prefix (reserved). */
static s3_err_t tag_add(s3_tagset_t *t, const char *k, size_t kl, const char *v, size_t vl,
                        char *msg, size_t msglen)
{
    if (t->n >= t->limit)
        return s3_errf(S3_ERR_INVALID_TAG, msg, msglen, "%s tags cannot be greater than %zu",
                       t->limit == S3_TAGS_MAX ? "Object" : "Bucket", t->limit);
    long kc = utf8_chars(k, kl), vc = utf8_chars(v, vl);
    if (kc <= 0 || kc > S3_TAG_KEY_MAX || kl >= sizeof t->tags[0].key)
        return s3_errf(S3_ERR_INVALID_TAG, msg, msglen,
                       "The TagKey you have provided is invalid: a key is 1 to %d characters "
                       "of valid UTF-8",
                       S3_TAG_KEY_MAX);
    if (vc < 0 || vc > S3_TAG_VALUE_MAX || vl >= sizeof t->tags[0].value)
        return s3_errf(S3_ERR_INVALID_TAG, msg, msglen,
                       "The TagValue you have provided is invalid: a value is 0 to %d "
                       "characters of valid UTF-8",
                       S3_TAG_VALUE_MAX);
    if (kl >= 4 && strncmp(k, "aws:", 4) == 0)
        return s3_errf(S3_ERR_INVALID_TAG, msg, msglen, "Your TagKey cannot be prefixed with aws:");
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->tags[i].key) == kl && memcmp(t->tags[i].key, k, kl) == 0)
            return s3_errf(S3_ERR_INVALID_TAG, msg, msglen,
                           "Cannot provide multiple Tags with the same key");
    s3_tag_t *g = &t->tags[t->n++];
    memcpy(g->key, k, kl);
    g->key[kl] = '\0';
    memcpy(g->value, v, vl);
    g->value[vl] = '\0';
    return S3_OK;
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

/* application/x-www-form-urlencoded: %XX and '+' for a space. */
static bool form_decode(const char *s, size_t n, wh_sbuf_t *out)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (i + 2 >= n)
                return false;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return false;
            c = (char)(h * 16 + l);
            i += 2;
        }
        wh_sbuf_append(out, &c, 1);
    }
    return !out->oom;
}

s3_err_t s3_tags_parse_query(const char *q, size_t len, size_t limit, s3_tagset_t *out, char *msg,
                             size_t msglen)
{
    memset(out, 0, sizeof *out);
    out->limit = limit < S3_BUCKET_TAGS_MAX ? limit : S3_BUCKET_TAGS_MAX;
    if (msg && msglen)
        msg[0] = '\0';
    size_t i = 0;
    while (i < len) {
        const char *p = q + i;
        const char *amp = memchr(p, '&', len - i);
        size_t plen = amp ? (size_t)(amp - p) : len - i;
        i += plen + (amp ? 1 : 0);
        if (plen == 0)
            continue;
        const char *eq = memchr(p, '=', plen);
        size_t kl = eq ? (size_t)(eq - p) : plen;
        wh_sbuf_t k, v;
        wh_sbuf_init(&k);
        wh_sbuf_init(&v);
        bool ok = form_decode(p, kl, &k) && (!eq || form_decode(eq + 1, plen - kl - 1, &v));
        s3_err_t e = S3_OK;
        if (!ok)
            e = s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                        "x-amz-tagging is not a valid URL-encoded query string");
        else if (memchr(k.data ? k.data : "", '\0', k.len) ||
                 memchr(v.data ? v.data : "", '\0', v.len))
            e = s3_errf(S3_ERR_INVALID_TAG, msg, msglen, "a tag holds a NUL character");
        else
            e = tag_add(out, k.data ? k.data : "", k.len, v.data ? v.data : "", v.len, msg, msglen);
        wh_sbuf_free(&k);
        wh_sbuf_free(&v);
        if (e != S3_OK)
            return e;
    }
    return S3_OK;
}

typedef struct {
    s3_tagset_t *t;
    char key[sizeof((s3_tag_t *)0)->key], value[sizeof((s3_tag_t *)0)->value];
    size_t kl, vl;
    bool have_key, have_value, bad_len;
    s3_err_t err;
    char *msg;
    size_t msglen;
    bool other_root;
} tag_xml_t;

static void tag_xml_cb(void *arg, const char *path, const char *text, size_t len)
{
    tag_xml_t *x = arg;
    if (x->err != S3_OK)
        return;
    if (strncmp(path, "Tagging", 7) != 0 || (path[7] && path[7] != '/')) {
        x->other_root = true;
        return;
    }
    if (strcmp(path, "Tagging/TagSet/Tag/Key") == 0) {
        if (x->have_key) {
            x->err = S3_ERR_MALFORMED_XML;
            return;
        }
        if (len >= sizeof x->key)
            x->bad_len = true;
        x->have_key = true;
        x->kl = len < sizeof x->key ? len : 0;
        memcpy(x->key, text, x->kl);
    } else if (strcmp(path, "Tagging/TagSet/Tag/Value") == 0) {
        if (x->have_value) {
            x->err = S3_ERR_MALFORMED_XML;
            return;
        }
        if (len >= sizeof x->value)
            x->bad_len = true;
        x->have_value = true;
        x->vl = len < sizeof x->value ? len : 0;
        memcpy(x->value, text, x->vl);
    } else if (strcmp(path, "Tagging/TagSet/Tag") == 0) {
        if (!x->have_key || !x->have_value) {
            x->err = S3_ERR_MALFORMED_XML;
            return;
        }
        if (x->bad_len)
            x->err = s3_errf(S3_ERR_INVALID_TAG, x->msg, x->msglen,
                             "The TagKey or TagValue you have provided is too long");
        else if (memchr(x->key, '\0', x->kl) || memchr(x->value, '\0', x->vl))
            x->err = s3_errf(S3_ERR_INVALID_TAG, x->msg, x->msglen, "a tag holds a NUL character");
        else
            x->err = tag_add(x->t, x->key, x->kl, x->value, x->vl, x->msg, x->msglen);
        x->have_key = x->have_value = x->bad_len = false;
    }
}

s3_err_t s3_tags_parse_xml(const char *xml, size_t len, size_t limit, s3_tagset_t *out, char *msg,
                           size_t msglen)
{
    memset(out, 0, sizeof *out);
    out->limit = limit < S3_BUCKET_TAGS_MAX ? limit : S3_BUCKET_TAGS_MAX;
    if (msg && msglen)
        msg[0] = '\0';
    tag_xml_t x;
    memset(&x, 0, sizeof x);
    x.t = out;
    x.err = S3_OK;
    x.msg = msg;
    x.msglen = msglen;
    if (s3_xml_walk(xml, len, tag_xml_cb, &x) != 0 || x.other_root) {
        memset(out, 0, sizeof *out);
        return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                       "The XML you provided was not well-formed or did not validate: a "
                       "Tagging document with a TagSet of Tag elements (Key, Value)");
    }
    if (x.err != S3_OK) {
        if (x.err == S3_ERR_MALFORMED_XML)
            s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                    "each Tag needs exactly one Key and one Value");
        memset(out, 0, sizeof *out);
    }
    return x.err;
}

void s3_tags_format_query(const s3_tagset_t *t, wh_sbuf_t *out)
{
    for (size_t i = 0; i < t->n; i++) {
        if (i)
            wh_sbuf_puts(out, "&");
        s3_uri_encode(t->tags[i].key, strlen(t->tags[i].key), 1, out);
        wh_sbuf_puts(out, "=");
        s3_uri_encode(t->tags[i].value, strlen(t->tags[i].value), 1, out);
    }
}

void s3_tags_format_xml(const s3_tagset_t *t, wh_sbuf_t *out, const char *xmlns)
{
    wh_sbuf_printf(out, "<Tagging xmlns=\"%s\"><TagSet>", xmlns);
    for (size_t i = 0; i < t->n; i++) {
        wh_sbuf_puts(out, "<Tag>");
        s3_xml_elem(out, "Key", t->tags[i].key);
        s3_xml_elem(out, "Value", t->tags[i].value);
        wh_sbuf_puts(out, "</Tag>");
    }
    wh_sbuf_puts(out, "</TagSet></Tagging>");
}
