/* SPDX-License-Identifier: Apache-2.0 */
/* TLS credentials for the HTTP front (tls.h). A credential set (chain + key) is immutable once
 * published; a reload publishes a new one and keeps the old ones until close, because a
 * handshake in progress may still hold a pointer into them (reloads are rare: one set each). */
#include "front/tls.h"
#include "base/log.h"
#include "base/codec.h"
#include "base/util.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "tls"
#define TLS_MAX_CHAIN 16

typedef struct tls_creds {
    gnutls_pcert_st chain[TLS_MAX_CHAIN];
    unsigned nchain;
    gnutls_privkey_t key;
    char fingerprint[65];
    struct tls_creds *older;
} tls_creds_t;

struct front_tls {
    char *cert_file, *key_file;
    pthread_mutex_t lock; /* reloads */
    _Atomic(tls_creds_t *) cur;
    _Atomic unsigned reloads;
};

static _Atomic(front_tls_t *) g_tls; /* the callback's argument (tls.h) */

static void creds_free(tls_creds_t *c)
{
    while (c) {
        tls_creds_t *o = c->older;
        for (unsigned i = 0; i < c->nchain; i++)
            gnutls_pcert_deinit(&c->chain[i]);
        if (c->key)
            gnutls_privkey_deinit(c->key);
        free(c);
        c = o;
    }
}

/* The DER public key of a pcert and of a private key, compared: a chain whose leaf does not
 * belong to the key would fail every handshake with an opaque alert. */
static bool key_matches(gnutls_pcert_st *leaf, gnutls_privkey_t key)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t a = {0}, b = {0};
    bool ok = false;
    if (gnutls_pubkey_init(&pub) < 0)
        return false;
    if (gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
        gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) == 0 &&
        gnutls_pubkey_export2(leaf->pubkey, GNUTLS_X509_FMT_DER, &b) == 0)
        ok = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return ok;
}

static wh_status_t creds_load(const char *cert_file, const char *key_file, tls_creds_t **out,
                              char *err, size_t errlen)
{
    gnutls_datum_t cd = {0}, kd = {0};
    tls_creds_t *c = calloc(1, sizeof *c);
    wh_status_t st = WH_ERR_INVALID;
    int rc;
    if (!c)
        return WH_ERR_NOMEM;
    if ((rc = gnutls_load_file(cert_file, &cd)) < 0) {
        snprintf(err, errlen, "cannot read the TLS certificate %s: %s", cert_file,
                 gnutls_strerror(rc));
        st = WH_ERR_IO;
        goto out;
    }
    if ((rc = gnutls_load_file(key_file, &kd)) < 0) {
        snprintf(err, errlen, "cannot read the TLS key %s: %s", key_file, gnutls_strerror(rc));
        st = WH_ERR_IO;
        goto out;
    }
    c->nchain = TLS_MAX_CHAIN;
    rc = gnutls_pcert_list_import_x509_raw(c->chain, &c->nchain, &cd, GNUTLS_X509_FMT_PEM,
                                           GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
    if (rc < 0 || c->nchain == 0) {
        c->nchain = 0;
        snprintf(err, errlen,
                 "%s holds no usable PEM certificate chain (leaf first, at most "
                 "%d): %s",
                 cert_file, TLS_MAX_CHAIN, rc < 0 ? gnutls_strerror(rc) : "empty");
        goto out;
    }
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "%s holds no usable unencrypted PEM private key: %s", key_file,
                 gnutls_strerror(rc));
        goto out;
    }
    if (!key_matches(&c->chain[0], c->key)) {
        snprintf(err, errlen, "the TLS key %s does not belong to the certificate %s", key_file,
                 cert_file);
        goto out;
    }
    uint8_t fp[32];
    size_t fplen = sizeof fp;
    if (gnutls_fingerprint(GNUTLS_DIG_SHA256, &c->chain[0].cert, fp, &fplen) < 0)
        fplen = 0;
    wh_hex_encode(fp, fplen, c->fingerprint);
    *out = c;
    c = NULL;
    st = WH_OK;
out:
    gnutls_free(cd.data);
    if (kd.data) {
        memset(kd.data, 0, kd.size); /* the private key's PEM */
        gnutls_free(kd.data);
    }
    creds_free(c);
    return st;
}

wh_status_t front_tls_open(const char *cert_file, const char *key_file, front_tls_t **out,
                           char *err, size_t errlen)
{
    front_tls_t *t = calloc(1, sizeof *t);
    tls_creds_t *c = NULL;
    if (!t)
        return WH_ERR_NOMEM;
    t->cert_file = strdup(cert_file);
    t->key_file = strdup(key_file);
    pthread_mutex_init(&t->lock, NULL);
    wh_status_t st = (t->cert_file && t->key_file)
                         ? creds_load(cert_file, key_file, &c, err, errlen)
                         : WH_ERR_NOMEM;
    if (st != WH_OK) {
        front_tls_close(t);
        return st;
    }
    atomic_store(&t->cur, c);
    atomic_store(&g_tls, t);
    wh_info(MOD, "TLS certificate %s loaded, sha256 %s", cert_file, c->fingerprint);
    *out = t;
    return WH_OK;
}

wh_status_t front_tls_reload(front_tls_t *t, char *err, size_t errlen)
{
    tls_creds_t *c = NULL;
    wh_status_t st = creds_load(t->cert_file, t->key_file, &c, err, errlen);
    if (st != WH_OK)
        return st;
    pthread_mutex_lock(&t->lock);
    c->older = atomic_load(&t->cur);
    atomic_store(&t->cur, c);
    pthread_mutex_unlock(&t->lock);
    atomic_fetch_add(&t->reloads, 1);
    wh_info(MOD, "TLS certificate %s reloaded, sha256 %s", t->cert_file, c->fingerprint);
    return WH_OK;
}

static int cert_cb(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    front_tls_t *t = atomic_load(&g_tls);
    tls_creds_t *c = t ? atomic_load(&t->cur) : NULL;
    if (!c)
        return -1;
    *pcert = c->chain;
    *pcert_length = c->nchain;
    *privkey = c->key;
    return 0;
}

void *front_tls_cert_callback(front_tls_t *t)
{
    (void)t;
    return (void *)cert_cb;
}

void front_tls_fingerprint(front_tls_t *t, char out[65])
{
    tls_creds_t *c = atomic_load(&t->cur);
    snprintf(out, 65, "%s", c ? c->fingerprint : "");
}

unsigned front_tls_reloads(const front_tls_t *t)
{
    return atomic_load(&((front_tls_t *)t)->reloads);
}

void front_tls_close(front_tls_t *t)
{
    if (!t)
        return;
    front_tls_t *self = t;
    atomic_compare_exchange_strong(&g_tls, &self, NULL);
    creds_free(atomic_load(&t->cur));
    pthread_mutex_destroy(&t->lock);
    free(t->cert_file);
    free(t->key_file);
    free(t);
}
