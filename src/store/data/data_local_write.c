/* SPDX-License-Identifier: Apache-2.0 */
/* The local data table's writer (the table: data_local.c, whose opening comment describes the
 * layout): a temp file per write under DIR/tmp, sequential writes with early writeback,
 * positional writes from several threads (pwrite, O_DIRECT for cold storage, or a shared
 * mapping), a large positional write striped over several files, and finish (fsync, rename
 * into DIR/objects, one directory fsync) or abort. */
#include "data/data_local_int.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

wh_status_t ld_writer_open(data_table_t *d, data_writer_t **out)
{
    ld_t *l = LD(d);
    wh_status_t s = ld_space_check(l, 0);
    if (s != WH_OK)
        return s;
    ld_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return WH_ERR_NOMEM;
    w->base.data = d;
    s = ld_random_id(w->id);
    if (s != WH_OK)
        goto err;
    w->dfd = -1;
    w->fd = openat(l->tmp_fd, w->id, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, LD_FILE_MODE);
    if (w->fd < 0) {
        wh_error("store", "cannot create temp file %s/tmp/%s: %m", l->dir, w->id);
        s = wh_status_from_errno(errno);
        goto err;
    }
    *out = &w->base;
    return WH_OK;
err:
    free(w);
    return s;
}

wh_status_t ld_write(data_writer_t *dw, const void *p, size_t n)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    ld_t *l = LD(dw->data);
    if (w->nstripes > 1)
        return WH_ERR_INVALID; /* a striped writer takes only write_at */
    if (w->size + n - w->checked >= LD_SPACE_CHECK) {
        wh_status_t s = ld_space_check(l, n);
        if (s != WH_OK)
            return s;
        w->checked = w->size + n;
    }
    int e = wh_write_all(w->fd, p, n);
    if (e < 0) {
        errno = -e;
        wh_error("store", "write to temp file %s/tmp/%s failed: %m", l->dir, w->id);
        return wh_status_from_errno(-e);
    }
    w->size += n;
    if (w->size - w->synced >= LD_WRITEBACK_CHUNK) {
        /* Asynchronous: only starts writeback, so a large PUT does not end in one long fsync. */
        sync_file_range(w->fd, (off64_t)w->synced, (off64_t)(w->size - w->synced),
                        SYNC_FILE_RANGE_WRITE);
        w->synced = w->size;
    }
    return WH_OK;
}

/* Stripes for a positional write of total bytes: as many as configured, each a whole number
 * of DATA_STRIPE_ALIGN and none empty; files 1.. are fresh temp files beside the writer's.
 * Where they cannot be made (out of file descriptors, say) the write stays in one file. */
static void ld_stripes_open(ld_writer_t *w, uint64_t total)
{
    ld_t *l = LD(w->base.data);
    uint64_t units = (total + DATA_STRIPE_ALIGN - 1) / DATA_STRIPE_ALIGN;
    uint64_t ns = WH_MIN((uint64_t)l->put_stripes, units);
    if (ns < 2)
        return;
    uint64_t len = (units + ns - 1) / ns * DATA_STRIPE_ALIGN;
    ns = (total + len - 1) / len;
    if (ns < 2 || !(w->more = calloc(ns - 1, sizeof *w->more)))
        return;
    unsigned k = 0;
    for (; k + 1 < ns; k++) {
        ld_stripe_t *x = &w->more[k];
        if (ld_random_id(x->id) != WH_OK)
            break;
        /* In the writer's own directory of objects/: finish syncs one directory. */
        memcpy(x->id, w->id, 2);
        x->fd = openat(l->tmp_fd, x->id, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, LD_FILE_MODE);
        if (x->fd < 0) {
            wh_warn("store", "cannot create temp file %s/tmp/%s: %m; this write goes into one file",
                    l->dir, x->id);
            break;
        }
    }
    if (k + 1 < ns) { /* undo: one file after all */
        while (k-- > 0) {
            close(w->more[k].fd);
            if (unlinkat(l->tmp_fd, w->more[k].id, 0) < 0)
                wh_warn("store", "cannot remove temp file %s/tmp/%s: %m", l->dir, w->more[k].id);
        }
        free(w->more);
        w->more = NULL;
        return;
    }
    w->stripe_len = len;
    w->nstripes = (unsigned)ns;
}

uint64_t ld_write_at_stripe(data_writer_t *dw)
{
    const ld_writer_t *w = (const ld_writer_t *)dw;
    return w->nstripes > 1 ? w->stripe_len : 0;
}

uint64_t ld_write_at_unit(data_writer_t *dw)
{
    return ((const ld_writer_t *)dw)->unit;
}

/* A tmpfs with huge pages (mounted huge=always or huge=within_size, or shmem_enabled=force)
 * keeps a file in 2 MiB pages, and a write that covers part of a fresh one first zeroes the
 * rest of it: written 256 KiB at a time, a file is cleared once and then copied over. Such a
 * file says so in st_blksize (the huge page's size). Under huge=within_size a page is huge
 * only where the file's size covers it, so the files are first given their final sizes
 * (on tmpfs that allocates nothing). Sets w->unit to that size, or 0. */
static void ld_unit_probe(ld_writer_t *w, uint64_t total)
{
    struct statfs sf;
    struct stat sb;
    long psz = sysconf(_SC_PAGESIZE);
    w->unit = 0;
    /* The directory's probe at open (ld_page_probe) found base pages: nothing to size. */
    if (psz <= 0 || LD(w->base.data)->page_bytes <= (uint64_t)psz)
        return;
    if (fstatfs(w->fd, &sf) != 0 || (unsigned long)sf.f_type != TMPFS_MAGIC)
        return;
    for (unsigned k = 0; k < WH_MAX(w->nstripes, 1u); k++) {
        uint64_t at = (uint64_t)k * w->stripe_len;
        uint64_t len = w->nstripes > 1 ? WH_MIN(w->stripe_len, total - at) : total;
        int fd = k == 0 ? w->fd : w->more ? w->more[k - 1].fd : -1;
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
            return;
    }
    if (fstat(w->fd, &sb) != 0)
        return;
    uint64_t b = (uint64_t)sb.st_blksize;
    if (b > (uint64_t)psz && (b & (b - 1)) == 0 && DATA_STRIPE_ALIGN % b == 0)
        w->unit = b;
}

wh_status_t ld_write_at_begin(data_writer_t *dw, uint64_t total)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    if (w->size)
        return WH_ERR_INVALID;
    wh_status_t s = ld_space_check(LD(dw->data), total);
    if (s != WH_OK)
        return s;
    w->size = w->synced = w->checked = total;
    ld_t *l = LD(dw->data);
    if (!l->direct_writes && l->put_stripes > 1 && total >= l->stripe_min) {
        ld_stripes_open(w, total);
        ld_unit_probe(w, total);
        return WH_OK;
    }
    if (l->direct_writes && total >= LD_WRITEBACK_CHUNK &&
        !__atomic_load_n(&l->direct_refused, __ATOMIC_RELAXED)) {
        w->dfd = openat(l->tmp_fd, w->id, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (w->dfd < 0 && errno == EINVAL &&
            !__atomic_exchange_n(&l->direct_refused, true, __ATOMIC_RELAXED))
            wh_warn("store",
                    "%s: the file system refuses O_DIRECT; --data-writes direct "
                    "writes go through the page cache",
                    l->dir);
    }
    if (w->dfd < 0)
        ld_unit_probe(w, total);
    return WH_OK;
}

#define LD_DIO_ALIGN 4096u

/* Stripe k of a striped writer: its fd and id, and how many bytes of the object it holds. */
static int ld_stripe_fd(const ld_writer_t *w, unsigned k, const char **id, uint64_t *len)
{
    if (id)
        *id = k ? w->more[k - 1].id : w->id;
    if (len)
        *len = WH_MIN(w->stripe_len, w->size - (uint64_t)k * w->stripe_len);
    return k ? w->more[k - 1].fd : w->fd;
}

static wh_status_t ld_write_file(ld_writer_t *w, int fd, const char *id, uint64_t size,
                                 const void *p, size_t n, uint64_t off)
{
    /* Aligned pieces past the page cache; a short tail (and anything unaligned) through it. */
    bool direct = w->dfd >= 0 && ((uintptr_t)p | off | n) % LD_DIO_ALIGN == 0;
    int e = wh_pwrite_all(direct ? w->dfd : fd, p, n, off);
    if (direct && e == 0)
        atomic_fetch_add(&LD(w->base.data)->direct_bytes, n);
    if (e < 0) {
        errno = -e;
        wh_error("store", "write to temp file %s/tmp/%s at %" PRIu64 " failed: %m",
                 LD(w->base.data)->dir, id, off);
        return wh_status_from_errno(-e);
    }
    uint64_t end = off + n;
    if (!direct && (end % LD_WRITEBACK_CHUNK == 0 || end == size)) {
        uint64_t from = (end - 1) / LD_WRITEBACK_CHUNK * LD_WRITEBACK_CHUNK;
        sync_file_range(fd, (off64_t)from, (off64_t)(end - from), SYNC_FILE_RANGE_WRITE);
    }
    return WH_OK;
}

/* Positional: pwrite at off (of a striped writer: in the stripe's file); writeback of each
 * LD_WRITEBACK_CHUNK of a file is started by the write that ends it (the RDMA engine's
 * windows are as large, so one thread writes each). */
wh_status_t ld_write_at(data_writer_t *dw, const void *p, size_t n, uint64_t off)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    if (w->nstripes < 2)
        return ld_write_file(w, w->fd, w->id, w->size, p, n, off);
    while (n > 0) { /* a piece that crosses a stripe's end goes on in the next file */
        unsigned k = (unsigned)(off / w->stripe_len);
        if (k >= w->nstripes)
            return WH_ERR_INVALID;
        const char *id;
        uint64_t len, foff = off - (uint64_t)k * w->stripe_len;
        int fd = ld_stripe_fd(w, k, &id, &len);
        size_t m = (size_t)WH_MIN((uint64_t)n, len - foff);
        wh_status_t s = ld_write_file(w, fd, id, len, p, m, foff);
        if (s != WH_OK)
            return s;
        p = (const uint8_t *)p + m;
        off += m;
        n -= m;
    }
    return WH_OK;
}

/* Positional writes through a mapping. SIGBUS safety: the mapped file is this writer's own
 * fresh temp file (O_EXCL, a random name under DIR/tmp that nothing else opens), given all of
 * its total bytes by fallocate before it is mapped, and never truncated while mapped: a store
 * through the mapping never lands past the end of the file, nor on a block the file system
 * still has to find (a full disk answers here, WH_ERR_NO_SPACE, not as a fault). The mapping
 * is gone (ld_unmap) before finish syncs and renames the file, and before abort unlinks it. */
wh_status_t ld_map_at_begin(data_writer_t *dw, uint64_t total)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    ld_t *l = LD(dw->data);
    if (w->size || w->map)
        return WH_ERR_INVALID;
    /* O_DIRECT cold-storage writes stay off the page cache: write_at. */
    if (total == 0 || total > SIZE_MAX || l->direct_writes || !l->map_writes)
        return WH_ERR_UNSUPPORTED;
    wh_status_t s = ld_space_check(l, total);
    if (s != WH_OK)
        return s;
    if (fallocate(w->fd, 0, 0, (off_t)total) != 0) {
        if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) {
            wh_debug("store", "%s: fallocate refused (%m): positional writes by pwrite", l->dir);
            return WH_ERR_UNSUPPORTED;
        }
        wh_error("store", "fallocate of temp file %s/tmp/%s to %" PRIu64 " bytes failed: %m",
                 l->dir, w->id, total);
        s = errno == ENOSPC ? WH_ERR_NO_SPACE : wh_status_from_errno(errno);
        if (ftruncate(w->fd, 0) != 0) /* leave the fresh file as it was */
            wh_warn("store", "cannot truncate temp file %s/tmp/%s: %m", l->dir, w->id);
        return s;
    }
    void *m = mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    if (m == MAP_FAILED) {
        wh_debug("store", "%s: mmap of %" PRIu64 " bytes refused (%m): writes by pwrite", l->dir,
                 total);
        if (ftruncate(w->fd, 0) != 0)
            wh_warn("store", "cannot truncate temp file %s/tmp/%s: %m", l->dir, w->id);
        return WH_ERR_UNSUPPORTED;
    }
    w->map = m;
    w->map_len = (size_t)total;
    w->size = w->synced = w->checked = total;
    return WH_OK;
}

/* The window [off, off+n) of the mapping, its pages prefaulted writable in one call where the
 * kernel has MADV_POPULATE_WRITE (else they fault in as they are written). */
wh_status_t ld_map_at(data_writer_t *dw, uint64_t off, size_t n, void **p)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    ld_t *l = LD(dw->data);
    if (!w->map)
        return WH_ERR_UNSUPPORTED;
    if (off > w->map_len || n > w->map_len - off)
        return WH_ERR_INVALID;
    *p = w->map + off;
    if (n == 0 || __atomic_load_n(&l->populate_refused, __ATOMIC_RELAXED))
        return WH_OK;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t from = (size_t)off / pg * pg;
    if (madvise(w->map + from, (size_t)off + n - from, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL) {
            __atomic_store_n(&l->populate_refused, true, __ATOMIC_RELAXED);
        } else if (errno != EINTR) {
            wh_error("store", "prefaulting temp file %s/tmp/%s at %" PRIu64 " failed: %m", l->dir,
                     w->id, off);
            return errno == ENOMEM ? WH_ERR_NOMEM : WH_ERR_IO;
        }
    }
    return WH_OK;
}

/* Drops the mapping; its dirty pages stay the file's, for fdatasync to write. */
static void ld_unmap(ld_writer_t *w)
{
    if (w->map && munmap(w->map, w->map_len) != 0)
        wh_warn("store", "munmap of temp file %s failed: %m", w->id);
    w->map = NULL;
    w->map_len = 0;
}

wh_status_t ld_append(data_writer_t *dw, data_reader_t *r, uint64_t off, uint64_t len)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    ld_reader_t *lr = (ld_reader_t *)r;
    wh_status_t s = ld_space_check(LD(dw->data), len);
    if (s != WH_OK)
        return s;
    if (!lr->n_ext) {
        s = ld_copy_range(lr->fd, off, w->fd, w->size, len);
        if (s == WH_OK)
            w->size += len;
        return s;
    }
    while (len > 0) { /* a composed source: extent by extent */
        int fd;
        uint64_t foff, avail;
        if ((s = ld_reader_extent(r, off, &fd, &foff, &avail)) != WH_OK)
            return s;
        uint64_t n = WH_MIN(avail, len);
        if ((s = ld_copy_range(fd, foff, w->fd, w->size, n)) != WH_OK)
            return s;
        w->size += n;
        off += n;
        len -= n;
    }
    return WH_OK;
}

wh_status_t ld_writer_pread(data_writer_t *dw, void *buf, size_t n, uint64_t off)
{
    const ld_writer_t *w = (const ld_writer_t *)dw;
    if (w->nstripes < 2) {
        int e = wh_pread_all(w->fd, buf, n, off);
        return e ? wh_status_from_errno(-e) : WH_OK;
    }
    while (n > 0) {
        unsigned k = (unsigned)(off / w->stripe_len);
        if (k >= w->nstripes)
            return WH_ERR_RANGE;
        uint64_t len, foff = off - (uint64_t)k * w->stripe_len;
        int fd = ld_stripe_fd(w, k, NULL, &len);
        size_t m = (size_t)WH_MIN((uint64_t)n, len - foff);
        int e = wh_pread_all(fd, buf, m, foff);
        if (e)
            return wh_status_from_errno(-e);
        buf = (uint8_t *)buf + m;
        off += m;
        n -= m;
    }
    return WH_OK;
}

static bool *ld_stripe_published(ld_writer_t *w, unsigned k)
{
    return k ? &w->more[k - 1].published : &w->published;
}

/* finish of a striped writer: every stripe synced (stripe 0 already is), then every one moved
 * into objects/ and their directory synced (one: the ids share their first two characters);
 * *ref is then a composed reference (a fresh id that names no file, one extent per stripe),
 * as ld_compose makes for a multipart upload. */
static wh_status_t ld_finish_stripes(ld_writer_t *w, bool sync, data_ref_t *ref)
{
    ld_t *l = LD(w->base.data);
    data_ref_t out;
    memset(&out, 0, sizeof out);
    for (unsigned k = 1; sync && k < w->nstripes; k++)
        if (fdatasync(w->more[k - 1].fd) < 0) {
            wh_error("store", "fdatasync of temp file %s/tmp/%s failed: %m", l->dir,
                     w->more[k - 1].id);
            return errno == ENOSPC ? WH_ERR_NO_SPACE : WH_ERR_IO;
        }
    wh_status_t s = ld_random_id(out.id);
    if (s != WH_OK)
        return s;
    if (!(out.chunks = calloc(w->nstripes, sizeof *out.chunks)))
        return WH_ERR_NOMEM;
    out.n_chunks = w->nstripes;
    for (unsigned k = 0; k < w->nstripes; k++) {
        const char *id;
        uint64_t len;
        ld_stripe_fd(w, k, &id, &len);
        char rel[DATA_ID_LEN + 4];
        ld_relpath(id, rel);
        if (renameat(l->tmp_fd, id, l->obj_fd, rel) < 0) {
            wh_error("store", "cannot move temp file %s into %s/objects/%s: %m", id, l->dir, rel);
            s = wh_status_from_errno(errno);
            goto err;
        }
        *ld_stripe_published(w, k) = true;
        data_chunk_t *c = &out.chunks[k];
        memcpy(c->id, id, sizeof c->id);
        c->offset = (uint64_t)k * w->stripe_len;
        c->length = len;
    }
    char sub[3] = {w->id[0], w->id[1], '\0'};
    if (sync && (s = ld_fsync_dir(l->obj_fd, sub)) != WH_OK)
        goto err;
    *ref = out;
    return WH_OK;
err:
    data_ref_clear(&out);
    return s;
}

wh_status_t ld_finish(data_writer_t *dw, data_ref_t *ref)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    ld_t *l = LD(dw->data);
    bool sync = l->durability == DATA_DURABLE_DISK;
    /* Writes through the mapping dirtied the file's page cache pages (a shared mapping marks
     * them dirty when first written, and munmap hands on what the page tables still hold), so
     * the fdatasync below writes them as it does pwrite's: the same rule, the bytes are on
     * disk before the commit. */
    ld_unmap(w);
    /* fdatasync: the bytes and what reading them back needs (size, extents), not mtime. Each
     * request syncs its own file, so objects and parts in flight sync in parallel, and the
     * writeback started while the bytes arrived (sync_file_range) leaves it little to do. */
    if (sync && fdatasync(w->fd) < 0) {
        wh_error("store", "fdatasync of temp file %s/tmp/%s failed: %m", l->dir, w->id);
        return errno == ENOSPC ? WH_ERR_NO_SPACE : WH_ERR_IO;
    }
    if (w->nstripes > 1)
        return ld_finish_stripes(w, sync, ref);
    char rel[DATA_ID_LEN + 4];
    ld_relpath(w->id, rel);
    if (renameat(l->tmp_fd, w->id, l->obj_fd, rel) < 0) {
        wh_error("store", "cannot move temp file %s into %s/objects/%s: %m", w->id, l->dir, rel);
        return wh_status_from_errno(errno);
    }
    w->published = true;
    char sub[3] = {w->id[0], w->id[1], '\0'};
    wh_status_t s = sync ? ld_fsync_dir(l->obj_fd, sub) : WH_OK;
    if (s != WH_OK)
        return s;
    memset(ref, 0, sizeof *ref);
    memcpy(ref->id, w->id, sizeof ref->id);
    return WH_OK;
}

void ld_writer_free(data_writer_t *dw)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    if (!w)
        return;
    ld_unmap(w);
    if (w->fd >= 0)
        close(w->fd);
    if (w->dfd >= 0)
        close(w->dfd);
    for (unsigned k = 1; k < w->nstripes; k++)
        if (w->more[k - 1].fd >= 0)
            close(w->more[k - 1].fd);
    free(w->more);
    free(w);
}

void ld_writer_abort(data_writer_t *dw)
{
    ld_writer_t *w = (ld_writer_t *)dw;
    if (!w)
        return;
    ld_t *l = LD(dw->data);
    ld_unmap(w);
    for (unsigned k = 0; k < WH_MAX(w->nstripes, 1u); k++) {
        const char *id = k ? w->more[k - 1].id : w->id;
        if (*ld_stripe_published(w, k))
            ld_unlink(l, id);
        else if (unlinkat(l->tmp_fd, id, 0) < 0 && errno != ENOENT)
            wh_warn("store", "cannot remove temp file %s/tmp/%s: %m", l->dir, id);
    }
    ld_writer_free(dw);
}
