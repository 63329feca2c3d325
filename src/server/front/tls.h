/* SPDX-License-Identifier: Apache-2.0 */
/* TLS for the HTTP front: a certificate chain and key (PEM files) loaded with GnuTLS and handed
 * to libmicrohttpd through its certificate callback, so that SIGHUP can swap them on a running
 * server. A TLS port serves only TLS. The Unix socket stays plain: its peers are proven by the
 * kernel (SO_PEERCRED), not by a certificate. */
#ifndef WH_FRONT_TLS_H
#define WH_FRONT_TLS_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct front_tls front_tls_t;

/* Loads cert_file (a PEM chain, leaf first) and key_file (a PEM private key) and checks that
 * they belong together. On failure *err says what was wrong, naming the file. */
wh_status_t front_tls_open(const char *cert_file, const char *key_file, front_tls_t **out,
                           char *err, size_t errlen);
/* Reads both files again; on success new handshakes use them (connections already open keep
 * theirs). On failure the old pair stays in use and *err says why. */
wh_status_t front_tls_reload(front_tls_t *t, char *err, size_t errlen);
/* The value of libmicrohttpd's MHD_OPTION_HTTPS_CERT_CALLBACK for t. One TLS front per
 * process: the callback has no argument of its own, so it reads the one opened last. */
void *front_tls_cert_callback(front_tls_t *t);
/* SHA-256 of the leaf certificate now served, hex (65 bytes with the NUL). */
void front_tls_fingerprint(front_tls_t *t, char out[65]);
unsigned front_tls_reloads(const front_tls_t *t);
void front_tls_close(front_tls_t *t); /* NULL-safe; after the daemon has stopped */

#endif
