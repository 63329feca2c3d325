/* The storage engine: data directory, validation, PUT writers, GET/HEAD/DELETE/COPY, listing.
 * Layout of DIR: meta.db (SQLite WAL), objects/<2 hex>/<32 hex id>, tmp/<32 hex id>, lock. */
#include "store/store.h"

#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "store/store_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE_FILE_MODE 0640
#define STORE_DIR_MODE 0750
/* Start writeback every this many bytes, so the fsync at commit has little left to do. */
#define STORE_WRITEBACK_CHUNK (8ULL << 20)
/* A writer moves its MD5 to a helper thread once this much was written (small PUTs stay
 * inline: a thread costs more than hashing a few MiB). */
#define STORE_MD5_THREAD_MIN (4ULL << 20)
#define STORE_MD5_CHUNK (1U << 20)

/* ---- validation ---- */

bool store_bucket_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t n = strlen(name);
    if (n < 3 || n > 63)
        return false;
    bool all_digits_dots = true;
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
        if (c == '.' && name[i + 1] == '.')
            return false;
        if (c == '.')
            dots++;
        else if (!(c >= '0' && c <= '9'))
            all_digits_dots = false;
    }
    /* Formatted like an IPv4 address (the start/end and ".." rules already hold). */
    if (all_digits_dots && dots == 3) {
        int run = 0;
        bool ip = true;
        for (size_t i = 0; i <= n; i++) {
            if (i == n || name[i] == '.') {
                if (run < 1 || run > 3)
                    ip = false;
                run = 0;
            } else {
                run++;
            }
        }
        if (ip)
            return false;
    }
    /* Prefixes and suffixes AWS reserves. */
    static const char *const bad_prefix[] = {"xn--", "sthree-", "amzn-s3-demo-"};
    static const char *const bad_suffix[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3",
                                             "--table-s3"};
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad_prefix); i++)
        if (strncmp(name, bad_prefix[i], strlen(bad_prefix[i])) == 0)
            return false;
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad_suffix); i++) {
        size_t sl = strlen(bad_suffix[i]);
        if (n >= sl && strcmp(name + n - sl, bad_suffix[i]) == 0)
            return false;
    }
    return true;
}

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF, and no NUL. */
bool store_key_valid(const char *key, size_t len)
{
    if (!key || len == 0 || len > STORE_MAX_KEY)
        return false;
    const unsigned char *s = (const unsigned char *)key;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            else if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            return false; /* continuation byte, C0/C1 overlong lead, or F5..FF */
        }
        if (len - i - 1 < need)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        i += need + 1;
    }
    return true;
}

/* ---- files ---- */

wh_status_t store_random_id(char out[META_ID_LEN + 1])
{
    uint8_t raw[META_ID_LEN / 2];
    if (wh_random_bytes(raw, sizeof raw) != 0) {
        wh_error("store", "cannot get random bytes for a file id");
        return WH_ERR_INTERNAL;
    }
    wh_hex_encode(raw, sizeof raw, out);
    return WH_OK;
}

static bool store_id_valid(const char *s)
{
    if (strlen(s) != META_ID_LEN)
        return false;
    for (size_t i = 0; i < META_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

void store_file_unlink(store_t *st, const char *id)
{
    if (!id || !id[0])
        return;
    char rel[META_ID_LEN + 4];
    store_file_relpath(id, rel);
    if (unlinkat(st->obj_fd, rel, 0) < 0 && errno != ENOENT)
        wh_error("store", "cannot remove replaced file=%s: %m; it will be removed at next start",
                 rel);
}

static wh_status_t store_fsync_dir(int parent_fd, const char *name)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        wh_error("store", "cannot open directory %s for fsync: %m", name);
        return wh_status_from_errno(errno);
    }
    wh_status_t st = WH_OK;
    if (fsync(fd) < 0) {
        wh_error("store", "fsync of directory %s failed: %m", name);
        st = WH_ERR_IO;
    }
    close(fd);
    return st;
}

wh_status_t store_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off,
                             uint64_t len)
{
    loff_t io = (loff_t)in_off, oo = (loff_t)out_off;
    while (len > 0) {
        size_t chunk = (size_t)WH_MIN(len, (uint64_t)1 << 30);
        ssize_t r = copy_file_range(in_fd, &io, out_fd, &oo, chunk, 0);
        if (r > 0) {
            len -= (uint64_t)r;
            continue;
        }
        if (r == 0) {
            wh_error("store", "copy_file_range hit end of file with %llu bytes left; the source "
                     "file is shorter than its metadata says", (unsigned long long)len);
            return WH_ERR_IO;
        }
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) {
            wh_error("store", "copy_file_range failed: %m");
            return wh_status_from_errno(errno);
        }
        /* The file system cannot copy in the kernel: copy through a bounded buffer. */
        wh_debug("store", "copy_file_range unsupported here (%m), copying in user space");
        size_t bsz = 1 << 20;
        char *buf = malloc(bsz);
        if (!buf)
            return WH_ERR_NOMEM;
        while (len > 0) {
            size_t n = (size_t)WH_MIN(len, (uint64_t)bsz);
            int e = wh_pread_all(in_fd, buf, n, (uint64_t)io);
            if (e == 0)
                e = wh_pwrite_all(out_fd, buf, n, (uint64_t)oo);
            if (e < 0) {
                errno = -e;
                wh_error("store", "copying file data failed: %m");
                free(buf);
                return wh_status_from_errno(-e);
            }
            io += (loff_t)n;
            oo += (loff_t)n;
            len -= n;
        }
        free(buf);
    }
    return WH_OK;
}

/* Removes everything in DIR/tmp and every object/part file no row refers to. */
static wh_status_t store_recover(store_t *st)
{
    unsigned tmp_removed = 0, orphans = 0;
    int fd = dup(st->tmp_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        wh_error("store", "cannot read %s/tmp: %m", st->dir);
        if (fd >= 0)
            close(fd);
        return WH_ERR_IO;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(st->tmp_fd, de->d_name, 0) == 0)
            tmp_removed++;
        else
            wh_warn("store", "cannot remove leftover temp file=%s/tmp/%s: %m", st->dir,
                    de->d_name);
    }
    closedir(d);

    for (int b = 0; b < 256; b++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", b);
        int sfd = openat(st->obj_fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0) {
            wh_error("store", "cannot open %s/objects/%s: %m", st->dir, sub);
            return WH_ERR_IO;
        }
        d = fdopendir(sfd);
        if (!d) {
            close(sfd);
            return WH_ERR_IO;
        }
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            bool keep = false;
            if (store_id_valid(de->d_name) && strncmp(de->d_name, sub, 2) == 0) {
                wh_status_t s = meta_file_referenced(st->meta, de->d_name);
                if (s != WH_OK && s != WH_ERR_NOT_FOUND) {
                    closedir(d);
                    return s;
                }
                keep = s == WH_OK;
            }
            if (keep)
                continue;
            if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                orphans++;
            else
                wh_warn("store", "cannot remove orphan file=%s/objects/%s/%s: %m", st->dir, sub,
                        de->d_name);
        }
        closedir(d);
    }
    if (tmp_removed || orphans)
        wh_info("store", "recovery removed temp_files=%u orphan_files=%u dir=%s", tmp_removed,
                orphans, st->dir);
    return WH_OK;
}

/* ---- open/close ---- */

static int store_open_dir(int parent, const char *name, const char *dir)
{
    if (mkdirat(parent, name, STORE_DIR_MODE) < 0 && errno != EEXIST) {
        wh_error("store", "cannot create %s/%s: %m", dir, name);
        return -1;
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        wh_error("store", "cannot open %s/%s: %m", dir, name);
    return fd;
}

wh_status_t store_open(const char *dir, store_t **out)
{
    wh_status_t st = WH_ERR_IO;
    store_t *s = calloc(1, sizeof *s);
    if (!s)
        return WH_ERR_NOMEM;
    s->lock_fd = s->obj_fd = s->tmp_fd = -1;
    int dfd = -1;
    if (!(s->dir = strdup(dir))) {
        st = WH_ERR_NOMEM;
        goto err;
    }
    int e = wh_mkdir_p(dir, STORE_DIR_MODE);
    if (e < 0) {
        errno = -e;
        wh_error("store", "cannot create data directory %s: %m", dir);
        st = wh_status_from_errno(-e);
        goto err;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        wh_error("store", "cannot open data directory %s: %m", dir);
        goto err;
    }
    s->lock_fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, STORE_FILE_MODE);
    if (s->lock_fd < 0) {
        wh_error("store", "cannot create %s/lock: %m", dir);
        goto err;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            wh_error("store", "data directory %s is in use by another process; stop it or use "
                     "another --data", dir);
            st = WH_ERR_BUSY;
        } else {
            wh_error("store", "cannot lock %s/lock: %m", dir);
        }
        goto err;
    }
    if ((s->obj_fd = store_open_dir(dfd, "objects", dir)) < 0 ||
        (s->tmp_fd = store_open_dir(dfd, "tmp", dir)) < 0)
        goto err;
    for (int b = 0; b < 256; b++) {
        char sub[3];
        snprintf(sub, sizeof sub, "%02x", b);
        if (mkdirat(s->obj_fd, sub, STORE_DIR_MODE) < 0 && errno != EEXIST) {
            wh_error("store", "cannot create %s/objects/%s: %m", dir, sub);
            goto err;
        }
    }
    /* Make the layout itself durable before any object is committed into it. */
    if (fsync(s->obj_fd) < 0 || fsync(s->tmp_fd) < 0 || fsync(dfd) < 0) {
        wh_error("store", "fsync of data directory %s failed: %m", dir);
        goto err;
    }
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/meta.db", dir) >= sizeof path) {
        wh_error("store", "data directory path is too long: %s", dir);
        st = WH_ERR_INVALID;
        goto err;
    }
    st = meta_open(path, &s->meta);
    if (st != WH_OK)
        goto err;
    st = store_recover(s);
    if (st != WH_OK)
        goto err;
    close(dfd);
    *out = s;
    return WH_OK;

err:
    if (dfd >= 0)
        close(dfd);
    store_close(s);
    return st;
}

void store_close(store_t *st)
{
    if (!st)
        return;
    meta_close(st->meta);
    if (st->tmp_fd >= 0)
        close(st->tmp_fd);
    if (st->obj_fd >= 0)
        close(st->obj_fd);
    if (st->lock_fd >= 0)
        close(st->lock_fd); /* releases the flock */
    free(st->dir);
    free(st);
}

/* ---- buckets ---- */

wh_status_t store_bucket_create(store_t *st, const char *bucket)
{
    if (!store_bucket_name_valid(bucket))
        return WH_ERR_INVALID;
    return meta_bucket_create(st->meta, bucket, time(NULL));
}

wh_status_t store_bucket_delete(store_t *st, const char *bucket)
{
    return meta_bucket_delete(st->meta, bucket);
}

wh_status_t store_bucket_exists(store_t *st, const char *bucket)
{
    return meta_bucket_exists(st->meta, bucket);
}

wh_status_t store_bucket_list(store_t *st, store_bucket_info_t **out, size_t *n)
{
    return meta_bucket_list(st->meta, out, n);
}

void store_obj_meta_free(store_obj_meta_t *m)
{
    if (!m)
        return;
    free(m->user_meta_json);
    m->user_meta_json = NULL;
}

/* ---- writer ---- */

wh_status_t store_writer_open(store_t *st, store_writer_t **out)
{
    store_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return WH_ERR_NOMEM;
    w->st = st;
    w->fd = -1;
    wh_status_t s = store_random_id(w->id);
    if (s != WH_OK)
        goto err;
    if (wh_md5_init(&w->md5) != 0) {
        wh_error("store", "cannot initialise md5");
        s = WH_ERR_INTERNAL;
        goto err;
    }
    w->fd = openat(st->tmp_fd, w->id, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, STORE_FILE_MODE);
    if (w->fd < 0) {
        wh_error("store", "cannot create temp file %s/tmp/%s: %m", st->dir, w->id);
        s = wh_status_from_errno(errno);
        goto err_md5;
    }
    *out = w;
    return WH_OK;

err_md5:
    wh_md5_free(&w->md5);
err:
    free(w);
    return s;
}

static void *store_md5_main(void *arg)
{
    store_writer_t *w = arg;
    char *buf = malloc(STORE_MD5_CHUNK);
    pthread_mutex_lock(&w->md5_lock);
    if (!buf)
        w->md5_err = ENOMEM;
    while (!w->md5_err) {
        while (w->md5_hashed == w->md5_avail && !w->md5_stop)
            pthread_cond_wait(&w->md5_cond, &w->md5_lock);
        if (w->md5_stop == 2 || w->md5_hashed == w->md5_avail)
            break;
        uint64_t from = w->md5_hashed, to = w->md5_avail;
        pthread_mutex_unlock(&w->md5_lock);
        int e = 0;
        while (from < to && !e) {
            size_t n = (size_t)WH_MIN(to - from, (uint64_t)STORE_MD5_CHUNK);
            e = wh_pread_all(w->fd, buf, n, from);
            if (!e) {
                wh_md5_update(&w->md5, buf, n);
                from += n;
            }
        }
        pthread_mutex_lock(&w->md5_lock);
        if (e)
            w->md5_err = -e;
        w->md5_hashed = from;
    }
    pthread_mutex_unlock(&w->md5_lock);
    free(buf);
    return NULL;
}

static void store_md5_start(store_writer_t *w)
{
    w->md5_avail = w->md5_hashed = w->size;
    w->md5_stop = 0;
    w->md5_err = 0;
    pthread_mutex_init(&w->md5_lock, NULL);
    pthread_cond_init(&w->md5_cond, NULL);
    if (pthread_create(&w->md5_thread, NULL, store_md5_main, w) != 0) {
        /* Not fatal: keep hashing inline. */
        wh_debug("store", "cannot start md5 helper thread, hashing inline");
        pthread_mutex_destroy(&w->md5_lock);
        pthread_cond_destroy(&w->md5_cond);
        return;
    }
    w->md5_threaded = true;
}

/* Stops the helper: how=1 waits until everything written is hashed, how=2 abandons it. */
static void store_md5_join(store_writer_t *w, int how)
{
    if (!w->md5_threaded)
        return;
    pthread_mutex_lock(&w->md5_lock);
    w->md5_stop = how;
    pthread_cond_signal(&w->md5_cond);
    pthread_mutex_unlock(&w->md5_lock);
    pthread_join(w->md5_thread, NULL);
    pthread_mutex_destroy(&w->md5_lock);
    pthread_cond_destroy(&w->md5_cond);
    w->md5_threaded = false;
    if (how == 1 && (w->md5_err || w->md5_hashed != w->size)) {
        errno = w->md5_err ? w->md5_err : EIO;
        wh_error("store", "re-reading temp file %s/tmp/%s for md5 failed: %m", w->st->dir, w->id);
        w->broken = true;
    }
}

wh_status_t store_writer_write(store_writer_t *w, const void *p, size_t n)
{
    if (w->broken)
        return WH_ERR_IO;
    if (w->md5_done) {
        wh_error("store", "write after the md5 was finalised; finish writing before asking for "
                 "the digest");
        w->broken = true;
        return WH_ERR_INVALID;
    }
    if (n == 0)
        return WH_OK;
    int e = wh_write_all(w->fd, p, n);
    if (e < 0) {
        errno = -e;
        wh_error("store", "write to temp file %s/tmp/%s failed: %m", w->st->dir, w->id);
        w->broken = true;
        return wh_status_from_errno(-e);
    }
    w->crc64 = wh_crc64nvme(w->crc64, p, n);
    w->crc32c = wh_crc32c(w->crc32c, p, n);
    w->size += n;
    if (w->md5_threaded) {
        pthread_mutex_lock(&w->md5_lock);
        w->md5_avail = w->size;
        pthread_cond_signal(&w->md5_cond);
        pthread_mutex_unlock(&w->md5_lock);
    } else {
        wh_md5_update(&w->md5, p, n);
        if (w->size >= STORE_MD5_THREAD_MIN)
            store_md5_start(w);
    }
    if (w->size - w->synced >= STORE_WRITEBACK_CHUNK) {
        /* Asynchronous: only starts writeback, so a large PUT does not end in one long fsync. */
        sync_file_range(w->fd, (off64_t)w->synced, (off64_t)(w->size - w->synced),
                        SYNC_FILE_RANGE_WRITE);
        w->synced = w->size;
    }
    return WH_OK;
}

uint64_t store_writer_size(const store_writer_t *w)
{
    return w->size;
}

void store_writer_md5_hex(store_writer_t *w, char out[33])
{
    if (!w->md5_done) {
        store_md5_join(w, 1);
        uint8_t d[WH_MD5_LEN];
        wh_md5_final(&w->md5, d);
        wh_hex_encode(d, sizeof d, w->md5_hex);
        w->md5_done = true;
    }
    memcpy(out, w->md5_hex, 33);
}

uint64_t store_writer_crc64nvme(const store_writer_t *w)
{
    return w->crc64;
}

uint32_t store_writer_crc32c(const store_writer_t *w)
{
    return w->crc32c;
}

wh_status_t store_writer_publish(store_writer_t *w)
{
    store_t *st = w->st;
    if (fsync(w->fd) < 0) {
        wh_error("store", "fsync of temp file %s/tmp/%s failed: %m", st->dir, w->id);
        return WH_ERR_IO;
    }
    char rel[META_ID_LEN + 4];
    store_file_relpath(w->id, rel);
    if (renameat(st->tmp_fd, w->id, st->obj_fd, rel) < 0) {
        wh_error("store", "cannot move temp file %s into %s/objects/%s: %m", w->id, st->dir, rel);
        return wh_status_from_errno(errno);
    }
    w->published = true;
    char sub[3] = {w->id[0], w->id[1], '\0'};
    return store_fsync_dir(st->obj_fd, sub);
}

void store_writer_free(store_writer_t *w)
{
    if (!w)
        return;
    store_md5_join(w, 2);
    if (w->fd >= 0)
        close(w->fd);
    if (!w->md5_done)
        wh_md5_free(&w->md5);
    free(w);
}

void store_writer_abort(store_writer_t *w)
{
    if (!w)
        return;
    if (w->published) {
        store_file_unlink(w->st, w->id);
    } else if (unlinkat(w->st->tmp_fd, w->id, 0) < 0 && errno != ENOENT) {
        wh_warn("store", "cannot remove temp file %s/tmp/%s: %m", w->st->dir, w->id);
    }
    store_writer_free(w);
}

wh_status_t store_writer_commit(store_writer_t *w, const char *bucket, const char *key,
                                store_obj_meta_t *meta)
{
    wh_status_t s;
    size_t klen = strlen(key);
    if (!store_key_valid(key, klen)) {
        wh_warn("store", "rejecting invalid object key (%zu bytes): keys are 1..%d bytes of "
                "valid UTF-8 without NUL", klen, STORE_MAX_KEY);
        s = WH_ERR_INVALID;
        goto err;
    }
    char md5[33];
    store_writer_md5_hex(w, md5); /* may mark the writer broken */
    if (w->broken) {
        s = WH_ERR_IO;
        goto err;
    }
    if (meta->size && meta->size != w->size) {
        wh_warn("store", "object size mismatch bucket=%s: expected %llu bytes, received %llu",
                bucket, (unsigned long long)meta->size, (unsigned long long)w->size);
        s = WH_ERR_INVALID;
        goto err;
    }
    meta->size = w->size;
    if (!meta->etag[0])
        memcpy(meta->etag, md5, sizeof md5);
    if (!meta->crc64nvme[0])
        wh_crc64nvme_b64(w->crc64, meta->crc64nvme);
    meta->mtime = time(NULL);
    meta->parts = 0;

    s = store_writer_publish(w);
    if (s != WH_OK)
        goto err;
    char old[META_ID_LEN + 1];
    s = meta_object_put(w->st->meta, bucket, key, klen, meta, w->id, old);
    if (s != WH_OK)
        goto err;
    /* Only now may the old version go: a reader that opened it keeps its fd. */
    store_file_unlink(w->st, old);
    store_writer_free(w);
    return WH_OK;

err:
    store_writer_abort(w);
    return s;
}

/* ---- objects ---- */

wh_status_t store_object_open(store_t *st, const char *bucket, const char *key,
                              store_obj_meta_t *meta, int *fd)
{
    return meta_object_get(st->meta, bucket, key, strlen(key), meta, NULL, st->obj_fd, fd);
}

wh_status_t store_object_delete(store_t *st, const char *bucket, const char *key)
{
    char old[META_ID_LEN + 1];
    wh_status_t s = meta_object_delete(st->meta, bucket, key, strlen(key), old);
    if (s == WH_OK)
        store_file_unlink(st, old);
    return s;
}

wh_status_t store_object_copy(store_t *st, const char *sbucket, const char *skey,
                              const char *dbucket, const char *dkey,
                              const store_obj_meta_t *replace_meta, store_obj_meta_t *out_meta)
{
    store_obj_meta_t src;
    int sfd = -1;
    store_writer_t *w = NULL;
    size_t dklen = strlen(dkey);
    if (!store_key_valid(dkey, dklen)) {
        wh_warn("store", "rejecting invalid destination key (%zu bytes)", dklen);
        return WH_ERR_INVALID;
    }
    wh_status_t s = store_object_open(st, sbucket, skey, &src, &sfd);
    if (s != WH_OK)
        return s;
    s = store_writer_open(st, &w);
    if (s != WH_OK)
        goto out;
    s = store_copy_range(sfd, 0, w->fd, 0, src.size);
    if (s != WH_OK)
        goto out;
    w->size = src.size;

    store_obj_meta_t nm = src;
    nm.user_meta_json = src.user_meta_json;
    if (replace_meta) {
        snprintf(nm.content_type, sizeof nm.content_type, "%s", replace_meta->content_type);
        nm.user_meta_json = replace_meta->user_meta_json;
    }
    nm.mtime = time(NULL);
    s = store_writer_publish(w);
    if (s != WH_OK)
        goto out;
    char old[META_ID_LEN + 1];
    s = meta_object_put(st->meta, dbucket, dkey, dklen, &nm, w->id, old);
    if (s != WH_OK)
        goto out;
    store_file_unlink(st, old);
    if (out_meta) {
        *out_meta = nm;
        out_meta->user_meta_json = nm.user_meta_json ? strdup(nm.user_meta_json) : NULL;
    }
    store_writer_free(w);
    w = NULL;
out:
    store_writer_abort(w);
    close(sfd);
    store_obj_meta_free(&src);
    return s;
}

/* ---- listing ---- */

wh_status_t store_object_list(store_t *st, const char *bucket, const store_list_params_t *p,
                              store_list_result_t *out)
{
    return meta_object_list(st->meta, bucket, p, out);
}

void store_list_result_free(store_list_result_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_entries; i++)
        free(r->entries[i].key);
    free(r->entries);
    for (size_t i = 0; i < r->n_prefixes; i++)
        free(r->prefixes[i]);
    free(r->prefixes);
    free(r->next_marker);
    memset(r, 0, sizeof *r);
}
