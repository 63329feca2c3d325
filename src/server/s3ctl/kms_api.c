/* SPDX-License-Identifier: Apache-2.0 */
/* The KMS JSON API of the key service wharfd runs itself (ident/kms.h), on wharfd's own port:
 * POST / with X-Amz-Target: TrentService.<Action> and an application/x-amz-json-1.1 body,
 * signed with SigV4 for the service "kms" (boto3's kms client, `aws kms --endpoint-url`).
 * Root only: the keys protect every user's SSE-KMS objects. Served: CreateKey, DescribeKey,
 * ListKeys, EnableKey, DisableKey, ScheduleKeyDeletion, CancelKeyDeletion, RotateKeyOnDemand;
 * any other TrentService action is 400 UnsupportedOperationException. Errors are KMS's JSON
 * {"__type", "message"}. The row of POST / is the IAM API's (iam.c hands these requests
 * here, by their X-Amz-Target). */
#include "base/defaults.h"
#include "base/digest.h"
#include "base/log.h"
#include "ident/kms.h"
#include "s3ctl/s3ctl.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MOD "kms"
#define KMS_TARGET "TrentService."
#define KMS_MAX_BODY (64u << 10)
#define KMS_DELETION_DEFAULT_DAYS 30

bool s3h_kms_api_is(const front_req_t *r)
{
    const char *t = front_hdr(r, "x-amz-target");
    return t && strncmp(t, KMS_TARGET, sizeof KMS_TARGET - 1) == 0;
}

static int kms_reply(s3h_out_t *o, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text)
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory");
    }
    MHD_add_response_header(resp, "Content-Type", "application/x-amz-json-1.1");
    return s3h_ok_resp(o, status, resp, 0);
}

static int kms_err(front_req_t *r, s3h_out_t *o, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int kms_err(front_req_t *r, s3h_out_t *o, int status, const char *type, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wh_debug(MOD, "error id=%s status=%d type=%s message=%s", r->id, status, type, msg);
    return kms_reply(o, status, json_pack("{s:s, s:s}", "__type", type, "message", msg));
}

static int kms_store_err(front_req_t *r, s3h_out_t *o, wh_status_t st, const char *ref)
{
    switch (st) {
    case WH_ERR_NOT_FOUND:
        return kms_err(r, o, 400, "NotFoundException", "Key '%.200s' does not exist", ref);
    case WH_ERR_EXISTS:
        return kms_err(r, o, 400, "AlreadyExistsException", "the key exists");
    case WH_ERR_UNSUPPORTED:
        return kms_err(r, o, 501, "UnsupportedOperationException",
                       "the key service needs the server key (--server-key-file), which seals "
                       "its keys; this server has not got it");
    case WH_ERR_BUSY:
    case WH_ERR_UNAVAILABLE:
        return kms_err(r, o, 503, "KMSInternalException",
                       "the metadata database is busy or unreachable; retry");
    default:
        return kms_err(r, o, 500, "KMSInternalException", "%s", wh_status_str(st));
    }
}

static void key_arn(front_req_t *r, const char *id, char *out, size_t cap)
{
    const char *region = r->srv->cfg.region ? r->srv->cfg.region : WH_DEFAULT_REGION;
    snprintf(out, cap, "arn:aws:kms:%s:%s:key/%s", region, s3h_account_id(r), id);
}

static json_t *key_meta(front_req_t *r, const ident_kms_key_t *k)
{
    char arn[400];
    key_arn(r, k->id, arn, sizeof arn);
    json_t *m = json_pack(
        "{s:s, s:s, s:s, s:I, s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:[s], s:b}", "AWSAccountId",
        s3h_account_id(r), "KeyId", k->id, "Arn", arn, "CreationDate", (json_int_t)k->created,
        "Enabled", k->state == IDENT_KMS_ENABLED, "Description", "", "KeyUsage", "ENCRYPT_DECRYPT",
        "KeyState", ident_kms_state_name(k->state), "Origin", "AWS_KMS", "KeyManager", "CUSTOMER",
        "CustomerMasterKeySpec", "SYMMETRIC_DEFAULT", "KeySpec", "SYMMETRIC_DEFAULT",
        "EncryptionAlgorithms", "SYMMETRIC_DEFAULT", "MultiRegion", 0);
    if (m && k->state == IDENT_KMS_PENDING_DELETION)
        json_object_set_new(m, "DeletionDate", json_integer((json_int_t)k->deletion));
    return m;
}

int s3h_kms_begin(front_req_t *r, s3h_out_t *o)
{
    const char *cl = front_hdr(r, "content-length");
    uint64_t n = 0;
    if (cl && wh_parse_u64(cl, strlen(cl), &n) == 0 && n > KMS_MAX_BODY)
        return kms_err(r, o, 400, "ValidationException", "the request body exceeds %u bytes",
                       KMS_MAX_BODY);
    r->auth.mode = AUTH_PAYLOAD_UNSIGNED; /* hashed and checked at finish */
    return 0;
}

/* Checks the signature over the body; 0 when it is root's. */
static int kms_auth(front_req_t *r, s3h_out_t *o)
{
    char hex[65], msg[320] = "";
    wh_sha256_hex(r->buf.data ? r->buf.data : "", r->buf.len, hex);
    s3_err_t e = front_req_verify_kms(r, time(NULL), hex, msg, sizeof msg);
    if (e == S3_OK && r->auth.mode == AUTH_PAYLOAD_SHA256 && strcmp(r->auth.payload_hash, hex))
        e = S3_ERR_CONTENT_SHA256_MISMATCH,
        snprintf(msg, sizeof msg, "x-amz-content-sha256 does not match the body");
    else if (e == S3_OK && r->auth.mode != AUTH_PAYLOAD_SHA256)
        e = S3_ERR_ACCESS_DENIED,
        snprintf(msg, sizeof msg, "the KMS API needs a signed body (SigV4, service kms)");
    if (e == S3_ERR_INVALID_ACCESS_KEY)
        return kms_err(r, o, 400, "UnrecognizedClientException",
                       "The security token included in the request is invalid: %s", msg);
    if (e != S3_OK)
        return kms_err(r, o, 400,
                       e == S3_ERR_SIGNATURE_MISMATCH ? "InvalidSignatureException"
                                                      : "AccessDeniedException",
                       "%s", msg[0] ? msg : s3_err_message(e));
    if (r->who.kind != AUTH_PRINCIPAL_ROOT)
        return kms_err(r, o, 400, "AccessDeniedException",
                       "the key service is administered by root only: its keys protect every "
                       "user's SSE-KMS objects (%.64s is not root)",
                       r->who.kind == AUTH_PRINCIPAL_USER ? r->who.user : "the caller");
    return 0;
}

static int need_key(front_req_t *r, s3h_out_t *o, const ident_kms_req_t *q, const char *action)
{
    if (!q->key_id[0])
        return kms_err(r, o, 400, "ValidationException", "%s needs KeyId", action);
    return 0;
}

int s3h_kms_finish(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if (r->buf.len > KMS_MAX_BODY)
        return kms_err(r, o, 400, "ValidationException", "the request body exceeds %u bytes",
                       KMS_MAX_BODY);
    if ((ret = kms_auth(r, o)))
        return ret;
    const char *action = front_hdr(r, "x-amz-target") + sizeof KMS_TARGET - 1;
    ident_kms_req_t q;
    char msg[300];
    wh_status_t st = ident_kms_req_parse(r->buf.data, r->buf.len, &q, msg, sizeof msg);
    if (st != WH_OK)
        return kms_err(r, o, 400,
                       st == WH_ERR_UNSUPPORTED ? "UnsupportedOperationException"
                                                : "ValidationException",
                       "%s", msg);
    ident_t *id = r->srv->ident;
    ident_kms_key_t k;
    memset(&k, 0, sizeof k);
    if (!id)
        return kms_store_err(r, o, WH_ERR_UNSUPPORTED, "");
    if (strcmp(action, "CreateKey") == 0) {
        if ((st = ident_kms_create(id, NULL, &k)) != WH_OK)
            return kms_store_err(r, o, st, "");
        wh_info(MOD, "id=%s created key %s", r->id, k.id);
        return kms_reply(o, 200, json_pack("{s:o}", "KeyMetadata", key_meta(r, &k)));
    }
    if (strcmp(action, "ListKeys") == 0) {
        ident_kms_key_t *ks = NULL;
        size_t n = 0;
        if ((st = ident_kms_list(id, &ks, &n)) != WH_OK)
            return kms_store_err(r, o, st, "");
        unsigned limit = q.has_limit ? q.limit : 100;
        json_t *arr = json_array();
        size_t i = 0, shown = 0;
        while (i < n && q.marker[0] && strcmp(ks[i].id, q.marker) <= 0)
            i++;
        for (; i < n && shown < limit; i++, shown++) {
            char arn[400];
            key_arn(r, ks[i].id, arn, sizeof arn);
            json_array_append_new(arr, json_pack("{s:s, s:s}", "KeyId", ks[i].id, "KeyArn", arn));
        }
        json_t *body = json_pack("{s:o, s:b}", "Keys", arr, "Truncated", i < n);
        if (body && i < n)
            json_object_set_new(body, "NextMarker", json_string(ks[i - 1].id));
        free(ks);
        return kms_reply(o, 200, body);
    }
    static const char *const keyed[] = {"DescribeKey",       "EnableKey",
                                        "DisableKey",        "ScheduleKeyDeletion",
                                        "CancelKeyDeletion", "RotateKeyOnDemand"};
    size_t a = 0;
    while (a < WH_ARRAY_SIZE(keyed) && strcmp(action, keyed[a]) != 0)
        a++;
    if (a == WH_ARRAY_SIZE(keyed))
        return kms_err(r, o, 400, "UnsupportedOperationException",
                       "TrentService.%.64s is not served by wharf's key service (CreateKey, "
                       "DescribeKey, ListKeys, EnableKey, DisableKey, ScheduleKeyDeletion, "
                       "CancelKeyDeletion, RotateKeyOnDemand are)",
                       action);
    if ((ret = need_key(r, o, &q, action)))
        return ret;
    if ((st = ident_kms_describe(id, q.key_id, &k)) != WH_OK)
        return kms_store_err(r, o, st, q.key_id);
    char arn[400];
    key_arn(r, k.id, arn, sizeof arn);
    switch (a) {
    case 0:
        return kms_reply(o, 200, json_pack("{s:o}", "KeyMetadata", key_meta(r, &k)));
    case 1:
    case 2:
        if (k.state == IDENT_KMS_PENDING_DELETION)
            return kms_err(r, o, 400, "KMSInvalidStateException",
                           "%s is pending deletion (CancelKeyDeletion first)", arn);
        st = ident_kms_set_state(id, k.id, a == 1 ? IDENT_KMS_ENABLED : IDENT_KMS_DISABLED, 0, &k);
        if (st != WH_OK)
            return kms_store_err(r, o, st, q.key_id);
        wh_info(MOD, "id=%s key %s %s", r->id, k.id, a == 1 ? "enabled" : "disabled");
        return kms_reply(o, 200, json_object());
    case 3: {
        unsigned days = q.has_window ? q.window_days : KMS_DELETION_DEFAULT_DAYS;
        time_t when = time(NULL) + (time_t)days * 86400;
        if (k.state == IDENT_KMS_PENDING_DELETION)
            return kms_err(r, o, 400, "KMSInvalidStateException", "%s is pending deletion", arn);
        if ((st = ident_kms_set_state(id, k.id, IDENT_KMS_PENDING_DELETION, when, &k)) != WH_OK)
            return kms_store_err(r, o, st, q.key_id);
        wh_info(MOD, "id=%s key %s pending deletion", r->id, k.id);
        return kms_reply(o, 200,
                         json_pack("{s:s, s:I, s:s, s:i}", "KeyId", arn, "DeletionDate",
                                   (json_int_t)when, "KeyState", "PendingDeletion",
                                   "PendingWindowInDays", (int)days));
    }
    case 4:
        if (k.state != IDENT_KMS_PENDING_DELETION)
            return kms_err(r, o, 400, "KMSInvalidStateException", "%s is not pending deletion",
                           arn);
        /* As KMS: a canceled deletion leaves the key Disabled. */
        if ((st = ident_kms_set_state(id, k.id, IDENT_KMS_DISABLED, 0, &k)) != WH_OK)
            return kms_store_err(r, o, st, q.key_id);
        return kms_reply(o, 200, json_pack("{s:s}", "KeyId", arn));
    default:
        if (k.state != IDENT_KMS_ENABLED)
            return kms_err(r, o, 400, "DisabledException", "%s is not enabled", arn);
        if ((st = ident_kms_rotate(id, k.id, &k)) != WH_OK)
            return kms_store_err(r, o, st, q.key_id);
        wh_info(MOD, "id=%s key %s rotated to version %u", r->id, k.id, k.versions);
        return kms_reply(o, 200, json_pack("{s:s}", "KeyId", arn));
    }
}
