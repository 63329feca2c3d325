/* SPDX-License-Identifier: Apache-2.0 */
/* S3 XML: reply writer and expat-based parsers.
 *
 * Every parser runs on one walker that hands each element's path ("Delete/Object/Key") and
 * text to a callback when the element ends. The walker refuses what S3 bodies never need and
 * attackers like: any DOCTYPE (so no entity can be declared: no billion laughs, no external
 * entities), nesting deeper than a small bound, and oversized input. */
#include "s3/xml.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define XML_REQ_MAX_DEPTH 16
#define XML_WALK_MAX_DEPTH 32
#define XML_WALK_MAX_BYTES (64u << 20) /* client side: a 1000-key listing can reach ~7 MiB */
#define XML_MAX_KEY_LEN 1024

/* ---------------------------------------------------------------------------------------- */
/* Writer */

void s3_xml_escape(wh_sbuf_t *b, const char *s)
{
    if (!s)
        return;
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        const char *rep = NULL;
        char num[8];
        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&apos;";
            break;
        default:
            /* \r would be read back as \n; other controls cannot appear literally. */
            if (c < 0x20 && c != '\t' && c != '\n') {
                static const char hex[] = "0123456789ABCDEF";
                num[0] = '&', num[1] = '#', num[2] = 'x';
                size_t k = 3;
                if (c >= 16)
                    num[k++] = hex[c >> 4];
                num[k++] = hex[c & 15];
                num[k++] = ';';
                num[k] = '\0';
                rep = num;
            }
            break;
        }
        if (rep) {
            wh_sbuf_append(b, run, (size_t)(p - run));
            wh_sbuf_puts(b, rep);
            run = p + 1;
        }
    }
    wh_sbuf_puts(b, run);
}

void s3_xml_elem(wh_sbuf_t *b, const char *name, const char *text)
{
    wh_sbuf_printf(b, "<%s>", name);
    s3_xml_escape(b, text);
    wh_sbuf_printf(b, "</%s>", name);
}

void s3_xml_elem_u64(wh_sbuf_t *b, const char *name, uint64_t v)
{
    wh_sbuf_printf(b, "<%s>%llu</%s>", name, (unsigned long long)v, name);
}

void s3_xml_decl(wh_sbuf_t *b)
{
    wh_sbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

void s3_xml_error(wh_sbuf_t *b, const char *code, const char *message, const char *resource,
                  const char *request_id)
{
    s3_xml_decl(b);
    wh_sbuf_puts(b, "<Error>");
    s3_xml_elem(b, "Code", code);
    s3_xml_elem(b, "Message", message);
    if (resource)
        s3_xml_elem(b, "Resource", resource);
    if (request_id)
        s3_xml_elem(b, "RequestId", request_id);
    wh_sbuf_puts(b, "</Error>");
}

/* ---------------------------------------------------------------------------------------- */
/* Walker */

/* Returns 0 to go on, non-zero to stop the parse (the walk then fails). */
typedef int (*xml_elem_cb)(void *arg, const char *path, const char *text, size_t len);

typedef struct xml_walk {
    XML_Parser p;
    int failed;
    int depth, max_depth;
    size_t plen[XML_WALK_MAX_DEPTH + 1]; /* path length before each level was pushed */
    unsigned char has_child[XML_WALK_MAX_DEPTH + 1];
    wh_sbuf_t path, text;
    char root[64];
    xml_elem_cb cb;
    void *arg;
} xml_walk_t;

static void walk_abort(xml_walk_t *w)
{
    if (!w->failed) {
        w->failed = 1;
        XML_StopParser(w->p, XML_FALSE);
    }
}

static const char *local_name(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static void XMLCALL walk_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    xml_walk_t *w = ud;
    if (w->failed)
        return;
    if (w->depth >= w->max_depth) {
        walk_abort(w);
        return;
    }
    const char *ln = local_name(name);
    if (!*ln) { /* "<a:/>" or "<:/>": well-formed XML 1.0, but no local name to put in a path */
        walk_abort(w);
        return;
    }
    if (w->depth == 0)
        snprintf(w->root, sizeof w->root, "%s", ln);
    else
        w->has_child[w->depth] = 1;
    w->plen[w->depth] = w->path.len;
    if (w->depth > 0)
        wh_sbuf_append(&w->path, "/", 1);
    wh_sbuf_puts(&w->path, ln);
    w->depth++;
    w->has_child[w->depth] = 0;
    wh_sbuf_reset(&w->text);
    if (w->path.oom)
        walk_abort(w);
}

static void XMLCALL walk_end(void *ud, const XML_Char *name)
{
    (void)name;
    xml_walk_t *w = ud;
    if (w->failed)
        return;
    if (w->text.oom) {
        walk_abort(w);
        return;
    }
    /* A container's text (whitespace between children) is not reported. */
    int leaf = !w->has_child[w->depth];
    const char *t = leaf && w->text.data ? w->text.data : "";
    size_t tl = leaf ? w->text.len : 0;
    if (w->cb(w->arg, w->path.data, t, tl) != 0) {
        walk_abort(w);
        return;
    }
    w->depth--;
    w->path.len = w->plen[w->depth];
    w->path.data[w->path.len] = '\0';
    wh_sbuf_reset(&w->text);
}

static void XMLCALL walk_text(void *ud, const XML_Char *s, int len)
{
    xml_walk_t *w = ud;
    if (!w->failed && len > 0)
        wh_sbuf_append(&w->text, s, (size_t)len);
}

static void XMLCALL walk_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                 const XML_Char *pubid, int has_internal_subset)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    walk_abort(ud);
}

static void XMLCALL walk_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
                                int value_len, const XML_Char *base, const XML_Char *sysid,
                                const XML_Char *pubid, const XML_Char *notation)
{
    (void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)sysid;
    (void)pubid, (void)notation;
    walk_abort(ud);
}

/* Returns 0 when the document is well-formed and every callback went on; -1 otherwise.
 * root receives the document element's local name. */
static int xml_walk(const char *xml, size_t len, size_t max_bytes, int max_depth, xml_elem_cb cb,
                    void *arg, char root[64])
{
    if (!xml || len > max_bytes || len > (size_t)INT32_MAX)
        return -1;
    xml_walk_t w;
    memset(&w, 0, sizeof w);
    w.max_depth = max_depth;
    w.cb = cb;
    w.arg = arg;
    wh_sbuf_init(&w.path);
    wh_sbuf_init(&w.text);
    w.p = XML_ParserCreate("UTF-8");
    if (!w.p)
        return -1;
    XML_SetUserData(w.p, &w);
    XML_SetElementHandler(w.p, walk_start, walk_end);
    XML_SetCharacterDataHandler(w.p, walk_text);
    XML_SetStartDoctypeDeclHandler(w.p, walk_doctype);
    XML_SetEntityDeclHandler(w.p, walk_entity);
    XML_SetParamEntityParsing(w.p, XML_PARAM_ENTITY_PARSING_NEVER);
    int ok = XML_Parse(w.p, xml, (int)len, XML_TRUE) == XML_STATUS_OK && !w.failed;
    XML_ParserFree(w.p);
    wh_sbuf_free(&w.path);
    wh_sbuf_free(&w.text);
    if (ok && root)
        memcpy(root, w.root, sizeof w.root);
    return ok ? 0 : -1;
}

typedef struct walk_pub {
    s3_xml_text_cb cb;
    void *arg;
} walk_pub_t;

static int walk_pub_cb(void *arg, const char *path, const char *text, size_t len)
{
    walk_pub_t *p = arg;
    p->cb(p->arg, path, text, len);
    return 0;
}

int s3_xml_walk(const char *xml, size_t len, s3_xml_text_cb cb, void *arg)
{
    walk_pub_t p = {cb, arg};
    return xml_walk(xml, len, XML_WALK_MAX_BYTES, XML_WALK_MAX_DEPTH, walk_pub_cb, &p, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* Request bodies */

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void trim(const char **s, size_t *n)
{
    while (*n && is_ws(**s))
        (*s)++, (*n)--;
    while (*n && is_ws((*s)[*n - 1]))
        (*n)--;
}

/* --- CompleteMultipartUpload --- */

typedef struct complete_ctx {
    s3_part_ref_t *parts;
    size_t n, cap;
    s3_part_ref_t cur;
    int have_num, have_etag, have_crc32c, have_crc64;
    s3_err_t err;
} complete_ctx_t;

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap || memchr(s, '\0', n))
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

static int complete_cb(void *arg, const char *path, const char *text, size_t len)
{
    complete_ctx_t *c = arg;
    if (strncmp(path, "CompleteMultipartUpload/Part", 28) != 0)
        return 0;
    const char *sub = path + 28;
    trim(&text, &len);
    if (*sub == '\0') { /* end of a Part */
        if (!c->have_num || !c->have_etag) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (c->n == S3_XML_MAX_PARTS) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (c->n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 16;
            s3_part_ref_t *np = realloc(c->parts, ncap * sizeof *np);
            if (!np) {
                c->err = S3_ERR_INTERNAL;
                return -1;
            }
            c->parts = np;
            c->cap = ncap;
        }
        c->parts[c->n++] = c->cur;
        memset(&c->cur, 0, sizeof c->cur);
        c->have_num = c->have_etag = c->have_crc32c = c->have_crc64 = 0;
        return 0;
    }
    if (*sub != '/' || strchr(sub + 1, '/'))
        return 0; /* deeper than a Part's fields: not ours */
    sub++;
    int *seen = NULL;
    int bad = 0;
    if (strcmp(sub, "PartNumber") == 0) {
        seen = &c->have_num;
        uint64_t v;
        if (wh_parse_u64(text, len, &v) != 0 || v < 1 || v > S3_XML_MAX_PARTS) {
            c->err = S3_ERR_INVALID_ARGUMENT; /* part numbers are 1..10000 */
            return -1;
        }
        c->cur.number = (uint32_t)v;
    } else if (strcmp(sub, "ETag") == 0) {
        seen = &c->have_etag;
        if (len >= 2 && text[0] == '"' && text[len - 1] == '"')
            text++, len -= 2;
        if (len == 0 || copy_field(c->cur.etag, sizeof c->cur.etag, text, len) != 0) {
            c->err = S3_ERR_INVALID_PART; /* cannot name any part we store */
            return -1;
        }
    } else if (strcmp(sub, "ChecksumCRC32C") == 0) {
        seen = &c->have_crc32c;
        bad = copy_field(c->cur.crc32c, sizeof c->cur.crc32c, text, len);
    } else if (strcmp(sub, "ChecksumCRC64NVME") == 0) {
        seen = &c->have_crc64;
        bad = copy_field(c->cur.crc64nvme, sizeof c->cur.crc64nvme, text, len);
    } else {
        return 0; /* other checksums and unknown fields are not used */
    }
    if (bad || *seen) {
        c->err = S3_ERR_MALFORMED_XML;
        return -1;
    }
    *seen = 1;
    return 0;
}

s3_err_t s3_xml_parse_complete(const char *xml, size_t len, s3_part_ref_t **parts, size_t *n)
{
    complete_ctx_t c;
    memset(&c, 0, sizeof c);
    c.err = S3_ERR_MALFORMED_XML;
    char root[64] = "";
    int rc = xml_walk(xml, len, S3_XML_MAX_BYTES, XML_REQ_MAX_DEPTH, complete_cb, &c, root);
    if (rc != 0 || strcmp(root, "CompleteMultipartUpload") != 0 || c.n == 0) {
        free(c.parts);
        return rc != 0 ? c.err : S3_ERR_MALFORMED_XML;
    }
    *parts = c.parts;
    *n = c.n;
    return S3_OK;
}

/* --- Delete --- */

typedef struct delete_ctx {
    s3_delete_req_t d;
    size_t cap;
    char *cur_key, *cur_vid, *cur_etag;
    int have_quiet;
    s3_err_t err;
} delete_ctx_t;

static int delete_cb(void *arg, const char *path, const char *text, size_t len)
{
    delete_ctx_t *c = arg;
    if (strcmp(path, "Delete/Object/Key") == 0) {
        if (c->cur_key || memchr(text, '\0', len)) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (len > XML_MAX_KEY_LEN) {
            c->err = S3_ERR_KEY_TOO_LONG;
            return -1;
        }
        c->cur_key = strndup(text, len); /* keys are not trimmed: spaces are significant */
        if (!c->cur_key) {
            c->err = S3_ERR_INTERNAL;
            return -1;
        }
    } else if (strcmp(path, "Delete/Object/VersionId") == 0) {
        trim(&text, &len);
        if (c->cur_vid || len == 0 || len > 128 || memchr(text, '\0', len)) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (!(c->cur_vid = strndup(text, len))) {
            c->err = S3_ERR_INTERNAL;
            return -1;
        }
    } else if (strcmp(path, "Delete/Object/ETag") == 0) {
        trim(&text, &len);
        if (c->cur_etag || len == 0 || len > 128 || memchr(text, '\0', len)) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (!(c->cur_etag = strndup(text, len))) {
            c->err = S3_ERR_INTERNAL;
            return -1;
        }
    } else if (strcmp(path, "Delete/Object/LastModifiedTime") == 0 ||
               strcmp(path, "Delete/Object/Size") == 0) {
        c->err = S3_ERR_NOT_IMPLEMENTED; /* directory buckets' conditions: not evaluated */
        return -1;
    } else if (strcmp(path, "Delete/Object") == 0) {
        if (!c->cur_key || c->d.n == S3_XML_MAX_DELETE_KEYS) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        if (c->d.n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 16;
            char **nk = realloc(c->d.keys, ncap * sizeof *nk);
            if (nk)
                c->d.keys = nk;
            char **nv = nk ? realloc(c->d.version_ids, ncap * sizeof *nv) : NULL;
            if (!nk || !nv) {
                c->err = S3_ERR_INTERNAL;
                return -1;
            }
            c->d.version_ids = nv;
            char **ne = realloc(c->d.etags, ncap * sizeof *ne);
            if (!ne) {
                c->err = S3_ERR_INTERNAL;
                return -1;
            }
            c->d.etags = ne;
            c->cap = ncap;
        }
        c->d.version_ids[c->d.n] = c->cur_vid;
        c->d.etags[c->d.n] = c->cur_etag;
        c->d.keys[c->d.n++] = c->cur_key;
        c->cur_key = NULL;
        c->cur_vid = NULL;
        c->cur_etag = NULL;
    } else if (strcmp(path, "Delete/Quiet") == 0) {
        trim(&text, &len);
        if (c->have_quiet) {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
        c->have_quiet = 1;
        if (len == 4 && strncasecmp(text, "true", 4) == 0) {
            c->d.quiet = 1;
        } else if (len == 5 && strncasecmp(text, "false", 5) == 0) {
            c->d.quiet = 0;
        } else {
            c->err = S3_ERR_MALFORMED_XML;
            return -1;
        }
    }
    return 0;
}

void s3_delete_req_free(s3_delete_req_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->keys[i]);
        free(d->version_ids[i]);
        free(d->etags[i]);
    }
    free(d->keys);
    free(d->version_ids);
    free(d->etags);
    memset(d, 0, sizeof *d);
}

s3_err_t s3_xml_parse_delete(const char *xml, size_t len, s3_delete_req_t *out)
{
    delete_ctx_t c;
    memset(&c, 0, sizeof c);
    c.err = S3_ERR_MALFORMED_XML;
    char root[64] = "";
    int rc = xml_walk(xml, len, S3_XML_MAX_BYTES, XML_REQ_MAX_DEPTH, delete_cb, &c, root);
    free(c.cur_key);
    free(c.cur_vid);
    free(c.cur_etag);
    if (rc != 0 || strcmp(root, "Delete") != 0 || c.d.n == 0) {
        s3_err_t e = rc != 0 ? c.err : S3_ERR_MALFORMED_XML;
        s3_delete_req_free(&c.d);
        return e;
    }
    *out = c.d;
    return S3_OK;
}

/* --- CreateBucketConfiguration --- */

typedef struct create_ctx {
    char *out;
    size_t outlen;
    int seen;
    s3_err_t err;
} create_ctx_t;

static int create_cb(void *arg, const char *path, const char *text, size_t len)
{
    create_ctx_t *c = arg;
    if (strcmp(path, "CreateBucketConfiguration/LocationConstraint") != 0)
        return 0;
    trim(&text, &len);
    if (c->seen) {
        c->err = S3_ERR_MALFORMED_XML;
        return -1;
    }
    c->seen = 1;
    if (copy_field(c->out, c->outlen, text, len) != 0) {
        c->err = S3_ERR_INVALID_ARGUMENT; /* longer than any region name we could hold */
        return -1;
    }
    return 0;
}

s3_err_t s3_xml_parse_create_bucket(const char *xml, size_t len, char *out, size_t outlen)
{
    if (!outlen)
        return S3_ERR_INTERNAL;
    size_t i = 0;
    while (i < len && is_ws(xml[i]))
        i++;
    if (i == len) {
        out[0] = '\0';
        return S3_OK;
    }
    char tmp[256];
    create_ctx_t c = {tmp, WH_MIN(outlen, sizeof tmp), 0, S3_ERR_MALFORMED_XML};
    tmp[0] = '\0';
    char root[64] = "";
    if (xml_walk(xml, len, S3_XML_MAX_BYTES, XML_REQ_MAX_DEPTH, create_cb, &c, root) != 0)
        return c.err;
    if (strcmp(root, "CreateBucketConfiguration") != 0)
        return S3_ERR_MALFORMED_XML;
    memcpy(out, tmp, strlen(tmp) + 1);
    return S3_OK;
}

/* --- VersioningConfiguration --- */

typedef struct versioning_ctx {
    int status;
    s3_err_t err;
} versioning_ctx_t;

static int versioning_cb(void *arg, const char *path, const char *text, size_t len)
{
    versioning_ctx_t *c = arg;
    if (strcmp(path, "VersioningConfiguration/Status") != 0)
        return 0; /* MfaDelete and the like: not kept */
    trim(&text, &len);
    if (c->status) {
        c->err = S3_ERR_MALFORMED_XML;
        return -1;
    }
    if (len == 7 && strncmp(text, "Enabled", 7) == 0) {
        c->status = 1;
    } else if (len == 9 && strncmp(text, "Suspended", 9) == 0) {
        c->status = 2;
    } else {
        c->err = S3_ERR_MALFORMED_XML;
        return -1;
    }
    return 0;
}

s3_err_t s3_xml_parse_versioning(const char *xml, size_t len, int *status)
{
    versioning_ctx_t c = {0, S3_ERR_MALFORMED_XML};
    char root[64] = "";
    int rc = xml_walk(xml, len, S3_XML_MAX_BYTES, XML_REQ_MAX_DEPTH, versioning_cb, &c, root);
    if (rc != 0)
        return c.err;
    if (strcmp(root, "VersioningConfiguration") != 0 || !c.status)
        return S3_ERR_MALFORMED_XML;
    *status = c.status;
    return S3_OK;
}
