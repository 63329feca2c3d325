/* SPDX-License-Identifier: Apache-2.0 */
/* Chunk files of a storage server (see chunks.h). */
#include "cluster/chunks.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "cluster/itoken.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MOD "chunks"

struct cl_chunks {
    char *dir;
    int chunks_fd;  /* DIR/chunks */
    int tmp_fd;     /* DIR/tmp */
    int damaged_fd; /* DIR/damaged */
};

struct cl_chunk_writer {
    cl_chunks_t *cs;
    int fd;
    char id[CL_CHUNK_ID_LEN + 1];
    char tmp[CL_CHUNK_ID_LEN + 24];
    uint64_t size, crc;
    uint64_t blk_crc; /* of the block being filled */
    uint64_t *blocks; /* crcs of the full blocks */
    size_t nblocks, cap;
    bool broken;
    bool md5_on;
    wh_md5_t md5;
};

static int open_dir_at(int at, const char *name)
{
    if (mkdirat(at, name, 0755) != 0 && errno != EEXIST)
        return -1;
    return openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Removes every temp file: a crash left them, and no rename will ever take them now. */
static void clean_tmp(cl_chunks_t *cs)
{
    int fd = dup(cs->tmp_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    unsigned n = 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && unlinkat(cs->tmp_fd, e->d_name, 0) == 0)
            n++;
    closedir(d);
    if (n)
        wh_info(MOD, "removed leftover temp chunks count=%u", n);
}

wh_status_t cl_chunks_open(const char *dir, cl_chunks_t **out)
{
    cl_chunks_t *cs = calloc(1, sizeof *cs);
    if (!cs)
        return WH_ERR_NOMEM;
    cs->chunks_fd = cs->tmp_fd = cs->damaged_fd = -1;
    cs->dir = strdup(dir);
    if (!cs->dir || wh_mkdir_p(dir, 0755) != 0)
        goto err;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        goto err;
    cs->chunks_fd = open_dir_at(dfd, "chunks");
    cs->tmp_fd = open_dir_at(dfd, "tmp");
    cs->damaged_fd = open_dir_at(dfd, "damaged");
    close(dfd);
    if (cs->chunks_fd < 0 || cs->tmp_fd < 0 || cs->damaged_fd < 0)
        goto err;
    clean_tmp(cs);
    *out = cs;
    return WH_OK;
err:
    wh_error(MOD, "cannot open the chunk directory dir=%s err='%s'", dir, strerror(errno));
    cl_chunks_close(cs);
    return WH_ERR_IO;
}

void cl_chunks_close(cl_chunks_t *cs)
{
    if (!cs)
        return;
    if (cs->chunks_fd >= 0)
        close(cs->chunks_fd);
    if (cs->tmp_fd >= 0)
        close(cs->tmp_fd);
    if (cs->damaged_fd >= 0)
        close(cs->damaged_fd);
    free(cs->dir);
    free(cs);
}

wh_status_t cl_chunks_space(cl_chunks_t *cs, uint64_t *capacity, uint64_t *avail)
{
    struct statvfs sv;
    if (fstatvfs(cs->chunks_fd, &sv) != 0)
        return WH_ERR_IO;
    *capacity = (uint64_t)sv.f_blocks * sv.f_frsize;
    *avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    return WH_OK;
}

static void rel_path(const char *id, char out[CL_CHUNK_ID_LEN + 4])
{
    snprintf(out, CL_CHUNK_ID_LEN + 4, "%.2s/%s", id, id);
}

wh_status_t cl_chunk_writer_open(cl_chunks_t *cs, const char *id, bool want_md5,
                                 cl_chunk_writer_t **out)
{
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    cl_chunk_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return WH_ERR_NOMEM;
    w->cs = cs;
    memcpy(w->id, id, CL_CHUNK_ID_LEN + 1);
    uint8_t rnd[4];
    char rhex[9];
    wh_random_bytes(rnd, sizeof rnd);
    wh_hex_encode(rnd, sizeof rnd, rhex);
    snprintf(w->tmp, sizeof w->tmp, "%s.%s", id, rhex);
    w->fd = openat(cs->tmp_fd, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        wh_error(MOD, "cannot create a temp chunk id=%s err='%s'", id, strerror(errno));
        free(w);
        return WH_ERR_IO;
    }
    if (want_md5 && wh_md5_init(&w->md5) != 0) {
        cl_chunk_writer_abort(w);
        return WH_ERR_NOMEM;
    }
    w->md5_on = want_md5;
    *out = w;
    return WH_OK;
}

static bool block_push(cl_chunk_writer_t *w)
{
    if (w->nblocks == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        uint64_t *nb = realloc(w->blocks, cap * sizeof *nb);
        if (!nb) {
            w->broken = true;
            return false;
        }
        w->blocks = nb;
        w->cap = cap;
    }
    w->blocks[w->nblocks++] = w->blk_crc;
    w->blk_crc = 0;
    return true;
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

wh_status_t cl_chunk_writer_write(cl_chunk_writer_t *w, const void *p, size_t n)
{
    if (w->broken)
        return WH_ERR_IO;
    int e = wh_write_all(w->fd, p, n);
    if (e) {
        wh_error(MOD, "writing a chunk failed id=%s err='%s'", w->id, strerror(-e));
        w->broken = true;
        return e == -ENOSPC || e == -EDQUOT ? WH_ERR_NO_SPACE : WH_ERR_IO;
    }
    w->crc = wh_crc64nvme(w->crc, p, n);
    if (w->md5_on)
        wh_md5_update(&w->md5, p, n);
    const uint8_t *b = p;
    while (n) {
        size_t in = (size_t)(w->size % CL_CHUNK_BLOCK), m = WH_MIN(n, CL_CHUNK_BLOCK - in);
        w->blk_crc = wh_crc64nvme(w->blk_crc, b, m);
        w->size += m;
        b += m;
        n -= m;
        if (w->size % CL_CHUNK_BLOCK == 0 && !block_push(w))
            return WH_ERR_NOMEM;
    }
    return WH_OK;
}

uint64_t cl_chunk_writer_size(const cl_chunk_writer_t *w)
{
    return w->size;
}

uint64_t cl_chunk_writer_crc(const cl_chunk_writer_t *w)
{
    return w->crc;
}

void cl_chunk_writer_abort(cl_chunk_writer_t *w)
{
    if (!w)
        return;
    close(w->fd);
    unlinkat(w->cs->tmp_fd, w->tmp, 0);
    if (w->md5_on)
        wh_md5_free(&w->md5);
    free(w->blocks);
    free(w);
}

static wh_status_t read_footer(int f, const char *id, cl_chunk_info_t *info);

/* The committed chunk id has size bytes with crc (its footer says so). */
static bool same_chunk(cl_chunks_t *cs, const char *id, uint64_t size, uint64_t crc)
{
    int fd = -1;
    cl_chunk_info_t info;
    if (cl_chunk_open(cs, id, &fd, &info) != WH_OK)
        return false;
    bool same = info.size == size && info.crc == crc;
    cl_chunk_info_free(&info);
    close(fd);
    return same;
}

wh_status_t cl_chunk_writer_commit(cl_chunk_writer_t *w, uint64_t *crc, uint8_t md5[16])
{
    char rel[CL_CHUNK_ID_LEN + 4], sub[3] = {w->id[0], w->id[1], 0};
    rel_path(w->id, rel);
    if (!w->broken && w->size % CL_CHUNK_BLOCK != 0)
        block_push(w); /* the last, shorter block */
    if (w->broken)
        goto err;
    /* the block table, then the footer */
    uint8_t *tab = malloc(w->nblocks ? w->nblocks * 8 : 1);
    if (!tab)
        goto err;
    for (size_t i = 0; i < w->nblocks; i++)
        put_le64(tab + 8 * i, w->blocks[i]);
    uint8_t foot[CL_CHUNK_FOOTER] = {'W', 'H', 'C', '2'};
    for (int i = 0; i < 4; i++)
        foot[4 + i] = (uint8_t)(CL_CHUNK_BLOCK >> (8 * i));
    put_le64(foot + 8, w->size);
    put_le64(foot + 16, w->crc);
    put_le64(foot + 24, wh_crc64nvme(0, tab, w->nblocks * 8));
    int e = wh_write_all(w->fd, tab, w->nblocks * 8);
    free(tab);
    if (e || wh_write_all(w->fd, foot, sizeof foot) != 0 || fsync(w->fd) != 0)
        goto err;
    int sfd = open_dir_at(w->cs->chunks_fd, sub);
    if (sfd < 0)
        goto err;
    /* Linked into place only where no chunk of that id is: a committed chunk is never
     * replaced (the same bytes again are a success, other bytes WH_ERR_EXISTS). */
    if (linkat(w->cs->tmp_fd, w->tmp, w->cs->chunks_fd, rel, 0) != 0) {
        int le = errno;
        close(sfd);
        if (le != EEXIST)
            goto err;
        wh_status_t st = same_chunk(w->cs, w->id, w->size, w->crc) ? WH_OK : WH_ERR_EXISTS;
        if (st != WH_OK)
            wh_warn(MOD, "chunk id=%s is here already with other bytes: not replaced", w->id);
        *crc = w->crc;
        if (md5 && w->md5_on)
            wh_md5_final(&w->md5, md5);
        else if (md5)
            memset(md5, 0, 16);
        w->md5_on = false;
        cl_chunk_writer_abort(w);
        return st;
    }
    unlinkat(w->cs->tmp_fd, w->tmp, 0);
    if (fsync(sfd) != 0) {
        close(sfd);
        goto err;
    }
    close(sfd);
    unlinkat(w->cs->damaged_fd, w->id, 0); /* repaired: the damaged copy has done its part */
    *crc = w->crc;
    if (w->md5_on) {
        wh_md5_final(&w->md5, md5);
        w->md5_on = false;
    } else if (md5) {
        memset(md5, 0, 16);
    }
    close(w->fd);
    free(w->blocks);
    free(w);
    return WH_OK;
err:
    wh_error(MOD, "committing a chunk failed id=%s err='%s'", w->id, strerror(errno));
    cl_chunk_writer_abort(w);
    return WH_ERR_IO;
}

void cl_chunk_info_free(cl_chunk_info_t *info)
{
    if (!info)
        return;
    free(info->blocks);
    info->blocks = NULL;
}

/* Reads the footer (and a WHC2 file's block table) of the open chunk file f. */
static wh_status_t read_footer(int f, const char *id, cl_chunk_info_t *info)
{
    memset(info, 0, sizeof *info);
    struct stat sb;
    uint8_t foot[CL_CHUNK_FOOTER];
    if (fstat(f, &sb) != 0 || sb.st_size < CL_CHUNK_FOOTER_V1)
        goto bad;
    uint64_t fsize = (uint64_t)sb.st_size;
    if (pread(f, foot, CL_CHUNK_FOOTER_V1, (off_t)(fsize - CL_CHUNK_FOOTER_V1)) !=
        CL_CHUNK_FOOTER_V1)
        goto bad;
    if (memcmp(foot, "WHC1", 4) == 0) {
        info->size = fsize - CL_CHUNK_FOOTER_V1;
        info->crc = get_le64(foot + 8);
        return WH_OK;
    }
    if (fsize < CL_CHUNK_FOOTER ||
        pread(f, foot, CL_CHUNK_FOOTER, (off_t)(fsize - CL_CHUNK_FOOTER)) != CL_CHUNK_FOOTER ||
        memcmp(foot, "WHC2", 4) != 0)
        goto bad;
    uint32_t bs = (uint32_t)foot[4] | (uint32_t)foot[5] << 8 | (uint32_t)foot[6] << 16 |
                  (uint32_t)foot[7] << 24;
    uint64_t size = get_le64(foot + 8);
    if (bs < 4096 || bs > (1u << 30) || size > fsize)
        goto bad;
    uint64_t nb = (size + bs - 1) / bs;
    if (size + nb * 8 + CL_CHUNK_FOOTER != fsize)
        goto bad;
    uint8_t *tab = malloc(nb ? nb * 8 : 1);
    info->blocks = calloc(nb ? nb : 1, sizeof *info->blocks);
    if (!tab || !info->blocks) {
        free(tab);
        cl_chunk_info_free(info);
        return WH_ERR_NOMEM;
    }
    if ((nb && pread(f, tab, nb * 8, (off_t)size) != (ssize_t)(nb * 8)) ||
        wh_crc64nvme(0, tab, nb * 8) != get_le64(foot + 24)) {
        free(tab);
        cl_chunk_info_free(info);
        goto bad;
    }
    for (uint64_t i = 0; i < nb; i++)
        info->blocks[i] = get_le64(tab + 8 * i);
    free(tab);
    info->size = size;
    info->crc = get_le64(foot + 16);
    info->block = bs;
    info->nblocks = nb;
    return WH_OK;
bad:
    wh_error(MOD, "chunk file has no valid footer or block table id=%s", id);
    return WH_ERR_CHECKSUM;
}

wh_status_t cl_chunk_open(cl_chunks_t *cs, const char *id, int *fd, cl_chunk_info_t *info)
{
    memset(info, 0, sizeof *info);
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    char rel[CL_CHUNK_ID_LEN + 4];
    rel_path(id, rel);
    int f = openat(cs->chunks_fd, rel, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return errno == ENOENT ? WH_ERR_NOT_FOUND : WH_ERR_IO;
    wh_status_t st = read_footer(f, id, info);
    if (st != WH_OK) {
        close(f);
        return st;
    }
    *fd = f;
    return WH_OK;
}

/* crc64nvme of [off, off+len) of fd into *crc (buf: BUF bytes). */
static wh_status_t crc_span(int fd, uint8_t *buf, size_t cap, uint64_t off, uint64_t len,
                            uint64_t *crc)
{
    uint64_t c = 0;
    while (len) {
        ssize_t k = pread(fd, buf, (size_t)WH_MIN((uint64_t)cap, len), (off_t)off);
        if (k <= 0)
            return WH_ERR_IO;
        c = wh_crc64nvme(c, buf, (size_t)k);
        off += (uint64_t)k;
        len -= (uint64_t)k;
    }
    *crc = c;
    return WH_OK;
}

wh_status_t cl_chunk_verify(int fd, const cl_chunk_info_t *info)
{
    uint64_t c = 0;
    return cl_chunk_verify_range(fd, info, 0, info->size, &c);
}

wh_status_t cl_chunk_verify_range(int fd, const cl_chunk_info_t *info, uint64_t off, uint64_t len,
                                  uint64_t *range_crc)
{
    if (off > info->size || len > info->size - off)
        return WH_ERR_RANGE;
    enum { BUF = 1 << 20 };
    wh_status_t st = WH_OK;
    if (!info->block) { /* WHC1: whole chunk, then the range */
        uint8_t *b = malloc(BUF);
        if (!b)
            return WH_ERR_NOMEM;
        uint64_t c = 0;
        st = crc_span(fd, b, BUF, 0, info->size, &c);
        if (st == WH_OK && c != info->crc)
            st = WH_ERR_CHECKSUM;
        if (st == WH_OK)
            st = crc_span(fd, b, BUF, off, len, range_crc);
        free(b);
        return st;
    }
    uint64_t bs = info->block;
    uint8_t *b = malloc(bs);
    if (!b)
        return WH_ERR_NOMEM;
    uint64_t crc = 0, end = off + len;
    uint64_t first = off / bs, last = len ? (end - 1) / bs : first;
    for (uint64_t i = first; len && i <= last && st == WH_OK; i++) {
        uint64_t bo = i * bs, bl = WH_MIN(bs, info->size - bo);
        uint64_t got = 0;
        while (got < bl) {
            ssize_t k = pread(fd, b + got, (size_t)(bl - got), (off_t)(bo + got));
            if (k <= 0) {
                st = WH_ERR_IO;
                break;
            }
            got += (uint64_t)k;
        }
        if (st != WH_OK)
            break;
        if (wh_crc64nvme(0, b, bl) != info->blocks[i]) {
            st = WH_ERR_CHECKSUM;
            break;
        }
        uint64_t a = WH_MAX(off, bo), z = WH_MIN(end, bo + bl);
        crc = wh_crc64nvme(crc, b + (a - bo), (size_t)(z - a));
    }
    free(b);
    if (st == WH_OK && off == 0 && len == info->size && crc != info->crc)
        st = WH_ERR_CHECKSUM;
    if (st == WH_OK)
        *range_crc = crc;
    return st;
}

wh_status_t cl_chunk_range_expect(int fd, const cl_chunk_info_t *info, uint64_t off, uint64_t len,
                                  uint64_t *expect)
{
    if (off > info->size || len > info->size - off)
        return WH_ERR_RANGE;
    if (!info->block || len == 0)
        return cl_chunk_verify_range(fd, info, off, len, expect);
    uint64_t bs = info->block, end = off + len, crc = 0;
    bool any = false;
    for (uint64_t i = off / bs; i <= (end - 1) / bs; i++) {
        uint64_t bo = i * bs, bl = WH_MIN(bs, info->size - bo);
        uint64_t a = WH_MAX(off, bo), z = WH_MIN(end, bo + bl), c = 0;
        if (a == bo && z == bo + bl) {
            c = info->blocks[i];
        } else {
            wh_status_t st = cl_chunk_verify_range(fd, info, a, z - a, &c);
            if (st != WH_OK)
                return st;
        }
        crc = any ? wh_crc64nvme_combine(crc, c, z - a) : c;
        any = true;
    }
    *expect = crc;
    return WH_OK;
}

wh_status_t cl_chunk_quarantine(cl_chunks_t *cs, const char *id, int fd)
{
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    char rel[CL_CHUNK_ID_LEN + 4];
    rel_path(id, rel);
    struct stat a, b;
    if (fd >= 0 && (fstat(fd, &a) != 0 || fstatat(cs->chunks_fd, rel, &b, 0) != 0 ||
                    a.st_ino != b.st_ino || a.st_dev != b.st_dev))
        return WH_OK; /* gone, or replaced by a good copy */
    if (renameat(cs->chunks_fd, rel, cs->damaged_fd, id) != 0)
        return errno == ENOENT ? WH_OK : WH_ERR_IO;
    fsync(cs->damaged_fd);
    wh_warn(MOD, "damaged chunk moved aside id=%s to=%s/damaged/%s", id, cs->dir, id);
    return WH_OK;
}

/* A DIR stream of its own over the directory open as dirfd, from its start (NULL on error). */
static DIR *dir_stream(int dirfd)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(d);
    return d;
}

static uint64_t count_dir(int dirfd)
{
    uint64_t n = 0;
    DIR *d = dir_stream(dirfd);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

uint64_t cl_chunks_damaged_count(cl_chunks_t *cs)
{
    return count_dir(cs->damaged_fd);
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The valid chunk ids in the directory open as dirfd (consumed), sorted. */
static wh_status_t list_ids(int dirfd, char (**ids)[CL_CHUNK_ID_LEN + 1], size_t *n)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return WH_ERR_IO;
    }
    rewinddir(d);
    char(*arr)[CL_CHUNK_ID_LEN + 1] = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!cl_chunk_id_valid(e->d_name, strlen(e->d_name)))
            continue;
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 64;
            void *na = realloc(arr, nc * sizeof *arr);
            if (!na) {
                free(arr);
                closedir(d);
                return WH_ERR_NOMEM;
            }
            arr = na;
            cap = nc;
        }
        memcpy(arr[cnt++], e->d_name, CL_CHUNK_ID_LEN + 1);
    }
    closedir(d);
    if (cnt)
        qsort(arr, cnt, sizeof *arr, id_cmp);
    *ids = arr;
    *n = cnt;
    return WH_OK;
}

wh_status_t cl_chunks_list_prefix(cl_chunks_t *cs, unsigned prefix,
                                  char (**ids)[CL_CHUNK_ID_LEN + 1], size_t *n)
{
    *ids = NULL;
    *n = 0;
    char sub[3];
    snprintf(sub, sizeof sub, "%02x", prefix & 0xff);
    int sfd = openat(cs->chunks_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return errno == ENOENT ? WH_OK : WH_ERR_IO;
    return list_ids(sfd, ids, n);
}

wh_status_t cl_chunks_list_damaged(cl_chunks_t *cs, char (**ids)[CL_CHUNK_ID_LEN + 1], size_t *n)
{
    *ids = NULL;
    *n = 0;
    int fd = dup(cs->damaged_fd);
    if (fd < 0)
        return WH_ERR_IO;
    return list_ids(fd, ids, n);
}

wh_status_t cl_chunk_delete(cl_chunks_t *cs, const char *id)
{
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    char rel[CL_CHUNK_ID_LEN + 4];
    rel_path(id, rel);
    if (unlinkat(cs->chunks_fd, rel, 0) != 0 && errno != ENOENT)
        return WH_ERR_IO;
    unlinkat(cs->damaged_fd, id, 0); /* a damaged copy of a chunk that is gone */
    return WH_OK;
}

uint64_t cl_chunks_count(cl_chunks_t *cs)
{
    uint64_t n = 0;
    DIR *d = dir_stream(cs->chunks_fd);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int sfd = openat(cs->chunks_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *s = sfd >= 0 ? fdopendir(sfd) : NULL;
        if (!s) {
            if (sfd >= 0)
                close(sfd);
            continue;
        }
        struct dirent *f;
        while ((f = readdir(s)) != NULL)
            n += f->d_name[0] != '.';
        closedir(s);
    }
    closedir(d);
    return n;
}

wh_status_t cl_chunk_matches(const cl_chunk_info_t *info, uint64_t crc)
{
    if (info->crc != crc)
        return WH_ERR_CHECKSUM;
    if (!info->block)
        return WH_OK; /* WHC1: a read verifies the whole chunk against info->crc */
    /* The block table must make up that crc, so that the blocks a range verifies are the
     * chunk the map has. */
    uint64_t c = 0;
    for (uint64_t i = 0; i < info->nblocks; i++) {
        uint64_t bl = WH_MIN((uint64_t)info->block, info->size - i * info->block);
        c = i ? wh_crc64nvme_combine(c, info->blocks[i], bl) : info->blocks[i];
    }
    return info->nblocks == 0 ? (crc == 0 ? WH_OK : WH_ERR_CHECKSUM)
                              : (c == crc ? WH_OK : WH_ERR_CHECKSUM);
}
