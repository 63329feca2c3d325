/* SPDX-License-Identifier: Apache-2.0 */
/* ACLs and bucket policies on the wire: GetBucketAcl/PutBucketAcl, GetObjectAcl/PutObjectAcl,
 * Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus, and the ACL that a new bucket or
 * object takes from x-amz-acl or x-amz-grant-* (CreateBucket, PutObject, CopyObject,
 * CreateMultipartUpload). s3h_authorize has allowed the row's action before any of these
 * runs; the engine (auth/authz.h) does the parsing and formatting. */
#include "s3ctl/s3ctl.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned g_grant_perms[] = {AUTH_PERM_READ, AUTH_PERM_WRITE, AUTH_PERM_READ_ACP,
                                         AUTH_PERM_WRITE_ACP, AUTH_PERM_FULL_CONTROL};

static bool has_grant_headers(front_req_t *r)
{
    for (size_t i = 0; i < sizeof g_grant_perms / sizeof g_grant_perms[0]; i++)
        if (front_hdr(r, auth_acl_grant_header_name(g_grant_perms[i])))
            return true;
    return false;
}

bool s3h_acl_request_grants(front_req_t *r)
{
    const char *canned = front_hdr(r, "x-amz-acl");
    return has_grant_headers(r) || (canned && strcmp(canned, "private") != 0 &&
                                    strcmp(canned, "bucket-owner-full-control") != 0);
}

/* The bucket owner for bucket-owner-* canned ACLs: s3h_authorize's, else looked up. */
static int bucket_owner(front_req_t *r, s3h_out_t *o, char out[65])
{
    const char *known = s3h_authz_bucket_owner(r);
    if (known) {
        snprintf(out, 65, "%s", known);
        return 0;
    }
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), s3h_b(r), &a);
    if (st != WH_OK)
        return st == WH_ERR_NOT_FOUND ? s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL)
                                      : s3h_err_status(r, o, st, "looking up the bucket");
    s3h_owner_id(r, a.owner, out);
    data_bucket_auth_free(&a);
    return 0;
}

/* The ACL x-amz-acl / x-amz-grant-* of r describe into acl; *named false when neither is
 * there. */
static int acl_of_headers(front_req_t *r, s3h_out_t *o, const char *owner, bool for_object,
                          auth_acl_t *acl, bool *named)
{
    const char *canned = front_hdr(r, "x-amz-acl");
    bool grants = has_grant_headers(r);
    *named = canned || grants;
    if (!*named)
        return 0;
    if (canned && grants)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "Specifying both Canned ACLs and Header Grants is not allowed");
    char msg[320];
    if (canned) {
        char bo[65];
        snprintf(bo, sizeof bo, "%s", owner);
        int ret;
        if (for_object && strncmp(canned, "bucket-owner-", 13) == 0 &&
            (ret = bucket_owner(r, o, bo)))
            return ret;
        s3_err_t e = auth_acl_canned(acl, canned, owner, bo, msg, sizeof msg);
        return e == S3_OK ? 0 : s3h_err(o, e, msg);
    }
    auth_acl_private(acl, owner);
    acl->n = 0; /* explicit grants replace the default: the ACL is exactly what they name */
    for (size_t i = 0; i < sizeof g_grant_perms / sizeof g_grant_perms[0]; i++) {
        const char *v = front_hdr(r, auth_acl_grant_header_name(g_grant_perms[i]));
        if (!v)
            continue;
        s3_err_t e = auth_acl_grant_header(acl, g_grant_perms[i], v, msg, sizeof msg);
        if (e != S3_OK)
            return s3h_err(o, e, msg);
    }
    return 0;
}

static int acl_text(s3h_out_t *o, const auth_acl_t *acl, char **text)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    auth_acl_serialize(acl, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the ACL");
    }
    *text = wh_sbuf_steal(&b);
    return 0;
}

int s3h_acl_from_request(front_req_t *r, s3h_out_t *o, const char *owner,
                         const char *bucket_owner_id, char **text)
{
    (void)bucket_owner_id;
    *text = NULL;
    auth_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    bool named;
    int ret = acl_of_headers(r, o, owner, false, acl, &named);
    if (!ret && named)
        ret = acl_text(o, acl, text);
    free(acl);
    return ret;
}

int s3h_acl_to_meta(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m)
{
    snprintf(m->owner, sizeof m->owner, "%s", s3h_owner_stored(r));
    free(m->acl);
    m->acl = NULL;
    if (!front_hdr(r, "x-amz-acl") && !has_grant_headers(r))
        return 0; /* the default: private to its owner */
    char owner[65];
    s3h_owner_id(r, m->owner, owner);
    auth_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    bool named;
    int ret = acl_of_headers(r, o, owner, true, acl, &named);
    if (!ret && named)
        ret = s3h_bconfig_acl_guard(r, o, acl, true);
    if (!ret && named)
        ret = acl_text(o, acl, &m->acl);
    free(acl);
    return ret;
}

/* ---- ?acl ------------------------------------------------------------------------------- */

/* The owner's DisplayName, by s3h_xml_owner_of's rule (listings show the same): "root" for
 * root (never its access key id, a credential), the caller's own user name, else (NULL) the
 * canonical id. */
static const char *display_name(front_req_t *r, const char *owner_id)
{
    char root[65];
    s3h_owner_id(r, "", root);
    if (strcmp(owner_id, root) == 0)
        return "root";
    if (r->who.kind == AUTH_PRINCIPAL_USER && strcmp(owner_id, r->who.canonical_id) == 0)
        return r->who.user;
    return NULL;
}

static int acl_reply(front_req_t *r, s3h_out_t *o, const auth_acl_t *acl)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    auth_acl_format_xml(acl, display_name(r, acl->owner), &b);
    return s3h_ok_xml(o, 200, &b);
}

static int load_bucket_acl(front_req_t *r, s3h_out_t *o, auth_acl_t *acl, data_bucket_auth_t *a)
{
    memset(a, 0, sizeof *a);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), s3h_b(r), a);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket's ACL");
    char owner[65], msg[256];
    s3h_owner_id(r, a->owner, owner);
    if (auth_acl_deserialize(a->acl, owner, acl, msg, sizeof msg) != S3_OK)
        return s3h_errf(o, S3_ERR_INTERNAL, "bucket %s: %s", s3h_b(r), msg);
    return 0;
}

int s3h_acl_bucket_get(front_req_t *r, s3h_out_t *o)
{
    auth_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    data_bucket_auth_t a;
    int ret = load_bucket_acl(r, o, acl, &a);
    if (!ret)
        ret = acl_reply(r, o, acl);
    data_bucket_auth_free(&a);
    free(acl);
    return ret;
}

/* The object with its ACL, after its check (obj_acl rows). */
static int load_object_acl(front_req_t *r, s3h_out_t *o, auth_acl_t *acl)
{
    int ret = s3h_key_check(r, o);
    if (ret)
        return ret;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t st = store_object_open(
        s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r)}, &m, NULL);
    if (st != WH_OK) {
        data_obj_meta_free(&m);
        if (st == WH_ERR_NOT_FOUND && (ret = s3h_authz_object(r, o, NULL)))
            return ret; /* who may not learn whether it exists */
        return s3h_err_status(r, o, st, "opening the object");
    }
    if (!(ret = s3h_authz_object(r, o, &m))) {
        char owner[65], msg[256];
        s3h_owner_id(r, m.owner, owner);
        if (auth_acl_deserialize(m.acl, owner, acl, msg, sizeof msg) != S3_OK)
            ret = s3h_errf(o, S3_ERR_INTERNAL, "object %s: %s", s3h_k(r), msg);
    }
    data_obj_meta_free(&m);
    return ret;
}

int s3h_acl_object_get(front_req_t *r, s3h_out_t *o)
{
    auth_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    int ret = load_object_acl(r, o, acl);
    if (!ret)
        ret = acl_reply(r, o, acl);
    free(acl);
    return ret;
}

int s3h_acl_put_begin(front_req_t *r, s3h_out_t *o)
{
    if (s3h_k(r)) {
        int ret = s3h_key_check(r, o);
        if (ret)
            return ret;
    }
    return 0; /* the AccessControlPolicy body, or none with x-amz-acl / x-amz-grant-* */
}

/* The new ACL from the body or the headers; the current owner stays the owner. */
static int acl_from_put(front_req_t *r, s3h_out_t *o, const char *owner, bool for_object,
                        auth_acl_t *acl)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    bool named;
    if ((ret = acl_of_headers(r, o, owner, for_object, acl, &named)))
        return ret;
    if (named && r->buf.len)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "give the ACL either in the body or in "
                       "x-amz-acl/x-amz-grant-* headers, not both");
    if (named)
        return s3h_bconfig_acl_guard(r, o, acl, true);
    if (!r->buf.len)
        return s3h_err(o, S3_ERR_MISSING_SECURITY_HEADER,
                       "PutAcl needs an AccessControlPolicy body, x-amz-acl or x-amz-grant-*");
    char msg[320];
    s3_err_t e = auth_acl_parse_xml(r->buf.data, r->buf.len, acl, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    if (strcmp(acl->owner, owner) != 0)
        return s3h_errf(o, S3_ERR_ACCESS_DENIED,
                        "Owner/ID %s is not the owner (%s): an ACL "
                        "cannot change the owner",
                        acl->owner, owner);
    return s3h_bconfig_acl_guard(r, o, acl, true);
}

int s3h_acl_bucket_put_finish(front_req_t *r, s3h_out_t *o)
{
    auth_acl_t *cur = malloc(sizeof *cur), *acl = malloc(sizeof *acl);
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    int ret;
    char *text = NULL;
    if (!cur || !acl) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
        goto cleanup;
    }
    if ((ret = load_bucket_acl(r, o, cur, &a)) ||
        (ret = acl_from_put(r, o, cur->owner, false, acl)) || (ret = acl_text(o, acl, &text)))
        goto cleanup;
    wh_status_t st = store_bucket_set_acl(s3h_st(r), s3h_b(r), text);
    ret = st == WH_OK ? s3h_ok(o, 200) : s3h_err_status(r, o, st, "storing the bucket's ACL");
cleanup:
    free(text);
    data_bucket_auth_free(&a);
    free(cur);
    free(acl);
    return ret;
}

int s3h_acl_object_put_finish(front_req_t *r, s3h_out_t *o)
{
    auth_acl_t *cur = malloc(sizeof *cur), *acl = malloc(sizeof *acl);
    int ret;
    char *text = NULL;
    if (!cur || !acl) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
        goto cleanup;
    }
    if ((ret = load_object_acl(r, o, cur)) || (ret = acl_from_put(r, o, cur->owner, true, acl)) ||
        (ret = acl_text(o, acl, &text)))
        goto cleanup;
    wh_status_t st = store_object_set_acl(s3h_st(r), s3h_b(r), s3h_k(r), text);
    ret = st == WH_OK ? s3h_ok(o, 200) : s3h_err_status(r, o, st, "storing the object's ACL");
cleanup:
    free(text);
    free(cur);
    free(acl);
    return ret;
}

/* ---- ?policy ---------------------------------------------------------------------------- */

static int load_policy(front_req_t *r, s3h_out_t *o, data_bucket_auth_t *a)
{
    memset(a, 0, sizeof *a);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), s3h_b(r), a);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket policy");
    if (!a->policy)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET_POLICY, NULL);
    return 0;
}

int s3h_policy_get(front_req_t *r, s3h_out_t *o)
{
    data_bucket_auth_t a;
    int ret = load_policy(r, o, &a);
    if (!ret) {
        size_t n = strlen(a.policy);
        struct MHD_Response *resp = front_resp_buffer(a.policy, n);
        a.policy = NULL; /* the response owns it */
        s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        ret = s3h_ok_resp(o, 200, resp, 0);
    }
    data_bucket_auth_free(&a);
    return ret;
}

int s3h_policy_put_begin(front_req_t *r, s3h_out_t *o)
{
    const char *cl = front_hdr(r, "content-length");
    uint64_t n = 0;
    if (cl && wh_parse_u64(cl, strlen(cl), &n) == 0 && n > AUTH_POLICY_MAX_BYTES)
        return s3h_errf(o, S3_ERR_MALFORMED_POLICY,
                        "Policy exceeds the maximum allowed "
                        "document size (%llu bytes, the limit is %u)",
                        (unsigned long long)n, AUTH_POLICY_MAX_BYTES);
    return 0;
}

int s3h_policy_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    char msg[320];
    auth_policy_t *pol = NULL;
    s3_err_t e = auth_policy_parse(r->buf.data, r->buf.len, &pol, msg, sizeof msg);
    if (e == S3_OK)
        e = auth_policy_check_bucket(pol, s3h_b(r), msg, sizeof msg);
    if (e != S3_OK) {
        auth_policy_free(pol);
        return s3h_err(o, e, msg);
    }
    ret = s3h_bconfig_policy_guard(r, o, pol);
    auth_policy_free(pol);
    if (ret)
        return ret;
    char *text = malloc(r->buf.len + 1);
    if (!text)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    memcpy(text, r->buf.data, r->buf.len);
    text[r->buf.len] = '\0';
    wh_status_t st = store_bucket_set_policy(s3h_st(r), s3h_b(r), text);
    free(text);
    return st == WH_OK ? s3h_ok(o, 204) : s3h_err_status(r, o, st, "storing the bucket policy");
}

int s3h_policy_delete(front_req_t *r, s3h_out_t *o)
{
    wh_status_t st = store_bucket_set_policy(s3h_st(r), s3h_b(r), NULL);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    return st == WH_OK ? s3h_ok(o, 204) : s3h_err_status(r, o, st, "deleting the bucket policy");
}

int s3h_policy_status(front_req_t *r, s3h_out_t *o)
{
    data_bucket_auth_t a;
    int ret = load_policy(r, o, &a);
    if (ret && o->code && strcmp(o->code, "NoSuchBucketPolicy") == 0) {
        /* No policy: it makes nothing public. */
        data_bucket_auth_free(&a);
        wh_sbuf_t b;
        wh_sbuf_init(&b);
        wh_sbuf_puts(&b, S3H_XML_DECL "<PolicyStatus xmlns=\"" S3H_XMLNS "\"><IsPublic>false"
                                      "</IsPublic></PolicyStatus>");
        return s3h_ok_xml(o, 200, &b);
    }
    if (!ret) {
        char msg[256];
        auth_policy_t *pol = NULL;
        if (auth_policy_parse(a.policy, strlen(a.policy), &pol, msg, sizeof msg) != S3_OK) {
            ret = s3h_errf(o, S3_ERR_INTERNAL, "the stored policy cannot be read: %s", msg);
        } else {
            wh_sbuf_t b;
            wh_sbuf_init(&b);
            wh_sbuf_printf(&b,
                           S3H_XML_DECL "<PolicyStatus xmlns=\"" S3H_XMLNS "\"><IsPublic>%s"
                                        "</IsPublic></PolicyStatus>",
                           auth_policy_is_public(pol) ? "true" : "false");
            ret = s3h_ok_xml(o, 200, &b);
        }
        auth_policy_free(pol);
    }
    data_bucket_auth_free(&a);
    return ret;
}
