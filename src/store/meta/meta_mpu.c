/* SPDX-License-Identifier: Apache-2.0 */
/* The multipart rules, once for every backend (meta_mpu.h). */
#include "meta/meta_rules.h"

#include <stdlib.h>
#include <string.h>

/* The upload_delete and upload_complete slots' transactions. all/n_all get every part of the
 * upload (freed first: a retried transaction starts afresh); completion only: parts/n the
 * parts listed, meta/ref/old/cond as meta_ver_commit's. */
typedef struct meta_mpu_done {
    const char *bucket, *key, *upload_id;
    const meta_part_t *parts;
    size_t n;
    data_obj_meta_t *meta;
    const data_ref_t *ref;
    data_ref_t *old;
    meta_part_t *all;
    size_t n_all;
    data_cond_t *cond;
    const meta_mpu_dialect_t *d;
} meta_mpu_done_t;

/* The part_put slot's transaction: *old gets the replaced part's data (cleared first). */
static wh_status_t meta_mpu_part_put(const meta_mpu_dialect_t *d, void *c, const char *bucket,
                                     const char *key, const char *upload_id,
                                     const data_part_info_t *info, const data_ref_t *ref,
                                     data_ref_t *old)
{
    data_ref_clear(old);
    wh_status_t st = d->upload_lock(c, bucket, key, upload_id);
    if (st == WH_OK)
        st = d->part_data(c, upload_id, info->number, old->id);
    if (st == WH_OK && old->id[0]) /* the part replaced: its data goes back to the caller */
        st = d->chunks_get(c, old);
    if (st == WH_OK && old->id[0])
        st = d->chunks_drop(c, old->id);
    if (st == WH_OK)
        st = d->part_upsert(c, upload_id, info, ref->id);
    return st == WH_OK ? d->chunks_put(c, ref) : st;
}

/* Drops an upload's part rows, their chunk maps and its row. keep (may be NULL): a data id
 * that is the completed object's own (a composed object of one part is that part's file),
 * whose chunk map stays. */
static wh_status_t meta_mpu_drop(const meta_mpu_dialect_t *d, void *c, const char *upload_id,
                                 const meta_part_t *parts, size_t n, const char *keep)
{
    wh_status_t st = WH_OK;
    for (size_t i = 0; st == WH_OK && i < n; i++)
        if (parts[i].ref.n_chunks && !(keep && strcmp(parts[i].ref.id, keep) == 0))
            st = d->chunks_drop(c, parts[i].ref.id);
    return st == WH_OK ? d->upload_rows_delete(c, upload_id) : st;
}

/* The upload's every part, in this attempt of the transaction. */
static wh_status_t meta_mpu_read_all(const meta_mpu_dialect_t *d, void *c, meta_mpu_done_t *a)
{
    meta_parts_free(a->all, a->n_all); /* a retried attempt starts afresh */
    a->all = NULL;
    a->n_all = 0;
    wh_status_t st = d->upload_lock(c, a->bucket, a->key, a->upload_id);
    return st == WH_OK ? d->parts_read(c, a->upload_id, 0, 0, &a->all, &a->n_all, NULL) : st;
}

static wh_status_t meta_mpu_abort(const meta_mpu_dialect_t *d, void *c, meta_mpu_done_t *a)
{
    wh_status_t st = meta_mpu_read_all(d, c, a);
    return st == WH_OK ? meta_mpu_drop(d, c, a->upload_id, a->all, a->n_all, NULL) : st;
}

static wh_status_t meta_mpu_complete(const meta_mpu_dialect_t *d, void *c, meta_mpu_done_t *a)
{
    if (a->old)
        data_ref_clear(a->old);
    wh_status_t st = meta_mpu_read_all(d, c, a);
    if (st == WH_OK)
        st = meta_parts_unchanged(a->upload_id, a->parts, a->n, a->all, a->n_all);
    /* The object row first, the parts after, for both backends: PostgreSQL's insert of a
     * chunk map holds the rows of the chunks it shares with other data ids (the parts' chunks a
     * commit takes by reference) and refuses one whose rows are gone, so the parts' rows must
     * still list them; dropping them after queues chunks for GC that the object lists, entries
     * that are stale at once and never served. SQLite's insert reads no other row, so the order
     * is free there, and the transaction's end state is the same either way. */
    if (st == WH_OK)
        st = meta_ver_commit(d->ver, c, a->bucket, a->key, strlen(a->key), a->meta, a->ref, a->old,
                             a->cond);
    return st == WH_OK ? meta_mpu_drop(d, c, a->upload_id, a->all, a->n_all, a->ref->id) : st;
}

wh_status_t meta_mpu_bucket_drop(const meta_mpu_dialect_t *d, void *c, const char *bucket,
                                 meta_part_t **parts, size_t *n)
{
    char(*ids)[65] = NULL;
    size_t cnt = 0;
    wh_status_t st = d->bucket_upload_ids(c, bucket, &ids, &cnt);
    size_t pcap = *n;
    for (size_t i = 0; st == WH_OK && i < cnt; i++) {
        meta_part_t *ps = NULL;
        size_t np = 0;
        st = d->parts_read(c, ids[i], 0, 0, &ps, &np, NULL);
        if (st == WH_OK)
            st = meta_mpu_drop(d, c, ids[i], ps, np, NULL);
        if (st == WH_OK && np && !meta_grow((void **)parts, &pcap, *n + np, sizeof **parts))
            st = WH_ERR_NOMEM;
        if (st != WH_OK) {
            meta_parts_free(ps, np);
            break;
        }
        if (np) /* memcpy from NULL (no parts) is undefined even for 0 bytes */
            memcpy(*parts + *n, ps, np * sizeof *ps); /* the chunk maps move with the copies */
        *n += np;
        free(ps);
    }
    free(ids);
    return st;
}

/* ---- the slots: each rule in one write transaction of the backend's ---- */

typedef struct {
    const char *bucket, *key, *upload_id;
    const data_part_info_t *info;
    const data_ref_t *ref;
    data_ref_t *old;
    const meta_mpu_dialect_t *d;
} meta_part_arg_t;

static wh_status_t tx_part_put(void *conn, void *arg)
{
    meta_part_arg_t *a = arg;
    return meta_mpu_part_put(a->d, conn, a->bucket, a->key, a->upload_id, a->info, a->ref, a->old);
}

wh_status_t meta_rules_part_put(meta_t *m, const char *bucket, const char *key,
                                const char *upload_id, const data_part_info_t *info,
                                const data_ref_t *ref, data_ref_t *old)
{
    meta_part_arg_t a = {bucket, key, upload_id, info, ref, old, m->rules->mpu};
    memset(old, 0, sizeof *old);
    wh_status_t st = m->rules->write_group(m, tx_part_put, &a);
    if (st != WH_OK)
        data_ref_clear(old);
    return st;
}

static wh_status_t tx_upload_delete(void *conn, void *arg)
{
    meta_mpu_done_t *a = arg;
    return meta_mpu_abort(a->d, conn, a);
}

wh_status_t meta_rules_upload_delete(meta_t *m, const char *bucket, const char *key,
                                     const char *upload_id, meta_part_t **parts, size_t *n)
{
    meta_mpu_done_t a = {.bucket = bucket, .key = key, .upload_id = upload_id, .d = m->rules->mpu};
    wh_status_t st = m->rules->write(m, tx_upload_delete, &a);
    if (st != WH_OK) {
        meta_parts_free(a.all, a.n_all);
        return st;
    }
    *parts = a.all;
    *n = a.n_all;
    return WH_OK;
}

static wh_status_t tx_upload_complete(void *conn, void *arg)
{
    meta_mpu_done_t *a = arg;
    return meta_mpu_complete(a->d, conn, a);
}

wh_status_t meta_rules_upload_complete(meta_t *m, const char *bucket, const char *key,
                                       const char *upload_id, const meta_part_t *parts, size_t n,
                                       data_obj_meta_t *meta, const data_ref_t *ref,
                                       data_ref_t *old, meta_part_t **all, size_t *n_all,
                                       data_cond_t *cond)
{
    memset(old, 0, sizeof *old);
    meta_mpu_done_t a = {bucket, key, upload_id, parts, n,    meta,
                         ref,    old, NULL,      0,     cond, m->rules->mpu};
    wh_status_t st = m->rules->write(m, tx_upload_complete, &a);
    if (st != WH_OK) {
        data_ref_clear(old);
        meta_parts_free(a.all, a.n_all);
        return st;
    }
    *all = a.all;
    *n_all = a.n_all;
    return WH_OK;
}
