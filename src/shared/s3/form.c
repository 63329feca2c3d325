/* SPDX-License-Identifier: Apache-2.0 */
/* multipart/form-data, streamed (form.h). The delimiter is CRLF "--" boundary; a boundary
 * holds no CR (RFC 2046 bchars), so CR occurs in the delimiter only at its start, and a failed
 * partial match can only restart at the byte that broke it: one match counter is the whole
 * search state, and a part's bytes go out as runs between CRs. */
#include "s3/form.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum {
    ST_BODY,    /* in a part's bytes, or the preamble before the first delimiter */
    ST_AFTER,   /* just after a delimiter: "--" ends, LWSP CRLF starts a part */
    ST_DASH,    /* saw the first '-' */
    ST_LWSP,    /* transport padding before CRLF */
    ST_LF,      /* saw CR, want LF */
    ST_HEADERS, /* a part's header section */
    ST_END,     /* after the closing delimiter: the epilogue is ignored */
    ST_ERR,
} form_state_t;

struct s3_form {
    s3_form_cb_t cb;
    void *arg;
    form_state_t st;
    bool in_part; /* ST_BODY holds a part's bytes (not the preamble) */
    size_t m;     /* delimiter bytes matched */
    size_t dlen;
    char delim[S3_FORM_BOUNDARY_MAX + 5];
    size_t hlen;
    char hbuf[S3_FORM_PART_HEADER_MAX + 1];
};

static s3_err_t bad(s3_form_t *f, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static s3_err_t bad(s3_form_t *f, char *msg, size_t msglen, const char *fmt, ...)
{
    if (f)
        f->st = ST_ERR;
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return S3_ERR_MALFORMED_POST_REQUEST;
}

/* RFC 2046 bchars: DIGIT / ALPHA / "'()+_,-./:=?" and space (not last). */
static bool bchar(char c)
{
    return isalnum((unsigned char)c) || (c && strchr("'()+_,-./:=? ", c));
}

s3_err_t s3_form_boundary(const char *ct, char out[S3_FORM_BOUNDARY_MAX + 1], char *msg,
                          size_t msglen)
{
    if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0 ||
        (ct[19] && ct[19] != ';' && ct[19] != ' ' && ct[19] != '\t'))
        return bad(NULL, msg, msglen, "POST Object needs Content-Type multipart/form-data");
    const char *p = ct + 19;
    while (*p) {
        while (*p == ';' || *p == ' ' || *p == '\t')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        size_t nlen = (size_t)(p - name);
        while (nlen && (name[nlen - 1] == ' ' || name[nlen - 1] == '\t'))
            nlen--;
        if (*p != '=') {
            continue;
        }
        p++;
        char v[S3_FORM_BOUNDARY_MAX + 2];
        size_t vlen = 0;
        bool too_long = false;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1])
                    p++;
                if (vlen <= S3_FORM_BOUNDARY_MAX)
                    v[vlen++] = *p;
                else
                    too_long = true;
                p++;
            }
            if (*p != '"')
                return bad(NULL, msg, msglen, "an unterminated quoted parameter in Content-Type");
            p++;
        } else {
            while (*p && *p != ';' && *p != ' ' && *p != '\t') {
                if (vlen <= S3_FORM_BOUNDARY_MAX)
                    v[vlen++] = *p;
                else
                    too_long = true;
                p++;
            }
        }
        if (nlen == 8 && strncasecmp(name, "boundary", 8) == 0) {
            if (too_long || vlen > S3_FORM_BOUNDARY_MAX || vlen == 0)
                return bad(NULL, msg, msglen, "the multipart boundary must be 1 to %d characters",
                           S3_FORM_BOUNDARY_MAX);
            for (size_t i = 0; i < vlen; i++)
                if (!bchar(v[i]))
                    return bad(NULL, msg, msglen,
                               "the multipart boundary holds a character RFC 2046 forbids "
                               "(0x%02x)",
                               (unsigned char)v[i]);
            if (v[vlen - 1] == ' ')
                return bad(NULL, msg, msglen, "the multipart boundary may not end in a space");
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return S3_OK;
        }
    }
    return bad(NULL, msg, msglen, "Content-Type multipart/form-data names no boundary");
}

s3_form_t *s3_form_new(const char *boundary, const s3_form_cb_t *cb, void *arg)
{
    size_t bl = strlen(boundary);
    if (bl == 0 || bl > S3_FORM_BOUNDARY_MAX || !cb)
        return NULL;
    s3_form_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->cb = *cb;
    f->arg = arg;
    memcpy(f->delim, "\r\n--", 4);
    memcpy(f->delim + 4, boundary, bl); /* the delimiter is matched by length (dlen) */
    f->delim[4 + bl] = '\0';
    f->dlen = 4 + bl;
    f->st = ST_BODY;
    f->m = 2; /* the body may open with the delimiter itself: its CRLF is implied */
    return f;
}

void s3_form_free(s3_form_t *f)
{
    free(f);
}

static s3_err_t emit(s3_form_t *f, const void *p, size_t n)
{
    if (!n || !f->in_part || !f->cb.part_data)
        return S3_OK;
    return f->cb.part_data(f->arg, p, n);
}

/* The value of a parameter: a token, or a quoted string (backslash escapes), unescaped in
 * place; *pp moves past it. NULL when a quote is not closed. */
static char *param_value(char **pp)
{
    char *p = *pp, *v, *w;
    if (*p == '"') {
        v = w = ++p;
        while (*p && *p != '"') {
            if (*p == '\\' && p[1])
                p++;
            *w++ = *p++;
        }
        if (*p != '"')
            return NULL;
        p++;
        *w = '\0';
    } else {
        v = p;
        while (*p && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        if (*p) {
            *p++ = '\0';
        }
    }
    *pp = p;
    return v;
}

static s3_err_t parse_headers(s3_form_t *f, char *msg, size_t msglen)
{
    s3_form_part_t part = {0};
    char *line = f->hbuf;
    f->hbuf[f->hlen] = '\0';
    while (*line) {
        char *eol = strstr(line, "\r\n");
        if (!eol) /* cannot happen: the section ends in CRLF CRLF */
            return bad(f, msg, msglen, "a form part's header line does not end in CRLF");
        *eol = '\0';
        if (eol == line)
            break;
        if (*line == ' ' || *line == '\t')
            return bad(f, msg, msglen, "a form part's header is folded over lines");
        char *colon = strchr(line, ':');
        if (!colon)
            return bad(f, msg, msglen, "a form part's header line has no colon");
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *end = v + strlen(v);
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (strcasecmp(line, "content-type") == 0) {
            part.content_type = v;
        } else if (strcasecmp(line, "content-disposition") == 0) {
            if (strncasecmp(v, "form-data", 9) != 0 || (v[9] && v[9] != ';' && v[9] != ' '))
                return bad(f, msg, msglen, "a form part's Content-Disposition is not form-data");
            char *p = v + 9;
            while (*p) {
                while (*p == ';' || *p == ' ' || *p == '\t')
                    p++;
                if (!*p)
                    break;
                char *pn = p;
                while (*p && *p != '=' && *p != ';')
                    p++;
                if (*p != '=')
                    return bad(f, msg, msglen, "a Content-Disposition parameter has no value");
                char *pe = p;
                while (pe > pn && (pe[-1] == ' ' || pe[-1] == '\t'))
                    pe--;
                *pe = '\0';
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                char *pv = param_value(&p);
                if (!pv)
                    return bad(f, msg, msglen,
                               "a Content-Disposition parameter's quote is not closed");
                if (strcasecmp(pn, "name") == 0)
                    part.name = pv;
                else if (strcasecmp(pn, "filename") == 0)
                    part.filename = pv;
            }
        }
        line = eol + 2;
    }
    if (!part.name || !*part.name)
        return bad(f, msg, msglen, "a form part has no Content-Disposition name");
    f->in_part = true;
    f->st = ST_BODY;
    f->m = 0;
    return f->cb.part_begin ? f->cb.part_begin(f->arg, &part) : S3_OK;
}

s3_err_t s3_form_feed(s3_form_t *f, const void *data, size_t n, char *msg, size_t msglen)
{
    const char *p = data;
    size_t i = 0;
    s3_err_t e;
    if (f->st == ST_ERR)
        return bad(f, msg, msglen, "the form parser stopped at an earlier error");
    while (i < n) {
        char c = p[i];
        switch (f->st) {
        case ST_BODY:
            if (f->m == 0) {
                const char *cr = memchr(p + i, '\r', n - i);
                size_t run = cr ? (size_t)(cr - (p + i)) : n - i;
                if ((e = emit(f, p + i, run)) != S3_OK)
                    goto cb_err;
                i += run;
                if (cr) {
                    f->m = 1;
                    i++;
                }
                break;
            }
            if (c == f->delim[f->m]) {
                i++;
                if (++f->m == f->dlen) {
                    f->m = 0;
                    if (f->in_part && f->cb.part_end && (e = f->cb.part_end(f->arg)) != S3_OK)
                        goto cb_err;
                    f->in_part = false;
                    f->st = ST_AFTER;
                }
                break;
            }
            /* Not the delimiter: what matched was data; c is looked at again. */
            if ((e = emit(f, f->delim, f->m)) != S3_OK)
                goto cb_err;
            f->m = 0;
            break;
        case ST_AFTER:
            i++;
            if (c == '-')
                f->st = ST_DASH;
            else if (c == '\r')
                f->st = ST_LF;
            else if (c == ' ' || c == '\t')
                f->st = ST_LWSP;
            else
                return bad(f, msg, msglen,
                           "a multipart boundary is followed by 0x%02x, not "
                           "CRLF or \"--\"",
                           (unsigned char)c);
            break;
        case ST_DASH:
            i++;
            if (c != '-')
                return bad(f, msg, msglen, "a multipart boundary is followed by a lone '-'");
            f->st = ST_END;
            break;
        case ST_LWSP:
            i++;
            if (c == '\r')
                f->st = ST_LF;
            else if (c != ' ' && c != '\t')
                return bad(f, msg, msglen,
                           "a multipart boundary line holds 0x%02x after the "
                           "boundary",
                           (unsigned char)c);
            break;
        case ST_LF:
            i++;
            if (c != '\n')
                return bad(f, msg, msglen, "a multipart boundary line ends in CR without LF");
            f->st = ST_HEADERS;
            f->hlen = 0;
            break;
        case ST_HEADERS:
            if (f->hlen == S3_FORM_PART_HEADER_MAX)
                return bad(f, msg, msglen, "a form part's header section exceeds %d bytes",
                           S3_FORM_PART_HEADER_MAX);
            f->hbuf[f->hlen++] = c;
            i++;
            if ((f->hlen == 2 && memcmp(f->hbuf, "\r\n", 2) == 0) ||
                (f->hlen >= 4 && memcmp(f->hbuf + f->hlen - 4, "\r\n\r\n", 4) == 0)) {
                if ((e = parse_headers(f, msg, msglen)) != S3_OK) {
                    if (f->st == ST_ERR)
                        return e;
                    goto cb_err;
                }
            }
            break;
        case ST_END:
            return S3_OK; /* the epilogue */
        case ST_ERR:
            return S3_ERR_MALFORMED_POST_REQUEST;
        }
    }
    return S3_OK;
cb_err:
    f->st = ST_ERR;
    return e;
}

s3_err_t s3_form_finish(s3_form_t *f, char *msg, size_t msglen)
{
    if (f->st == ST_END)
        return S3_OK;
    if (f->st == ST_ERR)
        return bad(f, msg, msglen, "the form parser stopped at an earlier error");
    return bad(f, msg, msglen, "the form body ends before its closing boundary");
}
