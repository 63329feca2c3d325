/* SPDX-License-Identifier: Apache-2.0 */
/* Who sent a request, as the server verified it: the HTTP peer's address, and over a Unix
 * socket the pid and uid the kernel vouches for (SO_PEERCRED). The one type for it: the S3
 * front fills it, the RDMA engine binds shm transfers to it, a cluster's data table forwards
 * it to storage servers inside its signed internal token, and a storage server rebuilds it
 * from there. */
#ifndef WH_BASE_PEER_H
#define WH_BASE_PEER_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct wh_peer {
    bool is_unix;  /* came over a Unix socket: pid and uid are the kernel's word */
    pid_t pid;     /* 0 when not known */
    uid_t uid;     /* (uid_t)-1 when not known */
    char addr[64]; /* "127.0.0.1:54321", "unix", or "gateway" for the gateway's own reads */
    /* The process's start time at connect (xfer_proc_start_time), so a later transfer reaches
     * that process and not another that reused its pid; 0 when unknown. */
    unsigned long long start;
} wh_peer_t;

#endif
