/* SPDX-License-Identifier: Apache-2.0 */
/* The browser console: wharfd's pages under /console and their API under /console/api/
 * (docs/console.md). A layer of the server above s3ctl: it reads the front's /metrics counters
 * and recent errors, the cluster dashboard the roles give the front (front_config_t
 * admin_cluster), the store's buckets and objects, and decides with the S3 authorization
 * (s3ctl's s3h_authorize and s3h_authz_other) over the identity store (the SigV4 step's key
 * lookup). The roles hand console_app to the front (front_parts_t.console).
 *
 * Login takes an access key and its secret, checked against the identities as SigV4 checks
 * them, and needs wharf:Console in the user's policies (root always has it); the page gets an
 * opaque session id in an HttpOnly, SameSite=Strict cookie (Secure over TLS) and a per-session
 * CSRF token that every API request carries in a header. Sessions live in the server, bounded
 * in number and lifetime.
 *
 * The session table and the cookie parser are pure (no HTTP), for the unit test and the fuzz
 * driver. */
#ifndef WH_CONSOLE_CONSOLE_H
#define WH_CONSOLE_CONSOLE_H

#include "auth/authz.h"
#include "front/front.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

extern const front_app_ops_t console_app;

#define CONSOLE_COOKIE "wharf_console"     /* the session cookie's name */
#define CONSOLE_CSRF_HEADER "x-wharf-csrf" /* the header every API request carries */
#define CONSOLE_ACTION "wharf:Console"     /* the IAM action that admits a user */
#define CONSOLE_SID_LEN 64                 /* hex characters of a session id and a CSRF token */
#define CONSOLE_MAX_SESSIONS 256           /* sessions kept; the least recently used goes first */
#define CONSOLE_SESSION_TTL_S (8 * 3600)   /* a session ends this long after its login */
#define CONSOLE_SESSION_IDLE_S (30 * 60)   /* or after this long unused */

/* The session id of a Cookie header value: the first CONSOLE_COOKIE pair, whose value must be
 * exactly CONSOLE_SID_LEN lowercase hex characters. False: none, or malformed. */
bool console_cookie_sid(const char *cookie, char sid[CONSOLE_SID_LEN + 1]);

/* An Origin header names the server itself: scheme (https when tls) and the Host header's
 * host[:port], compared exactly (ASCII case-insensitive). False for "null" and any other. */
bool console_origin_ok(const char *origin, const char *host, bool tls);

typedef struct console_sessions console_sessions_t;

/* A table of at most max sessions, each ending ttl_s after its creation or idle_s after its
 * last use. NULL: out of memory. */
console_sessions_t *console_sessions_new(size_t max, unsigned ttl_s, unsigned idle_s);
void console_sessions_free(console_sessions_t *t); /* NULL-safe; wipes the table */
/* A new session of who at now: its id and CSRF token (fresh random, hex). The table keeps the
 * id's SHA-256 only. When full, the least recently used session is dropped. False: no random
 * bytes. */
bool console_session_create(console_sessions_t *t, const auth_principal_t *who, time_t now,
                            char sid[CONSOLE_SID_LEN + 1], char csrf[CONSOLE_SID_LEN + 1]);
/* The live session of sid at now (its last use becomes now): its principal, CSRF token and
 * end time. False: unknown or ended (an ended one is dropped). */
bool console_session_get(console_sessions_t *t, const char *sid, time_t now, auth_principal_t *who,
                         char csrf[CONSOLE_SID_LEN + 1], time_t *expires);
/* Ends sid's session; false when there was none. */
bool console_session_drop(console_sessions_t *t, const char *sid);
size_t console_session_count(console_sessions_t *t);
/* Two strings equal, in time that depends on their lengths only. */
bool console_str_eq(const char *a, const char *b);

#endif
