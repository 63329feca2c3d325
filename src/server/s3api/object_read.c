/* SPDX-License-Identifier: Apache-2.0 */
/* Object reads: GetObject and HeadObject, over HTTP (sendfile from the version this request
 * opened, or a reader when the bytes are not local: a cluster gateway) or, with an
 * x-amz-rdma-token, by one-sided write into the client's memory (or delegated to the storage
 * servers that hold the bytes). */
#include "s3api/s3api.h"
#include "s3api/delegate.h"
#include "base/crc.h"
#include "base/log.h"
#include "s3/range.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MOD "s3"

static ssize_t no_body_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

static int not_modified(s3h_out_t *o, const data_obj_meta_t *m)
{
    char q[84], date[30];
    s3h_etag_quoted(m->etag, q);
    s3h_out_header(o, MHD_HTTP_HEADER_ETAG, q);
    wh_http_date(m->mtime, date);
    s3h_out_header(o, MHD_HTTP_HEADER_LAST_MODIFIED, date);
    return s3h_ok(o, 304);
}

/* The local files behind [off, off+len) of a reader (an object composed of its multipart
 * upload's parts), in order; *out malloc'd. WH_ERR_UNSUPPORTED: the bytes are not local. */
static wh_status_t read_extents(data_reader_t *rd, uint64_t off, uint64_t len, rdma_extent_t **out,
                                size_t *n)
{
    rdma_extent_t *e = NULL;
    size_t cnt = 0, cap = 0;
    while (len > 0) {
        int fd;
        uint64_t foff, avail;
        wh_status_t st = store_reader_extent(rd, off, &fd, &foff, &avail);
        if (st != WH_OK) {
            free(e);
            return st;
        }
        if (cnt == cap) {
            cap = cap ? 2 * cap : 8;
            rdma_extent_t *ne = realloc(e, cap * sizeof *e);
            if (!ne) {
                free(e);
                return WH_ERR_NOMEM;
            }
            e = ne;
        }
        uint64_t k = WH_MIN(avail, len);
        e[cnt++] = (rdma_extent_t){.fd = fd, .off = foff, .len = k};
        off += k;
        len -= k;
    }
    *out = e;
    *n = cnt;
    return WH_OK;
}

/* The engine's source for an encrypted object: the reader's decrypting read, which
 * authenticates each 64 KiB segment it touches before a byte of it is returned. */
static wh_status_t get_sse_read_rdma(void *arg, void *buf, size_t n, uint64_t at)
{
    return store_reader_pread(arg, buf, n, at);
}

/* RDMA GET: the bytes go by one-sided write; the answer has headers only. */
static int get_by_rdma(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, int fd,
                       data_reader_t *rd, uint64_t off, uint64_t len, int status)
{
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = wh_now_ns();
    rdma_extent_t *ext = NULL;
    size_t n_ext = 0;
    wh_status_t st;
    if (!rd)
        st = rdma_get_tok(r->srv->rdma, &r->token, &r->peer, fd, off, len, &res);
    else if (store_reader_encrypted(rd))
        /* Stored encrypted: decrypted (and verified) by the server on its way to the pool
         * buffers, wherever the stored bytes are (local files or a cluster's table). */
        st = rdma_get_source(r->srv->rdma, &r->token, &r->peer, get_sse_read_rdma, rd, off, len,
                             &res);
    else if (len > 0 && (st = read_extents(rd, off, len, &ext, &n_ext)) != WH_ERR_UNSUPPORTED) {
        /* Local files (a composed object): the server's engine, extent by extent. */
        if (st == WH_OK)
            st = rdma_get_extents(r->srv->rdma, &r->token, &r->peer, ext, n_ext, &res);
        else
            res = (rdma_result_t){.http_status = 500,
                                  .s3_code = "InternalError",
                                  .message = "cannot map the object's files"};
    } else {
        st = s3api_delegate_rdma_get(r, rd, &r->token, off, len, &res);
    }
    free(ext);
    wh_debug(MOD, "rdma get id=%s bytes=%llu provider=%s xfer_ms=%.3f st=%s", r->id,
             (unsigned long long)res.bytes, res.provider ? res.provider : "-",
             (double)(wh_now_ns() - t0) / 1e6, wh_status_str(st));
    if (st != WH_OK)
        return s3api_rdma_refuse(r, o, &res, st);
    if (res.bytes != len) {
        rdma_result_t bad = {.http_status = 500, .s3_code = "InternalError"};
        snprintf(bad.message, sizeof bad.message, "short RDMA transfer: %llu of %llu bytes",
                 (unsigned long long)res.bytes, (unsigned long long)len);
        return s3api_rdma_refuse(r, o, &bad, WH_ERR_TRANSPORT);
    }
    s3api_object_headers(r, o, m, false);
    /* The checksum of exactly the bytes moved, in place of any whole-object one. */
    char c64[13];
    wh_crc64nvme_b64(res.crc64nvme, c64);
    s3h_out_header(o, "x-amz-checksum-crc64nvme", c64);
    s3h_out_header(o, "x-amz-rdma-reply", status == 206 ? "206" : "200");
    s3h_out_header_u64(o, "x-amz-rdma-bytes-transferred", res.bytes);
    if (status == 206) {
        char cr[S3_CONTENT_RANGE_MAX];
        s3_content_range_format(cr, sizeof cr, off, len, m->size);
        s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
    return s3h_ok(o, status);
}

/* A reply from the page cache of several files (a range of a composed object that spans its
 * parts): each extent's span is mapped and MHD sends the mappings with sendmsg, so the kernel
 * copies the bytes once, from the page cache into the socket, as a write of a user buffer
 * would, but with no read into one first. (sendfile takes one fd per response; MHD has no way
 * to chain several.) The files stay mapped, and the reader open, until MHD frees the reply;
 * the files are never truncated, only unlinked, so a mapping never loses its pages. */
typedef struct mapped_reply {
    data_reader_t *rd;
    size_t n;
    struct MHD_IoVec *iov;
    void **base;
    size_t *maplen;
} mapped_reply_t;

static void mapped_free(void *cls)
{
    mapped_reply_t *m = cls;
    for (size_t i = 0; i < m->n; i++)
        if (m->base[i])
            munmap(m->base[i], m->maplen[i]);
    store_reader_close(m->rd);
    free(m->iov);
    free(m->base);
    free(m->maplen);
    free(m);
}

/* NULL when the range cannot be mapped (not local files, no memory): the caller streams it
 * by store_reader_pread instead. Takes rd on success. */
static struct MHD_Response *mapped_response(data_reader_t *rd, uint64_t off, uint64_t len)
{
    rdma_extent_t *ext = NULL;
    size_t n = 0;
    if (read_extents(rd, off, len, &ext, &n) != WH_OK)
        return NULL;
    mapped_reply_t *m = calloc(1, sizeof *m);
    struct MHD_Response *resp = NULL;
    if (!m || n > UINT_MAX || !(m->iov = calloc(n, sizeof *m->iov)) ||
        !(m->base = calloc(n, sizeof *m->base)) || !(m->maplen = calloc(n, sizeof *m->maplen)))
        goto out;
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t aoff = ext[i].off & ~(uint64_t)4095, delta = ext[i].off - aoff;
        void *p =
            mmap(NULL, (size_t)(delta + ext[i].len), PROT_READ, MAP_SHARED, ext[i].fd, (off_t)aoff);
        if (p == MAP_FAILED) {
            wh_warn(MOD, "cannot map an object file: %s; streaming by reads", strerror(errno));
            goto out;
        }
        m->base[i] = p;
        m->maplen[i] = (size_t)(delta + ext[i].len);
        madvise(p, m->maplen[i], MADV_SEQUENTIAL);
        m->iov[i].iov_base = (const char *)p + delta;
        m->iov[i].iov_len = (size_t)ext[i].len;
    }
    resp = MHD_create_response_from_iovec(m->iov, (unsigned)n, mapped_free, m);
out:
    free(ext);
    if (resp) {
        m->rd = rd;
        return resp;
    }
    if (m) {
        m->rd = NULL;
        mapped_free(m);
    }
    return NULL;
}

/* true with *fd (a duplicate, the caller's) when one local file of the reader holds
 * [off, off+len): a ranged or ?partNumber GET of a composed object within one part. */
static bool single_extent(data_reader_t *rd, uint64_t off, uint64_t len, int *fd, uint64_t *foff)
{
    int efd;
    uint64_t avail;
    if (store_reader_extent(rd, off, &efd, foff, &avail) != WH_OK || avail < len)
        return false;
    *fd = fcntl(efd, F_DUPFD_CLOEXEC, 0);
    if (*fd < 0)
        wh_warn(MOD, "cannot duplicate an object file descriptor: %s", strerror(errno));
    return *fd >= 0;
}

int s3api_read_object(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    int ret = s3h_key_check(r, o);
    if (ret || (ret = s3h_version_q(r, o, &vid)))
        return ret;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int fd = -1;
    data_reader_t *rd = NULL; /* bytes that are not local (a cluster): through the table */
    /* The version this request opened is the one served, by sendfile or by RDMA alike. */
    store_read_args_t ra = {.bucket = s3h_b(r), .key = s3h_k(r), .version_id = vid};
    wh_status_t st = store_object_open(s3h_st(r), &ra, &m, r->head ? NULL : &fd);
    if (st == WH_ERR_UNSUPPORTED && !r->head)
        st = store_object_reader(s3h_st(r), &ra, &m, &rd);
    if (st == WH_ERR_NOT_FOUND) {
        /* Who may not list the bucket does not learn that the key (or version) is absent. */
        if (!(ret = s3h_authz_object(r, o, NULL)))
            ret = s3h_version_not_found(r, o, &m, vid);
        data_obj_meta_free(&m);
        return ret;
    }
    if (st != WH_OK) {
        data_obj_meta_free(&m);
        return s3h_err_status(r, o, st, "opening the object");
    }
    /* The object's ACL, before a byte moves (HTTP or RDMA). */
    if ((ret = s3h_authz_object(r, o, &m)))
        goto out;
    /* Encryption: the customer's key checked, the reader given its key (sse.c). */
    s3h_sse_req_t sq;
    if ((ret = s3h_sse_request(r, o, false, false, &sq)))
        goto out;
    ret = s3h_sse_open(r, o, &m, &sq, rd);
    if (!ret)
        s3h_sse_headers(o, m.sse, &sq);
    s3h_sse_req_wipe(&sq);
    if (ret)
        goto out;
    s3h_out_version(o, m.version_id, vid != NULL);
    if (!vid)
        s3h_lc_expiration_header(r, o, s3h_k(r), m.size, m.mtime, m.tags);

    int pc = s3h_preconditions(r, &m, "");
    if (pc) {
        ret = pc == 304 ? not_modified(o, &m) : s3h_err(o, S3_ERR_PRECONDITION_FAILED, NULL);
        goto out;
    }

    uint64_t off = 0, len = m.size;
    int status = 200;
    bool part_ranged = false;
    if ((ret = s3api_part_range(r, o, &m, &off, &len, &part_ranged)))
        goto out;
    if (part_ranged)
        status = 206;
    const char *range = part_ranged ? NULL : front_hdr(r, "range");
    if (range) {
        switch (s3_range_parse(range, m.size, &off, &len)) {
        case S3_RANGE_OK:
            status = 206;
            break;
        case S3_RANGE_IGNORE:
            off = 0;
            len = m.size;
            break;
        case S3_RANGE_UNSATISFIABLE: {
            char cr[S3_CONTENT_RANGE_MAX];
            s3_content_range_format(cr, sizeof cr, 0, 0, m.size);
            s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
            ret = s3h_err(o, S3_ERR_INVALID_RANGE, NULL);
            goto out;
        }
        }
    }

    if (r->token_req && !r->head) {
        ret = get_by_rdma(r, o, &m, fd, rd, off, len, status);
        goto out;
    }

    struct MHD_Response *resp;
    uint64_t tx = 0, foff = 0;
    if (r->head) {
        resp = MHD_create_response_from_callback(len, 4096, no_body_reader, NULL, NULL);
    } else if (len == 0) {
        resp = front_resp_empty();
    } else if (rd && single_extent(rd, off, len, &fd, &foff)) {
        /* One file of a composed object holds the whole range: sendfile(2) from it. */
        resp = MHD_create_response_from_fd_at_offset64(len, fd, foff);
        if (resp) {
            fd = -1;
            tx = len;
            r->http_read = true;
        }
    } else if (rd && (resp = mapped_response(rd, off, len))) {
        /* Several files of a composed object: from their page cache, mapped. */
        rd = NULL; /* the response owns it */
        tx = len;
        r->http_read = true;
    } else if (rd) {
        /* The header cannot be taken back once sent: what is known now to be unreadable is a
         * 503 here, not a 200 whose body stops short. */
        char why[320];
        wh_status_t pst = store_reader_prepare(rd, off, len, why, sizeof why);
        if (pst != WH_OK) {
            wh_warn(MOD, "get refused before the header id=%s reason='%s'", r->id, why);
            ret = pst == WH_ERR_UNAVAILABLE ? s3h_errf(o, S3_ERR_SERVICE_UNAVAILABLE, "%s", why)
                                            : s3h_err_status(r, o, pst, "reading the object");
            goto out;
        }
        resp = s3api_reader_response(rd, off, len);
        if (resp) {
            rd = NULL; /* the response owns it */
            tx = len;
            r->http_read = true;
        }
    } else {
        /* sendfile(2) from the version this request opened; MHD closes fd. */
        resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
        if (resp) {
            fd = -1;
            tx = len;
            r->http_read = true;
        }
    }
    s3api_object_headers(r, o, &m, status == 200);
    if (status == 206) {
        char cr[S3_CONTENT_RANGE_MAX];
        s3_content_range_format(cr, sizeof cr, off, len, m.size);
        s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    }
    ret = s3h_ok_resp(o, status, resp, tx);
out:
    if (fd >= 0)
        close(fd);
    store_reader_close(rd);
    data_obj_meta_free(&m);
    return ret;
}
