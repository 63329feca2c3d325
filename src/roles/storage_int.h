/* Internals of the storage role shared by storage.c (the chunk API) and storage_node.c
 * (membership: node id, registration and heartbeat in the metadata database; metrics). */
#ifndef WH_ROLES_STORAGE_INT_H
#define WH_ROLES_STORAGE_INT_H

#include "base/util.h"
#include "cluster/chunks.h"
#include "roles/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct MHD_Daemon;
struct meta;

struct srv_storage {
    srv_storage_config_t cfg;
    const char *secret;
    size_t secret_len;
    cl_chunks_t *chunks;
    srv_rdma_t *rdma;
    struct MHD_Daemon *d;
    struct srv_tls *tls; /* NULL: plain HTTP */

    /* membership */
    char addr[96];            /* host:port of the internal API, as registered */
    uint32_t node_id;         /* from the database: stable for the address */
    bool registered;
    struct meta *meta;
    pthread_t hb_thread;
    bool hb_started;
    pthread_mutex_t hb_lock;
    pthread_cond_t hb_cond;
    bool hb_stop;
    _Atomic bool meta_up;
    _Atomic uint64_t heartbeats, heartbeat_failures;

    _Atomic uint64_t token_rejects, chunks_written, chunks_deleted, read_errors;
    _Atomic uint64_t http_read_bytes, http_write_bytes;
};

wh_status_t srv_storage_membership_start(srv_storage_t *s);
void srv_storage_membership_stop(srv_storage_t *s); /* safe if never started */
void srv_storage_metrics(srv_storage_t *s, wh_sbuf_t *out);

#endif
