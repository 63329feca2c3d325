/* SPDX-License-Identifier: Apache-2.0 */
/* Server-side encryption: the request headers of SSE-C and SSE-S3, the key of each object,
 * and the reply headers. The bytes are encrypted below, by the store (store/crypt.h); this
 * file decides which key, checks the customer's key against the row's verifier, and seals
 * SSE-S3's data keys under the server key (ident). */
#include "s3ctl/s3ctl.h"
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "ident/kms.h"
#include "store/crypt.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "s3"
#define SSE_H "x-amz-server-side-encryption"
#define SSEC_H "x-amz-server-side-encryption-customer-"
#define SSEC_COPY_H "x-amz-copy-source-server-side-encryption-customer-"
#define KMS_ID_H SSE_H "-aws-kms-key-id"

bool s3h_req_secure(const front_req_t *r)
{
    /* TLS on the TCP port; the Unix socket is plain (its peer is proven by the kernel). The
     * same answer as aws:SecureTransport. */
    return !r->peer.is_unix && r->srv->tls != NULL;
}

void s3h_sse_req_wipe(s3h_sse_req_t *q)
{
    OPENSSL_cleanse(q, sizeof *q);
}

/* The three SSE-C headers under prefix pfx into q. */
static int parse_customer(front_req_t *r, s3h_out_t *o, const char *pfx, s3h_sse_req_t *q)
{
    char n_alg[80], n_key[80], n_md5[80];
    snprintf(n_alg, sizeof n_alg, "%salgorithm", pfx);
    snprintf(n_key, sizeof n_key, "%skey", pfx);
    snprintf(n_md5, sizeof n_md5, "%skey-md5", pfx);
    const char *alg = front_hdr(r, n_alg), *key = front_hdr(r, n_key), *md5 = front_hdr(r, n_md5);
    if (!alg && !key && !md5)
        return 0;
    if (!alg || !key || !md5)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "server-side encryption with a customer key needs %s, %s and %s "
                        "together; %s is missing",
                        n_alg, n_key, n_md5,
                        !alg   ? n_alg
                        : !key ? n_key
                               : n_md5);
    if (!s3h_req_secure(r))
        return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                        "Requests specifying Server Side Encryption with Customer provided keys "
                        "must be made over a secure connection (%s over plain HTTP is refused: "
                        "the key would travel in clear)",
                        n_key);
    if (strcmp(alg, "AES256") != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s must be AES256, not '%.32s'", n_alg, alg);
    uint8_t raw[64];
    long kn = wh_base64_decode(key, strlen(key), raw, sizeof raw);
    if (kn != STORE_SSE_KEY_LEN) {
        OPENSSL_cleanse(raw, sizeof raw);
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "%s must be the base64 of a 256-bit (32-byte) key; it decodes to %ld "
                        "bytes",
                        n_key, kn < 0 ? 0 : kn);
    }
    uint8_t d[WH_MD5_LEN];
    wh_md5(raw, STORE_SSE_KEY_LEN, d);
    char b64[32];
    wh_base64_encode(d, sizeof d, b64);
    if (strcmp(b64, md5) != 0) {
        OPENSSL_cleanse(raw, sizeof raw);
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "The calculated MD5 hash of the key did not match the hash that was "
                        "provided (%s is not the base64 MD5 of %s)",
                        n_md5, n_key);
    }
    q->kind = STORE_SSE_C;
    memcpy(q->ckey, raw, STORE_SSE_KEY_LEN);
    snprintf(q->ckey_md5, sizeof q->ckey_md5, "%s", b64);
    OPENSSL_cleanse(raw, sizeof raw);
    return 0;
}

int s3h_sse_request(front_req_t *r, s3h_out_t *o, bool copy_source, bool allow_s3, s3h_sse_req_t *q)
{
    memset(q, 0, sizeof *q);
    if (copy_source)
        return parse_customer(r, o, SSEC_COPY_H, q);
    int ret = parse_customer(r, o, SSEC_H, q);
    if (ret)
        return ret;
    const char *v = front_hdr(r, SSE_H);
    const char *kid = front_hdr(r, KMS_ID_H);
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname;
        if (strncmp(n, SSE_H "-", sizeof SSE_H) != 0 ||
            strncmp(n, SSEC_H, sizeof SSEC_H - 1) == 0 || strcmp(n, KMS_ID_H) == 0)
            continue;
        if (strcmp(n, SSE_H "-bucket-key-enabled") == 0 &&
            strcasecmp(r->hdrs[i].value, "false") == 0)
            continue;
        return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                        "%s is not implemented by wharfd (SSE-S3, SSE-KMS with %s, and SSE-C "
                        "are)",
                        n, KMS_ID_H);
    }
    if (v && strcmp(v, "aws:kms:dsse") == 0)
        return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                        "%s: %s (dual-layer SSE-KMS) is not implemented by wharfd; use aws:kms, "
                        "AES256 (SSE-S3) or a customer key (SSE-C)",
                        SSE_H, v);
    if (kid && (!v || strcmp(v, "aws:kms") != 0))
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s is allowed only with %s: aws:kms", KMS_ID_H,
                        SSE_H);
    if (!v)
        return 0;
    bool kms = strcmp(v, "aws:kms") == 0;
    if (!kms && strcmp(v, "AES256") != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s must be AES256 or aws:kms, not '%.32s'",
                        SSE_H, v);
    if (q->kind == STORE_SSE_C)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "%s and a customer key (%salgorithm) cannot both be given", SSE_H, SSEC_H);
    if (!allow_s3 && kms && r->route.op && r->route.op->api == FRONT_API_UPLOAD_PART) {
        /* UploadPart may repeat aws:kms (the s3-tests suite sends its upload's headers on
         * every part): the part takes its upload's key whatever key id it names, and
         * s3h_sse_writer refuses it for an upload that is not SSE-KMS. */
        q->kind = STORE_SSE_KMS;
        return 0;
    }
    if (!allow_s3)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "%s is not accepted on %s: it is set when the object is written (for "
                        "a multipart upload, on CreateMultipartUpload)",
                        SSE_H, r->route.op ? front_api_name(r->route.op->api) : "this request");
    if (kms) {
        if (!kid || !*kid)
            return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                            "%s: aws:kms needs the key: %s (wharfd has no account-default KMS "
                            "key)",
                            SSE_H, KMS_ID_H);
        if (strlen(kid) >= sizeof q->kms_ref)
            return s3h_errf(o, S3_ERR_KMS_NOT_FOUND, "%s is longer than %zu characters", KMS_ID_H,
                            sizeof q->kms_ref - 1);
        snprintf(q->kms_ref, sizeof q->kms_ref, "%s", kid);
        q->kind = STORE_SSE_KMS;
        return 0;
    }
    q->kind = STORE_SSE_S3;
    return 0;
}

/* The S3 error of a key service answer about key ref. */
static int kms_err(front_req_t *r, s3h_out_t *o, wh_status_t st, const char *ref)
{
    switch (st) {
    case WH_ERR_NOT_FOUND:
        return s3h_errf(o, S3_ERR_KMS_NOT_FOUND, "Invalid keyId %.200s: no such KMS key", ref);
    case WH_ERR_PRECONDITION:
        return s3h_errf(o, S3_ERR_KMS_DISABLED,
                        "the KMS key %.200s is not enabled (disabled or pending deletion): it "
                        "neither encrypts nor decrypts",
                        ref);
    case WH_ERR_UNSUPPORTED:
        return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                        "%s: aws:kms needs the server key (--server-key-file), which seals the "
                        "KMS keys; this server has not got it",
                        SSE_H);
    default:
        return s3h_err_status(r, o, st, "reading the KMS key");
    }
}

/* "<key id>:<version>" of a KMS object's secret. */
static bool kms_secret_parse(const char *secret, char id[IDENT_KMS_ID_MAX + 1], unsigned *v)
{
    const char *c = strrchr(secret, ':');
    if (!c || (size_t)(c - secret) > IDENT_KMS_ID_MAX || c == secret)
        return false;
    memcpy(id, secret, (size_t)(c - secret));
    id[c - secret] = '\0';
    char *end;
    unsigned long n = strtoul(c + 1, &end, 10);
    if (*end || n == 0 || n > 1000000)
        return false;
    *v = (unsigned)n;
    return true;
}

/* The sealed data key's additional data: binds it to this object's salt. */
static void s3_aad(const uint8_t salt[STORE_SSE_SALT_LEN], char out[64])
{
    char hex[2 * STORE_SSE_SALT_LEN + 1];
    wh_hex_encode(salt, STORE_SSE_SALT_LEN, hex);
    snprintf(out, 64, "sse-s3:%s", hex);
}

int s3h_sse_new(front_req_t *r, s3h_out_t *o, const s3h_sse_req_t *q, char **sse,
                uint8_t key[STORE_SSE_KEY_LEN])
{
    *sse = NULL;
    if (q->kind == STORE_SSE_NONE)
        return 0;
    store_sse_t s;
    memset(&s, 0, sizeof s);
    s.kind = q->kind;
    if (wh_random_bytes(s.salt, sizeof s.salt) != 0)
        return s3h_err(o, S3_ERR_INTERNAL, "no random bytes for an encryption salt");
    if (q->kind == STORE_SSE_C) {
        store_sse_c_derive(q->ckey, s.salt, key, s.secret);
    } else if (q->kind == STORE_SSE_KMS) {
        char kid[IDENT_KMS_ID_MAX + 1];
        unsigned ver = 0;
        wh_status_t st = r->srv->ident ? ident_kms_new_data_key(r->srv->ident, q->kms_ref, s.salt,
                                                                sizeof s.salt, key, kid, &ver)
                                       : WH_ERR_UNSUPPORTED;
        if (st != WH_OK)
            return kms_err(r, o, st, q->kms_ref);
        snprintf(s.secret, sizeof s.secret, "%s:%u", kid, ver);
    } else {
        if (!r->srv->ident || !ident_has_key(r->srv->ident))
            return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                            "%s: AES256 needs the server key (--server-key-file), which this "
                            "server has not got",
                            SSE_H);
        char aad[64];
        s3_aad(s.salt, aad);
        if (wh_random_bytes(key, STORE_SSE_KEY_LEN) != 0 ||
            ident_seal(r->srv->ident, aad, key, STORE_SSE_KEY_LEN, s.secret, sizeof s.secret) !=
                WH_OK) {
            OPENSSL_cleanse(key, STORE_SSE_KEY_LEN);
            return s3h_err(o, S3_ERR_INTERNAL, "sealing a data key under the server key failed");
        }
    }
    if (!(*sse = store_sse_format(&s))) {
        OPENSSL_cleanse(key, STORE_SSE_KEY_LEN);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    }
    return 0;
}

wh_status_t s3h_sse_key(front_req_t *r, const char *text, const s3h_sse_req_t *q,
                        uint8_t key[STORE_SSE_KEY_LEN], s3_err_t *err, char *msg, size_t cap)
{
    store_sse_t s;
    if (store_sse_parse(text, &s) != WH_OK) {
        *err = S3_ERR_INTERNAL;
        snprintf(msg, cap, "the object's encryption parameters are damaged");
        return WH_ERR_IO;
    }
    if (s.kind == STORE_SSE_C) {
        if (q->kind != STORE_SSE_C) {
            *err = S3_ERR_INVALID_REQUEST;
            snprintf(msg, cap,
                     "The object was stored using a form of Server Side Encryption. "
                     "The correct parameters must be provided to retrieve the object (its "
                     "customer key, by the SSE-C headers)");
            return WH_ERR_AUTH;
        }
        char v[65];
        uint8_t k[STORE_SSE_KEY_LEN];
        store_sse_c_derive(q->ckey, s.salt, k, v);
        if (CRYPTO_memcmp(v, s.secret, 64) != 0 || strlen(s.secret) != 64) {
            OPENSSL_cleanse(k, sizeof k);
            *err = S3_ERR_INVALID_REQUEST; /* 400, as S3 answers a wrong SSE-C key */
            snprintf(msg, cap,
                     "the customer key given is not the key the object was stored "
                     "with");
            return WH_ERR_AUTH;
        }
        memcpy(key, k, sizeof k);
        OPENSSL_cleanse(k, sizeof k);
        return WH_OK;
    }
    if (q->kind == STORE_SSE_C) {
        *err = S3_ERR_INVALID_REQUEST;
        snprintf(msg, cap,
                 "the object is not encrypted with a customer key: send no SSE-C "
                 "headers to read it");
        return WH_ERR_INVALID;
    }
    if (s.kind == STORE_SSE_KMS) {
        char kid[IDENT_KMS_ID_MAX + 1];
        unsigned ver = 0;
        wh_status_t st = !kms_secret_parse(s.secret, kid, &ver) ? WH_ERR_INVALID
                         : r->srv->ident ? ident_kms_data_key(r->srv->ident, kid, ver, s.salt,
                                                              sizeof s.salt, key)
                                         : WH_ERR_UNSUPPORTED;
        if (st == WH_OK)
            return WH_OK;
        *err = st == WH_ERR_NOT_FOUND      ? S3_ERR_KMS_NOT_FOUND
               : st == WH_ERR_PRECONDITION ? S3_ERR_KMS_DISABLED
                                           : S3_ERR_INTERNAL;
        snprintf(msg, cap,
                 st == WH_ERR_NOT_FOUND ? "the object's KMS key %s (version %u) does not exist"
                 : st == WH_ERR_PRECONDITION
                     ? "the object's KMS key %s is not enabled (version %u): it cannot decrypt"
                     : "the object's KMS key %s (version %u) cannot be used",
                 kid, ver);
        if (*err == S3_ERR_INTERNAL)
            wh_error(MOD, "id=%s sse-kms key %s version %u: %s", r->id, kid, ver,
                     wh_status_str(st));
        return st == WH_OK ? WH_OK : WH_ERR_AUTH;
    }
    char aad[64];
    s3_aad(s.salt, aad);
    wh_status_t st = r->srv->ident
                         ? ident_unseal(r->srv->ident, aad, s.secret, key, STORE_SSE_KEY_LEN)
                         : WH_ERR_UNSUPPORTED;
    if (st != WH_OK) {
        wh_error(MOD, "id=%s an SSE-S3 data key does not open under the server key: %s", r->id,
                 wh_status_str(st));
        *err = S3_ERR_INTERNAL;
        snprintf(msg, cap,
                 "the object's data key cannot be opened with this server's key "
                 "(--server-key-file)");
        return WH_ERR_INTERNAL;
    }
    return WH_OK;
}

int s3h_sse_open(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, const s3h_sse_req_t *q,
                 data_reader_t *rd)
{
    if (!m->sse) {
        if (q->kind == STORE_SSE_C)
            return s3h_err(o, S3_ERR_INVALID_REQUEST,
                           "the object is not encrypted with a customer key: send no SSE-C "
                           "headers to read it");
        return 0;
    }
    uint8_t key[STORE_SSE_KEY_LEN];
    s3_err_t e;
    char msg[256];
    if (s3h_sse_key(r, m->sse, q, key, &e, msg, sizeof msg) != WH_OK)
        return s3h_err(o, e, msg);
    wh_status_t st = rd ? store_reader_set_key(rd, key) : WH_OK;
    OPENSSL_cleanse(key, sizeof key);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "setting up decryption");
    return 0;
}

void s3h_sse_headers(s3h_out_t *o, const char *text, const s3h_sse_req_t *q)
{
    store_sse_t s;
    if (!text || store_sse_parse(text, &s) != WH_OK)
        return;
    char kid[IDENT_KMS_ID_MAX + 1];
    unsigned ver;
    if (s.kind == STORE_SSE_S3) {
        s3h_out_header(o, SSE_H, "AES256");
    } else if (s.kind == STORE_SSE_KMS && kms_secret_parse(s.secret, kid, &ver)) {
        s3h_out_header(o, SSE_H, "aws:kms");
        s3h_out_header(o, KMS_ID_H, kid);
    } else if (s.kind == STORE_SSE_C && q && q->kind == STORE_SSE_C) {
        s3h_out_header(o, SSEC_H "algorithm", "AES256");
        s3h_out_header(o, SSEC_H "key-md5", q->ckey_md5);
    }
}

typedef struct {
    front_req_t *r;
    const s3h_sse_req_t *q;
    s3_err_t err;
    char msg[256];
} copy_key_arg_t;

static wh_status_t copy_src_key(void *arg, const data_obj_meta_t *src,
                                uint8_t key[STORE_SSE_KEY_LEN])
{
    copy_key_arg_t *a = arg;
    return s3h_sse_key(a->r, src->sse, a->q, key, &a->err, a->msg, sizeof a->msg);
}

int s3h_sse_copy(front_req_t *r, s3h_out_t *o, const char *sbucket, const char *skey,
                 const char *sversion, const data_obj_meta_t *replace_meta,
                 data_obj_meta_t *out_meta, wh_status_t *st, char *src_etag, uint64_t *src_size)
{
    s3h_sse_req_t src, dst;
    int ret;
    if ((ret = s3h_sse_request(r, o, true, false, &src)))
        return ret;
    if ((ret = s3h_sse_request(r, o, false, true, &dst)) || (ret = s3h_sse_default(r, o, &dst))) {
        s3h_sse_req_wipe(&src);
        return ret;
    }
    char *dsse = NULL;
    uint8_t dkey[STORE_SSE_KEY_LEN];
    if ((ret = s3h_sse_new(r, o, &dst, &dsse, dkey))) {
        s3h_sse_req_wipe(&src);
        s3h_sse_req_wipe(&dst);
        return ret;
    }
    copy_key_arg_t a = {.r = r, .q = &src};
    store_copy_sse_t cs = {
        .src_key = copy_src_key, .arg = &a, .dst_sse = dsse, .dst_key = dsse ? dkey : NULL};
    *st = store_object_copy(s3h_st(r),
                            &(store_copy_args_t){.src_bucket = sbucket,
                                                 .src_key = skey,
                                                 .src_version = sversion,
                                                 .dst_bucket = s3h_b(r),
                                                 .dst_key = s3h_k(r),
                                                 .replace_meta = replace_meta,
                                                 .sse = &cs},
                            out_meta);
    memcpy(src_etag, cs.src_etag, sizeof cs.src_etag);
    *src_size = cs.src_size;
    OPENSSL_cleanse(dkey, sizeof dkey);
    if (*st == WH_ERR_AUTH || (*st != WH_OK && a.msg[0])) {
        ret = s3h_err(o, a.msg[0] ? a.err : S3_ERR_INVALID_REQUEST,
                      a.msg[0] ? a.msg
                               : "the copy source is encrypted with a customer key: give it by "
                                 "x-amz-copy-source-server-side-encryption-customer-*");
    } else if (*st == WH_OK) {
        s3h_sse_headers(o, dsse, &dst);
    }
    free(dsse);
    s3h_sse_req_wipe(&src);
    s3h_sse_req_wipe(&dst);
    return ret;
}

int s3h_sse_default(front_req_t *r, s3h_out_t *o, s3h_sse_req_t *q)
{
    if (q->kind != STORE_SSE_NONE)
        return 0;
    char *v = NULL;
    wh_status_t st = store_bucket_attr_get(s3h_st(r), s3h_b(r), DATA_BATTR_ENCRYPTION, &v);
    if (st == WH_ERR_NOT_FOUND)
        return 0; /* the handler answers NoSuchBucket */
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "reading the bucket's default encryption");
    if (v && strcmp(v, "AES256") == 0) {
        q->kind = STORE_SSE_S3;
    } else if (v && strncmp(v, "aws:kms;", 8) == 0) {
        /* "aws:kms;<KMSMasterKeyID>" (bconfig.c) */
        q->kind = STORE_SSE_KMS;
        snprintf(q->kms_ref, sizeof q->kms_ref, "%s", v + 8);
    }
    free(v);
    return 0;
}

static void sse_reply_keep(front_req_t *r, const char *sse, const s3h_sse_req_t *q)
{
    store_sse_t s;
    unsigned ver;
    if (store_sse_parse(sse, &s) != WH_OK)
        return;
    r->sse_reply = s.kind == STORE_SSE_S3 ? 1 : s.kind == STORE_SSE_C ? 2 : 3;
    snprintf(r->sse_key_md5, sizeof r->sse_key_md5, "%s", q->ckey_md5);
    if (s.kind == STORE_SSE_KMS && !kms_secret_parse(s.secret, r->sse_kms_id, &ver))
        r->sse_reply = 0;
}

void s3h_sse_reply(const front_req_t *r, s3h_out_t *o)
{
    if (r->sse_reply == 1) {
        s3h_out_header(o, SSE_H, "AES256");
    } else if (r->sse_reply == 2) {
        s3h_out_header(o, SSEC_H "algorithm", "AES256");
        s3h_out_header(o, SSEC_H "key-md5", r->sse_key_md5);
    } else if (r->sse_reply == 3) {
        s3h_out_header(o, SSE_H, "aws:kms");
        s3h_out_header(o, KMS_ID_H, r->sse_kms_id);
    }
}

int s3h_sse_writer(front_req_t *r, s3h_out_t *o, bool part)
{
    s3h_sse_req_t q;
    int ret = s3h_sse_request(r, o, false, !part, &q);
    if (ret)
        return ret;
    uint8_t key[STORE_SSE_KEY_LEN];
    char *sse = NULL;
    wh_status_t st = WH_OK;
    if (part) {
        /* A part takes its upload's encryption: SSE-C's key must be given again, and be the
         * same key. */
        data_obj_meta_t um;
        memset(&um, 0, sizeof um);
        st = store_mpu_meta(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id, &um);
        if (st == WH_ERR_NOT_FOUND) {
            s3h_sse_req_wipe(&q);
            return s3h_err_not_found(r, o, S3_ERR_NO_SUCH_UPLOAD);
        }
        if (st != WH_OK) {
            s3h_sse_req_wipe(&q);
            return s3h_err_status(r, o, st, "reading the upload");
        }
        store_sse_t us;
        if (q.kind == STORE_SSE_KMS &&
            (!um.sse || store_sse_parse(um.sse, &us) != WH_OK || us.kind != STORE_SSE_KMS)) {
            ret = s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                           "%s: aws:kms on UploadPart: the upload was not created with SSE-KMS "
                           "(a part takes its upload's encryption, set by "
                           "CreateMultipartUpload)",
                           SSE_H);
        } else if (um.sse) {
            s3_err_t e;
            char msg[256];
            if (s3h_sse_key(r, um.sse, &q, key, &e, msg, sizeof msg) != WH_OK) {
                if (e == S3_ERR_INVALID_REQUEST)
                    snprintf(msg, sizeof msg,
                             "the upload is encrypted with a customer key: "
                             "each UploadPart must give that key by the SSE-C headers");
                ret = s3h_err(o, e, msg);
            } else {
                st = store_writer_encrypt(r->w, key, um.sse, r->part_number);
                if (st != WH_OK)
                    ret = s3h_err_status(r, o, st, "setting up encryption");
                else
                    sse_reply_keep(r, um.sse, &q);
            }
        } else if (q.kind == STORE_SSE_C) {
            ret = s3h_err(o, S3_ERR_INVALID_REQUEST,
                          "the upload was created without a customer key: its parts take none");
        }
        data_obj_meta_free(&um);
    } else {
        if (!(ret = s3h_sse_default(r, o, &q)) && !(ret = s3h_sse_new(r, o, &q, &sse, key)) &&
            sse) {
            st = store_writer_encrypt(r->w, key, sse, 0); /* the commit stores sse */
            if (st != WH_OK)
                ret = s3h_err_status(r, o, st, "setting up encryption");
            else
                sse_reply_keep(r, sse, &q);
        }
    }
    OPENSSL_cleanse(key, sizeof key);
    free(sse);
    s3h_sse_req_wipe(&q);
    return ret;
}
