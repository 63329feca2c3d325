/* SPDX-License-Identifier: Apache-2.0 */
/* xfer: the data-path transport behind one ops table, shared by the server (wharfd) and the
 * client (libwharf).
 *
 * Two roles use one xfer_t:
 * - CLIENT (target): opens an endpoint whose address goes into the token, registers memory
 *   for remote read/write, packs tokens for sub-ranges of a registration, and drives progress
 *   while a request is outstanding (providers such as tcp;ofi_rxm need target-side progress).
 * - SERVER (initiator): resolves the token's endpoint through a bounded per-peer cache and
 *   moves bytes one-sided (write = GET, read = PUT) in chunks with a bounded window of
 *   outstanding operations, from/into its own registered buffers.
 *
 * Providers are chosen by name from one table (xfer_providers: "ofi+shm", "ofi+tcp"
 * (tcp;ofi_rxm), "ofi+verbs" (verbs;ofi_rxm), "ofi+efa", "ofi+cxi"); each entry names the
 * transport family that implements it, an ops table (struct xfer_ops), as UCX separates its
 * transports. Families today: "ofi" (libfabric: ofi_iface.c, ofi_mr.c, ofi_peer.c,
 * ofi_batch.c) and "cma" (cma.c: the server's own cross-memory copy into a kernel-identified
 * pid, which serves shm tokens of bound peers). A UCX family is one more table.
 *
 * Thread-safety: every function may be called from any thread on one xfer_t, except
 * xfer_close (no other call may be in flight) and xfer_forget_after_fork (see there).
 * Errors are logged once where detected; functions that take err/errlen also write a
 * human-readable reason there ("what was wrong, what to do"). */
#ifndef WH_XFER_XFER_H
#define WH_XFER_XFER_H

#include "base/status.h"
#include "xfer/token.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct xfer xfer_t;             /* one transport instance (fabric, domain, ep, cq, av) */
typedef struct xfer_mr xfer_mr_t;       /* one memory registration */
typedef struct xfer_batch xfer_batch_t; /* server: the ops of one request against one token */

typedef enum { XFER_ROLE_CLIENT = 1, XFER_ROLE_SERVER = 2 } xfer_role_t;
typedef enum { XFER_OP_WRITE = 1, XFER_OP_READ = 2 } xfer_op_t; /* write: local -> remote */

/* ---- the provider table ------------------------------------------------------------------
 *
 * The one list of data-path providers. Every layer that names a provider (wharfd's
 * --providers, libwharf's provider setting, metrics labels, error messages) reads it here. */

/* What a provider can do, and what serving it requires. */
enum {
    /* Reaches only processes on this host (shared memory). */
    XFER_CAP_HOST_LOCAL = 1u << 0,
    /* A server serves it only to requesters the kernel identifies (SO_PEERCRED over the Unix
     * socket), and then moves the bytes itself through the family named in bound_family
     * (cross-memory copy into exactly that pid) instead of through this provider. */
    XFER_CAP_BOUND_PEER = 1u << 1,
    /* The token's endpoint is a network address; a server checks that it is the HTTP
     * requester's host (xfer_target_t.bind_host). */
    XFER_CAP_NET_ADDR = 1u << 2,
    /* The target must drive progress while a transfer into its memory runs. */
    XFER_CAP_TARGET_PROGRESS = 1u << 3,
    /* Tried, in table order, by a client asked for provider "auto". */
    XFER_CAP_AUTO = 1u << 4,
    /* Served only to requesters the kernel identifies (Unix socket), always (no trust-local
     * override): the provider itself moves the bytes for exactly that pid. */
    XFER_CAP_PEER_PID = 1u << 5,
    /* Registers and reaches device (GPU) memory. */
    XFER_CAP_DEVICE_MEM = 1u << 6,
    /* Registering memory pins it (counts against RLIMIT_MEMLOCK). */
    XFER_CAP_PINS_MEMORY = 1u << 7,
};

typedef struct xfer_provider {
    const char *name;         /* "ofi+tcp": what configs and the client API say */
    const char *short_name;   /* "tcp": wharfd --providers, metrics label */
    const char *fabric;       /* "tcp;ofi_rxm": the token's provider field */
    const char *family;       /* "ofi": which ops table (struct xfer_ops) implements it */
    const char *bound_family; /* with XFER_CAP_BOUND_PEER: the family serving bound peers */
    unsigned caps;            /* XFER_CAP_* */
} xfer_provider_t;

/* The table in preference order, terminated by an entry whose name is NULL. */
const xfer_provider_t *xfer_providers(void);
/* Finds a provider by its name, short name or fabric name, n bytes of s (n = strlen for a
 * C string); NULL if unknown. */
const xfer_provider_t *xfer_provider_find(const char *s, size_t n);
const xfer_provider_t *xfer_provider_by_fabric(const char *fabric);
/* Writes the providers' names of one kind, comma-separated in table order, into out for
 * messages ("ofi+shm, ofi+tcp, ...", "shm, tcp, ...", "shm, tcp;ofi_rxm, ..."); returns out. */
typedef enum { XFER_NAME = 0, XFER_NAME_SHORT, XFER_NAME_FABRIC } xfer_name_kind_t;
const char *xfer_provider_list(char *out, size_t outlen, xfer_name_kind_t kind);
/* The family's ops table ("ofi", "cma"); NULL if none. */
const struct xfer_ops *xfer_family(const char *family);

/* Maps a wharf provider name ("ofi+tcp") to the libfabric provider string that a token carries
 * ("tcp;ofi_rxm"), and back. NULL if unknown. Static strings (from the table above). */
const char *xfer_fabric_name(const char *wharf_name);
const char *xfer_wharf_name(const char *fabric_name);
/* The known names in preference order ("ofi+shm", "ofi+tcp", "ofi+verbs", "ofi+efa",
 * "ofi+cxi"), NULL-terminated; "auto" on the client means: try the XFER_CAP_AUTO ones. */
const char *const *xfer_known_names(void);

/* ---- open / close ------------------------------------------------------------------------ */

/* Transport defaults: the one place they are set (xfer_config_init; xfer_open applies them
 * to fields left 0; wharfd's engine starts from xfer_config_init too). */
#define XFER_DEFAULT_CHUNK (4ULL << 20)
#define XFER_DEFAULT_WINDOW 4u
#define XFER_MAX_WINDOW 64u
#define XFER_DEFAULT_MAX_PEERS 256u
#define XFER_DEFAULT_TIMEOUT_MS 10000u
/* After a batch ends with ops still in flight, how long they may take to drain before the
 * batch counts as stalled (xfer_stalled). */
#define XFER_DEFAULT_REAP_MS 2000u
/* What wharfd serves when not told otherwise (short names, comma-separated). */
#define XFER_DEFAULT_SERVER_PROVIDERS "shm,tcp,cuda"

typedef struct xfer_config {
    const char *provider; /* "ofi+shm", "ofi+tcp", ... (required) */
    xfer_role_t role;     /* required */
    /* server role: */
    uint64_t chunk_size; /* max bytes per fabric op; default XFER_DEFAULT_CHUNK */
    unsigned window;     /* max outstanding ops per batch; default 4, at most 64 */
    unsigned max_peers;  /* endpoint (address vector) cache bound, LRU eviction; default 256 */
    unsigned timeout_ms; /* a batch fails when none of its ops completes for this long;
                            default 10000 */
    unsigned reap_ms;    /* see XFER_DEFAULT_REAP_MS (server role) */
    /* client role: */
    bool progress_thread; /* run a progress thread gated by xfer_progress_begin/end;
                             default true (only started if the provider needs it) */
    /* both roles: the local address to bind network providers to ("127.0.0.1"); NULL: the
     * environment variable WHARF_OFI_NODE, else the provider's first interface. */
    const char *node;
    /* server role, cuda+ipc: bytes of pinned host memory for staging copies to and from GPU
     * memory (16 MiB per copy slot); 0: 16 MiB per online core, at most 1/32 of RAM. */
    uint64_t pinned_budget;
} xfer_config_t;

void xfer_config_init(xfer_config_t *cfg);

/* Opens the transport. The order of attempted providers for the family is logged. On failure
 * returns WH_ERR_UNSUPPORTED (unknown name, provider not present on this host) or
 * WH_ERR_TRANSPORT, with a reason in err. *out is owned by the caller (xfer_close). */
wh_status_t xfer_open(const xfer_config_t *cfg, xfer_t **out, char *err, size_t errlen);
/* Closes everything; every mr must have been deregistered and every batch ended. NULL-safe. */
void xfer_close(xfer_t *x);

/* "ofi+shm" etc. (the name it was opened with) and the fabric name for tokens ("shm"). */
const char *xfer_name(const xfer_t *x);
const char *xfer_fabric(const xfer_t *x);

/* After fork(), in the child: makes x inert without calling into the provider or taking any
 * lock (the parent's progress thread does not exist in the child and may have held one).
 * Afterwards xfer_mr_dereg() and xfer_close() on x and its registrations only free wharf's own
 * memory (the provider's state is leaked in the child, never touched). Every other call
 * returns WH_ERR_INVALID. libwharf then opens a fresh xfer_t and re-registers. */
void xfer_forget_after_fork(xfer_t *x);

/* ---- memory registration (both roles) --------------------------------------------------- */

/* Registers [addr, addr+len) with FI_REMOTE_READ|FI_REMOTE_WRITE (client) or local access
 * (server). Keys are chosen by the provider (FI_MR_PROV_KEY) or random and unique per
 * registration. The memory must stay valid until xfer_mr_dereg. *out owned by the caller. */
wh_status_t xfer_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out);
/* Registers GPU (CUDA) memory [addr, addr+len) for remote access (client role): cuda+ipc
 * exports it for the server on this host; a network provider registers it with the NIC
 * through libfabric's FI_HMEM (fi_mr_regattr, iface FI_HMEM_CUDA), when fi_getinfo offered
 * FI_HMEM at open. WH_ERR_UNSUPPORTED with the reason in err where the provider cannot (no
 * FI_HMEM, a same-host provider, no CUDA driver); the caller then stages, and says so. */
wh_status_t xfer_mr_reg_device(xfer_t *x, void *addr, size_t len, xfer_mr_t **out, char *err,
                               size_t errlen);
/* NULL-safe. No transfer into or out of the region may be in flight. */
void xfer_mr_dereg(xfer_mr_t *mr);
/* True for registrations of GPU memory (the CPU must not touch their bytes). */
bool xfer_mr_is_device(const xfer_mr_t *mr);
void *xfer_mr_addr(const xfer_mr_t *mr);
/* The transport mr belongs to (a client may hold registrations of several: host and GPU). */
xfer_t *xfer_mr_owner(const xfer_mr_t *mr);
size_t xfer_mr_len(const xfer_mr_t *mr);

/* ---- client role ------------------------------------------------------------------------ */

/* Packs an ofi1 token naming [addr, addr+len) inside mr, for x's endpoint, into out (NUL-
 * terminated; XFER_TOKEN_MAX_LEN bytes always suffice). WH_ERR_INVALID if the range is not inside
 * mr. Different sub-ranges of one mr may be packed and used concurrently. */
wh_status_t xfer_token_pack(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                            char *out, size_t outlen);

/* Brackets one outstanding request whose data moves into/out of this client's memory: call
 * begin before sending the HTTP request and end after its reply (success or not). Between
 * them a progress thread drives the provider (tcp;ofi_rxm moves the bytes in the target's
 * progress; shm drains its command queue, which would otherwise fill after 1024 ops): it
 * blocks in fi_cq_sread (10 ms) where the provider supports it, else polls with a backoff up
 * to 1 ms sleeps. With no request outstanding it sleeps on a condvar and costs no CPU. Nests
 * and counts: any number of threads may bracket concurrently. The thread starts on the first
 * begin and stops in xfer_close. */
void xfer_progress_begin(xfer_t *x);
void xfer_progress_end(xfer_t *x);
/* After a request whose transfer did not end with the server's word that it finished (an
 * error reply, a timeout, a lost connection): makes sure nothing the server still sends for it
 * lands in this client's memory once the caller has the buffer back. Waits until no request of
 * this client has a progress bracket open (new brackets wait meanwhile), then, where the
 * provider moves incoming data in target-side software (tcp;ofi_rxm), replaces the endpoint,
 * whose connections are where such bytes would come from. Registrations stay valid; tokens
 * packed afterwards name the new endpoint. Call it with no bracket of the caller's own open.
 * A no-op for the synchronous transports (bound shm, cuda+ipc) and for xfer_t NULL. */
void xfer_quiesce(xfer_t *x);
/* True when the provider needs target-side progress (informational, for reports). */
bool xfer_needs_progress(const xfer_t *x);

/* ---- server role ------------------------------------------------------------------------ */

/* Called when a batch that ended with WH_ERR_BUSY (ops still in flight after a failure) has
 * finally drained: only then may the caller reuse the local buffers it posted. */
typedef void (*xfer_idle_cb)(void *arg);

typedef struct xfer_target {
    const xfer_token_t *token; /* parsed ofi1 token whose provider equals xfer_fabric(x) */
    /* > 0: the requester's pid as the kernel reports it (SO_PEERCRED). For shm the server
     * then moves bytes with process_vm_writev/readv into exactly this pid (never a pid read
     * from the peer-writable shm region, which libfabric 1.17 re-reads on every op), after
     * checking that the token's shm endpoint belongs to this pid and that the process has
     * bind_uid; a mismatch is WH_ERR_AUTH. 0: no binding (--shm-trust-local: libfabric's shm
     * initiator is used as is; network providers). */
    pid_t bind_pid;
    xfer_idle_cb on_idle; /* see xfer_idle_cb; may be NULL if buffers are never reused */
    void *on_idle_arg;
    uid_t bind_uid; /* with bind_pid: the requester's uid (SO_PEERCRED); (uid_t)-1: any */
    /* Network providers: when set ("127.0.0.1"), the token's fabric address must be on this
     * host (the HTTP peer's IP), so a request cannot aim the server at a third machine. */
    const char *bind_host;
    /* With bind_pid: the process's start time when it connected (xfer_proc_start_time; 0:
     * unknown, taken at batch begin). Before and after every cross-memory copy the process
     * must still be that one, with bind_uid as its real, effective, saved and filesystem uid
     * and still dumpable: a peer that exec'd a setuid or file-capability program since (same
     * pid, same real uid) is refused. */
    uint64_t bind_start;
} xfer_target_t;

/* The start time of process pid (field 22 of /proc/PID/stat, clock ticks since boot): with
 * the pid it names one process for its whole life. 0 when it cannot be read. */
uint64_t xfer_proc_start_time(pid_t pid);

/* Starts a batch: resolves the token's endpoint (cached per address, LRU bounded), checks
 * provider and peer binding. No bytes move. Errors: WH_ERR_INVALID (token not for this
 * provider, bad address), WH_ERR_AUTH (peer binding failed), WH_ERR_TRANSPORT; reason in err.
 * *out must be ended with xfer_batch_end. */
wh_status_t xfer_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out, char *err,
                             size_t errlen);

/* Posts a transfer of len bytes between local (inside mr) and the token's region at
 * [base + roff, base + roff + len). Never touches anything outside [base, base+size): returns
 * WH_ERR_INVALID instead. Splits into ops of at most chunk_size and blocks (driving progress)
 * while the window is full. tag (0..63) groups ops so the caller can wait for one buffer.
 * A failure of any op makes the batch failed: this and later calls return its status. */
wh_status_t xfer_batch_post(xfer_batch_t *b, xfer_op_t op, xfer_mr_t *mr, void *local, size_t len,
                            uint64_t roff, unsigned tag);
/* True when the batch moves bytes by a direct cross-memory copy (bound shm): its posts may
 * then pass mr = NULL and any readable/writable local address (e.g. an mmap of the file, so
 * a GET makes one copy instead of two). Posts are synchronous, and several threads may post
 * to one direct batch at once (disjoint ranges), so one request can use several cores. */
bool xfer_batch_direct(const xfer_batch_t *b);
/* Direct batches: writes [local, local+len) to the token's region at roff, like a direct
 * xfer_batch_post, and returns in *crc the crc64nvme of those bytes, computed inside the copy.
 * WH_ERR_UNSUPPORTED (nothing moved) when the transport cannot: checksum, then post. */
wh_status_t xfer_batch_post_crc(xfer_batch_t *b, const void *local, size_t len, uint64_t roff,
                                uint64_t *crc);
/* True when a direct batch would rather read its source, the file fd, itself than from a
 * mapping of it (GPU memory from a tmpfs in 4 KiB pages: faulting in a fresh mapping's page
 * tables, not the copy, bounded the load). The caller then posts with xfer_batch_post_fd_crc. */
bool xfer_batch_reads_fd(const xfer_batch_t *b, int fd);
/* What a transport sets in _reads_fd. */
#define XFER_READS_FD_NO 0
#define XFER_READS_FD_ALWAYS 1
#define XFER_READS_FD_SMALL_TMPFS 2 /* files on a tmpfs in base pages (st_blksize < 2 MiB) */
/* As xfer_batch_post_crc, the source being len bytes of fd at off, read by the transport into
 * its own staging. WH_ERR_UNSUPPORTED (nothing moved) where the batch does not read files. A
 * short read fails the batch with WH_ERR_IO. */
wh_status_t xfer_batch_post_fd_crc(xfer_batch_t *b, int fd, uint64_t off, size_t len, uint64_t roff,
                                   uint64_t *crc);
/* Waits until every op posted with tag has completed (tag = XFER_TAG_ALL: all ops). Bounded
 * by the inactivity timeout (WH_ERR_TIMEOUT). */
#define XFER_TAG_ALL 64u
wh_status_t xfer_batch_wait(xfer_batch_t *b, unsigned tag);
/* Copies the batch's first error message ("" if none) into buf and returns buf. A copy, not
 * a pointer into the batch: a failing op completed by another thread (the reaper driving the
 * completion queue) may be writing the message at the same moment. */
const char *xfer_batch_error(xfer_batch_t *b, char *buf, size_t len);
/* Bytes completed successfully so far. */
uint64_t xfer_batch_bytes(const xfer_batch_t *b);
/* Ends the batch. Returns WH_OK when nothing is in flight (local buffers free to reuse), or
 * WH_ERR_BUSY when ops are still in flight after a failure/timeout: the batch then lives on
 * inside x and calls tgt->on_idle once they drain; until then the buffers must not be reused. */
wh_status_t xfer_batch_end(xfer_batch_t *b);

/* Drives completions (server role) once, without blocking. Normally not needed: post and wait
 * drive progress themselves; a thread waiting for buffers that zombies hold calls it. */
void xfer_progress(xfer_t *x);

/* Server role: how many ended batches have had ops in flight for longer than reap_ms. Such ops
 * may never complete by themselves (a stopped tcp peer never acknowledges, and libfabric 1.17
 * can neither cancel them nor reconnect to that peer on this endpoint), so their buffers come
 * back only when x is closed (xfer_close runs their on_idle). When this is > 0 the owner opens
 * a replacement transport, moves new batches there, and once x's last active batch has ended
 * deregisters x's memory and closes it: the buffers then come back at most timeout_ms after
 * that batch stops progressing. Drives completions first. */
unsigned xfer_stalled(xfer_t *x);

/* ---- the ops table (providers implement this; callers use the functions above) ---------- */

/* Required slots: family, open, close, forget_after_fork, mr_reg, mr_dereg, batch_post,
 * batch_wait, batch_end; xfer_open rejects a table where one is NULL. The others are optional,
 * NULL where the provider cannot do that: the dispatch functions above then answer
 * WH_ERR_UNSUPPORTED (mr_reg_device, token_pack, batch_begin, batch_post_crc), report nothing
 * stalled (stalled), or do nothing (progress_begin, progress_end, progress, quiesce), as the
 * storage engine's tables do. A provider's private structs embed struct xfer / struct xfer_mr /
 * struct xfer_batch as their first field. */
struct xfer_ops {
    const char *family; /* "ofi", "cma" */
    /* prov is the table entry; cfg has every default applied. */
    wh_status_t (*open)(const xfer_config_t *cfg, const xfer_provider_t *prov, xfer_t **out,
                        char *err, size_t errlen);
    void (*close)(xfer_t *x);
    void (*forget_after_fork)(xfer_t *x);
    wh_status_t (*mr_reg)(xfer_t *x, void *addr, size_t len, xfer_mr_t **out);
    /* GPU memory; optional. Sets _device. */
    wh_status_t (*mr_reg_device)(xfer_t *x, void *addr, size_t len, xfer_mr_t **out, char *err,
                                 size_t errlen);
    void (*mr_dereg)(xfer_mr_t *mr);
    wh_status_t (*token_pack)(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                              char *out, size_t outlen);
    void (*progress_begin)(xfer_t *x);
    void (*progress_end)(xfer_t *x);
    void (*progress)(xfer_t *x);
    wh_status_t (*batch_begin)(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out, char *err,
                               size_t errlen);
    wh_status_t (*batch_post)(xfer_batch_t *b, xfer_op_t op, xfer_mr_t *mr, void *local, size_t len,
                              uint64_t roff, unsigned tag);
    wh_status_t (*batch_wait)(xfer_batch_t *b, unsigned tag);
    /* Direct batches only: a WRITE that also returns the crc64nvme of the bytes, computed
     * while they are cache-hot in the copy (one pass over memory fewer). Optional. */
    wh_status_t (*batch_post_crc)(xfer_batch_t *b, const void *local, size_t len, uint64_t roff,
                                  uint64_t *crc);
    /* Direct batches that set _reads_fd only: the same, from a file. Optional. */
    wh_status_t (*batch_post_fd_crc)(xfer_batch_t *b, int fd, uint64_t off, size_t len,
                                     uint64_t roff, uint64_t *crc);
    wh_status_t (*batch_end)(xfer_batch_t *b);
    unsigned (*stalled)(xfer_t *x);
    void (*quiesce)(xfer_t *x); /* client role; optional */
};

/* For providers: fails the batch with st and a message, unless it has failed already (the
 * first failure reports; a batch's status never goes back to WH_OK). Any thread may call it.
 * Returns the batch's status afterwards. */
wh_status_t xfer_batch_fail(xfer_batch_t *b, wh_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* For providers: the batch's status (an atomic read: any thread may fail the batch). */
wh_status_t xfer_batch_status(const xfer_batch_t *b);

/* Public bases. Fields starting with _ belong to the xfer core and providers. */
struct xfer {
    const struct xfer_ops *_ops;
    const xfer_provider_t *_prov;
    struct xfer *_bound; /* server role, XFER_CAP_BOUND_PEER: the family for bound peers */
    char _name[32];      /* "ofi+shm" */
    char _fabric[32];    /* "shm" */
    xfer_role_t _role;
    bool _forgotten;
    bool _needs_progress;
};
struct xfer_mr {
    xfer_t *_x;
    void *_addr;
    size_t _len;
    bool _device; /* GPU memory */
};
struct xfer_batch {
    xfer_t *_x;
    uint64_t _rbase, _rsize; /* the token's region: posts are checked against it */
    uint64_t _bytes_done;
    bool _direct;
    uint8_t _reads_fd;   /* XFER_READS_FD_*: when its transport reads the source file itself */
    wh_status_t _status; /* atomic; set through xfer_batch_fail */
    int _err_lock;       /* spin lock over _err (atomic; held for one snprintf) */
    char _err[256];
};

#endif
