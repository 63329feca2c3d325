/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the store unit tests: those of the metadata table's tests (meta/helpers.h:
 * a temporary data directory, the backend under test), the store over that backend, and small
 * PUT/GET helpers. */
#ifndef WH_TEST_STORE_HELPERS_H
#define WH_TEST_STORE_HELPERS_H

#include "check.h"
#include "meta/helpers.h"
#include "meta/meta.h"
#include "store/store.h"

static inline wh_status_t th_store_open(const char *dir, store_t **out)
{
    store_config_t cfg = {.data_dir = dir, .meta_url = th_meta_url(dir)};
    return store_open(&cfg, out);
}

/* PUT of n bytes; returns the status of the commit, fills *meta (etag, size...). */
static inline wh_status_t th_put(store_t *st, const char *bucket, const char *key, const void *p,
                                 size_t n, data_obj_meta_t *meta)
{
    store_writer_t *w = NULL;
    wh_status_t s = store_writer_open(st, &w);
    if (s != WH_OK)
        return s;
    /* Feed in uneven chunks, as a network front would. */
    size_t off = 0, chunk = 7;
    while (off < n) {
        size_t k = n - off < chunk ? n - off : chunk;
        s = store_writer_write(w, (const char *)p + off, k);
        if (s != WH_OK) {
            store_writer_abort(w);
            return s;
        }
        off += k;
        chunk = chunk * 3 + 1;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.content_type, sizeof m.content_type, "application/octet-stream");
    s = store_writer_commit(w, &(store_commit_args_t){.bucket = bucket, .key = key}, &m);
    if (meta)
        *meta = m;
    return s;
}

/* Reads an fd fully from offset 0 into a malloc'd buffer. */
static inline char *th_read_fd(int fd, size_t *n)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return NULL;
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t off = 0;
    while (off < (size_t)sb.st_size) {
        ssize_t r = pread(fd, buf + off, (size_t)sb.st_size - off, (off_t)off);
        if (r <= 0)
            break;
        off += (size_t)r;
    }
    buf[off] = '\0';
    *n = off;
    return buf;
}

static inline char *th_get_reader(store_t *st, const char *bucket, const char *key, size_t *n,
                                  wh_status_t *status);

/* GET: the object's bytes (malloc'd) or NULL with *status set. By its fd where it has one;
 * an object composed of its multipart upload's parts (no single fd) through the reader. */
static inline char *th_get(store_t *st, const char *bucket, const char *key, size_t *n,
                           wh_status_t *status)
{
    data_obj_meta_t m;
    int fd = -1;
    *status = store_object_open(st, &(store_read_args_t){.bucket = bucket, .key = key}, &m, &fd);
    if (*status == WH_ERR_UNSUPPORTED)
        return th_get_reader(st, bucket, key, n, status);
    if (*status != WH_OK)
        return NULL;
    char *b = th_read_fd(fd, n);
    close(fd);
    data_obj_meta_free(&m);
    return b;
}

/* GET through the reader API (any data table, fd or not). */
static inline char *th_get_reader(store_t *st, const char *bucket, const char *key, size_t *n,
                                  wh_status_t *status)
{
    data_obj_meta_t m;
    data_reader_t *r = NULL;
    *status = store_object_reader(st, &(store_read_args_t){.bucket = bucket, .key = key}, &m, &r);
    if (*status != WH_OK)
        return NULL;
    *n = (size_t)store_reader_size(r);
    char *b = malloc(*n + 1);
    *status = store_reader_pread(r, b, *n, 0);
    store_reader_close(r);
    data_obj_meta_free(&m);
    if (*status != WH_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* Number of regular files in DIR/sub and its subdirectories (one level). */
static inline int th_count_files(const char *dir, const char *sub)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p2[1024];
        snprintf(p2, sizeof p2, "%s/%s", path, de->d_name);
        struct stat sb;
        if (stat(p2, &sb) != 0)
            continue;
        if (S_ISREG(sb.st_mode)) {
            n++;
        } else if (S_ISDIR(sb.st_mode)) {
            DIR *d2 = opendir(p2);
            struct dirent *e2;
            while (d2 && (e2 = readdir(d2)))
                if (e2->d_name[0] != '.')
                    n++;
            if (d2)
                closedir(d2);
        }
    }
    closedir(d);
    return n;
}

#endif
