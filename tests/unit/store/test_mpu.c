/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/store/store/mpu.c: multipart create, parts, list, complete (etag, combined crc,
 * InvalidPart / InvalidPartOrder / EntityTooSmall), abort. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "helpers.h"

#define MiB (1024 * 1024)

static wh_status_t put_part(store_t *st, const char *key, const char *uid, uint32_t num,
                            const char *p, size_t n, char etag[33])
{
    store_writer_t *w = NULL;
    wh_status_t s = store_writer_open(st, &w);
    if (s != WH_OK)
        return s;
    for (size_t off = 0; off < n; off += 65536) {
        size_t k = n - off < 65536 ? n - off : 65536;
        s = store_writer_write(w, p + off, k);
        if (s != WH_OK) {
            store_writer_abort(w);
            return s;
        }
    }
    return store_mpu_part_commit(st, "mpu", key, uid, num, w, etag);
}

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

static store_t *open_store(char **dir)
{
    *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(*dir, &st) == WH_OK);
    if (st)
        CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "mpu"}) == WH_OK);
    return st;
}

static void test_complete(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    size_t sz[3] = {5 * MiB + 123, 5 * MiB, 777};
    char *data[3];
    for (int i = 0; i < 3; i++)
        data[i] = pattern(sz[i], (unsigned)i + 1);

    data_obj_meta_t cm;
    memset(&cm, 0, sizeof cm);
    snprintf(cm.content_type, sizeof cm.content_type, "video/mp4");
    cm.user_meta_json = "{\"x-amz-meta-m\":\"1\"}";
    char uid[65];
    CHECK(store_mpu_create(st, "mpu", "big/object", &cm, uid) == WH_OK);
    CHECK_EQ_U64(strlen(uid), 32);
    CHECK(store_mpu_check(st, "mpu", "big/object", uid) == WH_OK);
    CHECK(store_mpu_check(st, "mpu", "other", uid) == WH_ERR_NOT_FOUND);
    CHECK(store_mpu_check(st, "mpu", "big/object", "00000000000000000000000000000000") ==
          WH_ERR_NOT_FOUND);
    CHECK(store_mpu_check(st, "mpu", "big/object", "../../x") == WH_ERR_NOT_FOUND);

    /* Parts out of order, and part 2 uploaded twice: the second replaces the first. */
    char et[4][33];
    char *junk = pattern(1000, 99);
    CHECK(put_part(st, "big/object", uid, 3, data[2], sz[2], et[3]) == WH_OK);
    CHECK(put_part(st, "big/object", uid, 2, junk, 1000, et[2]) == WH_OK);
    CHECK(put_part(st, "big/object", uid, 1, data[0], sz[0], et[1]) == WH_OK);
    CHECK(put_part(st, "big/object", uid, 2, data[1], sz[1], et[2]) == WH_OK);
    free(junk);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3); /* the replaced part 2 is gone */
    uint8_t md[16];
    char hex[33];
    wh_md5(data[1], sz[1], md);
    wh_hex_encode(md, 16, hex);
    CHECK_STR(et[2], hex);

    /* Bad part numbers, unknown upload, wrong key. */
    char e[33];
    CHECK(put_part(st, "big/object", uid, 0, "x", 1, e) == WH_ERR_INVALID);
    CHECK(put_part(st, "big/object", uid, STORE_MAX_PARTS + 1, "x", 1, e) == WH_ERR_INVALID);
    CHECK(put_part(st, "big/object", "0123456789abcdef0123456789abcdef", 1, "x", 1, e) ==
          WH_ERR_NOT_FOUND);
    CHECK(put_part(st, "wrong/key", uid, 1, "x", 1, e) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);

    /* ListParts: all, then paged. */
    data_part_info_t *pi = NULL;
    size_t np = 0;
    bool trunc = true;
    CHECK(store_mpu_list_parts(st, "mpu", "big/object", uid, 0, 0, &pi, &np, &trunc) == WH_OK);
    CHECK(np == 3 && !trunc);
    for (size_t i = 0; i < np && np == 3; i++) {
        CHECK_EQ_U64(pi[i].number, i + 1);
        CHECK_EQ_U64(pi[i].size, sz[i]);
        CHECK_STR(pi[i].etag, et[i + 1]);
        char b64[13];
        wh_crc64nvme_b64(wh_crc64nvme(0, data[i], sz[i]), b64);
        CHECK_STR(pi[i].crc64nvme, b64);
        CHECK(pi[i].mtime > 0);
    }
    free(pi);
    CHECK(store_mpu_list_parts(st, "mpu", "big/object", uid, 1, 1, &pi, &np, &trunc) == WH_OK);
    CHECK(np == 1 && trunc && pi[0].number == 2);
    free(pi);
    CHECK(store_mpu_list_parts(st, "mpu", "big/object", uid, 2, 1, &pi, &np, &trunc) == WH_OK);
    CHECK(np == 1 && !trunc && pi[0].number == 3);
    free(pi);
    CHECK(store_mpu_list_parts(st, "mpu", "big/object", uid, 3, 0, &pi, &np, &trunc) == WH_OK);
    CHECK(np == 0 && !trunc);
    free(pi);
    CHECK(store_mpu_list_parts(st, "mpu", "nope", uid, 0, 0, &pi, &np, &trunc) == WH_ERR_NOT_FOUND);

    /* Complete, with quotes and upper case in one client etag (tolerated). */
    char quoted[40];
    snprintf(quoted, sizeof quoted, "\"%s\"", et[1]);
    for (char *c = quoted; *c; c++)
        if (*c >= 'a' && *c <= 'f')
            *c = (char)(*c - 'a' + 'A');
    store_complete_part_t cp[3] = {{1, quoted}, {2, et[2]}, {3, et[3]}};
    data_obj_meta_t om;
    int bad = -1;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "big/object", .upload_id = uid, .parts = cp, .n = 3},
              &om, &bad) == WH_OK);
    CHECK_EQ_U64(bad, 0);

    /* ETag: md5 of the binary md5s, "-3". */
    uint8_t cat[48];
    for (int i = 0; i < 3; i++)
        wh_hex_decode(et[i + 1], 32, cat + 16 * i, 16);
    wh_md5(cat, sizeof cat, md);
    char want_etag[40];
    wh_hex_encode(md, 16, want_etag);
    strcat(want_etag, "-3");
    CHECK_STR(om.etag, want_etag);
    CHECK_EQ_U64(om.size, sz[0] + sz[1] + sz[2]);
    CHECK_EQ_U64(om.parts, 3);
    CHECK_STR(om.content_type, "video/mp4");
    CHECK_STR(om.user_meta_json ? om.user_meta_json : "", "{\"x-amz-meta-m\":\"1\"}");
    data_obj_meta_free(&om);

    /* The combined crc equals a crc of the whole concatenation, and the bytes are right. */
    size_t total = sz[0] + sz[1] + sz[2];
    char *whole = malloc(total);
    memcpy(whole, data[0], sz[0]);
    memcpy(whole + sz[0], data[1], sz[1]);
    memcpy(whole + sz[0] + sz[1], data[2], sz[2]);
    char want_crc[13];
    wh_crc64nvme_b64(wh_crc64nvme(0, whole, total), want_crc);
    data_obj_meta_t hm;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "mpu", .key = "big/object"}, &hm,
                            NULL) == WH_OK);
    CHECK_STR(hm.crc64nvme, want_crc);
    CHECK_STR(hm.etag, want_etag);
    CHECK_EQ_U64(hm.parts, 3);
    data_obj_meta_free(&hm);
    wh_status_t s;
    size_t gn = 0;
    char *got = th_get(st, "mpu", "big/object", &gn, &s);
    CHECK(s == WH_OK && gn == total && memcmp(got, whole, total) == 0);
    free(got);
    free(whole);

    /* The upload is gone; its three part files are the object's extents (nothing copied). */
    CHECK(store_mpu_check(st, "mpu", "big/object", uid) == WH_ERR_NOT_FOUND);
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "big/object", .upload_id = uid, .parts = cp, .n = 3},
              &om, &bad) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    CHECK(store_bucket_delete(st, "mpu") == WH_ERR_NOT_EMPTY);
    for (int i = 0; i < 3; i++)
        free(data[i]);
    store_close(st);
    th_rmdir(dir);
}

static void test_complete_errors(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char *small = pattern(1 * MiB, 7);
    char *big = pattern(5 * MiB, 8);
    char uid[65], et[4][33];
    CHECK(store_mpu_create(st, "mpu", "k", NULL, uid) == WH_OK);
    CHECK(put_part(st, "k", uid, 1, small, 1 * MiB, et[1]) == WH_OK);
    CHECK(put_part(st, "k", uid, 2, big, 5 * MiB, et[2]) == WH_OK);
    CHECK(put_part(st, "k", uid, 3, small, 1000, et[3]) == WH_OK);
    data_obj_meta_t om;
    int bad;

    /* InvalidPart: a part never uploaded, or an etag that does not match. */
    store_complete_part_t missing[2] = {{2, et[2]}, {4, et[3]}};
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = missing, .n = 2},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_BAD_PART);
    store_complete_part_t wrong[2] = {{2, et[2]}, {3, et[2]}};
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = wrong, .n = 2},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_BAD_PART);
    store_complete_part_t noetag[1] = {{2, NULL}};
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = noetag, .n = 1},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_BAD_PART);

    /* InvalidPartOrder: descending, and a repeated number. */
    store_complete_part_t desc[2] = {{3, et[3]}, {2, et[2]}};
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = desc, .n = 2},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_BAD_ORDER);
    store_complete_part_t dup[2] = {{2, et[2]}, {2, et[2]}};
    bad = 0;
    CHECK(
        store_mpu_complete(st,
                           &(store_mpu_complete_args_t){
                               .bucket = "mpu", .key = "k", .upload_id = uid, .parts = dup, .n = 2},
                           &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_BAD_ORDER);

    /* EntityTooSmall: a 1 MiB part that is not last. */
    store_complete_part_t tiny[3] = {{1, et[1]}, {2, et[2]}, {3, et[3]}};
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = tiny, .n = 3},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_TOO_SMALL);

    /* No parts at all. */
    bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "mpu", .key = "k", .upload_id = uid, .parts = tiny, .n = 0},
              &om, &bad) == WH_ERR_INVALID);
    CHECK_EQ_U64(bad, STORE_MPU_NO_PARTS);

    /* Nothing was stored by any failure; the upload is intact. */
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "mpu", .key = "k"}, &om, NULL) ==
          WH_ERR_NOT_FOUND);
    CHECK(store_mpu_check(st, "mpu", "k", uid) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);

    /* A subset (2, 3) completes; the unlisted part 1 is discarded with the upload. A single
     * small last part is fine. */
    store_complete_part_t sub[2] = {{2, et[2]}, {3, et[3]}};
    bad = -1;
    CHECK(
        store_mpu_complete(st,
                           &(store_mpu_complete_args_t){
                               .bucket = "mpu", .key = "k", .upload_id = uid, .parts = sub, .n = 2},
                           &om, &bad) == WH_OK);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(om.size, 5 * MiB + 1000);
    CHECK(strlen(om.etag) == 34 && strcmp(om.etag + 32, "-2") == 0);
    data_obj_meta_free(&om);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 2); /* parts 2 and 3; part 1 released */

    /* Completing over an existing object while a reader holds it open. */
    data_reader_t *rd = NULL;
    data_obj_meta_t rm;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "mpu", .key = "k"}, &rm, &rd) ==
          WH_OK);
    CHECK(store_mpu_create(st, "mpu", "k", NULL, uid) == WH_OK);
    CHECK(put_part(st, "k", uid, 1, "tiny", 4, et[1]) == WH_OK);
    store_complete_part_t one[1] = {{1, et[1]}};
    CHECK(
        store_mpu_complete(st,
                           &(store_mpu_complete_args_t){
                               .bucket = "mpu", .key = "k", .upload_id = uid, .parts = one, .n = 1},
                           &om, &bad) == WH_OK);
    CHECK_EQ_U64(om.size, 4);
    data_obj_meta_free(&om);
    size_t n = (size_t)store_reader_size(rd);
    char *old = malloc(n);
    CHECK(n == 5 * MiB + 1000 && store_reader_pread(rd, old, n, 0) == WH_OK &&
          memcmp(old, big, 5 * MiB) == 0 && memcmp(old + 5 * MiB, small, 1000) == 0);
    free(old);
    store_reader_close(rd);
    data_obj_meta_free(&rm);
    wh_status_t s;
    char *cur = th_get(st, "mpu", "k", &n, &s);
    CHECK(s == WH_OK && n == 4 && memcmp(cur, "tiny", 4) == 0);
    free(cur);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);

    free(small);
    free(big);
    store_close(st);
    th_rmdir(dir);
}

static void test_abort_and_list_uploads(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char u1[65], u2[65], u3[65], u4[65], e[33];
    CHECK(store_mpu_create(st, "mpu", "logs/b", NULL, u1) == WH_OK);
    CHECK(store_mpu_create(st, "mpu", "logs/a", NULL, u2) == WH_OK);
    CHECK(store_mpu_create(st, "mpu", "data/x", NULL, u3) == WH_OK);
    CHECK(strcmp(u1, u2) != 0);
    CHECK(store_mpu_create(st, "nobucket", "k", NULL, u4) == WH_ERR_NOT_FOUND);
    CHECK(store_mpu_create(st, "mpu", "bad\xc0\x80", NULL, u4) == WH_ERR_INVALID);

    data_upload_info_t *ul = NULL;
    size_t n = 0;
    CHECK(store_mpu_list_uploads(st, "mpu", "logs/", NULL, &ul, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(ul[0].key, "logs/a");
        CHECK_STR(ul[0].upload_id, u2);
        CHECK_STR(ul[1].key, "logs/b");
        CHECK(ul[0].initiated > 0);
    }
    data_upload_info_free(ul, n);
    CHECK(store_mpu_list_uploads(st, "mpu", NULL, NULL, &ul, &n) == WH_OK);
    CHECK_EQ_U64(n, 3);
    if (n == 3)
        CHECK_STR(ul[0].key, "data/x");
    data_upload_info_free(ul, n);
    CHECK(store_mpu_list_uploads(st, "nobucket", NULL, NULL, &ul, &n) == WH_ERR_NOT_FOUND);

    CHECK(put_part(st, "logs/b", u1, 1, "one", 3, e) == WH_OK);
    CHECK(put_part(st, "logs/b", u1, 2, "two", 3, e) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 2);
    CHECK(store_mpu_abort(st, "mpu", "logs/a", u1) == WH_ERR_NOT_FOUND); /* wrong key */
    CHECK(store_mpu_abort(st, "mpu", "logs/b", u1) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    CHECK(store_mpu_abort(st, "mpu", "logs/b", u1) == WH_ERR_NOT_FOUND);
    CHECK(store_mpu_check(st, "mpu", "logs/b", u1) == WH_ERR_NOT_FOUND);
    /* A part arriving after the abort is refused and leaves no file. */
    CHECK(put_part(st, "logs/b", u1, 3, "late", 4, e) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    CHECK_EQ_U64(th_count_files(dir, "tmp"), 0);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "mpu", .key = "logs/b"}, NULL,
                            NULL) == WH_ERR_NOT_FOUND);

    CHECK(store_mpu_abort(st, "mpu", "logs/a", u2) == WH_OK);
    CHECK(store_mpu_abort(st, "mpu", "data/x", u3) == WH_OK);
    CHECK(store_bucket_delete(st, "mpu") == WH_OK);
    store_close(st);
    th_rmdir(dir);
}

/* DeleteBucket with incomplete uploads: objects keep the bucket, uploads do not. The uploads
 * go with the bucket and their part files are released. */
static void test_bucket_delete_drops_uploads(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    char u1[65], u2[65], e[33];
    CHECK(store_mpu_create(st, "mpu", "a", NULL, u1) == WH_OK);
    CHECK(store_mpu_create(st, "mpu", "b/c", NULL, u2) == WH_OK);
    CHECK(put_part(st, "a", u1, 1, "one", 3, e) == WH_OK);
    CHECK(put_part(st, "a", u1, 2, "two", 3, e) == WH_OK);
    CHECK(put_part(st, "b/c", u2, 7, "seven", 5, e) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 3);
    /* An object keeps the bucket, and the uploads stay with it. */
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "obj", 3) == WH_OK);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "mpu", .key = "o"}, &om) ==
          WH_OK);
    CHECK(store_bucket_delete(st, "mpu") == WH_ERR_NOT_EMPTY);
    CHECK(store_mpu_check(st, "mpu", "a", u1) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 4);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "mpu", .key = "o"}, NULL) ==
          WH_OK);
    /* Now only uploads: the bucket goes, with them and their part files. */
    CHECK(store_bucket_delete(st, "mpu") == WH_OK);
    CHECK(store_bucket_exists(st, "mpu") == WH_ERR_NOT_FOUND);
    CHECK(store_mpu_check(st, "mpu", "a", u1) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    /* A bucket of the same name starts with no uploads. */
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "mpu"}) == WH_OK);
    data_upload_info_t *ul = NULL;
    size_t n = 9;
    CHECK(store_mpu_list_uploads(st, "mpu", NULL, NULL, &ul, &n) == WH_OK && n == 0);
    data_upload_info_free(ul, n);
    CHECK(put_part(st, "a", u1, 3, "late", 4, e) == WH_ERR_NOT_FOUND);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 0);
    store_close(st);
    th_rmdir(dir);
}

/* The object's CRC-32C as the upload asks: COMPOSITE (the CRC-32C of the parts' big-endian
 * CRC-32Cs, "-2") or FULL_OBJECT (of all the bytes); expected values and part checksums the
 * client lists are checked before the commit. */
static void test_complete_sums(void)
{
    char *dir;
    store_t *st = open_store(&dir);
    if (!st)
        return;
    size_t n1 = 5 * MiB, n2 = 777;
    char *p1 = pattern(n1, 11), *p2 = pattern(n2, 12);
    uint32_t c1 = wh_crc32c(0, p1, n1), c2 = wh_crc32c(0, p2, n2);
    uint8_t be[8] = {(uint8_t)(c1 >> 24), (uint8_t)(c1 >> 16), (uint8_t)(c1 >> 8), (uint8_t)c1,
                     (uint8_t)(c2 >> 24), (uint8_t)(c2 >> 16), (uint8_t)(c2 >> 8), (uint8_t)c2};
    char comp[16], full[9], b1[9], wrong[9];
    wh_crc32c_b64(wh_crc32c(0, be, 8), comp);
    strcat(comp, "-2");
    wh_crc32c_b64(wh_crc32c(c1, p2, n2), full);
    wh_crc32c_b64(c1, b1);
    wh_crc32c_b64(c1 ^ 1, wrong);
    const store_sum_type_t types[] = {STORE_SUM_COMPOSITE, STORE_SUM_FULL_OBJECT};
    for (int t = 0; t < 2; t++) {
        const char *key = t == 0 ? "composite" : "full";
        char uid[65], e1[33], e2[33];
        CHECK(store_mpu_create(st, "mpu", key, NULL, uid) == WH_OK);
        CHECK(put_part(st, key, uid, 1, p1, n1, e1) == WH_OK);
        CHECK(put_part(st, key, uid, 2, p2, n2, e2) == WH_OK);
        store_complete_part_t cp[2] = {{1, e1}, {2, e2}};
        const char *pc[2] = {wrong, NULL};
        store_mpu_sums_t sums = {types[t], NULL, NULL, pc, NULL};
        data_obj_meta_t om;
        memset(&om, 0, sizeof om);
        int bad = 0;
        CHECK(store_mpu_complete(st,
                                 &(store_mpu_complete_args_t){.bucket = "mpu",
                                                              .key = key,
                                                              .upload_id = uid,
                                                              .parts = cp,
                                                              .n = 2,
                                                              .sums = &sums},
                                 &om, &bad) == WH_ERR_INVALID);
        CHECK_EQ_U64(bad, STORE_MPU_BAD_PART_SUM);
        pc[0] = b1;
        sums.want_crc32c = wrong;
        CHECK(store_mpu_complete(st,
                                 &(store_mpu_complete_args_t){.bucket = "mpu",
                                                              .key = key,
                                                              .upload_id = uid,
                                                              .parts = cp,
                                                              .n = 2,
                                                              .sums = &sums},
                                 &om, &bad) == WH_ERR_INVALID);
        CHECK_EQ_U64(bad, STORE_MPU_BAD_SUM);
        CHECK(store_object_open(st, &(store_read_args_t){.bucket = "mpu", .key = key}, NULL,
                                NULL) == WH_ERR_NOT_FOUND);
        sums.want_crc32c = t == 0 ? comp : full;
        memset(&om, 0, sizeof om);
        CHECK(store_mpu_complete(st,
                                 &(store_mpu_complete_args_t){.bucket = "mpu",
                                                              .key = key,
                                                              .upload_id = uid,
                                                              .parts = cp,
                                                              .n = 2,
                                                              .sums = &sums},
                                 &om, &bad) == WH_OK);
        CHECK_STR(om.crc32c, t == 0 ? comp : full);
        data_obj_meta_free(&om);
        CHECK(store_object_open(st, &(store_read_args_t){.bucket = "mpu", .key = key}, &om, NULL) ==
              WH_OK);
        CHECK_STR(om.crc32c, t == 0 ? comp : full);
        data_obj_meta_free(&om);
    }
    free(p1);
    free(p2);
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_complete);
    RUN(test_complete_errors);
    RUN(test_abort_and_list_uploads);
    RUN(test_bucket_delete_drops_uploads);
    RUN(test_complete_sums);
    return check_done();
}
