/* SPDX-License-Identifier: Apache-2.0 */
/* Identity: who signed a request, and the IAM users and access keys behind it.
 *
 * Root is the operator's key pair (WHARF_ACCESS_KEY / WHARF_SECRET_KEY); its lookup never
 * touches the database. Every other access key is a row of the metadata store
 * (meta_key_get: one indexed query per request, no cache, so a deleted or Inactive key fails
 * at the very next request, in every gateway). Secrets are sealed with AES-256-GCM (base/seal.h)
 * under the server key, with the access key id as additional data; the server key is a file
 * of 64 hex characters (--server-key-file / WHARF_SERVER_KEY_FILE, or DIR/server.key, created
 * 0600 on first use; every gateway of one PostgreSQL must share it).
 *
 * Used by the SigV4 step (http.c), the IAM API (iam.c) and `wharfd user|key` (user_cmd.c). */
#ifndef WH_IDENT_IDENTITY_H
#define WH_IDENT_IDENTITY_H

#include "base/seal.h"
#include "base/status.h"
#include "auth/authz.h"
#include "meta/meta.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#define IDENT_DEFAULT_ACCOUNT "000000000000"
#define IDENT_SECRET_MAX 128

typedef struct ident ident_t;

typedef struct ident_config {
    meta_t *meta;                /* not owned */
    const char *key_file;        /* NULL: no server key (users' keys cannot be used) */
    bool create_key;             /* create key_file (0600) when it does not exist */
    const char *account_id;      /* 12 digits; NULL: IDENT_DEFAULT_ACCOUNT */
    const char *root_access_key; /* NULL in the commands (no root there) */
} ident_config_t;

wh_status_t ident_open(const ident_config_t *cfg, ident_t **out);
void ident_close(ident_t *id); /* NULL-safe; wipes the key */
const char *ident_account(const ident_t *id);
meta_t *ident_meta(const ident_t *id);
bool ident_has_key(const ident_t *id);
/* Seals n bytes under the server key (base/seal.h; aad binds the text to its use), or opens a
 * sealed text of exactly n bytes into out (encryption at rest: SSE-S3's data keys).
 * WH_ERR_UNSUPPORTED: no server key; WH_ERR_AUTH: the text does not open. */
wh_status_t ident_seal(const ident_t *id, const char *aad, const void *pt, size_t n, char *out,
                       size_t cap);
wh_status_t ident_unseal(const ident_t *id, const char *aad, const char *text, void *out, size_t n);

/* The server key file to use: the explicit one (option, else WHARF_SERVER_KEY_FILE), else
 * DIR/server.key when there is a data directory (*create set), else NULL. */
const char *ident_key_path(const char *opt, const char *data_dir, char *buf, size_t cap,
                           bool *create);
/* The account id from the option, else WHARF_ACCOUNT_ID, else the default; NULL (and a message
 * on stderr) when it is not 12 digits. */
const char *ident_account_arg(const char *opt);

/* The root principal of access key ak (id may be NULL: the default account). */
void ident_root(const ident_t *id, const char *ak, auth_principal_t *who);
/* The SigV4 lookup of a user's key: an Active key's secret into secret (cap bytes, at least
 * IDENT_SECRET_MAX + 1) and its principal into who. WH_ERR_NOT_FOUND: unknown, deleted or
 * Inactive (all refused alike); WH_ERR_UNAVAILABLE: the database cannot be reached;
 * WH_ERR_INTERNAL: the secret cannot be unsealed (wrong server key; logged). */
wh_status_t ident_lookup(ident_t *id, const char *access_key, char *secret, size_t cap,
                         auth_principal_t *who);

/* Temporary credentials (session.c). */
#define IDENT_TOKEN_LEN 96
typedef struct ident_session {
    char access_key[21]; /* ASIA + 16 */
    char secret[41];
    char token[IDENT_TOKEN_LEN + 1];
    time_t expires;
} ident_session_t;
/* New credentials that sign as `as` until expires, kept durably; policy (NULL: none) is the
 * session policy, which every request of the session must also pass. */
wh_status_t ident_session_create(ident_t *id, const auth_principal_t *as, time_t expires,
                                 const char *policy, ident_session_t *out);
/* The session policy of a session's key (malloc'd); NOT_FOUND: none (or no such session). */
wh_status_t ident_session_policy(ident_t *id, const char *access_key, char **doc);
/* The SigV4 lookup of temporary credentials: the token must be the session's (WH_ERR_AUTH),
 * the session unexpired (WH_ERR_TIMEOUT); WH_ERR_NOT_FOUND: no such session. */
wh_status_t ident_session_lookup(ident_t *id, const char *access_key, const char *token,
                                 char *secret, size_t cap, auth_principal_t *who);
/* Whether the access key id is a session's (ASIA...). */
#define IDENT_IS_SESSION_KEY(ak) (strncmp((ak), "ASIA", 4) == 0)

/* IAM names: user and policy names [A-Za-z0-9+=,.@_-]{1,max}. */
bool ident_name_valid(const char *name, size_t max);
/* Access key ids given by an operator: 16..128 of [A-Za-z0-9]; secrets 8..128 printable ASCII
 * without spaces. Each returns NULL when valid, else what is wrong. */
const char *ident_ak_invalid(const char *ak);
const char *ident_sk_invalid(const char *sk);

/* A new user with fresh ids. WH_ERR_EXISTS; WH_ERR_INVALID: the name. Memberships and
 * attachments left by a user of the same name deleted with force (wharfd user delete) are
 * dropped first: a new user inherits nothing. */
wh_status_t ident_user_create(ident_t *id, const char *name, meta_user_t *out);
/* A new Active key for user; ak/sk NULL: generated (AKIA + 16, 40-character secret). secret
 * receives the secret in clear (IDENT_SECRET_MAX + 1), to show once. WH_ERR_NOT_FOUND: no such
 * user; WH_ERR_EXISTS: the id is taken (or is root's); WH_ERR_INVALID: ak or sk (msg says
 * why); WH_ERR_UNSUPPORTED: no server key. */
wh_status_t ident_key_create(ident_t *id, const char *user, const char *ak, const char *sk,
                             meta_access_key_t *out, char *secret, char *msg, size_t msglen);
/* The ARN of user name. */
void ident_user_arn(const ident_t *id, const char *name, char *out, size_t cap);
/* The user row that holds the keys the root makes through IAM: not an IAM name (':' is not
 * allowed in one), so no CreateUser can take it; its keys sign as the root. */
#define IDENT_ROOT_USER ":root"
/* The IAM record kinds tied to a user (s3ctl/iam_int.h has them all): its Path (key: the user
 * name), its memberships (user|group and group|user) and attached policies (user|ARN). */
#define IDENT_REC_USER_PATH "upath"
#define IDENT_REC_UMEMBER "umember"
#define IDENT_REC_GMEMBER "gmember"
#define IDENT_REC_UATTACH "uattach"

#endif
