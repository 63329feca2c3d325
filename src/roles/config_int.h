/* The configuration files' key table (config_keys.c), for config.c. */
#ifndef WH_ROLES_CONFIG_INT_H
#define WH_ROLES_CONFIG_INT_H

enum {
    SRV_CONF_SERVE = 1,
    SRV_CONF_GATEWAY = 2,
    SRV_CONF_STORAGE = 4,
};
enum {
    SRV_CONF_LIVE = 1, /* a SIGHUP applies a change */
    SRV_CONF_URL = 2,  /* a URL whose password --print-config masks */
    SRV_CONF_BOOL = 4, /* true or false: an option without a value (true) or none */
};

typedef struct srv_conf_key {
    const char *name; /* the long option; the file's key has '_' for '-' */
    unsigned roles;   /* SRV_CONF_SERVE | ... */
    unsigned flags;   /* SRV_CONF_LIVE | ... */
    const char *def;  /* the default, as --help states it */
    const char *env;  /* the environment variable used when it is set nowhere, or NULL */
} srv_conf_key_t;

extern const srv_conf_key_t srv_conf_keys[]; /* ends with a NULL name */

#endif
