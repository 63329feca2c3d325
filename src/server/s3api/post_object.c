/* SPDX-License-Identifier: Apache-2.0 */
/* POST Object: the HTML form upload of browsers (multipart/form-data on POST /bucket).
 *
 * The form's fields come first and are kept (S3_POST_FIELDS_MAX bytes in all); the file part
 * comes last. When it begins, the form is decided: the policy's signature (SigV4 POST: the
 * HMAC of the base64 policy with the signing key) and its expiration and conditions, the key
 * (${filename} filled in), then s3:PutObject on that key for the signer (or the anonymous
 * principal of a form without policy), as PutObject decides it. The fields then become the
 * headers PutObject reads (Content-Type, x-amz-meta-*, x-amz-acl, x-amz-checksum-*, the tags),
 * replacing the request's own, and the file's bytes stream into the store writer as they come;
 * fields after the file are ignored, as in S3. At the end the object is committed by the
 * PutObject path (s3api_put_finish), and the answer is the form's: 204, 200, 201 with a
 * PostResponse document, or 303 to success_action_redirect.
 *
 * An error found while the body streams is kept and answered once the body is read (the
 * client is still sending); the writer is dropped at once. */
#include "s3api/s3api.h"
#include "base/codec.h"
#include "base/log.h"
#include "s3/form.h"
#include "auth/post_policy.h"
#include "auth/sigv2.h"
#include "s3/tags.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MOD "s3"

/* The fields before the file, names and values together (S3 refuses more than 20 KB). */
#define S3_POST_FIELDS_MAX (20u * 1024)
/* and at most this many of them (each is looked up by name: the count bounds that work) */
#define S3_POST_FIELDS_COUNT_MAX 500u

typedef struct front_post {
    s3_form_t *form;
    auth_post_field_t *fields; /* names and values malloc'd */
    size_t nfields, cap;
    char *cur_name;
    wh_sbuf_t cur;
    size_t field_bytes;
    bool ignore; /* a part after the file */
    bool in_file, file_done;
    uint64_t file_size;
    auth_post_range_t range;
    /* The kept error: answered when the body is read. */
    bool failed;
    int status;
    const char *code;
    char msg[320];
} s3api_post_t;

static s3_err_t fail_raw(front_req_t *r, int status, const char *code, const char *msg)
{
    s3api_post_t *ps = r->post;
    if (!ps->failed) {
        ps->failed = true;
        ps->status = status;
        ps->code = code;
        snprintf(ps->msg, sizeof ps->msg, "%s", msg ? msg : "");
        wh_debug(MOD, "post refused id=%s code=%s message=%s", r->id, code, ps->msg);
    }
    if (r->w) {
        store_writer_abort(r->w);
        r->w = NULL;
    }
    return S3_ERR_INTERNAL; /* stops the parser; the kept error is the answer */
}

static s3_err_t fail(front_req_t *r, s3_err_t e, const char *msg)
{
    return fail_raw(r, s3_err_http_status(e), s3_err_code(e),
                    msg && *msg ? msg : s3_err_message(e));
}

static s3_err_t failf(front_req_t *r, s3_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static s3_err_t failf(front_req_t *r, s3_err_t e, const char *fmt, ...)
{
    char m[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return fail(r, e, m);
}

/* An error a shared helper put in o, kept. */
static s3_err_t fail_out(front_req_t *r, s3h_out_t *o)
{
    s3_err_t e =
        fail_raw(r, o->status ? o->status : 500, o->code ? o->code : "InternalError", o->msg);
    wh_sbuf_free(&o->xml);
    wh_sbuf_free(&o->hdrs);
    return e;
}

static void out_init(s3h_out_t *o)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(&o->xml);
    wh_sbuf_init(&o->hdrs);
}

static const char *field(const s3api_post_t *ps, const char *name)
{
    for (size_t i = 0; i < ps->nfields; i++)
        if (strcasecmp(ps->fields[i].name, name) == 0)
            return ps->fields[i].value;
    return NULL;
}

/* ---- the fields become PutObject's headers ---------------------------------------------- */

/* The request's own headers that would say something about the object: the form decides. */
static bool drop_header(const char *n)
{
    static const char *const names[] = {
        "content-type",
        "content-md5",
        "content-encoding",
        "content-disposition",
        "content-language",
        "cache-control",
        "expires",
        "if-match",
        "if-none-match",
        "if-modified-since",
        "if-unmodified-since",
    };
    if (strncmp(n, "x-amz-", 6) == 0)
        return true;
    for (size_t i = 0; i < WH_ARRAY_SIZE(names); i++)
        if (strcmp(n, names[i]) == 0)
            return true;
    return false;
}

/* Form fields that are the form's own, never object headers. */
static bool form_own(const char *n)
{
    static const char *const names[] = {
        "key",
        "policy",
        "x-amz-algorithm",
        "x-amz-credential",
        "x-amz-date",
        "x-amz-signature",
        "x-amz-security-token",
        "success_action_status",
        "success_action_redirect",
        "redirect",
        "bucket",
        "awsaccesskeyid",
        "signature",
        "file",
        "tagging",
        "acl",
    };
    if (strncasecmp(n, "x-ignore-", 9) == 0)
        return true;
    for (size_t i = 0; i < WH_ARRAY_SIZE(names); i++)
        if (strcasecmp(n, names[i]) == 0)
            return true;
    return false;
}

static bool object_header(const char *n)
{
    static const char *const names[] = {
        "content-type",     "content-encoding", "content-disposition",
        "content-language", "cache-control",    "expires",
    };
    if (strncasecmp(n, "x-amz-", 6) == 0)
        return true;
    for (size_t i = 0; i < WH_ARRAY_SIZE(names); i++)
        if (strcasecmp(n, names[i]) == 0)
            return true;
    return false;
}

static s3_err_t fields_to_headers(front_req_t *r)
{
    s3api_post_t *ps = r->post;
    const char **names = calloc(ps->nfields + 2, sizeof *names);
    const char **values = calloc(ps->nfields + 2, sizeof *values);
    wh_sbuf_t tags;
    wh_sbuf_init(&tags);
    s3_err_t e = S3_OK;
    size_t n = 0;
    if (!names || !values) {
        e = fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
        goto out;
    }
    for (size_t i = 0; i < ps->nfields; i++) {
        const char *fn = ps->fields[i].name;
        if (!form_own(fn) && object_header(fn)) {
            if (strpbrk(ps->fields[i].value, "\r\n")) {
                e = failf(r, S3_ERR_INVALID_ARGUMENT,
                          "the form field %.64s holds a line break; it cannot be a header", fn);
                goto out;
            }
            names[n] = fn;
            values[n++] = ps->fields[i].value;
        }
    }
    const char *acl = field(ps, "acl");
    if (acl) {
        names[n] = "x-amz-acl";
        values[n++] = acl;
    }
    const char *tagging = field(ps, "tagging");
    if (tagging) { /* a Tagging XML document, kept as PutObject's x-amz-tagging */
        s3_tagset_t t;
        char msg[200];
        s3_err_t te = s3_tags_parse_xml(tagging, strlen(tagging), S3_TAGS_MAX, &t, msg, sizeof msg);
        if (te != S3_OK) {
            e = failf(r, te, "the tagging field: %s", msg);
            goto out;
        }
        s3_tags_format_query(&t, &tags);
        if (tags.oom) {
            e = fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
            goto out;
        }
        names[n] = "x-amz-tagging";
        values[n++] = tags.data ? tags.data : "";
    }
    if (!front_req_swap_headers(r, drop_header, names, values, n))
        e = r->hdr_oom ? fail(r, S3_ERR_INTERNAL, "out of memory reading the form")
                       : fail(r, S3_ERR_METADATA_TOO_LARGE,
                              "the form's object fields exceed the request header limits");
out:
    wh_sbuf_free(&tags);
    free(names);
    free(values);
    return e;
}

/* ---- the file part: the form is decided ------------------------------------------------- */

static s3_err_t check_signature(front_req_t *r, const char *policy)
{
    s3api_post_t *ps = r->post;
    size_t bl = strlen(policy);
    char *json = malloc(bl + 1);
    long jl = json ? wh_base64_decode(policy, bl, json, bl) : -1;
    if (jl < 0) {
        free(json);
        return json ? fail(r, S3_ERR_INVALID_POLICY_DOCUMENT,
                           "Invalid Policy: the policy field is not base64")
                    : fail(r, S3_ERR_INTERNAL, "out of memory reading the policy");
    }
    char msg[256] = "", ak[128];
    s3_err_t e;
    if (!field(ps, "x-amz-algorithm") && field(ps, "awsaccesskeyid")) {
        /* Signature Version 2: signature = base64(HMAC-SHA1(secret, policy)). */
        if (r->srv->cfg.sigv2_off) {
            free(json);
            return fail(r, S3_ERR_INVALID_REQUEST,
                        "Signature Version 2 is turned off on this server (setting sigv2 = off, "
                        "--sigv2 off): sign the form with SigV4 (x-amz-algorithm "
                        "AWS4-HMAC-SHA256)");
        }
        e = auth_sigv2_post_verify(field(ps, "awsaccesskeyid"), field(ps, "signature"), policy,
                                   front_req_secret, r, ak, msg, sizeof msg);
    } else {
        auth_post_auth_t a = {
            .algorithm = field(ps, "x-amz-algorithm"),
            .credential = field(ps, "x-amz-credential"),
            .amz_date = field(ps, "x-amz-date"),
            .signature = field(ps, "x-amz-signature"),
            .policy_b64 = policy,
        };
        e = auth_sigv4_post_verify(&a, front_req_secret, r, ak, msg, sizeof msg);
    }
    front_req_secret_wipe(r);
    if (e != S3_OK) {
        auth_principal_anon(&r->who);
        free(json);
        if (e == S3_ERR_INVALID_ACCESS_KEY && r->ident_err == WH_ERR_UNAVAILABLE)
            return fail(r, S3_ERR_SERVICE_UNAVAILABLE,
                        "the metadata database holding access keys is unreachable");
        return fail(r, e, msg);
    }
    e = auth_post_policy_check(json, (size_t)jl, time(NULL), s3h_b(r), ps->fields, ps->nfields,
                               &ps->range, msg, sizeof msg);
    free(json);
    return e == S3_OK ? S3_OK : fail(r, e, msg);
}

/* key with each ${filename} replaced by the file's name. */
static char *key_of(const char *key, const char *filename)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    for (const char *p = key; *p;) {
        const char *v = strstr(p, "${filename}");
        if (!v) {
            wh_sbuf_puts(&b, p);
            break;
        }
        wh_sbuf_append(&b, p, (size_t)(v - p));
        wh_sbuf_puts(&b, filename ? filename : "");
        p = v + 11;
    }
    if (!b.data)
        wh_sbuf_puts(&b, "");
    if (b.oom) {
        wh_sbuf_free(&b);
        return NULL;
    }
    return wh_sbuf_steal(&b);
}

static s3_err_t file_begin(front_req_t *r, const s3_form_part_t *part)
{
    s3api_post_t *ps = r->post;
    const char *policy = field(ps, "policy");
    s3_err_t e;
    if (policy) {
        if ((e = check_signature(r, policy)) != S3_OK)
            return e;
    } else if (field(ps, "x-amz-signature") || field(ps, "x-amz-credential")) {
        return fail(r, S3_ERR_INVALID_ARGUMENT,
                    "a signed POST form needs its policy field (the signature signs it)");
    } /* else: the request's principal, anonymous for a browser's form */
    const char *k = field(ps, "key");
    if (!k)
        return fail(r, S3_ERR_INVALID_ARGUMENT,
                    "Bucket POST must contain a field named 'key'.  If it is specified, please "
                    "check the order of the fields.");
    char *key = key_of(k, part->filename);
    if (!key)
        return fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
    if (!*key) {
        free(key);
        return fail(r, S3_ERR_INVALID_ARGUMENT, "the key field names an empty key");
    }
    free(r->route.key);
    r->route.key = key;
    r->route.key_len = strlen(key);
    s3h_out_t o;
    out_init(&o);
    if (s3h_key_check(r, &o) || s3h_authz_other(r, &o, "s3:PutObject", s3h_b(r), s3h_k(r), NULL))
        return fail_out(r, &o);
    if ((e = fields_to_headers(r)) != S3_OK)
        return e;
    /* What PutObject refuses before the body, refused before the file. */
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int ret = s3api_meta_from_request(r, &o, &m);
    if (!ret)
        ret = s3h_tags_from_request(r, &o, &m.tags);
    if (!ret)
        ret = s3h_lock_from_request(r, &o, &m);
    data_obj_meta_free(&m);
    s3_sums_t want;
    if (ret || s3h_sums_read(r, &o, &want) || s3h_sums_start(r, &o))
        return fail_out(r, &o);
    wh_status_t st = store_writer_open(s3h_st(r), &r->w);
    if (st != WH_OK) {
        s3h_err_status(r, &o, st, "opening a temp file");
        return fail_out(r, &o);
    }
    if (s3api_put_layout(r, &o))
        return fail_out(r, &o);
    s3api_put_etag_mode(r, false);
    /* The form's x-amz-server-side-encryption* fields, or the bucket's default, as PutObject. */
    if (s3h_sse_writer(r, &o, false))
        return fail_out(r, &o);
    ps->in_file = true;
    return S3_OK;
}

/* ---- form callbacks --------------------------------------------------------------------- */

static s3_err_t on_begin(void *arg, const s3_form_part_t *part)
{
    front_req_t *r = arg;
    s3api_post_t *ps = r->post;
    if (ps->file_done) {
        ps->ignore = true; /* S3 ignores what follows the file */
        return S3_OK;
    }
    if (strcasecmp(part->name, "file") == 0)
        return file_begin(r, part);
    ps->field_bytes += strlen(part->name);
    if (ps->field_bytes > S3_POST_FIELDS_MAX)
        return failf(r, S3_ERR_MALFORMED_POST_REQUEST,
                     "the form fields before the file exceed %u bytes", S3_POST_FIELDS_MAX);
    if (ps->nfields >= S3_POST_FIELDS_COUNT_MAX)
        return failf(r, S3_ERR_MALFORMED_POST_REQUEST,
                     "the form has more than %u fields before the file", S3_POST_FIELDS_COUNT_MAX);
    if (field(ps, part->name))
        return failf(r, S3_ERR_INVALID_ARGUMENT, "the form field %.64s is given twice", part->name);
    free(ps->cur_name);
    wh_sbuf_free(&ps->cur);
    if (!(ps->cur_name = strdup(part->name)))
        return fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
    return S3_OK;
}

static s3_err_t on_data(void *arg, const void *p, size_t n)
{
    front_req_t *r = arg;
    s3api_post_t *ps = r->post;
    if (ps->ignore)
        return S3_OK;
    if (!ps->in_file) {
        ps->field_bytes += n;
        if (ps->field_bytes > S3_POST_FIELDS_MAX)
            return failf(r, S3_ERR_MALFORMED_POST_REQUEST,
                         "the form fields before the file exceed %u bytes", S3_POST_FIELDS_MAX);
        wh_sbuf_append(&ps->cur, p, n);
        return ps->cur.oom ? fail(r, S3_ERR_INTERNAL, "out of memory reading the form") : S3_OK;
    }
    ps->file_size += n;
    if (ps->file_size > FRONT_MAX_PUT_SIZE)
        return fail(r, S3_ERR_ENTITY_TOO_LARGE, "a POST upload may carry at most 5 GiB");
    if (ps->range.set && ps->file_size > ps->range.max)
        return failf(r, S3_ERR_ENTITY_TOO_LARGE,
                     "Your proposed upload exceeds the maximum allowed size: the policy's "
                     "content-length-range allows at most %llu bytes",
                     (unsigned long long)ps->range.max);
    s3api_body_digest(r, p, n);
    wh_status_t st = store_writer_write(r->w, p, n);
    if (st != WH_OK)
        return failf(r, s3_err_from_status(st), "writing the object failed: %s", wh_status_str(st));
    return S3_OK;
}

static s3_err_t on_end(void *arg)
{
    front_req_t *r = arg;
    s3api_post_t *ps = r->post;
    if (ps->ignore) {
        ps->ignore = false;
        return S3_OK;
    }
    if (ps->in_file) {
        ps->in_file = false;
        ps->file_done = true;
        return S3_OK;
    }
    if (!ps->cur_name)
        return S3_OK;
    if (ps->cur.data && memchr(ps->cur.data, '\0', ps->cur.len))
        return failf(r, S3_ERR_INVALID_ARGUMENT, "the form field %.64s holds a NUL byte",
                     ps->cur_name);
    if (ps->nfields == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 16;
        auth_post_field_t *f = realloc(ps->fields, cap * sizeof *f);
        if (!f)
            return fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
        ps->fields = f;
        ps->cap = cap;
    }
    char *v = ps->cur.data ? wh_sbuf_steal(&ps->cur) : strdup("");
    if (!v)
        return fail(r, S3_ERR_INTERNAL, "out of memory reading the form");
    ps->fields[ps->nfields++] = (auth_post_field_t){ps->cur_name, v};
    ps->cur_name = NULL;
    return S3_OK;
}

int s3api_form_feed(front_req_t *r, const void *p, size_t n)
{
    s3api_post_t *ps = r->post;
    if (!ps || ps->failed)
        return 0; /* read and dropped: the kept error is answered at the end */
    char msg[256] = "";
    s3_err_t e = s3_form_feed(ps->form, p, n, msg, sizeof msg);
    if (e != S3_OK && !ps->failed)
        fail(r, e, msg);
    return 0;
}

/* ---- the steps -------------------------------------------------------------------------- */

void s3api_post_free(front_req_t *r)
{
    s3api_post_t *ps = r->post;
    if (!ps)
        return;
    s3_form_free(ps->form);
    for (size_t i = 0; i < ps->nfields; i++) {
        free((char *)ps->fields[i].name);
        free((char *)ps->fields[i].value);
    }
    free(ps->fields);
    free(ps->cur_name);
    wh_sbuf_free(&ps->cur);
    free(ps);
    r->post = NULL;
}

int s3api_post_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_need_bucket(r, o)))
        return ret;
    char boundary[S3_FORM_BOUNDARY_MAX + 1], msg[200];
    s3_err_t e = s3_form_boundary(front_hdr(r, "content-type"), boundary, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    const char *cl = front_hdr(r, "content-length");
    uint64_t len;
    if (cl && wh_parse_u64(cl, strlen(cl), &len) == 0 &&
        len > FRONT_MAX_PUT_SIZE + S3_POST_FIELDS_MAX + (1u << 20))
        return s3h_err(o, S3_ERR_ENTITY_TOO_LARGE, "a POST upload may carry at most 5 GiB");
    s3api_post_t *ps = calloc(1, sizeof *ps);
    static const s3_form_cb_t cb = {on_begin, on_data, on_end};
    if (!ps || !(ps->form = s3_form_new(boundary, &cb, r))) {
        free(ps);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory starting the form parser");
    }
    wh_sbuf_init(&ps->cur);
    r->post = ps;
    return 0; /* the body goes to s3api_form_feed */
}

/* The value of a header s3api_put_finish put on the answer (the ETag), or "". */
static const char *out_header(const s3h_out_t *o, const char *name)
{
    for (size_t i = 0; o->hdrs.data && i < o->hdrs.len;) {
        const char *n = o->hdrs.data + i;
        const char *v = n + strlen(n) + 1;
        if (strcasecmp(n, name) == 0)
            return v;
        i = (size_t)(v - o->hdrs.data) + strlen(v) + 1;
    }
    return "";
}

int s3api_post_finish(front_req_t *r, s3h_out_t *o)
{
    s3api_post_t *ps = r->post;
    char msg[256] = "";
    if (!ps)
        return s3h_err(o, S3_ERR_INTERNAL, "the form state is gone");
    if (!ps->failed && s3_form_finish(ps->form, msg, sizeof msg) != S3_OK)
        fail(r, S3_ERR_MALFORMED_POST_REQUEST, msg);
    if (!ps->failed && !ps->file_done)
        fail(r, S3_ERR_INVALID_ARGUMENT, "POST requires exactly one file upload per request.");
    if (!ps->failed && ps->range.set && ps->file_size < ps->range.min)
        failf(r, S3_ERR_ENTITY_TOO_SMALL,
              "Your proposed upload is smaller than the minimum allowed size: the policy's "
              "content-length-range needs at least %llu bytes, the file has %llu",
              (unsigned long long)ps->range.min, (unsigned long long)ps->file_size);
    if (ps->failed)
        return s3h_err_raw(o, ps->status, ps->code, ps->msg);
    int ret = s3api_put_finish(r, o, false);
    if (ret != 200)
        return ret;
    const char *etag = out_header(o, MHD_HTTP_HEADER_ETAG);
    const char *host = front_hdr(r, "host");
    wh_sbuf_t loc, kenc;
    wh_sbuf_init(&loc);
    wh_sbuf_init(&kenc);
    s3_uri_encode(s3h_k(r), strlen(s3h_k(r)), 0, &kenc);
    wh_sbuf_printf(&loc, "http://%s/%s/%s", host ? host : "localhost", s3h_b(r),
                   kenc.data ? kenc.data : "");
    const char *redirect = field(ps, "success_action_redirect");
    if (!redirect)
        redirect = field(ps, "redirect");
    const char *sas = field(ps, "success_action_status");
    if (redirect &&
        (strncmp(redirect, "http://", 7) == 0 || strncmp(redirect, "https://", 8) == 0)) {
        wh_sbuf_t u, be;
        wh_sbuf_init(&u);
        wh_sbuf_init(&be);
        s3_uri_encode(s3h_b(r), strlen(s3h_b(r)), 1, &be);
        wh_sbuf_puts(&u, redirect);
        wh_sbuf_printf(&u, "%sbucket=%s&key=", strchr(redirect, '?') ? "&" : "?",
                       be.data ? be.data : "");
        s3_uri_encode(s3h_k(r), strlen(s3h_k(r)), 1, &u);
        wh_sbuf_puts(&u, "&etag=");
        s3_uri_encode(etag, strlen(etag), 1, &u);
        ret = u.oom ? s3h_err(o, S3_ERR_INTERNAL, "out of memory building the redirect")
                    : (s3h_out_header(o, MHD_HTTP_HEADER_LOCATION, u.data), s3h_ok(o, 303));
        wh_sbuf_free(&u);
        wh_sbuf_free(&be);
    } else if (sas && strcmp(sas, "201") == 0) {
        wh_sbuf_t b;
        wh_sbuf_init(&b);
        wh_sbuf_puts(&b, S3H_XML_DECL "<PostResponse>");
        s3_xml_elem(&b, "Location", loc.data ? loc.data : "");
        s3_xml_elem(&b, "Bucket", s3h_b(r));
        s3_xml_elem(&b, "Key", s3h_k(r));
        s3_xml_elem(&b, "ETag", etag);
        wh_sbuf_puts(&b, "</PostResponse>");
        s3h_out_header(o, MHD_HTTP_HEADER_LOCATION, loc.data ? loc.data : "");
        ret = s3h_ok_xml(o, 201, &b);
    } else {
        s3h_out_header(o, MHD_HTTP_HEADER_LOCATION, loc.data ? loc.data : "");
        ret = s3h_ok(o, sas && strcmp(sas, "200") == 0 ? 200 : 204);
    }
    wh_sbuf_free(&loc);
    wh_sbuf_free(&kenc);
    return ret;
}
