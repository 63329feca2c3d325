/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket configurations kept beside the bucket's row (store_bucket_attr_*): one table of kinds
 * (tagging, CORS, PublicAccessBlock, OwnershipControls, lifecycle, default encryption), each
 * naming its sub-resource, its stored attribute, its "not configured" error and its document's
 * parser and formatter, served by three handlers (s3h_bconfig_get, _put_finish, _delete). Also
 * the CORS preflight and the Access-Control-* headers of requests a rule allows, and the
 * PublicAccessBlock and OwnershipControls checks of acl_ops.c (BucketOwnerEnforced turns ACLs
 * off; BlockPublicAcls and BlockPublicPolicy refuse public ones). */
#include "s3ctl/s3ctl.h"
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

int s3h_bconfig_put_begin(front_req_t *r, s3h_out_t *o)
{
    return s3h_need_bucket(r, o); /* then the document */
}

/* ---- the kinds: each one's document <-> its stored value ---- */

/* A formatter's answer when the stored value says there is no configuration. */
#define UNSET (-1)

static int tags_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    s3_tagset_t *t = malloc(sizeof *t);
    char msg[200];
    if (!t)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    int ret = 0;
    if (s3_tags_parse_query(v, strlen(v), S3_BUCKET_TAGS_MAX, t, msg, sizeof msg) != S3_OK)
        ret = s3h_errf(o, S3_ERR_INTERNAL, "the stored bucket tags are damaged: %s", msg);
    else
        s3_tags_format_xml(t, b, S3H_XMLNS);
    free(t);
    return ret;
}

static int tags_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                      bool *unset)
{
    (void)r;
    s3_tagset_t *t = malloc(sizeof *t);
    if (!t)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    char msg[200];
    s3_err_t e = s3_tags_parse_xml(doc, len, S3_BUCKET_TAGS_MAX, t, msg, sizeof msg);
    if (e != S3_OK) {
        free(t);
        return s3h_err(o, e, msg);
    }
    s3_tags_format_query(t, v);
    *unset = t->n == 0; /* an empty TagSet removes the tags, as S3 does */
    free(t);
    return 0;
}

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

static int cors_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    s3_cors_t c;
    char msg[256];
    if (s3_cors_parse(v, strlen(v), &c, msg, sizeof msg) != S3_OK)
        return s3h_errf(o, S3_ERR_INTERNAL, "the stored CORS configuration is damaged: %s", msg);
    s3_cors_format(&c, b, S3H_XMLNS);
    s3_cors_free(&c);
    return 0;
}

static int cors_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                      bool *unset)
{
    (void)r;
    (void)unset;
    s3_cors_t c;
    char msg[256];
    s3_err_t e = s3_cors_parse(doc, len, &c, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    s3_cors_format(&c, v, S3H_XMLNS);
    s3_cors_free(&c);
    return 0;
}

static int pab_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    (void)o;
    unsigned bits = (unsigned)strtoul(v, NULL, 10);
    if (!(bits & PAB_SET))
        return UNSET;
    s3_pab_format(bits & ~PAB_SET, b, S3H_XMLNS);
    return 0;
}

static int pab_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                     bool *unset)
{
    (void)r;
    (void)unset;
    unsigned bits;
    char msg[256];
    s3_err_t e = s3_pab_parse(doc, len, &bits, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    wh_sbuf_printf(v, "%u", bits | PAB_SET);
    return 0;
}

static int own_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    (void)o;
    unsigned own = (unsigned)strtoul(v, NULL, 10);
    if (!own)
        return UNSET;
    s3_ownership_format(own, b, S3H_XMLNS);
    return 0;
}

static int own_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                     bool *unset)
{
    (void)r;
    (void)unset;
    unsigned own;
    char msg[256];
    s3_err_t e = s3_ownership_parse(doc, len, &own, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    wh_sbuf_printf(v, "%u", own);
    return 0;
}

/* The rules are applied by lifecycle_run.c. */
static int lc_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    s3_lc_t c;
    char msg[256];
    if (s3_lc_parse(v, strlen(v), &c, msg, sizeof msg) != S3_OK)
        return s3h_errf(o, S3_ERR_INTERNAL, "the stored lifecycle configuration is damaged: %s",
                        msg);
    s3_lc_format(&c, b, S3H_XMLNS);
    s3_lc_free(&c);
    return 0;
}

static int lc_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                    bool *unset)
{
    (void)r;
    (void)unset;
    s3_lc_t c;
    char msg[256];
    s3_err_t e = s3_lc_parse(doc, len, &c, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    s3_lc_format(&c, v, S3H_XMLNS);
    s3_lc_free(&c);
    return 0;
}

/* Default encryption, applied to writes by sse.c. */
static int enc_format(s3h_out_t *o, const char *v, wh_sbuf_t *b)
{
    if (strcmp(v, "AES256") != 0)
        return s3h_err(o, S3_ERR_INTERNAL, "the stored default encryption is damaged");
    s3_encryption_format(S3_SSE_AES256, b, S3H_XMLNS);
    return 0;
}

static int enc_parse(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                     bool *unset)
{
    (void)unset;
    unsigned alg;
    char msg[256];
    s3_err_t e = s3_encryption_parse(doc, len, &alg, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    if (alg != S3_SSE_AES256)
        return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                        "a default encryption of SSEAlgorithm %s is not implemented by wharfd: "
                        "no key management service is configured; AES256 (SSE-S3) is",
                        alg == S3_SSE_KMS ? "aws:kms" : "aws:kms:dsse");
    if (!r->srv->ident || !ident_has_key(r->srv->ident))
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "a default encryption of AES256 needs the server key "
                       "(--server-key-file), which this server has not got");
    wh_sbuf_puts(v, "AES256");
    return 0;
}

static const s3h_bconfig_kind_t kinds[] = {
    {.subresource = "tagging",
     .attr = DATA_BATTR_TAGS,
     .not_configured = S3_ERR_NO_SUCH_TAG_SET,
     .what = "tags",
     .put_status = 204,
     .format = tags_format,
     .parse = tags_parse},
    {.subresource = "cors",
     .attr = DATA_BATTR_CORS,
     .not_configured = S3_ERR_NO_SUCH_CORS,
     .what = "CORS configuration",
     .put_status = 200,
     .format = cors_format,
     .parse = cors_parse},
    {.subresource = "publicAccessBlock",
     .attr = DATA_BATTR_PAB,
     .not_configured = S3_ERR_NO_SUCH_PAB,
     .what = "PublicAccessBlock",
     .put_status = 200,
     .format = pab_format,
     .parse = pab_parse},
    {.subresource = "ownershipControls",
     .attr = DATA_BATTR_OWNERSHIP,
     .not_configured = S3_ERR_NO_SUCH_OWNERSHIP,
     .what = "OwnershipControls",
     .put_status = 200,
     .format = own_format,
     .parse = own_parse},
    {.subresource = "lifecycle",
     .attr = DATA_BATTR_LIFECYCLE,
     .not_configured = S3_ERR_NO_SUCH_LIFECYCLE,
     .what = "lifecycle configuration",
     .put_status = 200,
     .format = lc_format,
     .parse = lc_parse},
    {.subresource = "encryption",
     .attr = DATA_BATTR_ENCRYPTION,
     .not_configured = S3_ERR_NO_SUCH_ENCRYPTION,
     .what = "default encryption",
     .put_status = 200,
     .format = enc_format,
     .parse = enc_parse},
};

const s3h_bconfig_kind_t *s3h_bconfig_kind(const char *subresource)
{
    for (size_t i = 0; subresource && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].subresource, subresource) == 0)
            return &kinds[i];
    return NULL;
}

/* ---- the three handlers: the kind is the one the route's sub-resource names ---- */

static const s3h_bconfig_kind_t *kind_of(const front_req_t *r, s3h_out_t *o, int *ret)
{
    const char *sub = r->route.op ? r->route.op->q1 : NULL;
    const s3h_bconfig_kind_t *k = s3h_bconfig_kind(sub);
    if (!k)
        *ret = s3h_errf(o, S3_ERR_INTERNAL, "no bucket configuration is named '%s'",
                        sub ? sub : "(none)");
    return k;
}

int s3h_bconfig_get(front_req_t *r, s3h_out_t *o)
{
    int ret = 0;
    const s3h_bconfig_kind_t *k = kind_of(r, o, &ret);
    if (!k)
        return ret;
    char *v = NULL;
    if ((ret = attr_get(r, o, k->attr, &v)))
        return ret;
    if (!v)
        return s3h_err(o, k->not_configured, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    ret = k->format(o, v, &b);
    free(v);
    if (ret) {
        wh_sbuf_free(&b);
        return ret == UNSET ? s3h_err(o, k->not_configured, NULL) : ret;
    }
    return s3h_ok_xml(o, 200, &b);
}

int s3h_bconfig_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = 0;
    const s3h_bconfig_kind_t *k = kind_of(r, o, &ret);
    if (!k || (ret = s3h_body_md5_check(r, o)))
        return ret;
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    bool unset = false;
    ret = k->parse(r, o, r->buf.data ? r->buf.data : "", r->buf.len, &v, &unset);
    if (!ret) {
        wh_sbuf_append(&v, "", 0);
        if (v.oom)
            ret = s3h_errf(o, S3_ERR_INTERNAL, "out of memory keeping the %s", k->what);
        else
            ret = attr_set(r, o, k->attr, unset ? NULL : v.data, k->put_status);
    }
    wh_sbuf_free(&v);
    return ret;
}

int s3h_bconfig_delete(front_req_t *r, s3h_out_t *o)
{
    int ret = 0;
    const s3h_bconfig_kind_t *k = kind_of(r, o, &ret);
    return k ? attr_set(r, o, k->attr, NULL, 204) : ret;
}

/* ---- CORS: the preflight, and the headers of a request a rule allows ---- */

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

static int u_attr(front_req_t *r, s3h_out_t *o, data_battr_t which, unsigned *v)
{
    char *s = NULL;
    int ret = attr_get(r, o, which, &s);
    *v = s ? (unsigned)strtoul(s, NULL, 10) : 0;
    free(s);
    return ret;
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
