/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/store/store/crypt.c: encrypted writes and reads through the store, ranged reads
 * across segment and part boundaries, a reader that serves nothing without its key, a wrong key, a
 * flipped bit, a swapped segment and a moved part all refused; copies between encrypted and
 * plain; the parameter text. */
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "helpers.h"
#include "store/crypt.h"

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#define SEG STORE_SSE_SEG

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* New SSE-C parameters for ckey into *text (malloc'd) and the data key. */
static void params(const uint8_t ckey[32], char **text, uint8_t key[32])
{
    store_sse_t s;
    memset(&s, 0, sizeof s);
    s.kind = STORE_SSE_C;
    CHECK(wh_random_bytes(s.salt, sizeof s.salt) == 0);
    store_sse_c_derive(ckey, s.salt, key, s.secret);
    *text = store_sse_format(&s);
    CHECK(*text != NULL);
}

static wh_status_t put_enc(store_t *st, const char *key, const uint8_t *p, size_t n,
                           const uint8_t dkey[32], const char *sse)
{
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_encrypt(w, dkey, sse, 0) == WH_OK);
    size_t off = 0, chunk = 1000;
    while (off < n) { /* uneven chunks that straddle segments */
        size_t k = n - off < chunk ? n - off : chunk;
        CHECK(store_writer_write(w, p + off, k) == WH_OK);
        off += k;
        chunk = chunk * 3 + 7;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t s = store_writer_commit(w, &(store_commit_args_t){.bucket = "bkt", .key = key}, &m);
    if (s == WH_OK) {
        uint8_t d[WH_MD5_LEN];
        char hex[33];
        wh_md5(p, n, d);
        wh_hex_encode(d, sizeof d, hex);
        if (strncmp(sse, "C;", 2) == 0) { /* SSE-C: never the MD5, the sealed one */
            char want[33];
            store_sse_c_etag(dkey, hex, want);
            CHECK(strcmp(want, hex) != 0);
            CHECK_STR(m.etag, want);
        } else {
            CHECK_STR(m.etag, hex); /* the plaintext's MD5 */
        }
        CHECK_EQ_U64(m.size, n);
        CHECK(m.sse && strcmp(m.sse, sse) == 0);
    }
    data_obj_meta_free(&m);
    return s;
}

static wh_status_t read_range(store_t *st, const char *key, const uint8_t *dkey, uint64_t off,
                              size_t n, uint8_t *out)
{
    data_obj_meta_t m;
    data_reader_t *r = NULL;
    wh_status_t s =
        store_object_reader(st, &(store_read_args_t){.bucket = "bkt", .key = key}, &m, &r);
    if (s != WH_OK)
        return s;
    CHECK(store_reader_fd(r) < 0); /* never the stored bytes by sendfile */
    if (dkey)
        CHECK(store_reader_set_key(r, dkey) == WH_OK);
    s = store_reader_pread(r, out, n, off);
    store_reader_close(r);
    data_obj_meta_free(&m);
    return s;
}

/* The one object file under dir/objects. */
static char g_file[4096];
static int find_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    if (flag == FTW_F && strstr(path, "/objects/"))
        snprintf(g_file, sizeof g_file, "%s", path);
    return 0;
}

static void flip(const char *dir, uint64_t at)
{
    g_file[0] = '\0';
    char objs[4096];
    snprintf(objs, sizeof objs, "%s/objects", dir);
    nftw(objs, find_cb, 8, FTW_PHYS);
    CHECK(g_file[0]);
    int fd = open(g_file, O_RDWR);
    CHECK(fd >= 0);
    uint8_t b;
    CHECK(pread(fd, &b, 1, (off_t)at) == 1);
    b ^= 0x10;
    CHECK(pwrite(fd, &b, 1, (off_t)at) == 1);
    close(fd);
}

static void test_round_trip_ranges_and_tamper(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    uint8_t ck[32], other[32], dk[32], ok[32];
    fill(ck, 32, 1);
    fill(other, 32, 2);
    char *sse, *sse2;
    params(ck, &sse, dk);
    params(other, &sse2, ok);
    size_t n = 3 * SEG + 777;
    uint8_t *p = malloc(n), *q = malloc(n);
    fill(p, n, 3);
    CHECK(put_enc(st, "k", p, n, dk, sse) == WH_OK);
    CHECK_EQ_U64(th_count_files(dir, "objects"), 1);
    /* Every range that matters: whole, inside, across one and two boundaries, the tail. */
    uint64_t rs[][2] = {{0, n},         {0, 1},     {SEG - 1, 2},  {SEG, SEG}, {10, 2 * SEG + 5},
                        {3 * SEG, 777}, {n - 1, 1}, {SEG / 2, SEG}};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        memset(q, 0, n);
        CHECK(read_range(st, "k", dk, rs[i][0], (size_t)rs[i][1], q) == WH_OK);
        CHECK(memcmp(q, p + rs[i][0], (size_t)rs[i][1]) == 0);
    }
    CHECK(read_range(st, "k", dk, n - 1, 2, q) == WH_ERR_RANGE);
    /* No key: nothing served. The wrong data key: the tags fail. */
    CHECK(read_range(st, "k", NULL, 0, 10, q) == WH_ERR_AUTH);
    CHECK(read_range(st, "k", ok, 0, 10, q) == WH_ERR_CHECKSUM);
    /* Stored size: header, the bytes, a tag per segment. */
    struct stat sb;
    g_file[0] = '\0';
    char objs[4096];
    snprintf(objs, sizeof objs, "%s/objects", dir);
    nftw(objs, find_cb, 8, FTW_PHYS);
    CHECK(stat(g_file, &sb) == 0);
    CHECK_EQ_U64((uint64_t)sb.st_size, STORE_SSE_HDR + n + 4 * STORE_SSE_TAG);
    CHECK_EQ_U64(store_sse_blob_size(n), (uint64_t)sb.st_size);
    /* A flipped bit in segment 2: segments 0, 1 and 3 still serve; 2 never does. */
    flip(dir, STORE_SSE_HDR + 2 * (SEG + STORE_SSE_TAG) + 5);
    CHECK(read_range(st, "k", dk, 0, 2 * SEG, q) == WH_OK && memcmp(q, p, 2 * SEG) == 0);
    CHECK(read_range(st, "k", dk, 3 * SEG, 777, q) == WH_OK);
    CHECK(read_range(st, "k", dk, 2 * SEG + 100, 1, q) == WH_ERR_CHECKSUM);
    CHECK(read_range(st, "k", dk, 0, n, q) == WH_ERR_CHECKSUM);
    /* A flipped bit in the header's IV: every segment fails. */
    CHECK(put_enc(st, "k", p, n, dk, sse) == WH_OK);
    flip(dir, 6);
    CHECK(read_range(st, "k", dk, 0, 1, q) == WH_ERR_CHECKSUM);
    /* Two segments swapped: both refused (the index is authenticated). */
    CHECK(put_enc(st, "k", p, n, dk, sse) == WH_OK);
    {
        g_file[0] = '\0';
        nftw(objs, find_cb, 8, FTW_PHYS);
        int fd = open(g_file, O_RDWR);
        size_t sl = SEG + STORE_SSE_TAG;
        uint8_t *a = malloc(sl), *b = malloc(sl);
        CHECK(pread(fd, a, sl, STORE_SSE_HDR) == (ssize_t)sl);
        CHECK(pread(fd, b, sl, (off_t)(STORE_SSE_HDR + sl)) == (ssize_t)sl);
        CHECK(pwrite(fd, b, sl, STORE_SSE_HDR) == (ssize_t)sl);
        CHECK(pwrite(fd, a, sl, (off_t)(STORE_SSE_HDR + sl)) == (ssize_t)sl);
        close(fd);
        free(a);
        free(b);
    }
    CHECK(read_range(st, "k", dk, 0, 1, q) == WH_ERR_CHECKSUM);
    CHECK(read_range(st, "k", dk, SEG, 1, q) == WH_ERR_CHECKSUM);
    CHECK(read_range(st, "k", dk, 2 * SEG, 1, q) == WH_OK);
    /* An empty object. */
    CHECK(put_enc(st, "e", p, 0, dk, sse) == WH_OK);
    CHECK(read_range(st, "e", dk, 0, 0, q) == WH_OK);
    free(p);
    free(q);
    free(sse);
    free(sse2);
    store_close(st);
    th_rmdir(dir);
}

static wh_status_t key_cb(void *arg, const data_obj_meta_t *src, uint8_t key[32])
{
    memcpy(key, arg, 32);
    return WH_OK;
}

static void test_copy_and_multipart(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    uint8_t ck[32], dk[32], ck2[32], dk2[32];
    fill(ck, 32, 9);
    fill(ck2, 32, 10);
    char *sse, *sse2;
    params(ck, &sse, dk);
    params(ck2, &sse2, dk2);
    size_t n = 2 * SEG + 3;
    uint8_t *p = malloc(n), *q = malloc(n);
    fill(p, n, 11);
    CHECK(put_enc(st, "src", p, n, dk, sse) == WH_OK);
    /* Without the source's key the copy is refused and nothing is made. */
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    CHECK(store_object_copy(
              st,
              &(store_copy_args_t){
                  .src_bucket = "bkt", .src_key = "src", .dst_bucket = "bkt", .dst_key = "x"},
              &om) == WH_ERR_AUTH);
    CHECK(read_range(st, "x", NULL, 0, 1, q) == WH_ERR_NOT_FOUND);
    /* Encrypted -> encrypted under another key; encrypted -> plain. */
    store_copy_sse_t cs = {.src_key = key_cb, .arg = dk, .dst_sse = sse2, .dst_key = dk2};
    CHECK(store_object_copy(st,
                            &(store_copy_args_t){.src_bucket = "bkt",
                                                 .src_key = "src",
                                                 .dst_bucket = "bkt",
                                                 .dst_key = "c2",
                                                 .sse = &cs},
                            &om) == WH_OK);
    CHECK(om.sse && strcmp(om.sse, sse2) == 0);
    data_obj_meta_free(&om);
    CHECK(read_range(st, "c2", dk2, 0, n, q) == WH_OK && memcmp(q, p, n) == 0);
    store_copy_sse_t cp = {.src_key = key_cb, .arg = dk};
    CHECK(store_object_copy(st,
                            &(store_copy_args_t){.src_bucket = "bkt",
                                                 .src_key = "src",
                                                 .dst_bucket = "bkt",
                                                 .dst_key = "plain",
                                                 .sse = &cp},
                            &om) == WH_OK);
    CHECK(om.sse == NULL);
    data_obj_meta_free(&om);
    size_t gn = 0;
    wh_status_t gs;
    char *got = th_get(st, "bkt", "plain", &gn, &gs); /* a plain object: by fd again */
    CHECK(gs == WH_OK && gn == n && memcmp(got, p, n) == 0);
    free(got);

    /* Multipart: parts 2 and 5 (a gap), each its own blob with its part number. */
    data_obj_meta_t um;
    memset(&um, 0, sizeof um);
    um.sse = sse;
    char uid[65];
    CHECK(store_mpu_create(st, "bkt", "m", &um, uid) == WH_OK);
    size_t p1 = STORE_MIN_PART_SIZE + 100, p2 = SEG + 1;
    uint8_t *mp = malloc(p1 + p2);
    fill(mp, p1 + p2, 12);
    char et[2][33];
    uint32_t nums[2] = {2, 5};
    size_t offs[2] = {0, p1}, lens[2] = {p1, p2};
    for (int i = 0; i < 2; i++) {
        store_writer_t *w = NULL;
        CHECK(store_writer_open(st, &w) == WH_OK);
        CHECK(store_writer_encrypt(w, dk, sse, nums[i]) == WH_OK);
        CHECK(store_writer_write(w, mp + offs[i], lens[i]) == WH_OK);
        CHECK(store_mpu_part_commit(st, "bkt", "m", uid, nums[i], w, et[i]) == WH_OK);
    }
    store_complete_part_t cps[2] = {{2, et[0]}, {5, et[1]}};
    int bad = -1;
    memset(&om, 0, sizeof om);
    CHECK(
        store_mpu_complete(st,
                           &(store_mpu_complete_args_t){
                               .bucket = "bkt", .key = "m", .upload_id = uid, .parts = cps, .n = 2},
                           &om, &bad) == WH_OK);
    CHECK(om.sse && strstr(om.sse, ";n=2,5") != NULL);
    CHECK_EQ_U64(om.size, p1 + p2);
    data_obj_meta_free(&om);
    uint8_t *mq = malloc(p1 + p2);
    CHECK(read_range(st, "m", dk, 0, p1 + p2, mq) == WH_OK && memcmp(mq, mp, p1 + p2) == 0);
    CHECK(read_range(st, "m", dk, p1 - 7, 20, mq) == WH_OK && memcmp(mq, mp + p1 - 7, 20) == 0);
    free(mp);
    free(mq);
    free(p);
    free(q);
    free(sse);
    free(sse2);
    store_close(st);
    th_rmdir(dir);
}

/* An encrypted version keeps its parameters when archived and promoted (both backends). */
static void test_versions(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    CHECK(store_bucket_versioning_set(st, "bkt", DATA_VERSIONING_ENABLED) == WH_OK);
    uint8_t ck[32], dk[32], p[3000], q[3000];
    fill(ck, 32, 21);
    fill(p, sizeof p, 22);
    char *sse;
    params(ck, &sse, dk);
    CHECK(put_enc(st, "v", p, sizeof p, dk, sse) == WH_OK);
    data_obj_meta_t m;
    CHECK(th_put(st, "bkt", "v", "plain", 5, &m) == WH_OK); /* archives the encrypted one */
    CHECK(m.sse == NULL);
    char cur[DATA_VERSION_ID_MAX];
    snprintf(cur, sizeof cur, "%s", m.version_id);
    data_obj_meta_free(&m);
    CHECK(store_object_delete(
              st, &(store_delete_args_t){.bucket = "bkt", .key = "v", .version_id = cur}, NULL) ==
          WH_OK); /* promotes it */
    CHECK(read_range(st, "v", dk, 0, sizeof p, q) == WH_OK && memcmp(p, q, sizeof p) == 0);
    data_reader_t *r = NULL;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "bkt", .key = "v"}, &m, &r) ==
          WH_OK);
    CHECK(m.sse && strcmp(m.sse, sse) == 0 && store_reader_encrypted(r));
    store_reader_close(r);
    data_obj_meta_free(&m);
    free(sse);
    store_close(st);
    th_rmdir(dir);
}

static void test_params_text(void)
{
    store_sse_t s;
    CHECK(store_sse_parse(NULL, &s) == WH_OK && s.kind == STORE_SSE_NONE);
    CHECK(store_sse_parse("", &s) == WH_OK && s.kind == STORE_SSE_NONE);
    CHECK(store_sse_parse("S3;00112233445566778899aabbccddeeff;g1:abc", &s) == WH_OK);
    CHECK(s.kind == STORE_SSE_S3 && s.salt[15] == 0xff && !strcmp(s.secret, "g1:abc") && !s.parts);
    CHECK(store_sse_parse("C;00112233445566778899aabbccddeeff;ab;n=1,2", &s) == WH_OK);
    CHECK(s.kind == STORE_SSE_C && s.parts && !strcmp(s.parts, "1,2"));
    const char *bad[] = {
        "X;00112233445566778899aabbccddeeff;a",      "S3;0011;a",
        "S3;00112233445566778899aabbccddeefg;a",     "S3;00112233445566778899aabbccddeeff;",
        "S3;00112233445566778899aabbccddeeff;a;x=1", "S3;00112233445566778899aabbccddeeff;a;n="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(store_sse_parse(bad[i], &s) == WH_ERR_INVALID);
    /* The verifier depends on key and salt; the data key is not the verifier. */
    uint8_t k1[32] = {1}, k2[32] = {2}, salt[16] = {3}, d1[32], d2[32];
    char v1[65], v2[65];
    store_sse_c_derive(k1, salt, d1, v1);
    store_sse_c_derive(k2, salt, d2, v2);
    CHECK(strcmp(v1, v2) != 0 && memcmp(d1, d2, 32) != 0 && strlen(v1) == 64);
    salt[0] = 4;
    store_sse_c_derive(k1, salt, d2, v2);
    CHECK(strcmp(v1, v2) != 0 && memcmp(d1, d2, 32) != 0);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_params_text);
    RUN(test_round_trip_ranges_and_tamper);
    RUN(test_copy_and_multipart);
    RUN(test_versions);
    return check_done();
}
