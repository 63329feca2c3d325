/* SPDX-License-Identifier: Apache-2.0 */
/* Client settings from the environment, read the same way by the CLI and the benchmarks (and,
 * in Python, by python/wharf/config.py). Each setting is the first of its variables that is set
 * and non-empty:
 *   endpoint     WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
 *   access key   WHARF_ACCESS_KEY, AWS_ACCESS_KEY_ID
 *   secret key   WHARF_SECRET_KEY, AWS_SECRET_ACCESS_KEY
 *   region       WHARF_REGION, AWS_REGION, AWS_DEFAULT_REGION
 *   provider     WHARF_PROVIDER
 *   unix socket  WHARF_UNIX_SOCKET
 *   CA bundle    WHARF_CA_BUNDLE, AWS_CA_BUNDLE
 * Nothing is defaulted here: a setting no variable gives is NULL, and the caller decides
 * (base/defaults.h has the defaults). */
#ifndef WH_BASE_ENV_H
#define WH_BASE_ENV_H

typedef enum {
    WH_ENV_ENDPOINT,
    WH_ENV_ACCESS_KEY,
    WH_ENV_SECRET_KEY,
    WH_ENV_REGION,
    WH_ENV_PROVIDER,
    WH_ENV_UNIX_SOCKET,
    WH_ENV_CA_BUNDLE,
    WH_ENV_COUNT
} wh_env_key_t;

typedef struct wh_env {
    const char *value[WH_ENV_COUNT];  /* NULL when no variable is set */
    const char *source[WH_ENV_COUNT]; /* the variable the value came from, or NULL */
} wh_env_t;

/* Reads every setting. get looks a variable up (NULL: getenv); tests pass their own. */
void wh_env_read(wh_env_t *e, const char *(*get)(const char *name));
/* The variables of one setting, in order, as "WHARF_ACCESS_KEY or AWS_ACCESS_KEY_ID", for
 * messages that say what to set. */
const char *wh_env_vars(wh_env_key_t k);

#endif
