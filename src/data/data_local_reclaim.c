/* The local data table, reclaiming: a large released object's space is given back off the
 * request.
 *
 * Unlinking a file frees its page cache and its blocks, and on a file system mounted with
 * discard the journal also discards them: on the VM's ext4 (discard) unlinking a written and
 * synced file took 0.39 s for 1 GiB and 0.86 s for 2 GiB, spent inside the DELETE (or the
 * overwriting PUT) that released it. An overwrite-safe checkpoint deletes its old generation
 * inside the save, so training waited for that too. The files of a released object of
 * LD_RECLAIM_MIN bytes or more (its stripes or parts together) are instead renamed into
 * DIR/tmp (a directory entry moved: objects/ no longer holds them) and unlinked by this
 * thread. A crash before that leaves them in tmp/, which start-up empties. A write that finds
 * the disk full while bytes are still being given back waits for them (ld_space_check).
 * Smaller objects' files are unlinked in place, as before. */
#include "data/data_local_int.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LD_RECLAIM_PREFIX "reclaim-"

static void *ld_reclaim_main(void *arg)
{
    ld_t *l = arg;
    pthread_mutex_lock(&l->rc_lock);
    for (;;) {
        while (l->rc_n == 0 && !l->rc_stop)
            pthread_cond_wait(&l->rc_cond, &l->rc_lock);
        if (l->rc_n == 0) /* stopping, and nothing left: a clean stop leaves no file behind */
            break;
        ld_reclaim_item_t it = l->rc_q[l->rc_head];
        l->rc_head = (l->rc_head + 1) % LD_RECLAIM_QUEUE;
        l->rc_n--;
        pthread_mutex_unlock(&l->rc_lock);
        char name[sizeof LD_RECLAIM_PREFIX + STORE_DATA_ID_LEN];
        snprintf(name, sizeof name, LD_RECLAIM_PREFIX "%s", it.id);
        if (unlinkat(l->tmp_fd, name, 0) < 0 && errno != ENOENT)
            wh_error("store",
                     "cannot remove released file=%s/tmp/%s: %m; it will be removed at "
                     "next start",
                     l->dir, name);
        pthread_mutex_lock(&l->rc_lock);
        l->rc_pending -= it.bytes;
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
    if (!l->rc_q && !(l->rc_q = calloc(LD_RECLAIM_QUEUE, sizeof *l->rc_q))) {
        l->rc_failed = true;
        return false;
    }
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

/* Moves one released file into tmp/ and queues it; false where it has to go in place. */
static bool ld_reclaim_queue(ld_t *l, const char *id)
{
    char rel[STORE_DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    struct stat sb;
    if (fstatat(l->obj_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT; /* a composed object's own id names no file */
    if (!S_ISREG(sb.st_mode))
        return false;
    char name[sizeof LD_RECLAIM_PREFIX + STORE_DATA_ID_LEN];
    snprintf(name, sizeof name, LD_RECLAIM_PREFIX "%s", id);
    bool queued = false;
    pthread_mutex_lock(&l->rc_lock);
    if (l->rc_n < LD_RECLAIM_QUEUE && ld_reclaim_running(l) &&
        renameat(l->obj_fd, rel, l->tmp_fd, name) == 0) {
        ld_reclaim_item_t *it = &l->rc_q[(l->rc_head + l->rc_n) % LD_RECLAIM_QUEUE];
        memcpy(it->id, id, STORE_DATA_ID_LEN);
        it->id[STORE_DATA_ID_LEN] = '\0';
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
    char rel[STORE_DATA_ID_LEN + 4];
    ld_relpath(id, rel);
    struct stat sb;
    return fstatat(l->obj_fd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)sb.st_size : 0;
}

void ld_release_ref(ld_t *l, const store_data_ref_t *ref)
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

void ld_reclaim_stats(ld_t *l, uint64_t *pending, uint64_t *files, uint64_t *bytes)
{
    pthread_mutex_lock(&l->rc_lock);
    *pending = l->rc_pending;
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
    pthread_cond_destroy(&l->rc_idle);
    pthread_cond_destroy(&l->rc_cond);
    pthread_mutex_destroy(&l->rc_lock);
}
