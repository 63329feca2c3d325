/* SPDX-License-Identifier: Apache-2.0 */
/* Conditional writes in the store (store_writer_commit and store_mpu_complete with a cond)
 * and conditional deletes (store_object_delete with a cond): the check runs in the committing
 * metadata transaction, so writers racing on one key cannot both pass. Runs on SQLite and (as
 * unit/store/test_cond/pg) on PostgreSQL. */
#include "base/log.h"
#include "helpers.h"

#include <pthread.h>

#define WRITERS 4
#define ROUNDS 20

static wh_status_t put_cond(store_t *st, const char *key, const char *body, data_cond_t *c,
                            data_obj_meta_t *out)
{
    store_writer_t *w = NULL;
    wh_status_t s = store_writer_open(st, &w);
    if (s != WH_OK)
        return s;
    s = store_writer_write(w, body, strlen(body));
    if (s != WH_OK) {
        store_writer_abort(w);
        return s;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    s = store_writer_commit(w, &(store_commit_args_t){.bucket = "bkt", .key = key, .cond = c}, &m);
    if (out)
        *out = m;
    else
        data_obj_meta_free(&m);
    return s;
}

static char *get_body(store_t *st, const char *key)
{
    size_t n;
    wh_status_t s;
    char *b = th_get_reader(st, "bkt", key, &n, &s);
    if (b)
        b[n] = '\0'; /* th_get_reader leaves room for it */
    return b;
}

static void test_put_conditions(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    data_cond_t c = {.kind = DATA_COND_ABSENT};
    data_obj_meta_t m;
    CHECK(put_cond(st, "k", "one", &c, &m) == WH_OK && !c.failed);
    char e1[64];
    snprintf(e1, sizeof e1, "%.60s", m.etag);
    c = (data_cond_t){.kind = DATA_COND_ABSENT};
    CHECK(put_cond(st, "k", "two", &c, NULL) == WH_ERR_PRECONDITION && c.failed);
    char *b = get_body(st, "k");
    CHECK_STR(b, "one");
    free(b);
    /* If-Match: a wrong ETag fails, the right one (quoted or not, any case) passes. */
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "00000000000000000000000000000000");
    CHECK(put_cond(st, "k", "two", &c, NULL) == WH_ERR_PRECONDITION && c.failed);
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "\"%s\"", e1);
    CHECK(put_cond(st, "k", "two", &c, NULL) == WH_OK && !c.failed);
    b = get_body(st, "k");
    CHECK_STR(b, "two");
    free(b);
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "%s", e1);
    CHECK(put_cond(st, "k", "three", &c, NULL) == WH_ERR_PRECONDITION && c.failed);
    /* If-Match on a missing key: NOT_FOUND with failed set; nothing is stored. */
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "%s", e1);
    CHECK(put_cond(st, "nokey", "x", &c, NULL) == WH_ERR_NOT_FOUND && c.failed);
    wh_status_t s;
    size_t n;
    CHECK(th_get_reader(st, "bkt", "nokey", &n, &s) == NULL && s == WH_ERR_NOT_FOUND);
    /* A missing bucket is NOT_FOUND without failed. */
    c = (data_cond_t){.kind = DATA_COND_ABSENT};
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    memset(&m, 0, sizeof m);
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "nob", .key = "k", .cond = &c},
                              &m) == WH_ERR_NOT_FOUND &&
          !c.failed);
    data_obj_meta_free(&m);
    store_close(st);
    th_rmdir(dir);
}

typedef struct {
    store_t *st;
    pthread_barrier_t *bar;
    int id, round;
    wh_status_t res;
    bool failed;
} racer_t;

static void *racer(void *arg)
{
    racer_t *r = arg;
    char key[32], body[32];
    snprintf(key, sizeof key, "race%d", r->round);
    snprintf(body, sizeof body, "writer %d", r->id);
    data_cond_t c = {.kind = DATA_COND_ABSENT};
    store_writer_t *w = NULL;
    r->res = store_writer_open(r->st, &w);
    if (r->res == WH_OK)
        r->res = store_writer_write(w, body, strlen(body));
    pthread_barrier_wait(r->bar);
    if (r->res == WH_OK) {
        data_obj_meta_t m;
        memset(&m, 0, sizeof m);
        r->res = store_writer_commit(
            w, &(store_commit_args_t){.bucket = "bkt", .key = key, .cond = &c}, &m);
        data_obj_meta_free(&m);
    } else {
        store_writer_abort(w);
    }
    r->failed = c.failed;
    return NULL;
}

static void test_race(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    int bad_rounds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, WRITERS);
        racer_t rs[WRITERS];
        pthread_t th[WRITERS];
        for (int i = 0; i < WRITERS; i++) {
            rs[i] = (racer_t){.st = st, .bar = &bar, .id = i, .round = round};
            pthread_create(&th[i], NULL, racer, &rs[i]);
        }
        int wins = 0, lost = 0, winner = -1;
        for (int i = 0; i < WRITERS; i++) {
            pthread_join(th[i], NULL);
            if (rs[i].res == WH_OK) {
                wins++;
                winner = i;
            } else if (rs[i].res == WH_ERR_PRECONDITION && rs[i].failed) {
                lost++;
            }
        }
        pthread_barrier_destroy(&bar);
        char key[32], want[32];
        snprintf(key, sizeof key, "race%d", round);
        snprintf(want, sizeof want, "writer %d", winner);
        char *b = get_body(st, key);
        if (wins != 1 || lost != WRITERS - 1 || !b || strcmp(b, want) != 0) {
            fprintf(stderr, "round %d: %d winners, %d refused, stored \"%s\"\n", round, wins, lost,
                    b ? b : "(none)");
            bad_rounds++;
        }
        free(b);
    }
    CHECK(bad_rounds == 0);
    store_close(st);
    th_rmdir(dir);
}

static wh_status_t mpu_two_parts(store_t *st, const char *key, char fill, char uid[65],
                                 char etags[2][33])
{
    CHECK(store_mpu_create(st, "bkt", key, NULL, uid) == WH_OK);
    size_t n = 5 << 20;
    char *big = malloc(n);
    memset(big, fill, n);
    for (uint32_t p = 1; p <= 2; p++) {
        store_writer_t *w = NULL;
        CHECK(store_writer_open(st, &w) == WH_OK);
        CHECK(store_writer_write(w, big, p == 1 ? n : 3) == WH_OK);
        CHECK(store_mpu_part_commit(st, "bkt", key, uid, p, w, etags[p - 1]) == WH_OK);
    }
    free(big);
    return WH_OK;
}

static void test_complete_conditions(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    CHECK(th_put(st, "bkt", "mp", "old", 3, NULL) == WH_OK);
    char uid[65], etags[2][33];
    mpu_two_parts(st, "mp", 'a', uid, etags);
    store_complete_part_t cp[2] = {{1, etags[0]}, {2, etags[1]}};
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int bad = 0;
    data_cond_t c = {.kind = DATA_COND_ABSENT};
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "bkt", .key = "mp", .upload_id = uid, .parts = cp, .n = 2, .cond = &c},
              &m, &bad) == WH_ERR_PRECONDITION &&
          c.failed);
    /* The upload is still there, and the old object too. */
    CHECK(store_mpu_check(st, "bkt", "mp", uid) == WH_OK);
    char *b = get_body(st, "mp");
    CHECK_STR(b, "old");
    free(b);
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "%s", "e7d4a5e45e2e1d81b29fa3ac2d3d6ee5");
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "bkt", .key = "mp", .upload_id = uid, .parts = cp, .n = 2, .cond = &c},
              &m, &bad) == WH_ERR_PRECONDITION &&
          c.failed);
    data_obj_meta_t om;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "bkt", .key = "mp"}, &om, NULL) ==
          WH_OK);
    c = (data_cond_t){.kind = DATA_COND_MATCH};
    snprintf(c.etag, sizeof c.etag, "%s", om.etag);
    data_obj_meta_free(&om);
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "bkt", .key = "mp", .upload_id = uid, .parts = cp, .n = 2, .cond = &c},
              &m, &bad) == WH_OK);
    data_obj_meta_free(&m);
    CHECK(store_mpu_check(st, "bkt", "mp", uid) == WH_ERR_NOT_FOUND);
    store_close(st);
    th_rmdir(dir);
}

static void test_delete_conditions(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "bkt"}) == WH_OK);
    data_obj_meta_t m;
    CHECK(put_cond(st, "k", "12345", NULL, &m) == WH_OK);
    char e1[80], q1[84];
    snprintf(e1, sizeof e1, "%s", m.etag);
    snprintf(q1, sizeof q1, "\"%s\"", m.etag);
    time_t mt = m.mtime;
    data_obj_meta_free(&m);
    /* Another ETag, size or time: PRECONDITION with why, and the object stays. */
    data_del_cond_t c = {.if_match = "\"0123456789abcdef0123456789abcdef\""};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "k", .cond = &c},
                              NULL) == WH_ERR_PRECONDITION);
    CHECK(c.failed == DATA_DCOND_ETAG && strcmp(c.etag, e1) == 0);
    c = (data_del_cond_t){.if_match = q1, .has_size = true, .size = 4};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "k", .cond = &c},
                              NULL) == WH_ERR_PRECONDITION);
    CHECK(c.failed == DATA_DCOND_SIZE && c.got_size == 5);
    c = (data_del_cond_t){.has_mtime = true, .mtime = mt - 100};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "k", .cond = &c},
                              NULL) == WH_ERR_PRECONDITION);
    CHECK(c.failed == DATA_DCOND_MTIME);
    char *b = get_body(st, "k");
    CHECK_STR(b, "12345");
    free(b);
    /* If-Match on a missing key: NOT_FOUND with failed set (a plain delete's NOT_FOUND has none).
     */
    c = (data_del_cond_t){.if_match = "*"};
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = "bkt", .key = "none", .cond = &c},
                              NULL) == WH_ERR_NOT_FOUND);
    CHECK(c.failed == DATA_DCOND_MISSING);
    /* The size condition holds for a missing key. */
    c = (data_del_cond_t){.has_size = true, .size = 1};
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = "bkt", .key = "none", .cond = &c},
                              NULL) == WH_OK &&
          !c.failed);
    /* Everything right (unquoted, in a list): deleted. */
    char list[200];
    snprintf(list, sizeof list, "\"abc\", %s", e1);
    c = (data_del_cond_t){
        .if_match = list, .has_size = true, .size = 5, .has_mtime = true, .mtime = mt};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "k", .cond = &c},
                              NULL) == WH_OK &&
          !c.failed);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "bkt", .key = "k"}, NULL, NULL) ==
          WH_ERR_NOT_FOUND);
    /* Versioned: the condition is the named version's; a delete marker is no object. */
    CHECK(store_bucket_versioning_set(st, "bkt", DATA_VERSIONING_ENABLED) == WH_OK);
    data_obj_meta_t v1, v2;
    CHECK(put_cond(st, "v", "one", NULL, &v1) == WH_OK);
    CHECK(put_cond(st, "v", "two", NULL, &v2) == WH_OK);
    data_del_result_t res;
    c = (data_del_cond_t){.if_match = v1.etag};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "v", .cond = &c},
                              &res) == WH_ERR_PRECONDITION);
    c = (data_del_cond_t){.if_match = v2.etag};
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = "bkt", .key = "v", .version_id = v1.version_id, .cond = &c},
              &res) == WH_ERR_PRECONDITION);
    c = (data_del_cond_t){.if_match = v2.etag};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "v", .cond = &c},
                              &res) == WH_OK);
    CHECK(res.delete_marker);
    char dm[DATA_VERSION_ID_MAX];
    snprintf(dm, sizeof dm, "%s", res.version_id);
    c = (data_del_cond_t){.if_match = "*"};
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "bkt", .key = "v", .cond = &c},
                              &res) == WH_ERR_NOT_FOUND);
    CHECK(c.failed == DATA_DCOND_MISSING && c.delete_marker);
    c = (data_del_cond_t){.if_match = "*"};
    CHECK(store_object_delete(
              st, &(store_delete_args_t){.bucket = "bkt", .key = "v", .version_id = dm, .cond = &c},
              &res) == WH_ERR_NOT_FOUND);
    c = (data_del_cond_t){.if_match = v1.etag};
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = "bkt", .key = "v", .version_id = v1.version_id, .cond = &c},
              &res) == WH_OK);
    CHECK(strcmp(res.version_id, v1.version_id) == 0);
    data_obj_meta_t g;
    CHECK(store_object_open(
              st, &(store_read_args_t){.bucket = "bkt", .key = "v", .version_id = v2.version_id},
              &g, NULL) == WH_OK);
    data_obj_meta_free(&g);
    data_obj_meta_free(&v1);
    data_obj_meta_free(&v2);
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_put_conditions);
    RUN(test_race);
    RUN(test_complete_conditions);
    RUN(test_delete_conditions);
    return check_done();
}
