/* SPDX-License-Identifier: Apache-2.0 */
/* What the S3 handler families share: XML pieces, request checks, store-status mapping,
 * conditional requests and the body checksums. */
#include "s3ctl/s3ctl.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "s3/xml.h"

#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- XML pieces ------------------------------------------------------------------------- */

static void xml_owner(wh_sbuf_t *b, const char *elem, const char *id, const char *name)
{
    wh_sbuf_printf(b, "<%s>", elem);
    s3_xml_elem(b, "ID", id);
    s3_xml_elem(b, "DisplayName", name);
    wh_sbuf_printf(b, "</%s>", elem);
}

void s3h_xml_owner(const front_req_t *r, wh_sbuf_t *b, const char *elem)
{
    if (r->who.kind == AUTH_PRINCIPAL_USER) {
        xml_owner(b, elem, r->who.canonical_id, r->who.user);
        return;
    }
    s3h_xml_owner_of(r, b, elem, "");
}

void s3h_xml_owner_of(const front_req_t *r, wh_sbuf_t *b, const char *elem, const char *stored)
{
    char id[65];
    s3h_owner_id(r, stored, id);
    /* Names are known for root ("root": never its access key id) and for the caller; another
     * user's id stands for its name. */
    const char *name =
        !stored || !*stored ? "root"
        : r->who.kind == AUTH_PRINCIPAL_USER && strcmp(stored, r->who.canonical_id) == 0
            ? r->who.user
            : id;
    xml_owner(b, elem, id, name);
}

void s3h_etag_quoted(const char *etag, char out[84])
{
    snprintf(out, 84, "\"%s\"", etag);
}

void s3h_xml_etag(wh_sbuf_t *b, const char *etag)
{
    char q[84];
    s3h_etag_quoted(etag, q);
    s3_xml_elem(b, "ETag", q);
}

void s3h_xml_time(wh_sbuf_t *b, const char *name, time_t t)
{
    char iso[25];
    wh_iso8601(t, iso);
    s3_xml_elem(b, name, iso);
}

void s3h_xml_enc(wh_sbuf_t *b, const char *name, const char *text, bool url)
{
    if (!url) {
        s3_xml_elem(b, name, text);
        return;
    }
    wh_sbuf_t e;
    wh_sbuf_init(&e);
    s3_uri_encode(text, strlen(text), 0, &e);
    s3_xml_elem(b, name, e.data ? e.data : "");
    wh_sbuf_free(&e);
}

/* ---- request checks and store statuses -------------------------------------------------- */

int s3h_err_not_found(front_req_t *r, s3h_out_t *o, s3_err_t otherwise)
{
    wh_status_t bs = store_bucket_exists(s3h_st(r), s3h_b(r));
    if (bs == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (bs != WH_OK)
        return s3h_err(o, s3_err_from_status(bs), NULL); /* e.g. metadata unreachable: 503 */
    return s3h_err(o, otherwise, NULL);
}

int s3h_need_bucket(front_req_t *r, s3h_out_t *o)
{
    if (s3h_authz_bucket_known(r))
        return 0; /* s3h_authorize looked it up */
    wh_status_t bs = store_bucket_exists(s3h_st(r), s3h_b(r));
    if (bs == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (bs != WH_OK)
        return s3h_err_status(r, o, bs, "looking up the bucket");
    return 0;
}

int s3h_key_check(front_req_t *r, s3h_out_t *o)
{
    if (r->route.key_len > STORE_MAX_KEY)
        return s3h_err(o, S3_ERR_KEY_TOO_LONG, "object keys are at most 1024 bytes");
    if (r->route.key_len != strlen(s3h_k(r)) || !store_key_valid(s3h_k(r), r->route.key_len))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "object keys must be valid UTF-8 without NUL characters");
    return 0;
}

int s3h_err_status(front_req_t *r, s3h_out_t *o, wh_status_t st, const char *what)
{
    switch (st) {
    case WH_ERR_NOT_FOUND:
        return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_KEY);
    case WH_ERR_NOMEM:
        return s3h_err(o, S3_ERR_SLOW_DOWN, "the server is out of memory; retry later");
    case WH_ERR_UNAVAILABLE: /* 503: not the request rate, a service the store needs */
        return s3h_errf(o, S3_ERR_SERVICE_UNAVAILABLE,
                        "%s failed: the metadata database or the storage servers holding the "
                        "data are unreachable; retry when they are back",
                        what);
    case WH_ERR_NO_SPACE: /* 507: the storage is full */
    case WH_ERR_BUSY: {   /* 503 SlowDown: write conflicts still unresolved after retries */
        s3_err_t e = s3_err_from_status(st);
        return s3h_errf(o, e, "%s failed: %s", what, s3_err_message(e));
    }
    default:
        return s3h_errf(o, S3_ERR_INTERNAL, "%s failed: %s", what, wh_status_str(st));
    }
}

int s3h_q_uint(front_req_t *r, s3h_out_t *o, const char *name, uint64_t dflt, uint64_t *out)
{
    const char *v = front_route_q(&r->route, name);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (wh_parse_u64(v, strlen(v), out) != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s must be a non-negative integer", name);
    return 0;
}

int s3h_q_encoding_url(front_req_t *r, s3h_out_t *o, bool *url)
{
    const char *e = front_route_q(&r->route, "encoding-type");
    *url = false;
    if (!e)
        return 0;
    if (strcmp(e, "url") != 0)
        return s3h_err(o, S3_ERR_INVALID_ENCODING, NULL);
    *url = true;
    return 0;
}

int s3h_body_md5_check(front_req_t *r, s3h_out_t *o)
{
    const char *md5 = front_hdr(r, "content-md5");
    if (!md5)
        return 0;
    uint8_t d[WH_MD5_LEN + 4], got[WH_MD5_LEN];
    if (wh_base64_decode(md5, strlen(md5), d, sizeof d) != WH_MD5_LEN)
        return s3h_err(o, S3_ERR_INVALID_DIGEST, "Content-MD5 must be the base64 of 16 bytes");
    wh_md5(r->buf.data ? r->buf.data : "", r->buf.len, got);
    if (memcmp(d, got, WH_MD5_LEN) != 0)
        return s3h_err(o, S3_ERR_BAD_DIGEST, "Content-MD5 does not match the request body");
    return 0;
}

/* ---- conditional requests --------------------------------------------------------------- */

int s3h_preconditions(front_req_t *r, const data_obj_meta_t *m, const char *pfx)
{
    char n[64];
    time_t t;
    snprintf(n, sizeof n, "%sif-match", pfx);
    const char *im = front_hdr(r, n);
    snprintf(n, sizeof n, "%sif-unmodified-since", pfx);
    const char *ius = front_hdr(r, n);
    snprintf(n, sizeof n, "%sif-none-match", pfx);
    const char *inm = front_hdr(r, n);
    snprintf(n, sizeof n, "%sif-modified-since", pfx);
    const char *ims = front_hdr(r, n);
    if (im) {
        if (!data_etag_list_match(im, m->etag))
            return 412;
    } else if (ius && wh_http_date_parse(ius, &t) == 0 && m->mtime > t) {
        return 412;
    }
    if (inm) {
        if (data_etag_list_match(inm, m->etag))
            return 304;
    } else if (ims && wh_http_date_parse(ims, &t) == 0 && m->mtime <= t) {
        return 304;
    }
    return 0;
}

static int parse_time_hdr(const char *v, time_t *t)
{
    if (wh_http_date_parse(v, t) == 0)
        return 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    if (*end == '.')
        for (end++; *end >= '0' && *end <= '9'; end++) {
        }
    if (*end == 'Z')
        end++;
    if (*end)
        return -1;
    *t = timegm(&tm);
    return 0;
}

int s3h_delete_cond(front_req_t *r, s3h_out_t *o, const char *etag, data_del_cond_t *c, bool *any)
{
    memset(c, 0, sizeof *c);
    const char *im = etag ? etag : front_hdr(r, "if-match");
    const char *lmt = etag ? NULL : front_hdr(r, "x-amz-if-match-last-modified-time");
    const char *sz = etag ? NULL : front_hdr(r, "x-amz-if-match-size");
    *any = im || lmt || sz;
    c->if_match = im;
    if (lmt && parse_time_hdr(lmt, &c->mtime) != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-amz-if-match-last-modified-time '%.64s' "
                        "is not an HTTP date or an ISO 8601 time",
                        lmt);
    if (sz && wh_parse_u64(sz, strlen(sz), &c->size) != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-amz-if-match-size '%.32s' is not a byte "
                        "count",
                        sz);
    c->has_mtime = lmt != NULL;
    c->has_size = sz != NULL;
    return 0;
}

int s3h_delete_cond_failed(s3h_out_t *o, const char *key, const data_del_cond_t *c)
{
    switch (c->failed) {
    case DATA_DCOND_MISSING:
        return s3h_errf(o, S3_ERR_NO_SUCH_KEY, "If-Match names an object but key %.200s has none%s",
                        key, c->delete_marker ? " (that version is a delete marker)" : "");
    case DATA_DCOND_ETAG:
        return s3h_errf(o, S3_ERR_PRECONDITION_FAILED,
                        "If-Match %.84s does not match the object's ETag \"%s\"", c->if_match,
                        c->etag);
    case DATA_DCOND_MTIME:
        return s3h_errf(o, S3_ERR_PRECONDITION_FAILED,
                        "x-amz-if-match-last-modified-time does not match the object's last "
                        "modification time");
    case DATA_DCOND_SIZE:
        return s3h_errf(o, S3_ERR_PRECONDITION_FAILED,
                        "x-amz-if-match-size %" PRIu64 " does not match the object's size %" PRIu64,
                        c->size, c->got_size);
    case DATA_DCOND_OK:
        break;
    }
    return s3h_err(o, S3_ERR_INTERNAL, "a failed delete condition names no reason");
}

int s3h_write_cond(front_req_t *r, s3h_out_t *o, data_cond_t *c)
{
    memset(c, 0, sizeof *c);
    const char *inm = front_hdr(r, "if-none-match");
    const char *im = front_hdr(r, "if-match");
    if (inm && im)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "If-None-Match and If-Match cannot be combined on a write");
    if (inm) {
        while (*inm == ' ' || *inm == '\t')
            inm++;
        size_t n = strlen(inm);
        while (n && (inm[n - 1] == ' ' || inm[n - 1] == '\t'))
            n--;
        if (n != 1 || inm[0] != '*')
            return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                           "If-None-Match on a write takes only *: write only if the key has "
                           "no object");
        c->kind = DATA_COND_ABSENT;
        return 0;
    }
    if (im) {
        while (*im == ' ' || *im == '\t')
            im++;
        size_t n = strlen(im);
        while (n && (im[n - 1] == ' ' || im[n - 1] == '\t'))
            n--;
        if (n >= 2 && im[0] == '"' && im[n - 1] == '"') {
            im++;
            n -= 2;
        }
        if (n == 0 || n >= sizeof c->etag || memchr(im, ',', n) || memchr(im, '"', n))
            return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                           "If-Match on a write takes one ETag (quoted or not)");
        c->kind = DATA_COND_MATCH;
        memcpy(c->etag, im, n);
        c->etag[n] = '\0';
    }
    return 0;
}

int s3h_write_cond_err(front_req_t *r, s3h_out_t *o, wh_status_t st, const data_cond_t *c,
                       const char *what)
{
    if (c->kind != DATA_COND_NONE) {
        if (st == WH_ERR_PRECONDITION && c->failed)
            return s3h_err(o, S3_ERR_PRECONDITION_FAILED,
                           c->kind == DATA_COND_ABSENT
                               ? "If-None-Match: * failed: the key already has an object"
                               : "If-Match failed: the object's ETag is not the one given");
        if (st == WH_ERR_NOT_FOUND && c->failed)
            return s3h_err(o, S3_ERR_NO_SUCH_KEY,
                           "If-Match failed: the key has no object to match");
        /* A concurrent change the store could not order against this write. */
        if (st == WH_ERR_PRECONDITION || st == WH_ERR_BUSY)
            return s3h_err(o, S3_ERR_CONDITIONAL_REQUEST_CONFLICT, NULL);
    }
    return s3h_err_status(r, o, st, what);
}

/* ---- checksums -------------------------------------------------------------------------- */

static const char *req_hdr(void *arg, const char *lname)
{
    return front_hdr(arg, lname);
}

static const char *req_trailer(void *arg, const char *lname)
{
    const front_req_t *r = arg;
    return r->chunked ? auth_chunked_trailer(r->chunked, lname) : NULL;
}

bool s3h_sum_named(front_req_t *r, s3_sum_t a)
{
    return s3_sum_named(req_hdr, r, a);
}

int s3h_sums_start(front_req_t *r, s3h_out_t *o)
{
    /* crc32c and crc64nvme come from the store writer, which computes them always. */
    bool on[S3_SUM__COUNT] = {false};
    on[S3_SUM_CRC32] = s3_sum_named(req_hdr, r, S3_SUM_CRC32);
    on[S3_SUM_SHA1] = s3_sum_named(req_hdr, r, S3_SUM_SHA1);
    on[S3_SUM_SHA256] = s3_sum_named(req_hdr, r, S3_SUM_SHA256);
    if (s3_sum_ctx_init(&r->sums, on) != 0)
        return s3h_err(o, S3_ERR_INTERNAL, "cannot initialise the checksum digests");
    return 0;
}

int s3h_sums_read(front_req_t *r, s3h_out_t *o, s3_sums_t *w)
{
    char msg[200] = "";
    s3_err_t e = s3_sums_read(req_hdr, r->chunked ? req_trailer : NULL, r, w, msg, sizeof msg);
    return e == S3_OK ? 0 : s3h_err(o, e, msg);
}

int s3h_sums_check(front_req_t *r, s3h_out_t *o, const s3_sums_t *w, store_writer_t *wr,
                   char md5_hex[33])
{
    char msg[240] = "";
    store_writer_md5_hex(wr, md5_hex);
    uint8_t md5[WH_MD5_LEN];
    s3_err_t e = S3_OK;
    if (wh_hex_decode(md5_hex, 32, md5, sizeof md5) == 0)
        e = s3_sums_compare_md5(w, md5, msg, sizeof msg);
    uint8_t got[S3_SUM__COUNT][S3_SUM_MAX_LEN];
    s3_sum_ctx_final(&r->sums, got);
    s3_sum_u32(store_writer_crc32c(wr), got[S3_SUM_CRC32C]);
    s3_sum_u64(store_writer_crc64nvme(wr), got[S3_SUM_CRC64NVME]);
    for (int i = 0; e == S3_OK && i < S3_SUM__COUNT; i++)
        e = s3_sums_compare(w, (s3_sum_t)i, got[i], msg, sizeof msg);
    return e == S3_OK ? 0 : s3h_err(o, e, msg);
}

void s3h_sums_to_meta(data_obj_meta_t *m, const s3_sums_t *w)
{
    /* crc32c and crc64nvme have fields of their own; the others go in the metadata JSON, as
     * the headers they are, and come back on whole-object GET/HEAD. */
    static const s3_sum_t extra[] = {S3_SUM_CRC32, S3_SUM_SHA1, S3_SUM_SHA256};
    if (w->set[S3_SUM_CRC32C])
        snprintf(m->crc32c, sizeof m->crc32c, "%.*s", (int)sizeof m->crc32c - 1,
                 w->b64[S3_SUM_CRC32C]);
    bool any = false;
    for (size_t i = 0; i < WH_ARRAY_SIZE(extra); i++)
        any |= w->set[extra[i]];
    if (!any)
        return;
    json_t *j = m->user_meta_json ? json_loads(m->user_meta_json, 0, NULL) : json_object();
    if (!j)
        return;
    for (size_t i = 0; i < WH_ARRAY_SIZE(extra); i++)
        if (w->set[extra[i]])
            json_object_set_new(j, s3_sum_header(extra[i]), json_string(w->b64[extra[i]]));
    char *js = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (js) {
        free(m->user_meta_json);
        m->user_meta_json = js;
    }
}

void s3h_sums_to_out(s3h_out_t *o, const s3_sums_t *w)
{
    static const s3_sum_t extra[] = {S3_SUM_CRC32, S3_SUM_SHA1, S3_SUM_SHA256};
    if (w->set[S3_SUM_CRC32C])
        s3h_out_header(o, "x-amz-checksum-crc32c", w->b64[S3_SUM_CRC32C]);
    for (size_t i = 0; i < WH_ARRAY_SIZE(extra); i++)
        if (w->set[extra[i]])
            s3h_out_header(o, s3_sum_header(extra[i]), w->b64[extra[i]]);
}

int s3h_trailers_check(front_req_t *r, s3h_out_t *o)
{
    if (!r->chunked)
        return 0;
    char msg[200] = "";
    s3_err_t e = s3_trailers_check(front_hdr(r, "x-amz-trailer"), req_trailer, r, msg, sizeof msg);
    return e == S3_OK ? 0 : s3h_err(o, e, msg);
}

int s3h_mpu_cap_check(front_req_t *r, s3h_out_t *o)
{
    uint64_t n = 0;
    wh_status_t st = meta_upload_count(store_meta(s3h_st(r)), s3h_b(r), &n);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "counting the bucket's uploads");
    /* Checked before the insert, not in its transaction: concurrent creates may pass the
     * cap by as many as run at once. */
    unsigned cap = r->srv->cfg.max_uploads;
    if (cap && n >= cap) {
        char msg[sizeof o->msg];
        snprintf(msg, sizeof msg,
                 "bucket %.63s has %" PRIu64 " incomplete multipart uploads, "
                 "the most this server keeps per bucket (--max-uploads %u): complete or abort "
                 "some first (ListMultipartUploads lists them)",
                 s3h_b(r), n, cap);
        return s3h_err_raw(o, 400, "TooManyUploads", msg);
    }
    /* And per principal, over every bucket: one user cannot fill the metadata with uploads
     * spread over many buckets. */
    unsigned ucap = r->srv->cfg.max_user_uploads;
    if (!ucap)
        return 0;
    st = meta_upload_count_owner(store_meta(s3h_st(r)), s3h_owner_stored(r), &n);
    if (st == WH_ERR_UNSUPPORTED)
        return 0; /* a backend without the count: the per-bucket cap alone */
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "counting the user's uploads");
    if (n >= ucap) {
        char msg[sizeof o->msg];
        snprintf(msg, sizeof msg,
                 "you have %" PRIu64 " incomplete multipart uploads over all buckets, the most "
                 "this server keeps per user (--max-user-uploads %u): complete or abort some "
                 "first (ListMultipartUploads lists them)",
                 n, ucap);
        return s3h_err_raw(o, 400, "TooManyUploads", msg);
    }
    return 0;
}

bool s3h_mpu_completed_before(front_req_t *r, const store_complete_part_t *parts, size_t n,
                              data_obj_meta_t *m)
{
    wh_md5_t h;
    if (n == 0 || wh_md5_init(&h) != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t d[WH_MD5_LEN];
        const char *e = parts[i].etag;
        size_t el = strlen(e);
        if (el >= 2 && e[0] == '"' && e[el - 1] == '"')
            e++, el -= 2;
        if (wh_hex_decode(e, el, d, sizeof d) != 0) {
            uint8_t drop[WH_MD5_LEN];
            wh_md5_final(&h, drop);
            return false; /* not an MD5 part ETag: nothing to compare with */
        }
        wh_md5_update(&h, d, sizeof d);
    }
    uint8_t d[WH_MD5_LEN];
    wh_md5_final(&h, d);
    char want[64];
    wh_hex_encode(d, sizeof d, want);
    snprintf(want + 32, sizeof want - 32, "-%zu", n);
    data_obj_meta_free(m);
    memset(m, 0, sizeof *m);
    wh_status_t st = store_object_open(
        s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r)}, m, NULL);
    if (st != WH_OK)
        return false;
    return strcmp(m->etag, want) == 0;
}
