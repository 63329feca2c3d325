/* SPDX-License-Identifier: Apache-2.0 */
/* Identity: the server key, principals, the SigV4 lookup of users' keys, and creating users
 * and keys. See identity.h. */
#include "ident/identity.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MOD "identity"

/* Secrets already opened, by access key and the sealed text they came from: a user's
 * requests skip the AES-GCM open while the stored key row is unchanged (the row itself is
 * read through the store's generation-checked cache). Direct-mapped and bounded. */
#define IDENT_OPENED_SLOTS 64u
typedef struct ident_opened {
    pthread_mutex_t mu;
    char ak[META_AK_MAX + 1];
    char sealed[META_SEALED_MAX];
    char secret[IDENT_SECRET_MAX + 1];
} ident_opened_t;

struct ident {
    meta_t *meta;
    ident_opened_t opened[IDENT_OPENED_SLOTS];
    bool has_key;
    uint8_t key[WH_SEAL_KEY_LEN];
    char account[13];
    char root_ak[IDENT_SECRET_MAX + 1];
    char root_canonical[65];
    bool warned_no_key;
};

/* ---- the server key ---- */

static int key_parse(const char *text, size_t n, uint8_t key[WH_SEAL_KEY_LEN])
{
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        n--;
    if (n != 2 * WH_SEAL_KEY_LEN)
        return -1;
    return wh_hex_decode(text, n, key, WH_SEAL_KEY_LEN) == 0 ? 0 : -1;
}

static wh_status_t key_read(const char *path, uint8_t key[WH_SEAL_KEY_LEN])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? WH_ERR_NOT_FOUND : WH_ERR_IO;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf);
    struct stat sb;
    bool loose = fstat(fd, &sb) == 0 && (sb.st_mode & 077);
    close(fd);
    if (n < 0 || key_parse(buf, (size_t)n, key) != 0) {
        wh_error(MOD,
                 "server key file %s must hold 64 hex characters (32 random bytes), "
                 "e.g. made with: od -An -tx1 -N32 /dev/urandom | tr -d ' \\n'",
                 path);
        memset(buf, 0, sizeof buf);
        return WH_ERR_INVALID;
    }
    memset(buf, 0, sizeof buf);
    if (loose)
        wh_warn(MOD, "server key file %s is readable by group or others; chmod 600 it", path);
    return WH_OK;
}

/* Creates the key file with O_EXCL (two processes starting together: one wins, the other
 * reads what it wrote). */
static wh_status_t key_create(const char *path, uint8_t key[WH_SEAL_KEY_LEN])
{
    uint8_t k[WH_SEAL_KEY_LEN];
    char hex[2 * WH_SEAL_KEY_LEN + 2];
    if (wh_random_bytes(k, sizeof k) != 0)
        return WH_ERR_INTERNAL;
    wh_hex_encode(k, sizeof k, hex);
    strcat(hex, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        memset(k, 0, sizeof k);
        return errno == EEXIST ? key_read(path, key) : WH_ERR_IO;
    }
    size_t len = strlen(hex);
    bool ok = write(fd, hex, len) == (ssize_t)len && fsync(fd) == 0;
    close(fd);
    memset(hex, 0, sizeof hex);
    if (!ok) {
        unlink(path);
        memset(k, 0, sizeof k);
        return WH_ERR_IO;
    }
    memcpy(key, k, sizeof k);
    memset(k, 0, sizeof k);
    wh_info(MOD,
            "created the server key file %s (secrets of access keys are sealed with it; "
            "back it up with the metadata)",
            path);
    return WH_OK;
}

const char *ident_key_path(const char *opt, const char *data_dir, char *buf, size_t cap,
                           bool *create)
{
    *create = false;
    const char *env = getenv("WHARF_SERVER_KEY_FILE");
    if (opt && *opt)
        return opt;
    if (env && *env)
        return env;
    if (data_dir && *data_dir) {
        snprintf(buf, cap, "%s/server.key", data_dir);
        *create = true;
        return buf;
    }
    return NULL;
}

const char *ident_account_arg(const char *opt)
{
    const char *v = opt && *opt ? opt : getenv("WHARF_ACCOUNT_ID");
    if (!v || !*v)
        return IDENT_DEFAULT_ACCOUNT;
    size_t n = strlen(v);
    bool ok = n == 12;
    for (size_t i = 0; ok && i < n; i++)
        ok = v[i] >= '0' && v[i] <= '9';
    if (!ok) {
        fprintf(stderr,
                "wharfd: the account id (--account-id or WHARF_ACCOUNT_ID) must be 12 "
                "digits, got '%s'\n",
                v);
        return NULL;
    }
    return v;
}

wh_status_t ident_open(const ident_config_t *cfg, ident_t **out)
{
    ident_t *id = calloc(1, sizeof *id);
    if (!id)
        return WH_ERR_NOMEM;
    for (unsigned i = 0; i < IDENT_OPENED_SLOTS; i++)
        pthread_mutex_init(&id->opened[i].mu, NULL);
    id->meta = cfg->meta;
    snprintf(id->account, sizeof id->account, "%s",
             cfg->account_id ? cfg->account_id : IDENT_DEFAULT_ACCOUNT);
    if (cfg->root_access_key) {
        snprintf(id->root_ak, sizeof id->root_ak, "%s", cfg->root_access_key);
        wh_sha256_hex(id->root_ak, strlen(id->root_ak), id->root_canonical);
    }
    if (cfg->key_file) {
        wh_status_t st = key_read(cfg->key_file, id->key);
        if (st == WH_ERR_NOT_FOUND && cfg->create_key)
            st = key_create(cfg->key_file, id->key);
        if (st != WH_OK) {
            if (st == WH_ERR_NOT_FOUND)
                wh_error(MOD,
                         "server key file %s does not exist; every process that shares "
                         "the metadata needs the same key file (64 hex characters)",
                         cfg->key_file);
            else if (st == WH_ERR_IO)
                wh_error(MOD, "cannot read or create the server key file %s: %s", cfg->key_file,
                         strerror(errno));
            ident_close(id);
            return st;
        }
        id->has_key = true;
    }
    *out = id;
    return WH_OK;
}

void ident_close(ident_t *id)
{
    if (!id)
        return;
    memset(id->key, 0, sizeof id->key);
    for (unsigned i = 0; i < IDENT_OPENED_SLOTS; i++) {
        memset(id->opened[i].secret, 0, sizeof id->opened[i].secret);
        pthread_mutex_destroy(&id->opened[i].mu);
    }
    free(id);
}

const char *ident_account(const ident_t *id)
{
    return id->account;
}

meta_t *ident_meta(const ident_t *id)
{
    return id->meta;
}

bool ident_has_key(const ident_t *id)
{
    return id->has_key;
}

wh_status_t ident_seal(const ident_t *id, const char *aad, const void *pt, size_t n, char *out,
                       size_t cap)
{
    if (!id->has_key)
        return WH_ERR_UNSUPPORTED;
    return wh_seal(id->key, aad, pt, n, out, cap) == 0 ? WH_OK : WH_ERR_INTERNAL;
}

wh_status_t ident_unseal(const ident_t *id, const char *aad, const char *text, void *out, size_t n)
{
    if (!id->has_key)
        return WH_ERR_UNSUPPORTED;
    char buf[256];
    size_t got = 0;
    wh_status_t s = WH_OK;
    if (n >= sizeof buf || wh_unseal(id->key, aad, text, buf, sizeof buf, &got) != 0 || got != n)
        s = WH_ERR_AUTH;
    else
        memcpy(out, buf, n);
    OPENSSL_cleanse(buf, sizeof buf);
    return s;
}

/* ---- principals and the lookup ---- */

void ident_root(const ident_t *id, const char *ak, auth_principal_t *who)
{
    memset(who, 0, sizeof *who);
    who->kind = AUTH_PRINCIPAL_ROOT;
    if (id && strcmp(ak, id->root_ak) == 0)
        memcpy(who->canonical_id, id->root_canonical, sizeof who->canonical_id);
    else
        wh_sha256_hex(ak, strlen(ak), who->canonical_id);
    snprintf(who->arn, sizeof who->arn, "arn:aws:iam::%s:root",
             id ? id->account : IDENT_DEFAULT_ACCOUNT);
    snprintf(who->access_key, sizeof who->access_key, "%s", ak);
}

void ident_user_arn(const ident_t *id, const char *name, char *out, size_t cap)
{
    /* A user made with a Path keeps it in its IAM record ("/" when it has none). */
    char *path = NULL;
    if (id->meta && meta_rec_get(id->meta, IDENT_REC_USER_PATH, name, &path) != WH_OK) {
        free(path);
        path = NULL;
    }
    snprintf(out, cap, "arn:aws:iam::%s:user%s%s", id->account, path ? path : "/", name);
    free(path);
}

static ident_opened_t *opened_slot(ident_t *id, const char *ak)
{
    return &id->opened[wh_fnv1a(ak) % IDENT_OPENED_SLOTS];
}

static bool opened_get(ident_t *id, const meta_access_key_t *k, char *secret, size_t cap)
{
    ident_opened_t *e = opened_slot(id, k->access_key);
    pthread_mutex_lock(&e->mu);
    bool hit = strcmp(e->ak, k->access_key) == 0 && strcmp(e->sealed, k->secret_sealed) == 0 &&
               strlen(e->secret) < cap;
    if (hit)
        memcpy(secret, e->secret, strlen(e->secret) + 1);
    pthread_mutex_unlock(&e->mu);
    return hit;
}

static void opened_put(ident_t *id, const meta_access_key_t *k, const char *secret)
{
    if (strlen(secret) > IDENT_SECRET_MAX)
        return;
    ident_opened_t *e = opened_slot(id, k->access_key);
    pthread_mutex_lock(&e->mu);
    snprintf(e->ak, sizeof e->ak, "%s", k->access_key);
    snprintf(e->sealed, sizeof e->sealed, "%s", k->secret_sealed);
    snprintf(e->secret, sizeof e->secret, "%s", secret);
    pthread_mutex_unlock(&e->mu);
}

wh_status_t ident_lookup(ident_t *id, const char *access_key, char *secret, size_t cap,
                         auth_principal_t *who)
{
    if (!id || !id->meta)
        return WH_ERR_NOT_FOUND;
    meta_access_key_t k;
    wh_status_t st = meta_key_get(id->meta, access_key, &k);
    if (st != WH_OK)
        return st;
    if (!k.active)
        return WH_ERR_NOT_FOUND; /* Inactive: refused exactly like an unknown key */
    if (!id->has_key) {
        if (!id->warned_no_key) {
            id->warned_no_key = true; /* once: a benign race at worst logs twice */
            wh_error(MOD,
                     "access key %s belongs to user %s, but this process has no server "
                     "key to unseal it (--server-key-file)",
                     access_key, k.user);
        }
        return WH_ERR_NOT_FOUND;
    }
    if (!opened_get(id, &k, secret, cap)) {
        size_t n = 0;
        if (wh_unseal(id->key, k.access_key, k.secret_sealed, secret, cap, &n) != 0) {
            wh_error(MOD,
                     "the secret of access key %s does not open with this server key; "
                     "is the key file the one the key was made with?",
                     access_key);
            return WH_ERR_INTERNAL;
        }
        opened_put(id, &k, secret);
    }
    if (strcmp(k.user, IDENT_ROOT_USER) == 0) {
        /* A key the root made for itself through IAM (CreateAccessKey without UserName). */
        ident_root(id, id->root_ak, who);
        snprintf(who->access_key, sizeof who->access_key, "%s", k.access_key);
        memset(k.secret_sealed, 0, sizeof k.secret_sealed);
        return WH_OK;
    }
    memset(who, 0, sizeof *who);
    who->kind = AUTH_PRINCIPAL_USER;
    snprintf(who->user, sizeof who->user, "%s", k.user);
    snprintf(who->canonical_id, sizeof who->canonical_id, "%s", k.canonical_id);
    ident_user_arn(id, k.user, who->arn, sizeof who->arn);
    snprintf(who->access_key, sizeof who->access_key, "%s", k.access_key);
    memset(k.secret_sealed, 0, sizeof k.secret_sealed);
    return WH_OK;
}

/* ---- names and generated ids ---- */

bool ident_name_valid(const char *name, size_t max)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("+=,.@_-", c)))
            return false;
    }
    return true;
}

const char *ident_ak_invalid(const char *ak)
{
    size_t n = strlen(ak);
    if (n < 16 || n > META_AK_MAX)
        return "an access key id is 16 to 128 characters";
    for (size_t i = 0; i < n; i++)
        if (!((ak[i] >= 'A' && ak[i] <= 'Z') || (ak[i] >= 'a' && ak[i] <= 'z') ||
              (ak[i] >= '0' && ak[i] <= '9')))
            return "an access key id has only letters and digits";
    return NULL;
}

const char *ident_sk_invalid(const char *sk)
{
    size_t n = strlen(sk);
    if (n < 8 || n > IDENT_SECRET_MAX)
        return "a secret key is 8 to 128 characters";
    for (size_t i = 0; i < n; i++)
        if (sk[i] <= ' ' || sk[i] > '~')
            return "a secret key is printable ASCII without spaces";
    return NULL;
}

/* n characters drawn uniformly from alphabet (rejection sampling of random bytes). */
static int random_chars(char *out, size_t n, const char *alphabet)
{
    size_t a = strlen(alphabet), limit = 256 - 256 % a, o = 0;
    uint8_t buf[64];
    for (int guard = 0; o < n && guard < 64; guard++) {
        if (wh_random_bytes(buf, sizeof buf) != 0)
            return -1;
        for (size_t i = 0; i < sizeof buf && o < n; i++)
            if (buf[i] < limit)
                out[o++] = alphabet[buf[i] % a];
    }
    out[o] = '\0';
    return o == n ? 0 : -1;
}

#define UPPER_ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#define SECRET_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/* Drops the memberships and attachments of a user of this name that no longer exists. */
static wh_status_t user_records_purge(ident_t *id, const char *name)
{
    if (meta_user_get(id->meta, name, NULL) == WH_OK)
        return WH_OK; /* it exists: the create will say so */
    char prefix[META_USER_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", name);
    static const char *const kinds[] = {IDENT_REC_UMEMBER, IDENT_REC_UATTACH};
    wh_status_t st = WH_OK;
    for (size_t k = 0; st == WH_OK && k < sizeof kinds / sizeof kinds[0]; k++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        st = meta_rec_list(id->meta, kinds[k], prefix, &rs, &n);
        for (size_t i = 0; st == WH_OK && i < n; i++) {
            if (k == 0) { /* the group's side of the membership */
                char gk[META_USER_MAX * 3 + 2];
                snprintf(gk, sizeof gk, "%s|%s", rs[i].key + strlen(prefix), name);
                st = meta_rec_delete(id->meta, IDENT_REC_GMEMBER, gk);
                st = st == WH_ERR_NOT_FOUND ? WH_OK : st;
            }
            if (st == WH_OK)
                st = meta_rec_delete(id->meta, kinds[k], rs[i].key);
            st = st == WH_ERR_NOT_FOUND ? WH_OK : st;
        }
        meta_recs_free(rs, n);
    }
    if (st == WH_ERR_UNSUPPORTED)
        st = WH_OK; /* a backend without IAM records has none to drop */
    return st;
}

wh_status_t ident_user_create(ident_t *id, const char *name, meta_user_t *out)
{
    if (!ident_name_valid(name, META_USER_MAX) && strcmp(name, IDENT_ROOT_USER) != 0)
        return WH_ERR_INVALID;
    wh_status_t pst = user_records_purge(id, name);
    if (pst != WH_OK)
        return pst;
    meta_user_t u;
    memset(&u, 0, sizeof u);
    snprintf(u.name, sizeof u.name, "%s", name);
    uint8_t raw[32];
    memcpy(u.user_id, "AIDA", 4);
    if (random_chars(u.user_id + 4, 17, UPPER_ALNUM) != 0 || wh_random_bytes(raw, 32) != 0)
        return WH_ERR_INTERNAL;
    wh_hex_encode(raw, sizeof raw, u.canonical_id);
    u.created = time(NULL);
    wh_status_t st = meta_user_create(id->meta, &u);
    if (st == WH_OK && out)
        *out = u;
    return st;
}

wh_status_t ident_key_create(ident_t *id, const char *user, const char *ak, const char *sk,
                             meta_access_key_t *out, char *secret, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    if (!id->has_key) {
        snprintf(msg, msglen,
                 "no server key: start with --server-key-file (or a data "
                 "directory, which keeps DIR/server.key)");
        return WH_ERR_UNSUPPORTED;
    }
    const char *why = NULL;
    if ((ak && (why = ident_ak_invalid(ak))) || (sk && (why = ident_sk_invalid(sk)))) {
        snprintf(msg, msglen, "%s", why);
        return WH_ERR_INVALID;
    }
    meta_access_key_t k;
    memset(&k, 0, sizeof k);
    snprintf(k.user, sizeof k.user, "%s", user);
    if (ak) {
        snprintf(k.access_key, sizeof k.access_key, "%s", ak);
    } else {
        memcpy(k.access_key, "AKIA", 4);
        if (random_chars(k.access_key + 4, 16, UPPER_ALNUM) != 0)
            return WH_ERR_INTERNAL;
    }
    if (id->root_ak[0] && strcmp(k.access_key, id->root_ak) == 0) {
        snprintf(msg, msglen, "access key id %s is the root key's", k.access_key);
        return WH_ERR_EXISTS;
    }
    char sec[IDENT_SECRET_MAX + 1];
    if (sk)
        snprintf(sec, sizeof sec, "%s", sk);
    else if (random_chars(sec, 40, SECRET_CHARS) != 0)
        return WH_ERR_INTERNAL;
    if (wh_seal(id->key, k.access_key, sec, strlen(sec), k.secret_sealed, sizeof k.secret_sealed) !=
        0) {
        memset(sec, 0, sizeof sec);
        return WH_ERR_INTERNAL;
    }
    k.active = true;
    k.created = time(NULL);
    wh_status_t st = meta_key_create(id->meta, &k);
    if (st == WH_OK) {
        if (out)
            *out = k;
        snprintf(secret, IDENT_SECRET_MAX + 1, "%s", sec);
    } else if (st == WH_ERR_EXISTS) {
        snprintf(msg, msglen, "access key id %s is taken", k.access_key);
    } else if (st == WH_ERR_NOT_FOUND) {
        snprintf(msg, msglen, "no user named %s", user);
    }
    memset(sec, 0, sizeof sec);
    return st;
}
