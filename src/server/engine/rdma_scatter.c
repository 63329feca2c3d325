/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter GET (rdma_scatter.h): the windows of one object into one token's region.
 *
 * Direct batches (bound shm, GPU memory) with a file: copy threads, as rdma_get.c's direct
 * path, each take the next window, checksum it inside the copy and write it from a mapping of
 * the file straight to its destination. Everything else (fabric providers, and any source that
 * is not one plain file, e.g. an encrypted object decrypted by its reader): one thread packs
 * window after window into the pool's registered buffers (read, crc) and posts each piece to
 * its destination, so many small windows share a buffer and one completion wait. */
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

typedef struct scat_direct {
    xfer_batch_t *b;
    const uint8_t *map; /* the file from offset 0 (NULL when the batch reads the fd itself) */
    int fd;
    const xfer_window_t *w;
    size_t n;
    uint64_t *crcs;
    uint64_t next;  /* next window (atomic) */
    wh_status_t st; /* first failure (atomic) */
} scat_direct_t;

static void *scat_direct_worker(void *arg)
{
    scat_direct_t *d = arg;
    for (;;) {
        uint64_t k = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
        if (k >= d->n || __atomic_load_n(&d->st, __ATOMIC_RELAXED) != WH_OK)
            break;
        const xfer_window_t *w = &d->w[k];
        wh_status_t st = WH_OK;
        if (w->len == 0) {
            d->crcs[k] = 0;
            continue;
        }
        if (!d->map) {
            st = xfer_batch_post_fd_crc(d->b, d->fd, w->off, (size_t)w->len, w->dst, &d->crcs[k]);
        } else {
            const uint8_t *src = d->map + w->off;
            st = xfer_batch_post_crc(d->b, src, (size_t)w->len, w->dst, &d->crcs[k]);
            if (st == WH_ERR_UNSUPPORTED) {
                d->crcs[k] = wh_crc64nvme(0, src, (size_t)w->len);
                st = xfer_batch_post(d->b, XFER_OP_WRITE, NULL, (void *)(uintptr_t)src,
                                     (size_t)w->len, w->dst, 0);
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

static wh_status_t scat_direct_run(rdma_t *r, xfer_batch_t *b, int fd, const xfer_window_t *w,
                                   size_t n, uint64_t *crcs, int *read_err)
{
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++)
        end = WH_MAX(end, w[i].off + w[i].len);
    scat_direct_t d = {.b = b, .fd = fd, .w = w, .n = n, .crcs = crcs};
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < end) {
        *read_err = EIO;
        return WH_ERR_IO;
    }
    void *m = NULL;
    if (end && !xfer_batch_reads_fd(b, fd)) {
        m = mmap(NULL, (size_t)end, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            *read_err = errno;
            return WH_ERR_IO;
        }
        d.map = m;
    }
    pthread_t th[RDMA_DIRECT_MAX_THREADS];
    unsigned nth = 0, active = __atomic_add_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    unsigned want = r->copy_threads / active;
    if (want < 1)
        want = 1;
    for (unsigned i = 1; i < want && i < n; i++)
        if (pthread_create(&th[nth], NULL, scat_direct_worker, &d) == 0)
            nth++;
    scat_direct_worker(&d);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    __atomic_sub_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    if (m)
        munmap(m, (size_t)end);
    return d.st;
}

/* Reads n bytes at `at` of the object into p. Returns WH_OK or the failure (*read_err set for
 * a file's errno). */
static wh_status_t scat_read(int fd, rdma_read_cb read, void *arg, uint8_t *p, size_t n,
                             uint64_t at, int *read_err)
{
    if (fd < 0)
        return read(arg, p, n, at);
    int rc = wh_pread_all(fd, p, n, at);
    if (rc != 0) {
        *read_err = -rc;
        return WH_ERR_IO;
    }
    return WH_OK;
}

/* Staged: pool buffers, filled window by window and posted piece by piece; a buffer is reused
 * once the posts from it have completed (xfer_batch_wait on its tag). */
static wh_status_t scat_staged_run(rdma_t *r, rdma_xfer_t *t, int fd, rdma_read_cb read, void *arg,
                                   const xfer_window_t *w, size_t n, uint64_t *crcs, int *read_err,
                                   wh_status_t *src_st, rdma_result_t *res)
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
    for (size_t i = 0; i < n && st == WH_OK; i++) {
        uint64_t crc = 0;
        for (uint64_t done = 0; done < w[i].len && st == WH_OK;) {
            if (pos == cap) { /* the next buffer, once its posts have landed */
                used[s] = true;
                s = (s + 1) % nslots;
                if (used[s] && (st = xfer_batch_wait(t->b, s)) != WH_OK)
                    break;
                buf = rdma_pool_buf(r, t->late->idx[s]);
                pos = 0;
            }
            size_t k = (size_t)WH_MIN((uint64_t)(cap - pos), w[i].len - done);
            wh_status_t rs = scat_read(fd, read, arg, buf + pos, k, w[i].off + done, read_err);
            if (rs != WH_OK) {
                *src_st = rs;
                st = rs;
                break;
            }
            crc = wh_crc64nvme(crc, buf + pos, k);
            st = xfer_batch_post(t->b, XFER_OP_WRITE, t->g->mr, buf + pos, k, w[i].dst + done, s);
            pos += k;
            done += k;
        }
        crcs[i] = crc;
    }
    if (st == WH_OK)
        st = xfer_batch_wait(t->b, XFER_TAG_ALL);
    return st;
}

wh_status_t rdma_scatter_get(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             int fd, rdma_read_cb read, void *arg, const xfer_window_t *w, size_t n,
                             uint64_t *crcs, rdma_result_t *res)
{
    uint64_t need = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        need = WH_MAX(need, w[i].dst + w[i].len);
        total += w[i].len;
    }
    if (fd < 0 && !read) {
        rdma_res_set(res, 500, "InternalError", "no source to read the object from");
        return WH_ERR_INVALID;
    }
    rdma_xfer_t t;
    if (!rdma_vet(r, token, peer, need, &t, res)) {
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
    wh_status_t st = rdma_begin(&t, peer, res);
    if (st != WH_OK) {
        rdma_end(&t);
        return st;
    }
    int read_err = 0;
    wh_status_t src_st = WH_OK;
    if (xfer_batch_direct(t.b) && fd >= 0)
        st = scat_direct_run(r, t.b, fd, w, n, crcs, &read_err);
    else
        st = scat_staged_run(r, &t, fd, read, arg, w, n, crcs, &read_err, &src_st, res);
    uint64_t moved = xfer_batch_bytes(t.b);
    if (st == WH_OK && moved == total) {
        res->http_status = 200;
        res->bytes = moved;
        res->provider = p->short_name;
        atomic_fetch_add(&p->write_bytes, moved);
        atomic_fetch_add(&p->write_ops, 1);
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
        atomic_fetch_add(&p->write_fail, 1);
        wh_warn(MOD,
                "rdma scatter get failed provider=%s windows=%zu moved=%" PRIu64 " of=%" PRIu64
                " reason='%s'",
                p->short_name, n, moved, total, res->message);
    }
    rdma_end(&t);
    return st;
}
