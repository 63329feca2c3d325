/* SPDX-License-Identifier: Apache-2.0 */
/* Buckets: ListBuckets (paged), CreateBucket, DeleteBucket, HeadBucket, GetBucketLocation and
 * GetBucketVersioning (objects are unversioned: the configuration is always empty). */
#include "s3ctl/s3ctl.h"
#include "base/codec.h"
#include "base/log.h"
#include "s3/bucket_config.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int bucket_name_cmp(const void *a, const void *b)
{
    return strcmp(((const data_bucket_info_t *)a)->name, ((const data_bucket_info_t *)b)->name);
}

/* ListBuckets, with the paging of S3's ListBuckets: max-buckets (1..10000; without it every
 * bucket), continuation-token (the base64 of the last name of the page before, answered as
 * ContinuationToken while more remain), prefix, and bucket-region (this endpoint's one region,
 * or none). Names are compared as bytes, so pages follow one order on every backend. */
int s3h_admin_cluster(front_req_t *r, s3h_out_t *o)
{
    const front_config_t *cfg = &r->srv->cfg;
    if (!cfg->admin_cluster)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "x-wharf-cluster: this server is not a cluster gateway (wharfd serve has "
                       "no storage servers)");
    const char *fmt = front_route_q(&r->route, "x-wharf-cluster");
    bool json = !fmt || !*fmt || strcmp(fmt, "json") == 0;
    if (!json && strcmp(fmt, "text") != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-wharf-cluster wants json (the default) or text, got '%.64s'", fmt);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_status_t st = cfg->admin_cluster(cfg->admin_cluster_arg, json, &b);
    if (st == WH_OK && b.oom)
        st = WH_ERR_NOMEM;
    if (st != WH_OK) {
        wh_sbuf_free(&b);
        return s3h_err_status(r, o, st, "reading the cluster's state");
    }
    size_t len = b.len;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, wh_sbuf_steal(&b), MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    MHD_add_response_header(resp, "Content-Type", json ? "application/json" : "text/plain");
    return s3h_ok_resp(o, 200, resp, 0);
}

int s3h_bucket_list_all(front_req_t *r, s3h_out_t *o)
{
    const char *mb = front_route_q(&r->route, "max-buckets");
    uint64_t max = 0;
    if (mb && (wh_parse_u64(mb, strlen(mb), &max) != 0 || max < 1 || max > 10000))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "max-buckets must be an integer between 1 and 10000");
    const char *prefix = front_route_q(&r->route, "prefix");
    const char *region = front_route_q(&r->route, "bucket-region");
    const char *ctoken = front_route_q(&r->route, "continuation-token");
    char after[80] = "";
    if (ctoken) {
        size_t tl = strlen(ctoken);
        long n = tl < 4 * ((sizeof after + 2) / 3)
                     ? wh_base64_decode(ctoken, tl, after, sizeof after - 1)
                     : -1;
        if (n <= 0 || memchr(after, '\0', (size_t)n))
            return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
        after[n] = '\0';
    }
    data_bucket_info_t *bs = NULL;
    size_t n = 0;
    wh_status_t st = store_bucket_list(s3h_st(r), &bs, &n);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "listing buckets");
    if (n > 1)
        qsort(bs, n, sizeof *bs, bucket_name_cmp);
    bool in_region = !region || strcmp(region, r->srv->cfg.region) == 0;
    size_t plen = prefix ? strlen(prefix) : 0;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ListAllMyBucketsResult xmlns=\"" S3H_XMLNS "\">");
    s3h_xml_owner(r, &b, "Owner");
    wh_sbuf_puts(&b, "<Buckets>");
    size_t shown = 0;
    const char *last = NULL;
    bool more = false;
    for (size_t i = 0; in_region && i < n; i++) {
        if ((after[0] && strcmp(bs[i].name, after) <= 0) ||
            (plen && strncmp(bs[i].name, prefix, plen) != 0))
            continue;
        /* Root sees every bucket; a user, the buckets it owns. */
        if (r->who.kind != AUTH_PRINCIPAL_ROOT) {
            data_bucket_auth_t a;
            memset(&a, 0, sizeof a);
            wh_status_t as = store_bucket_auth_get(s3h_st(r), bs[i].name, &a);
            bool mine = as == WH_OK && strcmp(a.owner, s3h_owner_stored(r)) == 0;
            data_bucket_auth_free(&a);
            if (as != WH_OK && as != WH_ERR_NOT_FOUND) {
                wh_sbuf_free(&b);
                free(bs);
                return s3h_err_status(r, o, as, "listing buckets");
            }
            if (!mine)
                continue;
        }
        if (max && shown == max) {
            more = true;
            break;
        }
        wh_sbuf_puts(&b, "<Bucket>");
        s3_xml_elem(&b, "Name", bs[i].name);
        s3h_xml_time(&b, "CreationDate", bs[i].created);
        s3_xml_elem(&b, "BucketRegion", r->srv->cfg.region);
        wh_sbuf_puts(&b, "</Bucket>");
        last = bs[i].name;
        shown++;
    }
    wh_sbuf_puts(&b, "</Buckets>");
    if (more && last) {
        char tok[4 * ((sizeof bs->name + 2) / 3) + 1];
        wh_base64_encode(last, strlen(last), tok);
        s3_xml_elem(&b, "ContinuationToken", tok);
    }
    if (prefix)
        s3_xml_elem(&b, "Prefix", prefix);
    wh_sbuf_puts(&b, "</ListAllMyBucketsResult>");
    free(bs);
    return s3h_ok_xml(o, 200, &b);
}

/* CreateBucket on a name that is taken: the caller's own (or root's), or someone else's.
 * acl: the ACL the request names (NULL: private). */
static int bucket_exists_err(front_req_t *r, s3h_out_t *o, const char *acl)
{
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    bool mine = r->who.kind == AUTH_PRINCIPAL_ROOT;
    if (!mine && store_bucket_auth_get(s3h_st(r), s3h_b(r), &a) == WH_OK)
        mine = strcmp(a.owner, s3h_owner_stored(r)) == 0;
    data_bucket_auth_free(&a);
    /* us-east-1 answers 200 to its owner re-creating a bucket and resets its ACL to the
     * request's (S3's legacy behaviour there); other regions BucketAlreadyOwnedByYou. */
    if (mine && strcmp(r->srv->cfg.region, "us-east-1") == 0) {
        wh_status_t st = store_bucket_set_acl(s3h_st(r), s3h_b(r), acl);
        if (st != WH_OK)
            return s3h_err_status(r, o, st, "resetting the bucket's ACL");
        char l[80];
        snprintf(l, sizeof l, "/%s", s3h_b(r));
        s3h_out_header(o, MHD_HTTP_HEADER_LOCATION, l);
        return s3h_ok(o, 200);
    }
    if (mine)
        return s3h_err(o, S3_ERR_BUCKET_EXISTS, NULL);
    return s3h_err_raw(o, 409, "BucketAlreadyExists",
                       "The requested bucket name is not available. The bucket namespace is "
                       "shared by all users of the system. Please select a different name and "
                       "try again.");
}

/* x-amz-object-ownership of CreateBucket: 0 when absent, else S3_OWN_*; -1 for a value S3 does
 * not define. */
static int ownership_header(front_req_t *r)
{
    static const char *const names[] = {NULL, "ObjectWriter", "BucketOwnerPreferred",
                                        "BucketOwnerEnforced"};
    const char *h = front_hdr(r, "x-amz-object-ownership");
    if (!h)
        return 0;
    for (int i = 1; i < 4; i++)
        if (strcmp(h, names[i]) == 0)
            return i;
    return -1;
}

int s3h_bucket_create_begin(front_req_t *r, s3h_out_t *o)
{
    if (!store_bucket_name_valid(s3h_b(r)))
        return s3h_err(o, S3_ERR_INVALID_BUCKET_NAME,
                       "bucket names are 3-63 characters of a-z, 0-9, '.' and '-', starting "
                       "and ending with a letter or digit");
    int own = ownership_header(r);
    if (own < 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-amz-object-ownership must be BucketOwnerEnforced, "
                        "BucketOwnerPreferred or ObjectWriter, got \"%.40s\"",
                        front_hdr(r, "x-amz-object-ownership"));
    if (own == S3_OWN_BUCKET_OWNER_ENFORCED && s3h_acl_request_grants(r))
        return s3h_err_raw(o, 400, "InvalidBucketAclWithObjectOwnership",
                           "Bucket cannot have ACLs set with ObjectOwnership's "
                           "BucketOwnerEnforced setting");
    return 0; /* read the optional CreateBucketConfiguration */
}

/* x-amz-object-ownership: stored as the new bucket's OwnershipControls; if it cannot be, the
 * bucket is removed again, so a success always means the ownership asked for. */
static int bucket_ownership_on_create(front_req_t *r, s3h_out_t *o)
{
    int own = ownership_header(r);
    if (own <= 0)
        return 0;
    char v[16]; /* an int in decimal */
    snprintf(v, sizeof v, "%d", own);
    wh_status_t st = store_bucket_attr_set(s3h_st(r), s3h_b(r), DATA_BATTR_OWNERSHIP, v);
    if (st == WH_OK)
        return 0;
    wh_status_t ds = store_bucket_delete(s3h_st(r), s3h_b(r));
    wh_warn("s3", "id=%s bucket %s made without its ownership controls; removed again (%s)", r->id,
            s3h_b(r), wh_status_str(ds));
    return s3h_err_status(r, o, st, "storing the new bucket's ownership controls");
}

/* An IAM user owns at most --max-buckets buckets (root is not bound): 0, or 400 TooManyBuckets.
 * Counted before the create, not in its transaction: concurrent creates may pass the quota by
 * as many as run at once. */
static int bucket_quota(front_req_t *r, s3h_out_t *o)
{
    unsigned cap = r->srv->cfg.max_buckets;
    if (r->who.kind != AUTH_PRINCIPAL_USER || !cap)
        return 0;
    data_bucket_auth_t self;
    memset(&self, 0, sizeof self);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), s3h_b(r), &self);
    data_bucket_auth_free(&self);
    if (st != WH_ERR_NOT_FOUND)
        return 0; /* the name is taken: CreateBucket answers that */
    data_bucket_info_t *bs = NULL;
    size_t n = 0, mine = 0;
    st = store_bucket_list(s3h_st(r), &bs, &n);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "counting the user's buckets");
    for (size_t i = 0; i < n && st == WH_OK; i++) {
        data_bucket_auth_t a;
        memset(&a, 0, sizeof a);
        st = store_bucket_auth_get(s3h_st(r), bs[i].name, &a);
        if (st == WH_OK && strcmp(a.owner, s3h_owner_stored(r)) == 0)
            mine++;
        data_bucket_auth_free(&a);
        if (st == WH_ERR_NOT_FOUND) /* deleted meanwhile */
            st = WH_OK;
    }
    free(bs);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "counting the user's buckets");
    if (mine < cap)
        return 0;
    char msg[sizeof o->msg];
    snprintf(msg, sizeof msg,
             "You have attempted to create more buckets than allowed: user %.64s owns %zu, the "
             "most this server allows a user (--max-buckets %u)",
             r->who.user, mine, cap);
    return s3h_err_raw(o, 400, "TooManyBuckets", msg);
}

/* x-amz-bucket-object-lock-enabled: true: the new bucket gets versioning Enabled and object
 * lock (no default retention). If either cannot be stored the bucket is removed again, so a
 * success always means a bucket with object lock. */
static int bucket_lock_on_create(front_req_t *r, s3h_out_t *o)
{
    const char *h = front_hdr(r, "x-amz-bucket-object-lock-enabled");
    if (!h || strcasecmp(h, "true") != 0)
        return 0;
    s3_lock_config_t cfg = {0};
    wh_status_t st = store_bucket_versioning_set(s3h_st(r), s3h_b(r), DATA_VERSIONING_ENABLED);
    int ret = st == WH_OK ? s3h_lock_enable(r, o, &cfg)
                          : s3h_err_status(r, o, st, "enabling the new bucket's versioning");
    if (ret) {
        wh_status_t ds = store_bucket_delete(s3h_st(r), s3h_b(r));
        wh_warn("s3", "id=%s bucket %s made without its object lock; removed again (%s)", r->id,
                s3h_b(r), wh_status_str(ds));
    }
    return ret;
}

int s3h_bucket_create_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    char loc[64] = "";
    if (r->buf.len) {
        s3_err_t e = s3_xml_parse_create_bucket(r->buf.data, r->buf.len, loc, sizeof loc);
        if (e != S3_OK)
            return s3h_err(o, e, NULL);
    }
    if (loc[0] && strcmp(loc, r->srv->cfg.region) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "The %s location constraint is incompatible with the region "
                 "of this endpoint (%s).",
                 loc, r->srv->cfg.region);
        return s3h_err_raw(o, 400, "IllegalLocationConstraintException", msg);
    }
    if ((ret = bucket_quota(r, o)))
        return ret;
    /* Owned by its creator, with the ACL x-amz-acl or x-amz-grant-* name (else private). */
    char owner[65], *acl = NULL;
    s3h_owner_id(r, s3h_owner_stored(r), owner);
    int ret2 = s3h_acl_from_request(r, o, owner, owner, &acl);
    if (ret2)
        return ret2;
    wh_status_t st = store_bucket_create(
        s3h_st(r),
        &(store_bucket_args_t){.bucket = s3h_b(r), .owner = s3h_owner_stored(r), .acl = acl});
    if (st == WH_ERR_EXISTS) {
        ret = bucket_exists_err(r, o, acl);
        free(acl);
        return ret;
    }
    free(acl);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "creating the bucket");
    if ((ret = bucket_ownership_on_create(r, o)) || (ret = bucket_lock_on_create(r, o)))
        return ret;
    char l[80];
    snprintf(l, sizeof l, "/%s", s3h_b(r));
    s3h_out_header(o, MHD_HTTP_HEADER_LOCATION, l);
    return s3h_ok(o, 200);
}

int s3h_bucket_delete(front_req_t *r, s3h_out_t *o)
{
    wh_status_t st = store_bucket_delete(s3h_st(r), s3h_b(r));
    if (st == WH_OK)
        return s3h_ok(o, 204);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st == WH_ERR_NOT_EMPTY)
        return s3h_err(o, S3_ERR_BUCKET_NOT_EMPTY, NULL);
    return s3h_err_status(r, o, st, "deleting the bucket");
}

int s3h_bucket_head(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_need_bucket(r, o);
    if (ret)
        return ret;
    s3h_out_header(o, "x-amz-bucket-region", r->srv->cfg.region);
    return s3h_ok(o, 200);
}

int s3h_bucket_location(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_need_bucket(r, o);
    if (ret)
        return ret;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    /* us-east-1 is the empty constraint, as S3 answers. */
    const char *reg = strcmp(r->srv->cfg.region, "us-east-1") == 0 ? "" : r->srv->cfg.region;
    wh_sbuf_puts(&b, S3H_XML_DECL "<LocationConstraint xmlns=\"" S3H_XMLNS "\">");
    s3_xml_escape(&b, reg);
    wh_sbuf_puts(&b, "</LocationConstraint>");
    return s3h_ok_xml(o, 200, &b);
}
