/* SPDX-License-Identifier: Apache-2.0 */
/* Defaults shared by the server, libwharf, the CLI and the benchmarks, in one place so that a
 * client and a server built from the same tree agree. Sizes are bytes. */
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

/* The transport's own tuning (bytes per RDMA operation, window, peer cache, the server's
 * providers) is the xfer layer's: XFER_DEFAULT_* in src/shared/xfer/xfer.h, the one place for it.
 * This header holds what more than one layer or program must agree on. */

/* libwharf: an object GET is split into ranged requests of CLIENT_CHUNK bytes, run by up to
 * CLIENT_CONCURRENCY runners in parallel; a PUT at or above the threshold is multipart with
 * parts of PART_SIZE (S3's minimum part is 5 MiB). */
#define WH_DEFAULT_CLIENT_CONCURRENCY 4
#define WH_DEFAULT_CLIENT_CHUNK (64ull << 20)
#define WH_DEFAULT_MULTIPART_THRESHOLD (256ull << 20)
/* An RDMA PUT from host memory under the default threshold stays one request up to this: the
 * server reads it in one pass, where a multipart upload's completion copies every part into
 * the object again (on the H200, 256 MiB objects at 16 streams: 10-11 GB/s as one request,
 * 5.1-5.7 GB/s as four parts). */
#define WH_DEFAULT_RDMA_MULTIPART_THRESHOLD (1ull << 30)
#define WH_DEFAULT_PART_SIZE (64ull << 20)
#define WH_MIN_PART_SIZE (5ull << 20)

#endif
