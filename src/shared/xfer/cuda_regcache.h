/* SPDX-License-Identifier: Apache-2.0 */
/* Page-cache pages registered with the CUDA driver, kept across GETs (the cuda+ipc server).
 *
 * A GET into GPU memory from a registration is one DMA from the page cache, the copy engine's
 * rate, with no staging copy: the server maps the object's file read-only, pins its pages with
 * cuMemHostRegister(READ_ONLY) chunk by chunk as windows first need them, and copies straight
 * from the mapping while the CPU checksums the same pages. Registering costs about as much as
 * the copy itself (8 GiB: 0.16 s in a disk's page cache, 0.32 s on a tmpfs in 4 KiB pages, on
 * the H100 machine), so registrations are kept: a file is found again by device, inode, size,
 * mtime and ctime, and any change of those makes a new entry. The pinned bytes are bounded by a
 * budget; entries nobody uses are released least recently used first, and at once when their
 * file is unlinked (a mapping keeps a deleted file's pages alive). Past the budget, or when the
 * driver refuses, the caller copies another way: the cache is a speed-up, never a requirement. */
#ifndef WHARF_XFER_CUDA_REGCACHE_H
#define WHARF_XFER_CUDA_REGCACHE_H

#include "xfer/cuda.h"

#include <stddef.h>
#include <stdint.h>

/* Registrations are made per chunk of a file (file offsets k * chunk, by default
 * CUDA_REGCACHE_CHUNK): one copy must not cross a chunk's end, since each chunk is a
 * registration of its own. */
#define CUDA_REGCACHE_CHUNK (32ull << 20)

typedef struct cuda_regcache cuda_regcache_t;

typedef struct cuda_regcache_stats {
    uint64_t budget;     /* bytes that may be registered at once */
    uint64_t registered; /* bytes registered now */
    uint64_t files;      /* files held now */
    uint64_t hits;       /* windows served from registrations already made */
    uint64_t registers;  /* chunks registered */
    uint64_t releases;   /* files released (budget, change, unlink) */
    uint64_t fallbacks;  /* windows the cache could not serve (budget, driver refusal) */
} cuda_regcache_stats_t;

/* A cache that registers at most budget bytes (> 0), chunk bytes at a time (a multiple of
 * 2 MiB; 0: CUDA_REGCACHE_CHUNK) with cuMemHostRegister's flags. NULL when out of memory. */
cuda_regcache_t *cuda_regcache_new(const cuda_api_t *cu, uint64_t budget, uint64_t chunk,
                                   unsigned flags);

/* Its chunk: a copy from what cuda_regcache_get gave must not cross a multiple of it (in file
 * offsets). */
uint64_t cuda_regcache_chunk(const cuda_regcache_t *rc);

/* Releases every registration and mapping (none may be in use). */
void cuda_regcache_free(cuda_regcache_t *rc);

/* Bytes [off, off+len) of fd's file, in a mapping whose chunks covering them are registered,
 * with a reference held in *ref; the caller's thread must have a CUDA context current. NULL
 * when the cache cannot serve them (not a regular file, past its end, budget, driver refusal):
 * the caller copies another way. */
const uint8_t *cuda_regcache_get(cuda_regcache_t *rc, int fd, uint64_t off, size_t len, void **ref);

/* Drops the reference cuda_regcache_get gave. */
void cuda_regcache_put(cuda_regcache_t *rc, void *ref);

/* The process's cache (the cuda+ipc server's; zeros when none). */
void cuda_regcache_stats(cuda_regcache_stats_t *out);

#endif
