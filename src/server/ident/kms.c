/* SPDX-License-Identifier: Apache-2.0 */
/* The key service's master keys (kms.h). A key's row in kms_keys is a document of lines:
 *   "wk1 <state> <created> <deletion>"
 *   one line per version: its 32 bytes sealed under the server key, with the additional data
 *   "kms:<id>:<version>" (a version cannot be moved to another key or number).
 * A change replaces the document only while it is the one read (meta_kms_key_put), retried a
 * bounded number of times, so concurrent rotations on two gateways both land. */
#include "ident/kms.h"
#include "base/digest.h"
#include "base/seal.h"
#include "base/util.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KMS_MAT_LEN 32
#define KMS_LINE_MAX WH_SEAL_TEXT_LEN(KMS_MAT_LEN)
#define KMS_VERSIONS_MAX 1000
#define KMS_RETRIES 8

static const char *const g_state[] = {"Enabled", "Disabled", "PendingDeletion"};

const char *ident_kms_state_name(ident_kms_state_t s)
{
    return (unsigned)s < 3 ? g_state[s] : "Unavailable";
}

bool ident_kms_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > IDENT_KMS_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

const char *ident_kms_ref_id(const char *ref, char out[IDENT_KMS_ID_MAX + 1])
{
    if (!ref)
        return NULL;
    const char *p = ref;
    if (strncmp(p, "arn:", 4) == 0) {
        /* arn:aws:kms:<region>:<account>:key/<id> or :alias/<id> */
        int colons = 0;
        for (const char *q = p; *q; q++)
            if (*q == ':' && ++colons == 5) {
                p = q + 1;
                break;
            }
        if (colons != 5 || strncmp(ref, "arn:aws:kms:", 12) != 0)
            return NULL;
        if (strncmp(p, "key/", 4) == 0)
            p += 4;
        else if (strncmp(p, "alias/", 6) == 0)
            p += 6;
        else
            return NULL;
    } else if (strncmp(p, "alias/", 6) == 0) {
        p += 6;
    }
    if (!ident_kms_id_valid(p))
        return NULL;
    snprintf(out, IDENT_KMS_ID_MAX + 1, "%s", p);
    return out;
}

/* ---- the document ---- */

typedef struct {
    ident_kms_key_t k;
    char *doc;         /* as read (the compare of the next write) */
    const char *lines; /* the version lines, within doc */
} kms_doc_t;

static wh_status_t doc_parse(const char *id, char *doc, kms_doc_t *d)
{
    memset(d, 0, sizeof *d);
    d->doc = doc;
    char state[24];
    long long created = 0, deletion = 0;
    int used = 0;
    if (sscanf(doc, "wk1 %23s %lld %lld%n", state, &created, &deletion, &used) != 3 ||
        doc[used] != '\n')
        return WH_ERR_INVALID;
    snprintf(d->k.id, sizeof d->k.id, "%s", id);
    d->k.state = IDENT_KMS_PENDING_DELETION + 1;
    for (int i = 0; i < 3; i++)
        if (strcmp(state, g_state[i]) == 0)
            d->k.state = (ident_kms_state_t)i;
    if ((unsigned)d->k.state > IDENT_KMS_PENDING_DELETION)
        return WH_ERR_INVALID;
    d->k.created = (time_t)created;
    d->k.deletion = (time_t)deletion;
    d->lines = doc + used + 1;
    for (const char *q = d->lines; *q; q++)
        d->k.versions += *q == '\n';
    return d->k.versions ? WH_OK : WH_ERR_INVALID;
}

/* The header line and the version lines of a new document; extra: one more version line. */
static char *doc_format(const ident_kms_key_t *k, const char *lines, const char *extra)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, "wk1 %s %lld %lld\n%s%s%s", ident_kms_state_name(k->state),
                   (long long)k->created, (long long)k->deletion, lines ? lines : "",
                   extra ? extra : "", extra ? "\n" : "");
    return wh_sbuf_steal(&b);
}

static wh_status_t doc_load(ident_t *id, const char *ref, kms_doc_t *d)
{
    char kid[IDENT_KMS_ID_MAX + 1];
    if (!ident_kms_ref_id(ref, kid))
        return WH_ERR_NOT_FOUND;
    char *doc = NULL;
    wh_status_t st = meta_kms_key_get(ident_meta(id), kid, &doc);
    if (st != WH_OK)
        return st;
    if ((st = doc_parse(kid, doc, d)) != WH_OK)
        free(doc);
    return st;
}

static void seal_aad(const char *kid, unsigned v, char out[96])
{
    snprintf(out, 96, "kms:%s:%u", kid, v);
}

/* A new version's sealed line. */
static wh_status_t new_material(ident_t *id, const char *kid, unsigned v, char line[KMS_LINE_MAX])
{
    uint8_t mat[KMS_MAT_LEN];
    char aad[96];
    seal_aad(kid, v, aad);
    wh_status_t st = wh_random_bytes(mat, sizeof mat) == 0
                         ? ident_seal(id, aad, mat, sizeof mat, line, KMS_LINE_MAX)
                         : WH_ERR_INTERNAL;
    OPENSSL_cleanse(mat, sizeof mat);
    return st;
}

wh_status_t ident_kms_create(ident_t *id, const char *key_id, ident_kms_key_t *out)
{
    char uuid[40];
    if (!ident_has_key(id))
        return WH_ERR_UNSUPPORTED;
    if (!key_id) {
        uint8_t r[16];
        if (wh_random_bytes(r, sizeof r) != 0)
            return WH_ERR_INTERNAL;
        r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
        r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
        snprintf(uuid, sizeof uuid,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
                 r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
                 r[15]);
        key_id = uuid;
    }
    if (!ident_kms_id_valid(key_id))
        return WH_ERR_INVALID;
    char line[KMS_LINE_MAX];
    wh_status_t st = new_material(id, key_id, 1, line);
    if (st != WH_OK)
        return st;
    ident_kms_key_t k = {.state = IDENT_KMS_ENABLED, .versions = 1, .created = time(NULL)};
    snprintf(k.id, sizeof k.id, "%s", key_id);
    char *doc = doc_format(&k, NULL, line);
    if (!doc)
        return WH_ERR_NOMEM;
    st = meta_kms_key_put(ident_meta(id), key_id, NULL, doc);
    free(doc);
    if (st == WH_OK && out)
        *out = k;
    return st;
}

wh_status_t ident_kms_describe(ident_t *id, const char *ref, ident_kms_key_t *out)
{
    kms_doc_t d;
    wh_status_t st = doc_load(id, ref, &d);
    if (st != WH_OK)
        return st;
    *out = d.k;
    free(d.doc);
    return WH_OK;
}

wh_status_t ident_kms_list(ident_t *id, ident_kms_key_t **out, size_t *n)
{
    meta_policy_t *rows = NULL;
    size_t cnt = 0;
    wh_status_t st = meta_kms_key_list(ident_meta(id), &rows, &cnt);
    if (st != WH_OK)
        return st;
    ident_kms_key_t *ks = calloc(cnt ? cnt : 1, sizeof *ks);
    size_t got = 0;
    for (size_t i = 0; ks && i < cnt; i++) {
        kms_doc_t d;
        if (doc_parse(rows[i].name, rows[i].doc, &d) == WH_OK)
            ks[got++] = d.k;
    }
    meta_policies_free(rows, cnt);
    if (!ks)
        return WH_ERR_NOMEM;
    *out = ks;
    *n = got;
    return WH_OK;
}

/* Loads the key, lets change edit it (and give an extra version line), and writes it back if
 * no other writer changed it meanwhile; retried a bounded number of times. */
typedef wh_status_t (*kms_change_fn)(ident_t *id, ident_kms_key_t *k, char line[KMS_LINE_MAX],
                                     bool *extra, void *arg);

static wh_status_t kms_change(ident_t *id, const char *ref, kms_change_fn change, void *arg,
                              ident_kms_key_t *out)
{
    wh_status_t st = WH_ERR_BUSY;
    for (int attempt = 0; attempt < KMS_RETRIES; attempt++) {
        kms_doc_t d;
        if ((st = doc_load(id, ref, &d)) != WH_OK)
            return st;
        char line[KMS_LINE_MAX];
        bool extra = false;
        ident_kms_key_t k = d.k;
        if ((st = change(id, &k, line, &extra, arg)) != WH_OK) {
            free(d.doc);
            return st;
        }
        char *doc = doc_format(&k, d.lines, extra ? line : NULL);
        st = doc ? meta_kms_key_put(ident_meta(id), k.id, d.doc, doc) : WH_ERR_NOMEM;
        free(doc);
        free(d.doc);
        if (st == WH_OK) {
            if (out)
                *out = k;
            return WH_OK;
        }
        if (st != WH_ERR_NOT_FOUND)
            return st;
        st = WH_ERR_BUSY; /* changed meanwhile (or deleted: the next load says) */
    }
    return st;
}

static wh_status_t ch_rotate(ident_t *id, ident_kms_key_t *k, char line[KMS_LINE_MAX], bool *extra,
                             void *arg)
{
    (void)arg;
    if (k->versions >= KMS_VERSIONS_MAX)
        return WH_ERR_TOO_LARGE;
    wh_status_t st = new_material(id, k->id, k->versions + 1, line);
    if (st == WH_OK) {
        k->versions++;
        *extra = true;
    }
    return st;
}

wh_status_t ident_kms_rotate(ident_t *id, const char *ref, ident_kms_key_t *out)
{
    if (!ident_has_key(id))
        return WH_ERR_UNSUPPORTED;
    return kms_change(id, ref, ch_rotate, NULL, out);
}

typedef struct {
    ident_kms_state_t st;
    time_t deletion;
} kms_state_arg_t;

static wh_status_t ch_state(ident_t *id, ident_kms_key_t *k, char line[KMS_LINE_MAX], bool *extra,
                            void *arg)
{
    (void)id;
    (void)line;
    (void)extra;
    kms_state_arg_t *a = arg;
    k->state = a->st;
    k->deletion = a->st == IDENT_KMS_PENDING_DELETION ? a->deletion : 0;
    return WH_OK;
}

wh_status_t ident_kms_set_state(ident_t *id, const char *ref, ident_kms_state_t st, time_t deletion,
                                ident_kms_key_t *out)
{
    kms_state_arg_t a = {st, deletion};
    return kms_change(id, ref, ch_state, &a, out);
}

/* ---- data keys ---- */

/* HMAC-SHA256(version's material, "wharf-sse-kms-data" | salt). */
static wh_status_t derive(ident_t *id, const kms_doc_t *d, unsigned v, const uint8_t *salt,
                          size_t slen, uint8_t key[32])
{
    if (v == 0 || v > d->k.versions)
        return WH_ERR_NOT_FOUND;
    const char *p = d->lines;
    for (unsigned i = 1; i < v; i++)
        p = strchr(p, '\n') + 1;
    size_t n = strcspn(p, "\n");
    char line[KMS_LINE_MAX], aad[96];
    if (n >= sizeof line)
        return WH_ERR_INVALID;
    memcpy(line, p, n);
    line[n] = '\0';
    seal_aad(d->k.id, v, aad);
    uint8_t mat[KMS_MAT_LEN];
    wh_status_t st = ident_unseal(id, aad, line, mat, sizeof mat);
    if (st != WH_OK)
        return st;
    static const char label[18] = "wharf-sse-kms-data"; /* hashed without its NUL */
    uint8_t msg[sizeof label + 64];
    if (slen > 64)
        slen = 64;
    memcpy(msg, label, sizeof label);
    memcpy(msg + sizeof label, salt, slen);
    wh_hmac_sha256(mat, sizeof mat, msg, sizeof label + slen, key);
    OPENSSL_cleanse(mat, sizeof mat);
    return WH_OK;
}

wh_status_t ident_kms_new_data_key(ident_t *id, const char *ref, const uint8_t *salt, size_t slen,
                                   uint8_t key[32], char key_id[IDENT_KMS_ID_MAX + 1],
                                   unsigned *version)
{
    if (!ident_has_key(id))
        return WH_ERR_UNSUPPORTED;
    kms_doc_t d;
    wh_status_t st = doc_load(id, ref, &d);
    if (st != WH_OK)
        return st;
    if (d.k.state != IDENT_KMS_ENABLED)
        st = WH_ERR_PRECONDITION;
    else if ((st = derive(id, &d, d.k.versions, salt, slen, key)) == WH_OK) {
        snprintf(key_id, IDENT_KMS_ID_MAX + 1, "%s", d.k.id);
        *version = d.k.versions;
    }
    free(d.doc);
    return st;
}

wh_status_t ident_kms_data_key(ident_t *id, const char *key_id, unsigned version,
                               const uint8_t *salt, size_t slen, uint8_t key[32])
{
    if (!ident_has_key(id))
        return WH_ERR_UNSUPPORTED;
    kms_doc_t d;
    wh_status_t st = doc_load(id, key_id, &d);
    if (st != WH_OK)
        return st;
    st = d.k.state != IDENT_KMS_ENABLED ? WH_ERR_PRECONDITION
                                        : derive(id, &d, version, salt, slen, key);
    free(d.doc);
    return st;
}
