/* The console's HTTP side: its pages, login and logout, the session and CSRF checks every API
 * request passes, and the replies (console.h says what it is; docs/console.md what it shows).
 *
 * A request under /console reaches srv_console_app (the front skips SigV4 there). Its files
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

static con_sessions_t *sessions(const srv_req_t *r)
{
    return r->srv->console_state;
}

/* ---- replies ----------------------------------------------------------------------------- */

static void sec_headers(struct MHD_Response *resp)
{
    srv_resp_header(resp, "Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                    "connect-src 'self'; form-action 'self'; base-uri 'none'; "
                    "frame-ancestors 'none'");
    srv_resp_header(resp, "X-Frame-Options", "DENY");
    srv_resp_header(resp, "X-Content-Type-Options", "nosniff");
    srv_resp_header(resp, "Referrer-Policy", "no-referrer");
    srv_resp_header(resp, "Cache-Control", "no-store");
}

static void reply_resp(srv_req_t *r, int status, struct MHD_Response *resp, const char *type,
                       size_t n)
{
    if (resp) {
        if (type)
            srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        sec_headers(resp);
    }
    if (!r->head)
        r->tx_body = n;
    srv_reply(r, status, resp);
}

void con_reply_bytes(srv_req_t *r, int status, const char *type, void *data, size_t n,
                     const char *disposition)
{
    struct MHD_Response *resp = srv_resp_buffer(data, n);
    if (resp && disposition)
        srv_resp_header(resp, "Content-Disposition", disposition);
    reply_resp(r, status, resp, type, n);
}

void con_reply_json(srv_req_t *r, int status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        con_reply_error(r, 500, "InternalError", "out of memory building the reply");
        return;
    }
    con_reply_bytes(r, status, "application/json", s, strlen(s), NULL);
}

json_t *con_jstr(const char *s)
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

void con_reply_error(srv_req_t *r, int status, const char *code, const char *msg)
{
    r->err_code = code;
    r->err_msg = msg;
    json_t *j =
        json_pack("{s:s,s:o,s:s}", "error", code, "message", con_jstr(msg), "request_id", r->id);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory building the reply");
        return;
    }
    con_reply_bytes(r, status, "application/json", s, strlen(s), NULL);
}

void con_out_init(srv_out_t *o)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(&o->xml);
    wh_sbuf_init(&o->hdrs);
}

void con_out_free(srv_out_t *o)
{
    if (o->resp)
        MHD_destroy_response(o->resp);
    o->resp = NULL;
    wh_sbuf_free(&o->xml);
    wh_sbuf_free(&o->hdrs);
}

void con_reply_out(srv_req_t *r, const srv_out_t *o)
{
    con_reply_error(r, o->status ? o->status : 500, o->code ? o->code : "InternalError", o->msg);
}

/* ---- the pages --------------------------------------------------------------------------- */

static void serve_file(srv_req_t *r, const char *path)
{
    if (strcmp(r->method, "GET") != 0 && !r->head) {
        con_reply_error(r, 405, "MethodNotAllowed", "the console's pages are read with GET");
        return;
    }
    if (strcmp(path, "/console") == 0) {
        struct MHD_Response *resp = srv_resp_empty();
        if (resp)
            srv_resp_header(resp, MHD_HTTP_HEADER_LOCATION, "/console/");
        reply_resp(r, 302, resp, NULL, 0);
        return;
    }
    const char *want = strcmp(path, "/console/") == 0 ? "/console/index.html" : path;
    for (size_t i = 0; i < con_assets_count; i++) {
        if (strcmp(con_assets[i].path, want) != 0)
            continue;
        struct MHD_Response *resp = MHD_create_response_from_buffer(
            con_assets[i].len, (void *)con_assets[i].data, MHD_RESPMEM_PERSISTENT);
        reply_resp(r, 200, resp, con_assets[i].type, con_assets[i].len);
        return;
    }
    con_reply_error(r, 404, "NoSuchKey", "the console has no such page");
}

/* ---- login, the session, logout ---------------------------------------------------------- */

static const srv_op_t g_console_op = {
    .level = SRV_AT_SERVICE, .method = "GET", .api = SRV_API_CONSOLE, .action = CON_ACTION};

/* The principal of access key ak, as the SigV4 step finds it (root's pair, else an Active
 * key of the identities), into r->who, and whether secret is its secret; NULL secret: only
 * that the key is still Active. False with a reply sent. */
static bool check_key(srv_req_t *r, const char *ak, const char *secret)
{
    const char *have = srv_req_secret(r, ak);
    bool ok = have && (!secret || con_str_eq(have, secret));
    srv_req_secret_wipe(r);
    if (ok)
        return true;
    memset(&r->who, 0, sizeof r->who);
    if (r->ident_err == WH_ERR_UNAVAILABLE)
        con_reply_error(r, 503, "ServiceUnavailable",
                        "the metadata database holding access keys is unreachable");
    else if (secret)
        con_reply_error(r, 403, "InvalidCredentials", "the access key or its secret is wrong");
    else
        con_reply_error(r, 401, "NoSession", "the session's access key is no longer active");
    return false;
}

/* wharf:Console for r->who (root: always). False with a reply sent. */
static bool check_permission(srv_req_t *r)
{
    srv_out_t o;
    con_out_init(&o);
    int st = srv_authorize(r, &g_console_op, &o);
    if (st)
        con_reply_out(r, &o);
    con_out_free(&o);
    return st == 0;
}

static void set_cookie(srv_req_t *r, struct MHD_Response *resp, const char *sid, long max_age)
{
    char c[256];
    snprintf(c, sizeof c, "%s=%s; Path=/console; Max-Age=%ld; HttpOnly; SameSite=Strict%s",
             CON_COOKIE, sid, max_age, srv_req_secure(r) ? "; Secure" : "");
    srv_resp_header(resp, MHD_HTTP_HEADER_SET_COOKIE, c);
}

static json_t *who_json(const srv_req_t *r, const char *csrf, time_t expires)
{
    return json_pack("{s:o,s:o,s:o,s:b,s:s,s:I}", "user",
                     con_jstr(r->who.kind == S3_PRINCIPAL_ROOT ? "root" : r->who.user), "arn",
                     con_jstr(r->who.arn), "access_key", con_jstr(r->who.access_key), "root",
                     r->who.kind == S3_PRINCIPAL_ROOT, "csrf", csrf, "expires",
                     (json_int_t)expires);
}

static void login_finish(srv_req_t *r)
{
    json_error_t jerr;
    json_t *j = json_loadb(r->buf.data ? r->buf.data : "", r->buf.len, 0, &jerr);
    const char *ak = j ? json_string_value(json_object_get(j, "access_key")) : NULL;
    const char *sk = j ? json_string_value(json_object_get(j, "secret_key")) : NULL;
    if (!ak || !sk || !*ak || !*sk || strlen(ak) > 128 || strlen(sk) > SRV_SECRET_MAX) {
        json_decref(j);
        con_reply_error(r, 400, "InvalidRequest",
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
        wh_info(MOD, "login refused id=%s who=%s: no %s", r->id, r->who.arn, CON_ACTION);
        return;
    }
    char sid[CON_SID_LEN + 1], csrf[CON_SID_LEN + 1];
    time_t now = time(NULL);
    if (!con_session_create(sessions(r), &r->who, now, sid, csrf)) {
        con_reply_error(r, 500, "InternalError", "no random bytes for a session id");
        return;
    }
    wh_info(MOD, "login id=%s who=%s", r->id, r->who.arn);
    json_t *wj = who_json(r, csrf, now + CON_SESSION_TTL_S);
    char *s = wj ? json_dumps(wj, JSON_COMPACT) : NULL;
    json_decref(wj);
    memset(csrf, 0, sizeof csrf);
    if (!s) {
        con_session_drop(sessions(r), sid);
        con_reply_error(r, 500, "InternalError", "out of memory building the reply");
        return;
    }
    struct MHD_Response *resp = srv_resp_buffer(s, strlen(s));
    if (resp)
        set_cookie(r, resp, sid, CON_SESSION_TTL_S);
    memset(sid, 0, sizeof sid);
    reply_resp(r, 200, resp, "application/json", strlen(s));
}

static void logout(srv_req_t *r, const char *sid)
{
    con_session_drop(sessions(r), sid);
    char *s = strdup("{\"ok\":true}");
    struct MHD_Response *resp = s ? srv_resp_buffer(s, strlen(s)) : NULL;
    if (resp)
        set_cookie(r, resp, "", 0);
    reply_resp(r, 200, resp, "application/json", s ? strlen(s) : 0);
}

/* The Origin rule: a POST must name this server; any other request may omit Origin (a
 * same-origin GET need not send it) but not name another. */
static bool origin_ok(srv_req_t *r, bool post)
{
    const char *origin = srv_hdr(r, "origin");
    if (!origin && !post)
        return true;
    if (con_origin_ok(origin, srv_hdr(r, "host"), srv_req_secure(r)))
        return true;
    con_reply_error(r, 403, "CrossOriginRefused",
                    origin ? "the Origin header names another site"
                           : "a POST to the console must carry an Origin header");
    return false;
}

static void api_begin(srv_req_t *r, const char *api)
{
    bool post = strcmp(r->method, "POST") == 0, get = strcmp(r->method, "GET") == 0;
    if (!origin_ok(r, post))
        return;
    if (strcmp(api, "login") == 0) {
        if (!post) {
            con_reply_error(r, 405, "MethodNotAllowed", "log in with POST");
            return;
        }
        const char *ct = srv_hdr(r, "content-type");
        if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
            con_reply_error(r, 415, "UnsupportedMediaType",
                            "the login body must be application/json");
            return;
        }
        if (!r->body_len || r->body_len > CON_LOGIN_MAX) {
            con_reply_error(r, 400, "InvalidRequest",
                            "the login body needs a Content-Length of 1 to 4096 bytes");
            return;
        }
        r->body = SRV_BODY_BUFFER; /* login_finish once it is read */
        return;
    }
    if (r->body_len || srv_hdr(r, "transfer-encoding")) {
        /* Only the login has a body; refused before any lookup (this runs on an event thread
         * for a request with a body). */
        con_reply_error(r, 400, "InvalidRequest", "the console's API takes no request body");
        return;
    }
    char sid[CON_SID_LEN + 1], csrf[CON_SID_LEN + 1];
    s3_principal_t who;
    time_t expires;
    if (!con_cookie_sid(srv_hdr(r, "cookie"), sid) ||
        !con_session_get(sessions(r), sid, time(NULL), &who, csrf, &expires)) {
        con_reply_error(r, 401, "NoSession", "log in first (no live console session)");
        return;
    }
    bool session_get = get && strcmp(api, "session") == 0;
    const char *tok = srv_hdr(r, CON_CSRF_HEADER);
    if (!session_get && (!tok || !con_str_eq(tok, csrf))) {
        con_reply_error(r, 403, "CsrfTokenMissing",
                        "the request needs the session's token in the x-wharf-csrf header");
        return;
    }
    if (post && strcmp(api, "logout") == 0) {
        logout(r, sid);
        return;
    }
    /* The key must still be Active, and the policy still grant the console. */
    if (!check_key(r, who.access_key, NULL)) {
        con_session_drop(sessions(r), sid);
        return;
    }
    if (!check_permission(r))
        return;
    if (!get && !r->head) {
        con_reply_error(r, 405, "MethodNotAllowed", "the console's API is read with GET");
        return;
    }
    static const struct {
        const char *name;
        void (*fn)(srv_req_t *r);
    } eps[] = {
        {"cluster", con_api_cluster}, {"buckets", con_api_buckets},   {"objects", con_api_objects},
        {"head", con_api_head},       {"download", con_api_download}, {"metrics", con_api_metrics},
        {"errors", con_api_errors},
    };
    if (session_get) {
        con_reply_json(r, 200, who_json(r, csrf, expires));
        return;
    }
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++)
        if (strcmp(api, eps[i].name) == 0) {
            eps[i].fn(r);
            return;
        }
    con_reply_error(r, 404, "NoSuchEndpoint", "the console's API has no such endpoint");
}

/* ---- the application ---------------------------------------------------------------------- */

static void con_begin(srv_req_t *r)
{
    const char *p = r->path;
    if (strncmp(p, "/console/api/", 13) == 0)
        api_begin(r, p + 13);
    else
        serve_file(r, p);
}

static void con_finish(srv_req_t *r)
{
    if (strcmp(r->path, "/console/api/login") == 0)
        login_finish(r);
    else
        con_reply_error(r, 500, "InternalError", "no finish step for this request");
}

static void con_cleanup(srv_req_t *r)
{
    srv_authz_release(r);
    if (r->buf.data)
        memset(r->buf.data, 0, r->buf.len); /* a login body held a secret */
}

static void con_body_digest(srv_req_t *r, const void *p, size_t n)
{
    (void)r, (void)p, (void)n;
}

static wh_status_t con_start(srv_t *s, void **state)
{
    (void)s;
    *state = con_sessions_new(CON_MAX_SESSIONS, CON_SESSION_TTL_S, CON_SESSION_IDLE_S);
    return *state ? WH_OK : WH_ERR_NOMEM;
}

static void con_stop(void *state)
{
    con_sessions_free(state);
}

const srv_app_ops_t srv_console_app = {
    .begin = con_begin,
    .finish = con_finish,
    .cleanup = con_cleanup,
    .body_digest = con_body_digest,
    .start = con_start,
    .stop = con_stop,
};
