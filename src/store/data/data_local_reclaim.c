/* SPDX-License-Identifier: Apache-2.0 */
/* The local data table, reclaiming: a large released object's space is given back off the
 * request.
 *
 * Unlinking a file frees its page cache and its blocks, and on a file system mounted with
 * discard the blocks are also discarded: on the VM's ext4 (discard) unlinking a written and
 * synced file took 0.39 s for 1 GiB and 0.86 s for 2 GiB, spent inside the DELETE (or the
 * overwriting PUT) that released it. An overwrite-safe checkpoint deletes its old generation
 * inside the save, so training waited for that too. The files of a released object of
 * LD_RECLAIM_MIN bytes or more (its stripes or parts together) are instead renamed into
 * DIR/tmp (a directory entry moved: objects/ no longer holds them) and given back by this
 * thread. A crash before that leaves them in tmp/, which start-up empties. A write that finds
 * the disk full while bytes are still being given back waits for them (ld_space_check).
 * Smaller objects' files are unlinked in place, as before. The queue grows as needed
 * (ld_reclaim_room): a checkpoint is thousands of files.
 *
 * In steps. Both machines' ext4 runs without a journal, and there the thread that frees the
 * blocks issues their discards and waits for them (ext4_free_blocks -> blkdev_issue_discard,
 * in kernel stacks sampled on the GPU machine); other writers' durable commits wait longer
 * meanwhile: giving back 8 GiB in three unlinks held another thread's 4 KiB commit up to
 * 211-225 ms there, against 68-71 ms in steps of 256 MiB (bench/disk_reclaim.py). So a file
 * with more than LD_RECLAIM_STEP bytes of blocks is first emptied by punching holes of
 * LD_RECLAIM_STEP bytes from its end, each followed by fdatasync, and then unlinked (RocksDB's
 * delete scheduler truncates a file the same way). Smaller files (parts, stripes) are unlinked
 * whole, with an fsync of tmp/ after every LD_RECLAIM_STEP bytes of them: on a journaled ext4
 * the frees (and discards) happen in the journal commit that other fsyncs wait for, and that
 * sync bounds what one commit carries (not measured: neither machine has a journaled disk).
 * Punched, not truncated: a file that is still read (a GET or a copy holding it open, or an
 * RDMA GET holding it mapped) would read zeros, which its checksum catches, where a truncated
 * mapping raises SIGBUS. Such a file is not punched at all: before the first step
 * /proc/self/fd and /proc/self/maps are searched for its inode, and one found there is only
 * unlinked (its blocks go when the reader lets go). Its name left objects/ before the search,
 * so no reader opens it by name after it; only an open that had already looked the name up
 * and ends after the search is missed, and it reads zeros. On tmpfs and ramfs a file goes in
 * one unlink, without steps. */
#include "data/data_local_int.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LD_RECLAIM_PREFIX "reclaim-"

/* Whether this process holds the inode open (/proc/self/fd, except skip_fd) or mapped
 * (/proc/self/maps, by inode number alone: a file system whose maps name another device errs
 * towards "in use"). true where either cannot be read. */
static bool ld_in_use(int skip_fd, dev_t dev, ino_t ino)
{
    DIR *dr = opendir("/proc/self/fd");
    if (!dr)
        return true;
    int dfd = dirfd(dr);
    bool used = false;
    struct dirent *de;
    while (!used && (de = readdir(dr))) {
        if (de->d_name[0] == '.')
            continue;
        int n = atoi(de->d_name);
        struct stat sb;
        if (n != skip_fd && n != dfd && fstatat(dfd, de->d_name, &sb, 0) == 0 && sb.st_dev == dev &&
            sb.st_ino == ino)
            used = true;
    }
    closedir(dr);
    if (used)
        return true;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return true;
    char *line = NULL;
    size_t cap = 0;
    while (!used && getline(&line, &cap, f) > 0) {
        unsigned long long inode = 0;
        /* address perms offset dev inode [path] */
        if (sscanf(line, "%*s %*s %*s %*s %llu", &inode) == 1 && inode != 0 &&
            inode == (unsigned long long)ino)
            used = true;
    }
    free(line);
    fclose(f);
    return used;
}

/* What giving one file back did. */
typedef struct ld_giveback {
    uint64_t freed; /* bytes of blocks freed by the steps (the rest go with the unlink) */
    unsigned steps; /* holes punched, each made durable */
    bool held;      /* open or mapped in this process: its blocks go when it is let go */
} ld_giveback_t;

/* Gives one released file's blocks back in durable steps, from its end (see the top): one of
 * more than LD_RECLAIM_STEP bytes of blocks (as queued) on a disk's file system, not held open
 * or mapped here. Its pending bytes are counted down as they go. The caller unlinks the file,
 * whatever is left of it. */
static ld_giveback_t ld_reclaim_steps(ld_t *l, const char *name, uint64_t blocks)
{
    ld_giveback_t g = {0};
    if (l->memory_fs || blocks <= LD_RECLAIM_STEP)
        return g;
    int fd = openat(l->tmp_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return g;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (g.held = ld_in_use(fd, sb.st_dev, sb.st_ino))) {
        close(fd);
        return g;
    }
    blocks = (uint64_t)sb.st_blocks * 512u;
    for (off_t end = sb.st_size; end > 0;) {
        pthread_mutex_lock(&l->rc_lock);
        bool stop = l->rc_stop; /* closing: the rest goes in one unlink */
        pthread_mutex_unlock(&l->rc_lock);
        if (stop)
            break;
        off_t start = end > (off_t)LD_RECLAIM_STEP ? end - (off_t)LD_RECLAIM_STEP : 0;
        if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, start, end - start) != 0) {
            if (errno != EOPNOTSUPP)
                wh_debug("store", "%s/tmp/%s: punching a hole failed (%m); unlinked instead",
                         l->dir, name);
            break;
        }
        fdatasync(fd); /* this step's blocks freed in a commit of their own */
        g.steps++;
        end = start;
        uint64_t now = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_blocks * 512u : blocks;
        uint64_t gone = blocks > now ? blocks - now : 0;
        blocks = now;
        g.freed += gone;
        pthread_mutex_lock(&l->rc_lock);
        l->rc_pending -= gone < l->rc_pending ? gone : l->rc_pending;
        l->rc_steps++;
        pthread_mutex_unlock(&l->rc_lock);
    }
    close(fd);
    return g;
}

static void *ld_reclaim_main(void *arg)
{
    ld_t *l = arg;
    uint64_t unsynced = 0; /* bytes freed by unlinks since the last step */
    pthread_mutex_lock(&l->rc_lock);
    for (;;) {
        while ((l->rc_n == 0 || l->rc_hold) && !l->rc_stop)
            pthread_cond_wait(&l->rc_cond, &l->rc_lock);
        if (l->rc_n == 0) /* stopping, and nothing left: a clean stop leaves no file behind */
            break;
        ld_reclaim_item_t it = l->rc_q[l->rc_head];
        l->rc_head = (l->rc_head + 1) % l->rc_cap;
        l->rc_n--;
        pthread_mutex_unlock(&l->rc_lock);
        char name[sizeof LD_RECLAIM_PREFIX + DATA_ID_LEN];
        snprintf(name, sizeof name, LD_RECLAIM_PREFIX "%s", it.id);
        uint64_t t0 = wh_now_ns();
        ld_giveback_t g = ld_reclaim_steps(l, name, it.bytes);
        uint64_t t1 = wh_now_ns();
        if (g.steps)
            unsynced = 0; /* the steps' syncs committed the earlier unlinks too */
        if (unlinkat(l->tmp_fd, name, 0) < 0 && errno != ENOENT)
            wh_error("store",
                     "cannot remove released file=%s/tmp/%s: %m; it will be removed at "
                     "next start",
                     l->dir, name);
        uint64_t rest = it.bytes > g.freed ? it.bytes - g.freed : 0;
        bool synced = false;
        /* Files of a step or less (parts, stripes) each go in one unlink; a directory sync
         * after every LD_RECLAIM_STEP bytes of them commits their frees where the file system
         * has a journal, so that no commit carries more. */
        if (!l->memory_fs && !g.held && (unsynced += rest) >= LD_RECLAIM_STEP) {
            if (fsync(l->tmp_fd) != 0)
                wh_debug("store", "%s/tmp: fsync failed: %m", l->dir);
            unsynced = 0;
            synced = true;
        }
        wh_info("store",
                "gave back released file=%s bytes=%" PRIu64 ": %u steps (%" PRIu64
                " bytes) in %.3f s, then unlinked%s in %.3f s%s",
                it.id, it.bytes, g.steps, g.freed, (double)(t1 - t0) / 1e9,
                synced ? " and synced" : "", (double)(wh_now_ns() - t1) / 1e9,
                g.held ? " (still open or mapped here: its blocks go when it is let go)" : "");
        pthread_mutex_lock(&l->rc_lock);
        l->rc_steps += synced;
        l->rc_pending -= rest < l->rc_pending ? rest : l->rc_pending;
        l->rc_done_files++;
        l->rc_done_bytes += it.bytes;
        if (l->rc_n == 0)
            pthread_cond_broadcast(&l->rc_idle);
    }
    pthread_mutex_unlock(&l->rc_lock);
    return NULL;
}

/* Lock held. Starts the thread at the first large release (not at open: a process that
 * forks after opening its store keeps no thread it did not start). */
static bool ld_reclaim_running(ld_t *l)
{
    if (l->rc_started)
        return true;
    if (l->rc_failed || l->rc_stop)
        return false;
    int e = pthread_create(&l->rc_thread, NULL, ld_reclaim_main, l);
    if (e != 0) {
        wh_warn("store",
                "cannot start the reclaiming thread: %s; released files are removed "
                "in the request",
                strerror(e));
        l->rc_failed = true;
        return false;
    }
    l->rc_started = true;
    return true;
}

/* Lock held. Room for one more item: the ring is made at the first release (LD_RECLAIM_QUEUE
 * items) and doubles when full (its items kept in order), up to LD_RECLAIM_QUEUE_MAX; where it
 * cannot grow, the file goes in place. An 8 GiB checkpoint is a thousand files (its parts' stripes
 * of 8 MiB), and an overwriting save releases one generation while the one before may still be
 * going: with a fixed ring of 1024 the second shard's files overflowed into unlinks inside
 * its DELETE (0.38-0.80 s each on the GPU machine's disk). */
static bool ld_reclaim_room(ld_t *l)
{
    if (l->rc_n < l->rc_cap)
        return true;
    if (l->rc_cap >= LD_RECLAIM_QUEUE_MAX)
        return false;
    unsigned cap = l->rc_cap ? l->rc_cap * 2 : LD_RECLAIM_QUEUE;
    ld_reclaim_item_t *q = calloc(cap, sizeof *q);
    if (!q)
        return false;
    for (unsigned i = 0; i < l->rc_n; i++) /* here rc_n == rc_cap: a full ring, or none yet */
        q[i] = l->rc_q[(l->rc_head + i) % l->rc_n];
    free(l->rc_q);
    l->rc_q = q;
    l->rc_head = 0;
    l->rc_cap = cap;
    return true;
}

/* Moves one released file into tmp/ and queues it; false where it has to go in place. */
static bool ld_reclaim_queue(ld_t *l, const char *id)
{
    char rel[DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    struct stat sb;
    if (fstatat(l->obj_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT; /* a composed object's own id names no file */
    if (!S_ISREG(sb.st_mode))
        return false;
    char name[sizeof LD_RECLAIM_PREFIX + DATA_ID_LEN];
    snprintf(name, sizeof name, LD_RECLAIM_PREFIX "%s", id);
    bool queued = false;
    pthread_mutex_lock(&l->rc_lock);
    if (ld_reclaim_running(l) && ld_reclaim_room(l) &&
        renameat(l->obj_fd, rel, l->tmp_fd, name) == 0) {
        ld_reclaim_item_t *it = &l->rc_q[(l->rc_head + l->rc_n) % l->rc_cap];
        memcpy(it->id, id, DATA_ID_LEN);
        it->id[DATA_ID_LEN] = '\0';
        it->bytes = (uint64_t)sb.st_blocks * 512u;
        l->rc_n++;
        l->rc_pending += it->bytes;
        pthread_cond_signal(&l->rc_cond);
        queued = true;
    }
    pthread_mutex_unlock(&l->rc_lock);
    return queued;
}

static uint64_t ld_file_size(ld_t *l, const char *id)
{
    char rel[DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    struct stat sb;
    return fstatat(l->obj_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)sb.st_size : 0;
}

void ld_release_ref(ld_t *l, const data_ref_t *ref)
{
    /* The object's size decides, not each file's: a striped object is several files. */
    uint64_t total = ref->id[0] ? ld_file_size(l, ref->id) : 0;
    for (size_t i = 0; i < ref->n_chunks && total < LD_RECLAIM_MIN; i++)
        total += ld_file_size(l, ref->chunks[i].id);
    bool later = total >= LD_RECLAIM_MIN;
    if (ref->id[0] && !(later && ld_reclaim_queue(l, ref->id)))
        ld_unlink(l, ref->id);
    for (size_t i = 0; i < ref->n_chunks; i++)
        if (!(later && ld_reclaim_queue(l, ref->chunks[i].id)))
            ld_unlink(l, ref->chunks[i].id);
}

uint64_t ld_reclaim_pending(ld_t *l)
{
    pthread_mutex_lock(&l->rc_lock);
    uint64_t p = l->rc_pending;
    pthread_mutex_unlock(&l->rc_lock);
    return p;
}

bool ld_reclaim_wait(ld_t *l, unsigned ms)
{
    struct timespec until;
    wh_deadline_ns(&until, (uint64_t)ms * 1000000ULL);
    pthread_mutex_lock(&l->rc_lock);
    while (l->rc_n > 0 && l->rc_started)
        if (pthread_cond_timedwait(&l->rc_idle, &l->rc_lock, &until) == ETIMEDOUT)
            break;
    bool idle = l->rc_n == 0;
    pthread_mutex_unlock(&l->rc_lock);
    return idle;
}

void ld_reclaim_stats(ld_t *l, uint64_t *pending, uint64_t *files, uint64_t *bytes, uint64_t *steps)
{
    pthread_mutex_lock(&l->rc_lock);
    *pending = l->rc_pending;
    *steps = l->rc_steps;
    *files = l->rc_done_files;
    *bytes = l->rc_done_bytes;
    pthread_mutex_unlock(&l->rc_lock);
}

void ld_reclaim_init(ld_t *l)
{
    pthread_mutex_init(&l->rc_lock, NULL);
    pthread_cond_init(&l->rc_cond, NULL);
    pthread_cond_init(&l->rc_idle, NULL);
}

void ld_reclaim_stop(ld_t *l)
{
    pthread_mutex_lock(&l->rc_lock);
    l->rc_stop = true;
    bool join = l->rc_started;
    pthread_cond_signal(&l->rc_cond);
    pthread_mutex_unlock(&l->rc_lock);
    if (join)
        pthread_join(l->rc_thread, NULL); /* it empties the queue first */
    free(l->rc_q);
    l->rc_q = NULL;
    l->rc_cap = 0;
    pthread_cond_destroy(&l->rc_idle);
    pthread_cond_destroy(&l->rc_cond);
    pthread_mutex_destroy(&l->rc_lock);
}
