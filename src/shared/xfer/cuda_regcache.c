/* SPDX-License-Identifier: Apache-2.0 */
/* Page-cache pages registered with the CUDA driver, kept across GETs: see cuda_regcache.h.
 *
 * One mutex guards the table and every entry's chunk states; registering and releasing run
 * with it dropped for the driver calls of a chunk (a chunk being registered is CH_BUSY, and
 * whoever needs it waits on the condition variable). An entry in use (refs > 0) is never
 * released: a file that changes while a GET reads it is marked stale, leaves the table, and is
 * released by its last user. */
#include "xfer/cuda_regcache.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOD "xfer"
#define RC_MAX_FILES 256

enum { CH_NONE = 0, CH_BUSY, CH_REG, CH_FAIL };

typedef struct rc_ent {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    int fd; /* a duplicate, to see the file unlinked */
    uint8_t *base;
    size_t maplen;
    uint8_t *chunk; /* CH_* per chunk */
    size_t nchunks;
    uint64_t reg_bytes;
    unsigned refs;
    uint64_t last_use;
    bool stale; /* out of the table; released by its last user */
} rc_ent_t;

struct cuda_regcache {
    const cuda_api_t *cu;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t budget, used, clock;
    uint64_t chunk;
    unsigned flags;
    rc_ent_t *ent[RC_MAX_FILES];
    unsigned n;
};

static _Atomic uint64_t g_budget, g_used, g_files, g_hits, g_regs, g_releases, g_fallbacks;

void cuda_regcache_stats(cuda_regcache_stats_t *o)
{
    o->budget = atomic_load(&g_budget);
    o->registered = atomic_load(&g_used);
    o->files = atomic_load(&g_files);
    o->hits = atomic_load(&g_hits);
    o->registers = atomic_load(&g_regs);
    o->releases = atomic_load(&g_releases);
    o->fallbacks = atomic_load(&g_fallbacks);
}

cuda_regcache_t *cuda_regcache_new(const cuda_api_t *cu, uint64_t budget, uint64_t chunk,
                                   unsigned flags)
{
    cuda_regcache_t *rc = calloc(1, sizeof *rc);
    if (!rc)
        return NULL;
    rc->cu = cu;
    rc->budget = budget;
    rc->chunk = chunk && chunk % (2u << 20) == 0 ? chunk : CUDA_REGCACHE_CHUNK;
    rc->flags = flags;
    pthread_mutex_init(&rc->mu, NULL);
    pthread_cond_init(&rc->cv, NULL);
    atomic_store(&g_budget, budget);
    return rc;
}

uint64_t cuda_regcache_chunk(const cuda_regcache_t *rc)
{
    return rc->chunk;
}

static size_t chunk_len(const cuda_regcache_t *rc, const rc_ent_t *e, size_t c)
{
    size_t at = c * (size_t)rc->chunk;
    return e->maplen - at < rc->chunk ? e->maplen - at : (size_t)rc->chunk;
}

/* Unregisters and unmaps e, which nobody uses and which is out of the table. Caller holds mu
 * (the driver calls are short: a chunk's pages are unpinned, not copied). */
static void ent_release(cuda_regcache_t *rc, rc_ent_t *e)
{
    for (size_t c = 0; c < e->nchunks; c++)
        if (e->chunk[c] == CH_REG)
            rc->cu->cuMemHostUnregister(e->base + c * rc->chunk);
    rc->used -= e->reg_bytes;
    atomic_store(&g_used, rc->used);
    atomic_fetch_add(&g_releases, 1);
    atomic_fetch_sub(&g_files, 1);
    munmap(e->base, e->maplen);
    close(e->fd);
    free(e->chunk);
    free(e);
}

/* Takes table slot i out (its entry is released now if unused, else by its last user). */
static void ent_drop(cuda_regcache_t *rc, unsigned i)
{
    rc_ent_t *e = rc->ent[i];
    rc->ent[i] = rc->ent[--rc->n];
    if (e->refs == 0)
        ent_release(rc, e);
    else
        e->stale = true;
}

/* Releases the least recently used entry nobody uses, other than keep. false if none. */
static bool evict_one(cuda_regcache_t *rc, const rc_ent_t *keep)
{
    unsigned lru = rc->n;
    for (unsigned i = 0; i < rc->n; i++)
        if (rc->ent[i] != keep && rc->ent[i]->refs == 0 &&
            (lru == rc->n || rc->ent[i]->last_use < rc->ent[lru]->last_use))
            lru = i;
    if (lru == rc->n)
        return false;
    ent_drop(rc, lru);
    return true;
}

/* Releases the unused entries of files that are unlinked (a deleted object's pages). */
static void sweep_unlinked(cuda_regcache_t *rc)
{
    for (unsigned i = 0; i < rc->n;) {
        struct stat sb;
        rc_ent_t *e = rc->ent[i];
        if (e->refs == 0 && (fstat(e->fd, &sb) != 0 || sb.st_nlink == 0))
            ent_drop(rc, i);
        else
            i++;
    }
}

static bool same_file(const rc_ent_t *e, const struct stat *sb)
{
    return e->size == sb->st_size && e->mtime.tv_sec == sb->st_mtim.tv_sec &&
           e->mtime.tv_nsec == sb->st_mtim.tv_nsec && e->ctime.tv_sec == sb->st_ctim.tv_sec &&
           e->ctime.tv_nsec == sb->st_ctim.tv_nsec;
}

/* Caller holds mu. The entry of the file sb describes, made if need be, with a reference. */
static rc_ent_t *ent_get(cuda_regcache_t *rc, int fd, const struct stat *sb)
{
    for (unsigned i = 0; i < rc->n; i++) {
        rc_ent_t *e = rc->ent[i];
        if (e->dev != sb->st_dev || e->ino != sb->st_ino)
            continue;
        if (same_file(e, sb)) {
            e->refs++;
            e->last_use = ++rc->clock;
            return e;
        }
        ent_drop(rc, i); /* the file changed (an append): its pages are registered anew */
        break;
    }
    sweep_unlinked(rc);
    if (rc->n == RC_MAX_FILES && !evict_one(rc, NULL))
        return NULL;
    size_t maplen = ((size_t)sb->st_size + 4095) & ~(size_t)4095;
    rc_ent_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->nchunks = (maplen + rc->chunk - 1) / rc->chunk;
    e->chunk = calloc(e->nchunks ? e->nchunks : 1, 1);
    e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    void *m = maplen ? mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (!e->chunk || e->fd < 0 || m == MAP_FAILED) {
        if (m != MAP_FAILED)
            munmap(m, maplen);
        if (e->fd >= 0)
            close(e->fd);
        free(e->chunk);
        free(e);
        return NULL;
    }
    e->base = m;
    e->maplen = maplen;
    e->dev = sb->st_dev;
    e->ino = sb->st_ino;
    e->size = sb->st_size;
    e->mtime = sb->st_mtim;
    e->ctime = sb->st_ctim;
    e->refs = 1;
    e->last_use = ++rc->clock;
    rc->ent[rc->n++] = e;
    atomic_fetch_add(&g_files, 1);
    return e;
}

/* Caller holds mu and a reference on e. Registers chunk c if nobody has; false when it cannot
 * be (budget, driver refusal). */
static bool chunk_ready(cuda_regcache_t *rc, rc_ent_t *e, size_t c)
{
    while (e->chunk[c] == CH_BUSY)
        pthread_cond_wait(&rc->cv, &rc->mu);
    if (e->chunk[c] == CH_REG)
        return true;
    if (e->chunk[c] == CH_FAIL)
        return false;
    size_t n = chunk_len(rc, e, c);
    while (rc->used + n > rc->budget)
        if (!evict_one(rc, e))
            return false;
    e->chunk[c] = CH_BUSY;
    rc->used += n;
    pthread_mutex_unlock(&rc->mu);
    cu_result_t r = rc->cu->cuMemHostRegister(e->base + c * rc->chunk, n, rc->flags);
    pthread_mutex_lock(&rc->mu);
    if (r != 0) {
        rc->used -= n;
        e->chunk[c] = CH_FAIL;
        wh_warn(MOD,
                "cuMemHostRegister of %zu bytes of a data file failed (%s): those bytes go "
                "through the staging buffers",
                n, cuda_strerror(r));
    } else {
        e->chunk[c] = CH_REG;
        e->reg_bytes += n;
        atomic_fetch_add(&g_regs, 1);
    }
    atomic_store(&g_used, rc->used);
    pthread_cond_broadcast(&rc->cv);
    return r == 0;
}

const uint8_t *cuda_regcache_get(cuda_regcache_t *rc, int fd, uint64_t off, size_t len, void **ref)
{
    struct stat sb;
    if (!len || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < off ||
        len > (uint64_t)sb.st_size - off) {
        atomic_fetch_add(&g_fallbacks, 1);
        return NULL;
    }
    pthread_mutex_lock(&rc->mu);
    rc_ent_t *e = ent_get(rc, fd, &sb);
    bool ok = e != NULL, fresh = false;
    for (size_t c = off / rc->chunk; ok && c <= (off + len - 1) / rc->chunk; c++) {
        fresh = fresh || e->chunk[c] != CH_REG;
        ok = chunk_ready(rc, e, c);
    }
    if (e && !ok) {
        if (--e->refs == 0 && e->stale)
            ent_release(rc, e);
        e = NULL;
    }
    pthread_mutex_unlock(&rc->mu);
    if (!e) {
        atomic_fetch_add(&g_fallbacks, 1);
        return NULL;
    }
    if (!fresh)
        atomic_fetch_add(&g_hits, 1);
    *ref = e;
    return e->base + off;
}

void cuda_regcache_put(cuda_regcache_t *rc, void *ref)
{
    rc_ent_t *e = ref;
    pthread_mutex_lock(&rc->mu);
    if (--e->refs == 0 && e->stale)
        ent_release(rc, e);
    pthread_mutex_unlock(&rc->mu);
}

void cuda_regcache_free(cuda_regcache_t *rc)
{
    if (!rc)
        return;
    pthread_mutex_lock(&rc->mu);
    while (rc->n)
        ent_drop(rc, rc->n - 1);
    pthread_mutex_unlock(&rc->mu);
    pthread_mutex_destroy(&rc->mu);
    pthread_cond_destroy(&rc->cv);
    atomic_store(&g_budget, 0);
    free(rc);
}
