/* SPDX-License-Identifier: Apache-2.0 */
/* The server's RDMA engine: moves object bytes between files and client memory named by an
 * x-amz-rdma-token, one-sided (write for GET, read for PUT), through src/shared/xfer.
 *
 * Called from the S3 handlers after SigV4 has passed and after checking that the token header
 * is among the signed headers. Runs synchronously on the request's thread; chunks the transfer
 * with a bounded window from a pool of registered buffers, overlapping the disk read of chunk
 * k+1 with the transfer of chunk k. Never writes outside [token.base, token.base+token.size). */
#ifndef WH_ENGINE_RDMA_H
#define WH_ENGINE_RDMA_H

#include "base/peer.h"
#include "base/status.h"
#include "xfer/token.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rdma_engine rdma_t;

typedef struct rdma_config {
    const char *providers; /* comma list: "shm,tcp,cuda" (default), "none" disables RDMA */
    /* bytes of registered buffers in the pool; 0 (default): 1/64 of the host's RAM, between
     * 64 MiB and 1 GiB, and at most RLIMIT_MEMLOCK when a provider pins memory */
    uint64_t mem_budget;
    uint64_t chunk_size; /* bytes per transfer op; default 4 MiB */
    unsigned window;     /* outstanding ops per request; default 4 */
    unsigned max_peers;  /* endpoint cache bound; default 256 */
    /* A transfer fails when none of its ops completes for timeout_ms (default 10 s); if its
     * ops are still in flight reap_ms (default 2 s) later, the provider's endpoint is
     * replaced and the old one closed once idle, which gives their buffers back. */
    unsigned timeout_ms, reap_ms;
    unsigned pool_wait_ms; /* how long a request waits for a buffer before 503; default 5 s */
    bool shm_trust_local;  /* serve shm to TCP peers too (trusted hosts only); default false */
    /* Local address network providers (tcp, verbs) bind to; NULL: the provider's first
     * interface. wharfd passes its HTTP listen host, so a server on 127.0.0.1 opens no
     * fabric listener on any other address. */
    const char *node;
    /* Copy threads of the direct path (bound shm, GPU memory), shared by the requests in
     * flight; 0: one per online core. */
    unsigned copy_threads;
    /* At most this many of them move one positional PUT (rdma_put_at); 0: the default
     * (RDMA_PUT_THREADS_DEFAULT in rdma_int.h, why there). */
    unsigned put_threads;
    /* Pinned host memory for staging GPU copies (cuda+ipc); 0: 16 MiB per core, at most
     * 1/32 of RAM (xfer.h). */
    uint64_t cuda_pinned;
    /* Staged GETs (network providers) read what is not in the page cache with O_DIRECT
     * straight into the registered pool buffer; false: always through the page cache. */
    bool cold_buffered;
} rdma_config_t;

void rdma_config_init(rdma_config_t *cfg);
wh_status_t rdma_init(const rdma_config_t *cfg, rdma_t **out);
void rdma_fini(rdma_t *r); /* NULL-safe */

/* The outcome, mapped by the caller to HTTP: http_status 200/206 on success; 400 with
 * s3_code "InvalidArgument" for a malformed token or a region too small; 501 with
 * "NotImplemented" for a decline (dialect/provider not served); 5xx for transfer failure.
 * message says why, naming the field. */
typedef struct rdma_result {
    int http_status;
    const char *s3_code; /* static string */
    char message[256];
    uint64_t bytes;     /* bytes moved */
    uint64_t crc64nvme; /* of the bytes moved */
    uint32_t crc32c;    /* of the bytes moved, when crc32c_set (positional PUTs that ask) */
    bool crc32c_set;
    bool positional;      /* a PUT whose bytes went to rdma_sink_at_t's write_at */
    const char *provider; /* static: "shm", "tcp" ... */
} rdma_result_t;

/* Each call takes the token as parsed where it arrived (xfer_token_arg_t, xfer/token.h: the S3
 * front parses x-amz-rdma-token once per request); the plain forms take the string and parse it (a
 * storage server's token from its internal request). */

/* Vets the token without moving data: it parsed, dialect, provider enabled, peer binding,
 * size >= need. Fills res on failure and returns false. */
bool rdma_check_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, uint64_t need,
                    rdma_result_t *res);
bool rdma_check(rdma_t *r, const char *token, const wh_peer_t *peer, uint64_t need,
                rdma_result_t *res);

/* GET: writes [off, off+len) of fd into the token's region starting at its base. */
wh_status_t rdma_get_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, int fd,
                         uint64_t off, uint64_t len, rdma_result_t *res);
wh_status_t rdma_get(rdma_t *r, const char *token, const wh_peer_t *peer, int fd, uint64_t off,
                     uint64_t len, rdma_result_t *res);
/* GET of an object held in several files (a multipart upload's parts): the extents' bytes,
 * one after another, land from the token's base on; res->crc64nvme covers all of them. The
 * fds stay the caller's. */
typedef struct rdma_extent {
    int fd;
    uint64_t off, len; /* in the file */
} rdma_extent_t;
wh_status_t rdma_get_extents(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             const rdma_extent_t *ext, size_t n, rdma_result_t *res);

/* GET from a source that is not a file (an encrypted object, decrypted as it is read):
 * read(arg, buf, n, at) fills exactly n bytes of the object at `at` into buf (a registered
 * pool buffer), or answers a status that fails the GET; the bytes of a failed read are never
 * sent (those of earlier reads may have landed: the reply is an error all the same, and its
 * message says at which offset). Called from one thread at a time (the request's or the
 * staged pipeline's reader), at increasing offsets from off to off+len, in spans of at most
 * one pool buffer; arg is borrowed for the call. Every provider takes the staged pipeline
 * (bound shm too: there is no file to map). res->crc64nvme covers the bytes read. */
typedef wh_status_t (*rdma_read_cb)(void *arg, void *buf, size_t n, uint64_t at);
wh_status_t rdma_get_source(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                            rdma_read_cb read, void *arg, uint64_t off, uint64_t len,
                            rdma_result_t *res);

/* PUT: reads the token's whole region (size = token size) and passes it, in order, to sink. */
typedef wh_status_t (*rdma_sink_cb)(void *arg, const void *p, size_t n);
wh_status_t rdma_put_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                         rdma_sink_cb sink, void *arg, rdma_result_t *res);
wh_status_t rdma_put(rdma_t *r, const char *token, const wh_peer_t *peer, rdma_sink_cb sink,
                     void *arg, rdma_result_t *res);
/* A positional sink, for PUTs over direct batches (bound shm, GPU memory): begin(arg, len)
 * once, before any byte; then write_at from several copy threads at once, with disjoint
 * [off, off+n). The bytes of one request then move in parallel, window by window, each
 * window in pieces through a small buffer per thread that stays in that core's cache: the
 * client's bytes cross memory once on their way to the destination, and crc64nvme (with
 * crc32c when want_crc32c) is computed on the cached piece between its two copies. begin
 * answering WH_ERR_UNSUPPORTED, or a batch that is not direct: the in-order sink runs. On
 * success res->positional says which way the bytes went. */
typedef struct rdma_sink_at {
    wh_status_t (*begin)(void *arg, uint64_t len);
    wh_status_t (*write_at)(void *arg, const void *p, size_t n, uint64_t off);
    /* Optional: where the destination is mapped, *p is the place of [off, off+n) in it and
     * the copy threads read the client's bytes straight there (one copy, no buffer, no
     * write; the checksums run on each piece just copied). Asked once after begin with
     * n = 0: WH_ERR_UNSUPPORTED then means write_at. Not limited by put_threads, since no
     * write takes the file's lock: the request gets its share of copy_threads. */
    wh_status_t (*map_at)(void *arg, uint64_t off, size_t n, void **p);
    /* Optional, asked once after begin: the destination is several files, each of stripe
     * bytes of the object ([k * stripe, (k + 1) * stripe)), whose writes do not share a lock;
     * 0 (or NULL): one file. The copy threads then go to different stripes at once, and up
     * to put_threads per stripe write together. */
    uint64_t (*stripe_len)(void *arg);
    /* Optional, asked once after begin: the size and alignment of the writes the destination
     * takes best (a power of two that divides RDMA_DIRECT_WINDOW, 8 MiB; 0 or NULL: any).
     * Each copy thread then gathers that much (still copied and checksummed piece by piece)
     * before one write_at. */
    uint64_t (*write_unit)(void *arg);
    bool want_crc32c;
} rdma_sink_at_t;
wh_status_t rdma_put_at(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                        rdma_sink_cb sink, const rdma_sink_at_t *at, void *arg, rdma_result_t *res);

/* Prometheus lines for the RDMA counters (wharf_rdma_* and minio_api_rdma_* names,
 * wharf_rdma_declines_total). Appends to the buffer. */
struct wh_sbuf;
void rdma_metrics(rdma_t *r, struct wh_sbuf *out);

#endif
