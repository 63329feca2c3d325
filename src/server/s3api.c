/* The S3 API handlers: buckets, objects, listings, multipart, and the RDMA data path hook-up
 * (x-amz-rdma-token on GET, ranged GET, PUT and UploadPart; ../shared/DESIGN.md "The
 * protocol"). http.c has verified SigV4 before any of this runs. */
#include "server/delegate.h"
#include "server/server.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "s3/range.h"
#include "s3/xml.h"

#include <errno.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MOD "s3"
#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* ---- small helpers ---------------------------------------------------------------------- */

static store_t *ST(srv_req_t *r)
{
    return r->srv->store;
}

static const char *B(srv_req_t *r)
{
    return r->route.bucket;
}

static const char *K(srv_req_t *r)
{
    return r->route.key;
}

static void owner_xml(srv_req_t *r, wh_sbuf_t *b, const char *elem)
{
    char id[65];
    const char *ak = r->srv->cfg.access_key;
    wh_sha256_hex(ak, strlen(ak), id);
    wh_sbuf_printf(b, "<%s>", elem);
    s3_xml_elem(b, "ID", id);
    s3_xml_elem(b, "DisplayName", ak);
    wh_sbuf_printf(b, "</%s>", elem);
}

static void etag_quoted(const char *etag, char out[84])
{
    snprintf(out, 84, "\"%s\"", etag);
}

static void xml_etag(wh_sbuf_t *b, const char *etag)
{
    char q[84];
    etag_quoted(etag, q);
    s3_xml_elem(b, "ETag", q);
}

static void xml_time(wh_sbuf_t *b, const char *name, time_t t)
{
    char iso[25];
    wh_iso8601(t, iso);
    s3_xml_elem(b, name, iso);
}

/* The text of an element, URL-encoded when the request asked for encoding-type=url. */
static void xml_enc(wh_sbuf_t *b, const char *name, const char *text, bool url)
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

static void reply_status(srv_req_t *r, wh_status_t st, const char *what);

/* NoSuchBucket when the bucket is missing, else the given error. */
static void reply_not_found(srv_req_t *r, s3_err_t otherwise)
{
    wh_status_t bs = store_bucket_exists(ST(r), B(r));
    if (bs == WH_ERR_NOT_FOUND)
        srv_reply_err(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (bs != WH_OK)
        srv_reply_err(r, s3_err_from_status(bs), NULL); /* e.g. metadata unreachable: 503 */
    else
        srv_reply_err(r, otherwise, NULL);
}

static bool need_bucket(srv_req_t *r)
{
    wh_status_t bs = store_bucket_exists(ST(r), B(r));
    if (bs == WH_ERR_NOT_FOUND) {
        srv_reply_err(r, S3_ERR_NO_SUCH_BUCKET, NULL);
        return false;
    }
    if (bs != WH_OK) {
        reply_status(r, bs, "looking up the bucket");
        return false;
    }
    return true;
}

static bool key_ok(srv_req_t *r)
{
    if (r->route.key_len > STORE_MAX_KEY) {
        srv_reply_err(r, S3_ERR_KEY_TOO_LONG, "object keys are at most 1024 bytes");
        return false;
    }
    if (r->route.key_len != strlen(K(r)) || !store_key_valid(K(r), r->route.key_len)) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                      "object keys must be valid UTF-8 without NUL characters");
        return false;
    }
    return true;
}

static void reply_status(srv_req_t *r, wh_status_t st, const char *what)
{
    switch (st) {
    case WH_ERR_NOT_FOUND:
        reply_not_found(r, S3_ERR_NO_SUCH_KEY);
        return;
    case WH_ERR_NOMEM:
        srv_reply_err(r, S3_ERR_SLOW_DOWN, "the server is out of memory; retry later");
        return;
    case WH_ERR_NO_SPACE:
    case WH_ERR_UNAVAILABLE: {
        char msg[200];
        snprintf(msg, sizeof msg, "%s failed: %s", what, s3_err_message(s3_err_from_status(st)));
        srv_reply_err(r, s3_err_from_status(st), msg);
        return;
    }
    default: {
        char msg[200];
        snprintf(msg, sizeof msg, "%s failed: %s", what, wh_status_str(st));
        srv_reply_err(r, S3_ERR_INTERNAL, msg);
        return;
    }
    }
}

/* Parses an optional non-negative integer query parameter. */
static bool q_uint(srv_req_t *r, const char *name, uint64_t dflt, uint64_t *out)
{
    const char *v = srv_route_q(&r->route, name);
    if (!v) {
        *out = dflt;
        return true;
    }
    if (wh_parse_u64(v, strlen(v), out) != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a non-negative integer", name);
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT, msg);
        return false;
    }
    return true;
}

static bool q_encoding_url(srv_req_t *r, bool *url)
{
    const char *e = srv_route_q(&r->route, "encoding-type");
    *url = false;
    if (!e)
        return true;
    if (strcmp(e, "url") != 0) {
        srv_reply_err(r, S3_ERR_INVALID_ENCODING, NULL);
        return false;
    }
    *url = true;
    return true;
}

/* ---- metadata headers ------------------------------------------------------------------- */

/* Standard headers kept with the object and returned on GET/HEAD, besides Content-Type. */
static const char *const g_kept_headers[] = {
    "cache-control", "content-disposition", "content-encoding", "content-language", "expires",
};

/* x-amz-meta-* and the kept headers as a JSON object, or NULL when there are none. */
static char *user_meta_json(srv_req_t *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname, *v = r->hdrs[i].value;
        bool keep = strncmp(n, "x-amz-meta-", 11) == 0 && n[11];
        for (size_t j = 0; !keep && j < WH_ARRAY_SIZE(g_kept_headers); j++)
            keep = strcmp(n, g_kept_headers[j]) == 0;
        if (!keep)
            continue;
        if (strcmp(n, "content-encoding") == 0) {
            /* aws-chunked is transport framing, not the object's encoding. */
            if (strcasecmp(v, "aws-chunked") == 0)
                continue;
            if (strncasecmp(v, "aws-chunked,", 12) == 0)
                v += 12;
        }
        json_object_set_new(o, n, json_string(v));
    }
    char *s = json_object_size(o) ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return s;
}

static void add_meta_headers(struct MHD_Response *resp, const char *json, bool whole)
{
    if (!json)
        return;
    json_t *o = json_loads(json, 0, NULL);
    if (!o)
        return;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        /* A stored checksum covers the whole object, not a range of it. */
        if (!whole && strncmp(k, "x-amz-checksum-", 15) == 0)
            continue;
        if (json_is_string(v))
            srv_resp_header(resp, k, json_string_value(v));
    }
    json_decref(o);
}

static void fill_put_meta(srv_req_t *r, store_obj_meta_t *m)
{
    const char *ct = srv_hdr(r, "content-type");
    snprintf(m->content_type, sizeof m->content_type, "%s",
             ct && *ct ? ct : "binary/octet-stream");
    m->user_meta_json = user_meta_json(r);
}

/* ---- checksums -------------------------------------------------------------------------- */

/* The extra algorithms S3 defines: name, digest length. */
enum { XSUM_CRC32, XSUM_SHA1, XSUM_SHA256, XSUM__COUNT };
static const struct {
    const char *hdr;
    size_t len;
} g_xsums[XSUM__COUNT] = {
    {"x-amz-checksum-crc32", 4},
    {"x-amz-checksum-sha1", 20},
    {"x-amz-checksum-sha256", 32},
};

typedef struct want_sums {
    bool md5, c32, c64;
    uint8_t md5v[WH_MD5_LEN];
    uint32_t c32v;
    uint64_t c64v;
    char c32s[16], c64s[16];
    bool x[XSUM__COUNT];
    uint8_t xv[XSUM__COUNT][32];
    char xs[XSUM__COUNT][48]; /* canonical base64 */
} want_sums_t;

/* True when the client names the header's algorithm, in the header or in x-amz-trailer. */
static bool sum_named(srv_req_t *r, const char *hdr)
{
    if (srv_hdr(r, hdr))
        return true;
    const char *t = srv_hdr(r, "x-amz-trailer");
    size_t n = strlen(hdr);
    for (const char *p = t; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *z = e;
        while (z > p && z[-1] == ' ')
            z--;
        if ((size_t)(z - p) == n && strncasecmp(p, hdr, n) == 0)
            return true;
        p = e;
    }
    return false;
}

/* Starts the extra digests the request names. Returns false (and replies) on failure. */
static bool xsums_start(srv_req_t *r)
{
    r->x_crc32 = sum_named(r, g_xsums[XSUM_CRC32].hdr);
    r->x_sha1 = sum_named(r, g_xsums[XSUM_SHA1].hdr);
    r->x_sha256 = sum_named(r, g_xsums[XSUM_SHA256].hdr);
    r->crc32 = 0;
    if (r->x_sha1) {
        r->sha1_ctx = EVP_MD_CTX_new();
        if (!r->sha1_ctx || EVP_DigestInit_ex(r->sha1_ctx, EVP_sha1(), NULL) != 1) {
            srv_reply_err(r, S3_ERR_INTERNAL, "cannot initialise sha1");
            return false;
        }
    }
    if (r->x_sha256 && wh_sha256_init(&r->sha256x) != 0) {
        r->x_sha256 = false;
        srv_reply_err(r, S3_ERR_INTERNAL, "cannot initialise sha256");
        return false;
    }
    return true;
}

void srv_s3_body_digest(srv_req_t *r, const void *p, size_t n)
{
    if (r->x_crc32)
        r->crc32 = crc32_gzip_refl(r->crc32, p, n);
    if (r->sha1_ctx)
        EVP_DigestUpdate(r->sha1_ctx, p, n);
    if (r->x_sha256)
        wh_sha256_update(&r->sha256x, p, n);
}

/* Finishes the extra digests into out (raw bytes per algorithm). */
static void xsums_final(srv_req_t *r, uint8_t out[XSUM__COUNT][32])
{
    memset(out, 0, XSUM__COUNT * 32);
    if (r->x_crc32) {
        out[XSUM_CRC32][0] = (uint8_t)(r->crc32 >> 24);
        out[XSUM_CRC32][1] = (uint8_t)(r->crc32 >> 16);
        out[XSUM_CRC32][2] = (uint8_t)(r->crc32 >> 8);
        out[XSUM_CRC32][3] = (uint8_t)r->crc32;
    }
    if (r->sha1_ctx) {
        unsigned len = 0;
        EVP_DigestFinal_ex(r->sha1_ctx, out[XSUM_SHA1], &len);
        EVP_MD_CTX_free(r->sha1_ctx);
        r->sha1_ctx = NULL;
    }
    if (r->x_sha256) {
        wh_sha256_final(&r->sha256x, out[XSUM_SHA256]);
        r->x_sha256 = false;
    }
}

/* Reads Content-MD5 and x-amz-checksum-{crc32c,crc64nvme}; from the aws-chunked trailer when
 * there is one. Replies and returns false when one is malformed. */
static bool read_sums(srv_req_t *r, want_sums_t *w)
{
    memset(w, 0, sizeof *w);
    const char *md5 = srv_hdr(r, "content-md5");
    if (md5) {
        uint8_t d[WH_MD5_LEN + 4];
        if (wh_base64_decode(md5, strlen(md5), d, sizeof d) != WH_MD5_LEN) {
            srv_reply_err(r, S3_ERR_INVALID_DIGEST, "Content-MD5 must be the base64 of 16 bytes");
            return false;
        }
        memcpy(w->md5v, d, WH_MD5_LEN);
        w->md5 = true;
    }
    const char *c32 = r->chunked ? s3_chunked_trailer(r->chunked, "x-amz-checksum-crc32c") : NULL;
    if (!c32)
        c32 = srv_hdr(r, "x-amz-checksum-crc32c");
    if (c32) {
        if (wh_crc32c_from_b64(c32, &w->c32v) != 0) {
            srv_reply_err(r, S3_ERR_INVALID_REQUEST,
                          "Value for x-amz-checksum-crc32c is invalid: base64 of 4 bytes");
            return false;
        }
        w->c32 = true;
        wh_crc32c_b64(w->c32v, w->c32s);
    }
    const char *c64 =
        r->chunked ? s3_chunked_trailer(r->chunked, "x-amz-checksum-crc64nvme") : NULL;
    if (!c64)
        c64 = srv_hdr(r, "x-amz-checksum-crc64nvme");
    if (c64) {
        if (wh_crc64nvme_from_b64(c64, &w->c64v) != 0) {
            srv_reply_err(r, S3_ERR_INVALID_REQUEST,
                          "Value for x-amz-checksum-crc64nvme is invalid: base64 of 8 bytes");
            return false;
        }
        w->c64 = true;
        wh_crc64nvme_b64(w->c64v, w->c64s);
    }
    for (int i = 0; i < XSUM__COUNT; i++) {
        const char *v = r->chunked ? s3_chunked_trailer(r->chunked, g_xsums[i].hdr) : NULL;
        if (!v)
            v = srv_hdr(r, g_xsums[i].hdr);
        if (!v)
            continue;
        uint8_t d[40];
        if (wh_base64_decode(v, strlen(v), d, sizeof d) != (long)g_xsums[i].len) {
            char msg[160];
            snprintf(msg, sizeof msg, "Value for %s is invalid: base64 of %zu bytes",
                     g_xsums[i].hdr, g_xsums[i].len);
            srv_reply_err(r, S3_ERR_INVALID_REQUEST, msg);
            return false;
        }
        w->x[i] = true;
        memcpy(w->xv[i], d, g_xsums[i].len);
        wh_base64_encode(d, g_xsums[i].len, w->xs[i]);
    }
    return true;
}

/* Compares what was written with what the client claimed; md5_hex gets the writer's md5. */
static bool check_sums(srv_req_t *r, const want_sums_t *w, store_writer_t *wr, char md5_hex[33])
{
    store_writer_md5_hex(wr, md5_hex);
    if (w->md5) {
        char want[33];
        wh_hex_encode(w->md5v, WH_MD5_LEN, want);
        if (strcmp(want, md5_hex) != 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "Content-MD5 is %s (hex) but the body's MD5 is %s", want,
                     md5_hex);
            srv_reply_err(r, S3_ERR_BAD_DIGEST, msg);
            return false;
        }
    }
    if (w->c32 && w->c32v != store_writer_crc32c(wr)) {
        char got[9];
        wh_crc32c_b64(store_writer_crc32c(wr), got);
        char msg[200];
        snprintf(msg, sizeof msg, "The CRC32C you specified (%s) did not match the calculated "
                                  "checksum (%s).", w->c32s, got);
        srv_reply_err(r, S3_ERR_BAD_DIGEST, msg);
        return false;
    }
    uint8_t xd[XSUM__COUNT][32];
    xsums_final(r, xd);
    for (int i = 0; i < XSUM__COUNT; i++) {
        if (w->x[i] && memcmp(w->xv[i], xd[i], g_xsums[i].len) != 0) {
            char gs[48], msg[200];
            wh_base64_encode(xd[i], g_xsums[i].len, gs);
            snprintf(msg, sizeof msg, "%s is %s but the body's is %s", g_xsums[i].hdr,
                     w->xs[i], gs);
            srv_reply_err(r, S3_ERR_BAD_DIGEST, msg);
            return false;
        }
    }
    if (w->c64 && w->c64v != store_writer_crc64nvme(wr)) {
        char got[13];
        wh_crc64nvme_b64(store_writer_crc64nvme(wr), got);
        char msg[200];
        snprintf(msg, sizeof msg, "The CRC64NVME you specified (%s) did not match the "
                                  "calculated checksum (%s).", w->c64s, got);
        srv_reply_err(r, S3_ERR_BAD_DIGEST, msg);
        return false;
    }
    return true;
}

/* ---- RDMA ------------------------------------------------------------------------------- */

/* Maps a failed or declined transfer to its reply: never 200, never a body. */
static void rdma_fail(srv_req_t *r, const srv_rdma_result_t *res, wh_status_t st)
{
    int status = res->http_status >= 400 ? res->http_status : 500;
    const char *code = res->s3_code ? res->s3_code : "InternalError";
    char msg[300];
    if (res->message[0])
        snprintf(msg, sizeof msg, "%s", res->message);
    else
        snprintf(msg, sizeof msg, "RDMA transfer failed: %s", wh_status_str(st));
    wh_info(MOD, "rdma refused id=%s peer=%s status=%d code=%s reason=\"%s\"", r->id,
            r->peer.addr, status, code, msg);
    struct MHD_Response *resp = srv_resp_empty();
    if (resp && status == 501)
        srv_resp_header(resp, "x-amz-rdma-reply", "501");
    srv_reply_err_raw(r, status, code, msg, resp);
}

static wh_status_t rdma_sink(void *arg, const void *p, size_t n)
{
    srv_req_t *r = arg;
    srv_s3_body_digest(r, p, n);
    return store_writer_write(r->w, p, n);
}

/* The extra checksums the client sent and the server verified are kept with the object (in the
 * metadata JSON, as the headers they are) and returned on whole-object GET/HEAD. */
static void meta_add_sums(store_obj_meta_t *m, const want_sums_t *w)
{
    bool any = false;
    for (int i = 0; i < XSUM__COUNT; i++)
        any |= w->x[i];
    if (!any)
        return;
    json_t *o = m->user_meta_json ? json_loads(m->user_meta_json, 0, NULL) : json_object();
    if (!o)
        return;
    for (int i = 0; i < XSUM__COUNT; i++)
        if (w->x[i])
            json_object_set_new(o, g_xsums[i].hdr, json_string(w->xs[i]));
    char *js = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (js) {
        free(m->user_meta_json);
        m->user_meta_json = js;
    }
}

static void reply_add_sums(struct MHD_Response *resp, const want_sums_t *w)
{
    for (int i = 0; i < XSUM__COUNT; i++)
        if (w->x[i])
            srv_resp_header(resp, g_xsums[i].hdr, w->xs[i]);
}

/* Every trailer named in x-amz-trailer must have arrived: an unsigned payload is only as safe
 * as its checksum. */
static bool trailers_arrived(srv_req_t *r)
{
    const char *t = srv_hdr(r, "x-amz-trailer");
    if (!t || !r->chunked)
        return true;
    for (const char *p = t; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *z = e;
        while (z > p && z[-1] == ' ')
            z--;
        if (z > p) {
            char name[64];
            size_t n = (size_t)(z - p) < sizeof name - 1 ? (size_t)(z - p) : sizeof name - 1;
            for (size_t i = 0; i < n; i++)
                name[i] = (char)((p[i] >= 'A' && p[i] <= 'Z') ? p[i] - 'A' + 'a' : p[i]);
            name[n] = '\0';
            if (!s3_chunked_trailer(r->chunked, name)) {
                char msg[160];
                snprintf(msg, sizeof msg, "x-amz-trailer declares %s but the body ended "
                                          "without it", name);
                srv_reply_err(r, S3_ERR_INCOMPLETE_BODY, msg);
                return false;
            }
        }
        p = e;
    }
    return true;
}

static void add_u64_header(struct MHD_Response *resp, const char *name, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRIu64, v);
    srv_resp_header(resp, name, b);
}

/* PUT or UploadPart with a token: the body comes by RDMA read from the client's memory. */
static void rdma_put(srv_req_t *r, bool part)
{
    const char *cl = srv_hdr(r, "content-length");
    if ((cl && strcmp(cl, "0") != 0) || srv_hdr(r, "transfer-encoding")) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                      "a PUT with x-amz-rdma-token carries no body: send Content-Length: 0");
        return;
    }
    if (r->auth.mode != S3_PAYLOAD_UNSIGNED) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT, "a PUT with x-amz-rdma-token must send "
                                                  "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        return;
    }
    want_sums_t want;
    if (!read_sums(r, &want) || !xsums_start(r))
        return;
    wh_status_t st = store_writer_open(ST(r), &r->w);
    if (st != WH_OK) {
        reply_status(r, st, "opening a temp file");
        return;
    }
    srv_rdma_result_t res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = wh_now_ns();
    /* A cluster's storage servers pull the bytes themselves; else this server's engine. */
    char table_etag[48] = "";
    st = srv_delegate_rdma_put(r, srv_hdr(r, "x-amz-rdma-token"), &res, table_etag);
    if (st == WH_ERR_UNSUPPORTED)
        st = srv_rdma_put(r->srv->rdma, srv_hdr(r, "x-amz-rdma-token"), &r->peer, rdma_sink, r,
                          &res);
    uint64_t t1 = wh_now_ns();
    if (st != WH_OK) {
        store_writer_abort(r->w);
        r->w = NULL;
        rdma_fail(r, &res, st);
        return;
    }
    uint64_t got = store_writer_size(r->w);
    if (res.bytes != got || res.crc64nvme != store_writer_crc64nvme(r->w)) {
        store_writer_abort(r->w);
        r->w = NULL;
        wh_error(MOD, "rdma put inconsistent id=%s moved=%llu stored=%llu", r->id,
                 (unsigned long long)res.bytes, (unsigned long long)got);
        srv_rdma_result_t bad = {.http_status = 500, .s3_code = "InternalError"};
        snprintf(bad.message, sizeof bad.message,
                 "the transport reported %llu bytes but %llu reached the store",
                 (unsigned long long)res.bytes, (unsigned long long)got);
        rdma_fail(r, &bad, WH_ERR_TRANSPORT);
        return;
    }
    char md5[33];
    if (!check_sums(r, &want, r->w, md5)) {
        store_writer_abort(r->w);
        r->w = NULL;
        return;
    }
    char etag[80];
    if (part) {
        char e[33];
        st = store_mpu_part_commit(ST(r), B(r), K(r), r->upload_id, r->part_number, r->w, e);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", e);
    } else {
        store_obj_meta_t m;
        memset(&m, 0, sizeof m);
        fill_put_meta(r, &m);
        snprintf(m.etag, sizeof m.etag, "%s", table_etag[0] ? table_etag : md5);
        if (want.c32)
            snprintf(m.crc32c, sizeof m.crc32c, "%s", want.c32s);
        meta_add_sums(&m, &want);
        st = store_writer_commit(r->w, B(r), K(r), &m);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", m.etag);
        store_obj_meta_free(&m);
    }
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, part ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_NO_SUCH_KEY);
        else
            reply_status(r, st, "committing the object");
        return;
    }
    struct MHD_Response *resp = srv_resp_empty();
    if (resp) {
        reply_add_sums(resp, &want);
        char q[84], c64[13];
        etag_quoted(etag, q);
        srv_resp_header(resp, MHD_HTTP_HEADER_ETAG, q);
        wh_crc64nvme_b64(res.crc64nvme, c64);
        srv_resp_header(resp, "x-amz-checksum-crc64nvme", c64);
        if (want.c32)
            srv_resp_header(resp, "x-amz-checksum-crc32c", want.c32s);
        srv_resp_header(resp, "x-amz-rdma-reply", "200");
        add_u64_header(resp, "x-amz-rdma-bytes-transferred", res.bytes);
    }
    wh_debug(MOD, "rdma put id=%s bytes=%llu provider=%s xfer_ms=%.3f commit_ms=%.3f", r->id,
             (unsigned long long)res.bytes, res.provider ? res.provider : "-",
             (double)(t1 - t0) / 1e6, (double)(wh_now_ns() - t1) / 1e6);
    srv_reply(r, 200, resp);
}

/* ---- GET / HEAD ------------------------------------------------------------------------- */

static bool etag_list_match(const char *list, const char *etag)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *a = p, *z = e;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
            z--;
        if (z - a == 1 && *a == '*')
            return true;
        if (z - a >= 2 && a[0] == 'W' && a[1] == '/')
            a += 2;
        if (z - a >= 2 && *a == '"' && z[-1] == '"') {
            a++;
            z--;
        }
        if ((size_t)(z - a) == strlen(etag) && strncmp(a, etag, (size_t)(z - a)) == 0)
            return true;
        p = e;
    }
    return false;
}

/* Returns 0 to go on, or the status to answer with (304 or 412). */
static int preconditions(srv_req_t *r, const store_obj_meta_t *m, const char *pfx)
{
    char n[64];
    time_t t;
    snprintf(n, sizeof n, "%sif-match", pfx);
    const char *im = srv_hdr(r, n);
    snprintf(n, sizeof n, "%sif-unmodified-since", pfx);
    const char *ius = srv_hdr(r, n);
    snprintf(n, sizeof n, "%sif-none-match", pfx);
    const char *inm = srv_hdr(r, n);
    snprintf(n, sizeof n, "%sif-modified-since", pfx);
    const char *ims = srv_hdr(r, n);
    if (im) {
        if (!etag_list_match(im, m->etag))
            return 412;
    } else if (ius && wh_http_date_parse(ius, &t) == 0 && m->mtime > t) {
        return 412;
    }
    if (inm) {
        if (etag_list_match(inm, m->etag))
            return 304;
    } else if (ims && wh_http_date_parse(ims, &t) == 0 && m->mtime <= t) {
        return 304;
    }
    return 0;
}

static void object_headers(srv_req_t *r, struct MHD_Response *resp, const store_obj_meta_t *m,
                           bool whole)
{
    char q[84], date[30];
    etag_quoted(m->etag, q);
    srv_resp_header(resp, MHD_HTTP_HEADER_ETAG, q);
    wh_http_date(m->mtime, date);
    srv_resp_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, date);
    srv_resp_header(resp, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    add_meta_headers(resp, m->user_meta_json, whole);
    const char *ct = srv_route_q(&r->route, "response-content-type");
    srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                    ct ? ct : (m->content_type[0] ? m->content_type : "binary/octet-stream"));
    static const char *const overrides[][2] = {
        {"response-content-disposition", "Content-Disposition"},
        {"response-content-encoding", "Content-Encoding"},
        {"response-content-language", "Content-Language"},
        {"response-cache-control", "Cache-Control"},
        {"response-expires", "Expires"},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(overrides); i++) {
        const char *v = srv_route_q(&r->route, overrides[i][0]);
        if (v) {
            MHD_del_response_header(resp, overrides[i][1], NULL);
            srv_resp_header(resp, overrides[i][1], v);
        }
    }
    if (whole) {
        if (m->crc32c[0])
            srv_resp_header(resp, "x-amz-checksum-crc32c", m->crc32c);
        if (m->crc64nvme[0])
            srv_resp_header(resp, "x-amz-checksum-crc64nvme", m->crc64nvme);
    }
    if (m->parts)
        add_u64_header(resp, "x-amz-mp-parts-count", m->parts);
}

static ssize_t no_body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void get_object(srv_req_t *r)
{
    if (!key_ok(r))
        return;
    store_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int fd = -1;
    store_reader_t *rd = NULL; /* bytes that are not local (a cluster): through the table */
    wh_status_t st = store_object_open(ST(r), B(r), K(r), &m, r->head ? NULL : &fd);
    if (st == WH_ERR_UNSUPPORTED && !r->head)
        st = store_object_reader(ST(r), B(r), K(r), &m, &rd);
    if (st != WH_OK) {
        reply_status(r, st, "opening the object");
        return;
    }
    struct MHD_Response *resp = NULL;
    int pc = preconditions(r, &m, "");
    if (pc) {
        if (pc == 304) {
            resp = srv_resp_empty();
            if (resp) {
                char q[84], date[30];
                etag_quoted(m.etag, q);
                srv_resp_header(resp, MHD_HTTP_HEADER_ETAG, q);
                wh_http_date(m.mtime, date);
                srv_resp_header(resp, MHD_HTTP_HEADER_LAST_MODIFIED, date);
            }
            srv_reply(r, 304, resp);
        } else {
            srv_reply_err(r, S3_ERR_PRECONDITION_FAILED, NULL);
        }
        goto out;
    }

    uint64_t off = 0, len = m.size;
    int status = 200;
    const char *range = srv_hdr(r, "range");
    if (range) {
        switch (s3_range_parse(range, m.size, &off, &len)) {
        case S3_RANGE_OK:
            status = 206;
            break;
        case S3_RANGE_IGNORE:
            off = 0;
            len = m.size;
            break;
        case S3_RANGE_UNSATISFIABLE: {
            resp = srv_resp_empty();
            char cr[64];
            snprintf(cr, sizeof cr, "bytes */%" PRIu64, m.size);
            if (resp)
                srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
            if (r->head || r->token_req) {
                srv_reply_err_raw(r, 416, "InvalidRange", "The requested range is not "
                                  "satisfiable", resp);
            } else {
                /* The XML body form; Content-Range is added to it below. */
                if (resp)
                    MHD_destroy_response(resp);
                wh_sbuf_t b;
                wh_sbuf_init(&b);
                s3_xml_error(&b, "InvalidRange", "The requested range is not satisfiable",
                             K(r), r->id);
                size_t n = b.len;
                resp = srv_resp_buffer(wh_sbuf_steal(&b), n);
                if (resp) {
                    srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
                    srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
                }
                r->tx_body = n;
                srv_reply(r, 416, resp);
            }
            goto out;
        }
        }
    }

    if (r->token_req && !r->head) {
        /* RDMA GET: the bytes go by one-sided write; the reply has headers only. */
        srv_rdma_result_t res;
        memset(&res, 0, sizeof res);
        uint64_t t0 = wh_now_ns();
        if (rd)
            st = srv_delegate_rdma_get(r, rd, srv_hdr(r, "x-amz-rdma-token"), off, len, &res);
        else
            st = srv_rdma_get(r->srv->rdma, srv_hdr(r, "x-amz-rdma-token"), &r->peer, fd, off,
                              len, &res);
        wh_debug(MOD, "rdma get id=%s bytes=%llu provider=%s xfer_ms=%.3f st=%s", r->id,
                 (unsigned long long)res.bytes, res.provider ? res.provider : "-",
                 (double)(wh_now_ns() - t0) / 1e6, wh_status_str(st));
        if (st != WH_OK) {
            rdma_fail(r, &res, st);
            goto out;
        }
        if (res.bytes != len) {
            srv_rdma_result_t bad = {.http_status = 500, .s3_code = "InternalError"};
            snprintf(bad.message, sizeof bad.message,
                     "short RDMA transfer: %llu of %llu bytes",
                     (unsigned long long)res.bytes, (unsigned long long)len);
            rdma_fail(r, &bad, WH_ERR_TRANSPORT);
            goto out;
        }
        resp = srv_resp_empty();
        if (resp) {
            object_headers(r, resp, &m, false);
            /* Checksum of exactly the bytes moved, replacing any whole-object one. */
            char c64[13];
            wh_crc64nvme_b64(res.crc64nvme, c64);
            srv_resp_header(resp, "x-amz-checksum-crc64nvme", c64);
            srv_resp_header(resp, "x-amz-rdma-reply", status == 206 ? "206" : "200");
            add_u64_header(resp, "x-amz-rdma-bytes-transferred", res.bytes);
            if (status == 206) {
                char cr[80];
                snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off,
                         off + len - 1, m.size);
                srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
            }
        }
        srv_reply(r, status, resp);
        goto out;
    }

    if (r->head) {
        resp = MHD_create_response_from_callback(len, 4096, no_body_reader, NULL, NULL);
    } else if (len == 0) {
        resp = srv_resp_empty();
    } else if (rd) {
        resp = srv_reader_response(rd, off, len);
        if (resp) {
            rd = NULL;
            r->tx_body = len;
            r->http_read = true;
        }
    } else {
        /* sendfile(2) from the version this request opened; MHD closes fd. */
        resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
        if (resp) {
            fd = -1;
            r->tx_body = len;
            r->http_read = true;
        }
    }
    if (resp) {
        object_headers(r, resp, &m, status == 200);
        if (status == 206) {
            char cr[80];
            snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1,
                     m.size);
            srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        }
    }
    srv_reply(r, status, resp);
out:
    if (fd >= 0)
        close(fd);
    store_reader_close(rd);
    store_obj_meta_free(&m);
}

/* ---- PUT (object and part) -------------------------------------------------------------- */

static bool parse_part_query(srv_req_t *r)
{
    const char *pn = srv_route_q(&r->route, "partNumber");
    uint64_t n;
    if (!pn || wh_parse_u64(pn, strlen(pn), &n) != 0 || n < 1 || n > STORE_MAX_PARTS) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                      "Part number must be an integer between 1 and 10000, inclusive");
        return false;
    }
    r->part_number = (uint32_t)n;
    r->upload_id = strdup(srv_route_q(&r->route, "uploadId"));
    if (!r->upload_id) {
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory");
        return false;
    }
    wh_status_t st = store_mpu_check(ST(r), B(r), K(r), r->upload_id);
    if (st == WH_ERR_NOT_FOUND) {
        reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
        return false;
    }
    if (st != WH_OK) {
        reply_status(r, st, "looking up the upload");
        return false;
    }
    return true;
}

static void put_begin(srv_req_t *r, bool part)
{
    if (!key_ok(r))
        return;
    if (part) {
        if (!parse_part_query(r))
            return;
    } else if (!need_bucket(r)) {
        return;
    }
    if (r->token_req) {
        rdma_put(r, part);
        return;
    }
    const char *cl = srv_hdr(r, "content-length");
    const char *te = srv_hdr(r, "transfer-encoding");
    if (!cl && !te) {
        srv_reply_err(r, S3_ERR_MISSING_CONTENT_LENGTH, NULL);
        return;
    }
    uint64_t size = 0;
    const char *dcl = srv_hdr(r, "x-amz-decoded-content-length");
    const char *sz = dcl ? dcl : cl;
    if (sz && wh_parse_u64(sz, strlen(sz), &size) != 0) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT, "Content-Length must be a decimal number");
        return;
    }
    if (!part && size > SRV_MAX_PUT_SIZE) {
        srv_reply_err(r, S3_ERR_ENTITY_TOO_LARGE,
                      "a single PUT may carry at most 5 GiB; use a multipart upload");
        return;
    }
    want_sums_t want; /* validate the headers now; trailers are read at the end */
    if (!read_sums(r, &want) || !xsums_start(r))
        return;
    wh_status_t st = store_writer_open(ST(r), &r->w);
    if (st != WH_OK) {
        reply_status(r, st, "opening a temp file");
        return;
    }
    r->body = SRV_BODY_WRITER;
}

static void put_finish(srv_req_t *r, bool part)
{
    want_sums_t want;
    uint64_t t_body = wh_now_ns();
    if (!trailers_arrived(r) || !read_sums(r, &want))
        return;
    char md5[33];
    if (!check_sums(r, &want, r->w, md5))
        return; /* cleanup aborts the writer */
    uint64_t t_md5 = wh_now_ns();
    uint64_t size = store_writer_size(r->w);
    char etag[80];
    char c64[13];
    wh_crc64nvme_b64(store_writer_crc64nvme(r->w), c64);
    wh_status_t st;
    if (part) {
        char e[33];
        st = store_mpu_part_commit(ST(r), B(r), K(r), r->upload_id, r->part_number, r->w, e);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", e);
    } else {
        store_obj_meta_t m;
        memset(&m, 0, sizeof m);
        fill_put_meta(r, &m);
        snprintf(m.etag, sizeof m.etag, "%s", md5);
        if (want.c32)
            snprintf(m.crc32c, sizeof m.crc32c, "%s", want.c32s);
        snprintf(m.crc64nvme, sizeof m.crc64nvme, "%s", c64);
        meta_add_sums(&m, &want);
        st = store_writer_commit(r->w, B(r), K(r), &m);
        r->w = NULL;
        snprintf(etag, sizeof etag, "%s", m.etag);
        store_obj_meta_free(&m);
    }
    wh_debug(MOD, "put id=%s bytes=%llu body_ms=%.3f md5_wait_ms=%.3f commit_ms=%.3f", r->id,
             (unsigned long long)size, (double)(t_body - r->t0_ns) / 1e6,
             (double)(t_md5 - t_body) / 1e6, (double)(wh_now_ns() - t_md5) / 1e6);
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, part ? S3_ERR_NO_SUCH_UPLOAD : S3_ERR_NO_SUCH_KEY);
        else
            reply_status(r, st, "committing the object");
        return;
    }
    atomic_fetch_add(&r->srv->metrics.http_write_bytes, size);
    atomic_fetch_add(&r->srv->metrics.http_write_ops, 1);
    struct MHD_Response *resp = srv_resp_empty();
    if (resp) {
        char q[84];
        etag_quoted(etag, q);
        srv_resp_header(resp, MHD_HTTP_HEADER_ETAG, q);
        srv_resp_header(resp, "x-amz-checksum-crc64nvme", c64);
        if (want.c32)
            srv_resp_header(resp, "x-amz-checksum-crc32c", want.c32s);
        reply_add_sums(resp, &want);
    }
    srv_reply(r, 200, resp);
}

/* ---- copy ------------------------------------------------------------------------------- */

typedef struct copy_src {
    char *bucket;
    char *key;
} copy_src_t;

static void copy_src_free(copy_src_t *c)
{
    free(c->bucket);
    free(c->key);
}

static bool parse_copy_source(srv_req_t *r, copy_src_t *c)
{
    memset(c, 0, sizeof *c);
    const char *h = srv_hdr(r, "x-amz-copy-source");
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    const char *q = strchr(h, '?');
    size_t n = q ? (size_t)(q - h) : strlen(h);
    if (q) {
        if (strncmp(q, "?versionId=", 11) != 0 || strcmp(q + 11, "null") != 0) {
            srv_reply_err(r, S3_ERR_NOT_IMPLEMENTED,
                          "x-amz-copy-source may only name versionId=null: objects are "
                          "unversioned");
            return false;
        }
    }
    if (s3_uri_decode(h, n, &d) != 0 || d.oom || !d.data) {
        wh_sbuf_free(&d);
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT, "x-amz-copy-source is not valid: a bad "
                                                  "percent-escape");
        return false;
    }
    const char *s = d.data;
    if (*s == '/')
        s++;
    const char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1]) {
        wh_sbuf_free(&d);
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                      "x-amz-copy-source must be bucket/key (URL-encoded)");
        return false;
    }
    c->bucket = strndup(s, (size_t)(slash - s));
    c->key = strdup(slash + 1);
    size_t klen = d.len - (size_t)(slash + 1 - d.data);
    wh_sbuf_free(&d);
    if (!c->bucket || !c->key) {
        copy_src_free(c);
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory");
        return false;
    }
    if (klen != strlen(c->key) || !store_key_valid(c->key, klen)) {
        copy_src_free(c);
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT, "the x-amz-copy-source key is not valid");
        return false;
    }
    return true;
}

/* Opens the copy source and applies x-amz-copy-source-if-*; replies on failure. */
static bool open_copy_source(srv_req_t *r, const copy_src_t *c, store_obj_meta_t *m, int *fd)
{
    wh_status_t st = store_object_open(ST(r), c->bucket, c->key, m, fd);
    if (st == WH_ERR_NOT_FOUND) {
        if (store_bucket_exists(ST(r), c->bucket) != WH_OK)
            srv_reply_err(r, S3_ERR_NO_SUCH_BUCKET, "the copy source bucket does not exist");
        else
            srv_reply_err(r, S3_ERR_NO_SUCH_KEY, "the copy source key does not exist");
        return false;
    }
    if (st != WH_OK) {
        reply_status(r, st, "opening the copy source");
        return false;
    }
    if (preconditions(r, m, "x-amz-copy-source-")) {
        if (fd && *fd >= 0) {
            close(*fd);
            *fd = -1;
        }
        store_obj_meta_free(m);
        srv_reply_err(r, S3_ERR_PRECONDITION_FAILED, NULL);
        return false;
    }
    return true;
}

static void copy_object(srv_req_t *r)
{
    if (!key_ok(r) || !need_bucket(r))
        return;
    copy_src_t c;
    if (!parse_copy_source(r, &c))
        return;
    const char *dir = srv_hdr(r, "x-amz-metadata-directive");
    bool replace = false;
    if (dir && strcmp(dir, "REPLACE") == 0) {
        replace = true;
    } else if (dir && strcmp(dir, "COPY") != 0) {
        srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                      "x-amz-metadata-directive must be COPY or REPLACE");
        goto out;
    }
    if (!replace && strcmp(c.bucket, B(r)) == 0 && strcmp(c.key, K(r)) == 0) {
        srv_reply_err(r, S3_ERR_INVALID_REQUEST,
                      "This copy request is illegal because it is trying to copy an object to "
                      "itself without changing the object's metadata, storage class, website "
                      "redirect location or encryption attributes.");
        goto out;
    }
    store_obj_meta_t sm;
    memset(&sm, 0, sizeof sm);
    if (!open_copy_source(r, &c, &sm, NULL))
        goto out;
    store_obj_meta_free(&sm);
    store_obj_meta_t nm, out_m;
    memset(&nm, 0, sizeof nm);
    memset(&out_m, 0, sizeof out_m);
    if (replace)
        fill_put_meta(r, &nm);
    wh_status_t st = store_object_copy(ST(r), c.bucket, c.key, B(r), K(r), replace ? &nm : NULL,
                                       &out_m);
    store_obj_meta_free(&nm);
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            srv_reply_err(r, S3_ERR_NO_SUCH_KEY, "the copy source vanished or the bucket is gone");
        else
            reply_status(r, st, "copying the object");
        goto out;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<CopyObjectResult xmlns=\"" S3_XMLNS "\">");
    xml_time(&b, "LastModified", out_m.mtime);
    xml_etag(&b, out_m.etag);
    if (out_m.crc64nvme[0])
        s3_xml_elem(&b, "ChecksumCRC64NVME", out_m.crc64nvme);
    wh_sbuf_puts(&b, "</CopyObjectResult>");
    store_obj_meta_free(&out_m);
    srv_reply_xml(r, 200, &b);
out:
    copy_src_free(&c);
}

static void upload_part_copy(srv_req_t *r)
{
    if (!key_ok(r) || !parse_part_query(r))
        return;
    copy_src_t c;
    if (!parse_copy_source(r, &c))
        return;
    store_obj_meta_t sm;
    memset(&sm, 0, sizeof sm);
    int fd = -1;
    char *buf = NULL;
    if (!open_copy_source(r, &c, &sm, &fd))
        goto out;
    uint64_t off = 0, len = sm.size;
    const char *rng = srv_hdr(r, "x-amz-copy-source-range");
    if (rng) {
        uint64_t a, z;
        char extra;
        if (sscanf(rng, "bytes=%" SCNu64 "-%" SCNu64 "%c", &a, &z, &extra) != 2 || z < a ||
            z >= sm.size) {
            srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                          "x-amz-copy-source-range must be bytes=first-last within the source");
            goto out;
        }
        off = a;
        len = z - a + 1;
    }
    wh_status_t st = store_writer_open(ST(r), &r->w);
    if (st != WH_OK) {
        reply_status(r, st, "opening a temp file");
        goto out;
    }
    const size_t chunk = 4u << 20;
    buf = malloc(chunk);
    if (!buf) {
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory");
        goto out;
    }
    for (uint64_t done = 0; done < len;) {
        size_t n = (size_t)WH_MIN((uint64_t)chunk, len - done);
        int e = wh_pread_all(fd, buf, n, off + done);
        if (e < 0 || (st = store_writer_write(r->w, buf, n)) != WH_OK) {
            srv_reply_err(r, S3_ERR_INTERNAL, "reading the copy source failed");
            goto out;
        }
        done += n;
    }
    char e[33];
    st = store_mpu_part_commit(ST(r), B(r), K(r), r->upload_id, r->part_number, r->w, e);
    r->w = NULL;
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
        else
            reply_status(r, st, "committing the part");
        goto out;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<CopyPartResult xmlns=\"" S3_XMLNS "\">");
    xml_time(&b, "LastModified", time(NULL));
    xml_etag(&b, e);
    wh_sbuf_puts(&b, "</CopyPartResult>");
    srv_reply_xml(r, 200, &b);
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    store_obj_meta_free(&sm);
    copy_src_free(&c);
}

/* ---- buckets ---------------------------------------------------------------------------- */

static void list_buckets(srv_req_t *r)
{
    store_bucket_info_t *bs = NULL;
    size_t n = 0;
    wh_status_t st = store_bucket_list(ST(r), &bs, &n);
    if (st != WH_OK) {
        reply_status(r, st, "listing buckets");
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<ListAllMyBucketsResult xmlns=\"" S3_XMLNS "\">");
    owner_xml(r, &b, "Owner");
    wh_sbuf_puts(&b, "<Buckets>");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<Bucket>");
        s3_xml_elem(&b, "Name", bs[i].name);
        xml_time(&b, "CreationDate", bs[i].created);
        wh_sbuf_puts(&b, "</Bucket>");
    }
    wh_sbuf_puts(&b, "</Buckets></ListAllMyBucketsResult>");
    free(bs);
    srv_reply_xml(r, 200, &b);
}

static bool body_md5_ok(srv_req_t *r)
{
    const char *md5 = srv_hdr(r, "content-md5");
    if (!md5)
        return true;
    uint8_t d[WH_MD5_LEN + 4], got[WH_MD5_LEN];
    if (wh_base64_decode(md5, strlen(md5), d, sizeof d) != WH_MD5_LEN) {
        srv_reply_err(r, S3_ERR_INVALID_DIGEST, "Content-MD5 must be the base64 of 16 bytes");
        return false;
    }
    wh_md5(r->buf.data ? r->buf.data : "", r->buf.len, got);
    if (memcmp(d, got, WH_MD5_LEN) != 0) {
        srv_reply_err(r, S3_ERR_BAD_DIGEST, "Content-MD5 does not match the request body");
        return false;
    }
    return true;
}

static void create_bucket_finish(srv_req_t *r)
{
    if (!body_md5_ok(r))
        return;
    char loc[64] = "";
    if (r->buf.len) {
        s3_err_t e = s3_xml_parse_create_bucket(r->buf.data, r->buf.len, loc, sizeof loc);
        if (e != S3_OK) {
            srv_reply_err(r, e, NULL);
            return;
        }
    }
    if (loc[0] && strcmp(loc, r->srv->cfg.region) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "The %s location constraint is incompatible with the region "
                                  "of this endpoint (%s).", loc, r->srv->cfg.region);
        srv_reply_err_raw(r, 400, "IllegalLocationConstraintException", msg, NULL);
        return;
    }
    wh_status_t st = store_bucket_create(ST(r), B(r));
    if (st == WH_ERR_EXISTS) {
        srv_reply_err(r, S3_ERR_BUCKET_EXISTS, NULL);
        return;
    }
    if (st != WH_OK) {
        reply_status(r, st, "creating the bucket");
        return;
    }
    struct MHD_Response *resp = srv_resp_empty();
    if (resp) {
        char l[80];
        snprintf(l, sizeof l, "/%s", B(r));
        srv_resp_header(resp, MHD_HTTP_HEADER_LOCATION, l);
    }
    srv_reply(r, 200, resp);
}

static void delete_bucket(srv_req_t *r)
{
    wh_status_t st = store_bucket_delete(ST(r), B(r));
    if (st == WH_OK)
        srv_reply_empty(r, 204);
    else if (st == WH_ERR_NOT_FOUND)
        srv_reply_err(r, S3_ERR_NO_SUCH_BUCKET, NULL);
    else if (st == WH_ERR_NOT_EMPTY)
        srv_reply_err(r, S3_ERR_BUCKET_NOT_EMPTY, NULL);
    else
        reply_status(r, st, "deleting the bucket");
}

static void head_bucket(srv_req_t *r)
{
    if (!need_bucket(r))
        return;
    struct MHD_Response *resp = srv_resp_empty();
    if (resp)
        srv_resp_header(resp, "x-amz-bucket-region", r->srv->cfg.region);
    srv_reply(r, 200, resp);
}

static void bucket_location(srv_req_t *r)
{
    if (!need_bucket(r))
        return;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    /* us-east-1 is the empty constraint, as S3 answers. */
    const char *reg = strcmp(r->srv->cfg.region, "us-east-1") == 0 ? "" : r->srv->cfg.region;
    wh_sbuf_puts(&b, XML_DECL "<LocationConstraint xmlns=\"" S3_XMLNS "\">");
    s3_xml_escape(&b, reg);
    wh_sbuf_puts(&b, "</LocationConstraint>");
    srv_reply_xml(r, 200, &b);
}

static void bucket_versioning(srv_req_t *r)
{
    if (!need_bucket(r))
        return;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<VersioningConfiguration xmlns=\"" S3_XMLNS "\"/>");
    srv_reply_xml(r, 200, &b);
}

/* ---- listings --------------------------------------------------------------------------- */

typedef enum { LIST_V1, LIST_V2, LIST_VERSIONS } list_kind_t;

static void list_objects(srv_req_t *r, list_kind_t kind)
{
    bool url;
    uint64_t max_keys;
    if (!q_encoding_url(r, &url) || !q_uint(r, "max-keys", 1000, &max_keys))
        return;
    if (!need_bucket(r))
        return;
    if (max_keys > 1000)
        max_keys = 1000;
    const char *prefix = srv_route_q(&r->route, "prefix");
    const char *delim = srv_route_q(&r->route, "delimiter");
    if (delim && !*delim)
        delim = NULL;
    const char *ctoken = kind == LIST_V2 ? srv_route_q(&r->route, "continuation-token") : NULL;
    const char *start_after = NULL;
    char *decoded_token = NULL;
    if (ctoken) {
        size_t tl = strlen(ctoken);
        decoded_token = malloc(tl + 1);
        long n = decoded_token ? wh_base64_decode(ctoken, tl, decoded_token, tl) : -1;
        if (n <= 0 || memchr(decoded_token, '\0', (size_t)n)) {
            free(decoded_token);
            srv_reply_err(r, S3_ERR_INVALID_ARGUMENT,
                          "The continuation token provided is incorrect");
            return;
        }
        decoded_token[n] = '\0';
        start_after = decoded_token;
    } else if (kind == LIST_V2) {
        start_after = srv_route_q(&r->route, "start-after");
    } else if (kind == LIST_V1) {
        start_after = srv_route_q(&r->route, "marker");
    } else {
        start_after = srv_route_q(&r->route, "key-marker");
    }
    if (start_after && !*start_after)
        start_after = NULL;

    store_list_params_t p = {
        .prefix = prefix && *prefix ? prefix : NULL,
        .delimiter = delim,
        .start_after = start_after,
        .max_keys = (uint32_t)max_keys,
    };
    store_list_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t st = store_object_list(ST(r), B(r), &p, &res);
    if (st != WH_OK) {
        free(decoded_token);
        reply_status(r, st, "listing objects");
        return;
    }

    bool fetch_owner = kind != LIST_V2;
    const char *fo = srv_route_q(&r->route, "fetch-owner");
    if (kind == LIST_V2 && fo && strcmp(fo, "true") == 0)
        fetch_owner = true;

    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, XML_DECL "<%s xmlns=\"" S3_XMLNS "\">",
                   kind == LIST_VERSIONS ? "ListVersionsResult" : "ListBucketResult");
    s3_xml_elem(&b, "Name", B(r));
    xml_enc(&b, "Prefix", prefix ? prefix : "", url);
    if (kind == LIST_V2) {
        if (ctoken)
            s3_xml_elem(&b, "ContinuationToken", ctoken);
        const char *sa = srv_route_q(&r->route, "start-after");
        if (sa)
            xml_enc(&b, "StartAfter", sa, url);
        s3_xml_elem_u64(&b, "KeyCount", res.n_entries + res.n_prefixes);
        if (res.truncated && res.next_marker) {
            size_t ml = strlen(res.next_marker);
            char *tok = malloc(4 * ((ml + 2) / 3) + 1);
            if (tok) {
                wh_base64_encode(res.next_marker, ml, tok);
                s3_xml_elem(&b, "NextContinuationToken", tok);
                free(tok);
            } else {
                b.oom = true;
            }
        }
    } else if (kind == LIST_V1) {
        const char *mk = srv_route_q(&r->route, "marker");
        xml_enc(&b, "Marker", mk ? mk : "", url);
        if (res.truncated && res.next_marker)
            xml_enc(&b, "NextMarker", res.next_marker, url);
    } else {
        const char *km = srv_route_q(&r->route, "key-marker");
        xml_enc(&b, "KeyMarker", km ? km : "", url);
        s3_xml_elem(&b, "VersionIdMarker", "");
        if (res.truncated && res.next_marker) {
            xml_enc(&b, "NextKeyMarker", res.next_marker, url);
            s3_xml_elem(&b, "NextVersionIdMarker", "null");
        }
    }
    s3_xml_elem_u64(&b, "MaxKeys", max_keys);
    if (delim)
        xml_enc(&b, "Delimiter", delim, url);
    if (url)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", res.truncated ? "true" : "false");
    for (size_t i = 0; i < res.n_entries; i++) {
        const store_list_entry_t *e = &res.entries[i];
        wh_sbuf_puts(&b, kind == LIST_VERSIONS ? "<Version>" : "<Contents>");
        xml_enc(&b, "Key", e->key, url);
        if (kind == LIST_VERSIONS) {
            s3_xml_elem(&b, "VersionId", "null");
            s3_xml_elem(&b, "IsLatest", "true");
        }
        xml_time(&b, "LastModified", e->mtime);
        xml_etag(&b, e->etag);
        s3_xml_elem_u64(&b, "Size", e->size);
        if (fetch_owner)
            owner_xml(r, &b, "Owner");
        s3_xml_elem(&b, "StorageClass", "STANDARD");
        wh_sbuf_puts(&b, kind == LIST_VERSIONS ? "</Version>" : "</Contents>");
    }
    for (size_t i = 0; i < res.n_prefixes; i++) {
        wh_sbuf_puts(&b, "<CommonPrefixes>");
        xml_enc(&b, "Prefix", res.prefixes[i], url);
        wh_sbuf_puts(&b, "</CommonPrefixes>");
    }
    wh_sbuf_printf(&b, "</%s>", kind == LIST_VERSIONS ? "ListVersionsResult" : "ListBucketResult");
    store_list_result_free(&res);
    free(decoded_token);
    srv_reply_xml(r, 200, &b);
}

/* ---- delete ----------------------------------------------------------------------------- */

static void delete_object(srv_req_t *r)
{
    if (!key_ok(r) || !need_bucket(r))
        return;
    wh_status_t st = store_object_delete(ST(r), B(r), K(r));
    if (st != WH_OK && st != WH_ERR_NOT_FOUND) {
        reply_status(r, st, "deleting the object");
        return;
    }
    srv_reply_empty(r, 204);
}

static void delete_objects_finish(srv_req_t *r)
{
    if (!body_md5_ok(r))
        return;
    s3_delete_req_t d;
    memset(&d, 0, sizeof d);
    s3_err_t e = s3_xml_parse_delete(r->buf.data ? r->buf.data : "", r->buf.len, &d);
    if (e != S3_OK) {
        srv_reply_err(r, e, NULL);
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<DeleteResult xmlns=\"" S3_XMLNS "\">");
    for (size_t i = 0; i < d.n; i++) {
        const char *k = d.keys[i];
        size_t kl = strlen(k);
        wh_status_t st = store_key_valid(k, kl) ? store_object_delete(ST(r), B(r), k)
                                                : WH_ERR_INVALID;
        if (st == WH_OK || st == WH_ERR_NOT_FOUND) {
            if (!d.quiet) {
                wh_sbuf_puts(&b, "<Deleted>");
                s3_xml_elem(&b, "Key", k);
                wh_sbuf_puts(&b, "</Deleted>");
            }
        } else {
            wh_sbuf_puts(&b, "<Error>");
            s3_xml_elem(&b, "Key", k);
            s3_xml_elem(&b, "Code", st == WH_ERR_INVALID ? "InvalidArgument" : "InternalError");
            s3_xml_elem(&b, "Message", wh_status_str(st));
            wh_sbuf_puts(&b, "</Error>");
        }
    }
    wh_sbuf_puts(&b, "</DeleteResult>");
    s3_delete_req_free(&d);
    srv_reply_xml(r, 200, &b);
}

/* ---- multipart -------------------------------------------------------------------------- */

static void create_mpu(srv_req_t *r)
{
    if (!key_ok(r) || !need_bucket(r))
        return;
    store_obj_meta_t m;
    memset(&m, 0, sizeof m);
    fill_put_meta(r, &m);
    char id[65];
    wh_status_t st = store_mpu_create(ST(r), B(r), K(r), &m, id);
    store_obj_meta_free(&m);
    if (st != WH_OK) {
        reply_status(r, st, "creating the upload");
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<InitiateMultipartUploadResult xmlns=\"" S3_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", B(r));
    s3_xml_elem(&b, "Key", K(r));
    s3_xml_elem(&b, "UploadId", id);
    wh_sbuf_puts(&b, "</InitiateMultipartUploadResult>");
    srv_reply_xml(r, 200, &b);
}

static void complete_mpu_begin(srv_req_t *r)
{
    if (!key_ok(r))
        return;
    const char *id = srv_route_q(&r->route, "uploadId");
    wh_status_t st = store_mpu_check(ST(r), B(r), K(r), id);
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
        else
            reply_status(r, st, "looking up the upload");
        return;
    }
    r->body = SRV_BODY_BUFFER;
}

static void complete_mpu_finish(srv_req_t *r)
{
    if (!body_md5_ok(r))
        return;
    s3_part_ref_t *parts = NULL;
    size_t n = 0;
    s3_err_t e = s3_xml_parse_complete(r->buf.data ? r->buf.data : "", r->buf.len, &parts, &n);
    if (e != S3_OK) {
        srv_reply_err(r, e, NULL);
        return;
    }
    if (n == 0) {
        free(parts);
        srv_reply_err(r, S3_ERR_MALFORMED_XML, "CompleteMultipartUpload lists no parts");
        return;
    }
    for (size_t i = 1; i < n; i++) {
        if (parts[i].number <= parts[i - 1].number) {
            free(parts);
            srv_reply_err(r, S3_ERR_INVALID_PART_ORDER, NULL);
            return;
        }
    }
    store_complete_part_t *cp = calloc(n, sizeof *cp);
    if (!cp) {
        free(parts);
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        cp[i].number = parts[i].number;
        cp[i].etag = parts[i].etag;
    }
    store_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int bad = 0;
    wh_status_t st = store_mpu_complete(ST(r), B(r), K(r), srv_route_q(&r->route, "uploadId"),
                                        cp, n, &m, &bad);
    free(cp);
    free(parts);
    if (st != WH_OK) {
        if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_PART)
            srv_reply_err(r, S3_ERR_INVALID_PART, NULL);
        else if (st == WH_ERR_INVALID && bad == STORE_MPU_BAD_ORDER)
            srv_reply_err(r, S3_ERR_INVALID_PART_ORDER, NULL);
        else if (st == WH_ERR_INVALID && bad == STORE_MPU_TOO_SMALL)
            srv_reply_err(r, S3_ERR_ENTITY_TOO_SMALL, NULL);
        else if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
        else
            reply_status(r, st, "completing the upload");
        store_obj_meta_free(&m);
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<CompleteMultipartUploadResult xmlns=\"" S3_XMLNS "\">");
    const char *host = srv_hdr(r, "host");
    wh_sbuf_t loc;
    wh_sbuf_init(&loc);
    wh_sbuf_printf(&loc, "http://%s/%s/", host ? host : "localhost", B(r));
    s3_uri_encode(K(r), strlen(K(r)), 0, &loc);
    s3_xml_elem(&b, "Location", loc.data ? loc.data : "");
    wh_sbuf_free(&loc);
    s3_xml_elem(&b, "Bucket", B(r));
    s3_xml_elem(&b, "Key", K(r));
    xml_etag(&b, m.etag);
    if (m.crc64nvme[0])
        s3_xml_elem(&b, "ChecksumCRC64NVME", m.crc64nvme);
    wh_sbuf_puts(&b, "</CompleteMultipartUploadResult>");
    store_obj_meta_free(&m);
    srv_reply_xml(r, 200, &b);
}

static void abort_mpu(srv_req_t *r)
{
    if (!key_ok(r))
        return;
    wh_status_t st = store_mpu_abort(ST(r), B(r), K(r), srv_route_q(&r->route, "uploadId"));
    if (st == WH_OK)
        srv_reply_empty(r, 204);
    else if (st == WH_ERR_NOT_FOUND)
        reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
    else
        reply_status(r, st, "aborting the upload");
}

static void list_parts(srv_req_t *r)
{
    if (!key_ok(r))
        return;
    uint64_t marker, max;
    if (!q_uint(r, "part-number-marker", 0, &marker) || !q_uint(r, "max-parts", 1000, &max))
        return;
    if (max > 1000)
        max = 1000;
    if (marker > STORE_MAX_PARTS)
        marker = STORE_MAX_PARTS;
    const char *id = srv_route_q(&r->route, "uploadId");
    store_part_info_t *ps = NULL;
    size_t n = 0;
    bool trunc = false;
    wh_status_t st = store_mpu_list_parts(ST(r), B(r), K(r), id, (uint32_t)marker,
                                          (uint32_t)max, &ps, &n, &trunc);
    if (st != WH_OK) {
        if (st == WH_ERR_NOT_FOUND)
            reply_not_found(r, S3_ERR_NO_SUCH_UPLOAD);
        else
            reply_status(r, st, "listing parts");
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<ListPartsResult xmlns=\"" S3_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", B(r));
    s3_xml_elem(&b, "Key", K(r));
    s3_xml_elem(&b, "UploadId", id);
    owner_xml(r, &b, "Initiator");
    owner_xml(r, &b, "Owner");
    s3_xml_elem(&b, "StorageClass", "STANDARD");
    s3_xml_elem_u64(&b, "PartNumberMarker", marker);
    s3_xml_elem_u64(&b, "NextPartNumberMarker", n ? ps[n - 1].number : marker);
    s3_xml_elem_u64(&b, "MaxParts", max);
    s3_xml_elem(&b, "IsTruncated", trunc ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<Part>");
        s3_xml_elem_u64(&b, "PartNumber", ps[i].number);
        xml_time(&b, "LastModified", ps[i].mtime);
        xml_etag(&b, ps[i].etag);
        s3_xml_elem_u64(&b, "Size", ps[i].size);
        if (ps[i].crc64nvme[0])
            s3_xml_elem(&b, "ChecksumCRC64NVME", ps[i].crc64nvme);
        wh_sbuf_puts(&b, "</Part>");
    }
    wh_sbuf_puts(&b, "</ListPartsResult>");
    free(ps);
    srv_reply_xml(r, 200, &b);
}

static void list_uploads(srv_req_t *r)
{
    if (!need_bucket(r))
        return;
    const char *prefix = srv_route_q(&r->route, "prefix");
    store_upload_info_t *us = NULL;
    size_t n = 0;
    wh_status_t st = store_mpu_list_uploads(ST(r), B(r), prefix, &us, &n);
    if (st != WH_OK) {
        reply_status(r, st, "listing uploads");
        return;
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, XML_DECL "<ListMultipartUploadsResult xmlns=\"" S3_XMLNS "\">");
    s3_xml_elem(&b, "Bucket", B(r));
    s3_xml_elem(&b, "KeyMarker", "");
    s3_xml_elem(&b, "UploadIdMarker", "");
    s3_xml_elem(&b, "Prefix", prefix ? prefix : "");
    s3_xml_elem_u64(&b, "MaxUploads", 10000);
    s3_xml_elem(&b, "IsTruncated", "false");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<Upload>");
        s3_xml_elem(&b, "Key", us[i].key);
        s3_xml_elem(&b, "UploadId", us[i].upload_id);
        owner_xml(r, &b, "Initiator");
        owner_xml(r, &b, "Owner");
        s3_xml_elem(&b, "StorageClass", "STANDARD");
        xml_time(&b, "Initiated", us[i].initiated);
        wh_sbuf_puts(&b, "</Upload>");
    }
    wh_sbuf_puts(&b, "</ListMultipartUploadsResult>");
    store_upload_info_free(us, n);
    srv_reply_xml(r, 200, &b);
}

/* ---- dispatch --------------------------------------------------------------------------- */

void srv_s3_begin(srv_req_t *r)
{
    srv_api_t api = r->route.api;
    if (r->token_req && api != SRV_API_GET_OBJECT && api != SRV_API_HEAD_OBJECT &&
        api != SRV_API_PUT_OBJECT && api != SRV_API_UPLOAD_PART) {
        char msg[160];
        snprintf(msg, sizeof msg, "x-amz-rdma-token is served on GetObject, PutObject and "
                                  "UploadPart only, not on %s", srv_api_name(api));
        srv_reply_err(r, S3_ERR_INVALID_REQUEST, msg);
        return;
    }
    switch (api) {
    case SRV_API_LIST_BUCKETS:
        list_buckets(r);
        return;
    case SRV_API_CREATE_BUCKET:
        if (!store_bucket_name_valid(B(r))) {
            srv_reply_err(r, S3_ERR_INVALID_BUCKET_NAME,
                          "bucket names are 3-63 characters of a-z, 0-9, '.' and '-', "
                          "starting and ending with a letter or digit");
            return;
        }
        r->body = SRV_BODY_BUFFER;
        return;
    case SRV_API_DELETE_BUCKET:
        delete_bucket(r);
        return;
    case SRV_API_HEAD_BUCKET:
        head_bucket(r);
        return;
    case SRV_API_GET_BUCKET_LOCATION:
        bucket_location(r);
        return;
    case SRV_API_GET_BUCKET_VERSIONING:
        bucket_versioning(r);
        return;
    case SRV_API_LIST_OBJECT_VERSIONS:
        list_objects(r, LIST_VERSIONS);
        return;
    case SRV_API_LIST_OBJECTS:
        list_objects(r, LIST_V1);
        return;
    case SRV_API_LIST_OBJECTS_V2:
        list_objects(r, LIST_V2);
        return;
    case SRV_API_LIST_MULTIPART_UPLOADS:
        list_uploads(r);
        return;
    case SRV_API_DELETE_OBJECTS:
        if (need_bucket(r))
            r->body = SRV_BODY_BUFFER;
        return;
    case SRV_API_PUT_OBJECT:
        put_begin(r, false);
        return;
    case SRV_API_UPLOAD_PART:
        put_begin(r, true);
        return;
    case SRV_API_COPY_OBJECT:
        copy_object(r);
        return;
    case SRV_API_UPLOAD_PART_COPY:
        upload_part_copy(r);
        return;
    case SRV_API_GET_OBJECT:
    case SRV_API_HEAD_OBJECT:
        get_object(r);
        return;
    case SRV_API_DELETE_OBJECT:
        delete_object(r);
        return;
    case SRV_API_CREATE_MPU:
        create_mpu(r);
        return;
    case SRV_API_COMPLETE_MPU:
        complete_mpu_begin(r);
        return;
    case SRV_API_ABORT_MPU:
        abort_mpu(r);
        return;
    case SRV_API_LIST_PARTS:
        list_parts(r);
        return;
    default:
        srv_reply_err(r, S3_ERR_NOT_IMPLEMENTED, NULL);
        return;
    }
}

void srv_s3_finish(srv_req_t *r)
{
    switch (r->route.api) {
    case SRV_API_CREATE_BUCKET:
        create_bucket_finish(r);
        return;
    case SRV_API_DELETE_OBJECTS:
        delete_objects_finish(r);
        return;
    case SRV_API_COMPLETE_MPU:
        complete_mpu_finish(r);
        return;
    case SRV_API_PUT_OBJECT:
        put_finish(r, false);
        return;
    case SRV_API_UPLOAD_PART:
        put_finish(r, true);
        return;
    default:
        srv_reply_err(r, S3_ERR_INTERNAL, "no finish step for this API");
        return;
    }
}

void srv_s3_cleanup(srv_req_t *r)
{
    if (r->sha1_ctx) {
        EVP_MD_CTX_free(r->sha1_ctx);
        r->sha1_ctx = NULL;
    }
    if (r->x_sha256) {
        wh_sha256_free(&r->sha256x);
        r->x_sha256 = false;
    }
    r->x_crc32 = false;
    if (r->w) {
        store_writer_abort(r->w);
        r->w = NULL;
    }
}
