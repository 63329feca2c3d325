/* ACLs and bucket policies on the wire: GetBucketAcl/PutBucketAcl, GetObjectAcl/PutObjectAcl,
 * Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus, and the ACL that a new bucket or
 * object takes from x-amz-acl or x-amz-grant-* (CreateBucket, PutObject, CopyObject,
 * CreateMultipartUpload). srv_authorize has allowed the row's action before any of these
 * runs; the engine (auth/authz.h) does the parsing and formatting. */
#include "s3ctl/s3ctl.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned g_grant_perms[] = {S3_PERM_READ, S3_PERM_WRITE, S3_PERM_READ_ACP,
                                         S3_PERM_WRITE_ACP, S3_PERM_FULL_CONTROL};

static bool has_grant_headers(srv_req_t *r)
{
    for (size_t i = 0; i < sizeof g_grant_perms / sizeof g_grant_perms[0]; i++)
        if (srv_hdr(r, s3_acl_grant_header_name(g_grant_perms[i])))
            return true;
    return false;
}

bool srv_acl_request_grants(srv_req_t *r)
{
    const char *canned = srv_hdr(r, "x-amz-acl");
    return has_grant_headers(r) || (canned && strcmp(canned, "private") != 0 &&
                                    strcmp(canned, "bucket-owner-full-control") != 0);
}

/* The bucket owner for bucket-owner-* canned ACLs: srv_authorize's, else looked up. */
static int bucket_owner(srv_req_t *r, srv_out_t *o, char out[65])
{
    const char *known = srv_authz_bucket_owner(r);
    if (known) {
        snprintf(out, 65, "%s", known);
        return 0;
    }
    store_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    wh_status_t st = store_bucket_auth_get(srv_st(r), srv_b(r), &a);
    if (st != WH_OK)
        return st == WH_ERR_NOT_FOUND ? srv_err(o, S3_ERR_NO_SUCH_BUCKET, NULL)
                                      : srv_err_status(r, o, st, "looking up the bucket");
    srv_owner_id(r, a.owner, out);
    store_bucket_auth_free(&a);
    return 0;
}

/* The ACL x-amz-acl / x-amz-grant-* of r describe into acl; *named false when neither is
 * there. */
static int acl_of_headers(srv_req_t *r, srv_out_t *o, const char *owner, bool for_object,
                          s3_acl_t *acl, bool *named)
{
    const char *canned = srv_hdr(r, "x-amz-acl");
    bool grants = has_grant_headers(r);
    *named = canned || grants;
    if (!*named)
        return 0;
    if (canned && grants)
        return srv_err(o, S3_ERR_INVALID_REQUEST,
                       "Specifying both Canned ACLs and Header Grants is not allowed");
    char msg[320];
    if (canned) {
        char bo[65];
        snprintf(bo, sizeof bo, "%s", owner);
        int ret;
        if (for_object && strncmp(canned, "bucket-owner-", 13) == 0 &&
            (ret = bucket_owner(r, o, bo)))
            return ret;
        s3_err_t e = s3_acl_canned(acl, canned, owner, bo, msg, sizeof msg);
        return e == S3_OK ? 0 : srv_err(o, e, msg);
    }
    s3_acl_private(acl, owner);
    acl->n = 0; /* explicit grants replace the default: the ACL is exactly what they name */
    for (size_t i = 0; i < sizeof g_grant_perms / sizeof g_grant_perms[0]; i++) {
        const char *v = srv_hdr(r, s3_acl_grant_header_name(g_grant_perms[i]));
        if (!v)
            continue;
        s3_err_t e = s3_acl_grant_header(acl, g_grant_perms[i], v, msg, sizeof msg);
        if (e != S3_OK)
            return srv_err(o, e, msg);
    }
    return 0;
}

static int acl_text(srv_out_t *o, const s3_acl_t *acl, char **text)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_acl_serialize(acl, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        return srv_err(o, S3_ERR_INTERNAL, "out of memory keeping the ACL");
    }
    *text = wh_sbuf_steal(&b);
    return 0;
}

int srv_acl_from_request(srv_req_t *r, srv_out_t *o, const char *owner, const char *bucket_owner_id,
                         char **text)
{
    (void)bucket_owner_id;
    *text = NULL;
    s3_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return srv_err(o, S3_ERR_INTERNAL, "out of memory");
    bool named;
    int ret = acl_of_headers(r, o, owner, false, acl, &named);
    if (!ret && named)
        ret = acl_text(o, acl, text);
    free(acl);
    return ret;
}

int srv_acl_to_meta(srv_req_t *r, srv_out_t *o, store_obj_meta_t *m)
{
    snprintf(m->owner, sizeof m->owner, "%s", srv_owner_stored(r));
    free(m->acl);
    m->acl = NULL;
    if (!srv_hdr(r, "x-amz-acl") && !has_grant_headers(r))
        return 0; /* the default: private to its owner */
    char owner[65];
    srv_owner_id(r, m->owner, owner);
    s3_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return srv_err(o, S3_ERR_INTERNAL, "out of memory");
    bool named;
    int ret = acl_of_headers(r, o, owner, true, acl, &named);
    if (!ret && named)
        ret = srv_bconfig_acl_guard(r, o, acl, true);
    if (!ret && named)
        ret = acl_text(o, acl, &m->acl);
    free(acl);
    return ret;
}

/* ---- ?acl ------------------------------------------------------------------------------- */

/* The owner's DisplayName, by srv_xml_owner_of's rule (listings show the same): "root" for
 * root (never its access key id, a credential), the caller's own user name, else (NULL) the
 * canonical id. */
static const char *display_name(srv_req_t *r, const char *owner_id)
{
    char root[65];
    srv_owner_id(r, "", root);
    if (strcmp(owner_id, root) == 0)
        return "root";
    if (r->who.kind == S3_PRINCIPAL_USER && strcmp(owner_id, r->who.canonical_id) == 0)
        return r->who.user;
    return NULL;
}

static int acl_reply(srv_req_t *r, srv_out_t *o, const s3_acl_t *acl)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_acl_format_xml(acl, display_name(r, acl->owner), &b);
    return srv_ok_xml(o, 200, &b);
}

static int load_bucket_acl(srv_req_t *r, srv_out_t *o, s3_acl_t *acl, store_bucket_auth_t *a)
{
    memset(a, 0, sizeof *a);
    wh_status_t st = store_bucket_auth_get(srv_st(r), srv_b(r), a);
    if (st == WH_ERR_NOT_FOUND)
        return srv_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "loading the bucket's ACL");
    char owner[65], msg[256];
    srv_owner_id(r, a->owner, owner);
    if (s3_acl_deserialize(a->acl, owner, acl, msg, sizeof msg) != S3_OK)
        return srv_errf(o, S3_ERR_INTERNAL, "bucket %s: %s", srv_b(r), msg);
    return 0;
}

int srv_acl_bucket_get(srv_req_t *r, srv_out_t *o)
{
    s3_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return srv_err(o, S3_ERR_INTERNAL, "out of memory");
    store_bucket_auth_t a;
    int ret = load_bucket_acl(r, o, acl, &a);
    if (!ret)
        ret = acl_reply(r, o, acl);
    store_bucket_auth_free(&a);
    free(acl);
    return ret;
}

/* The object with its ACL, after its check (obj_acl rows). */
static int load_object_acl(srv_req_t *r, srv_out_t *o, s3_acl_t *acl)
{
    int ret = srv_key_check(r, o);
    if (ret)
        return ret;
    store_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t st = store_object_open(
        srv_st(r), &(store_read_args_t){.bucket = srv_b(r), .key = srv_k(r)}, &m, NULL);
    if (st != WH_OK) {
        store_obj_meta_free(&m);
        if (st == WH_ERR_NOT_FOUND && (ret = srv_authz_object(r, o, NULL)))
            return ret; /* who may not learn whether it exists */
        return srv_err_status(r, o, st, "opening the object");
    }
    if (!(ret = srv_authz_object(r, o, &m))) {
        char owner[65], msg[256];
        srv_owner_id(r, m.owner, owner);
        if (s3_acl_deserialize(m.acl, owner, acl, msg, sizeof msg) != S3_OK)
            ret = srv_errf(o, S3_ERR_INTERNAL, "object %s: %s", srv_k(r), msg);
    }
    store_obj_meta_free(&m);
    return ret;
}

int srv_acl_object_get(srv_req_t *r, srv_out_t *o)
{
    s3_acl_t *acl = malloc(sizeof *acl);
    if (!acl)
        return srv_err(o, S3_ERR_INTERNAL, "out of memory");
    int ret = load_object_acl(r, o, acl);
    if (!ret)
        ret = acl_reply(r, o, acl);
    free(acl);
    return ret;
}

int srv_acl_put_begin(srv_req_t *r, srv_out_t *o)
{
    if (srv_k(r)) {
        int ret = srv_key_check(r, o);
        if (ret)
            return ret;
    }
    return 0; /* the AccessControlPolicy body, or none with x-amz-acl / x-amz-grant-* */
}

/* The new ACL from the body or the headers; the current owner stays the owner. */
static int acl_from_put(srv_req_t *r, srv_out_t *o, const char *owner, bool for_object,
                        s3_acl_t *acl)
{
    int ret = srv_body_md5_check(r, o);
    if (ret)
        return ret;
    bool named;
    if ((ret = acl_of_headers(r, o, owner, for_object, acl, &named)))
        return ret;
    if (named && r->buf.len)
        return srv_err(o, S3_ERR_INVALID_REQUEST,
                       "give the ACL either in the body or in "
                       "x-amz-acl/x-amz-grant-* headers, not both");
    if (named)
        return srv_bconfig_acl_guard(r, o, acl, true);
    if (!r->buf.len)
        return srv_err(o, S3_ERR_MISSING_SECURITY_HEADER,
                       "PutAcl needs an AccessControlPolicy body, x-amz-acl or x-amz-grant-*");
    char msg[320];
    s3_err_t e = s3_acl_parse_xml(r->buf.data, r->buf.len, acl, msg, sizeof msg);
    if (e != S3_OK)
        return srv_err(o, e, msg);
    if (strcmp(acl->owner, owner) != 0)
        return srv_errf(o, S3_ERR_ACCESS_DENIED,
                        "Owner/ID %s is not the owner (%s): an ACL "
                        "cannot change the owner",
                        acl->owner, owner);
    return srv_bconfig_acl_guard(r, o, acl, true);
}

int srv_acl_bucket_put_finish(srv_req_t *r, srv_out_t *o)
{
    s3_acl_t *cur = malloc(sizeof *cur), *acl = malloc(sizeof *acl);
    store_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    int ret;
    char *text = NULL;
    if (!cur || !acl) {
        ret = srv_err(o, S3_ERR_INTERNAL, "out of memory");
        goto cleanup;
    }
    if ((ret = load_bucket_acl(r, o, cur, &a)) ||
        (ret = acl_from_put(r, o, cur->owner, false, acl)) || (ret = acl_text(o, acl, &text)))
        goto cleanup;
    wh_status_t st = store_bucket_set_acl(srv_st(r), srv_b(r), text);
    ret = st == WH_OK ? srv_ok(o, 200) : srv_err_status(r, o, st, "storing the bucket's ACL");
cleanup:
    free(text);
    store_bucket_auth_free(&a);
    free(cur);
    free(acl);
    return ret;
}

int srv_acl_object_put_finish(srv_req_t *r, srv_out_t *o)
{
    s3_acl_t *cur = malloc(sizeof *cur), *acl = malloc(sizeof *acl);
    int ret;
    char *text = NULL;
    if (!cur || !acl) {
        ret = srv_err(o, S3_ERR_INTERNAL, "out of memory");
        goto cleanup;
    }
    if ((ret = load_object_acl(r, o, cur)) || (ret = acl_from_put(r, o, cur->owner, true, acl)) ||
        (ret = acl_text(o, acl, &text)))
        goto cleanup;
    wh_status_t st = store_object_set_acl(srv_st(r), srv_b(r), srv_k(r), text);
    ret = st == WH_OK ? srv_ok(o, 200) : srv_err_status(r, o, st, "storing the object's ACL");
cleanup:
    free(text);
    free(cur);
    free(acl);
    return ret;
}

/* ---- ?policy ---------------------------------------------------------------------------- */

static int load_policy(srv_req_t *r, srv_out_t *o, store_bucket_auth_t *a)
{
    memset(a, 0, sizeof *a);
    wh_status_t st = store_bucket_auth_get(srv_st(r), srv_b(r), a);
    if (st == WH_ERR_NOT_FOUND)
        return srv_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return srv_err_status(r, o, st, "loading the bucket policy");
    if (!a->policy)
        return srv_err(o, S3_ERR_NO_SUCH_BUCKET_POLICY, NULL);
    return 0;
}

int srv_policy_get(srv_req_t *r, srv_out_t *o)
{
    store_bucket_auth_t a;
    int ret = load_policy(r, o, &a);
    if (!ret) {
        size_t n = strlen(a.policy);
        struct MHD_Response *resp = srv_resp_buffer(a.policy, n);
        a.policy = NULL; /* the response owns it */
        srv_out_header(o, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        ret = srv_ok_resp(o, 200, resp, 0);
    }
    store_bucket_auth_free(&a);
    return ret;
}

int srv_policy_put_begin(srv_req_t *r, srv_out_t *o)
{
    const char *cl = srv_hdr(r, "content-length");
    uint64_t n = 0;
    if (cl && wh_parse_u64(cl, strlen(cl), &n) == 0 && n > S3_POLICY_MAX_BYTES)
        return srv_errf(o, S3_ERR_MALFORMED_POLICY,
                        "Policy exceeds the maximum allowed "
                        "document size (%llu bytes, the limit is %u)",
                        (unsigned long long)n, S3_POLICY_MAX_BYTES);
    return 0;
}

int srv_policy_put_finish(srv_req_t *r, srv_out_t *o)
{
    int ret = srv_body_md5_check(r, o);
    if (ret)
        return ret;
    char msg[320];
    s3_policy_t *pol = NULL;
    s3_err_t e = s3_policy_parse(r->buf.data, r->buf.len, &pol, msg, sizeof msg);
    if (e == S3_OK)
        e = s3_policy_check_bucket(pol, srv_b(r), msg, sizeof msg);
    if (e != S3_OK) {
        s3_policy_free(pol);
        return srv_err(o, e, msg);
    }
    ret = srv_bconfig_policy_guard(r, o, pol);
    s3_policy_free(pol);
    if (ret)
        return ret;
    char *text = malloc(r->buf.len + 1);
    if (!text)
        return srv_err(o, S3_ERR_INTERNAL, "out of memory");
    memcpy(text, r->buf.data, r->buf.len);
    text[r->buf.len] = '\0';
    wh_status_t st = store_bucket_set_policy(srv_st(r), srv_b(r), text);
    free(text);
    return st == WH_OK ? srv_ok(o, 204) : srv_err_status(r, o, st, "storing the bucket policy");
}

int srv_policy_delete(srv_req_t *r, srv_out_t *o)
{
    wh_status_t st = store_bucket_set_policy(srv_st(r), srv_b(r), NULL);
    if (st == WH_ERR_NOT_FOUND)
        return srv_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    return st == WH_OK ? srv_ok(o, 204) : srv_err_status(r, o, st, "deleting the bucket policy");
}

int srv_policy_status(srv_req_t *r, srv_out_t *o)
{
    store_bucket_auth_t a;
    int ret = load_policy(r, o, &a);
    if (ret && o->code && strcmp(o->code, "NoSuchBucketPolicy") == 0) {
        /* No policy: it makes nothing public. */
        store_bucket_auth_free(&a);
        wh_sbuf_t b;
        wh_sbuf_init(&b);
        wh_sbuf_puts(&b, XML_DECL "<PolicyStatus xmlns=\"" S3_XMLNS "\"><IsPublic>false"
                                  "</IsPublic></PolicyStatus>");
        return srv_ok_xml(o, 200, &b);
    }
    if (!ret) {
        char msg[256];
        s3_policy_t *pol = NULL;
        if (s3_policy_parse(a.policy, strlen(a.policy), &pol, msg, sizeof msg) != S3_OK) {
            ret = srv_errf(o, S3_ERR_INTERNAL, "the stored policy cannot be read: %s", msg);
        } else {
            wh_sbuf_t b;
            wh_sbuf_init(&b);
            wh_sbuf_printf(&b,
                           XML_DECL "<PolicyStatus xmlns=\"" S3_XMLNS "\"><IsPublic>%s"
                                    "</IsPublic></PolicyStatus>",
                           s3_policy_is_public(pol) ? "true" : "false");
            ret = srv_ok_xml(o, 200, &b);
        }
        s3_policy_free(pol);
    }
    store_bucket_auth_free(&a);
    return ret;
}
