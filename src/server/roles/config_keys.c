/* SPDX-License-Identifier: Apache-2.0 */
/* The keys of wharfd's configuration files (config.h): one row per long option of a role,
 * with the default --help states ("ROLE: text; ..." where the roles differ) (what --print-config
 * shows for a key set nowhere), whether a SIGHUP may change it live, and the environment variable
 * it falls back to. */
#include "roles/config_int.h"

#include <stddef.h>

#define S ROLE_CONF_SERVE
#define G ROLE_CONF_GATEWAY
#define T ROLE_CONF_STORAGE
#define LIVE ROLE_CONF_LIVE
#define URL ROLE_CONF_URL

const role_conf_key_t role_conf_keys[] = {
    {"data", S | T, 0, "required", NULL},
    {"listen", S | G | T, 0, "serve: 127.0.0.1:9000; gateway: 127.0.0.1:9000; storage: required",
     NULL},
    {"unix", S | G, 0, "serve: DATA/wharfd.sock; gateway: none", NULL},
    {"meta", S | G | T, URL, "serve: SQLite in DATA; gateway: required; storage: required", NULL},
    {"meta-password-file", S | G | T, 0, "none (libpq's PGPASSWORD or ~/.pgpass)", NULL},
    {"log-level", S | G | T, LIVE, "info", NULL},
    {"providers", S | G | T, 0, "shm,tcp", NULL},
    {"rdma-mem", S | G | T, 0, "1/64 of RAM, 64M..1G", NULL},
    {"tls-cert", S | G | T, 0, "none (plain HTTP)", NULL},
    {"tls-key", S | G | T, 0, "none", NULL},
    {"region", S | G, 0, "us-east-1", NULL},
    {"sigv2", S | G, 0, "on", NULL},
    {"server-key-file", S | G, 0, "serve: DATA/server.key; gateway: none", "WHARF_SERVER_KEY_FILE"},
    {"account-id", S | G, 0, "000000000000", "WHARF_ACCOUNT_ID"},
    {"access-key", S | G, 0, "the development key (printed)", "WHARF_ACCESS_KEY"},
    {"secret-key-file", S | G, 0, "the development key (printed)", "WHARF_SECRET_KEY"},
    {"lifecycle-period", S | G, LIVE, "3600", NULL},
    {"shutdown-grace", S | G | T, LIVE, "30", NULL},
    {"http-threads", S | G, 0, "the CPU count", NULL},
    {"handler-threads", S | G, 0, "256", NULL},
    {"max-conns", S | G, 0, "RLIMIT_NOFILE (raised to its hard limit) less a reserve", NULL},
    {"max-conns-per-ip", S | G, 0, "a quarter of max_conns", NULL},
    {"idle-timeout", S | G, 0, "30", NULL},
    {"header-timeout", S | G, 0, "20", NULL},
    {"max-uploads", S | G, LIVE, "10000", NULL},
    {"max-buckets", S | G, 0, "100", NULL},
    {"shm-trust-local", S, ROLE_CONF_BOOL, "false", NULL},
    {"copy-threads", S, 0, "one per core", NULL},
    {"put-threads", S, 0, "2", NULL},
    {"cuda-pinned-mem", S, 0, "16M per core, at most 1/32 of RAM", NULL},
    {"cold-reads", S, 0, "direct", NULL},
    {"etag-part-size", S, 0, "64M", NULL},
    {"rdma-etag", S, 0, "digest", NULL},
    {"reserve", S, 0, "8M", NULL},
    {"high-water", S, 0, "99", NULL},
    {"durability", S, 0, "disk", NULL},
    {"data-writes", S, 0, "buffered", NULL},
    {"put-stripes", S, 0, "one per two cores, at most 16", NULL},
    {"put-stripe-min", S, 0, "64M", NULL},
    {"cluster-secret-file", G | T, 0, "none (required, or the environment)",
     "WHARF_CLUSTER_SECRET"},
    {"cluster-ca", G | T, 0, "none (storage servers serve plain HTTP)", NULL},
    {"replicas", G, 0, "2", NULL},
    {"ec", G, 0, "none (replicas)", NULL},
    {"chunk-size", G, 0, "8M", NULL},
    {"repair-after", G, 0, "120", NULL},
    {"orphan-grace", G, 0, "3600", NULL},
    {"storage-reserve", G, 0, "256M", NULL},
    {"drain-rate", G, 0, "64M", NULL},
    {"rebalance-rate", G, 0, "16M", NULL},
    {"repair-parallel", G, 0, "4 per CPU, 8..64", NULL},
    {"scrub-rate", T, 0, "32M", NULL},
    {"scrub-interval", T, 0, "604800", NULL},
    {"zone", T, 0, "none", NULL},
    {NULL, 0, 0, NULL, NULL},
};
