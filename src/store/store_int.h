/* Internals shared by store.c, meta.c and mpu.c: the store and writer structs and the file
 * helpers. Not for use outside src/store. */
#ifndef WH_STORE_STORE_INT_H
#define WH_STORE_STORE_INT_H

#include "base/digest.h"
#include "store/meta.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>

struct store {
    char *dir;
    int lock_fd; /* flock'd DIR/lock: one process per data directory */
    int obj_fd;  /* DIR/objects */
    int tmp_fd;  /* DIR/tmp */
    meta_t *meta;
};

struct store_writer {
    store_t *st;
    int fd;                     /* the temp file, then (after publish) the object file */
    char id[META_ID_LEN + 1];   /* file id: DIR/tmp/<id>, then DIR/objects/<id[0:2]>/<id> */
    bool published;             /* renamed into objects/ */
    uint64_t size;
    uint64_t synced;            /* bytes already handed to writeback (sync_file_range) */
    wh_md5_t md5;
    bool md5_done;
    char md5_hex[33];
    uint64_t crc64;
    uint32_t crc32c;
    bool broken;                /* a write failed: the file is not what the digests say */
    /* Large PUTs hash MD5 on a helper thread that re-reads the file from the page cache behind
     * the writer (MD5 runs at about 0.6 GB/s per core, the slowest step of a PUT). */
    bool md5_threaded;
    pthread_t md5_thread;
    pthread_mutex_t md5_lock;
    pthread_cond_t md5_cond;
    uint64_t md5_avail;         /* bytes written that the helper may hash */
    uint64_t md5_hashed;        /* bytes the helper has hashed */
    int md5_stop;               /* 1: finish what is written, then exit; 2: exit now */
    int md5_err;                /* errno of a failed re-read */
};

/* "ab/ab01..." relative to DIR/objects; out needs META_ID_LEN + 4 bytes. */
static inline void store_file_relpath(const char *id, char out[META_ID_LEN + 4])
{
    snprintf(out, META_ID_LEN + 4, "%.2s/%s", id, id);
}

/* 32 random lowercase hex chars. */
wh_status_t store_random_id(char out[META_ID_LEN + 1]);
/* fsync the temp file, rename it into objects/, fsync that directory. */
wh_status_t store_writer_publish(store_writer_t *w);
/* Closes and frees a writer without touching its file. NULL-safe. */
void store_writer_free(store_writer_t *w);
/* Unlinks a published object or part file; "" is a no-op. Logs failures other than ENOENT. */
void store_file_unlink(store_t *st, const char *id);
/* Copies len bytes in the kernel (copy_file_range), falling back to pread/pwrite only where
 * the file system refuses. */
wh_status_t store_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off,
                             uint64_t len);

#endif
