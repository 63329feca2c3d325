/* SPDX-License-Identifier: Apache-2.0 */
/* The local data table's private parts, shared by its two files: data_local.c (space, the
 * reserve, files, readers, composing, recovery, open/close and the ops table) and
 * data_local_write.c (the writer: sequential, positional, striped and mapped writes, finish,
 * abort). data_local.c's opening comment describes the layout and the rules. */
#ifndef WH_DATA_DATA_LOCAL_INT_H
#define WH_DATA_DATA_LOCAL_INT_H

#include "data/data.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LD_FILE_MODE 0640
#define LD_DIR_MODE 0750
/* Start writeback every this many bytes, so the fsync at commit has little left to do. */
#define LD_WRITEBACK_CHUNK (8ULL << 20)
/* Look at free space again after this many bytes of one write. */
#define LD_SPACE_CHECK (1ULL << 20)
/* A released object this large has its files given back by the reclaiming thread, off the
 * request (data_local_reclaim.c); its queue starts at LD_RECLAIM_QUEUE files and doubles up
 * to LD_RECLAIM_QUEUE_MAX (48 bytes each), beyond which files are unlinked in place. */
#define LD_RECLAIM_MIN (64ULL << 20)
#define LD_RECLAIM_QUEUE 1024u
#define LD_RECLAIM_QUEUE_MAX (1u << 20)
/* Such a file is emptied this many bytes at a time, each step made durable, before it is
 * unlinked (data_local_reclaim.c says why). */
#define LD_RECLAIM_STEP (256ULL << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL */
#endif

typedef struct ld_reclaim_item {
    char id[DATA_ID_LEN + 1];
    uint64_t bytes; /* its blocks */
} ld_reclaim_item_t;

typedef struct ld {
    data_table_t base;
    char *dir;
    int dir_fd;
    int lock_fd; /* flock'd DIR/lock */
    int obj_fd;  /* DIR/objects */
    int tmp_fd;  /* DIR/tmp */
    uint64_t reserve_bytes;
    unsigned high_water_pct;
    data_durability_t durability;
    bool direct_writes;
    bool map_writes;     /* map_at_begin offered */
    bool direct_refused; /* the file system refused O_DIRECT once (atomic) */
    _Atomic uint64_t direct_bytes;
    bool populate_refused; /* madvise(MADV_POPULATE_WRITE) answered EINVAL once (atomic) */
    unsigned put_stripes;  /* positional writes of stripe_min bytes or more: files, 1 = one */
    uint64_t page_bytes;   /* data_space_t's, probed at open */
    bool memory_fs;        /* tmp/ is on tmpfs or ramfs (probed at open): no reclaim steps */
    uint64_t stripe_min;
    pthread_mutex_t reserve_lock;
    bool reserve_held; /* DIR/reserve exists at full size */
    /* The reclaiming thread and its queue (a ring), all under rc_lock. */
    pthread_mutex_t rc_lock;
    pthread_cond_t rc_cond, rc_idle;
    pthread_t rc_thread;
    bool rc_started, rc_failed, rc_stop;
    ld_reclaim_item_t *rc_q;
    unsigned rc_head, rc_n, rc_cap;
    bool rc_hold;        /* tests only: while set, the thread takes nothing from the queue */
    uint64_t rc_pending; /* bytes queued, not yet given back */
    uint64_t rc_done_files, rc_done_bytes; /* given back so far */
    uint64_t rc_steps;                     /* holes punched (ld_reclaim_steps) */
} ld_t;

/* A striped writer's second and later files (the first is the writer's own). */
typedef struct ld_stripe {
    int fd;
    char id[DATA_ID_LEN + 1];
    bool published; /* renamed into objects/ */
} ld_stripe_t;

typedef struct ld_writer {
    data_writer_t base;
    int fd;  /* the temp file, then (after finish) the object file */
    int dfd; /* the temp file with O_DIRECT (positional writes, direct_writes), or -1 */
    char id[DATA_ID_LEN + 1];
    bool published; /* renamed into objects/ */
    uint64_t size;
    uint64_t synced;  /* bytes already handed to writeback (sync_file_range) */
    uint64_t checked; /* size when free space was last checked */
    uint8_t *map;     /* map_at_begin: the temp file mapped MAP_SHARED, map_len bytes */
    size_t map_len;
    /* Striped (write_at_begin of a large total): nstripes files of stripe_len bytes (the last
     * may be shorter), stripe 0 being fd/id above and the others in more[]. 0: one file. */
    unsigned nstripes;
    uint64_t stripe_len;
    ld_stripe_t *more;
    uint64_t unit; /* write_at_unit: the files' st_blksize where it is a large page, else 0 */
} ld_writer_t;

/* One file of a composed object. */
typedef struct ld_extent {
    int fd;
    uint64_t off, len; /* in the object */
} ld_extent_t;

typedef struct ld_reader {
    data_reader_t base;
    int fd;       /* one file; -1 for a composed object */
    size_t n_ext; /* composed: its extents in object order */
    ld_extent_t *ext;
} ld_reader_t;

#define LD(d) ((ld_t *)(d))

/* ---- shared helpers (data_local.c) ---- */

void ld_relpath(const char *id, char out[DATA_ID_LEN + 4]);
wh_status_t ld_random_id(char out[DATA_ID_LEN + 1]);
wh_status_t ld_space_check(ld_t *l, uint64_t more);
void ld_unlink(ld_t *l, const char *id);
/* A released object's files: a large object's are moved into tmp/ and unlinked by the
 * reclaiming thread, a small one's unlinked here. */
void ld_release_ref(ld_t *l, const data_ref_t *ref);
void ld_reclaim_init(ld_t *l);
void ld_reclaim_stop(ld_t *l); /* after every file queued is gone */
uint64_t ld_reclaim_pending(ld_t *l);
/* Waits up to ms for the queue to empty; true when it did. */
bool ld_reclaim_wait(ld_t *l, unsigned ms);
void ld_reclaim_stats(ld_t *l, uint64_t *pending, uint64_t *files, uint64_t *bytes,
                      uint64_t *steps);
wh_status_t ld_fsync_dir(int parent_fd, const char *name);
wh_status_t ld_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, uint64_t len);
wh_status_t ld_reader_extent(const data_reader_t *r, uint64_t off, int *fd, uint64_t *file_off,
                             uint64_t *len);

/* ---- the writer's slots (data_local_write.c) ---- */

wh_status_t ld_writer_open(data_table_t *d, data_writer_t **out);
wh_status_t ld_write(data_writer_t *dw, const void *p, size_t n);
uint64_t ld_write_at_stripe(data_writer_t *dw);
uint64_t ld_write_at_unit(data_writer_t *dw);
wh_status_t ld_write_at_begin(data_writer_t *dw, uint64_t total);
wh_status_t ld_write_at(data_writer_t *dw, const void *p, size_t n, uint64_t off);
wh_status_t ld_map_at_begin(data_writer_t *dw, uint64_t total);
wh_status_t ld_map_at(data_writer_t *dw, uint64_t off, size_t n, void **p);
wh_status_t ld_append(data_writer_t *dw, data_reader_t *r, uint64_t off, uint64_t len);
wh_status_t ld_writer_pread(data_writer_t *dw, void *buf, size_t n, uint64_t off);
wh_status_t ld_finish(data_writer_t *dw, data_ref_t *ref);
void ld_writer_free(data_writer_t *dw);
void ld_writer_abort(data_writer_t *dw);

#endif
