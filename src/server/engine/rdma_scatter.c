/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter GET (rdma_scatter.h): the windows of one object into one token's region.
 *
 * Direct batches (bound shm, GPU memory) with files: copy threads, as rdma_get.c's direct
 * path, each take the next piece, checksum it inside the copy and write it from a mapping of
 * its file (each file mapped once) straight to its destination. Everything else (fabric
 * providers, and a source that is not files, e.g. an encrypted object decrypted by its
 * reader): one thread packs piece after piece into the pool's registered buffers (read, crc)
 * and posts each to its destination, so many small windows share a buffer and one completion
 * wait. Per-piece crcs are combined into per-window ones at the end. */
#include "engine/rdma_int.h"
#include "engine/rdma_scatter.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#ifdef MADV_POPULATE_READ
#define SCAT_MADV_POPULATE_READ MADV_POPULATE_READ
#else
#define SCAT_MADV_POPULATE_READ 22 /* Linux 5.14; older kernels answer EINVAL: faults instead */
#endif

/* A file the pieces read, mapped once from offset 0 to the furthest byte they need. */
typedef struct scat_file {
    int fd;
    uint64_t end;
    const uint8_t *map; /* NULL: the batch reads the fd itself */
} scat_file_t;

typedef struct scat_direct {
    xfer_batch_t *b;
    const rdma_scatter_piece_t *p;
    size_t np;
    const size_t *file; /* per piece: its scat_file_t */
    const scat_file_t *files;
    uint64_t *crc;  /* per piece */
    uint64_t next;  /* next piece (atomic) */
    wh_status_t st; /* first failure (atomic) */
} scat_direct_t;

static void *scat_direct_worker(void *arg)
{
    scat_direct_t *d = arg;
    for (;;) {
        uint64_t k = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
        if (k >= d->np || __atomic_load_n(&d->st, __ATOMIC_RELAXED) != WH_OK)
            break;
        const rdma_scatter_piece_t *p = &d->p[k];
        const scat_file_t *f = &d->files[d->file[k]];
        wh_status_t st = WH_OK;
        d->crc[k] = 0;
        if (p->len == 0)
            continue;
        if (!f->map) {
            st = xfer_batch_post_fd_crc(d->b, f->fd, p->off, (size_t)p->len, p->dst, &d->crc[k]);
        } else {
            const uint8_t *src = f->map + p->off;
            /* The piece's page tables in one call, not a fault per page inside the copy. */
            uintptr_t pa = (uintptr_t)src & ~(uintptr_t)4095;
            madvise((void *)pa, (uintptr_t)src + p->len - pa, SCAT_MADV_POPULATE_READ);
            st = xfer_batch_post_crc(d->b, src, (size_t)p->len, p->dst, &d->crc[k]);
            if (st == WH_ERR_UNSUPPORTED) {
                d->crc[k] = wh_crc64nvme(0, src, (size_t)p->len);
                st = xfer_batch_post(d->b, XFER_OP_WRITE, NULL, (void *)(uintptr_t)src,
                                     (size_t)p->len, p->dst, 0);
            }
        }
        if (st != WH_OK) {
            wh_status_t ok = WH_OK;
            __atomic_compare_exchange_n(&d->st, &ok, st, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            break;
        }
    }
    return NULL;
}

static wh_status_t scat_direct_run(rdma_t *r, xfer_batch_t *b, const rdma_scatter_piece_t *p,
                                   size_t np, uint64_t *crc, int *read_err)
{
    scat_file_t *files = calloc(np ? np : 1, sizeof *files);
    size_t *file = calloc(np ? np : 1, sizeof *file), nf = 0;
    wh_status_t st = WH_OK;
    if (!files || !file) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    /* The distinct files (a composed object has one per part: few), each mapped once. */
    for (size_t i = 0; i < np; i++) {
        size_t k = 0;
        while (k < nf && files[k].fd != p[i].fd)
            k++;
        if (k == nf)
            files[nf++] = (scat_file_t){.fd = p[i].fd};
        files[k].end = WH_MAX(files[k].end, p[i].off + p[i].len);
        file[i] = k;
    }
    for (size_t k = 0; k < nf; k++) {
        struct stat sb;
        if (fstat(files[k].fd, &sb) != 0 || (uint64_t)sb.st_size < files[k].end) {
            *read_err = EIO;
            st = WH_ERR_IO;
            goto out;
        }
        if (!files[k].end || xfer_batch_reads_fd(b, files[k].fd))
            continue;
        void *m = mmap(NULL, (size_t)files[k].end, PROT_READ, MAP_SHARED, files[k].fd, 0);
        if (m == MAP_FAILED) {
            *read_err = errno;
            st = WH_ERR_IO;
            goto out;
        }
        files[k].map = m;
    }
    scat_direct_t d = {.b = b, .p = p, .np = np, .file = file, .files = files, .crc = crc};
    pthread_t th[RDMA_DIRECT_MAX_THREADS];
    unsigned nth = 0, active = __atomic_add_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    unsigned want = r->copy_threads / active;
    if (want < 1)
        want = 1;
    for (unsigned i = 1; i < want && i < np; i++)
        if (pthread_create(&th[nth], NULL, scat_direct_worker, &d) == 0)
            nth++;
    scat_direct_worker(&d);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    __atomic_sub_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    st = d.st;
out:
    if (files)
        for (size_t k = 0; k < nf; k++)
            if (files[k].map)
                munmap((void *)(uintptr_t)files[k].map, (size_t)files[k].end);
    free(files);
    free(file);
    return st;
}

/* Staged: pool buffers, filled piece by piece and posted; a buffer is reused once the posts
 * from it have completed (xfer_batch_wait on its tag). */
static wh_status_t scat_staged_run(rdma_t *r, rdma_xfer_t *t, const rdma_scatter_piece_t *p,
                                   size_t np, rdma_read_cb read, void *arg, uint64_t *crc,
                                   int *read_err, wh_status_t *src_st, rdma_result_t *res)
{
    unsigned want = (unsigned)WH_MIN((uint64_t)r->cfg.window + 2, (uint64_t)RDMA_MAX_SLOTS);
    if (rdma_pool_take(r, t->late, want, res) == 0)
        return WH_ERR_BUSY;
    unsigned nslots = t->late->n;
    bool used[RDMA_MAX_SLOTS] = {false};
    unsigned s = 0;
    size_t pos = 0, cap = r->buf_len;
    uint8_t *buf = rdma_pool_buf(r, t->late->idx[0]);
    wh_status_t st = WH_OK;
    for (size_t i = 0; i < np && st == WH_OK; i++) {
        uint64_t c = 0;
        for (uint64_t done = 0; done < p[i].len && st == WH_OK;) {
            if (pos == cap) { /* the next buffer, once its posts have landed */
                used[s] = true;
                s = (s + 1) % nslots;
                if (used[s] && (st = xfer_batch_wait(t->b, s)) != WH_OK)
                    break;
                buf = rdma_pool_buf(r, t->late->idx[s]);
                pos = 0;
            }
            size_t k = (size_t)WH_MIN((uint64_t)(cap - pos), p[i].len - done);
            uint64_t at = p[i].off + done;
            wh_status_t rs = WH_OK;
            if (p[i].fd < 0) {
                rs = read ? read(arg, buf + pos, k, at) : WH_ERR_INVALID;
            } else {
                int rc = wh_pread_all(p[i].fd, buf + pos, k, at);
                if (rc != 0) {
                    *read_err = -rc;
                    rs = WH_ERR_IO;
                }
            }
            if (rs != WH_OK) {
                *src_st = *read_err ? WH_OK : rs;
                st = rs;
                break;
            }
            c = wh_crc64nvme(c, buf + pos, k);
            st = xfer_batch_post(t->b, XFER_OP_WRITE, t->g->mr, buf + pos, k, p[i].dst + done, s);
            pos += k;
            done += k;
        }
        crc[i] = c;
    }
    if (st == WH_OK)
        st = xfer_batch_wait(t->b, XFER_TAG_ALL);
    return st;
}

wh_status_t rdma_scatter_get(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             const rdma_scatter_piece_t *p, size_t np, size_t nwin,
                             rdma_read_cb read, void *arg, uint64_t *crcs, rdma_result_t *res)
{
    uint64_t need = 0, total = 0;
    bool files = true;
    for (size_t i = 0; i < np; i++) {
        need = WH_MAX(need, p[i].dst + p[i].len);
        total += p[i].len;
        files = files && p[i].fd >= 0;
    }
    uint64_t *crc = calloc(np ? np : 1, sizeof *crc);
    if (!crc) {
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    rdma_xfer_t t;
    if (!rdma_vet(r, token, peer, need, &t, res)) {
        rdma_end(&t);
        free(crc);
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;
    }
    rdma_prov_t *prov = t.p;
    if (!(t.late = calloc(1, sizeof *t.late))) {
        rdma_end(&t);
        free(crc);
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    t.late->r = r;
    t.late->peer_key = rdma_peer_key(&t.tok);
    wh_status_t st = rdma_begin(&t, peer, res);
    if (st != WH_OK) {
        rdma_end(&t);
        free(crc);
        return st;
    }
    int read_err = 0;
    wh_status_t src_st = WH_OK;
    if (xfer_batch_direct(t.b) && files)
        st = scat_direct_run(r, t.b, p, np, crc, &read_err);
    else
        st = scat_staged_run(r, &t, p, np, read, arg, crc, &read_err, &src_st, res);
    uint64_t moved = xfer_batch_bytes(t.b);
    if (st == WH_OK && moved == total) {
        res->http_status = 200;
        res->bytes = moved;
        res->provider = prov->short_name;
        atomic_fetch_add(&prov->write_bytes, moved);
        atomic_fetch_add(&prov->write_ops, 1);
        /* Per window: its pieces' crcs, combined in order. */
        for (size_t w = 0; w < nwin; w++)
            crcs[w] = 0;
        for (size_t i = 0; i < np; i++) {
            bool first = i == 0 || p[i - 1].win != p[i].win;
            crcs[p[i].win] =
                first ? crc[i] : wh_crc64nvme_combine(crcs[p[i].win], crc[i], p[i].len);
        }
    } else if (st == WH_ERR_BUSY && src_st == WH_OK && !read_err && res->http_status) {
        /* no pool buffers: res holds the 503 */
    } else {
        if (src_st != WH_OK) {
            if (src_st == WH_ERR_CHECKSUM)
                rdma_res_set(res, 500, "InternalError",
                             "the object's stored bytes fail verification: not served");
            else
                rdma_res_set(res, 500, "InternalError", "reading the object failed: %s",
                             wh_status_str(src_st));
            st = src_st;
        } else if (read_err) {
            rdma_res_set(res, 500, "InternalError", "reading the object failed: %s",
                         strerror(read_err));
            st = WH_ERR_IO;
        } else {
            char why[256];
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st,
                               xfer_batch_error(t.b, why, sizeof why));
            if (st == WH_OK)
                st = WH_ERR_TRANSPORT;
        }
        res->bytes = moved;
        atomic_fetch_add(&prov->write_fail, 1);
        wh_warn(MOD,
                "rdma scatter get failed provider=%s windows=%zu moved=%" PRIu64 " of=%" PRIu64
                " reason='%s'",
                prov->short_name, nwin, moved, total, res->message);
    }
    rdma_end(&t);
    free(crc);
    return st;
}

/* ---- gather -------------------------------------------------------------------------------- */

/* Pool buffers filled by reads from the windows (in part order) and drained to the sink in the
 * order they were filled: a buffer is drained when it is next to be filled, or at the end. */
static wh_status_t gather_run(rdma_t *r, rdma_xfer_t *t, const xfer_window_t *w, size_t n,
                              rdma_sink_cb sink, void *arg, uint64_t *crc, wh_status_t *sink_st,
                              rdma_result_t *res)
{
    unsigned want = (unsigned)WH_MIN((uint64_t)r->cfg.window + 2, (uint64_t)RDMA_MAX_SLOTS);
    if (rdma_pool_take(r, t->late, want, res) == 0)
        return WH_ERR_BUSY;
    unsigned nslots = t->late->n;
    size_t fill[RDMA_MAX_SLOTS] = {0}, cap = r->buf_len;
    unsigned s = 0, inflight = 0;
    wh_status_t st = WH_OK;
    size_t i = 0;
    uint64_t done = 0; /* of window i */
    while (st == WH_OK && (i < n || inflight)) {
        if (fill[s]) { /* the oldest buffer: its reads, then the sink */
            if ((st = xfer_batch_wait(t->b, s)) != WH_OK)
                break;
            uint8_t *buf = rdma_pool_buf(r, t->late->idx[s]);
            *crc = wh_crc64nvme(*crc, buf, fill[s]);
            if ((st = sink(arg, buf, fill[s])) != WH_OK) {
                *sink_st = st;
                break;
            }
            fill[s] = 0;
            inflight--;
        }
        if (i < n) {
            uint8_t *buf = rdma_pool_buf(r, t->late->idx[s]);
            while (i < n && fill[s] < cap && st == WH_OK) {
                size_t k = (size_t)WH_MIN((uint64_t)(cap - fill[s]), w[i].len - done);
                if (k)
                    st = xfer_batch_post(t->b, XFER_OP_READ, t->g->mr, buf + fill[s], k,
                                         w[i].off + done, s);
                fill[s] += k;
                done += k;
                if (done == w[i].len) {
                    i++;
                    done = 0;
                }
            }
            if (fill[s])
                inflight++;
        }
        s = (s + 1) % nslots;
    }
    if (st == WH_OK)
        st = xfer_batch_wait(t->b, XFER_TAG_ALL);
    return st;
}

wh_status_t rdma_gather_put(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                            const xfer_window_t *w, size_t n, rdma_sink_cb sink, void *arg,
                            rdma_result_t *res)
{
    uint64_t need = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        need = WH_MAX(need, w[i].off + w[i].len);
        total += w[i].len;
    }
    rdma_xfer_t t;
    if (!rdma_vet(r, token, peer, need, &t, res)) {
        rdma_end(&t);
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;
    }
    rdma_prov_t *prov = t.p;
    if (!(t.late = calloc(1, sizeof *t.late))) {
        rdma_end(&t);
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    t.late->r = r;
    t.late->peer_key = rdma_peer_key(&t.tok);
    wh_status_t st = rdma_begin(&t, peer, res);
    if (st != WH_OK) {
        rdma_end(&t);
        return st;
    }
    uint64_t crc = 0;
    wh_status_t sink_st = WH_OK;
    st = gather_run(r, &t, w, n, sink, arg, &crc, &sink_st, res);
    uint64_t moved = xfer_batch_bytes(t.b);
    if (st == WH_OK && moved == total) {
        res->http_status = 200;
        res->bytes = moved;
        res->crc64nvme = crc;
        res->provider = prov->short_name;
        atomic_fetch_add(&prov->read_bytes, moved);
        atomic_fetch_add(&prov->read_ops, 1);
    } else if (st == WH_ERR_BUSY && sink_st == WH_OK && res->http_status) {
        /* no pool buffers: res holds the 503 */
    } else {
        if (sink_st != WH_OK) {
            rdma_res_set(res, 500, "InternalError", "storing the part failed: %s",
                         wh_status_str(sink_st));
        } else {
            char why[256];
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st,
                               xfer_batch_error(t.b, why, sizeof why));
            if (st == WH_OK)
                st = WH_ERR_TRANSPORT;
        }
        res->bytes = moved;
        atomic_fetch_add(&prov->read_fail, 1);
        wh_warn(MOD,
                "rdma gather put failed provider=%s windows=%zu moved=%" PRIu64 " of=%" PRIu64
                " reason='%s'",
                prov->short_name, n, moved, total, res->message);
    }
    rdma_end(&t);
    return st;
}
