/* SPDX-License-Identifier: Apache-2.0 */
/* S3 listing over the metadata table's ordered scan, the same for every backend.
 *
 * Walks keys in byte order from the cursor; a key that contains the delimiter after the prefix
 * rolls up into a common prefix, and the walk then jumps past every key under that prefix with
 * a new scan (key >= prefix-end), so a directory of a million keys costs one row, not a
 * million. Entries and common prefixes both count toward max_keys. */
#include "base/util.h"
#include "meta/meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte string: the listing cursor. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
} list_bytes_t;

static bool bytes_set(list_bytes_t *b, const void *p, size_t n)
{
    if (!meta_grow((void **)&b->p, &b->cap, n + 1, 1))
        return false;
    if (n)
        memcpy(b->p, p, n);
    b->n = n;
    return true;
}

/* The smallest byte string greater than every string that starts with b (in place).
 * false if there is none (b is empty or all 0xff). */
static bool bytes_prefix_end(list_bytes_t *b)
{
    while (b->n > 0 && b->p[b->n - 1] == 0xff)
        b->n--;
    if (b->n == 0)
        return false;
    b->p[b->n - 1]++;
    return true;
}

static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, WH_MIN(an, bn));
    if (c)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static char *strndup_bytes(const void *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

typedef struct {
    meta_t *m;
    data_list_result_t *out;
    const char *prefix, *delim;
    size_t plen, dlen;
    uint32_t max;
    size_t cap_e, cap_p, count;
    const char *last; /* last item returned: the next marker if truncated */
    list_bytes_t cur;
    bool jumped, finished;
} list_walk_t;

static int list_row(void *arg, const void *kp, size_t klen, uint64_t size, time_t mtime,
                    const char *etag, const char *owner)
{
    list_walk_t *w = arg;
    data_list_result_t *out = w->out;
    const char *key = kp;
    __atomic_add_fetch(&w->m->list_rows, 1, __ATOMIC_RELAXED);
    if (!key || klen < w->plen || memcmp(key, w->prefix, w->plen) != 0) {
        w->finished = true;
        return 1;
    }
    const char *d = w->delim ? memmem(key + w->plen, klen - w->plen, w->delim, w->dlen) : NULL;
    if (w->count == w->max) {
        out->truncated = true;
        w->finished = true;
        return 1;
    }
    if (d) {
        size_t cplen = (size_t)(d - key) + w->dlen;
        if (!meta_grow((void **)&out->prefixes, &w->cap_p, out->n_prefixes + 1, sizeof(char *)) ||
            !(out->prefixes[out->n_prefixes] = strndup_bytes(key, cplen)) ||
            !bytes_set(&w->cur, key, cplen))
            return WH_ERR_NOMEM;
        w->last = out->prefixes[out->n_prefixes++];
        w->count++;
        if (!bytes_prefix_end(&w->cur))
            w->finished = true;
        else
            w->jumped = true;
        return 1;
    }
    if (!meta_grow((void **)&out->entries, &w->cap_e, out->n_entries + 1, sizeof *out->entries))
        return WH_ERR_NOMEM;
    data_list_entry_t *e = &out->entries[out->n_entries];
    memset(e, 0, sizeof *e);
    if (!(e->key = strndup_bytes(key, klen)))
        return WH_ERR_NOMEM;
    e->size = size;
    e->mtime = mtime;
    snprintf(e->etag, sizeof e->etag, "%s", etag ? etag : "");
    snprintf(e->owner, sizeof e->owner, "%s", owner ? owner : "");
    w->last = e->key;
    out->n_entries++;
    w->count++;
    return 0;
}

wh_status_t meta_object_list(meta_t *m, const char *bucket, const data_list_params_t *p,
                             data_list_result_t *out)
{
    memset(out, 0, sizeof *out);
    list_walk_t w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.out = out;
    w.prefix = p->prefix ? p->prefix : "";
    w.plen = strlen(w.prefix);
    w.delim = p->delimiter && p->delimiter[0] ? p->delimiter : NULL;
    w.dlen = w.delim ? strlen(w.delim) : 0;
    w.max = WH_MIN(p->max_keys, 1000u);
    const char *after = p->start_after && p->start_after[0] ? p->start_after : NULL;
    bool inclusive = true;

    wh_status_t st = meta_bucket_exists(m, bucket);
    if (st != WH_OK || w.max == 0)
        goto out;

    /* The starting point: after start_after (past its whole group if it is a common prefix,
     * as returned in a previous page's marker), and never before the prefix. */
    if (!bytes_set(&w.cur, w.prefix, w.plen)) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    if (after) {
        size_t alen = strlen(after);
        list_bytes_t a = {0};
        bool a_incl = false;
        if (!bytes_set(&a, after, alen)) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        if (w.delim && alen > w.plen && memcmp(after, w.prefix, w.plen) == 0) {
            const char *d = memmem(after + w.plen, alen - w.plen, w.delim, w.dlen);
            if (d && (size_t)(d - after) + w.dlen == alen) {
                if (!bytes_prefix_end(&a)) {
                    free(a.p);
                    goto out; /* nothing sorts after this group */
                }
                a_incl = true;
            }
        }
        if (bytes_cmp(a.p, a.n, w.cur.p, w.cur.n) >= 0) {
            free(w.cur.p);
            w.cur = a;
            inclusive = a_incl;
        } else {
            free(a.p);
        }
    }

    for (;;) {
        w.jumped = w.finished = false;
        /* The scan reads the cursor before the callback changes it: pass a copy. */
        list_bytes_t from = {0};
        if (!bytes_set(&from, w.cur.p, w.cur.n)) {
            st = WH_ERR_NOMEM;
            break;
        }
        st = meta_object_scan(m, bucket, from.p, from.n, inclusive, list_row, &w);
        free(from.p);
        if (st != WH_OK || w.finished || !w.jumped)
            break;
        inclusive = true;
    }
    if (st == WH_OK && out->truncated) {
        out->next_marker = strdup(w.last);
        if (!out->next_marker)
            st = WH_ERR_NOMEM;
    }
out:
    free(w.cur.p);
    if (st != WH_OK)
        data_list_result_free(out);
    return st;
}

/* ---- ListObjectVersions over version_scan: the same walk, one item per version ---- */

typedef struct {
    meta_t *m;
    data_version_result_t *out;
    const char *prefix, *delim;
    size_t plen, dlen;
    uint32_t max;
    size_t cap_e, cap_p, count;
    list_bytes_t cur;
    bool jumped, finished;
    /* key_marker with version_id_marker: the versions of that key up to the marker are
     * skipped (the scan starts at the key itself). */
    const char *skip_key, *skip_vid;
    size_t skip_klen;
    bool skipping;
    const char *last_key, *last_vid;
} ver_walk_t;

static int ver_row(void *arg, const meta_version_row_t *row)
{
    ver_walk_t *w = arg;
    data_version_result_t *out = w->out;
    const char *key = row->key;
    size_t klen = row->klen;
    __atomic_add_fetch(&w->m->list_rows, 1, __ATOMIC_RELAXED);
    if (!key || klen < w->plen || memcmp(key, w->prefix, w->plen) != 0) {
        w->finished = true;
        return 1;
    }
    if (w->skipping) {
        if (klen == w->skip_klen && memcmp(key, w->skip_key, klen) == 0) {
            if (strcmp(row->version_id, w->skip_vid) == 0)
                w->skipping = false; /* the marker itself: the next row is the first */
            return 0;
        }
        w->skipping = false; /* the marker's version is gone: the next key starts */
    }
    const char *d = w->delim ? memmem(key + w->plen, klen - w->plen, w->delim, w->dlen) : NULL;
    if (w->count == w->max) {
        out->truncated = true;
        w->finished = true;
        return 1;
    }
    if (d) {
        size_t cplen = (size_t)(d - key) + w->dlen;
        if (!meta_grow((void **)&out->prefixes, &w->cap_p, out->n_prefixes + 1, sizeof(char *)) ||
            !(out->prefixes[out->n_prefixes] = strndup_bytes(key, cplen)) ||
            !bytes_set(&w->cur, key, cplen))
            return WH_ERR_NOMEM;
        w->last_key = out->prefixes[out->n_prefixes++];
        w->last_vid = "";
        w->count++;
        if (!bytes_prefix_end(&w->cur))
            w->finished = true;
        else
            w->jumped = true;
        return 1;
    }
    if (!meta_grow((void **)&out->entries, &w->cap_e, out->n_entries + 1, sizeof *out->entries))
        return WH_ERR_NOMEM;
    data_version_entry_t *e = &out->entries[out->n_entries];
    memset(e, 0, sizeof *e);
    if (!(e->key = strndup_bytes(key, klen)))
        return WH_ERR_NOMEM;
    snprintf(e->version_id, sizeof e->version_id, "%s", row->version_id);
    e->latest = row->latest;
    e->delete_marker = row->delete_marker;
    e->size = row->size;
    e->mtime = row->mtime;
    snprintf(e->etag, sizeof e->etag, "%s", row->etag ? row->etag : "");
    w->last_key = e->key;
    w->last_vid = e->version_id;
    out->n_entries++;
    w->count++;
    return 0;
}

wh_status_t meta_version_list(meta_t *m, const char *bucket, const data_version_params_t *p,
                              data_version_result_t *out)
{
    memset(out, 0, sizeof *out);
    ver_walk_t w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.out = out;
    w.prefix = p->prefix ? p->prefix : "";
    w.plen = strlen(w.prefix);
    w.delim = p->delimiter && p->delimiter[0] ? p->delimiter : NULL;
    w.dlen = w.delim ? strlen(w.delim) : 0;
    w.max = WH_MIN(p->max_keys, 1000u);
    const char *km = p->key_marker && p->key_marker[0] ? p->key_marker : NULL;
    const char *vm =
        km && p->version_id_marker && p->version_id_marker[0] ? p->version_id_marker : NULL;
    bool inclusive = true;

    wh_status_t st = meta_bucket_exists(m, bucket);
    if (st != WH_OK || w.max == 0)
        goto out;
    if (!bytes_set(&w.cur, w.prefix, w.plen)) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    if (km) {
        size_t alen = strlen(km);
        list_bytes_t a = {0};
        bool a_incl = false;
        if (!bytes_set(&a, km, alen)) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        if (vm) {
            /* Within the marker's key: from the key itself, skipping to after the version. */
            a_incl = true;
            w.skipping = true;
            w.skip_key = km;
            w.skip_klen = alen;
            w.skip_vid = vm;
        } else if (w.delim && alen > w.plen && memcmp(km, w.prefix, w.plen) == 0) {
            const char *d = memmem(km + w.plen, alen - w.plen, w.delim, w.dlen);
            if (d && (size_t)(d - km) + w.dlen == alen) {
                if (!bytes_prefix_end(&a)) {
                    free(a.p);
                    goto out;
                }
                a_incl = true;
            }
        }
        if (bytes_cmp(a.p, a.n, w.cur.p, w.cur.n) >= 0) {
            free(w.cur.p);
            w.cur = a;
            inclusive = a_incl;
        } else {
            free(a.p);
            w.skipping = false;
        }
    }
    for (;;) {
        w.jumped = w.finished = false;
        list_bytes_t from = {0};
        if (!bytes_set(&from, w.cur.p, w.cur.n)) {
            st = WH_ERR_NOMEM;
            break;
        }
        st = meta_version_scan(m, bucket, from.p, from.n, inclusive, ver_row, &w);
        free(from.p);
        if (st != WH_OK || w.finished || !w.jumped)
            break;
        inclusive = true;
    }
    if (st == WH_OK && out->truncated) {
        out->next_key_marker = strdup(w.last_key);
        snprintf(out->next_version_id_marker, sizeof out->next_version_id_marker, "%s", w.last_vid);
        if (!out->next_key_marker)
            st = WH_ERR_NOMEM;
    }
out:
    free(w.cur.p);
    if (st != WH_OK)
        data_version_result_free(out);
    return st;
}
