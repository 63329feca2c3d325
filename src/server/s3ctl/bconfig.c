/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket configurations: tagging (Get/Put/DeleteBucketTagging), CORS (Get/Put/DeleteBucketCors,
 * the OPTIONS preflight, and the Access-Control-* headers of requests a rule allows), the
 * PublicAccessBlock (Get/Put/DeletePublicAccessBlock; enforced in acl_ops.c and authorize.c)
 * and OwnershipControls (Get/Put/DeleteBucketOwnershipControls; BucketOwnerEnforced turns
 * ACLs off), and lifecycle (Get/Put/DeleteBucketLifecycleConfiguration). Each is kept beside the
 * bucket's row (store_bucket_attr_*). */
#include "s3ctl/s3ctl.h"
#include "ident/kms.h"
#include "s3/bucket_config.h"
#include "s3/lifecycle.h"
#include "s3/tags.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stored value of a PublicAccessBlock: its bits, plus this one once a configuration exists
 * (all four false is still a configuration). */
#define PAB_SET 16u

/* The stored value of one configuration: 0 with *out (NULL: none), or the error's status. */
static int attr_get(front_req_t *r, s3h_out_t *o, data_battr_t which, char **out)
{
    wh_status_t st = store_bucket_attr_get(s3h_st(r), s3h_b(r), which, out);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket's configuration");
    return 0;
}

static int attr_set(front_req_t *r, s3h_out_t *o, data_battr_t which, const char *v, int ok)
{
    wh_status_t st = store_bucket_attr_set(s3h_st(r), s3h_b(r), which, v);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "storing the bucket's configuration");
    return s3h_ok(o, ok);
}

/* Stores the canonical document a parser's format wrote into b (taken), answering 200. */
static int attr_set_doc(front_req_t *r, s3h_out_t *o, data_battr_t which, wh_sbuf_t *b,
                        const char *what)
{
    wh_sbuf_append(b, "", 0);
    int ret = b->oom ? s3h_errf(o, S3_ERR_INTERNAL, "out of memory keeping the %s", what)
                     : attr_set(r, o, which, b->data, 200);
    wh_sbuf_free(b);
    return ret;
}

static const char *body(const front_req_t *r)
{
    return r->buf.data ? r->buf.data : "";
}

int s3h_bconfig_put_begin(front_req_t *r, s3h_out_t *o)
{
    return s3h_need_bucket(r, o); /* then the document */
}

/* ---- tagging ---- */

int s3h_btag_get(front_req_t *r, s3h_out_t *o)
{
    char *v = NULL;
    int ret = attr_get(r, o, DATA_BATTR_TAGS, &v);
    if (ret)
        return ret;
    if (!v)
        return s3h_err(o, S3_ERR_NO_SUCH_TAG_SET, NULL);
    s3_tagset_t *t = malloc(sizeof *t);
    char msg[200];
    if (!t) {
        free(v);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    }
    if (s3_tags_parse_query(v, strlen(v), S3_BUCKET_TAGS_MAX, t, msg, sizeof msg) != S3_OK) {
        ret = s3h_errf(o, S3_ERR_INTERNAL, "the stored bucket tags are damaged: %s", msg);
    } else {
        wh_sbuf_t b;
        wh_sbuf_init(&b);
        wh_sbuf_puts(&b, S3H_XML_DECL);
        s3_tags_format_xml(t, &b, S3H_XMLNS);
        ret = s3h_ok_xml(o, 200, &b);
    }
    free(t);
    free(v);
    return ret;
}

int s3h_btag_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_tagset_t *t = malloc(sizeof *t);
    if (!t)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    char msg[200];
    s3_err_t e = s3_tags_parse_xml(body(r), r->buf.len, S3_BUCKET_TAGS_MAX, t, msg, sizeof msg);
    if (e != S3_OK) {
        free(t);
        return s3h_err(o, e, msg);
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_tags_format_query(t, &b);
    wh_sbuf_append(&b, "", 0);
    size_t n = t->n;
    free(t);
    if (b.oom) {
        wh_sbuf_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the tags");
    }
    /* An empty TagSet removes the tags, as S3 does. */
    ret = attr_set(r, o, DATA_BATTR_TAGS, n ? (b.data ? b.data : "") : NULL, 204);
    wh_sbuf_free(&b);
    return ret;
}

int s3h_btag_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_TAGS, NULL, 204);
}

/* ---- CORS ---- */

/* The bucket's CORS rules: 0 with *has false when there are none. */
static int cors_load(front_req_t *r, s3h_out_t *o, s3_cors_t *c, bool *has)
{
    char *v = NULL;
    *has = false;
    memset(c, 0, sizeof *c);
    int ret = attr_get(r, o, DATA_BATTR_CORS, &v);
    if (ret || !v)
        return ret;
    char msg[256];
    if (s3_cors_parse(v, strlen(v), c, msg, sizeof msg) != S3_OK)
        ret = s3h_errf(o, S3_ERR_INTERNAL, "the stored CORS configuration is damaged: %s", msg);
    else
        *has = true;
    free(v);
    return ret;
}

int s3h_cors_get(front_req_t *r, s3h_out_t *o)
{
    s3_cors_t c;
    bool has;
    int ret = cors_load(r, o, &c, &has);
    if (ret)
        return ret;
    if (!has)
        return s3h_err(o, S3_ERR_NO_SUCH_CORS, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_cors_format(&c, &b, S3H_XMLNS);
    s3_cors_free(&c);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_cors_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_cors_t c;
    char msg[256];
    s3_err_t e = s3_cors_parse(body(r), r->buf.len, &c, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_cors_format(&c, &b, S3H_XMLNS);
    s3_cors_free(&c);
    return attr_set_doc(r, o, DATA_BATTR_CORS, &b, "CORS configuration");
}

int s3h_cors_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_CORS, NULL, 204);
}

static void cors_headers(s3h_out_t *o, const s3_cors_rule_t *rule, const char *origin,
                         bool preflight, const char *req_headers)
{
    static const char *const names[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};
    bool any = false;
    for (size_t i = 0; i < rule->norigins; i++)
        any |= strcmp(rule->origins[i], "*") == 0;
    s3h_out_header(o, "Access-Control-Allow-Origin", any ? "*" : origin);
    if (!any)
        s3h_out_header(o, "Access-Control-Allow-Credentials", "true");
    s3h_out_header(o, "Vary",
                   "Origin, Access-Control-Request-Headers, "
                   "Access-Control-Request-Method");
    char m[64] = "";
    for (size_t i = 0; i < 5; i++)
        if (rule->methods & (1u << i)) {
            if (*m)
                strcat(m, ", ");
            strcat(m, names[i]);
        }
    s3h_out_header(o, "Access-Control-Allow-Methods", m);
    if (preflight && req_headers && *req_headers)
        s3h_out_header(o, "Access-Control-Allow-Headers", req_headers);
    if (rule->nexpose) {
        wh_sbuf_t e;
        wh_sbuf_init(&e);
        for (size_t i = 0; i < rule->nexpose; i++)
            wh_sbuf_printf(&e, "%s%s", i ? ", " : "", rule->expose[i]);
        wh_sbuf_append(&e, "", 0);
        if (!e.oom)
            s3h_out_header(o, "Access-Control-Expose-Headers", e.data);
        wh_sbuf_free(&e);
    }
    if (rule->max_age >= 0)
        s3h_out_header_u64(o, "Access-Control-Max-Age", (uint64_t)rule->max_age);
}

int s3h_cors_preflight(front_req_t *r, s3h_out_t *o)
{
    const char *origin = front_hdr(r, "origin");
    const char *method = front_hdr(r, "access-control-request-method");
    if (!origin || !*origin)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "Insufficient information. Origin request header needed.");
    unsigned bit = s3_cors_method_bit(method);
    if (!bit)
        return s3h_errf(o, S3_ERR_INVALID_REQUEST, "Invalid Access-Control-Request-Method: %s",
                        method ? method : "(none)");
    s3_cors_t c;
    bool has;
    int ret = cors_load(r, o, &c, &has);
    if (ret)
        return ret;
    if (!has)
        return s3h_err(o, S3_ERR_CORS_FORBIDDEN,
                       "CORSResponse: CORS is not enabled for this "
                       "bucket.");
    const char *rh = front_hdr(r, "access-control-request-headers");
    const s3_cors_rule_t *rule = s3_cors_match(&c, origin, bit, rh);
    if (!rule)
        ret = s3h_err(o, S3_ERR_CORS_FORBIDDEN,
                      "CORSResponse: This CORS request is not allowed. "
                      "This is usually because the evalution of "
                      "Origin, request method / "
                      "Access-Control-Request-Method or "
                      "Access-Control-Request-Headers are not "
                      "whitelisted by the resource's CORS spec.");
    else {
        cors_headers(o, rule, origin, true, rh);
        ret = s3h_ok(o, 200);
    }
    s3_cors_free(&c);
    return ret;
}

void s3h_cors_actual(front_req_t *r, s3h_out_t *o)
{
    const char *origin = front_hdr(r, "origin");
    if (!origin || !*origin || !s3h_b(r) || !r->method || r->route.api == FRONT_API_CORS_PREFLIGHT)
        return;
    unsigned bit = s3_cors_method_bit(r->method);
    char *v = NULL;
    if (!bit || store_bucket_attr_get(s3h_st(r), s3h_b(r), DATA_BATTR_CORS, &v) != WH_OK || !v)
        return;
    s3_cors_t c;
    char msg[64];
    if (s3_cors_parse(v, strlen(v), &c, msg, sizeof msg) == S3_OK) {
        const s3_cors_rule_t *rule = s3_cors_match(&c, origin, bit, NULL);
        if (rule)
            cors_headers(o, rule, origin, false, NULL);
        s3_cors_free(&c);
    }
    free(v);
}

/* ---- PublicAccessBlock ---- */

static int u_attr(front_req_t *r, s3h_out_t *o, data_battr_t which, unsigned *v)
{
    char *s = NULL;
    int ret = attr_get(r, o, which, &s);
    *v = s ? (unsigned)strtoul(s, NULL, 10) : 0;
    free(s);
    return ret;
}

int s3h_pab_get(front_req_t *r, s3h_out_t *o)
{
    unsigned v;
    int ret = u_attr(r, o, DATA_BATTR_PAB, &v);
    if (ret)
        return ret;
    if (!(v & PAB_SET))
        return s3h_err(o, S3_ERR_NO_SUCH_PAB, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_pab_format(v & ~PAB_SET, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_pab_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    unsigned bits;
    char msg[256];
    s3_err_t e = s3_pab_parse(body(r), r->buf.len, &bits, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    char v[16];
    snprintf(v, sizeof v, "%u", bits | PAB_SET);
    return attr_set(r, o, DATA_BATTR_PAB, v, 200);
}

int s3h_pab_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_PAB, NULL, 204);
}

/* ---- OwnershipControls ---- */

int s3h_own_get(front_req_t *r, s3h_out_t *o)
{
    unsigned v;
    int ret = u_attr(r, o, DATA_BATTR_OWNERSHIP, &v);
    if (ret)
        return ret;
    if (!v)
        return s3h_err(o, S3_ERR_NO_SUCH_OWNERSHIP, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_ownership_format(v, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_own_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    unsigned own;
    char msg[256];
    s3_err_t e = s3_ownership_parse(body(r), r->buf.len, &own, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    char v[8];
    snprintf(v, sizeof v, "%u", own);
    return attr_set(r, o, DATA_BATTR_OWNERSHIP, v, 200);
}

int s3h_own_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_OWNERSHIP, NULL, 204);
}

/* ---- enforcement shared with acl_ops.c ---- */

int s3h_bconfig_acl_guard(front_req_t *r, s3h_out_t *o, const auth_acl_t *acl, bool explicit_acl)
{
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), s3h_b(r), &a);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket's access settings");
    unsigned pab = a.pab, own = a.ownership;
    data_bucket_auth_free(&a);
    if (own == S3_OWN_BUCKET_OWNER_ENFORCED && explicit_acl) {
        /* ACLs are off: only the canned ACLs that change nothing are accepted, as in S3. */
        const char *canned = front_hdr(r, "x-amz-acl");
        if (!canned ||
            (strcmp(canned, "bucket-owner-full-control") != 0 && strcmp(canned, "private") != 0))
            return s3h_err(o, S3_ERR_ACL_NOT_SUPPORTED,
                           "The bucket does not allow ACLs (its ObjectOwnership is "
                           "BucketOwnerEnforced)");
    }
    if ((pab & S3_PAB_BLOCK_PUBLIC_ACLS) && acl && auth_acl_is_public(acl))
        return s3h_err(o, S3_ERR_ACCESS_DENIED,
                       "Access Denied: the bucket's PublicAccessBlock "
                       "(BlockPublicAcls) refuses public ACLs");
    return 0;
}

int s3h_bconfig_policy_guard(front_req_t *r, s3h_out_t *o, const auth_policy_t *pol)
{
    unsigned v;
    int ret = u_attr(r, o, DATA_BATTR_PAB, &v);
    if (ret)
        return ret;
    if ((v & S3_PAB_BLOCK_PUBLIC_POLICY) && auth_policy_is_public(pol))
        return s3h_err(o, S3_ERR_ACCESS_DENIED,
                       "Access Denied: the bucket's PublicAccessBlock "
                       "(BlockPublicPolicy) refuses public policies");
    return 0;
}

/* ---- lifecycle (the rules are applied by lifecycle_run.c) ---- */

int s3h_lc_get(front_req_t *r, s3h_out_t *o)
{
    char *v = NULL;
    int ret = attr_get(r, o, DATA_BATTR_LIFECYCLE, &v);
    if (ret)
        return ret;
    if (!v)
        return s3h_err(o, S3_ERR_NO_SUCH_LIFECYCLE, NULL);
    s3_lc_t c;
    char msg[256];
    if (s3_lc_parse(v, strlen(v), &c, msg, sizeof msg) != S3_OK) {
        free(v);
        return s3h_errf(o, S3_ERR_INTERNAL, "the stored lifecycle configuration is damaged: %s",
                        msg);
    }
    free(v);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_lc_format(&c, &b, S3H_XMLNS);
    s3_lc_free(&c);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_lc_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_lc_t c;
    char msg[256];
    s3_err_t e = s3_lc_parse(body(r), r->buf.len, &c, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lc_format(&c, &b, S3H_XMLNS);
    s3_lc_free(&c);
    return attr_set_doc(r, o, DATA_BATTR_LIFECYCLE, &b, "lifecycle configuration");
}

int s3h_lc_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_LIFECYCLE, NULL, 204);
}

/* ---- default encryption (applied to writes by sse.c) ---- */

int s3h_benc_get(front_req_t *r, s3h_out_t *o)
{
    char *v = NULL;
    int ret = attr_get(r, o, DATA_BATTR_ENCRYPTION, &v);
    if (ret)
        return ret;
    if (!v)
        return s3h_err(o, S3_ERR_NO_SUCH_ENCRYPTION, NULL);
    /* "AES256", or "aws:kms;<KMSMasterKeyID>" */
    bool aes = strcmp(v, "AES256") == 0, kms = strncmp(v, "aws:kms;", 8) == 0;
    if (!aes && !kms) {
        free(v);
        return s3h_err(o, S3_ERR_INTERNAL, "the stored default encryption is damaged");
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_encryption_format_key(aes ? S3_SSE_AES256 : S3_SSE_KMS, aes ? NULL : v + 8, &b, S3H_XMLNS);
    free(v);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_benc_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    unsigned alg;
    char msg[256], kid[288], val[300];
    s3_err_t e =
        s3_encryption_parse_key(body(r), r->buf.len, &alg, kid, sizeof kid, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    if (alg == S3_SSE_KMS_DSSE)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "a default encryption of SSEAlgorithm aws:kms:dsse (dual-layer SSE-KMS) "
                       "is not implemented by wharfd; AES256 and aws:kms are");
    if (!r->srv->ident || !ident_has_key(r->srv->ident))
        return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                        "a default encryption of %s needs the server key "
                        "(--server-key-file), which this server has not got",
                        alg == S3_SSE_KMS ? "aws:kms" : "AES256");
    if (alg == S3_SSE_KMS) {
        ident_kms_key_t k;
        if (!kid[0])
            return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                           "a default encryption of aws:kms needs its KMSMasterKeyID (wharfd "
                           "has no account-default KMS key)");
        wh_status_t st = ident_kms_describe(r->srv->ident, kid, &k);
        if (st == WH_ERR_NOT_FOUND)
            return s3h_errf(o, S3_ERR_KMS_NOT_FOUND, "KMSMasterKeyID %.200s: no such KMS key", kid);
        if (st != WH_OK)
            return s3h_err_status(r, o, st, "reading the KMS key");
        snprintf(val, sizeof val, "aws:kms;%s", kid);
    }
    return attr_set(r, o, DATA_BATTR_ENCRYPTION, alg == S3_SSE_KMS ? val : "AES256", 200);
}

int s3h_benc_delete(front_req_t *r, s3h_out_t *o)
{
    return attr_set(r, o, DATA_BATTR_ENCRYPTION, NULL, 204);
}
