/* SPDX-License-Identifier: Apache-2.0 */
/* Versions in the store: versioning states, archive/replace/remove on commit and delete, the
 * null version, delete markers, reads by version id, the version listing (paging, prefix,
 * delimiter) against a reference, tags per version, and that only a removed version's bytes
 * are released; Object Lock: a version's retention and legal hold kept by the metadata
 * transaction of every delete or replace that would destroy it, and the rules of changing it.
 * Runs on SQLite and (as unit/store/test_versions/pg) on PostgreSQL. */
#include "base/log.h"
#include "helpers.h"

#define BKT "vbkt"

static char *get_version(store_t *st, const char *key, const char *vid, wh_status_t *s,
                         data_obj_meta_t *mo)
{
    data_obj_meta_t m;
    data_reader_t *r = NULL;
    *s = store_object_reader(st, &(store_read_args_t){.bucket = BKT, .key = key, .version_id = vid},
                             &m, &r);
    if (mo)
        *mo = m;
    if (*s != WH_OK)
        return NULL;
    size_t n = (size_t)store_reader_size(r);
    char *b = malloc(n + 1);
    *s = store_reader_pread(r, b, n, 0);
    b[n] = '\0';
    store_reader_close(r);
    if (!mo)
        data_obj_meta_free(&m);
    return b;
}

static void put(store_t *st, const char *key, const char *body, char vid[DATA_VERSION_ID_MAX])
{
    data_obj_meta_t m;
    CHECK(th_put(st, BKT, key, body, strlen(body), &m) == WH_OK);
    if (vid)
        snprintf(vid, DATA_VERSION_ID_MAX, "%s", m.version_id);
    data_obj_meta_free(&m);
}

static void check_body(store_t *st, const char *key, const char *vid, const char *want)
{
    wh_status_t s;
    char *b = get_version(st, key, vid, &s, NULL);
    CHECK(s == WH_OK);
    CHECK_STR(b, want);
    free(b);
}

static void test_states_and_versions(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = BKT}) == WH_OK);
    data_versioning_t v;
    CHECK(store_bucket_versioning_get(st, BKT, &v) == WH_OK && v == DATA_VERSIONING_OFF);
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_OFF) == WH_ERR_INVALID);
    CHECK(store_bucket_versioning_set(st, "nobkt", DATA_VERSIONING_ENABLED) == WH_ERR_NOT_FOUND);
    char v0[DATA_VERSION_ID_MAX], v1[DATA_VERSION_ID_MAX], v2[DATA_VERSION_ID_MAX];
    put(st, "k", "unversioned", v0);
    CHECK_STR(v0, "null");
    int files0 = th_count_files(dir, "objects");
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_ENABLED) == WH_OK);
    CHECK(store_bucket_versioning_get(st, BKT, &v) == WH_OK && v == DATA_VERSIONING_ENABLED);
    put(st, "k", "one", v1);
    put(st, "k", "two", v2);
    CHECK(store_version_id_valid(v1) && store_version_id_valid(v2) && strcmp(v1, "null"));
    CHECK(strcmp(v2, v1) < 0);                           /* newest sorts first */
    CHECK(th_count_files(dir, "objects") == files0 + 2); /* nothing released */
    check_body(st, "k", NULL, "two");
    check_body(st, "k", v1, "one");
    check_body(st, "k", "null", "unversioned");
    wh_status_t s;
    CHECK(get_version(st, "k", "0123456789abcdef0123456789abcdef", &s, NULL) == NULL &&
          s == WH_ERR_NOT_FOUND);

    /* A delete marker: reads answer NOT_FOUND naming it; the versions stay. */
    data_del_result_t res;
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = BKT, .key = "k"}, &res) ==
          WH_OK);
    CHECK(res.delete_marker && store_version_id_valid(res.version_id));
    char dm[DATA_VERSION_ID_MAX];
    snprintf(dm, sizeof dm, "%s", res.version_id);
    data_obj_meta_t m;
    CHECK(get_version(st, "k", NULL, &s, &m) == NULL && s == WH_ERR_NOT_FOUND);
    CHECK(m.delete_marker);
    CHECK_STR(m.version_id, dm);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "k", .version_id = dm},
                            &m, NULL) == WH_ERR_NOT_FOUND &&
          m.delete_marker);
    check_body(st, "k", v1, "one");
    CHECK(th_count_files(dir, "objects") == files0 + 2);
    data_list_result_t lr;
    data_list_params_t lp = {.max_keys = 100};
    CHECK(store_object_list(st, BKT, &lp, &lr) == WH_OK && lr.n_entries == 0);
    data_list_result_free(&lr);
    CHECK(store_bucket_delete(st, BKT) == WH_ERR_NOT_EMPTY);

    /* Removing the marker brings "two" back; removing v1 releases its bytes only. */
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = dm},
                              &res) == WH_OK &&
          res.delete_marker);
    check_body(st, "k", NULL, "two");
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = v1},
                              &res) == WH_OK &&
          !res.delete_marker);
    CHECK_STR(res.version_id, v1);
    CHECK(th_count_files(dir, "objects") == files0 + 1);
    CHECK(get_version(st, "k", v1, &s, NULL) == NULL && s == WH_ERR_NOT_FOUND);
    /* A version that is not there: nothing happens. */
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = v1},
                              &res) == WH_OK &&
          !res.version_id[0]);

    /* Suspended: a PUT replaces the null version (its bytes go), v2 stays. */
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_SUSPENDED) == WH_OK);
    char vs[DATA_VERSION_ID_MAX];
    put(st, "k", "suspended", vs);
    CHECK_STR(vs, "null");
    CHECK(th_count_files(dir, "objects") == files0 + 1);
    check_body(st, "k", "null", "suspended");
    check_body(st, "k", v2, "two");
    /* Deleting the current version makes the next newest current. */
    CHECK(store_object_delete(
              st, &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = "null"}, &res) ==
          WH_OK);
    check_body(st, "k", NULL, "two");
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = v2},
                              &res) == WH_OK);
    CHECK(get_version(st, "k", NULL, &s, NULL) == NULL && s == WH_ERR_NOT_FOUND);
    CHECK(th_count_files(dir, "objects") == files0 - 1);
    CHECK(store_bucket_delete(st, BKT) == WH_OK);
    store_close(st);
    th_rmdir(dir);
}

static void test_tags_and_parts(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = BKT}) == WH_OK);
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_ENABLED) == WH_OK);
    char v1[DATA_VERSION_ID_MAX], v2[DATA_VERSION_ID_MAX];
    put(st, "t", "a", v1);
    put(st, "t", "b", v2);
    CHECK(store_object_tags_set(st, BKT, "t", v1, "old=1") == WH_OK);
    CHECK(store_object_tags_set(st, BKT, "t", NULL, "cur=2") == WH_OK);
    data_obj_meta_t m;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "t", .version_id = v1},
                            &m, NULL) == WH_OK);
    CHECK_STR(m.tags, "old=1");
    data_obj_meta_free(&m);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "t", .version_id = v2},
                            &m, NULL) == WH_OK);
    CHECK_STR(m.tags, "cur=2");
    data_obj_meta_free(&m);
    CHECK(store_object_tags_set(st, BKT, "t", v1, NULL) == WH_OK);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "t", .version_id = v1},
                            &m, NULL) == WH_OK &&
          !m.tags);
    data_obj_meta_free(&m);
    CHECK(store_object_tags_set(st, BKT, "t", "0123456789abcdef0123456789abcdef", "x=1") ==
          WH_ERR_NOT_FOUND);
    CHECK(store_object_tags_set(st, BKT, "none", NULL, "x=1") == WH_ERR_NOT_FOUND);
    /* A completed multipart object records its part sizes. */
    char uid[65], e1[33], e2[33];
    CHECK(store_mpu_create(st, BKT, "mp", NULL, uid) == WH_OK);
    size_t big = 5 << 20;
    char *buf = calloc(1, big);
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK && store_writer_write(w, buf, big) == WH_OK);
    CHECK(store_mpu_part_commit(st, BKT, "mp", uid, 1, w, e1) == WH_OK);
    CHECK(store_writer_open(st, &w) == WH_OK && store_writer_write(w, buf, 7) == WH_OK);
    CHECK(store_mpu_part_commit(st, BKT, "mp", uid, 2, w, e2) == WH_OK);
    free(buf);
    store_complete_part_t cp[2] = {{1, e1}, {2, e2}};
    int bad = 0;
    CHECK(store_mpu_complete(st,
                             &(store_mpu_complete_args_t){
                                 .bucket = BKT, .key = "mp", .upload_id = uid, .parts = cp, .n = 2},
                             &m, &bad) == WH_OK);
    CHECK(store_version_id_valid(m.version_id) && strcmp(m.version_id, "null") != 0);
    data_obj_meta_free(&m);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "mp"}, &m, NULL) ==
          WH_OK);
    CHECK_STR(m.part_sizes, "5242880,7");
    data_obj_meta_free(&m);
    store_close(st);
    th_rmdir(dir);
}

/* The listing of every version against a reference built from what was written. */
typedef struct {
    char key[16];
    char vid[DATA_VERSION_ID_MAX];
    bool dm;
} ref_row_t;

static void test_listing(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(meta_set_durable(store_meta(st), false) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = BKT}) == WH_OK);
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_ENABLED) == WH_OK);
    static const char *const keys[] = {"a/1", "a/2", "b", "c/x/1", "c/y", "d"};
    ref_row_t want[64];
    size_t nw = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        ref_row_t rows[4];
        size_t nr = 0;
        for (size_t i = 0; i < 1 + k % 3; i++) {
            snprintf(rows[nr].key, sizeof rows[nr].key, "%s", keys[k]);
            put(st, keys[k], "v", rows[nr].vid);
            rows[nr++].dm = false;
        }
        if (k % 2) { /* and a delete marker on top */
            data_del_result_t res;
            CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = BKT, .key = keys[k]},
                                      &res) == WH_OK);
            snprintf(rows[nr].key, sizeof rows[nr].key, "%s", keys[k]);
            snprintf(rows[nr].vid, sizeof rows[nr].vid, "%s", res.version_id);
            rows[nr++].dm = true;
        }
        for (size_t i = nr; i-- > 0;) /* newest first */
            want[nw++] = rows[i];
    }
    for (uint32_t page = 1; page <= 8; page++) {
        size_t got = 0;
        bool order_ok = true;
        char km[64] = "", vm[DATA_VERSION_ID_MAX] = "";
        for (int guard = 0; guard < 100; guard++) {
            data_version_params_t p = {.key_marker = km[0] ? km : NULL,
                                       .version_id_marker = vm[0] ? vm : NULL,
                                       .max_keys = page};
            data_version_result_t r;
            CHECK(store_version_list(st, BKT, &p, &r) == WH_OK);
            CHECK(r.n_entries <= page && r.n_prefixes == 0);
            for (size_t i = 0; i < r.n_entries; i++, got++) {
                const data_version_entry_t *e = &r.entries[i];
                if (got >= nw || strcmp(e->key, want[got].key) ||
                    strcmp(e->version_id, want[got].vid) || e->delete_marker != want[got].dm ||
                    e->latest != (got == 0 || strcmp(want[got - 1].key, e->key) != 0))
                    order_ok = false;
            }
            bool more = r.truncated;
            if (more) {
                snprintf(km, sizeof km, "%s", r.next_key_marker);
                snprintf(vm, sizeof vm, "%s", r.next_version_id_marker);
            }
            data_version_result_free(&r);
            if (!more)
                break;
        }
        CHECK(order_ok);
        CHECK_EQ_U64(got, nw);
    }
    /* Prefix and delimiter. */
    data_version_params_t p = {.delimiter = "/", .max_keys = 1000};
    data_version_result_t r;
    CHECK(store_version_list(st, BKT, &p, &r) == WH_OK);
    CHECK(r.n_prefixes == 2);
    if (r.n_prefixes == 2) {
        CHECK_STR(r.prefixes[0], "a/");
        CHECK_STR(r.prefixes[1], "c/");
    }
    for (size_t i = 0; i < r.n_entries; i++)
        CHECK(strchr(r.entries[i].key, '/') == NULL);
    data_version_result_free(&r);
    p = (data_version_params_t){.prefix = "c/", .delimiter = "/", .max_keys = 1000};
    CHECK(store_version_list(st, BKT, &p, &r) == WH_OK);
    CHECK(r.n_prefixes == 1 && r.n_entries >= 1);
    for (size_t i = 0; i < r.n_entries; i++)
        CHECK_STR(r.entries[i].key, "c/y");
    data_version_result_free(&r);
    store_close(st);
    th_rmdir(dir);
}

/* Commits body as key with the given lock; the new version id into vid. */
static wh_status_t put_locked(store_t *st, const char *key, const char *body, int mode,
                              int64_t until, bool hold, char vid[DATA_VERSION_ID_MAX])
{
    store_writer_t *w = NULL;
    wh_status_t s = store_writer_open(st, &w);
    if (s != WH_OK)
        return s;
    if ((s = store_writer_write(w, body, strlen(body))) != WH_OK) {
        store_writer_abort(w);
        return s;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    m.lock_mode = mode;
    m.lock_until = until;
    m.legal_hold = hold;
    s = store_writer_commit(w, &(store_commit_args_t){.bucket = BKT, .key = key}, &m);
    if (s == WH_OK && vid)
        snprintf(vid, DATA_VERSION_ID_MAX, "%s", m.version_id);
    data_obj_meta_free(&m);
    return s;
}

static void test_object_lock(void)
{
    char *dir = th_mkdtemp();
    store_t *st = NULL;
    CHECK(th_store_open(dir, &st) == WH_OK);
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = BKT}) == WH_OK);
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_ENABLED) == WH_OK);
    int64_t now = (int64_t)time(NULL), later = now + 3600;
    char g[DATA_VERSION_ID_MAX], c[DATA_VERSION_ID_MAX], h[DATA_VERSION_ID_MAX];
    char f[DATA_VERSION_ID_MAX];
    CHECK(put_locked(st, "k", "gov", DATA_LOCK_GOVERNANCE, later, false, g) == WH_OK);
    CHECK(put_locked(st, "k", "comp", DATA_LOCK_COMPLIANCE, later, false, c) == WH_OK);
    CHECK(put_locked(st, "k", "hold", DATA_LOCK_NONE, 0, true, h) == WH_OK);
    CHECK(put_locked(st, "k", "free", DATA_LOCK_NONE, 0, false, f) == WH_OK);
    /* The lock comes back on reads, of older versions too. */
    data_obj_meta_t m;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "k", .version_id = c},
                            &m, NULL) == WH_OK);
    CHECK(m.lock_mode == DATA_LOCK_COMPLIANCE && m.lock_until == later && !m.legal_hold);
    data_obj_meta_free(&m);
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = BKT, .key = "k", .version_id = h},
                            &m, NULL) == WH_OK);
    CHECK(m.lock_mode == DATA_LOCK_NONE && m.legal_hold);
    data_obj_meta_free(&m);
    /* Deletes of a locked version are refused in their transaction, and say why. */
    data_del_result_t res;
    memset(&res, 0, sizeof res);
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = g},
                              &res) == WH_ERR_AUTH);
    CHECK(res.locked == DATA_LOCK_BY_RETENTION && res.lock_mode == DATA_LOCK_GOVERNANCE &&
          res.lock_until == later);
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = BKT, .key = "k", .version_id = c, .bypass = DATA_BYPASS_GOVERNANCE},
              &res) == WH_ERR_AUTH);
    CHECK(res.lock_mode == DATA_LOCK_COMPLIANCE);
    memset(&res, 0, sizeof res);
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = BKT, .key = "k", .version_id = h, .bypass = DATA_BYPASS_GOVERNANCE},
              &res) == WH_ERR_AUTH);
    CHECK(res.locked == DATA_LOCK_BY_HOLD);
    check_body(st, "k", g, "gov");
    check_body(st, "k", c, "comp");
    check_body(st, "k", h, "hold");
    /* A delete without a version id only adds a delete marker; the unlocked one goes. */
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = BKT, .key = "k"}, &res) ==
              WH_OK &&
          res.delete_marker);
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "k", .version_id = f},
                              NULL) == WH_OK);
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = BKT, .key = "k", .version_id = g, .bypass = DATA_BYPASS_GOVERNANCE},
              NULL) == WH_OK);
    /* Changing a lock: COMPLIANCE only longer, GOVERNANCE shorter with the bypass. */
    data_lock_set_t rq = {.set_retention = true,
                          .mode = DATA_LOCK_COMPLIANCE,
                          .until = later - 60,
                          .bypass = true,
                          .now = now};
    CHECK(store_object_lock_set(st, BKT, "k", c, &rq, NULL) == WH_ERR_AUTH);
    rq.mode = DATA_LOCK_GOVERNANCE;
    rq.until = later + 60;
    CHECK(store_object_lock_set(st, BKT, "k", c, &rq, NULL) == WH_ERR_AUTH);
    rq.mode = DATA_LOCK_NONE;
    CHECK(store_object_lock_set(st, BKT, "k", c, &rq, NULL) == WH_ERR_AUTH);
    rq.mode = DATA_LOCK_COMPLIANCE;
    rq.until = later + 60;
    rq.bypass = false;
    memset(&m, 0, sizeof m);
    CHECK(store_object_lock_set(st, BKT, "k", c, &rq, &m) == WH_OK);
    CHECK(m.lock_until == later + 60 && strcmp(m.version_id, c) == 0);
    /* A hold set on an older version keeps it; released, it does not. */
    char o[DATA_VERSION_ID_MAX];
    CHECK(put_locked(st, "o", "old", DATA_LOCK_NONE, 0, false, o) == WH_OK);
    CHECK(put_locked(st, "o", "new", DATA_LOCK_GOVERNANCE, later, false, NULL) == WH_OK);
    data_lock_set_t hold = {.set_hold = true, .hold = true, .now = now};
    CHECK(store_object_lock_set(st, BKT, "o", o, &hold, NULL) == WH_OK);
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "o", .version_id = o},
                              NULL) == WH_ERR_AUTH);
    hold.hold = false;
    CHECK(store_object_lock_set(st, BKT, "o", o, &hold, NULL) == WH_OK);
    /* The current version: GOVERNANCE shortened with the bypass, then it may go. */
    data_lock_set_t gs = {
        .set_retention = true, .mode = DATA_LOCK_GOVERNANCE, .until = now + 1, .now = now};
    CHECK(store_object_lock_set(st, BKT, "o", NULL, &gs, NULL) == WH_ERR_AUTH);
    gs.bypass = true;
    CHECK(store_object_lock_set(st, BKT, "o", NULL, &gs, NULL) == WH_OK);
    CHECK(store_object_delete(st,
                              &(store_delete_args_t){.bucket = BKT, .key = "o", .version_id = o},
                              NULL) == WH_OK);
    /* No such version, a delete marker: NOT_FOUND. */
    CHECK(store_object_lock_set(st, BKT, "o", "0123456789abcdef0123456789abcdef", &hold, NULL) ==
          WH_ERR_NOT_FOUND);
    CHECK(store_object_lock_set(st, BKT, "k", NULL, &hold, NULL) == WH_ERR_NOT_FOUND);
    /* A locked null version (Suspended) is never replaced by a later write. */
    CHECK(store_bucket_versioning_set(st, BKT, DATA_VERSIONING_SUSPENDED) == WH_OK);
    CHECK(put_locked(st, "n", "null one", DATA_LOCK_COMPLIANCE, later, false, NULL) == WH_OK);
    CHECK(put_locked(st, "n", "replacer", DATA_LOCK_NONE, 0, false, NULL) == WH_ERR_AUTH);
    check_body(st, "n", "null", "null one");
    /* Every lock passed over only to undo a write never acknowledged. */
    CHECK(store_object_delete(
              st,
              &(store_delete_args_t){
                  .bucket = BKT, .key = "n", .version_id = "null", .bypass = DATA_BYPASS_ALL},
              NULL) == WH_OK);
    /* Object lock only on a bucket whose versioning is Enabled, which then stays so. */
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "lkb2"}) == WH_OK);
    CHECK(store_bucket_attr_set(st, "lkb2", DATA_BATTR_OBJECT_LOCK, "x") == WH_ERR_NOT_FOUND);
    CHECK(store_bucket_versioning_set(st, "lkb2", DATA_VERSIONING_ENABLED) == WH_OK);
    CHECK(store_bucket_attr_set(st, "lkb2", DATA_BATTR_OBJECT_LOCK, "x") == WH_OK);
    CHECK(store_bucket_versioning_set(st, "lkb2", DATA_VERSIONING_SUSPENDED) ==
          WH_ERR_PRECONDITION);
    CHECK(store_bucket_versioning_set(st, "lkb2", DATA_VERSIONING_ENABLED) == WH_OK);
    data_versioning_t vs;
    CHECK(store_bucket_versioning_get(st, "lkb2", &vs) == WH_OK && vs == DATA_VERSIONING_ENABLED);
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_states_and_versions);
    RUN(test_tags_and_parts);
    RUN(test_listing);
    RUN(test_object_lock);
    return check_done();
}
