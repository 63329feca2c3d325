/* SPDX-License-Identifier: Apache-2.0 */
/* The key service wharfd runs itself (SSE-KMS): named master keys, each version 32 random
 * bytes sealed under the server key and kept in the metadata (kms_keys), so every gateway of
 * one PostgreSQL shares them. An object's data key is derived from the key version and the
 * object's salt; the object's row names the key id and version, never key material.
 *
 * A key is referred to by its id ("testkey-1", or the UUID CreateKey made), "alias/<id>", or
 * the ARN forms "arn:aws:kms:<region>:<account>:key/<id>" and "...:alias/<id>". */
#ifndef WH_IDENT_KMS_H
#define WH_IDENT_KMS_H

#include "ident/identity.h"

#include <stdint.h>
#include <time.h>

#define IDENT_KMS_ID_MAX 64

typedef enum {
    IDENT_KMS_ENABLED = 0,
    IDENT_KMS_DISABLED,
    IDENT_KMS_PENDING_DELETION,
} ident_kms_state_t;

typedef struct ident_kms_key {
    char id[IDENT_KMS_ID_MAX + 1];
    ident_kms_state_t state;
    unsigned versions; /* the current version is the last */
    time_t created;
    time_t deletion; /* PendingDeletion: when it was scheduled for */
} ident_kms_key_t;

const char *ident_kms_state_name(ident_kms_state_t s); /* "Enabled", ... (KMS's KeyState) */
/* The key id that ref names (see above), or NULL when ref is not of those forms. */
const char *ident_kms_ref_id(const char *ref, char out[IDENT_KMS_ID_MAX + 1]);
/* Whether id is 1-64 of A-Z a-z 0-9 - _ . (the ids wharf accepts). */
bool ident_kms_id_valid(const char *id);

/* Creates a key with one version. id NULL: a random UUID. WH_ERR_EXISTS, WH_ERR_INVALID (a bad
 * id), WH_ERR_UNSUPPORTED (no server key). */
wh_status_t ident_kms_create(ident_t *id, const char *key_id, ident_kms_key_t *out);
wh_status_t ident_kms_describe(ident_t *id, const char *ref, ident_kms_key_t *out); /* NOT_FOUND */
wh_status_t ident_kms_list(ident_t *id, ident_kms_key_t **out, size_t *n);          /* free() */
/* A new version becomes current; objects written under older versions stay readable. */
wh_status_t ident_kms_rotate(ident_t *id, const char *ref, ident_kms_key_t *out);
/* Enabled, Disabled, or PendingDeletion at `deletion` (ScheduleKeyDeletion; nothing is deleted:
 * the key stays unusable until enabled again, so no object is lost by it). */
wh_status_t ident_kms_set_state(ident_t *id, const char *ref, ident_kms_state_t st, time_t deletion,
                                ident_kms_key_t *out);

/* The data key of a new object under the key ref (its current version) and salt, with the key
 * id and version to store. WH_ERR_NOT_FOUND: no such key; WH_ERR_PRECONDITION: the key is not
 * Enabled; WH_ERR_UNSUPPORTED: no server key. */
wh_status_t ident_kms_new_data_key(ident_t *id, const char *ref, const uint8_t *salt, size_t slen,
                                   uint8_t key[32], char key_id[IDENT_KMS_ID_MAX + 1],
                                   unsigned *version);
/* The data key of an object stored under key_id's version and salt; the same refusals (a
 * key that is not Enabled cannot decrypt, as in KMS). */
wh_status_t ident_kms_data_key(ident_t *id, const char *key_id, unsigned version,
                               const uint8_t *salt, size_t slen, uint8_t key[32]);

/* ---- the KMS JSON API's request body (TrentService.*, kms_req.c) ---- */

typedef struct ident_kms_req {
    char key_id[288]; /* "" when absent */
    bool has_limit;
    unsigned limit; /* ListKeys: 1..1000 */
    char marker[IDENT_KMS_ID_MAX + 1];
    bool has_window;
    unsigned window_days; /* ScheduleKeyDeletion: 7..30 */
} ident_kms_req_t;

/* Parses a request body (a JSON object; empty: {}). WH_ERR_INVALID: malformed or a field of
 * the wrong type or range; WH_ERR_UNSUPPORTED: a field wharf's key service does not serve
 * (Tags, Policy, an asymmetric KeySpec, a Description: it stores none, ...). msg names it. */
wh_status_t ident_kms_req_parse(const char *body, size_t len, ident_kms_req_t *out, char *msg,
                                size_t cap);

#endif
