/* Defaults shared by the server, the transports, libwharf, the CLI and the benchmarks, in one
 * place so that a client and a server built from the same tree agree. Sizes are bytes. */
#ifndef WH_BASE_DEFAULTS_H
#define WH_BASE_DEFAULTS_H

/* Where `make run` serves, and what a client talks to when told nothing. */
#define WH_DEFAULT_LISTEN_HOST "127.0.0.1"
#define WH_DEFAULT_LISTEN_PORT 9000
#define WH_DEFAULT_ENDPOINT "http://127.0.0.1:9000"
#define WH_DEFAULT_REGION "us-east-1"
/* The Unix socket wharfd serves beside its data (DIR/wharfd.sock); same-host shm needs it. */
#define WH_DEFAULT_UNIX_SOCKET_NAME "wharfd.sock"

/* Development credentials: wharfd uses and prints them when WHARF_ACCESS_KEY and
 * WHARF_SECRET_KEY are unset, and the CLI falls back to them, so `make run` then
 * `wharf verify` works with no setup. Never for a shared machine. */
#define WH_DEV_ACCESS_KEY "wharfadmin"
#define WH_DEV_SECRET_KEY "wharfadmin-secret"

/* Transport (src/xfer, src/server/rdma.c): bytes per RDMA operation, and the server's budget
 * of registered (pinned) buffer memory. */
#define WH_DEFAULT_XFER_CHUNK (4ull << 20)
#define WH_DEFAULT_RDMA_MEM (256ull << 20)
#define WH_DEFAULT_PROVIDERS "shm,tcp"

/* libwharf: an object GET is split into ranged requests of this size, run by up to
 * CONCURRENCY runners in parallel; a PUT
 * at or above the threshold is multipart with parts of part size (S3's minimum part is 5 MiB). */
#define WH_DEFAULT_CLIENT_CONCURRENCY 4
#define WH_DEFAULT_CLIENT_CHUNK (64ull << 20)
#define WH_DEFAULT_MULTIPART_THRESHOLD (256ull << 20)
#define WH_DEFAULT_PART_SIZE (64ull << 20)
#define WH_MIN_PART_SIZE (5ull << 20)

#endif
