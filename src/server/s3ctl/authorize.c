/* SPDX-License-Identifier: Apache-2.0 */
/* The authorization step of the S3 front: s3h_authorize runs for every front_ops row before its
 * begin step, HTTP and RDMA alike, so no byte moves (no RDMA read from a client's memory, no
 * write into it) before the request is allowed.
 *
 * Root bypasses it at no cost. For everyone else it loads what the decision weighs: the
 * bucket's owner, ACL and policy (one metadata lookup, which also answers NoSuchBucket, so the
 * handler's own existence check is skipped), the principal's user policies, and, for object
 * actions, the object's ACL: a handler that opens the object anyway (GetObject, HeadObject,
 * the ?acl rows; obj_acl in its row) calls s3h_authz_object before it moves anything, so a
 * GET costs no second lookup. Compiled policies are shared between requests by their exact
 * text, so a policy is parsed once however often it is evaluated, and a changed policy is a
 * different text (nothing to invalidate). */
#include "s3ctl/s3ctl.h"
#include "s3/bucket_config.h"
#include "base/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "authz"

/* ---- compiled policies by text ---------------------------------------------------------- */

typedef struct cpol {
    struct cpol *next;
    uint64_t hash;
    bool user;
    unsigned refs;
    auth_policy_t *pol;
    char text[];
} cpol_t;

#define CPOL_KEEP 256 /* unreferenced entries kept */

static pthread_mutex_t g_cpol_mu = PTHREAD_MUTEX_INITIALIZER;
static cpol_t *g_cpol;
static size_t g_cpol_n;

/* The length and both ends of the text: enough to tell policies apart, and cheap on the 20 KiB
 * a bucket policy may have (the full comparison confirms a hit). */
static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    size_t head = n < 256 ? n : 256;
    for (size_t i = 0; i < head; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    for (size_t i = n > 512 ? n - 256 : head; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static cpol_t *cpol_find_locked(uint64_t h, bool user, const char *text)
{
    for (cpol_t *c = g_cpol; c; c = c->next)
        if (c->hash == h && c->user == user && strcmp(c->text, text) == 0)
            return c;
    return NULL;
}

/* A reference to text's compiled policy; S3_OK, or the parse error with msg. */
static s3_err_t cpol_get(const char *text, bool user, cpol_t **out, char *msg, size_t msglen)
{
    size_t n = strlen(text);
    uint64_t h = text_hash(text, n);
    pthread_mutex_lock(&g_cpol_mu);
    cpol_t *c = cpol_find_locked(h, user, text);
    if (c)
        c->refs++;
    pthread_mutex_unlock(&g_cpol_mu);
    if (c) {
        *out = c;
        return S3_OK;
    }
    auth_policy_t *pol = NULL;
    s3_err_t e = user ? auth_policy_parse_user(text, n, &pol, msg, msglen)
                      : auth_policy_parse(text, n, &pol, msg, msglen);
    if (e != S3_OK)
        return e;
    cpol_t *nc = malloc(sizeof *nc + n + 1);
    if (!nc) {
        auth_policy_free(pol);
        snprintf(msg, msglen, "out of memory caching a policy");
        return S3_ERR_INTERNAL;
    }
    nc->hash = h;
    nc->user = user;
    nc->refs = 1;
    nc->pol = pol;
    memcpy(nc->text, text, n + 1);
    pthread_mutex_lock(&g_cpol_mu);
    if ((c = cpol_find_locked(h, user, text))) { /* another thread compiled it meanwhile */
        c->refs++;
        pthread_mutex_unlock(&g_cpol_mu);
        auth_policy_free(nc->pol);
        free(nc);
        *out = c;
        return S3_OK;
    }
    nc->next = g_cpol;
    g_cpol = nc;
    g_cpol_n++;
    /* Past the bound, drop unreferenced entries from the tail (the oldest). */
    if (g_cpol_n > CPOL_KEEP) {
        cpol_t **pp = &g_cpol;
        size_t i = 0;
        while (*pp) {
            if (i++ >= CPOL_KEEP / 2 && (*pp)->refs == 0) {
                cpol_t *d = *pp;
                *pp = d->next;
                g_cpol_n--;
                auth_policy_free(d->pol);
                free(d);
                continue;
            }
            pp = &(*pp)->next;
        }
    }
    pthread_mutex_unlock(&g_cpol_mu);
    *out = nc;
    return S3_OK;
}

static void cpol_put(cpol_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&g_cpol_mu);
    c->refs--;
    pthread_mutex_unlock(&g_cpol_mu);
}

/* ---- what one request's decisions weigh ------------------------------------------------- */

struct front_authz {
    const char *action;
    bool bucket_loaded; /* the bucket exists (s3h_need_bucket skips its lookup) */
    bool pending;       /* the decision waits for the object's ACL (s3h_authz_object) */
    bool per_key;       /* the handler decides key by key (DeleteObjects) */
    char bucket_owner[65];
    cpol_t *bpol;
    cpol_t **upol; /* every inline policy of the user (malloc'd, nupol entries) */
    size_t nupol;
    bool upol_loaded;
    const auth_policy_t **upp;
    char arn[AUTH_ARN_MAX];
    auth_acl_t bacl;
    unsigned bucket_pab, bucket_own; /* PublicAccessBlock and ObjectOwnership (bucket_config.h) */
};

void s3h_authz_release(front_req_t *r)
{
    s3h_authz_t *az = r->az;
    if (!az)
        return;
    cpol_put(az->bpol);
    for (size_t i = 0; i < az->nupol; i++)
        cpol_put(az->upol[i]);
    free(az->upol);
    free(az->upp);
    free(az);
    r->az = NULL;
}

const char *s3h_account_id(const front_req_t *r)
{
    return ident_account(r->srv->ident);
}

void s3h_owner_id(const front_req_t *r, const char *stored, char out[65])
{
    if (stored && *stored) {
        snprintf(out, 65, "%s", stored);
        return;
    }
    const char *ak = r->srv->cfg.access_key; /* "" is root's (rows made before owners) */
    wh_sha256_hex(ak, strlen(ak), out);
}

const char *s3h_owner_stored(const front_req_t *r)
{
    return r->who.kind == AUTH_PRINCIPAL_USER ? r->who.canonical_id : "";
}

static s3h_authz_t *az_get(front_req_t *r)
{
    if (!r->az)
        r->az = calloc(1, sizeof *r->az);
    return r->az;
}

static int deny(front_req_t *r, s3h_out_t *o, const char *action, const char *arn, auth_authz_t d)
{
    const char *who = r->who.kind == AUTH_PRINCIPAL_ANON ? "anonymous" : r->who.arn;
    wh_debug(MOD, "deny id=%s who=%s action=%s resource=%s why=%d", r->id, who, action, arn,
             (int)d);
    return s3h_errf(o, S3_ERR_ACCESS_DENIED,
                    "User: %s is not authorized to perform: %s on resource: %s because %s", who,
                    action, arn,
                    d == AUTH_AUTHZ_DENY_EXPLICIT ? "a policy explicitly denies it"
                                                  : "no policy or ACL allows it");
}

/* The principal's user policies, once per request. */
static int load_user_policies(front_req_t *r, s3h_out_t *o, s3h_authz_t *az)
{
    if (az->upol_loaded || r->who.kind != AUTH_PRINCIPAL_USER)
        return 0;
    az->upol_loaded = true;
    meta_policy_t *ps = NULL;
    size_t n = 0;
    wh_status_t st = s3h_user_policies(r, &ps, &n);
    if (st == WH_ERR_NOT_FOUND)
        return 0;
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the user's policies");
    int ret = 0;
    /* Every one of them is weighed: a Deny in any must bind. */
    /* NOLINTBEGIN(bugprone-sizeof-expression): arrays of n pointers, sized by their element */
    if (n &&
        (!(az->upol = calloc(n, sizeof *az->upol)) || !(az->upp = calloc(n, sizeof *az->upp)))) {
        /* NOLINTEND(bugprone-sizeof-expression) */
        meta_policies_free(ps, n);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory loading the user's policies");
    }
    for (size_t i = 0; i < n; i++) {
        char msg[256];
        cpol_t *c;
        if (cpol_get(ps[i].doc, true, &c, msg, sizeof msg) != S3_OK) {
            /* Stored policies were checked when put; one that no longer parses denies
             * nothing it should not: refuse the request rather than ignore a Deny. */
            ret =
                s3h_errf(o, S3_ERR_INTERNAL, "user policy %s cannot be read: %s", ps[i].name, msg);
            break;
        }
        az->upp[az->nupol] = c->pol;
        az->upol[az->nupol++] = c;
    }
    meta_policies_free(ps, n);
    return ret;
}

/* The bucket's owner, ACL and policy into b (owner "" stored means root). */
typedef struct bucket_auth {
    char owner[65];
    auth_acl_t *acl;
    cpol_t *pol;
    unsigned pab, own;
} bucket_auth_t;

static int load_bucket(front_req_t *r, s3h_out_t *o, const char *bucket, bucket_auth_t *b)
{
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    wh_status_t st = store_bucket_auth_get(s3h_st(r), bucket, &a);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket's access settings");
    int ret = 0;
    char msg[256];
    s3h_owner_id(r, a.owner, b->owner);
    if (auth_acl_deserialize(a.acl, b->owner, b->acl, msg, sizeof msg) != S3_OK) {
        ret = s3h_errf(o, S3_ERR_INTERNAL, "bucket %s: %s", bucket, msg);
        goto cleanup;
    }
    if (a.policy && cpol_get(a.policy, false, &b->pol, msg, sizeof msg) != S3_OK) {
        ret = s3h_errf(o, S3_ERR_INTERNAL, "bucket %s: the stored policy cannot be read: %s",
                       bucket, msg);
        goto cleanup;
    }
    b->pab = a.pab;
    b->own = a.ownership;
    /* BucketOwnerEnforced: ACLs are off, the bucket owner owns everything. IgnorePublicAcls:
     * public grants count for nothing. RestrictPublicBuckets: a public policy grants nothing
     * to callers outside the bucket owner's account (here: the anonymous caller). */
    if (b->own == S3_OWN_BUCKET_OWNER_ENFORCED)
        auth_acl_private(b->acl, b->owner);
    else if (b->pab & S3_PAB_IGNORE_PUBLIC_ACLS)
        auth_acl_drop_public(b->acl);
    if (b->pol && (b->pab & S3_PAB_RESTRICT_PUBLIC_BUCKETS) && r->who.kind == AUTH_PRINCIPAL_ANON &&
        auth_policy_is_public(b->pol->pol)) {
        cpol_put(b->pol);
        b->pol = NULL;
    }
cleanup:
    data_bucket_auth_free(&a);
    return ret;
}

void s3h_peer_ip(const front_req_t *r, auth_ip_t *out)
{
    memset(out, 0, sizeof *out);
    if (r->peer.is_unix)
        return; /* no address: aws:SourceIp is absent */
    char host[64];
    snprintf(host, sizeof host, "%s", r->peer.addr); /* "ip:port" (fill_peer) */
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    auth_ip_parse(host, out);
}

static void fill_ctx(front_req_t *r, auth_authz_ctx_t *c, const char *action, const char *arn)
{
    memset(c, 0, sizeof *c);
    c->who = &r->who;
    c->account = s3h_account_id(r);
    c->action = action;
    c->resource = arn;
    s3h_peer_ip(r, &c->source_ip);
    /* TLS on the TCP port; the Unix socket is plain (its peer is proven by the kernel). */
    c->secure_transport = s3h_req_secure(r);
    c->prefix = front_route_q(&r->route, "prefix");
    c->delimiter = front_route_q(&r->route, "delimiter");
    c->x_amz_acl = front_hdr(r, "x-amz-acl");
    if (r->who.kind != AUTH_PRINCIPAL_ANON)
        c->auth_type = r->auth.presigned ? "REST-QUERY-STRING" : "REST-HEADER";
    const char *mk = front_route_q(&r->route, "max-keys");
    if (mk && wh_parse_u64(mk, strlen(mk), &c->max_keys) == 0)
        c->has_max_keys = true;
}

static auth_authz_t decide(front_req_t *r, s3h_authz_t *az, const char *action, const char *arn,
                           const char *bucket_owner, const auth_acl_t *bacl, const cpol_t *bpol,
                           const auth_acl_t *oacl, bool pending)
{
    auth_authz_in_t in;
    memset(&in, 0, sizeof in);
    fill_ctx(r, &in.ctx, action, arn);
    in.user_policies = az->upp;
    in.n_user_policies = az->nupol;
    in.bucket_policy = bpol ? bpol->pol : NULL;
    in.bucket_owner = bucket_owner;
    in.bucket_acl = bacl;
    in.object_acl = oacl;
    in.object_pending = pending;
    return auth_authz_decide(&in);
}

/* An object's ACL as stored (NULL text: private to its owner), as its bucket's settings let
 * it count: under BucketOwnerEnforced the bucket owner's alone, under IgnorePublicAcls without
 * its public grants. */
static int object_acl(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, auth_acl_t *acl,
                      const char *bucket_owner, unsigned pab, unsigned own)
{
    char owner[65], msg[256];
    s3h_owner_id(r, m->owner, owner);
    if (own == S3_OWN_BUCKET_OWNER_ENFORCED && bucket_owner) {
        auth_acl_private(acl, bucket_owner);
        return 0;
    }
    if (auth_acl_deserialize(m->acl, owner, acl, msg, sizeof msg) != S3_OK)
        return s3h_errf(o, S3_ERR_INTERNAL, "object %s: %s", s3h_k(r) ? s3h_k(r) : "", msg);
    if (pab & S3_PAB_IGNORE_PUBLIC_ACLS)
        auth_acl_drop_public(acl);
    return 0;
}

int s3h_authorize(front_req_t *r, const front_op_t *op, s3h_out_t *o)
{
    if (r->who.kind == AUTH_PRINCIPAL_ROOT || op->api == FRONT_API_IAM)
        return 0; /* IAM: iam.c verifies and authorizes once the form body is read */
    if (op->api == FRONT_API_CORS_PREFLIGHT)
        return 0; /* the bucket's CORS rules decide (bconfig.c), as in S3 */
    if (op->api == FRONT_API_POST_OBJECT)
        return 0; /* s3:PutObject on the form's key, once the form names it (post_object.c) */
    const char *action = op->action;
    if (!action)
        return s3h_errf(o, S3_ERR_ACCESS_DENIED, "%s is served to the root user only",
                        front_api_name(op->api));
    /* A request for one version (?versionId) is the Version form of its action, as in S3. */
    static const char *const versioned[][2] = {
        {"s3:GetObject", "s3:GetObjectVersion"},
        {"s3:DeleteObject", "s3:DeleteObjectVersion"},
        {"s3:GetObjectAcl", "s3:GetObjectVersionAcl"},
        {"s3:PutObjectAcl", "s3:PutObjectVersionAcl"},
        {"s3:GetObjectTagging", "s3:GetObjectVersionTagging"},
        {"s3:PutObjectTagging", "s3:PutObjectVersionTagging"},
        {"s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging"},
        {"s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"},
    };
    if (op->level == FRONT_AT_OBJECT && front_route_q(&r->route, "versionId"))
        for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++)
            if (strcmp(action, versioned[i][0]) == 0)
                action = versioned[i][1];
    s3h_authz_t *az = az_get(r);
    if (!az)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
    az->action = action;
    int ret = load_user_policies(r, o, az);
    if (ret)
        return ret;
    if (op->level == FRONT_AT_SERVICE || auth_action_is_service(action)) {
        auth_resource_arn(az->arn, sizeof az->arn, s3h_b(r), NULL);
        auth_authz_t d = decide(r, az, action, az->arn, NULL, NULL, NULL, NULL, false);
        return d == AUTH_AUTHZ_ALLOW ? 0 : deny(r, o, action, az->arn, d);
    }
    bucket_auth_t b = {.acl = &az->bacl};
    if ((ret = load_bucket(r, o, s3h_b(r), &b))) {
        cpol_put(b.pol);
        return ret;
    }
    memcpy(az->bucket_owner, b.owner, sizeof b.owner);
    az->bpol = b.pol;
    az->bucket_pab = b.pab;
    az->bucket_own = b.own;
    az->bucket_loaded = true;
    if (op->api == FRONT_API_DELETE_OBJECTS || op->api == FRONT_API_RDMA_BATCH) {
        az->per_key = true;
        return 0;
    }
    if (!auth_resource_arn(az->arn, sizeof az->arn, s3h_b(r), s3h_k(r)))
        return s3h_err(o, S3_ERR_KEY_TOO_LONG, NULL);
    bool obj = s3h_k(r) != NULL;
    auth_authz_t d =
        decide(r, az, action, az->arn, az->bucket_owner, &az->bacl, az->bpol, NULL, obj);
    if (d == AUTH_AUTHZ_NEED_OBJECT && op->obj_acl) {
        az->pending = true; /* the handler calls s3h_authz_object before moving a byte */
        return 0;
    }
    if (d == AUTH_AUTHZ_NEED_OBJECT) {
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        wh_status_t st = store_object_open(
            s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r)}, &m, NULL);
        auth_acl_t *oacl = NULL;
        if (st == WH_OK) {
            oacl = malloc(sizeof *oacl);
            if (!oacl)
                ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
            else
                ret = object_acl(r, o, &m, oacl, az->bucket_owner, az->bucket_pab, az->bucket_own);
        } else if (st != WH_ERR_NOT_FOUND) {
            ret = s3h_err_status(r, o, st, "loading the object's ACL");
        }
        data_obj_meta_free(&m);
        if (!ret)
            d = decide(r, az, action, az->arn, az->bucket_owner, &az->bacl, az->bpol, oacl, false);
        free(oacl);
        if (ret)
            return ret;
    }
    return d == AUTH_AUTHZ_ALLOW ? 0 : deny(r, o, action, az->arn, d);
}

int s3h_authz_object(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m)
{
    s3h_authz_t *az = r->az;
    if (!az)
        return 0;
    if (!m) {
        /* No such key: as S3, only who may list the bucket learns that (404); the others
         * get 403, whatever allowed the read itself. */
        az->pending = false;
        return s3h_authz_other(r, o, "s3:ListBucket", s3h_b(r), NULL, NULL);
    }
    if (!az->pending)
        return 0;
    auth_acl_t *oacl = NULL;
    int ret = 0;
    if (m) {
        if (!(oacl = malloc(sizeof *oacl)))
            return s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
        if ((ret = object_acl(r, o, m, oacl, az->bucket_owner, az->bucket_pab, az->bucket_own))) {
            free(oacl);
            return ret;
        }
    }
    /* The policies answered NO_MATCH already: only the ACLs and ownership remain. */
    auth_authz_in_t in;
    memset(&in, 0, sizeof in);
    fill_ctx(r, &in.ctx, az->action, az->arn);
    in.bucket_owner = az->bucket_owner;
    in.bucket_acl = &az->bacl;
    in.object_acl = oacl;
    auth_authz_t d = auth_authz_decide(&in);
    free(oacl);
    az->pending = false;
    return d == AUTH_AUTHZ_ALLOW ? 0 : deny(r, o, az->action, az->arn, d);
}

int s3h_authz_other(front_req_t *r, s3h_out_t *o, const char *action, const char *bucket,
                    const char *key, const data_obj_meta_t *m)
{
    if (r->who.kind == AUTH_PRINCIPAL_ROOT)
        return 0;
    s3h_authz_t *az = az_get(r);
    if (!az)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
    int ret = load_user_policies(r, o, az);
    if (ret)
        return ret;
    char arn[AUTH_ARN_MAX];
    if (!auth_resource_arn(arn, sizeof arn, bucket, key))
        return s3h_err(o, S3_ERR_KEY_TOO_LONG, NULL);
    auth_acl_t *oacl = NULL;
    bucket_auth_t b = {0};
    bool same = az->bucket_loaded && s3h_b(r) && strcmp(bucket, s3h_b(r)) == 0;
    if (!same && !(b.acl = malloc(sizeof *b.acl)))
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
    if (!same && (ret = load_bucket(r, o, bucket, &b)))
        goto cleanup;
    if (m) {
        if (!(oacl = malloc(sizeof *oacl))) {
            ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory authorizing the request");
            goto cleanup;
        }
        if ((ret = same
                       ? object_acl(r, o, m, oacl, az->bucket_owner, az->bucket_pab, az->bucket_own)
                       : object_acl(r, o, m, oacl, b.owner, b.pab, b.own)))
            goto cleanup;
    }
    auth_authz_t d =
        same ? decide(r, az, action, arn, az->bucket_owner, &az->bacl, az->bpol, oacl, false)
             : decide(r, az, action, arn, b.owner, b.acl, b.pol, oacl, false);
    if (d != AUTH_AUTHZ_ALLOW)
        ret = deny(r, o, action, arn, d);
cleanup:
    free(oacl);
    if (!same) {
        free(b.acl);
        cpol_put(b.pol);
    }
    return ret;
}

bool s3h_authz_bucket_known(const front_req_t *r)
{
    return r->az && r->az->bucket_loaded;
}

const char *s3h_authz_bucket_owner(const front_req_t *r)
{
    return r->az && r->az->bucket_loaded ? r->az->bucket_owner : NULL;
}

int s3h_authz_guard(front_req_t *r, s3h_out_t *o, int status)
{
    if (status > 0 && status < 300 && r->az && r->az->pending) {
        /* A handler marked obj_acl answered without calling s3h_authz_object: refuse rather
         * than serve what nobody checked. */
        wh_error(MOD, "id=%s %s answered %d with its object check pending", r->id, r->az->action,
                 status);
        return s3h_err(o, S3_ERR_ACCESS_DENIED, "the object's ACL was not checked");
    }
    return status;
}

wh_status_t s3h_user_policies(front_req_t *r, meta_policy_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (r->who.kind != AUTH_PRINCIPAL_USER)
        return WH_OK;
    return meta_user_policy_list(store_meta(s3h_st(r)), r->who.user, out, n);
}
