/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of multipart completion by composition (src/store/store/mpu.c, the local data table's
 * compose and multi-extent readers in src/store/data/data_local.c): the object is its parts' files,
 * read across their boundaries, released with its last version, kept by recovery. */
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "data/data.h"
#include "helpers.h"

#include <fcntl.h>

#define MiB (1024 * 1024)

static char *pattern(size_t n, unsigned seed)
{
    char *b = malloc(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (char)(x >> 24);
    }
    return b;
}

static wh_status_t put_part(store_t *st, const char *key, const char *uid, uint32_t num,
                            const char *p, size_t n, char etag[33])
{
    store_writer_t *w = NULL;
    wh_status_t s = store_writer_open(st, &w);
    if (s != WH_OK)
        return s;
    if (n && (s = store_writer_write(w, p, n)) != WH_OK) {
        store_writer_abort(w);
        return s;
    }
    return store_mpu_part_commit(st, "cmp", key, uid, num, w, etag);
}

/* Uploads sizes[0..n) of `whole` as parts 1..n of key and completes them. */
static wh_status_t upload(store_t *st, const char *key, const char *whole, const size_t *sizes,
                          size_t n, data_obj_meta_t *om)
{
    char uid[65], et[8][33];
    store_complete_part_t cp[8];
    wh_status_t s = store_mpu_create(st, "cmp", key, NULL, uid);
    size_t off = 0;
    for (size_t i = 0; s == WH_OK && i < n; i++) {
        s = put_part(st, key, uid, (uint32_t)(i + 1), whole + off, sizes[i], et[i]);
        cp[i].number = (uint32_t)(i + 1);
        cp[i].etag = et[i];
        off += sizes[i];
    }
    int bad = 0;
    return s == WH_OK ? store_mpu_complete(
                            st,
                            &(store_mpu_complete_args_t){
                                .bucket = "cmp", .key = key, .upload_id = uid, .parts = cp, .n = n},
                            om, &bad)
                      : s;
}

static store_t *open_store(char **dir)
{
    *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(*dir, &st) == WH_OK);
    if (st)
        CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "cmp"}) == WH_OK);
    return st;
}

static const size_t SZ3[3] = {5 * MiB, 5 * MiB + 3, 1000};
#define TOTAL3 (10 * MiB + 1003)

static void test_read_across_extents(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *whole = pattern(TOTAL3, 1);
    data_obj_meta_t om;
    CHECK(upload(st, "k", whole, SZ3, 3, &om) == WH_OK);
    char want[13];
    wh_crc64nvme_b64(wh_crc64nvme(0, whole, TOTAL3), want);
    CHECK_STR(om.crc64nvme, want);
    CHECK_EQ_U64(om.size, TOTAL3);
    data_obj_meta_free(&om);
    /* Nothing was copied: the three part files are the object's. */
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3);

    /* No single fd; a reader reads it whole and across each boundary. */
    int fd = -1;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "cmp", .key = "k"}, &om, &fd) ==
          WH_ERR_UNSUPPORTED);
    CHECK(fd == -1);
    data_reader_t *r = NULL;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "cmp", .key = "k"}, &om, &r) ==
          WH_OK);
    data_obj_meta_free(&om);
    if (!r)
        goto out;
    CHECK(store_reader_fd(r) == -1);
    char *buf = malloc(TOTAL3);
    CHECK(store_reader_pread(r, buf, TOTAL3, 0) == WH_OK && memcmp(buf, whole, TOTAL3) == 0);
    uint64_t cuts[] = {0, 1, 5 * MiB - 7, 5 * MiB, 10 * MiB + 3 - 1, 10 * MiB + 3, TOTAL3 - 5};
    for (size_t i = 0; i < WH_ARRAY_SIZE(cuts); i++) {
        size_t n = (size_t)WH_MIN((uint64_t)(5 * MiB + 20), TOTAL3 - cuts[i]);
        memset(buf, 0, n);
        CHECK(store_reader_pread(r, buf, n, cuts[i]) == WH_OK &&
              memcmp(buf, whole + cuts[i], n) == 0);
    }
    CHECK(store_reader_pread(r, buf, 2, TOTAL3 - 1) == WH_ERR_RANGE);

    /* The extents: where each offset lies, and what follows contiguously in that file. */
    struct {
        uint64_t off, file_off, len;
    } ex[] = {
        {0, 0, 5 * MiB},         {5 * MiB - 1, 5 * MiB - 1, 1}, {5 * MiB, 0, 5 * MiB + 3},
        {10 * MiB + 3, 0, 1000}, {TOTAL3 - 1, 999, 1},
    };
    int fds[WH_ARRAY_SIZE(ex)];
    for (size_t i = 0; i < WH_ARRAY_SIZE(ex); i++) {
        uint64_t fo = 0, len = 0;
        fds[i] = -1;
        CHECK(store_reader_extent(r, ex[i].off, &fds[i], &fo, &len) == WH_OK);
        CHECK_EQ_U64(fo, ex[i].file_off);
        CHECK_EQ_U64(len, ex[i].len);
        char c = 0;
        CHECK(pread(fds[i], &c, 1, (off_t)fo) == 1 && c == whole[ex[i].off]);
    }
    CHECK(fds[0] == fds[1] && fds[1] != fds[2] && fds[2] != fds[3] && fds[3] == fds[4]);
    int f;
    uint64_t fo, len;
    CHECK(store_reader_extent(r, TOTAL3, &f, &fo, &len) == WH_ERR_RANGE);

    /* Deleted while open: the reader still reads every extent; then the files are gone. */
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "cmp", .key = "k"}, NULL) ==
          WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    memset(buf, 0, TOTAL3);
    CHECK(store_reader_pread(r, buf, TOTAL3, 0) == WH_OK && memcmp(buf, whole, TOTAL3) == 0);
    store_reader_close(r);
    free(buf);
out:
    free(whole);
    store_close(st);
    th_rmdir(dir);
}

static void test_one_part_takes_the_file(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *whole = pattern(3000, 2);
    size_t sz[1] = {3000};
    data_obj_meta_t om;
    CHECK(upload(st, "one", whole, sz, 1, &om) == WH_OK);
    data_obj_meta_free(&om);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);
    /* One file: an fd as for any PUT. */
    int fd = -1;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "cmp", .key = "one"}, &om, &fd) ==
          WH_OK);
    data_obj_meta_free(&om);
    size_t n = 0;
    char *got = fd >= 0 ? th_read_fd(fd, &n) : NULL;
    CHECK(got && n == 3000 && memcmp(got, whole, n) == 0);
    free(got);
    if (fd >= 0)
        close(fd);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "cmp", .key = "one"}, NULL) ==
          WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    free(whole);
    store_close(st);
    th_rmdir(dir);
}

/* An empty last part is no extent, and its file goes with the upload. */
static void test_empty_last_part(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *whole = pattern(5 * MiB, 3);
    size_t sz[2] = {5 * MiB, 0};
    data_obj_meta_t om;
    CHECK(upload(st, "e", whole, sz, 2, &om) == WH_OK);
    CHECK_EQ_U64(om.size, 5 * MiB);
    data_obj_meta_free(&om);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);
    size_t n = 0;
    wh_status_t s;
    char *got = th_get(st, "cmp", "e", &n, &s);
    CHECK(s == WH_OK && n == 5 * MiB && memcmp(got, whole, n) == 0);
    free(got);
    free(whole);
    store_close(st);
    th_rmdir(dir);
}

static void test_copy_and_overwrite(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *whole = pattern(TOTAL3, 4);
    data_obj_meta_t om;
    CHECK(upload(st, "k", whole, SZ3, 3, &om) == WH_OK);
    data_obj_meta_free(&om);
    /* A copy is one new file with the same bytes, etag and checksum. */
    data_obj_meta_t cm, sm;
    CHECK(store_object_copy(
              st,
              &(store_copy_args_t){
                  .src_bucket = "cmp", .src_key = "k", .dst_bucket = "cmp", .dst_key = "copy"},
              &cm) == WH_OK);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "cmp", .key = "k"}, &sm, NULL) ==
          WH_OK);
    CHECK_STR(cm.etag, sm.etag);
    CHECK_STR(cm.crc64nvme, sm.crc64nvme);
    data_obj_meta_free(&cm);
    data_obj_meta_free(&sm);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 4);
    size_t n = 0;
    wh_status_t s;
    int fd = -1;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "cmp", .key = "copy"}, &cm, &fd) ==
          WH_OK); /* one file: an fd */
    data_obj_meta_free(&cm);
    char *got = fd >= 0 ? th_read_fd(fd, &n) : NULL;
    CHECK(got && n == TOTAL3 && memcmp(got, whole, n) == 0);
    free(got);
    if (fd >= 0)
        close(fd);
    /* An overwrite releases every extent. */
    CHECK(th_put(st, "cmp", "k", "new", 3, NULL) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 2);
    got = th_get(st, "cmp", "k", &n, &s);
    CHECK(s == WH_OK && n == 3 && memcmp(got, "new", 3) == 0);
    free(got);
    free(whole);
    store_close(st);
    th_rmdir(dir);
}

static void test_versions_keep_extents(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    CHECK(store_bucket_versioning_set(st, "cmp", DATA_VERSIONING_ENABLED) == WH_OK);
    char *whole = pattern(TOTAL3, 5);
    data_obj_meta_t om;
    CHECK(upload(st, "v", whole, SZ3, 3, &om) == WH_OK);
    char vid[DATA_VERSION_ID_MAX];
    snprintf(vid, sizeof vid, "%s", om.version_id);
    data_obj_meta_free(&om);
    /* Overwritten and deleted (a marker): the composed version keeps its three files. */
    CHECK(th_put(st, "cmp", "v", "next", 4, NULL) == WH_OK);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "cmp", .key = "v"}, NULL) ==
          WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 4);
    data_reader_t *r = NULL;
    CHECK(store_object_reader(st,
                              &(store_read_args_t){.bucket = "cmp", .key = "v", .version_id = vid},
                              &om, &r) == WH_OK);
    data_obj_meta_free(&om);
    char *buf = malloc(TOTAL3);
    CHECK(r && store_reader_pread(r, buf, TOTAL3, 0) == WH_OK && memcmp(buf, whole, TOTAL3) == 0);
    store_reader_close(r);
    free(buf);
    /* Removing that version releases all of its files, and only those. */
    data_del_result_t res;
    CHECK(store_object_delete(
              st, &(store_delete_args_t){.bucket = "cmp", .key = "v", .version_id = vid}, &res) ==
          WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);
    free(whole);
    store_close(st);
    th_rmdir(dir);
}

/* Recovery at open keeps the extents of object rows and of part rows, and removes files no
 * row names. */
static void test_recovery_keeps_extents(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *whole = pattern(TOTAL3, 6);
    data_obj_meta_t om;
    CHECK(upload(st, "k", whole, SZ3, 3, &om) == WH_OK);
    data_obj_meta_free(&om);
    char uid[65], et[33];
    CHECK(store_mpu_create(st, "cmp", "pending", NULL, uid) == WH_OK);
    CHECK(put_part(st, "pending", uid, 1, whole, 100, et) == WH_OK);
    store_close(st);
    /* An orphan: a file no row names, as a crash between rename and commit leaves. */
    char path[512];
    snprintf(path, sizeof path, "%s/objects/ab/ab0123456789abcdef0123456789abcd", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 5);
    st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        goto out;
    CHECK_EQ_U64(th_count_files(dir, "objects"), 4);
    size_t n = 0;
    wh_status_t s;
    char *got = th_get(st, "cmp", "k", &n, &s);
    CHECK(s == WH_OK && n == TOTAL3 && memcmp(got, whole, n) == 0);
    free(got);
    CHECK(store_mpu_check(st, "cmp", "pending", uid) == WH_OK);
    store_close(st);
out:
    free(whole);
    th_rmdir(dir);
}

/* The data table's own contract: compose writes nothing, and a reader refuses a chunk map
 * whose extents leave a gap or do not add up to the size. */
static void test_data_table_compose(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    data_table_t *d = store_data(st);
    CHECK(d->ops->compose != NULL && d->ops->reader_extent != NULL);
    data_chunk_t parts[2];
    memset(parts, 0, sizeof parts);
    snprintf(parts[0].id, sizeof parts[0].id, "%s", "00112233445566778899aabbccddeeff");
    snprintf(parts[1].id, sizeof parts[1].id, "%s", "ffeeddccbbaa99887766554433221100");
    parts[0].length = 10;
    parts[1].offset = 10;
    parts[1].length = 5;
    data_ref_t ref;
    CHECK(d->ops->compose(d, parts, 1, &ref) == WH_OK);
    CHECK_STR(ref.id, parts[0].id);
    CHECK(ref.n_chunks == 0);
    data_ref_clear(&ref);
    CHECK(d->ops->compose(d, parts, 2, &ref) == WH_OK);
    CHECK(ref.n_chunks == 2 && strcmp(ref.id, parts[0].id) != 0 &&
          strcmp(ref.id, parts[1].id) != 0);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    data_reader_t *r = NULL;
    /* The files do not exist: NOT_FOUND, as for a row replaced meanwhile. */
    CHECK(d->ops->reader_open(d, &ref, 15, &r) == WH_ERR_NOT_FOUND);
    ref.chunks[1].offset = 11; /* a gap */
    CHECK(d->ops->reader_open(d, &ref, 16, &r) == WH_ERR_INTERNAL);
    data_ref_clear(&ref);
    snprintf(parts[0].id, sizeof parts[0].id, "%s", "../../etc/passwd");
    CHECK(d->ops->compose(d, parts, 2, &ref) == WH_ERR_INTERNAL);
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_read_across_extents);
    RUN(test_one_part_takes_the_file);
    RUN(test_empty_last_part);
    RUN(test_copy_and_overwrite);
    RUN(test_versions_keep_extents);
    RUN(test_recovery_keeps_extents);
    RUN(test_data_table_compose);
    return check_done();
}
