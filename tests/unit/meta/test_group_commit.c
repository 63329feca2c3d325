/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the SQLite table's group commit (sq_write_group, meta_sqlite.c): writes that queue
 * while a commit is in progress commit together in one transaction, a write whose check fails
 * rolls back alone, and every write gets its own answer. SQLite only (the test reaches into the
 * backend's queue); under PostgreSQL it is a skip. */
#include "base/log.h"
#include "helpers.h"
#include "meta/meta.h"
#include "meta_sqlite/meta_sqlite_int.h"

#include <pthread.h>
#include <time.h>

typedef struct {
    meta_t *m;
    char key[32];
    data_cond_kind_t cond;
    char etag[40];
    wh_status_t st;
    bool failed;
} put_job_t;

static void *put_thread(void *arg)
{
    put_job_t *j = arg;
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 5;
    om.mtime = 1700000000;
    snprintf(om.etag, sizeof om.etag, "%s", j->etag);
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    snprintf(ref.id, sizeof ref.id, "%032x", (unsigned)(uintptr_t)j & 0xffffff);
    data_cond_t c = {.kind = j->cond, .etag = "", .failed = false};
    j->st = meta_object_put(j->m, "b", j->key, strlen(j->key), &om, &ref, &old,
                            j->cond == DATA_COND_NONE ? NULL : &c);
    j->failed = c.failed;
    data_ref_clear(&old);
    return NULL;
}

static size_t queued(sq_meta_t *sm)
{
    size_t n = 0;
    pthread_mutex_lock(&sm->group.mu);
    for (sq_gc_entry_t *e = sm->group.head; e; e = e->next)
        n++;
    pthread_mutex_unlock(&sm->group.mu);
    return n;
}

static bool leading(sq_meta_t *sm)
{
    pthread_mutex_lock(&sm->group.mu);
    bool l = sm->group.leading;
    pthread_mutex_unlock(&sm->group.mu);
    return l;
}

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static bool wait_for(bool (*pred)(sq_meta_t *, size_t), sq_meta_t *sm, size_t arg)
{
    for (int i = 0; i < 2000; i++) { /* 10 s */
        if (pred(sm, arg))
            return true;
        nap_ms(5);
    }
    return false;
}

static bool is_leading(sq_meta_t *sm, size_t unused)
{
    (void)unused;
    return leading(sm);
}

static bool has_queued(sq_meta_t *sm, size_t n)
{
    return queued(sm) == n;
}

static void get_etag(meta_t *m, const char *key, char *etag, size_t cap, wh_status_t *st)
{
    data_obj_meta_t om;
    data_ref_t ref;
    memset(&ref, 0, sizeof ref);
    *st = meta_object_get(m, "b", key, strlen(key), &om, &ref);
    etag[0] = '\0';
    if (*st == WH_OK) {
        snprintf(etag, cap, "%s", om.etag);
        data_obj_meta_free(&om);
    }
    data_ref_clear(&ref);
}

/* Seven writes queue behind a commit held open; they commit as one batch, and the one whose
 * If-None-Match fails is the only one not stored. */
static void test_batch_with_a_failing_write(void)
{
    char *dir = th_mkdtemp();
    char path[256];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    meta_t *m = NULL;
    CHECK(meta_sqlite_open(path, &m) == WH_OK);
    if (!m)
        return;
    sq_meta_t *sm = SQ(m);
    CHECK(meta_bucket_create(m, "b", 1700000000, "", NULL) == WH_OK);

    put_job_t pre = {.m = m, .key = "exists", .cond = DATA_COND_NONE, .etag = "e-orig"};
    put_thread(&pre);
    CHECK(pre.st == WH_OK);
    uint64_t b0 = sm->group.batches, w0 = sm->group.writes;

    put_job_t jobs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].m = m;
        snprintf(jobs[i].key, sizeof jobs[i].key, "k%d", i);
        snprintf(jobs[i].etag, sizeof jobs[i].etag, "e%d", i);
    }
    /* Job 3 writes "exists" only if it is absent: it is not, so its check fails. */
    snprintf(jobs[3].key, sizeof jobs[3].key, "exists");
    jobs[3].cond = DATA_COND_ABSENT;

    /* The writer connection held: the first write leads a batch of one and waits for it. */
    pthread_mutex_lock(&sm->wr.lock);
    CHECK(pthread_create(&th[0], NULL, put_thread, &jobs[0]) == 0);
    CHECK(wait_for(is_leading, sm, 0));
    for (int i = 1; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, put_thread, &jobs[i]) == 0);
    CHECK(wait_for(has_queued, sm, 7));
    pthread_mutex_unlock(&sm->wr.lock);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);

    CHECK_EQ_U64(sm->group.batches - b0, 2); /* the first alone, then the seven together */
    CHECK_EQ_U64(sm->group.writes - w0, 8);
    for (int i = 0; i < 8; i++) {
        char etag[80];
        wh_status_t st;
        get_etag(m, jobs[i].key, etag, sizeof etag, &st);
        if (i == 3) {
            CHECK(jobs[i].st == WH_ERR_PRECONDITION);
            CHECK(jobs[i].failed);
            CHECK(st == WH_OK);
            CHECK(strcmp(etag, "e-orig") == 0); /* untouched */
        } else {
            CHECK(jobs[i].st == WH_OK);
            CHECK(st == WH_OK);
            CHECK(strcmp(etag, jobs[i].etag) == 0);
        }
    }
    meta_close(m);

    /* Durable: reopened, the batch is there. */
    CHECK(meta_sqlite_open(path, &m) == WH_OK);
    if (m) {
        char etag[80];
        wh_status_t st;
        get_etag(m, "k7", etag, sizeof etag, &st);
        CHECK(st == WH_OK && strcmp(etag, "e7") == 0);
        meta_close(m);
    }
    th_rmdir(dir);
}

/* Many writers at once, no holding: every write is stored once with its own value. */
static void test_many_writers(void)
{
    char *dir = th_mkdtemp();
    char path[256];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    meta_t *m = NULL;
    CHECK(meta_sqlite_open(path, &m) == WH_OK);
    if (!m)
        return;
    CHECK(meta_bucket_create(m, "b", 1700000000, "", NULL) == WH_OK);
    enum { N = 64 };
    put_job_t jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].m = m;
        snprintf(jobs[i].key, sizeof jobs[i].key, "many/%02d", i % 48); /* some overwrite */
        snprintf(jobs[i].etag, sizeof jobs[i].etag, "v%d", i);
        jobs[i].cond = i >= 48 ? DATA_COND_ABSENT : DATA_COND_NONE;
    }
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&th[i], NULL, put_thread, &jobs[i]) == 0);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    /* Of each pair on one key, the unconditional write always succeeds; the If-None-Match
     * one succeeds only if it came first, and then the other replaced it. */
    for (int k = 0; k < 16; k++) {
        put_job_t *plain = &jobs[k], *cond = &jobs[k + 48];
        char etag[80];
        wh_status_t st;
        get_etag(m, plain->key, etag, sizeof etag, &st);
        CHECK(plain->st == WH_OK);
        CHECK(st == WH_OK);
        if (cond->st == WH_OK)
            CHECK(strcmp(etag, plain->etag) == 0 || strcmp(etag, cond->etag) == 0);
        else
            CHECK(cond->st == WH_ERR_PRECONDITION && strcmp(etag, plain->etag) == 0);
    }
    for (int k = 16; k < 48; k++) {
        char etag[80];
        wh_status_t st;
        get_etag(m, jobs[k].key, etag, sizeof etag, &st);
        CHECK(jobs[k].st == WH_OK && st == WH_OK && strcmp(etag, jobs[k].etag) == 0);
    }
    meta_close(m);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    const char *pg = getenv("WHARF_TEST_PG_URL");
    if (pg && *pg)
        return 77; /* the SQLite backend's own mechanism */
    RUN(test_batch_with_a_failing_write);
    RUN(test_many_writers);
    return check_done();
}
