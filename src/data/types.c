/* Frees and copies of the store's value types (data/types.h) and data references
 * (data/data.h). */
#include "data/data.h"
#include "data/types.h"

#include <stdlib.h>
#include <string.h>

void store_data_ref_clear(store_data_ref_t *ref)
{
    if (!ref)
        return;
    free(ref->chunks);
    ref->chunks = NULL;
    ref->n_chunks = 0;
    ref->id[0] = '\0';
}

wh_status_t store_data_ref_copy(store_data_ref_t *dst, const store_data_ref_t *src)
{
    store_data_ref_clear(dst);
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

void store_bucket_auth_free(store_bucket_auth_t *a)
{
    if (!a)
        return;
    free(a->acl);
    free(a->policy);
    a->acl = a->policy = NULL;
}

void store_obj_meta_free(store_obj_meta_t *m)
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

void store_upload_info_free(store_upload_info_t *u, size_t n)
{
    if (!u)
        return;
    for (size_t i = 0; i < n; i++)
        free(u[i].key);
    free(u);
}

void store_list_result_free(store_list_result_t *r)
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

void store_version_result_free(store_version_result_t *r)
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

const char *store_durability_name(store_durability_t d)
{
    return d == STORE_DURABLE_MEMORY ? "memory" : "disk";
}
