/* SPDX-License-Identifier: Apache-2.0 */
/* The lifecycle worker: a thread of the S3 front that, every period, applies the enabled
 * rules of each bucket's LifecycleConfiguration (s3/lifecycle.h) with the store's own
 * operations, as S3 does: a current version past Expiration's Days or Date is deleted (in a
 * versioned bucket that makes a delete marker), a noncurrent version NoncurrentDays after it
 * became noncurrent is removed unless it is one of the NewerNoncurrentVersions newest, a
 * delete marker that is a key's only version is removed (ExpiredObjectDeleteMarker, or Days),
 * and multipart uploads older than DaysAfterInitiation are aborted.
 *
 * Work is bounded: at most LC_SCAN_MAX versions looked at and LC_ACT_MAX actions taken per
 * bucket per pass; a bucket's scan then goes on from its cursor on the next pass. Ages are
 * counted from the version's time: due at that time plus the rule's days, rounded up to the
 * next midnight UTC as S3 does (s3_lc_due; not rounded under the test setting
 * WHARF_LIFECYCLE_DAY_SECONDS). The x-amz-expiration header announces that time
 * (lifecycle_hdr.c). On a cluster only the gateway holding the maintenance lock
 * (META_LOCK_MAINTENANCE, the one of garbage collection) runs passes. */
#include "s3ctl/s3ctl.h"
#include "base/log.h"
#include "s3/lifecycle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "lifecycle"

enum { LC_SCAN_MAX = 10000, LC_ACT_MAX = 1000, LC_PAGE = 1000 };

typedef struct lc_cursor {
    char bucket[64];
    char *key_marker; /* the last key fully looked at; NULL: from the start */
} lc_cursor_t;

struct s3h_lc {
    store_t *st;
    const _Atomic unsigned *period_src; /* the front's setting (a SIGHUP changes it); 0: default */
    int64_t day_s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, leader_logged;
    lc_cursor_t *cur;
    size_t ncur;
    _Atomic uint64_t passes, objects, versions, markers, uploads, errors, locked;
};

static bool stopping(s3h_lc_t *lc)
{
    pthread_mutex_lock(&lc->mu);
    bool s = lc->stop;
    pthread_mutex_unlock(&lc->mu);
    return s;
}

static lc_cursor_t *cursor(s3h_lc_t *lc, const char *bucket)
{
    for (size_t i = 0; i < lc->ncur; i++)
        if (strcmp(lc->cur[i].bucket, bucket) == 0)
            return &lc->cur[i];
    lc_cursor_t *c = realloc(lc->cur, (lc->ncur + 1) * sizeof *c);
    if (!c)
        return NULL;
    lc->cur = c;
    c = &lc->cur[lc->ncur++];
    memset(c, 0, sizeof *c);
    snprintf(c->bucket, sizeof c->bucket, "%s", bucket);
    return c;
}

static void cursor_set(lc_cursor_t *c, const char *key)
{
    free(c->key_marker);
    c->key_marker = key ? strdup(key) : NULL; /* on no memory: from the start again */
}

/* One bucket's pass state. */
typedef struct {
    s3h_lc_t *lc;
    const char *bucket;
    const s3_lc_t *cfg;
    int64_t now;
    size_t acts;
    /* The key being looked at: */
    char *key;
    size_t nver;         /* versions of it seen */
    size_t nnoncur;      /* noncurrent ones seen */
    int64_t newer_mtime; /* time of the version just newer than the next one */
    bool marker_latest;  /* its current version is a delete marker */
    char marker_vid[DATA_VERSION_ID_MAX];
    int64_t marker_mtime;
} lc_pass_t;

static bool aged(const lc_pass_t *p, int64_t since, int64_t days)
{
    return days > 0 && p->now >= s3_lc_due(since, days, p->lc->day_s);
}

/* Whether rule r's filter takes version e; its tags are read only for a rule naming some. */
static bool rule_takes(lc_pass_t *p, const s3_lc_rule_t *r, const data_version_entry_t *e)
{
    size_t kl = strlen(e->key);
    if (!s3_lc_rule_needs_tags(r))
        return s3_lc_rule_matches(r, e->key, kl, e->size, NULL);
    if (e->delete_marker)
        return false;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    if (store_object_open(
            p->lc->st,
            &(store_read_args_t){.bucket = p->bucket, .key = e->key, .version_id = e->version_id},
            &m, NULL) != WH_OK)
        return false; /* gone meanwhile, or unreadable: leave it */
    bool ok = s3_lc_rule_matches(r, e->key, kl, e->size, m.tags);
    data_obj_meta_free(&m);
    return ok;
}

static void act_delete(lc_pass_t *p, const char *key, const char *vid, _Atomic uint64_t *ctr,
                       const char *why)
{
    data_del_result_t res;
    memset(&res, 0, sizeof res);
    wh_status_t s = store_object_delete(
        p->lc->st, &(store_delete_args_t){.bucket = p->bucket, .key = key, .version_id = vid},
        &res);
    p->acts++;
    if (s == WH_ERR_AUTH && res.locked) {
        /* A retention or legal hold keeps the version (read in the delete's transaction): it
         * stays, as S3's lifecycle leaves locked versions, and a later pass tries again. */
        atomic_fetch_add(&p->lc->locked, 1);
        wh_debug(MOD, "locked, not expired: bucket=%s key=%s version=%s", p->bucket, key,
                 vid ? vid : "current");
        return;
    }
    if (s != WH_OK) {
        atomic_fetch_add(&p->lc->errors, 1);
        wh_warn(MOD, "cannot %s bucket=%s key=%s version=%s: %s", why, p->bucket, key,
                vid ? vid : "current", wh_status_str(s));
        return;
    }
    atomic_fetch_add(ctr, 1);
    wh_debug(MOD, "%s bucket=%s key=%s version=%s", why, p->bucket, key, vid ? vid : "current");
}

/* The end of a key's versions: a delete marker that is its only version may go. */
static void key_end(lc_pass_t *p)
{
    if (p->key && p->marker_latest && p->nver == 1) {
        size_t kl = strlen(p->key);
        for (size_t i = 0; i < p->cfg->n; i++) {
            const s3_lc_rule_t *r = &p->cfg->rules[i];
            if (!r->enabled || r->ntags || !(r->exp_marker || r->exp_days))
                continue;
            if (!s3_lc_rule_matches(r, p->key, kl, 0, NULL))
                continue;
            if (r->exp_marker || aged(p, p->marker_mtime, r->exp_days)) {
                act_delete(p, p->key, p->marker_vid, &p->lc->markers,
                           "remove the expired delete marker");
                break;
            }
        }
    }
    free(p->key);
    p->key = NULL;
    p->nver = p->nnoncur = 0;
    p->marker_latest = false;
}

static void entry(lc_pass_t *p, const data_version_entry_t *e)
{
    if (!p->key || strcmp(p->key, e->key) != 0) {
        key_end(p);
        p->key = strdup(e->key);
        p->newer_mtime = 0;
    }
    p->nver++;
    int64_t mtime = (int64_t)e->mtime;
    if (e->latest) {
        if (e->delete_marker) {
            p->marker_latest = true;
            snprintf(p->marker_vid, sizeof p->marker_vid, "%s", e->version_id);
            p->marker_mtime = mtime;
        } else {
            for (size_t i = 0; i < p->cfg->n; i++) {
                const s3_lc_rule_t *r = &p->cfg->rules[i];
                if (!r->enabled || !(r->exp_days || r->exp_date >= 0))
                    continue;
                bool due =
                    aged(p, mtime, r->exp_days) || (r->exp_date >= 0 && p->now >= r->exp_date);
                if (due && rule_takes(p, r, e)) {
                    act_delete(p, e->key, NULL, &p->lc->objects, "expire the object");
                    break;
                }
            }
        }
    } else {
        /* Noncurrent since its successor was written. */
        int64_t since = p->newer_mtime ? p->newer_mtime : mtime;
        size_t newer = p->nnoncur++;
        for (size_t i = 0; i < p->cfg->n; i++) {
            const s3_lc_rule_t *r = &p->cfg->rules[i];
            if (!r->enabled || !r->nc_days || newer < (size_t)r->nc_newer)
                continue;
            if (aged(p, since, r->nc_days) && rule_takes(p, r, e)) {
                act_delete(p, e->key, e->version_id, &p->lc->versions,
                           "expire the noncurrent version");
                break;
            }
        }
    }
    p->newer_mtime = mtime;
}

static void uploads_pass(lc_pass_t *p)
{
    bool any = false;
    for (size_t i = 0; i < p->cfg->n; i++)
        any |= p->cfg->rules[i].enabled && p->cfg->rules[i].abort_days;
    if (!any)
        return;
    data_upload_info_t *u = NULL;
    size_t n = 0;
    if (store_mpu_list_uploads(p->lc->st, p->bucket, NULL, NULL, &u, &n) != WH_OK)
        return;
    for (size_t j = 0; j < n && p->acts < LC_ACT_MAX && !stopping(p->lc); j++) {
        for (size_t i = 0; i < p->cfg->n; i++) {
            const s3_lc_rule_t *r = &p->cfg->rules[i];
            if (!r->enabled || !r->abort_days ||
                !s3_lc_rule_matches(r, u[j].key, strlen(u[j].key), 0, NULL) ||
                !aged(p, (int64_t)u[j].initiated, r->abort_days))
                continue;
            wh_status_t s = store_mpu_abort(p->lc->st, p->bucket, u[j].key, u[j].upload_id);
            p->acts++;
            if (s == WH_OK || s == WH_ERR_NOT_FOUND) {
                if (s == WH_OK)
                    atomic_fetch_add(&p->lc->uploads, 1);
            } else {
                atomic_fetch_add(&p->lc->errors, 1);
                wh_warn(MOD, "cannot abort the upload bucket=%s key=%s upload=%s: %s", p->bucket,
                        u[j].key, u[j].upload_id, wh_status_str(s));
            }
            break;
        }
    }
    data_upload_info_free(u, n);
}

static void bucket_pass(s3h_lc_t *lc, const char *bucket)
{
    char *doc = NULL;
    if (store_bucket_attr_get(lc->st, bucket, DATA_BATTR_LIFECYCLE, &doc) != WH_OK || !doc)
        return;
    s3_lc_t cfg;
    char msg[256];
    if (s3_lc_parse(doc, strlen(doc), &cfg, msg, sizeof msg) != S3_OK) {
        wh_warn(MOD, "the stored lifecycle configuration of bucket=%s is damaged: %s", bucket, msg);
        free(doc);
        atomic_fetch_add(&lc->errors, 1);
        return;
    }
    free(doc);
    lc_cursor_t *c = cursor(lc, bucket);
    lc_pass_t p = {.lc = lc, .bucket = bucket, .cfg = &cfg, .now = (int64_t)time(NULL)};
    bool need_versions = false;
    for (size_t i = 0; i < cfg.n; i++)
        need_versions |=
            cfg.rules[i].enabled && (cfg.rules[i].exp_days || cfg.rules[i].exp_date >= 0 ||
                                     cfg.rules[i].exp_marker || cfg.rules[i].nc_days);
    size_t scanned = 0;
    bool done = !need_versions;
    /* The scan: pages of versions from the cursor, stopping at a key's end once a bound is
     * reached, so that the next pass starts at a key's first (current) version. */
    char *marker = c && c->key_marker ? strdup(c->key_marker) : NULL;
    char vidm[DATA_VERSION_ID_MAX] = "";
    while (!done && !stopping(lc)) {
        data_version_params_t vp = {
            .key_marker = marker, .version_id_marker = vidm, .max_keys = LC_PAGE};
        data_version_result_t res;
        memset(&res, 0, sizeof res);
        if (store_version_list(lc->st, bucket, &vp, &res) != WH_OK) {
            atomic_fetch_add(&lc->errors, 1);
            break;
        }
        bool bounded = false;
        for (size_t i = 0; i < res.n_entries; i++) {
            const data_version_entry_t *e = &res.entries[i];
            if ((scanned >= LC_SCAN_MAX || p.acts >= LC_ACT_MAX) && p.key &&
                strcmp(p.key, e->key) != 0) {
                bounded = true;
                break;
            }
            entry(&p, e);
            scanned++;
        }
        if (bounded) {
            char *last = p.key ? strdup(p.key) : NULL;
            key_end(&p);
            if (c)
                cursor_set(c, last);
            free(last);
            data_version_result_free(&res);
            break;
        }
        if (!res.truncated) {
            key_end(&p);
            if (c)
                cursor_set(c, NULL); /* the whole bucket seen: from the start next time */
            done = true;
        } else {
            /* A key may go on in the next page (a version id marker): its state is kept.
             * Should the marker's version be gone by then, the listing skips the rest of
             * that key, which only means less is done. */
            free(marker);
            marker = res.next_key_marker ? strdup(res.next_key_marker) : NULL;
            snprintf(vidm, sizeof vidm, "%s", res.next_version_id_marker);
            if (!marker)
                done = true;
        }
        data_version_result_free(&res);
    }
    free(marker);
    key_end(&p);
    size_t version_acts = p.acts;
    uploads_pass(&p);
    if (p.acts)
        wh_info(MOD, "pass bucket=%s actions=%zu uploads=%zu scanned=%zu resume=%s", bucket, p.acts,
                p.acts - version_acts, scanned, c && c->key_marker ? c->key_marker : "start");
    s3_lc_free(&cfg);
}

static void run_pass(s3h_lc_t *lc)
{
    wh_status_t s = meta_lock_try(store_meta(lc->st), META_LOCK_MAINTENANCE);
    if (s != WH_OK && s != WH_ERR_UNSUPPORTED) {
        if (!lc->leader_logged)
            wh_info(MOD, "another gateway holds the maintenance lock: it runs lifecycle");
        lc->leader_logged = true;
        return;
    }
    data_bucket_info_t *b = NULL;
    size_t n = 0;
    if (store_bucket_list(lc->st, &b, &n) != WH_OK) {
        atomic_fetch_add(&lc->errors, 1);
        return;
    }
    for (size_t i = 0; i < n && !stopping(lc); i++)
        bucket_pass(lc, b[i].name);
    free(b);
    atomic_fetch_add(&lc->passes, 1);
}

static unsigned lc_period(const s3h_lc_t *lc)
{
    unsigned p = atomic_load(lc->period_src);
    return p ? p : FRONT_LIFECYCLE_PERIOD_DEFAULT;
}

static void *lc_main(void *arg)
{
    s3h_lc_t *lc = arg;
    pthread_mutex_lock(&lc->mu);
    while (!lc->stop) {
        /* A pass is due a period after the last one began; the period is read again at least
         * once a second, so a reload that shortens it takes effect without a restart. */
        struct timespec t0, dl;
        clock_gettime(CLOCK_REALTIME, &t0);
        for (;;) {
            time_t due = t0.tv_sec + (time_t)lc_period(lc);
            clock_gettime(CLOCK_REALTIME, &dl);
            if (lc->stop || dl.tv_sec >= due)
                break;
            dl.tv_sec = dl.tv_sec + 1 < due ? dl.tv_sec + 1 : due;
            pthread_cond_timedwait(&lc->cv, &lc->mu, &dl);
        }
        if (lc->stop)
            break;
        pthread_mutex_unlock(&lc->mu);
        run_pass(lc);
        pthread_mutex_lock(&lc->mu);
    }
    pthread_mutex_unlock(&lc->mu);
    return NULL;
}

wh_status_t s3h_lc_start(store_t *st, const _Atomic unsigned *period_s, s3h_lc_t **out)
{
    s3h_lc_t *lc = calloc(1, sizeof *lc);
    if (!lc)
        return WH_ERR_NOMEM;
    lc->st = st;
    lc->period_src = period_s;
    lc->day_s = 86400;
    const char *d = getenv("WHARF_LIFECYCLE_DAY_SECONDS");
    if (d && *d) {
        uint64_t v;
        if (wh_parse_u64(d, strlen(d), &v) != 0 || v < 1 || v > 86400) {
            wh_error(MOD, "WHARF_LIFECYCLE_DAY_SECONDS wants seconds from 1 to 86400, got '%s'", d);
            free(lc);
            return WH_ERR_INVALID;
        }
        lc->day_s = (int64_t)v;
        wh_warn(MOD,
                "test setting: a lifecycle day is %llu seconds "
                "(WHARF_LIFECYCLE_DAY_SECONDS)",
                (unsigned long long)v);
    }
    pthread_mutex_init(&lc->mu, NULL);
    pthread_cond_init(&lc->cv, NULL);
    if (pthread_create(&lc->thread, NULL, lc_main, lc) != 0) {
        pthread_cond_destroy(&lc->cv);
        pthread_mutex_destroy(&lc->mu);
        free(lc);
        return WH_ERR_NOMEM;
    }
    wh_info(MOD, "lifecycle worker period_s=%u day_s=%lld", lc_period(lc), (long long)lc->day_s);
    *out = lc;
    return WH_OK;
}

void s3h_lc_stop(s3h_lc_t *lc)
{
    if (!lc)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->stop = true;
    pthread_cond_broadcast(&lc->cv);
    pthread_mutex_unlock(&lc->mu);
    pthread_join(lc->thread, NULL);
    for (size_t i = 0; i < lc->ncur; i++)
        free(lc->cur[i].key_marker);
    free(lc->cur);
    pthread_cond_destroy(&lc->cv);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
}

void s3h_lc_metrics(s3h_lc_t *lc, wh_sbuf_t *o)
{
    if (!lc)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } m[] = {
        {"wharf_lifecycle_passes_total", "Lifecycle passes over the buckets.",
         offsetof(s3h_lc_t, passes)},
        {"wharf_lifecycle_objects_expired_total", "Current versions expired by lifecycle.",
         offsetof(s3h_lc_t, objects)},
        {"wharf_lifecycle_versions_expired_total", "Noncurrent versions removed by lifecycle.",
         offsetof(s3h_lc_t, versions)},
        {"wharf_lifecycle_markers_removed_total", "Expired delete markers removed by lifecycle.",
         offsetof(s3h_lc_t, markers)},
        {"wharf_lifecycle_uploads_aborted_total",
         "Incomplete multipart uploads aborted by lifecycle.", offsetof(s3h_lc_t, uploads)},
        {"wharf_lifecycle_errors_total", "Lifecycle actions or scans that failed.",
         offsetof(s3h_lc_t, errors)},
        {"wharf_lifecycle_locked_total",
         "Expirations left undone because Object Lock keeps the version.",
         offsetof(s3h_lc_t, locked)},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        _Atomic uint64_t *v = (_Atomic uint64_t *)((char *)lc + m[i].off);
        wh_sbuf_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", m[i].name, m[i].help,
                       m[i].name, m[i].name, (unsigned long long)atomic_load(v));
    }
}
