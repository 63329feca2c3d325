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
    int chunks_fd; /* DIR/chunks */
    int tmp_fd;    /* DIR/tmp */
};

struct cl_chunk_writer {
    cl_chunks_t *cs;
    int fd;
    char id[CL_CHUNK_ID_LEN + 1];
    char tmp[CL_CHUNK_ID_LEN + 24];
    uint64_t size, crc;
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
    cs->chunks_fd = cs->tmp_fd = -1;
    cs->dir = strdup(dir);
    if (!cs->dir || wh_mkdir_p(dir, 0755) != 0)
        goto err;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        goto err;
    cs->chunks_fd = open_dir_at(dfd, "chunks");
    cs->tmp_fd = open_dir_at(dfd, "tmp");
    close(dfd);
    if (cs->chunks_fd < 0 || cs->tmp_fd < 0)
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
    w->size += n;
    return WH_OK;
}

uint64_t cl_chunk_writer_size(const cl_chunk_writer_t *w)
{
    return w->size;
}

void cl_chunk_writer_abort(cl_chunk_writer_t *w)
{
    if (!w)
        return;
    close(w->fd);
    unlinkat(w->cs->tmp_fd, w->tmp, 0);
    if (w->md5_on)
        wh_md5_free(&w->md5);
    free(w);
}

wh_status_t cl_chunk_writer_commit(cl_chunk_writer_t *w, uint64_t *crc, uint8_t md5[16])
{
    uint8_t foot[CL_CHUNK_FOOTER] = {'W', 'H', 'C', '1'};
    for (int i = 0; i < 8; i++)
        foot[8 + i] = (uint8_t)(w->crc >> (8 * i));
    char rel[CL_CHUNK_ID_LEN + 4], sub[3] = {w->id[0], w->id[1], 0};
    rel_path(w->id, rel);
    if (w->broken || wh_write_all(w->fd, foot, sizeof foot) != 0 || fsync(w->fd) != 0)
        goto err;
    int sfd = open_dir_at(w->cs->chunks_fd, sub);
    if (sfd < 0)
        goto err;
    if (renameat(w->cs->tmp_fd, w->tmp, w->cs->chunks_fd, rel) != 0 || fsync(sfd) != 0) {
        close(sfd);
        goto err;
    }
    close(sfd);
    *crc = w->crc;
    if (w->md5_on) {
        wh_md5_final(&w->md5, md5);
        w->md5_on = false;
    } else if (md5) {
        memset(md5, 0, 16);
    }
    close(w->fd);
    free(w);
    return WH_OK;
err:
    wh_error(MOD, "committing a chunk failed id=%s err='%s'", w->id, strerror(errno));
    cl_chunk_writer_abort(w);
    return WH_ERR_IO;
}

wh_status_t cl_chunk_open(cl_chunks_t *cs, const char *id, int *fd, uint64_t *size,
                          uint64_t *crc)
{
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    char rel[CL_CHUNK_ID_LEN + 4];
    rel_path(id, rel);
    int f = openat(cs->chunks_fd, rel, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return errno == ENOENT ? WH_ERR_NOT_FOUND : WH_ERR_IO;
    struct stat sb;
    uint8_t foot[CL_CHUNK_FOOTER];
    if (fstat(f, &sb) != 0 || sb.st_size < CL_CHUNK_FOOTER ||
        pread(f, foot, sizeof foot, sb.st_size - CL_CHUNK_FOOTER) != CL_CHUNK_FOOTER ||
        memcmp(foot, "WHC1", 4) != 0) {
        wh_error(MOD, "chunk file has no valid footer id=%s", id);
        close(f);
        return WH_ERR_CHECKSUM;
    }
    uint64_t c = 0;
    for (int i = 7; i >= 0; i--)
        c = c << 8 | foot[8 + i];
    *fd = f;
    *size = (uint64_t)sb.st_size - CL_CHUNK_FOOTER;
    *crc = c;
    return WH_OK;
}

wh_status_t cl_chunk_verify(int fd, uint64_t size, uint64_t crc)
{
    enum { BUF = 1 << 20 };
    uint8_t *b = malloc(BUF);
    if (!b)
        return WH_ERR_NOMEM;
    uint64_t c = 0, off = 0;
    wh_status_t st = WH_OK;
    while (off < size) {
        ssize_t k = pread(fd, b, (size_t)WH_MIN((uint64_t)BUF, size - off), (off_t)off);
        if (k <= 0) {
            st = WH_ERR_IO;
            break;
        }
        c = wh_crc64nvme(c, b, (size_t)k);
        off += (uint64_t)k;
    }
    free(b);
    if (st == WH_OK && c != crc)
        st = WH_ERR_CHECKSUM;
    return st;
}

wh_status_t cl_chunk_delete(cl_chunks_t *cs, const char *id)
{
    if (!cl_chunk_id_valid(id, strlen(id)))
        return WH_ERR_INVALID;
    char rel[CL_CHUNK_ID_LEN + 4];
    rel_path(id, rel);
    if (unlinkat(cs->chunks_fd, rel, 0) != 0 && errno != ENOENT)
        return WH_ERR_IO;
    return WH_OK;
}

uint64_t cl_chunks_count(cl_chunks_t *cs)
{
    uint64_t n = 0;
    int fd = dup(cs->chunks_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    rewinddir(d);
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
