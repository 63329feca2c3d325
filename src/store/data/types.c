/* SPDX-License-Identifier: Apache-2.0 */
/* Frees and copies of the store's value types (data/types.h) and data references
 * (data/data.h). */
#include "data/data.h"
#include "data/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void data_ref_clear(data_ref_t *ref)
{
    if (!ref)
        return;
    free(ref->chunks);
    ref->chunks = NULL;
    ref->n_chunks = 0;
    ref->id[0] = '\0';
}

wh_status_t data_ref_copy(data_ref_t *dst, const data_ref_t *src)
{
    data_ref_clear(dst);
    /* dst is never NULL; only the clear function accepts NULL, as free functions do */
    /* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
    memcpy(dst->id, src->id, sizeof dst->id);
    if (src->n_chunks) {
        dst->chunks = malloc(src->n_chunks * sizeof *dst->chunks);
        if (!dst->chunks)
            return WH_ERR_NOMEM;
        memcpy(dst->chunks, src->chunks, src->n_chunks * sizeof *dst->chunks);
        dst->n_chunks = src->n_chunks;
    }
    return WH_OK;
}

void data_bucket_auth_free(data_bucket_auth_t *a)
{
    if (!a)
        return;
    free(a->acl);
    free(a->policy);
    a->acl = a->policy = NULL;
}

void data_obj_meta_free(data_obj_meta_t *m)
{
    if (!m)
        return;
    free(m->user_meta_json);
    m->user_meta_json = NULL;
    free(m->acl);
    m->acl = NULL;
    free(m->tags);
    m->tags = NULL;
    free(m->part_sizes);
    m->part_sizes = NULL;
    free(m->sse);
    m->sse = NULL;
}

void data_upload_info_free(data_upload_info_t *u, size_t n)
{
    if (!u)
        return;
    for (size_t i = 0; i < n; i++)
        free(u[i].key);
    free(u);
}

void data_list_result_free(data_list_result_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_entries; i++)
        free(r->entries[i].key);
    free(r->entries);
    for (size_t i = 0; i < r->n_prefixes; i++)
        free(r->prefixes[i]);
    free(r->prefixes);
    free(r->next_marker);
    memset(r, 0, sizeof *r);
}

void data_version_result_free(data_version_result_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_entries; i++)
        free(r->entries[i].key);
    free(r->entries);
    for (size_t i = 0; i < r->n_prefixes; i++)
        free(r->prefixes[i]);
    free(r->prefixes);
    free(r->next_key_marker);
    memset(r, 0, sizeof *r);
}

const char *data_durability_name(data_durability_t d)
{
    return d == DATA_DURABLE_MEMORY ? "memory" : "disk";
}

data_lock_why_t data_lock_blocks(int mode, int64_t until, bool hold, int bypass, int64_t now)
{
    if (bypass == DATA_BYPASS_ALL)
        return DATA_LOCK_FREE;
    if (hold)
        return DATA_LOCK_BY_HOLD;
    if (mode == DATA_LOCK_NONE || until <= now)
        return DATA_LOCK_FREE;
    if (mode == DATA_LOCK_GOVERNANCE && bypass == DATA_BYPASS_GOVERNANCE)
        return DATA_LOCK_FREE;
    return DATA_LOCK_BY_RETENTION;
}

wh_status_t data_lock_set_check(int mode, int64_t until, const data_lock_set_t *s)
{
    if (!s->set_retention || mode == DATA_LOCK_NONE || until <= s->now)
        return WH_OK; /* nothing kept, or the retention has run out */
    /* Extending in the same mode is always allowed. Any change of mode (GOVERNANCE to
     * COMPLIANCE included, as S3 has it) changes a GOVERNANCE retention: it needs the bypass. */
    if (s->mode == mode && s->until >= until)
        return WH_OK;
    return mode == DATA_LOCK_GOVERNANCE && s->bypass ? WH_OK : WH_ERR_AUTH;
}

bool data_etag_list_match(const char *list, const char *etag)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *a = p, *z = e;
        while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
            z--;
        if (z - a == 1 && *a == '*')
            return true;
        if (z - a >= 2 && a[0] == 'W' && a[1] == '/')
            a += 2;
        if (z - a >= 2 && *a == '"' && z[-1] == '"') {
            a++;
            z--;
        }
        if ((size_t)(z - a) == strlen(etag) && strncmp(a, etag, (size_t)(z - a)) == 0)
            return true;
        p = e;
    }
    return false;
}

wh_status_t data_del_cond_check(data_del_cond_t *c, const data_obj_meta_t *m)
{
    if (!c)
        return WH_OK;
    c->failed = DATA_DCOND_OK;
    c->delete_marker = m && m->delete_marker;
    c->etag[0] = '\0';
    c->got_size = 0;
    if (!m || m->delete_marker) {
        if (!c->if_match)
            return WH_OK;
        c->failed = DATA_DCOND_MISSING;
        return WH_ERR_NOT_FOUND;
    }
    snprintf(c->etag, sizeof c->etag, "%s", m->etag);
    c->got_size = m->size;
    if (c->if_match && !data_etag_list_match(c->if_match, m->etag))
        c->failed = DATA_DCOND_ETAG;
    else if (c->has_mtime && m->mtime != c->mtime)
        c->failed = DATA_DCOND_MTIME;
    else if (c->has_size && m->size != c->size)
        c->failed = DATA_DCOND_SIZE;
    return c->failed ? WH_ERR_PRECONDITION : WH_OK;
}
