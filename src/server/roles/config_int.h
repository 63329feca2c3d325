/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration files' key table (config_keys.c), for config.c. */
#ifndef WH_ROLES_CONFIG_INT_H
#define WH_ROLES_CONFIG_INT_H

enum {
    ROLE_CONF_SERVE = 1,
    ROLE_CONF_GATEWAY = 2,
    ROLE_CONF_STORAGE = 4,
};
enum {
    ROLE_CONF_LIVE = 1, /* a SIGHUP applies a change */
    ROLE_CONF_URL = 2,  /* a URL whose password --print-config masks */
    ROLE_CONF_BOOL = 4, /* true or false: an option without a value (true) or none */
};

typedef struct role_conf_key {
    const char *name; /* the long option; the file's key has '_' for '-' */
    unsigned roles;   /* ROLE_CONF_SERVE | ... */
    unsigned flags;   /* ROLE_CONF_LIVE | ... */
    const char *def;  /* the default, as --help states it */
    const char *env;  /* the environment variable used when it is set nowhere, or NULL */
} role_conf_key_t;

extern const role_conf_key_t role_conf_keys[]; /* ends with a NULL name */

#endif
