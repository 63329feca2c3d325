/* SPDX-License-Identifier: Apache-2.0 */
/* The internal token: what a gateway signs for a storage server, once per chunk operation.
 *
 * Every request from a gateway to a storage server carries one in the x-wharf-itoken header.
 * It names the operation, the chunk, the byte range, the expiry, what the gateway verified
 * about the S3 client (its HTTP peer address; over the Unix socket the SO_PEERCRED pid and
 * uid) and, for RDMA operations, the client's memory token (already narrowed by the gateway
 * to the sub-region this chunk lands in). The storage server verifies it with
 * cl_itoken_verify before it reads or writes a byte, on the HTTP and the RDMA path alike, and
 * answers 403 otherwise. The key is WHARF_CLUSTER_SECRET, shared by gateways and storage
 * servers.
 *
 * Wire form (one line of printable ASCII, fields separated by '|'):
 *   wit2|OP|CHUNK|OFF|LEN|EXP|PEER|ADDR|PID|UID|MTOK|CRC|TARGET|NONCE|MAC
 * OP is get, put, del, rget (storage writes into client memory: an S3 GET) or rput (storage
 * reads client memory: an S3 PUT); CHUNK is the chunk id (32 lowercase hex); OFF and LEN are
 * lowercase hex (the range inside the chunk; for put/rput LEN is the whole chunk); EXP is a
 * decimal Unix time; PEER is tcp or unix; ADDR the client's address ("127.0.0.1:4711" or
 * "unix"); PID and UID decimal (0 and 4294967295 when not known); MTOK the memory token or
 * "-"; CRC the chunk map's crc64nvme of the whole chunk (16 lowercase hex, or "-" where the
 * signer does not know it; a put must carry it: the storage server stores only bytes with that
 * crc, and a read serves only a chunk whose footer has it); TARGET the storage server the token
 * is for, as the gateway addresses it ("host:port": any other server refuses it); NONCE 16
 * random lowercase hex, so that no two tokens are alike: a storage server admits each token
 * once (cl_replay_t); MAC the lowercase hex HMAC-SHA256 of everything before "|MAC".
 * Two operations move a chunk from storage server to storage server (repair, drain, rebalance),
 * so that its bytes never pass through the gateway: push (the gateway asks a server holding a
 * good copy to send it; MTOK is "CRC@HOST:PORT", the chunk map's crc64nvme as 16 lowercase hex
 * and the server to send it to) and cput (a checked put, what the source then sends the target;
 * MTOK is "CRC": the receiver stores the bytes only when their crc64nvme equals it).
 * rdec serves a degraded RDMA GET of an erasure-coded stripe at a storage server, so that
 * neither the client nor the gateway decodes: the request's body describes the stripe
 * (cluster/rdec.h: K, M, its length, every shard's chunk id, crc and server), CHUNK names
 * the stripe (its shard 0), OFF and LEN the slice of the stripe wanted, and MTOK is
 * "SHA256@TOKEN": the body's SHA-256 (64 lowercase hex; the MAC covers the body through
 * it) and the client's memory token narrowed to the slice. renc is an RDMA PUT into an
 * erasure-coded bucket done the same way round: one storage server pulls the stripe (LEN
 * bytes; OFF 0) from the client's memory, encodes it, keeps its shard and sends each other
 * shard to the server the body names as a cput; MTOK as for rdec. */
#ifndef WH_CLUSTER_ITOKEN_H
#define WH_CLUSTER_ITOKEN_H

#include "base/peer.h"
#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define CL_CHUNK_ID_LEN 32
#define CL_ITOKEN_MAX 1800     /* the memory token is at most 1200 bytes */
#define CL_ITOKEN_MAX_LIFE 300 /* seconds: a token whose expiry is further away is refused */
#define CL_ITOKEN_HEADER "x-wharf-itoken"

typedef enum {
    CL_OP_GET = 1,  /* HTTP: storage sends [off, off+len) of the chunk */
    CL_OP_PUT = 2,  /* HTTP: storage receives the chunk's len bytes */
    CL_OP_DEL = 3,  /* storage deletes the chunk (garbage collection) */
    CL_OP_RGET = 4, /* RDMA: storage writes [off, off+len) into the memory token's region */
    CL_OP_RPUT = 5, /* RDMA: storage reads the chunk (len bytes) from the memory token */
    CL_OP_PUSH = 6, /* storage sends its verified copy (len bytes) to another, as a cput */
    CL_OP_CPUT = 7, /* HTTP: storage receives len bytes, stored only if their crc is MTOK's */
    CL_OP_RDEC = 8, /* RDMA: storage rebuilds [off, off+len) of a stripe (body: rdec.h) and
                     * writes it into the memory token's region */
    CL_OP_RENC = 9, /* RDMA: storage reads a stripe (len bytes) from the memory token, encodes
                     * it, keeps its shard and cputs the others (body: rdec.h) */
} cl_op_t;
#define CL_OP_LAST CL_OP_RENC

typedef struct cl_itoken {
    cl_op_t op;
    char chunk[CL_CHUNK_ID_LEN + 1];
    uint64_t off, len;
    int64_t expires; /* Unix seconds */
    /* The S3 client as the gateway verified it (is_unix, addr, pid, uid; start is not carried
     * and reads 0). */
    wh_peer_t peer;
    char mtok[1201]; /* rget/rput: the client's memory token; push: "CRC@ADDR"; cput: "CRC";
                      * rdec: "SHA256@TOKEN"; else "" */
    bool has_crc;    /* crc is the chunk map's crc64nvme of the whole chunk (put: required) */
    uint64_t crc;
    char target[96]; /* the storage server it is for, "host:port" */
    char nonce[17];  /* 16 lowercase hex; cl_itoken_sign draws one when it is "" */
} cl_itoken_t;

/* push and cput: the crc64nvme the bytes must have; push: where they go (addr: 256 bytes).
 * False when t is not such a token (the parser already refused a malformed one). */
bool cl_itoken_copy_args(const cl_itoken_t *t, uint64_t *crc, char *addr, size_t addrlen);

/* rdec and renc: the SHA-256 its body must have (hex: 65 bytes) and the memory token (a pointer
 * into t->mtok). False when t is not such a token. */
bool cl_itoken_rdec_args(const cl_itoken_t *t, char sha_hex[65], const char **mtok);
#define CL_RDEC_MTOK_PREFIX 65 /* "SHA256@" before the memory token */

const char *cl_op_name(cl_op_t op);

/* Signs t with key into out (NUL-terminated). WH_ERR_INVALID when a field cannot be carried
 * (a '|' or a non-printable byte in the address or memory token, a bad chunk id), with the
 * field named in err. */
wh_status_t cl_itoken_sign(const void *key, size_t klen, const cl_itoken_t *t, char *out,
                           size_t outlen, char *err, size_t errlen);

/* Parses s (len bytes, need not be NUL-terminated), checks the MAC (constant time) and the
 * expiry against now: expired or valid for more than CL_ITOKEN_MAX_LIFE seconds is refused.
 * WH_ERR_INVALID for a malformed token (field named), WH_ERR_AUTH for a bad MAC or expiry;
 * reason in err. *out is filled only on WH_OK. */
wh_status_t cl_itoken_verify(const void *key, size_t klen, const char *s, size_t len, time_t now,
                             cl_itoken_t *out, char *err, size_t errlen);

/* A storage server's record of the tokens it admitted, each kept until it expires: a token is
 * admitted once (single use), and only by the server it names. Thread-safe. */
typedef struct cl_replay cl_replay_t;
#define CL_REPLAY_MAX (1u << 22) /* tokens remembered at most (about 200 MiB at 48 bytes) */
cl_replay_t *cl_replay_new(size_t max_entries);
void cl_replay_free(cl_replay_t *rc); /* NULL-safe */
size_t cl_replay_count(cl_replay_t *rc);
/* t (verified) for the server addressed as self: WH_OK the first time; WH_ERR_AUTH when its
 * TARGET is another server or it was admitted before (a replay); WH_ERR_BUSY when the record
 * is full of unexpired tokens (refused rather than forgotten). */
wh_status_t cl_itoken_admit(cl_replay_t *rc, const cl_itoken_t *t, const char *self, time_t now,
                            char *err, size_t errlen);

/* Parses without checking the MAC (for the fuzzer and for logs). */
wh_status_t cl_itoken_parse(const char *s, size_t len, cl_itoken_t *out, size_t *mac_at, char *err,
                            size_t errlen);

/* A fresh random chunk id (32 lowercase hex). */
wh_status_t cl_chunk_id_new(char out[CL_CHUNK_ID_LEN + 1]);
bool cl_chunk_id_valid(const char *s, size_t len);

#endif
