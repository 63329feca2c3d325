/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA GET: writes [off, off+len) of an object's file, or of the files of an object composed
 * of several (a completed multipart upload: one extent per part), into the token's region. */
#include "engine/rdma_int.h"
#include "s3/errors.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef MADV_POPULATE_READ
#define RDMA_MADV_POPULATE_READ MADV_POPULATE_READ
#else
#define RDMA_MADV_POPULATE_READ 22 /* Linux 5.14; older kernels answer EINVAL: faults instead */
#endif

/* Fabric providers (staged): a reader thread preads chunk k+1 into a registered pool buffer
 * and computes the running crc64nvme, so disk read and checksum overlap the transfer of chunk
 * k. Bound shm takes the direct path below instead (no staging copy: an mmap of the object,
 * copied straight from the page cache).
 *
 * Cold data by direct I/O: a chunk of which fewer than half the pages are in the page cache
 * (mincore) is read with O_DIRECT (a second descriptor of the same file, opened at the first
 * cold chunk) straight into the registered buffer: the disk's DMA lands the bytes where the
 * NIC will read them, with no page-cache copy and no page-cache pollution by a one-pass read
 * of a large checkpoint. Only 4 KiB-aligned spans go that way (a ranged GET's unaligned head
 * and any tail under 4 KiB are read through the page cache), and on a file system without
 * O_DIRECT (tmpfs) the request stops asking and reads everything through the cache. Dirty
 * pages of the range are written back by the kernel before a direct read, so it always sees
 * the bytes. */
#define GET_DIO_ALIGN 4096u
/* get_pipe.dfd besides a descriptor: */
#define GET_DIO_UNOPENED (-2) /* direct reads wanted, no cold chunk seen yet */
#define GET_DIO_OFF (-1)      /* --cold-reads buffered: classified, read through the cache */
#define GET_DIO_NONE (-3)     /* the file system refuses O_DIRECT: not even classified */

enum { SLOT_EMPTY = 0, SLOT_FILLED, SLOT_SENT };

/* One span of the transfer: [off, off+len) of fd (or of the source read, when read is set)
 * lands at roff in the region. */
typedef struct get_ext {
    int fd;
    int dfd; /* the same file with O_DIRECT, or a GET_DIO_* state */
    uint64_t off, len, roff;
    rdma_read_cb read; /* a source in place of fd (rdma_get_source) */
    void *read_arg;
} get_ext_t;

typedef struct get_pipe {
    get_ext_t *ext;
    size_t n_ext;
    size_t cur; /* the reader's extent (chunks are filled in order) */
    rdma_t *r;
    uint64_t len, chunk;
    unsigned nslots;
    uint8_t *buf[RDMA_MAX_SLOTS]; /* pool buffers */
    int state[RDMA_MAX_SLOTS];
    size_t n[RDMA_MAX_SLOTS];
    uint64_t crc;       /* running crc64nvme of every chunk filled, in order */
    int read_err;       /* errno of a failed pread, or of the direct path's mmap */
    wh_status_t src_st; /* a source's failure (read_err is then EIO) */
    uint64_t src_at;    /* the object offset of the span it failed on */
    bool abort;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} get_pipe_t;

/* True when fewer than half of the pages of [at, at+n) are in the page cache (mincore of a
 * mapping that is never touched, so asking faults nothing in and starts no readahead). */
static bool get_chunk_cold(int fd, uint64_t at, size_t n)
{
    long psz = sysconf(_SC_PAGESIZE);
    if (psz <= 0 || n == 0)
        return false;
    uint64_t aoff = at & ~((uint64_t)psz - 1);
    size_t mlen = (size_t)(at - aoff) + n;
    size_t pages = (mlen + (size_t)psz - 1) / (size_t)psz;
    unsigned char stackvec[2048], *vec = stackvec;
    if (pages > sizeof stackvec && !(vec = malloc(pages)))
        return false;
    void *m = mmap(NULL, mlen, PROT_READ, MAP_SHARED, fd, (off_t)aoff);
    if (m == MAP_FAILED) {
        if (vec != stackvec)
            free(vec);
        return false;
    }
    size_t resident = 0;
    if (mincore(m, mlen, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
    else
        resident = pages;
    munmap(m, mlen);
    if (vec != stackvec)
        free(vec);
    return resident * 2 < pages;
}

/* Reads n bytes at `at` of extent e into p. Returns 0 or an errno. */
static int get_fill_span(get_pipe_t *g, get_ext_t *e, uint64_t at, uint8_t *p, size_t n)
{
    if (e->read) {
        /* A source fills the whole span or fails it: nothing of a failed span is posted. */
        wh_status_t st = e->read(e->read_arg, p, n, at);
        if (st == WH_OK)
            return 0;
        g->src_st = st;
        g->src_at = at;
        return EIO;
    }
    size_t got = 0;
    bool cold = e->dfd != GET_DIO_NONE && get_chunk_cold(e->fd, at, n);
    if (cold && e->dfd == GET_DIO_UNOPENED) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", e->fd);
        e->dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (e->dfd < 0)
            e->dfd = GET_DIO_NONE; /* tmpfs: cached reads */
    }
    if (cold && e->dfd >= 0) {
        size_t head = (size_t)((GET_DIO_ALIGN - at % GET_DIO_ALIGN) % GET_DIO_ALIGN);
        if (head < n) {
            if (head) { /* an unaligned start (a ranged GET): through the cache up to 4 KiB */
                int rc = wh_pread_all(e->fd, p, head, at);
                if (rc != 0)
                    return -rc;
                atomic_fetch_add(&g->r->read_buffered, head);
                got = head;
            }
            size_t body = (n - got) & ~(size_t)(GET_DIO_ALIGN - 1);
            if (body && (uintptr_t)(p + got) % GET_DIO_ALIGN == 0) {
                if (wh_pread_all(e->dfd, p + got, body, at + got) == 0) {
                    got += body;
                    atomic_fetch_add(&g->r->read_direct_io, body);
                } else { /* refused (alignment, a file system without it): cached reads */
                    close(e->dfd);
                    e->dfd = GET_DIO_NONE;
                }
            }
        }
    }
    if (got < n) {
        int rc = wh_pread_all(e->fd, p + got, n - got, at + got);
        if (rc != 0)
            return -rc;
        if (cold)
            atomic_fetch_add(&g->r->read_buffered, n - got);
        else
            atomic_fetch_add(&g->r->read_cached, n - got);
    }
    return 0;
}

/* Fills slot s with chunk k (region bytes [k*chunk, ...)), from as many extents as it spans.
 * Chunks are filled in order, so the extent cursor only moves forward. Returns 0 or an
 * errno. */
static int get_fill(get_pipe_t *g, unsigned s, uint64_t k)
{
    size_t n = (size_t)WH_MIN(g->chunk, g->len - k * g->chunk);
    uint64_t pos = k * g->chunk;
    uint8_t *p = g->buf[s];
    for (size_t done = 0; done < n;) {
        while (g->cur < g->n_ext && g->ext[g->cur].roff + g->ext[g->cur].len <= pos + done)
            g->cur++;
        if (g->cur == g->n_ext)
            return EIO; /* extents shorter than the transfer: never from a valid reader */
        get_ext_t *e = &g->ext[g->cur];
        uint64_t in = pos + done - e->roff;
        size_t m = (size_t)WH_MIN((uint64_t)(n - done), e->len - in);
        int rc = get_fill_span(g, e, e->off + in, p + done, m);
        if (rc)
            return rc;
        done += m;
    }
    g->crc = wh_crc64nvme(g->crc, g->buf[s], n);
    g->n[s] = n;
    return 0;
}

static void *get_reader(void *arg)
{
    get_pipe_t *g = arg;
    uint64_t nchunks = (g->len + g->chunk - 1) / g->chunk;
    for (uint64_t k = 0; k < nchunks; k++) {
        unsigned s = (unsigned)(k % g->nslots);
        pthread_mutex_lock(&g->lock);
        while (g->state[s] != SLOT_EMPTY && !g->abort)
            pthread_cond_wait(&g->cond, &g->lock);
        bool stop = g->abort;
        pthread_mutex_unlock(&g->lock);
        if (stop)
            break;
        int e = get_fill(g, s, k); /* g->crc is only touched by this thread while running */
        pthread_mutex_lock(&g->lock);
        if (e) {
            g->read_err = e;
            g->abort = true;
        } else {
            g->state[s] = SLOT_FILLED;
        }
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        if (e)
            break;
    }
    return NULL;
}

/* Direct GET (bound shm, GPU memory): up to copy_threads workers, the request thread among
 * them, each take the next window of the object, checksum it and copy it into the client, so
 * one request uses the cores the host gives it (a single stream was capped by one thread's
 * copy rate). The threads are shared out among the direct requests in flight: a request gets
 * copy_threads / active, at least one, at most one per window. The windows run across every
 * extent of the object in one pool (a composed object, e.g. a striped PUT's files, is not
 * served extent after extent with the threads joined at each end). Each extent is mapped once;
 * per-window crcs are combined in order at the end. */
typedef struct get_direct {
    rdma_t *r;
    xfer_batch_t *b;
    const get_ext_t *ext;
    size_t n_ext;
    const uint8_t **map; /* per extent: its range, mapped once */
    uint64_t *first;     /* per extent: index of its first window; first[n_ext] = nwin */
    uint64_t nwin;
    uint64_t *crc;  /* per window */
    uint64_t next;  /* next window to take (atomic) */
    int read_err;   /* first mmap errno (atomic, 0 = none) */
    wh_status_t st; /* first transfer failure (atomic) */
    bool reads_fd;  /* the transport reads each window from the extent's file (no mapping) */
} get_direct_t;

/* The extent of window k (binary search over first[]). */
static size_t get_direct_ext(const get_direct_t *d, uint64_t k)
{
    size_t lo = 0, hi = d->n_ext;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (d->first[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void *get_direct_worker(void *arg)
{
    get_direct_t *d = arg;
    for (;;) {
        uint64_t k = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
        if (k >= d->nwin || __atomic_load_n(&d->read_err, __ATOMIC_RELAXED) ||
            __atomic_load_n(&d->st, __ATOMIC_RELAXED) != WH_OK)
            break;
        size_t e = get_direct_ext(d, k);
        uint64_t w = k - d->first[e];
        size_t n =
            (size_t)WH_MIN((uint64_t)RDMA_DIRECT_WINDOW, d->ext[e].len - w * RDMA_DIRECT_WINDOW);
        uint64_t at = d->ext[e].roff + w * RDMA_DIRECT_WINDOW;
        if (d->reads_fd) {
            wh_status_t st = xfer_batch_post_fd_crc(
                d->b, d->ext[e].fd, d->ext[e].off + w * RDMA_DIRECT_WINDOW, n, at, &d->crc[k]);
            if (st != WH_OK) {
                wh_status_t ok = WH_OK;
                __atomic_compare_exchange_n(&d->st, &ok, st, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE);
                break;
            }
            continue;
        }
        const uint8_t *src = d->map[e] + w * RDMA_DIRECT_WINDOW;
        /* Fault the window in here, in parallel with the other workers (one mapping per
         * extent: unmapping per window made every worker's munmap a TLB shootdown). */
        uintptr_t pa = (uintptr_t)src & ~(uintptr_t)4095;
        madvise((void *)pa, (uintptr_t)src + n - pa, RDMA_MADV_POPULATE_READ);
        /* A transport that checksums inside its copy saves a pass over memory (GPU memory:
         * the host's memory bandwidth, not a core, bounds the copy). */
        wh_status_t st = xfer_batch_post_crc(d->b, src, n, at, &d->crc[k]);
        if (st == WH_ERR_UNSUPPORTED) {
            d->crc[k] = wh_crc64nvme(0, src, n);
            st = xfer_batch_post(d->b, XFER_OP_WRITE, NULL, (void *)(uintptr_t)src, n, at, 0);
        }
        if (st != WH_OK) {
            wh_status_t ok = WH_OK;
            __atomic_compare_exchange_n(&d->st, &ok, st, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            break;
        }
    }
    return NULL;
}

/* Runs the direct GET of the extents ext[0..n) (each [off, off+len) of its fd, landing at
 * its roff in the region); fills *crc, the crc of them all in order, on success. Returns the
 * first failure. */
static wh_status_t get_direct_run(rdma_t *r, xfer_batch_t *b, const get_ext_t *ext, size_t n,
                                  uint64_t *crc, int *read_err)
{
    get_direct_t d = {.r = r, .b = b, .ext = ext, .n_ext = n};
    wh_status_t st = WH_OK;
    d.map = calloc(n, sizeof *d.map);
    d.first = calloc(n + 1, sizeof *d.first);
    if (!d.map || !d.first) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    d.reads_fd = true; /* every extent's file is read by the transport, or none is */
    for (size_t i = 0; i < n; i++)
        d.reads_fd = d.reads_fd && xfer_batch_reads_fd(b, ext[i].fd);
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (fstat(ext[i].fd, &sb) != 0 || (uint64_t)sb.st_size < ext[i].off + ext[i].len) {
            *read_err = EIO;
            st = WH_ERR_IO;
            goto out;
        }
        d.first[i] = d.nwin;
        d.nwin += (ext[i].len + RDMA_DIRECT_WINDOW - 1) / RDMA_DIRECT_WINDOW;
        if (!ext[i].len || d.reads_fd)
            continue;
        uint64_t aoff = ext[i].off & ~(uint64_t)4095, delta = ext[i].off - aoff;
        void *m =
            mmap(NULL, (size_t)(delta + ext[i].len), PROT_READ, MAP_SHARED, ext[i].fd, (off_t)aoff);
        if (m == MAP_FAILED) {
            *read_err = errno;
            st = WH_ERR_IO;
            goto out;
        }
        d.map[i] = (const uint8_t *)m + delta;
    }
    d.first[n] = d.nwin;
    if (d.nwin == 0) {
        *crc = 0;
        goto out;
    }
    if (!(d.crc = malloc(d.nwin * sizeof *d.crc))) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    pthread_t th[RDMA_DIRECT_MAX_THREADS];
    unsigned nth = 0, active = __atomic_add_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    unsigned want = r->copy_threads / active;
    if (want < 1)
        want = 1;
    for (unsigned i = 1; i < want && i < d.nwin; i++)
        if (pthread_create(&th[nth], NULL, get_direct_worker, &d) == 0)
            nth++;
    get_direct_worker(&d);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    __atomic_sub_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    st = d.read_err ? WH_ERR_IO : d.st;
    *read_err = d.read_err;
    if (st == WH_OK) {
        uint64_t c = 0;
        bool any = false;
        for (size_t i = 0; i < n; i++)
            for (uint64_t k = d.first[i]; k < d.first[i + 1]; k++) {
                uint64_t wl = WH_MIN((uint64_t)RDMA_DIRECT_WINDOW,
                                     ext[i].len - (k - d.first[i]) * RDMA_DIRECT_WINDOW);
                if (!any)
                    c = d.crc[k];
                else if (wl == RDMA_DIRECT_WINDOW)
                    c = wh_crc64nvme_shift_combine(&r->direct_shift, c, d.crc[k]);
                else
                    c = wh_crc64nvme_combine(c, d.crc[k], wl);
                any = true;
            }
        *crc = c;
    }
out:
    if (d.map)
        for (size_t i = 0; i < n; i++)
            if (d.map[i]) {
                uintptr_t base = (uintptr_t)d.map[i] - (ext[i].off & 4095);
                munmap((void *)base, (size_t)((ext[i].off & 4095) + ext[i].len));
            }
    free(d.map);
    free(d.first);
    free(d.crc);
    return st;
}

/* Staged GET: a reader thread fills pool buffers (disk read + crc) while the request thread
 * posts the filled ones and waits for the oldest. */
static wh_status_t get_staged_run(rdma_xfer_t *t, get_pipe_t *g, uint64_t nchunks)
{
    xfer_batch_t *b = t->b;
    uint64_t chunk = g->chunk;
    wh_status_t st = WH_OK;
    pthread_t rd;
    bool threaded = nchunks > 1 && g->nslots > 1;
    if (threaded && pthread_create(&rd, NULL, get_reader, g) != 0)
        threaded = false;
    if (!threaded)
        g->nslots = 1; /* fill, send, fill, send: correct, not overlapped */

    unsigned sent_q[RDMA_MAX_SLOTS], qh = 0, qn = 0; /* FIFO of SENT slots */
    for (uint64_t k = 0; k < nchunks && st == WH_OK; k++) {
        unsigned s = (unsigned)(k % g->nslots);
        if (!threaded) {
            int e = get_fill(g, s, k);
            if (e) {
                g->read_err = e;
                st = WH_ERR_IO;
                break;
            }
        } else {
            pthread_mutex_lock(&g->lock);
            while (g->state[s] != SLOT_FILLED && !g->abort)
                pthread_cond_wait(&g->cond, &g->lock);
            bool ab = g->state[s] != SLOT_FILLED;
            pthread_mutex_unlock(&g->lock);
            if (ab) {
                st = WH_ERR_IO;
                break;
            }
        }
        st = xfer_batch_post(b, XFER_OP_WRITE, t->g->mr, g->buf[s], g->n[s], k * chunk, s);
        if (st != WH_OK)
            break;
        if (!threaded) {
            st = xfer_batch_wait(b, s); /* unthreaded: wait for this one */
            pthread_mutex_lock(&g->lock);
            g->state[s] = SLOT_EMPTY;
            pthread_cond_broadcast(&g->cond);
            pthread_mutex_unlock(&g->lock);
            continue;
        }
        pthread_mutex_lock(&g->lock);
        g->state[s] = SLOT_SENT;
        pthread_mutex_unlock(&g->lock);
        sent_q[(qh + qn++) % RDMA_MAX_SLOTS] = s;
        /* Keep one slot for the reader to fill while the others are in flight. */
        while (qn > 0 && qn + 1 >= g->nslots) {
            unsigned o = sent_q[qh];
            if ((st = xfer_batch_wait(b, o)) != WH_OK)
                break;
            qh = (qh + 1) % RDMA_MAX_SLOTS;
            qn--;
            pthread_mutex_lock(&g->lock);
            g->state[o] = SLOT_EMPTY;
            pthread_cond_broadcast(&g->cond);
            pthread_mutex_unlock(&g->lock);
        }
    }
    if (st == WH_OK)
        st = xfer_batch_wait(b, XFER_TAG_ALL);
    if (threaded) {
        pthread_mutex_lock(&g->lock);
        g->abort = true;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        pthread_join(rd, NULL);
    }
    return st;
}

/* The transfer of the extents ge[0..n_ext), len bytes in all, into the token's region. */
static wh_status_t get_extents_run(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                                   get_ext_t *ge, size_t n_ext, uint64_t len, rdma_result_t *res)
{
    rdma_xfer_t t;
    wh_status_t st = WH_OK;
    if (!rdma_vet(r, token, peer, len, &t, res)) {
        rdma_end(&t);
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;
    }
    rdma_prov_t *p = t.p;
    if (!(t.late = calloc(1, sizeof *t.late))) {
        rdma_end(&t);
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    t.late->r = r;
    t.late->peer_key = rdma_peer_key(&t.tok);
    if ((st = rdma_begin(&t, peer, res)) != WH_OK) {
        rdma_end(&t);
        return st;
    }

    get_pipe_t g;
    memset(&g, 0, sizeof g);
    g.ext = ge;
    g.n_ext = n_ext;
    g.r = r;
    g.len = len;
    /* A source has no file to map: it goes staged, through pool buffers, on a direct batch
     * too (posts there are synchronous copies; the reader thread still overlaps them). */
    if (xfer_batch_direct(t.b) && !ge[0].read) {
        st = get_direct_run(r, t.b, ge, n_ext, &g.crc, &g.read_err);
    } else {
        g.chunk = r->buf_len;
        uint64_t nchunks = (len + g.chunk - 1) / g.chunk;
        unsigned want = (unsigned)WH_MIN(nchunks ? nchunks : 1, (uint64_t)r->cfg.window + 2);
        if (rdma_pool_take(r, t.late, want, res) == 0) {
            rdma_end(&t);
            return WH_ERR_BUSY;
        }
        g.nslots = t.late->n;
        for (unsigned i = 0; i < g.nslots; i++)
            g.buf[i] = rdma_pool_buf(r, t.late->idx[i]);
        /* Only once the buffers are there: every path from here destroys them. */
        rdma_sync_init(r, &g.lock, &g.cond);
        st = get_staged_run(&t, &g, nchunks);
        rdma_sync_destroy(r, &g.lock, &g.cond);
    }
    uint64_t moved = xfer_batch_bytes(t.b);
    if (st == WH_OK && moved == len) {
        res->http_status = 200;
        res->bytes = moved;
        res->crc64nvme = g.crc;
        atomic_fetch_add(&p->write_bytes, moved);
        atomic_fetch_add(&p->write_ops, 1);
    } else {
        if (g.src_st != WH_OK) {
            s3_err_t e = s3_err_from_status(g.src_st);
            if (g.src_st == WH_ERR_CHECKSUM)
                rdma_res_set(res, 500, "InternalError",
                             "the object's stored bytes fail verification at offset %" PRIu64
                             " or after it: not served",
                             g.src_at);
            else
                rdma_res_set(res, s3_err_http_status(e), s3_err_code(e),
                             "reading the object failed: %s", wh_status_str(g.src_st));
            st = g.src_st;
        } else if (g.read_err) {
            rdma_res_set(res, 500, "InternalError", "reading the object failed: %s",
                         strerror(g.read_err));
            st = WH_ERR_IO;
        } else {
            char why[256];
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st,
                               xfer_batch_error(t.b, why, sizeof why));
            if (st == WH_OK)
                st = WH_ERR_TRANSPORT;
        }
        res->bytes = moved;
        atomic_fetch_add(&p->write_fail, 1);
        wh_warn(MOD, "rdma get failed provider=%s moved=%" PRIu64 " of=%" PRIu64 " reason='%s'",
                p->short_name, moved, len, res->message);
    }
    rdma_end(&t);
    return st;
}

wh_status_t rdma_get_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, int fd,
                         uint64_t off, uint64_t len, rdma_result_t *res)
{
    rdma_extent_t e = {.fd = fd, .off = off, .len = len};
    return rdma_get_extents(r, token, peer, &e, 1, res);
}

wh_status_t rdma_get_extents(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             const rdma_extent_t *ext, size_t n, rdma_result_t *res)
{
    wh_status_t st;
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += ext[i].len;
    get_ext_t one, *ge = n <= 1 ? &one : calloc(n, sizeof *ge);
    if (!ge) {
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    memset(ge, 0, (n ? n : 1) * sizeof *ge);
    for (size_t i = 0, at = 0; i < n; at += ext[i].len, i++) {
        ge[i].fd = ext[i].fd;
        ge[i].dfd = r->cfg.cold_buffered ? GET_DIO_OFF : GET_DIO_UNOPENED;
        ge[i].off = ext[i].off;
        ge[i].len = ext[i].len;
        ge[i].roff = at;
    }
    st = get_extents_run(r, token, peer, ge, n, len, res);
    for (size_t i = 0; i < n; i++)
        if (ge[i].dfd >= 0)
            close(ge[i].dfd);
    if (ge != &one)
        free(ge);
    return st;
}

wh_status_t rdma_get_source(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                            rdma_read_cb read, void *arg, uint64_t off, uint64_t len,
                            rdma_result_t *res)
{
    if (!read) {
        rdma_res_set(res, 500, "InternalError", "no source to read the object from");
        return WH_ERR_INVALID;
    }
    get_ext_t e = {.fd = -1,
                   .dfd = GET_DIO_NONE,
                   .off = off,
                   .len = len,
                   .roff = 0,
                   .read = read,
                   .read_arg = arg};
    return get_extents_run(r, token, peer, &e, 1, len, res);
}
