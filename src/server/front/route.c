/* SPDX-License-Identifier: Apache-2.0 */
#include "front/route.h"
#include "base/util.h"
#include "auth/sigv4.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const g_api_names[] = {
#define FRONT_API_NAME_(e, n) n,
    FRONT_API_LIST(FRONT_API_NAME_)
#undef FRONT_API_NAME_
};

const char *front_api_name(front_api_t api)
{
    return (unsigned)api < FRONT_API__COUNT ? g_api_names[api] : "Unknown";
}

/* Sub-resources S3 has and wharf does not serve: a request naming one gets NotImplemented
 * instead of being mistaken for a plain object or bucket request. */
static const char *const g_unsupported[] = {
    "accelerate",
    "analytics",
    "attributes",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "lifecycle",
    "logging",
    "metrics",
    "notification",
    "ownershipControls",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "select",
    "tagging",
    "torrent",
    "website",
};

/* Sub-resources some rows serve: a request naming one matches only a row that names it, so
 * that DELETE /bucket?acl is MethodNotAllowed rather than DeleteBucket. */
static const char *const g_served_subres[] = {"acl",
                                              "policy",
                                              "policyStatus",
                                              "tagging",
                                              "cors",
                                              "publicAccessBlock",
                                              "ownershipControls",
                                              "lifecycle",
                                              "encryption",
                                              "object-lock",
                                              "retention",
                                              "legal-hold",
                                              "renameObject",
                                              "x-wharf-scatter",
                                              "x-wharf-gather"};

static char *decode_dup(const char *s, size_t n, bool plus_is_space)
{
    wh_sbuf_t in, out;
    wh_sbuf_init(&in);
    wh_sbuf_init(&out);
    wh_sbuf_append(&in, s, n);
    if (in.oom) {
        wh_sbuf_free(&in);
        return NULL;
    }
    if (plus_is_space) {
        for (size_t i = 0; i < in.len; i++)
            if (in.data[i] == '+')
                in.data[i] = ' ';
    }
    char *res = NULL;
    if (s3_uri_decode(in.data ? in.data : "", in.len, &out) == 0 && !out.oom) {
        wh_sbuf_append(&out, "", 0); /* make sure data is allocated even for "" */
        res = out.data ? wh_sbuf_steal(&out) : strdup("");
    }
    wh_sbuf_free(&in);
    wh_sbuf_free(&out);
    return res;
}

const char *front_route_q(const front_route_t *r, const char *name)
{
    for (size_t i = 0; i < r->nq; i++)
        if (strcmp(r->q[i].name, name) == 0)
            return r->q[i].value;
    return NULL;
}

static bool parse_query(const char *q, front_route_t *r)
{
    if (!q)
        return true;
    const char *p = q;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > 0) {
            if (r->nq == FRONT_MAX_QPARAMS) {
                r->why = "too many query parameters";
                return false;
            }
            const char *eq = memchr(p, '=', len);
            size_t nlen = eq ? (size_t)(eq - p) : len;
            front_qparam_t *qp = &r->q[r->nq];
            qp->name = decode_dup(p, nlen, true);
            qp->value = eq ? decode_dup(eq + 1, len - nlen - 1, true) : strdup("");
            qp->has_value = eq != NULL;
            if (!qp->name || !qp->value) {
                free(qp->name);
                free(qp->value);
                r->why = "malformed percent-encoding in the query string";
                return false;
            }
            r->nq++;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    return true;
}

static bool is_ip_literal(const char *h, size_t n)
{
    if (n > 0 && h[0] == '[')
        return true;
    size_t dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '.')
            dots++;
        else if (h[i] < '0' || h[i] > '9')
            return false;
    }
    return dots == 3;
}

/* Bucket from a virtual-host Host header, or NULL for path-style. */
static char *vhost_bucket(const char *host, const char *endpoint_host)
{
    if (!host || !*host)
        return NULL;
    size_t n = strlen(host);
    if (host[0] != '[') {
        const char *colon = strrchr(host, ':');
        if (colon)
            n = (size_t)(colon - host);
    }
    if (n == 0 || is_ip_literal(host, n) || !memchr(host, '.', n))
        return NULL;
    if (endpoint_host && strlen(endpoint_host) == n && strncasecmp(host, endpoint_host, n) == 0)
        return NULL;
    static const char lh[] = ".localhost";
    size_t blen;
    if (n > sizeof lh - 1 && strncasecmp(host + n - (sizeof lh - 1), lh, sizeof lh - 1) == 0)
        blen = n - (sizeof lh - 1);
    else
        blen = (size_t)((const char *)memchr(host, '.', n) - host);
    if (blen == 0)
        return NULL;
    char *b = strndup(host, blen);
    if (b) {
        for (char *c = b; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
    }
    return b;
}

static bool has_q(const front_route_t *r, const char *name)
{
    return front_route_q(r, name) != NULL;
}

static bool op_matches(const front_op_t *op, front_level_t level, const char *m,
                       const front_route_t *r, bool copy)
{
    if (op->level != level || strcmp(op->method, m) != 0 || (op->copy && !copy))
        return false;
    if (op->q1) {
        const char *v = front_route_q(r, op->q1);
        if (!v || (op->q1_value && strcmp(v, op->q1_value) != 0))
            return false;
    }
    return !op->q2 || has_q(r, op->q2);
}

static const front_op_t *route_op(const front_op_t *ops, size_t n_ops, front_level_t level,
                                  const char *m, const front_route_t *r, bool copy)
{
    for (size_t i = 0; i < n_ops; i++)
        if (op_matches(&ops[i], level, m, r, copy))
            return &ops[i];
    return NULL;
}

void front_route_parse_in(const front_op_t *ops, size_t n_ops, const char *method,
                          const char *raw_path, const char *raw_query, const char *host,
                          const char *endpoint_host, bool has_copy_source, front_route_t *out)
{
    memset(out, 0, sizeof *out);
    out->api = FRONT_API_BAD_REQUEST;
    if (!method || !raw_path || raw_path[0] != '/') {
        out->why = "the request target must be an absolute path";
        return;
    }
    if (!parse_query(raw_query, out))
        return;

    if (strcmp(raw_path, "/health") == 0 && !raw_query && strcmp(method, "GET") == 0) {
        out->api = FRONT_API_HEALTH;
        return;
    }
    if (strcmp(raw_path, "/metrics") == 0 && !raw_query && strcmp(method, "GET") == 0) {
        out->api = FRONT_API_METRICS;
        return;
    }
    const char *rest = raw_path + 1; /* after the leading '/' */
    out->bucket = vhost_bucket(host, endpoint_host);
    if (out->bucket) {
        out->vhost = true;
    } else if (strncmp(raw_path, "/console", 8) == 0 &&
               (raw_path[8] == '\0' || raw_path[8] == '/')) {
        /* The browser console (its own module, front_parts_t.console): /console and below, any
         * method, path-style; a bucket named "console" is reached virtual-host style only (a
         * key "console" of a virtual-host bucket stays S3's). */
        out->api = FRONT_API_CONSOLE;
        return;
    } else {
        const char *slash = strchr(rest, '/');
        size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
        if (blen > 0) {
            out->bucket = decode_dup(rest, blen, false);
            if (!out->bucket) {
                out->why = "malformed percent-encoding in the bucket name";
                return;
            }
        }
        rest = slash ? slash + 1 : rest + blen;
    }
    if (out->bucket && *rest) {
        wh_sbuf_t k;
        wh_sbuf_init(&k);
        if (s3_uri_decode(rest, strlen(rest), &k) != 0 || k.oom) {
            wh_sbuf_free(&k);
            out->why = "malformed percent-encoding in the object key";
            return;
        }
        out->key_len = k.len;
        out->key = wh_sbuf_steal(&k);
        if (!out->key) {
            out->why = "out of memory";
            return;
        }
    }

    for (size_t i = 0; i < WH_ARRAY_SIZE(g_unsupported); i++) {
        /* Object tagging and GetObjectAttributes are served; a bucket's tagging, CORS,
         * PublicAccessBlock, OwnershipControls and lifecycle too. */
        const char *u = g_unsupported[i];
        if (out->key && (strcmp(u, "tagging") == 0 || strcmp(u, "attributes") == 0))
            continue;
        if (!out->key &&
            (strcmp(u, "tagging") == 0 || strcmp(u, "cors") == 0 ||
             strcmp(u, "publicAccessBlock") == 0 || strcmp(u, "ownershipControls") == 0 ||
             strcmp(u, "lifecycle") == 0 || strcmp(u, "encryption") == 0))
            continue;
        if (has_q(out, g_unsupported[i])) {
            out->unsupported = g_unsupported[i];
            out->api = FRONT_API_NOT_IMPLEMENTED;
            return;
        }
    }
    front_level_t level = !out->bucket ? FRONT_AT_SERVICE
                          : !out->key  ? FRONT_AT_BUCKET
                                       : FRONT_AT_OBJECT;
    const front_op_t *op = route_op(ops, n_ops, level, method, out, has_copy_source);
    for (size_t i = 0; op && i < WH_ARRAY_SIZE(g_served_subres); i++)
        if (has_q(out, g_served_subres[i]) &&
            !(op->q1 && strcmp(op->q1, g_served_subres[i]) == 0) &&
            !(op->q2 && strcmp(op->q2, g_served_subres[i]) == 0))
            op = NULL;
    out->api = op ? op->api : FRONT_API_METHOD_NOT_ALLOWED;
    out->op = op && op->begin ? op : NULL;
    if (out->api == FRONT_API_BAD_REQUEST)
        out->why = "partNumber and uploadId must be given together";
}

void front_route_free(front_route_t *r)
{
    if (!r)
        return;
    free(r->bucket);
    free(r->key);
    for (size_t i = 0; i < r->nq; i++) {
        free(r->q[i].name);
        free(r->q[i].value);
    }
    memset(r, 0, sizeof *r);
}
