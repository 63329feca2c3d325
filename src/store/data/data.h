/* SPDX-License-Identifier: Apache-2.0 */
/* The data table of the storage engine: where an object's bytes live.
 *
 * An implementation is a data_ops_t and an instance struct that starts with a
 * data_table_t; its writers and readers start with data_writer_t and data_reader_t.
 * The store calls the table, never a file directly:
 *   local files (data_local.c): one file per object or part under DIR/objects, fd-capable
 *     readers (sendfile, the server's RDMA engine), no delegated RDMA; a completed multipart
 *     upload is its parts' files (compose), read through one fd per extent;
 *   a cluster gateway (src/server/cluster): chunks streamed to storage servers, pread-only readers,
 *     and delegated RDMA (storage servers move bytes to and from client memory themselves).
 *
 * The contract every implementation keeps:
 * - writer: write() appends in order; finish() makes every byte durable and fills the data
 *   reference (id, and a chunk map for chunked data) that the metadata commit then stores.
 *   Nothing written is visible to readers before that commit; abort() (or a crash, then
 *   recover()) leaves nothing behind.
 * - reader: opened from a committed reference; keeps its version readable while open even if
 *   the object is replaced or deleted. WH_ERR_NOT_FOUND when the bytes are already gone (the
 *   row was replaced between lookup and open): the store then looks the row up again.
 * - release(): called after the metadata commit that dropped a reference. The local table
 *   unlinks the file; a cluster's metadata commit has already queued the chunks for garbage
 *   collection in the same transaction, and its release only nudges that.
 * - Optional members are NULL where not offered, never a stub (the rule meta.h's table follows
 *   too): the store answers WH_ERR_UNSUPPORTED for them, or takes its fallback where it has one
 *   (compose, writer_pread, write_at). */
#ifndef WH_DATA_DATA_H
#define WH_DATA_DATA_H

#include "data/types.h"

#define DATA_ID_LEN 32 /* hex chars of a data, chunk or upload id */
#define DATA_CHUNK_MAX_REPLICAS 8

/* One chunk of an object's bytes. Replicated chunks have ec_k = ec_m = 0. Erasure coding (a
 * later step) stores each shard as its own chunk: stripe ec_stripe, shard ec_index of
 * ec_k data + ec_m parity shards; offset/length then describe the stripe's data range. */
typedef struct data_chunk {
    char id[DATA_ID_LEN + 1]; /* chunk id: the file name on a storage server */
    uint64_t offset;          /* in the object */
    uint64_t length;
    uint64_t crc64nvme; /* of the chunk's bytes */
    uint32_t n_replicas;
    uint32_t replicas[DATA_CHUNK_MAX_REPLICAS]; /* storage node ids */
    uint32_t ec_k, ec_m, ec_index;
    uint64_t ec_stripe;
    bool shared; /* not stored: taken by reference from another row (a copy); the commit
                  * holds that row's chunk (or fails) so GC cannot take the bytes first */
} data_chunk_t;

/* What a metadata row stores about an object's or a part's bytes. id "" means none. chunks:
 * malloc'd, NULL with n_chunks 0 for unchunked data (one local file). */
typedef struct data_ref {
    char id[DATA_ID_LEN + 1];
    data_chunk_t *chunks;
    size_t n_chunks;
} data_ref_t;
void data_ref_clear(data_ref_t *ref); /* frees chunks, id = "" */
/* Deep copy into *dst (cleared first). */
wh_status_t data_ref_copy(data_ref_t *dst, const data_ref_t *src);

typedef struct data_table data_table_t;
typedef struct data_writer data_writer_t;
typedef struct data_ops data_ops_t;

struct data_table {
    const data_ops_t *ops;
};
struct data_writer {
    data_table_t *data;
};
struct data_reader {
    data_table_t *data;
    uint64_t size;
};

/* Answers WH_OK if metadata still refers to data id, WH_ERR_NOT_FOUND if not. */
typedef wh_status_t (*data_referenced_fn)(void *arg, const char *id);

struct data_ops {
    const char *name;
    void (*close)(data_table_t *d);
    /* At open, after metadata: removes bytes of writes that never committed. */
    wh_status_t (*recover)(data_table_t *d, data_referenced_fn referenced, void *arg);
    wh_status_t (*space)(data_table_t *d, data_space_t *out);
    /* Optional, full-disk handling: give back the space held for deletes (the store then
     * retries a delete's metadata commit), and take it again once there is room. */
    void (*reserve_release)(data_table_t *d);
    void (*reserve_rearm)(data_table_t *d);

    /* ---- writing ---- */
    wh_status_t (*writer_open)(data_table_t *d, data_writer_t **out);
    /* WH_ERR_NO_SPACE when full or above the high-water mark. */
    wh_status_t (*write)(data_writer_t *w, const void *p, size_t n);
    /* Appends [off, off+len) of an open reader (copy, multipart completion). A chunked table
     * may append by reference (the same chunks, shifted), without moving bytes. */
    wh_status_t (*append)(data_writer_t *w, data_reader_t *r, uint64_t off, uint64_t len);
    /* Optional, positional writes from several threads at once: write_at_begin(total) on a
     * fresh writer (space for total, which becomes the size), then write_at of disjoint
     * ranges inside [0, total), any thread, any order. */
    wh_status_t (*write_at_begin)(data_writer_t *w, uint64_t total);
    wh_status_t (*write_at)(data_writer_t *w, const void *p, size_t n, uint64_t off);
    /* Optional, after write_at_begin: the writer's bytes go into several files (stripes),
     * each [k * len, (k + 1) * len) of the object in a file of its own, so that writes to
     * different stripes do not meet on one file's lock; answers len (a multiple of
     * DATA_STRIPE_ALIGN), or 0 for one file. finish() commits the stripes as one composed
     * reference (as compose's: a fresh id naming no file, one extent per stripe). */
    uint64_t (*write_at_stripe)(data_writer_t *w);
    /* Optional, after write_at_begin: the size and alignment of the writes the destination
     * takes best (a tmpfs with huge pages: 2 MiB, as a write of part of a fresh 2 MiB page
     * first zeroes the rest of it), or 0: any. Writers of large pieces gather this much
     * before a write_at. */
    uint64_t (*write_at_unit)(data_writer_t *w);
    /* Optional, positional writes through a mapping (one copy instead of a copy into a buffer
     * and a write): map_at_begin(total) instead of write_at_begin on a fresh writer: the file
     * gets its space (total bytes, which become the size) and is mapped writable; then
     * map_at(off, n) gives *p, where [off, off+n) of the file may be written by any thread
     * (disjoint ranges), prefaulted where the kernel can. WH_ERR_UNSUPPORTED from
     * map_at_begin (nothing changed: write_at_begin may follow) where mapping is not possible
     * or not wanted (O_DIRECT cold-storage writes); from map_at when the writer is not mapped.
     * finish() unmaps before it makes the bytes durable; free/abort unmap. */
    wh_status_t (*map_at_begin)(data_writer_t *w, uint64_t total);
    wh_status_t (*map_at)(data_writer_t *w, uint64_t off, size_t n, void **p);
    /* Optional: reads back bytes already written, so MD5 can run on a helper thread. */
    wh_status_t (*writer_pread)(data_writer_t *w, void *buf, size_t n, uint64_t off);
    /* Optional: pulls size bytes from the client's region itself (see store_writer_rdma_put). */
    wh_status_t (*rdma_put)(data_writer_t *w, const struct xfer_token_arg *token,
                            const wh_peer_t *peer, uint64_t size, data_rdma_result_t *res);
    /* Optional: the bucket the writer's bytes are for, before the first write (a cluster
     * picks the bucket's layout: replicas or erasure coding). WH_ERR_INVALID with msg when
     * the bucket's setting is malformed. */
    wh_status_t (*writer_bucket)(data_writer_t *w, const char *bucket, char *msg, size_t msglen);
    /* Durable; fills *ref (id, chunk map). The writer stays valid for free or abort. */
    wh_status_t (*finish)(data_writer_t *w, data_ref_t *ref);
    void (*writer_free)(data_writer_t *w);  /* after a commit: keeps the bytes */
    void (*writer_abort)(data_writer_t *w); /* removes what was written */

    /* ---- reading ---- */
    wh_status_t (*reader_open)(data_table_t *d, const data_ref_t *ref, uint64_t size,
                               data_reader_t **out);
    int (*reader_fd)(const data_reader_t *r); /* optional: -1 / NULL without a local fd */
    wh_status_t (*reader_pread)(data_reader_t *r, void *buf, size_t n, uint64_t off);
    wh_status_t (*rdma_get)(data_reader_t *r, const struct xfer_token_arg *token,
                            const wh_peer_t *peer, uint64_t off, uint64_t len,
                            data_rdma_result_t *res); /* optional */
    /* Optional: the local file that holds byte off of the object: its fd (owned by the
     * reader), where off lies in that file, and how many bytes of the object follow there
     * contiguously. For readers of several files (a composed object), where reader_fd is -1. */
    wh_status_t (*reader_extent)(const data_reader_t *r, uint64_t off, int *fd, uint64_t *file_off,
                                 uint64_t *len);
    /* Optional: before a streamed reply's header (store_reader_prepare). */
    wh_status_t (*reader_prepare)(data_reader_t *r, uint64_t off, uint64_t len, char *msg,
                                  size_t msglen);
    void (*reader_close)(data_reader_t *r);

    /* After the metadata commit that dropped ref. */
    void (*release)(data_table_t *d, const data_ref_t *ref);

    /* Optional (multipart completion without moving bytes): fills *out with a reference
     * whose bytes are the n committed references parts[i] one after another (chunk i names
     * part i: id its data id, offset its place in the object, length its size, crc64nvme its
     * CRC; a part that is itself composed, a striped write, is given as its extents). Nothing is
     * written: the parts' bytes become the object's once the metadata commit moves them from the
     * part rows to the object row, in one transaction; recover() must then count a data id named by
     * a row's chunk map as referenced. NULL: the store appends the parts into a new writer (append,
     * which a chunked table does by reference). */
    wh_status_t (*compose)(data_table_t *d, const data_chunk_t *parts, size_t n, data_ref_t *out);
};

/* Local files under dir (dir/objects, dir/tmp, dir/reserve). */
typedef struct data_local_config {
    const char *dir;
    uint64_t reserve_bytes;
    unsigned high_water_pct;
    data_durability_t durability; /* MEMORY: finish() skips fdatasync and the directory fsync */
    /* Positional writes (write_at) of aligned pieces go by O_DIRECT, past the page cache
     * (cold storage: a checkpoint written once and read later); the file system must allow it
     * (tmpfs does not: a warning, then the page cache). */
    bool direct_writes;
    /* map_at_begin maps the file (--data-writes mapped); false: it answers
     * WH_ERR_UNSUPPORTED and positional writes go by write_at (pwrite). direct_writes wins. */
    bool map_writes;
    /* Positional writes of stripe_min bytes or more (0: 64 MiB) go into put_stripes files,
     * one per stripe (write_at_stripe); 0: from the host, one per two cores, at most
     * DATA_MAX_STRIPES; 1: one file. Not with map_writes or direct_writes. */
    unsigned put_stripes;
    uint64_t stripe_min;
} data_local_config_t;
wh_status_t data_local_open(const data_local_config_t *cfg, data_table_t **out);

/* ---- dispatch: one typed function per slot ----
 * Callers use these, never the table. The required slots (close, writer_open, write, append,
 * finish, writer_free, writer_abort, reader_open, reader_pread, reader_close, release) are
 * present in every table (data_ops_complete, checked where the store takes a table); an
 * optional slot that is NULL answers WH_ERR_UNSUPPORTED (reader_fd -1, write_at_stripe 0: one
 * file; write_at_unit 0: any; the void hooks do nothing), and callers that can do without test the
 * status, never the slot, except for the two capability questions below. */
static inline bool data_ops_complete(const data_ops_t *o)
{
    return o && o->close && o->writer_open && o->write && o->append && o->finish &&
           o->writer_free && o->writer_abort && o->reader_open && o->reader_pread &&
           o->reader_close && o->release;
}

/* The two capability questions, for callers that must choose their path before the first
 * call: the MD5 helper threads read back what was written (writer_pread) or the writer hashes
 * inline; a multipart completion composes its parts (compose) or appends them. */
static inline bool data_offers_writer_pread(const data_writer_t *w)
{
    return w->data->ops->writer_pread != NULL;
}

static inline bool data_offers_compose(const data_table_t *d)
{
    return d->ops->compose != NULL;
}

static inline void data_close(data_table_t *d)
{
    d->ops->close(d);
}

static inline wh_status_t data_recover(data_table_t *d, data_referenced_fn referenced, void *arg)
{
    return d->ops->recover ? d->ops->recover(d, referenced, arg) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_space(data_table_t *d, data_space_t *out)
{
    return d->ops->space ? d->ops->space(d, out) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_reserve_release(data_table_t *d)
{
    if (!d->ops->reserve_release)
        return WH_ERR_UNSUPPORTED;
    d->ops->reserve_release(d);
    return WH_OK;
}

static inline void data_reserve_rearm(data_table_t *d)
{
    if (d->ops->reserve_rearm)
        d->ops->reserve_rearm(d);
}

static inline wh_status_t data_writer_open(data_table_t *d, data_writer_t **out)
{
    return d->ops->writer_open(d, out);
}

static inline wh_status_t data_write(data_writer_t *w, const void *p, size_t n)
{
    return w->data->ops->write(w, p, n);
}

static inline wh_status_t data_append(data_writer_t *w, data_reader_t *r, uint64_t off,
                                      uint64_t len)
{
    return w->data->ops->append(w, r, off, len);
}

static inline wh_status_t data_write_at_begin(data_writer_t *w, uint64_t total)
{
    const data_ops_t *o = w->data->ops;
    return o->write_at_begin && o->write_at ? o->write_at_begin(w, total) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_write_at(data_writer_t *w, const void *p, size_t n, uint64_t off)
{
    const data_ops_t *o = w->data->ops;
    return o->write_at ? o->write_at(w, p, n, off) : WH_ERR_UNSUPPORTED;
}

static inline uint64_t data_write_at_stripe(data_writer_t *w)
{
    const data_ops_t *o = w->data->ops;
    return o->write_at_stripe ? o->write_at_stripe(w) : 0;
}

static inline uint64_t data_write_at_unit(data_writer_t *w)
{
    const data_ops_t *o = w->data->ops;
    return o->write_at_unit ? o->write_at_unit(w) : 0;
}

static inline wh_status_t data_map_at_begin(data_writer_t *w, uint64_t total)
{
    const data_ops_t *o = w->data->ops;
    return o->map_at_begin && o->map_at ? o->map_at_begin(w, total) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_map_at(data_writer_t *w, uint64_t off, size_t n, void **p)
{
    const data_ops_t *o = w->data->ops;
    return o->map_at ? o->map_at(w, off, n, p) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_writer_pread(data_writer_t *w, void *buf, size_t n, uint64_t off)
{
    const data_ops_t *o = w->data->ops;
    return o->writer_pread ? o->writer_pread(w, buf, n, off) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_rdma_put(data_writer_t *w, const struct xfer_token_arg *token,
                                        const wh_peer_t *peer, uint64_t size,
                                        data_rdma_result_t *res)
{
    const data_ops_t *o = w->data->ops;
    return o->rdma_put ? o->rdma_put(w, token, peer, size, res) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_writer_bucket(data_writer_t *w, const char *bucket, char *msg,
                                             size_t msglen)
{
    const data_ops_t *o = w->data->ops;
    return o->writer_bucket ? o->writer_bucket(w, bucket, msg, msglen) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_finish(data_writer_t *w, data_ref_t *ref)
{
    return w->data->ops->finish(w, ref);
}

static inline void data_writer_free(data_writer_t *w)
{
    w->data->ops->writer_free(w);
}

static inline void data_writer_abort(data_writer_t *w)
{
    w->data->ops->writer_abort(w);
}

static inline wh_status_t data_reader_open(data_table_t *d, const data_ref_t *ref, uint64_t size,
                                           data_reader_t **out)
{
    return d->ops->reader_open(d, ref, size, out);
}

static inline int data_reader_fd(const data_reader_t *r)
{
    const data_ops_t *o = r->data->ops;
    return o->reader_fd ? o->reader_fd(r) : -1;
}

static inline wh_status_t data_reader_pread(data_reader_t *r, void *buf, size_t n, uint64_t off)
{
    return r->data->ops->reader_pread(r, buf, n, off);
}

static inline wh_status_t data_rdma_get(data_reader_t *r, const struct xfer_token_arg *token,
                                        const wh_peer_t *peer, uint64_t off, uint64_t len,
                                        data_rdma_result_t *res)
{
    const data_ops_t *o = r->data->ops;
    return o->rdma_get ? o->rdma_get(r, token, peer, off, len, res) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_reader_extent(const data_reader_t *r, uint64_t off, int *fd,
                                             uint64_t *file_off, uint64_t *len)
{
    const data_ops_t *o = r->data->ops;
    return o->reader_extent ? o->reader_extent(r, off, fd, file_off, len) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t data_reader_prepare(data_reader_t *r, uint64_t off, uint64_t len,
                                              char *msg, size_t msglen)
{
    const data_ops_t *o = r->data->ops;
    return o->reader_prepare ? o->reader_prepare(r, off, len, msg, msglen) : WH_ERR_UNSUPPORTED;
}

static inline void data_reader_close(data_reader_t *r)
{
    r->data->ops->reader_close(r);
}

static inline void data_release(data_table_t *d, const data_ref_t *ref)
{
    d->ops->release(d, ref);
}

static inline wh_status_t data_compose(data_table_t *d, const data_chunk_t *parts, size_t n,
                                       data_ref_t *out)
{
    return d->ops->compose ? d->ops->compose(d, parts, n, out) : WH_ERR_UNSUPPORTED;
}

#endif
