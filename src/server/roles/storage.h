/* SPDX-License-Identifier: Apache-2.0 */
/* The storage role: `wharfd storage --meta URL --data DIR --listen HOST:PORT`.
 *
 * Holds chunks (src/server/cluster/chunks.h) and serves them to gateways over an internal HTTP API,
 * every request authorised by an internal token (src/server/cluster/itoken.h, header
 * x-wharf-itoken) that is checked before a byte is read or written: PUT    /chunk/<id>   op put:
 * the body is the chunk; replies x-wharf-crc64nvme (hex) GET    /chunk/<id>   op get:  [off,
 * off+len) of the chunk (verified against its crc first) POST   /chunk/<id>   op rget: RDMA-writes
 * [off, off+len) into the token's memory region op rput: RDMA-reads the chunk (len bytes) from the
 * memory region op rdec: rebuilds a slice of an erasure-coded stripe from K of its shards and
 * RDMA-writes it (body: cluster/rdec.h; storage_ec.c) DELETE /chunk/<id>   op del GET    /health,
 * /metrics (no token) RDMA moves bytes through the storage server's own engine (engine/rdma.h) with
 * the peer binding the gateway verified (the client's address; for shm its SO_PEERCRED pid and
 * uid). Replies carry x-wharf-bytes and x-wharf-crc64nvme; errors a one-line text body. */
#ifndef WH_ROLES_STORAGE_H
#define WH_ROLES_STORAGE_H

#include "base/status.h"
#include "engine/rdma.h"

#include <stdint.h>

typedef struct role_storage_config {
    const char *data_dir;
    const char *listen_host;
    uint16_t listen_port;
    const char *meta_url; /* postgresql://...: registration and heartbeat */
    const char *secret;   /* WHARF_CLUSTER_SECRET */
    rdma_config_t rdma;
    unsigned heartbeat_ms;   /* default 1000 */
    unsigned conn_timeout_s; /* default 60 */
    const char *tls_cert;    /* both set: the internal API serves only HTTPS (tls.h) */
    const char *tls_key;
    uint64_t scrub_rate;       /* bytes/s the scrubber reads; 0: no scrubber (default 32 MiB) */
    unsigned scrub_interval_s; /* pause between passes (default 7 days) */
    const char *zone;          /* failure domain registered for placement; NULL or "" none */
    /* PEM CAs of the other storage servers' certificates (they serve HTTPS): a copy pushed to
     * one (repair, drain) is sent over HTTPS verified with them. NULL: over HTTP, unless this
     * server serves HTTPS itself, which then refuses pushes (501). */
    const char *cluster_ca;
    /* At stop: how long the requests in flight may take to finish (--shutdown-grace; the
     * signal thread changes it on SIGHUP, the same thread that stops). */
    unsigned shutdown_grace_s;
} role_storage_config_t;

void role_storage_config_init(role_storage_config_t *cfg);

typedef struct role_storage role_storage_t;
wh_status_t role_storage_start(const role_storage_config_t *cfg, role_storage_t **out);
/* Stops accepting (new connections are refused), waits up to shutdown_grace_s for the
 * requests in flight, then stops everything. NULL-safe. */
void role_storage_stop(role_storage_t *s);
/* SIGHUP: a new shutdown grace (seconds). */
void role_storage_set_grace(role_storage_t *s, unsigned secs);
/* SIGHUP: reads the TLS pair again (no TLS: nothing). */
wh_status_t role_storage_reload_tls(role_storage_t *s);

#endif
