/* SPDX-License-Identifier: Apache-2.0 */
/* S3 Object Lock: the bucket's configuration (Put/GetObjectLockConfiguration), a version's
 * retention and legal hold (Put/GetObjectRetention, Put/GetObjectLegalHold), the
 * x-amz-object-lock-* headers of a write (PutObject, CreateMultipartUpload, CopyObject) and of a
 * read, and x-amz-bypass-governance-retention. The enforcement itself is the store's: every
 * metadata transaction that would destroy a version reads its lock (meta.h). */
#include "s3ctl/s3ctl.h"
#include "s3/object_lock.h"
#include "s3/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

_Static_assert((int)S3_LOCK_GOVERNANCE == (int)DATA_LOCK_GOVERNANCE &&
                   (int)S3_LOCK_COMPLIANCE == (int)DATA_LOCK_COMPLIANCE,
               "one numbering of the retention modes");

int s3h_lock_config_load(front_req_t *r, s3h_out_t *o, bool *enabled, s3_lock_config_t *cfg)
{
    char *v = NULL;
    memset(cfg, 0, sizeof *cfg);
    *enabled = false;
    wh_status_t st = store_bucket_attr_get(s3h_st(r), s3h_b(r), DATA_BATTR_OBJECT_LOCK, &v);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "loading the bucket's object lock configuration");
    if (!v)
        return 0;
    char msg[200];
    s3_err_t e = s3_lock_config_parse(v, strlen(v), cfg, msg, sizeof msg);
    free(v);
    if (e != S3_OK)
        return s3h_errf(o, S3_ERR_INTERNAL, "the stored object lock configuration is damaged: %s",
                        msg);
    *enabled = true;
    return 0;
}

int s3h_lock_from_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m)
{
    const char *mode = front_hdr(r, "x-amz-object-lock-mode");
    const char *until = front_hdr(r, "x-amz-object-lock-retain-until-date");
    const char *hold = front_hdr(r, "x-amz-object-lock-legal-hold");
    m->lock_mode = DATA_LOCK_NONE;
    m->lock_until = 0;
    m->legal_hold = false;
    bool enabled;
    s3_lock_config_t cfg;
    int ret = s3h_lock_config_load(r, o, &enabled, &cfg);
    if (ret)
        return ret;
    /* Setting a lock through a write's headers is PutObjectRetention / PutObjectLegalHold
     * as well as the write, as in S3: each is authorized on the key when its header is sent
     * (the bucket's default retention needs neither). */
    if ((mode || until) &&
        (ret = s3h_authz_other(r, o, "s3:PutObjectRetention", s3h_b(r), s3h_k(r), NULL)))
        return ret;
    if (hold && (ret = s3h_authz_other(r, o, "s3:PutObjectLegalHold", s3h_b(r), s3h_k(r), NULL)))
        return ret;
    if (!enabled) {
        if (mode || until || hold)
            return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                            "Bucket is missing Object Lock "
                            "Configuration: x-amz-object-lock-* headers need a bucket with "
                            "object lock enabled");
        return 0;
    }
    int64_t now = (int64_t)time(NULL);
    if (!mode != !until)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-object-lock-retain-until-date and "
                       "x-amz-object-lock-mode must both be supplied");
    if (mode) {
        s3_lock_mode_t md;
        int64_t t;
        if (s3_lock_mode_parse(mode, strlen(mode), &md) != 0)
            return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                            "Unknown wormMode directive: "
                            "x-amz-object-lock-mode must be GOVERNANCE or COMPLIANCE, got "
                            "\"%.32s\"",
                            mode);
        if (s3_lock_date_parse(until, strlen(until), &t) != 0)
            return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                            "The retain until date must be provided "
                            "in ISO 8601 format (2030-01-01T00:00:00Z), got \"%.40s\"",
                            until);
        if (t <= now)
            return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                           "The retain until date must be in the "
                           "future!");
        m->lock_mode = (int)md;
        m->lock_until = t;
    } else if (cfg.mode != S3_LOCK_NONE) {
        m->lock_mode = (int)cfg.mode; /* the bucket's default retention */
        m->lock_until = s3_lock_config_until(&cfg, now);
    }
    if (hold) {
        if (strcmp(hold, "ON") && strcmp(hold, "OFF"))
            return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                            "Legal Hold must be either of 'ON' or "
                            "'OFF', got \"%.16s\"",
                            hold);
        m->legal_hold = strcmp(hold, "ON") == 0;
    }
    return 0;
}

/* Whether r's caller is allowed action on the request's object (a denial is no error here). */
static bool allowed(front_req_t *r, const char *action)
{
    s3h_out_t ko;
    memset(&ko, 0, sizeof ko);
    wh_sbuf_init(&ko.xml);
    wh_sbuf_init(&ko.hdrs);
    int ret = s3h_authz_other(r, &ko, action, s3h_b(r), s3h_k(r), NULL);
    wh_sbuf_free(&ko.xml);
    wh_sbuf_free(&ko.hdrs);
    return ret == 0;
}

void s3h_lock_headers(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m)
{
    /* As S3: each is sent only to a caller allowed to read it. */
    if (m->lock_mode != DATA_LOCK_NONE && allowed(r, "s3:GetObjectRetention")) {
        char d[32];
        s3_lock_date_format(m->lock_until, d);
        s3h_out_header(o, "x-amz-object-lock-mode", s3_lock_mode_name(m->lock_mode));
        s3h_out_header(o, "x-amz-object-lock-retain-until-date", d);
    }
    if (m->legal_hold && allowed(r, "s3:GetObjectLegalHold"))
        s3h_out_header(o, "x-amz-object-lock-legal-hold", "ON");
}

int s3h_lock_bypass(front_req_t *r, s3h_out_t *o, const char *key, int *bypass)
{
    *bypass = DATA_BYPASS_NONE;
    const char *h = front_hdr(r, "x-amz-bypass-governance-retention");
    if (!h || strcasecmp(h, "true") != 0)
        return 0;
    /* The request asks; its caller must hold the permission, else nothing is bypassed. */
    s3h_out_t ko;
    memset(&ko, 0, sizeof ko);
    wh_sbuf_init(&ko.xml);
    wh_sbuf_init(&ko.hdrs);
    int ret = s3h_authz_other(r, &ko, "s3:BypassGovernanceRetention", s3h_b(r), key, NULL);
    wh_sbuf_free(&ko.xml);
    wh_sbuf_free(&ko.hdrs);
    if (ret && ko.code && strcmp(ko.code, "AccessDenied") != 0) /* not a denial: a failure */
        return s3h_err_raw(o, ko.status, ko.code, ko.msg);
    if (!ret)
        *bypass = DATA_BYPASS_GOVERNANCE;
    return 0;
}

void s3h_lock_refusal(const data_del_result_t *res, const char *key, const char *vid, char *msg,
                      size_t n)
{
    if (res->locked == DATA_LOCK_BY_HOLD) {
        snprintf(msg, n,
                 "Access Denied because object protected by object lock: version %s of "
                 "%.200s is under a legal hold",
                 vid ? vid : "(current)", key);
        return;
    }
    char d[32];
    s3_lock_date_format(res->lock_until, d);
    snprintf(msg, n,
             "Access Denied because object protected by object lock: version %s of "
             "%.200s is retained in %s mode until %s%s",
             vid ? vid : "(current)", key, s3_lock_mode_name(res->lock_mode), d,
             res->lock_mode == DATA_LOCK_GOVERNANCE
                 ? " (x-amz-bypass-governance-retention with s3:BypassGovernanceRetention "
                   "may remove it)"
                 : "");
}

/* ---- ObjectLockConfiguration ------------------------------------------------------------ */

int s3h_olc_get(front_req_t *r, s3h_out_t *o)
{
    bool enabled;
    s3_lock_config_t cfg;
    int ret = s3h_lock_config_load(r, o, &enabled, &cfg);
    if (ret)
        return ret;
    if (!enabled)
        return s3h_err(o, S3_ERR_NO_SUCH_OBJECT_LOCK_CONFIG, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_lock_config_format(&cfg, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_lock_enable(front_req_t *r, s3h_out_t *o, const s3_lock_config_t *cfg)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lock_config_format(cfg, &b, NULL);
    wh_sbuf_append(&b, "", 0);
    if (b.oom) {
        wh_sbuf_free(&b);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory keeping the object lock configuration");
    }
    wh_status_t st = store_bucket_attr_set(s3h_st(r), s3h_b(r), DATA_BATTR_OBJECT_LOCK, b.data);
    wh_sbuf_free(&b);
    /* NOT_FOUND: no bucket, or its versioning is not Enabled (read in the same transaction). */
    if (st == WH_ERR_NOT_FOUND && store_bucket_exists(s3h_st(r), s3h_b(r)) == WH_OK)
        return s3h_err(o, S3_ERR_INVALID_BUCKET_STATE,
                       "Versioning must be 'Enabled' on the "
                       "bucket to apply a Object Lock configuration");
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "storing the object lock configuration");
    return 0;
}

int s3h_olc_put_finish(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_body_md5_check(r, o);
    if (ret)
        return ret;
    s3_lock_config_t cfg;
    char msg[256];
    s3_err_t e =
        s3_lock_config_parse(r->buf.data ? r->buf.data : "", r->buf.len, &cfg, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    /* Object lock needs versioning Enabled (and keeps it so: versioning.c refuses Suspended). */
    data_versioning_t v;
    wh_status_t st = store_bucket_versioning_get(s3h_st(r), s3h_b(r), &v);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_err(o, S3_ERR_NO_SUCH_BUCKET, NULL);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "reading the bucket's versioning");
    if (v != DATA_VERSIONING_ENABLED)
        return s3h_err(o, S3_ERR_INVALID_BUCKET_STATE,
                       "Versioning must be 'Enabled' on the "
                       "bucket to apply a Object Lock configuration");
    if ((ret = s3h_lock_enable(r, o, &cfg)))
        return ret;
    return s3h_ok(o, 200);
}

/* ---- a version's retention and legal hold ----------------------------------------------- */

int s3h_lock_obj_put_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_need_bucket(r, o)))
        return ret;
    return 0; /* read the document */
}

/* The version ?versionId names (NULL: the current) in a bucket with object lock: 0, or the
 * error's status. */
static int lock_target(front_req_t *r, s3h_out_t *o, const char **vid)
{
    int ret;
    bool enabled;
    s3_lock_config_t cfg;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_version_q(r, o, vid)) ||
        (ret = s3h_lock_config_load(r, o, &enabled, &cfg)))
        return ret;
    if (!enabled)
        return s3h_err(o, S3_ERR_INVALID_REQUEST, "Bucket is missing Object Lock Configuration");
    return 0;
}

/* The version's metadata (a delete marker or a missing one answered as a read would be). */
static int lock_read(front_req_t *r, s3h_out_t *o, const char *vid, data_obj_meta_t *m)
{
    wh_status_t st = store_object_open(
        s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r), .version_id = vid}, m,
        NULL);
    if (st == WH_ERR_NOT_FOUND)
        return s3h_version_not_found(r, o, m, vid);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "reading the object");
    return 0;
}

int s3h_retention_get(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int ret;
    if ((ret = lock_target(r, o, &vid)) || (ret = lock_read(r, o, vid, &m)))
        return ret;
    s3_lock_retention_t rt = {(s3_lock_mode_t)m.lock_mode, m.lock_until};
    data_obj_meta_free(&m);
    if (rt.mode == S3_LOCK_NONE)
        return s3h_err(o, S3_ERR_NO_SUCH_OBJECT_LOCK, NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_lock_retention_format(&rt, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

int s3h_legal_hold_get(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int ret;
    if ((ret = lock_target(r, o, &vid)) || (ret = lock_read(r, o, vid, &m)))
        return ret;
    bool on = m.legal_hold;
    data_obj_meta_free(&m);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL);
    s3_lock_legal_hold_format(on, &b, S3H_XMLNS);
    return s3h_ok_xml(o, 200, &b);
}

/* Applies req to the version; the store checks it against the version's lock in the same
 * transaction. */
static int lock_apply(front_req_t *r, s3h_out_t *o, const char *vid, data_lock_set_t *req)
{
    data_obj_meta_t out;
    memset(&out, 0, sizeof out);
    wh_status_t st = store_object_lock_set(s3h_st(r), s3h_b(r), s3h_k(r), vid, req, &out);
    if (st == WH_ERR_NOT_FOUND) {
        /* What is there: a delete marker (405), no such version or key, or no bucket. */
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        int ret = lock_read(r, o, vid, &m);
        data_obj_meta_free(&m);
        return ret ? ret : s3h_err(o, S3_ERR_NO_SUCH_KEY, "the version vanished meanwhile");
    }
    if (st == WH_ERR_AUTH)
        return s3h_err(o, S3_ERR_ACCESS_DENIED,
                       "Access Denied because object protected by "
                       "object lock: a COMPLIANCE retention is never shortened, removed or "
                       "made GOVERNANCE; a GOVERNANCE one only with "
                       "x-amz-bypass-governance-retention: true by a caller allowed "
                       "s3:BypassGovernanceRetention");
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "changing the object's lock");
    s3h_out_version(o, out.version_id, vid != NULL);
    return s3h_ok(o, 200);
}

int s3h_retention_put_finish(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    int ret = s3h_body_md5_check(r, o);
    if (ret || (ret = lock_target(r, o, &vid)))
        return ret;
    s3_lock_retention_t rt;
    char msg[256];
    s3_err_t e =
        s3_lock_retention_parse(r->buf.data ? r->buf.data : "", r->buf.len, &rt, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    int64_t now = (int64_t)time(NULL);
    if (rt.mode != S3_LOCK_NONE && rt.until <= now)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "The retain until date must be in the "
                       "future!");
    int bypass;
    if ((ret = s3h_lock_bypass(r, o, s3h_k(r), &bypass)))
        return ret;
    data_lock_set_t req = {.set_retention = true,
                           .mode = (int)rt.mode,
                           .until = rt.until,
                           .bypass = bypass == DATA_BYPASS_GOVERNANCE,
                           .now = now};
    return lock_apply(r, o, vid, &req);
}

int s3h_legal_hold_put_finish(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    int ret = s3h_body_md5_check(r, o);
    if (ret || (ret = lock_target(r, o, &vid)))
        return ret;
    bool on;
    char msg[256];
    s3_err_t e =
        s3_lock_legal_hold_parse(r->buf.data ? r->buf.data : "", r->buf.len, &on, msg, sizeof msg);
    if (e != S3_OK)
        return s3h_err(o, e, msg);
    data_lock_set_t req = {.set_hold = true, .hold = on, .now = (int64_t)time(NULL)};
    return lock_apply(r, o, vid, &req);
}
