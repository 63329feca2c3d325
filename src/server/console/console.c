/* SPDX-License-Identifier: Apache-2.0 */
/* The console's HTTP side: its pages, login and logout, the session and CSRF checks every API
 * request passes, and the replies (console.h says what it is; docs/console.md what it shows).
 *
 * A request under /console reaches console_app (the front skips SigV4 there). Its files
 * are served to anyone; /console/api/login takes a JSON body {"access_key","secret_key"}; every
 * other /console/api/ request needs a live session (the cookie), an Origin naming this server
 * when it has one (a POST must), the session's CSRF token in x-wharf-csrf (all but GET
 * /console/api/session, which hands the token to a page that was reloaded), a key that is still
 * Active, and wharf:Console in the principal's policies, both looked up again on every request. */
#include "console/console_int.h"
#include "base/log.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MOD "console"

/* Largest login body: two strings of at most 128 characters and the JSON around them. */
#define CON_LOGIN_MAX 4096

static console_sessions_t *sessions(const front_req_t *r)
{
    return r->srv->console_state;
}

/* ---- replies ----------------------------------------------------------------------------- */

static void sec_headers(struct MHD_Response *resp)
{
    front_resp_header(resp, "Content-Security-Policy",
                      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                      "connect-src 'self'; form-action 'self'; base-uri 'none'; "
                      "frame-ancestors 'none'");
    front_resp_header(resp, "X-Frame-Options", "DENY");
    front_resp_header(resp, "X-Content-Type-Options", "nosniff");
    front_resp_header(resp, "Referrer-Policy", "no-referrer");
    front_resp_header(resp, "Cache-Control", "no-store");
}

static void reply_resp(front_req_t *r, int status, struct MHD_Response *resp, const char *type,
                       size_t n)
{
    if (resp) {
        if (type)
            front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        sec_headers(resp);
    }
    if (!r->head)
        r->tx_body = n;
    front_reply(r, status, resp);
}

void console_reply_bytes(front_req_t *r, int status, const char *type, void *data, size_t n,
                         const char *disposition)
{
    struct MHD_Response *resp = front_resp_buffer(data, n);
    if (resp && disposition)
        front_resp_header(resp, "Content-Disposition", disposition);
    reply_resp(r, status, resp, type, n);
}

void console_reply_json(front_req_t *r, int status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        console_reply_error(r, 500, "InternalError", "out of memory building the reply");
        return;
    }
    console_reply_bytes(r, status, "application/json", s, strlen(s), NULL);
}

json_t *console_jstr(const char *s)
{
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    /* Not UTF-8: each byte outside printable ASCII as \xNN. */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
            wh_sbuf_append(&b, p, 1);
        else
            wh_sbuf_printf(&b, "\\x%02x", *p);
    j = json_string(b.data ? b.data : "");
    wh_sbuf_free(&b);
    return j;
}

void console_reply_error(front_req_t *r, int status, const char *code, const char *msg)
{
    r->err_code = code;
    r->err_msg = msg;
    json_t *j = json_pack("{s:s,s:o,s:s}", "error", code, "message", console_jstr(msg),
                          "request_id", r->id);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        front_reply_err(r, S3_ERR_INTERNAL, "out of memory building the reply");
        return;
    }
    console_reply_bytes(r, status, "application/json", s, strlen(s), NULL);
}

void console_out_init(s3h_out_t *o)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(&o->xml);
    wh_sbuf_init(&o->hdrs);
}

void console_out_free(s3h_out_t *o)
{
    if (o->resp)
        MHD_destroy_response(o->resp);
    o->resp = NULL;
    wh_sbuf_free(&o->xml);
    wh_sbuf_free(&o->hdrs);
}

void console_reply_out(front_req_t *r, const s3h_out_t *o)
{
    console_reply_error(r, o->status ? o->status : 500, o->code ? o->code : "InternalError",
                        o->msg);
}

/* ---- the pages --------------------------------------------------------------------------- */

static void serve_file(front_req_t *r, const char *path)
{
    if (strcmp(r->method, "GET") != 0 && !r->head) {
        console_reply_error(r, 405, "MethodNotAllowed", "the console's pages are read with GET");
        return;
    }
    if (strcmp(path, "/console") == 0) {
        struct MHD_Response *resp = front_resp_empty();
        if (resp)
            front_resp_header(resp, MHD_HTTP_HEADER_LOCATION, "/console/");
        reply_resp(r, 302, resp, NULL, 0);
        return;
    }
    const char *want = strcmp(path, "/console/") == 0 ? "/console/index.html" : path;
    for (size_t i = 0; i < console_assets_count; i++) {
        if (strcmp(console_assets[i].path, want) != 0)
            continue;
        struct MHD_Response *resp = MHD_create_response_from_buffer(
            console_assets[i].len, (void *)console_assets[i].data, MHD_RESPMEM_PERSISTENT);
        reply_resp(r, 200, resp, console_assets[i].type, console_assets[i].len);
        return;
    }
    console_reply_error(r, 404, "NoSuchKey", "the console has no such page");
}

/* ---- login, the session, logout ---------------------------------------------------------- */

static const front_op_t g_console_op = {
    .level = FRONT_AT_SERVICE, .method = "GET", .api = FRONT_API_CONSOLE, .action = CONSOLE_ACTION};

/* The principal of access key ak, as the SigV4 step finds it (root's pair, else an Active
 * key of the identities), into r->who, and whether secret is its secret; NULL secret: only
 * that the key is still Active. False with a reply sent. */
static bool check_key(front_req_t *r, const char *ak, const char *secret)
{
    const char *have = front_req_secret(r, ak);
    bool ok = have && (!secret || console_str_eq(have, secret));
    front_req_secret_wipe(r);
    if (ok)
        return true;
    memset(&r->who, 0, sizeof r->who);
    if (r->ident_err == WH_ERR_UNAVAILABLE)
        console_reply_error(r, 503, "ServiceUnavailable",
                            "the metadata database holding access keys is unreachable");
    else if (secret)
        console_reply_error(r, 403, "InvalidCredentials", "the access key or its secret is wrong");
    else
        console_reply_error(r, 401, "NoSession", "the session's access key is no longer active");
    return false;
}

/* wharf:Console for r->who (root: always). False with a reply sent. */
static bool check_permission(front_req_t *r)
{
    s3h_out_t o;
    console_out_init(&o);
    int st = s3h_authorize(r, &g_console_op, &o);
    if (st)
        console_reply_out(r, &o);
    console_out_free(&o);
    return st == 0;
}

static void set_cookie(front_req_t *r, struct MHD_Response *resp, const char *sid, long max_age)
{
    char c[256];
    snprintf(c, sizeof c, "%s=%s; Path=/console; Max-Age=%ld; HttpOnly; SameSite=Strict%s",
             CONSOLE_COOKIE, sid, max_age, s3h_req_secure(r) ? "; Secure" : "");
    front_resp_header(resp, MHD_HTTP_HEADER_SET_COOKIE, c);
}

static json_t *who_json(const front_req_t *r, const char *csrf, time_t expires)
{
    return json_pack("{s:o,s:o,s:o,s:b,s:s,s:I}", "user",
                     console_jstr(r->who.kind == AUTH_PRINCIPAL_ROOT ? "root" : r->who.user), "arn",
                     console_jstr(r->who.arn), "access_key", console_jstr(r->who.access_key),
                     "root", r->who.kind == AUTH_PRINCIPAL_ROOT, "csrf", csrf, "expires",
                     (json_int_t)expires);
}

static void login_finish(front_req_t *r)
{
    json_error_t jerr;
    json_t *j = json_loadb(r->buf.data ? r->buf.data : "", r->buf.len, 0, &jerr);
    const char *ak = j ? json_string_value(json_object_get(j, "access_key")) : NULL;
    const char *sk = j ? json_string_value(json_object_get(j, "secret_key")) : NULL;
    if (!ak || !sk || !*ak || !*sk || strlen(ak) > 128 || strlen(sk) > IDENT_SECRET_MAX) {
        json_decref(j);
        console_reply_error(r, 400, "InvalidRequest",
                            "the login body must be a JSON object with access_key and secret_key "
                            "(strings of 1 to 128 characters)");
        return;
    }
    bool ok = check_key(r, ak, sk);
    /* The secret is not kept anywhere: wipe the body that carried it. */
    memset(r->buf.data, 0, r->buf.len);
    json_decref(j);
    if (!ok)
        return;
    if (!check_permission(r)) {
        wh_info(MOD, "login refused id=%s who=%s: no %s", r->id, r->who.arn, CONSOLE_ACTION);
        return;
    }
    char sid[CONSOLE_SID_LEN + 1], csrf[CONSOLE_SID_LEN + 1];
    time_t now = time(NULL);
    if (!console_session_create(sessions(r), &r->who, now, sid, csrf)) {
        console_reply_error(r, 500, "InternalError", "no random bytes for a session id");
        return;
    }
    wh_info(MOD, "login id=%s who=%s", r->id, r->who.arn);
    json_t *wj = who_json(r, csrf, now + CONSOLE_SESSION_TTL_S);
    char *s = wj ? json_dumps(wj, JSON_COMPACT) : NULL;
    json_decref(wj);
    memset(csrf, 0, sizeof csrf);
    if (!s) {
        console_session_drop(sessions(r), sid);
        console_reply_error(r, 500, "InternalError", "out of memory building the reply");
        return;
    }
    struct MHD_Response *resp = front_resp_buffer(s, strlen(s));
    if (resp)
        set_cookie(r, resp, sid, CONSOLE_SESSION_TTL_S);
    memset(sid, 0, sizeof sid);
    reply_resp(r, 200, resp, "application/json", strlen(s));
}

static void logout(front_req_t *r, const char *sid)
{
    console_session_drop(sessions(r), sid);
    char *s = strdup("{\"ok\":true}");
    struct MHD_Response *resp = s ? front_resp_buffer(s, strlen(s)) : NULL;
    if (resp)
        set_cookie(r, resp, "", 0);
    reply_resp(r, 200, resp, "application/json", s ? strlen(s) : 0);
}

/* The Origin rule: a POST must name this server; any other request may omit Origin (a
 * same-origin GET need not send it) but not name another. */
static bool origin_ok(front_req_t *r, bool post)
{
    const char *origin = front_hdr(r, "origin");
    if (!origin && !post)
        return true;
    if (console_origin_ok(origin, front_hdr(r, "host"), s3h_req_secure(r)))
        return true;
    console_reply_error(r, 403, "CrossOriginRefused",
                        origin ? "the Origin header names another site"
                               : "a POST to the console must carry an Origin header");
    return false;
}

static void api_begin(front_req_t *r, const char *api)
{
    bool post = strcmp(r->method, "POST") == 0, get = strcmp(r->method, "GET") == 0;
    if (!origin_ok(r, post))
        return;
    if (strcmp(api, "login") == 0) {
        if (!post) {
            console_reply_error(r, 405, "MethodNotAllowed", "log in with POST");
            return;
        }
        const char *ct = front_hdr(r, "content-type");
        if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
            console_reply_error(r, 415, "UnsupportedMediaType",
                                "the login body must be application/json");
            return;
        }
        if (!r->body_len || r->body_len > CON_LOGIN_MAX) {
            console_reply_error(r, 400, "InvalidRequest",
                                "the login body needs a Content-Length of 1 to 4096 bytes");
            return;
        }
        r->body = FRONT_BODY_BUFFER; /* login_finish once it is read */
        return;
    }
    if (r->body_len || front_hdr(r, "transfer-encoding")) {
        /* Only the login has a body; refused before any lookup (this runs on an event thread
         * for a request with a body). */
        console_reply_error(r, 400, "InvalidRequest", "the console's API takes no request body");
        return;
    }
    char sid[CONSOLE_SID_LEN + 1], csrf[CONSOLE_SID_LEN + 1];
    auth_principal_t who;
    time_t expires;
    if (!console_cookie_sid(front_hdr(r, "cookie"), sid) ||
        !console_session_get(sessions(r), sid, time(NULL), &who, csrf, &expires)) {
        console_reply_error(r, 401, "NoSession", "log in first (no live console session)");
        return;
    }
    bool session_get = get && strcmp(api, "session") == 0;
    const char *tok = front_hdr(r, CONSOLE_CSRF_HEADER);
    if (!session_get && (!tok || !console_str_eq(tok, csrf))) {
        console_reply_error(r, 403, "CsrfTokenMissing",
                            "the request needs the session's token in the x-wharf-csrf header");
        return;
    }
    if (post && strcmp(api, "logout") == 0) {
        logout(r, sid);
        return;
    }
    /* The key must still be Active, and the policy still grant the console. */
    if (!check_key(r, who.access_key, NULL)) {
        console_session_drop(sessions(r), sid);
        return;
    }
    if (!check_permission(r))
        return;
    if (!get && !r->head) {
        console_reply_error(r, 405, "MethodNotAllowed", "the console's API is read with GET");
        return;
    }
    static const struct {
        const char *name;
        void (*fn)(front_req_t *r);
    } eps[] = {
        {"cluster", console_api_cluster},   {"buckets", console_api_buckets},
        {"objects", console_api_objects},   {"head", console_api_head},
        {"download", console_api_download}, {"metrics", console_api_metrics},
        {"errors", console_api_errors},
    };
    if (session_get) {
        console_reply_json(r, 200, who_json(r, csrf, expires));
        return;
    }
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++)
        if (strcmp(api, eps[i].name) == 0) {
            eps[i].fn(r);
            return;
        }
    console_reply_error(r, 404, "NoSuchEndpoint", "the console's API has no such endpoint");
}

/* ---- the application ---------------------------------------------------------------------- */

static void con_begin(front_req_t *r)
{
    const char *p = r->path;
    if (strncmp(p, "/console/api/", 13) == 0)
        api_begin(r, p + 13);
    else
        serve_file(r, p);
}

static void con_finish(front_req_t *r)
{
    if (strcmp(r->path, "/console/api/login") == 0)
        login_finish(r);
    else
        console_reply_error(r, 500, "InternalError", "no finish step for this request");
}

static void con_cleanup(front_req_t *r)
{
    s3h_authz_release(r);
    if (r->buf.data)
        memset(r->buf.data, 0, r->buf.len); /* a login body held a secret */
}

static void con_body_digest(front_req_t *r, const void *p, size_t n)
{
    (void)r, (void)p, (void)n;
}

static wh_status_t con_start(front_t *s, void **state)
{
    (void)s;
    *state =
        console_sessions_new(CONSOLE_MAX_SESSIONS, CONSOLE_SESSION_TTL_S, CONSOLE_SESSION_IDLE_S);
    return *state ? WH_OK : WH_ERR_NOMEM;
}

static void con_stop(void *state)
{
    console_sessions_free(state);
}

const front_app_ops_t console_app = {
    .begin = con_begin,
    .finish = con_finish,
    .cleanup = con_cleanup,
    .body_digest = con_body_digest,
    .start = con_start,
    .stop = con_stop,
};
