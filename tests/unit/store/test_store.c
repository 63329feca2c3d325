/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/store/store/store.c: validation, buckets, PUT/GET/overwrite/delete/copy, recovery.
 */
#include "base/crc.h"
#include "base/digest.h"
#include "base/codec.h"
#include "base/log.h"
#include "helpers.h"
#include "xfer/token.h"

#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>

static void test_bucket_names(void)
{
    const char *good[] = {"abc",
                          "my-bucket",
                          "my.bucket.name",
                          "a1b2c3",
                          "123",
                          "1.2.3",
                          "1.2.3.4.5",
                          "a-b.c-d",
                          "000",
                          "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"};
    const char *bad[] = {"ab",
                         "",
                         "ABC",
                         "my_bucket",
                         "-abc",
                         "abc-",
                         ".abc",
                         "abc.",
                         "a..b",
                         "192.168.5.4",
                         "1.2.3.4",
                         "xn--abc",
                         "sthree-abc",
                         "abc-s3alias",
                         "abc--ol-s3",
                         "a b",
                         "abc/",
                         "ab\xc3\xa9",
                         "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (!store_bucket_name_valid(good[i]))
            fprintf(stderr, "  expected valid: %s\n", good[i]);
        CHECK(store_bucket_name_valid(good[i]));
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (store_bucket_name_valid(bad[i]))
            fprintf(stderr, "  expected invalid: %s\n", bad[i]);
        CHECK(!store_bucket_name_valid(bad[i]));
    }
    CHECK(!store_bucket_name_valid(NULL));
}

static void test_key_valid(void)
{
    CHECK(store_key_valid("a", 1));
    CHECK(store_key_valid("a/b/../c d", 10));
    CHECK(store_key_valid("\xc3\xa9t\xc3\xa9", 5)); /* été */
    CHECK(store_key_valid("\xe2\x82\xac", 3));      /* € */
    CHECK(store_key_valid("\xf0\x9f\x98\x80", 4));  /* 😀 */
    CHECK(store_key_valid("\xf4\x8f\xbf\xbf", 4));  /* U+10FFFF */
    CHECK(store_key_valid("\xed\x9f\xbf", 3));      /* U+D7FF */
    CHECK(!store_key_valid("", 0));
    CHECK(!store_key_valid("a\0b", 3));             /* NUL */
    CHECK(!store_key_valid("\xc0\xaf", 2));         /* overlong '/' */
    CHECK(!store_key_valid("\xc1\xbf", 2));         /* overlong */
    CHECK(!store_key_valid("\xe0\x80\xaf", 3));     /* overlong 3-byte */
    CHECK(!store_key_valid("\xf0\x80\x80\xaf", 4)); /* overlong 4-byte */
    CHECK(!store_key_valid("\xed\xa0\x80", 3));     /* surrogate D800 */
    CHECK(!store_key_valid("\xed\xbf\xbf", 3));     /* surrogate DFFF */
    CHECK(!store_key_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    CHECK(!store_key_valid("\xf5\x80\x80\x80", 4));
    CHECK(!store_key_valid("\xff", 1));
    CHECK(!store_key_valid("\x80", 1));         /* lone continuation */
    CHECK(!store_key_valid("\xc3", 1));         /* truncated */
    CHECK(!store_key_valid("\xe2\x82", 2));     /* truncated */
    CHECK(!store_key_valid("\xe2\x28\xa1", 3)); /* bad continuation */
    char k[STORE_MAX_KEY + 1];
    memset(k, 'k', sizeof k);
    CHECK(store_key_valid(k, STORE_MAX_KEY));
    CHECK(!store_key_valid(k, STORE_MAX_KEY + 1));
}

static void test_buckets(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt-b"}) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt-a"}) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt-a"}) == WH_ERR_EXISTS);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "Bad_Name"}) == WH_ERR_INVALID);
    CHECK(store_bucket_exists(st, "bkt-a") == WH_OK);
    CHECK(store_bucket_exists(st, "nope") == WH_ERR_NOT_FOUND);
    data_bucket_info_t *bl = NULL;
    size_t n = 0;
    CHECK(store_bucket_list(st, &bl, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(bl[0].name, "bkt-a");
        CHECK_STR(bl[1].name, "bkt-b");
        CHECK(bl[0].created > 0 && bl[0].created <= time(NULL));
    }
    free(bl);

    /* Not empty with an object; an in-progress upload goes with the bucket, as in S3. */
    CHECK(th_put(st, "bkt-a", "x", "1", 1, NULL) == WH_OK);
    CHECK(store_bucket_delete(st, "bkt-a") == WH_ERR_NOT_EMPTY);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt-a", .key = "x"}, NULL) ==
          WH_OK);
    char uid[65];
    CHECK(store_mpu_create(st, "bkt-a", "up", NULL, uid) == WH_OK);
    CHECK(store_bucket_delete(st, "bkt-a") == WH_OK);
    CHECK(store_mpu_abort(st, "bkt-a", "up", uid) == WH_ERR_NOT_FOUND);
    CHECK(store_bucket_delete(st, "bkt-a") == WH_ERR_NOT_FOUND);
    CHECK(store_bucket_exists(st, "bkt-a") == WH_ERR_NOT_FOUND);
    /* A PUT into a missing bucket. */
    CHECK(th_put(st, "bkt-a", "x", "1", 1, NULL) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);

    /* Two opens of one directory: the second is refused. */
    store_t *st2 = NULL;
    CHECK(th_store_open(dir, &st2) == WH_ERR_BUSY);
    CHECK(st2 == NULL);
    store_close(st);
    th_rmdir(dir);
}

static void test_put_get(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);

    /* Digests and metadata of a PUT. */
    size_t n = 300000;
    char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i * 7 + (i >> 9));
    data_obj_meta_t m;
    CHECK(th_put(st, "data", "dir/file.bin", buf, n, &m) == WH_OK);
    uint8_t md5[16];
    char hex[33], b64[13];
    wh_md5(buf, n, md5);
    wh_hex_encode(md5, 16, hex);
    wh_crc64nvme_b64(wh_crc64nvme(0, buf, n), b64);
    CHECK_STR(m.etag, hex);
    CHECK_EQ_U64(m.size, n);
    CHECK_STR(m.crc64nvme, b64);
    CHECK(m.mtime > 0);

    data_obj_meta_t hm;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "dir/file.bin"}, &hm,
                            NULL) == WH_OK); /* HEAD */
    CHECK_STR(hm.etag, hex);
    CHECK_EQ_U64(hm.size, n);
    CHECK_STR(hm.content_type, "application/octet-stream");
    CHECK_STR(hm.crc64nvme, b64);
    CHECK(hm.user_meta_json == NULL);
    CHECK_EQ_U64(hm.parts, 0);
    data_obj_meta_free(&hm);

    wh_status_t s;
    size_t gn = 0;
    char *got = th_get(st, "data", "dir/file.bin", &gn, &s);
    CHECK(s == WH_OK && got && gn == n && memcmp(got, buf, n) == 0);
    free(got);

    /* Missing key, missing bucket. */
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "nope"}, &hm, NULL) ==
          WH_ERR_NOT_FOUND);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "nobucket", .key = "dir/file.bin"},
                            &hm, NULL) == WH_ERR_NOT_FOUND);

    /* Writer digests are readable before commit, and a set crc32c/user meta is kept. */
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "hello", 5) == WH_OK);
    CHECK_EQ_U64(store_writer_size(w), 5);
    CHECK_EQ_U64(store_writer_crc64nvme(w), wh_crc64nvme(0, "hello", 5));
    CHECK_EQ_U64(store_writer_crc32c(w), wh_crc32c(0, "hello", 5));
    char wm[33];
    store_writer_md5_hex(w, wm);
    CHECK_STR(wm, "5d41402abc4b2a76b9719d911017c592");
    store_writer_md5_hex(w, wm); /* a second call returns the same */
    CHECK_STR(wm, "5d41402abc4b2a76b9719d911017c592");
    data_obj_meta_t um;
    memset(&um, 0, sizeof um);
    snprintf(um.content_type, sizeof um.content_type, "text/plain");
    um.user_meta_json = "{\"x-amz-meta-a\":\"b\"}";
    wh_crc32c_b64(wh_crc32c(0, "hello", 5), um.crc32c);
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "data", .key = "hello.txt"},
                              &um) == WH_OK);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "hello.txt"}, &hm,
                            NULL) == WH_OK);
    CHECK_STR(hm.content_type, "text/plain");
    CHECK_STR(hm.user_meta_json ? hm.user_meta_json : "", "{\"x-amz-meta-a\":\"b\"}");
    CHECK_STR(hm.crc32c, um.crc32c);
    CHECK_STR(hm.etag, "5d41402abc4b2a76b9719d911017c592");
    data_obj_meta_free(&hm);

    /* A size the caller expected but did not get: rejected, nothing stored. */
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "abc", 3) == WH_OK);
    memset(&um, 0, sizeof um);
    um.size = 4;
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "data", .key = "short"}, &um) ==
          WH_ERR_INVALID);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "short"}, &hm,
                            NULL) == WH_ERR_NOT_FOUND);

    /* Empty object. */
    CHECK(th_put(st, "data", "empty", "", 0, &m) == WH_OK);
    CHECK_STR(m.etag, "d41d8cd98f00b204e9800998ecf8427e");
    got = th_get(st, "data", "empty", &gn, &s);
    CHECK(s == WH_OK && gn == 0);
    free(got);

    /* Abort leaves nothing. */
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "zzz", 3) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 1);
    store_writer_abort(w);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    store_writer_abort(NULL);

    free(buf);

    /* Large enough that the md5 moves to the helper thread mid-stream; then abort one such
     * writer half-way (the helper is cancelled, the temp file removed). */
    n = 13 * 1024 * 1024 + 4321;
    buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)((i * 2654435761u) >> 13);
    CHECK(th_put(st, "data", "large", buf, n, &m) == WH_OK);
    wh_md5(buf, n, md5);
    wh_hex_encode(md5, 16, hex);
    CHECK_STR(m.etag, hex);
    wh_crc64nvme_b64(wh_crc64nvme(0, buf, n), b64);
    CHECK_STR(m.crc64nvme, b64);
    got = th_get(st, "data", "large", &gn, &s);
    CHECK(s == WH_OK && gn == n && memcmp(got, buf, n) == 0);
    free(got);
    CHECK(store_writer_open(st, &w) == WH_OK);
    for (size_t off = 0; off < n / 2; off += 1 << 20)
        CHECK(store_writer_write(w, buf + off, 1 << 20) == WH_OK);
    store_writer_abort(w);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    /* Digest first, as a server checking Content-MD5 does, then commit. */
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, buf, n) == WH_OK);
    store_writer_md5_hex(w, wm);
    CHECK_STR(wm, hex);
    CHECK(store_writer_write(w, "x", 1) == WH_ERR_INVALID); /* no writes after the digest */
    store_writer_abort(w);
    free(buf);
    store_close(st);
    th_rmdir(dir);
}

static void test_overwrite_open_fd(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);
    CHECK(th_put(st, "data", "k", "version-one", 11, NULL) == WH_OK);
    data_obj_meta_t m;
    int fd = -1;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "k"}, &m, &fd) ==
          WH_OK);
    CHECK(th_put(st, "data", "k", "version-two!", 12, NULL) == WH_OK);
    /* The held fd still reads the old version; a new open sees the new one. */
    size_t n = 0;
    char *old = th_read_fd(fd, &n);
    CHECK(n == 11 && memcmp(old, "version-one", 11) == 0);
    free(old);
    close(fd);
    data_obj_meta_free(&m);
    wh_status_t s;
    char *cur = th_get(st, "data", "k", &n, &s);
    CHECK(s == WH_OK && n == 12 && memcmp(cur, "version-two!", 12) == 0);
    free(cur);
    /* The old file is gone from disk: one file for one object. */
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);

    /* Delete while open: still readable through the fd, gone for new opens. */
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "k"}, &m, &fd) ==
          WH_OK);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "data", .key = "k"}, NULL) ==
          WH_OK);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "data", .key = "k"}, NULL) ==
          WH_OK); /* idempotent */
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "nobucket", .key = "k"}, NULL) ==
          WH_ERR_NOT_FOUND);
    old = th_read_fd(fd, &n);
    CHECK(n == 12 && memcmp(old, "version-two!", 12) == 0);
    free(old);
    close(fd);
    data_obj_meta_free(&m);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "data", .key = "k"}, &m, NULL) ==
          WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    store_close(st);
    th_rmdir(dir);
}

static void test_odd_keys(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);
    static char longkey[STORE_MAX_KEY + 2];
    memset(longkey, 'L', STORE_MAX_KEY);
    longkey[STORE_MAX_KEY] = '\0';
    const char *keys[] = {"a/b/c",
                          "..",
                          "../../etc/passwd",
                          "/leading",
                          "trailing/",
                          "a//b",
                          "with space",
                          " ",
                          "\xc3\xa9t\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac",
                          "\xf0\x9f\x98\x80",
                          ".",
                          "%2F",
                          "a\\b",
                          "\t\n",
                          longkey};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char body[64];
        int bl = snprintf(body, sizeof body, "body-%zu", i);
        CHECK(th_put(st, "data", keys[i], body, (size_t)bl, NULL) == WH_OK);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char body[64];
        int bl = snprintf(body, sizeof body, "body-%zu", i);
        size_t n = 0;
        wh_status_t s;
        char *got = th_get(st, "data", keys[i], &n, &s);
        if (s != WH_OK)
            fprintf(stderr, "  key %zu: %s\n", i, wh_status_str(s));
        CHECK(s == WH_OK && n == (size_t)bl && memcmp(got, body, n) == 0);
        free(got);
    }
    /* Nothing named after a key appeared anywhere: only ids under objects/. */
    CHECK_EQ_U64(th_count_files(dir, "objects"), sizeof keys / sizeof keys[0]);
    char p[512];
    snprintf(p, sizeof p, "%s/objects/../etc", dir);
    CHECK(access(p, F_OK) != 0);

    /* Invalid keys are refused and leave no file behind. */
    longkey[STORE_MAX_KEY] = 'L';
    longkey[STORE_MAX_KEY + 1] = '\0';
    CHECK(th_put(st, "data", longkey, "x", 1, NULL) == WH_ERR_INVALID);
    CHECK(th_put(st, "data", "bad\xc0\xafkey", "x", 1, NULL) == WH_ERR_INVALID);
    CHECK(th_put(st, "data", "sur\xed\xa0\x80", "x", 1, NULL) == WH_ERR_INVALID);
    CHECK(th_put(st, "data", "", "x", 1, NULL) == WH_ERR_INVALID);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    CHECK_EQ_U64(th_count_files(dir, "objects"), sizeof keys / sizeof keys[0]);
    store_close(st);
    th_rmdir(dir);
}

static void test_copy(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "src"}) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "dst"}) == WH_OK);
    size_t n = 1 << 20;
    char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i ^ (i >> 8));
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, buf, n) == WH_OK);
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    snprintf(m.content_type, sizeof m.content_type, "image/png");
    m.user_meta_json = "{\"x-amz-meta-k\":\"v\"}";
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "src", .key = "orig"}, &m) ==
          WH_OK);

    data_obj_meta_t out;
    CHECK(store_object_copy(
              st,
              &(store_copy_args_t){
                  .src_bucket = "src", .src_key = "orig", .dst_bucket = "dst", .dst_key = "copy"},
              &out) == WH_OK);
    CHECK_STR(out.etag, m.etag);
    CHECK_EQ_U64(out.size, n);
    CHECK_STR(out.content_type, "image/png");
    CHECK_STR(out.user_meta_json ? out.user_meta_json : "", "{\"x-amz-meta-k\":\"v\"}");
    data_obj_meta_free(&out);
    wh_status_t s;
    size_t gn;
    char *got = th_get(st, "dst", "copy", &gn, &s);
    CHECK(s == WH_OK && gn == n && memcmp(got, buf, n) == 0);
    free(got);
    data_obj_meta_t hm;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "dst", .key = "copy"}, &hm, NULL) ==
          WH_OK);
    CHECK_STR(hm.crc64nvme, m.crc64nvme);
    data_obj_meta_free(&hm);

    /* Replace metadata in place (copy onto itself). */
    data_obj_meta_t rm;
    memset(&rm, 0, sizeof rm);
    snprintf(rm.content_type, sizeof rm.content_type, "text/csv");
    CHECK(store_object_copy(st,
                            &(store_copy_args_t){.src_bucket = "src",
                                                 .src_key = "orig",
                                                 .dst_bucket = "src",
                                                 .dst_key = "orig",
                                                 .replace_meta = &rm},
                            &out) == WH_OK);
    data_obj_meta_free(&out);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "src", .key = "orig"}, &hm, NULL) ==
          WH_OK);
    CHECK_STR(hm.content_type, "text/csv");
    CHECK(hm.user_meta_json == NULL);
    CHECK_EQ_U64(hm.size, n);
    data_obj_meta_free(&hm);
    got = th_get(st, "src", "orig", &gn, &s);
    CHECK(s == WH_OK && gn == n && memcmp(got, buf, n) == 0);
    free(got);

    /* The copy is a separate file: deleting the source keeps it. */
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "src", .key = "orig"}, NULL) ==
          WH_OK);
    got = th_get(st, "dst", "copy", &gn, &s);
    CHECK(s == WH_OK && gn == n && memcmp(got, buf, n) == 0);
    free(got);
    CHECK(store_object_copy(
              st,
              &(store_copy_args_t){
                  .src_bucket = "src", .src_key = "orig", .dst_bucket = "dst", .dst_key = "x"},
              &out) == WH_ERR_NOT_FOUND);
    CHECK(store_object_copy(
              st,
              &(store_copy_args_t){
                  .src_bucket = "dst", .src_key = "copy", .dst_bucket = "nobucket", .dst_key = "x"},
              &out) == WH_ERR_NOT_FOUND);
    CHECK(store_object_copy(st,
                            &(store_copy_args_t){.src_bucket = "dst",
                                                 .src_key = "copy",
                                                 .dst_bucket = "dst",
                                                 .dst_key = "bad\xff"},
                            &out) == WH_ERR_INVALID);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    free(buf);
    store_close(st);
    th_rmdir(dir);
}

static void test_recovery(void)
{
    char *dir = th_mkdtemp();
    char uid[65] = "", etag[33] = "";
    /* A child process commits data, then dies with a writer in flight (its temp file stays). */
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        store_t *cs = NULL;
        store_writer_t *w = NULL;
        if (th_store_open(dir, &cs) != WH_OK ||
            store_bucket_create(cs, &(store_bucket_args_t){.bucket = "data"}) != WH_OK ||
            th_put(cs, "data", "kept", "committed bytes", 15, NULL) != WH_OK ||
            store_mpu_create(cs, "data", "mp", NULL, uid) != WH_OK ||
            store_writer_open(cs, &w) != WH_OK || store_writer_write(w, "part", 4) != WH_OK ||
            store_mpu_part_commit(cs, "data", "mp", uid, 1, w, etag) != WH_OK ||
            store_writer_open(cs, &w) != WH_OK || store_writer_write(w, "partial", 7) != WH_OK)
            _exit(1);
        if (write(pfd[1], uid, 65) != 65 || write(pfd[1], etag, 33) != 33)
            _exit(1);
        _exit(0); /* no close, no abort: the crash */
    }
    close(pfd[1]);
    CHECK(read(pfd[0], uid, 65) == 65);
    CHECK(read(pfd[0], etag, 33) == 33);
    close(pfd[0]);
    int wst = 0;
    CHECK(waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    store_t *st = NULL;

    /* An orphan object file (renamed in, but the metadata commit never happened) and junk. */
    char p[512];
    snprintf(p, sizeof p, "%s/objects/ab/ab00000000000000000000000000beef", dir);
    int fd = open(p, O_CREAT | O_WRONLY, 0640);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, "orphan", 6) == 6);
        close(fd);
    }
    snprintf(p, sizeof p, "%s/tmp/leftover", dir);
    fd = open(p, O_CREAT | O_WRONLY, 0640);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 2);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3); /* object, part, orphan */

    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 2); /* the object and the part */
    snprintf(p, sizeof p, "%s/objects/ab/ab00000000000000000000000000beef", dir);
    CHECK(access(p, F_OK) != 0);
    wh_status_t s;
    size_t n;
    char *got = th_get(st, "data", "kept", &n, &s);
    CHECK(s == WH_OK && n == 15 && memcmp(got, "committed bytes", 15) == 0);
    free(got);
    data_part_info_t *parts = NULL;
    size_t np = 0;
    bool trunc = true;
    CHECK(store_mpu_list_parts(st, "data", "mp", uid, 0, 0, &parts, &np, &trunc) == WH_OK);
    CHECK(np == 1 && !trunc && parts && strcmp(parts[0].etag, etag) == 0);
    free(parts);
    store_close(st);
    th_rmdir(dir);
}

/* Threads hammer one store: private keys, one shared key overwritten by all, listings.
 * Every GET must see one whole version (never a mix), and no file may leak. */
#define CONC_THREADS 4
#define CONC_ITERS 40
typedef struct {
    store_t *st;
    int id;
    int errors;
} conc_arg_t;

/* A self-describing body: 8 bytes of (writer, iteration), then a pattern derived from them. */
static size_t conc_body(int id, int it, char *buf)
{
    size_t n = 8 + (size_t)((id * 7919 + it * 104729) % 20000);
    buf[0] = (char)id;
    buf[1] = (char)it;
    memset(buf + 2, 'h', 6);
    for (size_t i = 8; i < n; i++)
        buf[i] = (char)(id * 31 + it * 17 + (int)i);
    return n;
}

static void *conc_main(void *p)
{
    conc_arg_t *a = p;
    char *buf = malloc(20100), *want = malloc(20100);
    for (int it = 0; it < CONC_ITERS; it++) {
        char key[64];
        snprintf(key, sizeof key, "t%d/k%02d", a->id, it % 10);
        size_t n = conc_body(a->id, it, buf);
        if (th_put(a->st, "conc", key, buf, n, NULL) != WH_OK)
            a->errors++;
        if (th_put(a->st, "conc", "shared", buf, n, NULL) != WH_OK)
            a->errors++;
        size_t gn = 0;
        wh_status_t s;
        char *got = th_get(a->st, "conc", key, &gn, &s);
        if (s != WH_OK || gn != n || memcmp(got, buf, n) != 0)
            a->errors++;
        free(got);
        /* The fd and the metadata returned together describe the same version. */
        data_obj_meta_t sm;
        int sfd = -1;
        got = NULL;
        s = store_object_open(a->st, &(store_read_args_t){.bucket = "conc", .key = "shared"}, &sm,
                              &sfd);
        if (s == WH_OK) {
            got = th_read_fd(sfd, &gn);
            close(sfd);
            uint8_t d[16];
            char h[33];
            wh_md5(got, gn, d);
            wh_hex_encode(d, 16, h);
            if (sm.size != gn || strcmp(sm.etag, h) != 0)
                a->errors++;
            data_obj_meta_free(&sm);
        }
        if (s != WH_OK || gn < 8) {
            a->errors++;
        } else {
            size_t wn = conc_body(got[0], (unsigned char)got[1], want);
            if (wn != gn || memcmp(got, want, gn) != 0)
                a->errors++; /* a torn or mixed version */
        }
        free(got);
        data_list_params_t lp = {.delimiter = "/", .max_keys = 1000};
        data_list_result_t r;
        if (store_object_list(a->st, "conc", &lp, &r) != WH_OK || r.n_entries != 1 ||
            r.n_prefixes < 1)
            a->errors++;
        data_list_result_free(&r);
    }
    free(buf);
    free(want);
    return NULL;
}

static void test_concurrency(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "conc"}) == WH_OK);
    pthread_t th[CONC_THREADS];
    conc_arg_t args[CONC_THREADS];
    for (int i = 0; i < CONC_THREADS; i++) {
        args[i] = (conc_arg_t){.st = st, .id = i};
        CHECK(pthread_create(&th[i], NULL, conc_main, &args[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < CONC_THREADS; i++) {
        pthread_join(th[i], NULL);
        errors += args[i].errors;
    }
    CHECK_EQ_U64(errors, 0);
    /* 10 keys per thread + "shared": exactly that many files. */
    CHECK_EQ_U64(th_count_files(dir, "objects"), CONC_THREADS * 10 + 1);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    store_close(st);
    th_rmdir(dir);
}

/* The reader API the handlers use for local and remote data alike: pread anywhere inside,
 * an fd for local files, and delegated RDMA declined by the local table. */
static void test_reader_api(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);
    CHECK(th_put(st, "data", "k", "0123456789abcdef", 16, NULL) == WH_OK);
    data_obj_meta_t m;
    data_reader_t *r = NULL;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "data", .key = "k"}, &m, &r) ==
          WH_OK);
    if (!r)
        return;
    CHECK_EQ_U64(m.size, 16);
    CHECK_EQ_U64(store_reader_size(r), 16);
    CHECK(store_reader_fd(r) >= 0);
    char buf[8];
    CHECK(store_reader_pread(r, buf, 6, 10) == WH_OK && memcmp(buf, "abcdef", 6) == 0);
    CHECK(store_reader_pread(r, buf, 7, 10) == WH_ERR_RANGE);
    wh_peer_t peer = {.addr = "127.0.0.1:1"};
    data_rdma_result_t res;
    xfer_token_arg_t tok;
    xfer_token_arg_parse(&tok, "1000:10:ofi1:shm:0011:1");
    CHECK(store_reader_rdma_get(r, &tok, &peer, 0, 16, &res) == WH_ERR_UNSUPPORTED);
    /* Overwritten while open: the reader keeps its version. */
    CHECK(th_put(st, "data", "k", "ZZ", 2, NULL) == WH_OK);
    CHECK(store_reader_pread(r, buf, 4, 0) == WH_OK && memcmp(buf, "0123", 4) == 0);
    store_reader_close(r);
    data_obj_meta_free(&m);
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "data", .key = "nokey"}, &m, &r) ==
          WH_ERR_NOT_FOUND);

    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_rdma_put(w, &tok, &peer, 16, &res) == WH_ERR_UNSUPPORTED);
    store_writer_abort(w);

    data_space_t sp;
    CHECK(store_space(st, &sp) == WH_OK);
    CHECK(sp.total > 0 && sp.free > 0 && sp.free <= sp.total);
    CHECK_EQ_U64(sp.reserve, STORE_DEFAULT_RESERVE);
    CHECK_EQ_U64(sp.high_water_pct, STORE_DEFAULT_HIGH_WATER);
    store_close(st);
    th_rmdir(dir);
}

/* Part ETags: the MD5 of each part, hashed in parallel, combined as S3 combines multipart
 * parts; one part keeps the plain MD5. */
static void test_part_etag(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(store_open(&(store_config_t){.data_dir = dir}, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);
    const uint64_t part = 4ULL << 20;
    size_t sizes[] = {0, 5, (size_t)(5ULL << 20), (size_t)(3 * part), (size_t)(3 * part) + 17};
    size_t n = sizes[4];
    uint8_t *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)((i * 2654435761u) >> 11);
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        size_t len = sizes[c];
        store_writer_t *w = NULL;
        CHECK(store_writer_open(st, &w) == WH_OK);
        store_writer_use_part_etag(w, part);
        for (size_t off = 0; off < len; off += 777777) /* odd write sizes across parts */
            CHECK(store_writer_write(w, buf + off, len - off < 777777 ? len - off : 777777) ==
                  WH_OK);
        char want[48];
        uint64_t nparts = (len + part - 1) / part;
        uint8_t d[16];
        if (nparts <= 1) {
            wh_md5(buf, len, d);
            wh_hex_encode(d, 16, want);
        } else {
            uint8_t all[16 * 8];
            for (uint64_t k = 0; k < nparts; k++) {
                uint64_t a = k * part, b = a + part < len ? a + part : len;
                wh_md5(buf + a, (size_t)(b - a), all + 16 * k);
            }
            wh_md5(all, (size_t)(16 * nparts), d);
            wh_hex_encode(d, 16, want);
            snprintf(want + 32, sizeof want - 32, "-%llu", (unsigned long long)nparts);
        }
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        char key[32];
        snprintf(key, sizeof key, "p%zu", c);
        CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "data", .key = key}, &m) ==
              WH_OK);
        if (strcmp(m.etag, want) != 0)
            fprintf(stderr, "  size %zu: etag %s, want %s\n", len, m.etag, want);
        CHECK_STR(m.etag, want);
        char b64[16];
        wh_crc64nvme_b64(wh_crc64nvme(0, buf, len), b64);
        CHECK_STR(m.crc64nvme, b64);
    }
    /* Aborted half-way: the helpers stop, nothing is left. */
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    store_writer_use_part_etag(w, part);
    CHECK(store_writer_write(w, buf, 2 * part + 5) == WH_OK);
    store_writer_abort(w);
    free(buf);
    store_close(st);
    th_rmdir(dir);
}

/* Digest ETags: no MD5 pass; 32 hex from the CRCs and the size, "-N" for an object (N parts
 * of the part size, at least 1), none for a part; the same bytes give the same ETag, one
 * changed byte another, and the bytes and CRC stored are those written. */
static void test_digest_etag(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "data"}) == WH_OK);
    size_t len = (9u << 20) + 3;
    uint8_t *buf = malloc(len);
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    char etags[3][80];
    for (int c = 0; c < 3; c++) {
        if (c == 2)
            buf[len / 2] ^= 1;
        store_writer_t *w = NULL;
        CHECK(store_writer_open(st, &w) == WH_OK);
        store_writer_use_digest_etag(w, 4u << 20, false);
        for (size_t off = 0; off < len; off += 1000003)
            CHECK(store_writer_write(w, buf + off, len - off < 1000003 ? len - off : 1000003) ==
                  WH_OK);
        char md5[33] = "x";
        store_writer_md5_hex(w, md5);
        CHECK_STR(md5, ""); /* no whole-object MD5 exists */
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        char key[16];
        snprintf(key, sizeof key, "d%d", c);
        CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "data", .key = key}, &m) ==
              WH_OK);
        snprintf(etags[c], sizeof etags[c], "%s", m.etag);
        CHECK(strlen(m.etag) == 34 && strcmp(m.etag + 32, "-3") == 0);
        char b64[16];
        wh_crc64nvme_b64(wh_crc64nvme(0, buf, len), b64);
        CHECK_STR(m.crc64nvme, b64);
        data_reader_t *r = NULL;
        data_obj_meta_t rm;
        CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "data", .key = key}, &rm,
                                  &r) == WH_OK);
        uint8_t *back = malloc(len);
        CHECK(r && store_reader_pread(r, back, len, 0) == WH_OK);
        CHECK(memcmp(back, buf, len) == 0);
        CHECK_STR(rm.etag, m.etag);
        free(back);
        store_reader_close(r);
        data_obj_meta_free(&rm);
        data_obj_meta_free(&m);
    }
    CHECK_STR(etags[0], etags[1]);
    CHECK(strcmp(etags[0], etags[2]) != 0);
    /* A part: the bare 32 hex, which store_writer_md5_hex answers too. */
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    store_writer_use_digest_etag(w, 4u << 20, true);
    CHECK(store_writer_write(w, buf, len) == WH_OK);
    char part[33];
    store_writer_md5_hex(w, part);
    CHECK(strlen(part) == 32 && strncmp(part, etags[2], 32) == 0);
    store_writer_abort(w);
    free(buf);
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_bucket_names);
    RUN(test_key_valid);
    RUN(test_buckets);
    RUN(test_put_get);
    RUN(test_part_etag);
    RUN(test_digest_etag);
    RUN(test_overwrite_open_fd);
    RUN(test_reader_api);
    RUN(test_odd_keys);
    RUN(test_copy);
    RUN(test_recovery);
    RUN(test_concurrency);
    return check_done();
}
