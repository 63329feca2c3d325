/* SPDX-License-Identifier: Apache-2.0 */
/* The authorization reads, cached: an access key's row, a user's inline policies and a bucket's
 * owner, ACL and policy are read on every request a user signs, and change rarely.
 *
 * Each entry records the backend's auth generation (meta_ops_t.auth_gen) read before the row
 * was, and is used only while the generation is still that value. Every write that changes
 * one of these rows bumps the generation after it commits, in this process or another one on
 * the same data (the `wharfd user|key` commands beside a running server), so a deleted or
 * disabled key, a changed policy or ACL is seen by the next request, as without a cache:
 *   - a read that began before the commit recorded the old generation, and is dropped;
 *   - a read that began after it sees the committed rows.
 * Backends without a generation (PostgreSQL: other gateways write it) are not cached.
 *
 * Bounded: a direct-mapped table per kind, an entry per slot, a collision replaces. Only
 * found rows are cached: a refused key goes to the database every time. */
#include "meta/meta.h"

#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MC_SLOTS 256u

typedef struct mc_key {
    pthread_mutex_t mu;
    uint64_t gen; /* 0: empty */
    meta_access_key_t k;
} mc_key_t;

typedef struct mc_pol {
    pthread_mutex_t mu;
    uint64_t gen;
    char user[META_USER_MAX + 1];
    meta_policy_t *p;
    size_t n;
} mc_pol_t;

typedef struct mc_bucket {
    pthread_mutex_t mu;
    uint64_t gen;
    char name[64]; /* bucket names are 3 to 63 characters */
    data_bucket_auth_t a;
} mc_bucket_t;

struct meta_cache {
    mc_key_t keys[MC_SLOTS];
    mc_pol_t pols[MC_SLOTS];
    mc_bucket_t buckets[MC_SLOTS];
    uint64_t hits, misses; /* atomic */
};

static uint32_t mc_hash(const char *s)
{
    return wh_fnv1a(s) % MC_SLOTS;
}

/* The current generation, or 0: do not use or fill the cache. */
static uint64_t mc_gen(meta_t *m)
{
    uint64_t g = 0;
    if (!m->cache || !m->ops->auth_gen || m->ops->auth_gen(m, &g) != WH_OK)
        return 0;
    return g;
}

wh_status_t meta_cache_init(meta_t *m)
{
    uint64_t g;
    if (!m->ops->auth_gen || m->ops->auth_gen(m, &g) != WH_OK)
        return WH_OK; /* nothing to validate entries with: every read goes to the backend */
    struct meta_cache *c = calloc(1, sizeof *c);
    if (!c)
        return WH_ERR_NOMEM;
    for (unsigned i = 0; i < MC_SLOTS; i++) {
        pthread_mutex_init(&c->keys[i].mu, NULL);
        pthread_mutex_init(&c->pols[i].mu, NULL);
        pthread_mutex_init(&c->buckets[i].mu, NULL);
    }
    m->cache = c;
    return WH_OK;
}

void meta_cache_free(meta_t *m)
{
    struct meta_cache *c = m ? m->cache : NULL;
    if (!c)
        return;
    for (unsigned i = 0; i < MC_SLOTS; i++) {
        meta_policies_free(c->pols[i].p, c->pols[i].n);
        data_bucket_auth_free(&c->buckets[i].a);
        pthread_mutex_destroy(&c->keys[i].mu);
        pthread_mutex_destroy(&c->pols[i].mu);
        pthread_mutex_destroy(&c->buckets[i].mu);
    }
    free(c);
    m->cache = NULL;
}

void meta_cache_stats(meta_t *m, uint64_t *hits, uint64_t *misses)
{
    struct meta_cache *c = m->cache;
    *hits = c ? __atomic_load_n(&c->hits, __ATOMIC_RELAXED) : 0;
    *misses = c ? __atomic_load_n(&c->misses, __ATOMIC_RELAXED) : 0;
}

static void mc_count(struct meta_cache *c, bool hit)
{
    __atomic_add_fetch(hit ? &c->hits : &c->misses, 1, __ATOMIC_RELAXED);
}

/* ---- the backend's reads behind the cache (NULL slot: WH_ERR_UNSUPPORTED, as meta.h) ---- */

static wh_status_t mc_read_key(meta_t *m, const char *ak, meta_access_key_t *out)
{
    return META_HAS(m, ident, key_get) ? m->ops->ident->key_get(m, ak, out) : WH_ERR_UNSUPPORTED;
}

static wh_status_t mc_read_policies(meta_t *m, const char *user, meta_policy_t **out, size_t *n)
{
    return META_HAS(m, ident, user_policy_list) ? m->ops->ident->user_policy_list(m, user, out, n)
                                                : WH_ERR_UNSUPPORTED;
}

static wh_status_t mc_read_bucket_auth(meta_t *m, const char *bucket, data_bucket_auth_t *out)
{
    return META_HAS(m, objects, bucket_auth_get) ? m->ops->objects->bucket_auth_get(m, bucket, out)
                                                 : WH_ERR_UNSUPPORTED;
}

/* ---- access keys ---- */

wh_status_t meta_cached_key_get(meta_t *m, const char *ak, meta_access_key_t *out)
{
    uint64_t g = mc_gen(m);
    if (!g || strlen(ak) > META_AK_MAX)
        return mc_read_key(m, ak, out);
    mc_key_t *e = &m->cache->keys[mc_hash(ak)];
    pthread_mutex_lock(&e->mu);
    bool hit = e->gen == g && strcmp(e->k.access_key, ak) == 0;
    if (hit)
        *out = e->k;
    pthread_mutex_unlock(&e->mu);
    mc_count(m->cache, hit);
    if (hit)
        return WH_OK;
    wh_status_t st = mc_read_key(m, ak, out);
    if (st == WH_OK) {
        pthread_mutex_lock(&e->mu);
        e->k = *out;
        e->gen = g;
        pthread_mutex_unlock(&e->mu);
    }
    return st;
}

/* ---- user policies ---- */

static wh_status_t policies_copy(const meta_policy_t *p, size_t n, meta_policy_t **out)
{
    *out = NULL;
    if (!n)
        return WH_OK;
    meta_policy_t *a = calloc(n, sizeof *a);
    if (!a)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        memcpy(a[i].name, p[i].name, sizeof a[i].name);
        if (!(a[i].doc = strdup(p[i].doc))) {
            meta_policies_free(a, i);
            return WH_ERR_NOMEM;
        }
    }
    *out = a;
    return WH_OK;
}

wh_status_t meta_cached_user_policy_list(meta_t *m, const char *user, meta_policy_t **out,
                                         size_t *n)
{
    uint64_t g = mc_gen(m);
    if (!g || strlen(user) > META_USER_MAX)
        return mc_read_policies(m, user, out, n);
    mc_pol_t *e = &m->cache->pols[mc_hash(user)];
    pthread_mutex_lock(&e->mu);
    wh_status_t st = WH_ERR_NOT_FOUND;
    if (e->gen == g && strcmp(e->user, user) == 0) {
        st = policies_copy(e->p, e->n, out);
        *n = st == WH_OK ? e->n : 0;
    }
    pthread_mutex_unlock(&e->mu);
    mc_count(m->cache, st == WH_OK);
    if (st == WH_OK)
        return WH_OK;
    st = mc_read_policies(m, user, out, n);
    if (st != WH_OK)
        return st;
    meta_policy_t *mine;
    if (policies_copy(*out, *n, &mine) != WH_OK)
        return WH_OK; /* not cached; the caller has its answer */
    pthread_mutex_lock(&e->mu);
    meta_policies_free(e->p, e->n);
    e->p = mine;
    e->n = *n;
    memcpy(e->user, user, strlen(user) + 1);
    e->gen = g;
    pthread_mutex_unlock(&e->mu);
    return WH_OK;
}

/* ---- bucket owner, ACL and policy ---- */

static wh_status_t bucket_auth_copy(const data_bucket_auth_t *src, data_bucket_auth_t *dst)
{
    memcpy(dst->owner, src->owner, sizeof dst->owner);
    dst->pab = src->pab;
    dst->ownership = src->ownership;
    dst->acl = src->acl ? strdup(src->acl) : NULL;
    dst->policy = src->policy ? strdup(src->policy) : NULL;
    if ((src->acl && !dst->acl) || (src->policy && !dst->policy)) {
        data_bucket_auth_free(dst);
        return WH_ERR_NOMEM;
    }
    return WH_OK;
}

wh_status_t meta_cached_bucket_auth_get(meta_t *m, const char *bucket, data_bucket_auth_t *out)
{
    uint64_t g = mc_gen(m);
    if (!g || strlen(bucket) > 63)
        return mc_read_bucket_auth(m, bucket, out);
    mc_bucket_t *e = &m->cache->buckets[mc_hash(bucket)];
    pthread_mutex_lock(&e->mu);
    wh_status_t st = WH_ERR_NOT_FOUND;
    if (e->gen == g && strcmp(e->name, bucket) == 0)
        st = bucket_auth_copy(&e->a, out);
    pthread_mutex_unlock(&e->mu);
    mc_count(m->cache, st == WH_OK);
    if (st == WH_OK)
        return WH_OK;
    st = mc_read_bucket_auth(m, bucket, out);
    if (st != WH_OK)
        return st;
    data_bucket_auth_t mine;
    memset(&mine, 0, sizeof mine);
    if (bucket_auth_copy(out, &mine) != WH_OK)
        return WH_OK;
    pthread_mutex_lock(&e->mu);
    data_bucket_auth_free(&e->a);
    e->a = mine;
    memcpy(e->name, bucket, strlen(bucket) + 1);
    e->gen = g;
    pthread_mutex_unlock(&e->mu);
    return WH_OK;
}
