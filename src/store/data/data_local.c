/* SPDX-License-Identifier: Apache-2.0 */
/* The local data table: one file per object or part.
 *
 * Layout of DIR: objects/<2 hex>/<32 hex id>, tmp/<32 hex id> (writes in flight), lock (flock:
 * one process per data directory), reserve (space held back for a full disk).
 * A write goes to tmp/, is fsynced and renamed into objects/ (finish), and the store commits
 * metadata only after that. Readers get the file's fd, for sendfile and the RDMA engine.
 *
 * A completed multipart upload of several parts is composed, not copied: its reference is a
 * fresh id that names no file, with one chunk (extent) per part naming the part's file. The
 * metadata commit that drops the part rows makes those files the object's; a reader opens an
 * fd per extent (so a replaced or deleted version stays readable while open), and release
 * unlinks every extent. An object of one part takes the part's file as it is.
 *
 * A large positional write (an RDMA PUT over the direct path) is striped the same way: its
 * bytes go into several temp files, one per stripe, because writes into one file take that
 * file's lock (i_rwsem) in turn and so cap one PUT's copy threads; finish syncs and publishes
 * every stripe and names them as the extents of one composed reference, which the metadata
 * commit makes the object's. A crash before that leaves temp files (removed at start) or
 * published files no row names (orphans, removed at start).
 *
 * Full disk: DIR/reserve is a preallocated file. New writes are refused (WH_ERR_NO_SPACE, 507)
 * above the high-water mark, when the disk is full, and while the reserve is not held. When a
 * delete's metadata commit finds no space, the store releases the reserve and retries; once
 * the delete has freed the object's bytes, the reserve is taken again. */
#include "data/data_local_int.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* "ab/ab01..." relative to DIR/objects. */
void ld_relpath(const char *id, char out[DATA_ID_LEN + 4])
{
    snprintf(out, DATA_ID_LEN + 4, "%.2s/%s", id, id);
}

static bool ld_id_valid(const char *s)
{
    if (strlen(s) != DATA_ID_LEN)
        return false;
    for (size_t i = 0; i < DATA_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

wh_status_t ld_random_id(char out[DATA_ID_LEN + 1])
{
    uint8_t raw[DATA_ID_LEN / 2];
    if (wh_random_bytes(raw, sizeof raw) != 0) {
        wh_error("store", "cannot get random bytes for a file id");
        return WH_ERR_INTERNAL;
    }
    wh_hex_encode(raw, sizeof raw, out);
    return WH_OK;
}

/* ---- space and the reserve ---- */

static wh_status_t ld_space(data_table_t *d, data_space_t *out)
{
    ld_t *l = LD(d);
    struct statvfs sv;
    memset(out, 0, sizeof *out);
    if (fstatvfs(l->dir_fd, &sv) != 0) {
        wh_error("store", "statvfs of %s failed: %m", l->dir);
        return WH_ERR_IO;
    }
    out->total = (uint64_t)sv.f_blocks * sv.f_frsize;
    out->free = (uint64_t)sv.f_bavail * sv.f_frsize;
    pthread_mutex_lock(&l->reserve_lock);
    out->reserve = l->reserve_held ? l->reserve_bytes : 0;
    pthread_mutex_unlock(&l->reserve_lock);
    out->high_water_pct = l->high_water_pct;
    out->durability = l->durability;
    out->direct_writes = l->direct_writes && !__atomic_load_n(&l->direct_refused, __ATOMIC_RELAXED);
    out->direct_bytes = atomic_load(&l->direct_bytes);
    out->page_bytes = l->page_bytes;
    ld_reclaim_stats(l, &out->reclaim_pending, &out->reclaimed_files, &out->reclaimed_bytes,
                     &out->reclaim_steps);
    return WH_OK;
}

static wh_status_t ld_space_check_now(ld_t *l, uint64_t more)
{
    data_space_t sp;
    if (ld_space(&l->base, &sp) != WH_OK || sp.total == 0)
        return WH_OK; /* no figures: let the write itself find out */
    if (l->reserve_bytes && !sp.reserve) {
        wh_warn("store",
                "refusing a write: the space reserved for deletes in %s is in use; "
                "delete objects to free space",
                l->dir);
        return WH_ERR_NO_SPACE;
    }
    uint64_t used = sp.total - WH_MIN(sp.free, sp.total);
    bool over =
        l->high_water_pct < 100 && (used + more) * 100 > (uint64_t)l->high_water_pct * sp.total;
    if (sp.free <= more || over) {
        wh_warn("store",
                "refusing a write: %s is %.1f%% full (high-water mark %u%%, %llu bytes "
                "free)",
                l->dir, sp.total ? 100.0 * (double)used / (double)sp.total : 0.0, l->high_water_pct,
                (unsigned long long)sp.free);
        return WH_ERR_NO_SPACE;
    }
    return WH_OK;
}

#define LD_RECLAIM_WAIT_MS 30000u

/* WH_OK if `more` bytes may still be written: below the high-water mark, and the reserve is
 * held (while it is not, only deletes may use the disk). */
wh_status_t ld_space_check(ld_t *l, uint64_t more)
{
    wh_status_t s = ld_space_check_now(l, more);
    /* Space that released files are about to give back counts: wait for it (bounded). */
    if (s == WH_ERR_NO_SPACE && ld_reclaim_pending(l) > 0) {
        wh_info("store", "write waits for released files to be removed dir=%s", l->dir);
        ld_reclaim_wait(l, LD_RECLAIM_WAIT_MS);
        s = ld_space_check_now(l, more);
    }
    return s;
}

/* Creates DIR/reserve at full size if there is room. Lock held. */
static void ld_reserve_take(ld_t *l)
{
    if (l->reserve_held || !l->reserve_bytes)
        return;
    int fd = openat(l->dir_fd, "reserve", O_RDWR | O_CREAT | O_CLOEXEC, LD_FILE_MODE);
    if (fd < 0) {
        wh_warn("store", "cannot create %s/reserve: %m", l->dir);
        return;
    }
    int e = posix_fallocate(fd, 0, (off_t)l->reserve_bytes);
    if (e == 0 && fsync(fd) == 0) {
        l->reserve_held = true;
        wh_info("store", "holding %llu bytes in %s/reserve for deletes on a full disk",
                (unsigned long long)l->reserve_bytes, l->dir);
    } else {
        /* Leave no partial reserve: it would hold space and protect nothing. */
        if (ftruncate(fd, 0) != 0)
            wh_warn("store", "cannot truncate %s/reserve: %m", l->dir);
        unlinkat(l->dir_fd, "reserve", 0);
        wh_warn("store",
                "no room for the %llu-byte reserve in %s yet (%s); new writes are "
                "refused until deletes free space",
                (unsigned long long)l->reserve_bytes, l->dir, strerror(e ? e : errno));
    }
    close(fd);
}

static void ld_reserve_release(data_table_t *d)
{
    ld_t *l = LD(d);
    pthread_mutex_lock(&l->reserve_lock);
    if (l->reserve_held) {
        if (unlinkat(l->dir_fd, "reserve", 0) != 0 && errno != ENOENT)
            wh_error("store", "cannot remove %s/reserve: %m", l->dir);
        l->reserve_held = false;
        wh_warn("store", "disk of %s is full: released the reserve so a delete can commit", l->dir);
    }
    pthread_mutex_unlock(&l->reserve_lock);
}

static void ld_reserve_rearm(data_table_t *d)
{
    ld_t *l = LD(d);
    pthread_mutex_lock(&l->reserve_lock);
    if (!l->reserve_held && l->reserve_bytes) {
        struct statvfs sv;
        /* Take it back only with room to spare, so the next delete still has a little. */
        if (fstatvfs(l->dir_fd, &sv) == 0 &&
            (uint64_t)sv.f_bavail * sv.f_frsize >= l->reserve_bytes + l->reserve_bytes / 4)
            ld_reserve_take(l);
    }
    pthread_mutex_unlock(&l->reserve_lock);
}

/* At open: an existing reserve is kept; on a disk too full to open the metadata, it is let go
 * first, so start-up never needs free space. */
static void ld_reserve_open(ld_t *l)
{
    struct stat sb;
    bool exists = fstatat(l->dir_fd, "reserve", &sb, 0) == 0;
    if (!l->reserve_bytes) {
        if (exists)
            unlinkat(l->dir_fd, "reserve", 0);
        return;
    }
    if (exists && (uint64_t)sb.st_blocks * 512 >= l->reserve_bytes) {
        struct statvfs sv;
        if (fstatvfs(l->dir_fd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < (1U << 20)) {
            unlinkat(l->dir_fd, "reserve", 0);
            wh_warn("store",
                    "disk of %s is full at start: released the reserve; new writes are "
                    "refused until deletes free space",
                    l->dir);
            return;
        }
        l->reserve_held = true;
        return;
    }
    if (exists)
        unlinkat(l->dir_fd, "reserve", 0);
    ld_reserve_take(l);
}

/* ---- files ---- */

void ld_unlink(ld_t *l, const char *id)
{
    if (!id || !id[0])
        return;
    char rel[DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    if (unlinkat(l->obj_fd, rel, 0) < 0 && errno != ENOENT)
        wh_error("store", "cannot remove replaced file=%s: %m; it will be removed at next start",
                 rel);
}

static void ld_release(data_table_t *d, const data_ref_t *ref)
{
    ld_release_ref(LD(d), ref);
}

wh_status_t ld_fsync_dir(int parent_fd, const char *name)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        wh_error("store", "cannot open directory %s for fsync: %m", name);
        return wh_status_from_errno(errno);
    }
    wh_status_t st = WH_OK;
    if (fsync(fd) < 0) {
        wh_error("store", "fsync of directory %s failed: %m", name);
        st = errno == ENOSPC ? WH_ERR_NO_SPACE : WH_ERR_IO;
    }
    close(fd);
    return st;
}

/* Copies len bytes in the kernel (copy_file_range), falling back to pread/pwrite only where
 * the file system refuses. */
wh_status_t ld_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len)
{
    loff_t io = (loff_t)in_off, oo = (loff_t)out_off;
    while (len > 0) {
        size_t chunk = (size_t)WH_MIN(len, (uint64_t)1 << 30);
        ssize_t r = copy_file_range(in_fd, &io, out_fd, &oo, chunk, 0);
        if (r > 0) {
            len -= (uint64_t)r;
            continue;
        }
        if (r == 0) {
            wh_error("store",
                     "copy_file_range hit end of file with %llu bytes left; the source "
                     "file is shorter than its metadata says",
                     (unsigned long long)len);
            return WH_ERR_IO;
        }
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) {
            wh_error("store", "copy_file_range failed: %m");
            return wh_status_from_errno(errno);
        }
        /* The file system cannot copy in the kernel: copy through a bounded buffer. */
        wh_debug("store", "copy_file_range unsupported here (%m), copying in user space");
        size_t bsz = 1 << 20;
        char *buf = malloc(bsz);
        if (!buf)
            return WH_ERR_NOMEM;
        while (len > 0) {
            size_t n = (size_t)WH_MIN(len, (uint64_t)bsz);
            int e = wh_pread_all(in_fd, buf, n, (uint64_t)io);
            if (e == 0)
                e = wh_pwrite_all(out_fd, buf, n, (uint64_t)oo);
            if (e < 0) {
                errno = -e;
                wh_error("store", "copying file data failed: %m");
                free(buf);
                return wh_status_from_errno(-e);
            }
            io += (loff_t)n;
            oo += (loff_t)n;
            len -= n;
        }
        free(buf);
    }
    return WH_OK;
}

/* ---- reader ---- */

/* Opens DIR/objects/<id>: an fd, or -1 with *st set (NOT_FOUND when it is gone). */
static int ld_open_file(ld_t *l, const char *id, wh_status_t *st)
{
    if (!ld_id_valid(id)) {
        wh_error("store", "metadata names a malformed file id '%s'", id);
        *st = WH_ERR_INTERNAL;
        return -1;
    }
    char rel[DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    int fd = openat(l->obj_fd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            *st = WH_ERR_NOT_FOUND; /* replaced meanwhile: the store looks again */
            return -1;
        }
        wh_error("store", "cannot open object file %s/objects/%s: %m", l->dir, rel);
        *st = wh_status_from_errno(errno);
    }
    return fd;
}

static void ld_reader_close(data_reader_t *r)
{
    ld_reader_t *lr = (ld_reader_t *)r;
    if (lr->fd >= 0)
        close(lr->fd);
    for (size_t i = 0; i < lr->n_ext; i++)
        if (lr->ext[i].fd >= 0)
            close(lr->ext[i].fd);
    free(lr->ext);
    free(lr);
}

/* A composed object: every extent's file opened now, so that the version stays readable
 * while the reader is open (a later replace or delete only unlinks). */
static wh_status_t ld_reader_open_extents(ld_t *l, const data_ref_t *ref, uint64_t size,
                                          ld_reader_t *r)
{
    /* The map first: damaged metadata is reported as such, before any file is opened. */
    uint64_t at = 0;
    for (size_t i = 0; i < ref->n_chunks; i++) {
        const data_chunk_t *c = &ref->chunks[i];
        if (c->offset != at || c->length == 0) {
            wh_error("store", "data=%s: extent %zu is at %llu+%llu, expected at %llu", ref->id, i,
                     (unsigned long long)c->offset, (unsigned long long)c->length,
                     (unsigned long long)at);
            return WH_ERR_INTERNAL;
        }
        at += c->length;
    }
    if (at != size) {
        wh_error("store", "data=%s: extents hold %llu bytes, the object %llu", ref->id,
                 (unsigned long long)at, (unsigned long long)size);
        return WH_ERR_INTERNAL;
    }
    if (!(r->ext = calloc(ref->n_chunks, sizeof *r->ext)))
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < ref->n_chunks; i++) {
        const data_chunk_t *c = &ref->chunks[i];
        wh_status_t st = WH_OK;
        r->n_ext = i + 1;
        if ((r->ext[i].fd = ld_open_file(l, c->id, &st)) < 0)
            return st;
        r->ext[i].off = c->offset;
        r->ext[i].len = c->length;
    }
    return WH_OK;
}

static wh_status_t ld_reader_open(data_table_t *d, const data_ref_t *ref, uint64_t size,
                                  data_reader_t **out)
{
    ld_t *l = LD(d);
    ld_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return WH_ERR_NOMEM;
    r->base.data = d;
    r->base.size = size;
    r->fd = -1;
    wh_status_t st = WH_OK;
    if (ref->n_chunks)
        st = ld_reader_open_extents(l, ref, size, r);
    else if ((r->fd = ld_open_file(l, ref->id, &st)) >= 0)
        st = WH_OK;
    if (st != WH_OK) {
        ld_reader_close(&r->base);
        return st;
    }
    *out = &r->base;
    return WH_OK;
}

static int ld_reader_fd(const data_reader_t *r)
{
    return ((const ld_reader_t *)r)->fd;
}

wh_status_t ld_reader_extent(const data_reader_t *r, uint64_t off, int *fd, uint64_t *file_off,
                             uint64_t *len)
{
    const ld_reader_t *lr = (const ld_reader_t *)r;
    if (off >= r->size)
        return WH_ERR_RANGE;
    if (!lr->n_ext) {
        *fd = lr->fd;
        *file_off = off;
        *len = r->size - off;
        return WH_OK;
    }
    size_t lo = 0, hi = lr->n_ext; /* the last extent that starts at or before off */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (lr->ext[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    const ld_extent_t *e = &lr->ext[lo];
    *fd = e->fd;
    *file_off = off - e->off;
    *len = e->len - *file_off;
    return WH_OK;
}

static wh_status_t ld_reader_pread(data_reader_t *r, void *buf, size_t n, uint64_t off)
{
    while (n > 0) {
        int fd;
        uint64_t foff, avail;
        wh_status_t st = ld_reader_extent(r, off, &fd, &foff, &avail);
        if (st != WH_OK)
            return st;
        size_t k = (size_t)WH_MIN((uint64_t)n, avail);
        int e = wh_pread_all(fd, buf, k, foff);
        if (e != 0) {
            errno = -e;
            wh_error("store", "reading an object file failed: %m");
            return wh_status_from_errno(-e);
        }
        buf = (char *)buf + k;
        off += k;
        n -= k;
    }
    return WH_OK;
}

/* ---- composing (multipart completion) ---- */

static wh_status_t ld_compose(data_table_t *d, const data_chunk_t *parts, size_t n, data_ref_t *out)
{
    (void)d;
    memset(out, 0, sizeof *out);
    if (n == 0)
        return WH_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!ld_id_valid(parts[i].id)) {
            wh_error("store", "a part names a malformed file id '%s'", parts[i].id);
            return WH_ERR_INTERNAL;
        }
    if (n == 1) { /* the part's file is the object's */
        memcpy(out->id, parts[0].id, sizeof out->id);
        return WH_OK;
    }
    if (!(out->chunks = malloc(n * sizeof *out->chunks)))
        return WH_ERR_NOMEM;
    wh_status_t st = ld_random_id(out->id);
    if (st != WH_OK) {
        data_ref_clear(out);
        return st;
    }
    memcpy(out->chunks, parts, n * sizeof *out->chunks);
    for (size_t i = 0; i < n; i++)
        out->chunks[i].shared = false;
    out->n_chunks = n;
    return WH_OK;
}

/* ---- recovery ---- */

/* Removes everything in DIR/tmp and every object/part file no row refers to. */
static wh_status_t ld_recover(data_table_t *d, data_referenced_fn referenced, void *arg)
{
    ld_t *l = LD(d);
    unsigned tmp_removed = 0, orphans = 0;
    int fd = dup(l->tmp_fd);
    DIR *dr = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dr) {
        wh_error("store", "cannot read %s/tmp: %m", l->dir);
        if (fd >= 0)
            close(fd);
        return WH_ERR_IO;
    }
    rewinddir(dr);
    struct dirent *de;
    while ((de = readdir(dr))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(l->tmp_fd, de->d_name, 0) == 0)
            tmp_removed++;
        else
            wh_warn("store", "cannot remove leftover temp file=%s/tmp/%s: %m", l->dir, de->d_name);
    }
    closedir(dr);

    for (int b = 0; b < 256; b++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", b);
        int sfd = openat(l->obj_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0) {
            wh_error("store", "cannot open %s/objects/%s: %m", l->dir, sub);
            return WH_ERR_IO;
        }
        dr = fdopendir(sfd);
        if (!dr) {
            close(sfd);
            return WH_ERR_IO;
        }
        while ((de = readdir(dr))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            bool keep = false;
            if (ld_id_valid(de->d_name) && strncmp(de->d_name, sub, 2) == 0) {
                wh_status_t s = referenced(arg, de->d_name);
                if (s != WH_OK && s != WH_ERR_NOT_FOUND) {
                    closedir(dr);
                    return s;
                }
                keep = s == WH_OK;
            }
            if (keep)
                continue;
            if (unlinkat(dirfd(dr), de->d_name, 0) == 0)
                orphans++;
            else
                wh_warn("store", "cannot remove orphan file=%s/objects/%s/%s: %m", l->dir, sub,
                        de->d_name);
        }
        closedir(dr);
    }
    if (tmp_removed || orphans)
        wh_info("store", "recovery removed temp_files=%u orphan_files=%u dir=%s", tmp_removed,
                orphans, l->dir);
    return WH_OK;
}

/* ---- open/close ---- */

static void ld_close(data_table_t *d)
{
    ld_t *l = LD(d);
    ld_reclaim_stop(l); /* released files gone before the directory is let go */
    int fds[] = {l->tmp_fd, l->obj_fd, l->dir_fd, l->lock_fd}; /* lock last: releases flock */
    for (size_t i = 0; i < WH_ARRAY_SIZE(fds); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    pthread_mutex_destroy(&l->reserve_lock);
    free(l->dir);
    free(l);
}

static const data_ops_t LD_OPS = {
    .name = "local",
    .close = ld_close,
    .recover = ld_recover,
    .space = ld_space,
    .reserve_release = ld_reserve_release,
    .reserve_rearm = ld_reserve_rearm,
    .writer_open = ld_writer_open,
    .write = ld_write,
    .append = ld_append,
    .writer_pread = ld_writer_pread,
    .rdma_put = NULL, /* the server's own RDMA engine feeds write() or write_at() */
    .write_at_begin = ld_write_at_begin,
    .write_at = ld_write_at,
    .write_at_stripe = ld_write_at_stripe,
    .write_at_unit = ld_write_at_unit,
    .map_at_begin = ld_map_at_begin,
    .map_at = ld_map_at,
    .finish = ld_finish,
    .writer_free = ld_writer_free,
    .writer_abort = ld_writer_abort,
    .reader_open = ld_reader_open,
    .reader_fd = ld_reader_fd,
    .reader_pread = ld_reader_pread,
    .rdma_get = NULL, /* the server's own RDMA engine reads reader_fd() / reader_extent() */
    .reader_extent = ld_reader_extent,
    .reader_close = ld_reader_close,
    .release = ld_release,
    .compose = ld_compose,
};

static int ld_open_dir(int parent, const char *name, const char *dir)
{
    if (mkdirat(parent, name, LD_DIR_MODE) < 0 && errno != EEXIST) {
        wh_error("store", "cannot create %s/%s: %m", dir, name);
        return -1;
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        wh_error("store", "cannot open %s/%s: %m", dir, name);
    return fd;
}

/* The page size a large file here gets: st_blksize of a 4 MiB sparse probe file under tmp/
 * (a tmpfs with huge pages answers the huge page's size, as it keeps the file in them; a
 * sparse file allocates nothing). A tmpfs in base pages is named at start-up: large PUTs and
 * GETs there spend much of their time on page handling (docs/scale-up.md). */
static void ld_page_probe(ld_t *l)
{
    char name[32];
    snprintf(name, sizeof name, ".page-probe-%ld", (long)getpid());
    int fd = openat(l->tmp_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, LD_FILE_MODE);
    if (fd < 0)
        return;
    struct stat sb;
    struct statfs sf;
    if (ftruncate(fd, 4 << 20) == 0 && fstat(fd, &sb) == 0)
        l->page_bytes = (uint64_t)sb.st_blksize;
    bool fs_known = fstatfs(fd, &sf) == 0;
    bool tmpfs = fs_known && (unsigned long)sf.f_type == TMPFS_MAGIC;
    l->memory_fs = tmpfs || (fs_known && (unsigned long)sf.f_type == RAMFS_MAGIC);
    close(fd);
    unlinkat(l->tmp_fd, name, 0);
    long psz = sysconf(_SC_PAGESIZE);
    if (!tmpfs || psz <= 0)
        return;
    if (l->page_bytes > (uint64_t)psz)
        wh_info("store",
                "data directory %s: tmpfs in %llu KiB pages; large writes go in whole pages",
                l->dir, (unsigned long long)(l->page_bytes >> 10));
    else
        wh_warn("store",
                "data directory %s: tmpfs in %ld-byte pages; large PUTs and GETs run up to 2x "
                "faster on a tmpfs mounted with huge=within_size (docs/scale-up.md)",
                l->dir, psz);
}

wh_status_t data_local_open(const data_local_config_t *cfg, data_table_t **out)
{
    wh_status_t st = WH_ERR_IO;
    const char *dir = cfg->dir;
    ld_t *l = calloc(1, sizeof *l);
    if (!l)
        return WH_ERR_NOMEM;
    l->base.ops = &LD_OPS;
    l->lock_fd = l->obj_fd = l->tmp_fd = l->dir_fd = -1;
    l->reserve_bytes = cfg->reserve_bytes;
    l->high_water_pct = cfg->high_water_pct ? WH_MIN(cfg->high_water_pct, 100u) : 100;
    l->durability = cfg->durability;
    l->direct_writes = cfg->direct_writes;
    l->map_writes = cfg->map_writes;
    l->put_stripes = cfg->put_stripes;
    if (!l->put_stripes) { /* one stripe per two cores: each takes up to two copy threads */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        l->put_stripes = ncpu > 2 ? (unsigned)((ncpu + 1) / 2) : 1;
    }
    l->put_stripes = WH_MIN(l->put_stripes, (unsigned)DATA_MAX_STRIPES);
    l->stripe_min = cfg->stripe_min ? cfg->stripe_min : 64ULL << 20;
    pthread_mutex_init(&l->reserve_lock, NULL);
    ld_reclaim_init(l);
    if (!(l->dir = strdup(dir))) {
        st = WH_ERR_NOMEM;
        goto err;
    }
    int e = wh_mkdir_p(dir, LD_DIR_MODE);
    if (e < 0) {
        errno = -e;
        wh_error("store", "cannot create data directory %s: %m", dir);
        st = wh_status_from_errno(-e);
        goto err;
    }
    l->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (l->dir_fd < 0) {
        wh_error("store", "cannot open data directory %s: %m", dir);
        goto err;
    }
    l->lock_fd = openat(l->dir_fd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, LD_FILE_MODE);
    if (l->lock_fd < 0) {
        wh_error("store", "cannot create %s/lock: %m", dir);
        goto err;
    }
    if (flock(l->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            wh_error("store",
                     "data directory %s is in use by another process; stop it or use "
                     "another --data",
                     dir);
            st = WH_ERR_BUSY;
        } else {
            wh_error("store", "cannot lock %s/lock: %m", dir);
        }
        goto err;
    }
    if ((l->obj_fd = ld_open_dir(l->dir_fd, "objects", dir)) < 0 ||
        (l->tmp_fd = ld_open_dir(l->dir_fd, "tmp", dir)) < 0)
        goto err;
    for (int b = 0; b < 256; b++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", b);
        if (mkdirat(l->obj_fd, sub, LD_DIR_MODE) < 0 && errno != EEXIST) {
            wh_error("store", "cannot create %s/objects/%s: %m", dir, sub);
            goto err;
        }
    }
    /* Make the layout itself durable before any object is committed into it. */
    if (fsync(l->obj_fd) < 0 || fsync(l->tmp_fd) < 0 || fsync(l->dir_fd) < 0) {
        wh_error("store", "fsync of data directory %s failed: %m", dir);
        goto err;
    }
    ld_reserve_open(l);
    ld_page_probe(l);
    *out = &l->base;
    return WH_OK;
err:
    ld_close(&l->base);
    return st;
}
