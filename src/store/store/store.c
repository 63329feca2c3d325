/* SPDX-License-Identifier: Apache-2.0 */
/* The storage engine over its two tables (store.h): validation, open, buckets, GET/HEAD,
 * DELETE, COPY, listing. Writers are in writer.c, multipart in mpu.c. */
#include "store/store.h"

#include "base/codec.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "store/crypt.h"
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- validation ---- */

bool store_bucket_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t n = strlen(name);
    if (n < 3 || n > 63)
        return false;
    bool all_digits_dots = true;
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '.' && c != '-')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
        if (c == '.' && name[i + 1] == '.')
            return false;
        if (c == '.')
            dots++;
        else if (!(c >= '0' && c <= '9'))
            all_digits_dots = false;
    }
    /* Formatted like an IPv4 address (the start/end and ".." rules already hold). */
    if (all_digits_dots && dots == 3) {
        int run = 0;
        bool ip = true;
        for (size_t i = 0; i <= n; i++) {
            if (i == n || name[i] == '.') {
                if (run < 1 || run > 3)
                    ip = false;
                run = 0;
            } else {
                run++;
            }
        }
        if (ip)
            return false;
    }
    /* Prefixes and suffixes AWS reserves. */
    static const char *const bad_prefix[] = {"xn--", "sthree-", "amzn-s3-demo-"};
    static const char *const bad_suffix[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3",
                                             "--table-s3"};
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad_prefix); i++)
        if (strncmp(name, bad_prefix[i], strlen(bad_prefix[i])) == 0)
            return false;
    for (size_t i = 0; i < WH_ARRAY_SIZE(bad_suffix); i++) {
        size_t sl = strlen(bad_suffix[i]);
        if (n >= sl && strcmp(name + n - sl, bad_suffix[i]) == 0)
            return false;
    }
    return true;
}

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF, and no NUL. */
bool store_key_valid(const char *key, size_t len)
{
    if (!key || len == 0 || len > STORE_MAX_KEY)
        return false;
    const unsigned char *s = (const unsigned char *)key;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            else if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            else if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            return false; /* continuation byte, C0/C1 overlong lead, or F5..FF */
        }
        if (len - i - 1 < need)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        i += need + 1;
    }
    return true;
}

wh_status_t store_random_id(char out[META_ID_LEN + 1])
{
    uint8_t raw[META_ID_LEN / 2];
    if (wh_random_bytes(raw, sizeof raw) != 0) {
        wh_error("store", "cannot get random bytes for an id");
        return WH_ERR_INTERNAL;
    }
    wh_hex_encode(raw, sizeof raw, out);
    return WH_OK;
}

/* ---- open/close ---- */

static wh_status_t store_referenced(void *arg, const char *id)
{
    return meta_data_referenced((meta_t *)arg, id);
}

wh_status_t store_open_tables(meta_t *meta, data_table_t *data, store_t **out)
{
    if (!data || !data_ops_complete(data->ops)) {
        /* A table missing a required slot is a programming error: refused here, once, so
         * that the dispatch functions (data.h) never test those slots. */
        wh_error("store", "data table %s lacks a required operation",
                 data && data->ops && data->ops->name ? data->ops->name : "(none)");
        meta_close(meta);
        return WH_ERR_INVALID;
    }
    store_t *s = calloc(1, sizeof *s);
    if (!s) {
        meta_close(meta);
        data_close(data);
        return WH_ERR_NOMEM;
    }
    s->meta = meta;
    s->data = data;
    wh_status_t st = data_recover(data, store_referenced, meta);
    if (st == WH_ERR_UNSUPPORTED) /* nothing to recover */
        st = WH_OK;
    if (st != WH_OK) {
        store_close(s);
        return st;
    }
    *out = s;
    return WH_OK;
}

wh_status_t store_open(const store_config_t *cfg, store_t **out)
{
    if (!cfg->data_dir || !cfg->data_dir[0]) {
        wh_error("store", "no data directory given");
        return WH_ERR_INVALID;
    }
    data_local_config_t lc = {
        .dir = cfg->data_dir,
        .reserve_bytes = cfg->reserve_bytes ? cfg->reserve_bytes : STORE_DEFAULT_RESERVE,
        .high_water_pct = cfg->high_water_pct ? cfg->high_water_pct : STORE_DEFAULT_HIGH_WATER,
        .durability = cfg->durability,
        .direct_writes = cfg->direct_writes,
        .map_writes = cfg->map_writes,
        .put_stripes = cfg->put_stripes,
        .stripe_min = cfg->put_stripe_min,
    };
    if (cfg->reserve_bytes == UINT64_MAX)
        lc.reserve_bytes = 0; /* explicitly none */
    /* Local data first: it takes the directory's lock, and on a full disk lets go of the
     * reserve before SQLite needs any room to open. */
    data_table_t *data = NULL;
    wh_status_t st = data_local_open(&lc, &data);
    if (st != WH_OK)
        return st;
    meta_t *meta = NULL;
    if (cfg->meta_url && cfg->meta_url[0]) {
        st = store_meta_open(cfg->meta_url, &meta);
    } else {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/meta.db", cfg->data_dir) >= sizeof path) {
            wh_error("store", "data directory path is too long: %s", cfg->data_dir);
            st = WH_ERR_INVALID;
        } else {
            st = meta_sqlite_open(path, &meta);
        }
    }
    if (st != WH_OK) {
        data_close(data);
        return st;
    }
    return store_open_tables(meta, data, out);
}

void store_close(store_t *st)
{
    if (!st)
        return;
    /* Data first: a cluster's data table uses the metadata table until it stops. */
    if (st->data)
        data_close(st->data);
    meta_close(st->meta);
    free(st);
}

meta_t *store_meta(store_t *st)
{
    return st->meta;
}

data_table_t *store_data(store_t *st)
{
    return st->data;
}

void store_meta_tx_stats(uint64_t *retries, uint64_t *retryable)
{
    meta_tx_stats(retries, retryable);
}

wh_status_t store_space(store_t *st, data_space_t *out)
{
    memset(out, 0, sizeof *out);
    return data_space(st->data, out);
}

wh_status_t store_run_freeing(store_t *st, store_freeing_fn fn, void *arg)
{
    wh_status_t s = fn(st, arg);
    if (s == WH_ERR_NO_SPACE && data_reserve_release(st->data) == WH_OK)
        s = fn(st, arg);
    data_reserve_rearm(st->data);
    return s;
}

void store_release(store_t *st, const data_ref_t *ref)
{
    if (ref && ref->id[0])
        data_release(st->data, ref);
}

/* ---- buckets ---- */

wh_status_t store_bucket_create(store_t *st, const store_bucket_args_t *a)
{
    if (!store_bucket_name_valid(a->bucket))
        return WH_ERR_INVALID;
    return meta_bucket_create(st->meta, a->bucket, time(NULL), a->owner ? a->owner : "", a->acl);
}

wh_status_t store_bucket_auth_get(store_t *st, const char *bucket, data_bucket_auth_t *out)
{
    return meta_bucket_auth_get(st->meta, bucket, out);
}

wh_status_t store_bucket_set_acl(store_t *st, const char *bucket, const char *acl)
{
    return meta_bucket_set_acl(st->meta, bucket, acl);
}

wh_status_t store_bucket_set_policy(store_t *st, const char *bucket, const char *policy)
{
    return meta_bucket_set_policy(st->meta, bucket, policy);
}

wh_status_t store_bucket_attr_set(store_t *st, const char *bucket, data_battr_t which,
                                  const char *value)
{
    return meta_bucket_attr_set(st->meta, bucket, which, value);
}

wh_status_t store_bucket_attr_get(store_t *st, const char *bucket, data_battr_t which, char **out)
{
    return meta_bucket_attr_get(st->meta, bucket, which, out);
}

wh_status_t store_object_set_acl(store_t *st, const char *bucket, const char *key, const char *acl)
{
    size_t klen = strlen(key);
    if (!store_key_valid(key, klen))
        return WH_ERR_INVALID;
    return meta_object_set_acl(st->meta, bucket, key, klen, acl);
}

static wh_status_t store_bucket_delete_fn(store_t *st, void *arg)
{
    meta_part_t *parts = NULL;
    size_t np = 0;
    wh_status_t s = meta_bucket_delete(st->meta, (const char *)arg, &parts, &np);
    if (s != WH_OK)
        return s;
    for (size_t i = 0; i < np; i++) /* the uploads dropped with the bucket */
        store_release(st, &parts[i].ref);
    meta_parts_free(parts, np);
    return WH_OK;
}

wh_status_t store_bucket_delete(store_t *st, const char *bucket)
{
    return store_run_freeing(st, store_bucket_delete_fn, (void *)bucket);
}

wh_status_t store_bucket_exists(store_t *st, const char *bucket)
{
    return meta_bucket_exists(st->meta, bucket);
}

wh_status_t store_bucket_list(store_t *st, data_bucket_info_t **out, size_t *n)
{
    return meta_bucket_list(st->meta, out, n);
}

/* ---- readers ---- */

wh_status_t store_reader_open_ref(store_t *st, const data_ref_t *ref, uint64_t size,
                                  data_reader_t **out)
{
    return data_reader_open(st->data, ref, size, out);
}

/* A delete marker as the answer of a read: NOT_FOUND, meta saying which marker. */
static wh_status_t store_dm_answer(data_obj_meta_t *m, data_obj_meta_t *meta)
{
    if (meta) {
        memset(meta, 0, sizeof *meta);
        meta->delete_marker = true;
        memcpy(meta->version_id, m->version_id, sizeof meta->version_id);
        meta->mtime = m->mtime;
    }
    data_obj_meta_free(m);
    return WH_ERR_NOT_FOUND;
}

wh_status_t store_object_reader(store_t *st, const store_read_args_t *a, data_obj_meta_t *meta,
                                data_reader_t **out)
{
    const char *bucket = a->bucket, *key = a->key;
    size_t klen = strlen(key);
    if (meta)
        memset(meta, 0, sizeof *meta);
    data_obj_meta_t m;
    data_ref_t ref;
    memset(&ref, 0, sizeof ref);
    /* A writer releases replaced bytes right after its commit, without waiting for readers:
     * a lookup that read the old row just before may find them gone. The row has then
     * changed, so look again (twice is plenty; a third miss is real damage). */
    for (int attempt = 0;; attempt++) {
        wh_status_t s =
            meta_object_get_version(st->meta, bucket, key, klen, a->version_id, &m, &ref);
        if (s != WH_OK)
            return s;
        if (m.delete_marker) {
            data_ref_clear(&ref);
            return store_dm_answer(&m, meta);
        }
        uint64_t stored = m.size;
        s = m.sse ? store_sse_stored_size(&m, &stored) : WH_OK;
        if (s != WH_OK) {
            data_obj_meta_free(&m);
            data_ref_clear(&ref);
            return WH_ERR_IO;
        }
        s = store_reader_open_ref(st, &ref, stored, out);
        if (s == WH_OK && m.sse)
            s = store_crypt_wrap(*out, &m, out);
        if (s == WH_ERR_NOT_FOUND && attempt < 2) {
            data_obj_meta_free(&m);
            data_ref_clear(&ref);
            continue;
        }
        if (s == WH_ERR_NOT_FOUND) {
            wh_error("store", "the bytes of bucket=%s data=%s are missing", bucket, ref.id);
            s = WH_ERR_IO;
        }
        data_ref_clear(&ref);
        if (s != WH_OK) {
            data_obj_meta_free(&m);
            return s;
        }
        if (meta)
            *meta = m;
        else
            data_obj_meta_free(&m);
        return WH_OK;
    }
}

uint64_t store_reader_size(const data_reader_t *r)
{
    return r->size;
}

int store_reader_fd(const data_reader_t *r)
{
    return data_reader_fd(r);
}

wh_status_t store_reader_extent(const data_reader_t *r, uint64_t off, int *fd, uint64_t *file_off,
                                uint64_t *len)
{
    if (off >= r->size)
        return WH_ERR_RANGE;
    wh_status_t s = data_reader_extent(r, off, fd, file_off, len);
    if (s != WH_ERR_UNSUPPORTED)
        return s;
    int f = store_reader_fd(r);
    if (f < 0)
        return WH_ERR_UNSUPPORTED;
    *fd = f;
    *file_off = off;
    *len = r->size - off;
    return WH_OK;
}

wh_status_t store_reader_pread(data_reader_t *r, void *buf, size_t n, uint64_t off)
{
    if (off > r->size || n > r->size - off)
        return WH_ERR_RANGE;
    return data_reader_pread(r, buf, n, off);
}

wh_status_t store_reader_rdma_get(data_reader_t *r, const struct xfer_token_arg *token,
                                  const wh_peer_t *peer, uint64_t off, uint64_t len,
                                  data_rdma_result_t *res)
{
    memset(res, 0, sizeof *res);
    if (off > r->size || len > r->size - off)
        return WH_ERR_RANGE;
    return data_rdma_get(r, token, peer, off, len, res);
}

wh_status_t store_reader_prepare(data_reader_t *r, uint64_t off, uint64_t len, char *msg,
                                 size_t msglen)
{
    if (msglen)
        msg[0] = '\0';
    if (off > r->size || len > r->size - off)
        return WH_ERR_RANGE;
    if (len == 0)
        return WH_OK;
    wh_status_t s = data_reader_prepare(r, off, len, msg, msglen);
    return s == WH_ERR_UNSUPPORTED ? WH_OK : s; /* nothing to prepare */
}

void store_reader_close(data_reader_t *r)
{
    if (r)
        data_reader_close(r);
}

/* ---- objects ---- */

wh_status_t store_object_open(store_t *st, const store_read_args_t *a, data_obj_meta_t *meta,
                              int *fd)
{
    if (!fd) {
        data_obj_meta_t m;
        wh_status_t s = meta_object_get_version(st->meta, a->bucket, a->key, strlen(a->key),
                                                a->version_id, &m, NULL);
        if (s != WH_OK)
            return s;
        if (m.delete_marker)
            return store_dm_answer(&m, meta);
        if (meta)
            *meta = m;
        else
            data_obj_meta_free(&m);
        return WH_OK;
    }
    data_reader_t *r = NULL;
    data_obj_meta_t m;
    wh_status_t s = store_object_reader(st, a, &m, &r);
    if (s != WH_OK) {
        if (meta)
            *meta = m; /* a delete marker says so */
        return s;
    }
    int rfd = store_reader_fd(r);
    int dfd = rfd >= 0 ? fcntl(rfd, F_DUPFD_CLOEXEC, 0) : -1;
    if (dfd < 0) {
        s = rfd < 0 ? WH_ERR_UNSUPPORTED : wh_status_from_errno(errno);
        if (rfd >= 0)
            wh_error("store", "cannot duplicate an object file descriptor: %m");
        store_reader_close(r);
        data_obj_meta_free(&m);
        return s;
    }
    store_reader_close(r);
    *fd = dfd;
    if (meta)
        *meta = m;
    else
        data_obj_meta_free(&m);
    return WH_OK;
}

typedef struct {
    const store_delete_args_t *a;
    data_del_result_t *res;
    data_ref_t old;
} store_del_arg_t;

static wh_status_t store_object_delete_fn(store_t *st, void *arg)
{
    store_del_arg_t *d = arg;
    const store_delete_args_t *a = d->a;
    /* Only the data of a removed version comes back: an archived one keeps its bytes. */
    wh_status_t s = meta_object_delete_version(st->meta, a->bucket, a->key, strlen(a->key),
                                               a->version_id, a->bypass, a->cond, d->res, &d->old);
    if (s == WH_OK)
        store_release(st, &d->old);
    data_ref_clear(&d->old);
    return s;
}

wh_status_t store_object_delete(store_t *st, const store_delete_args_t *a, data_del_result_t *res)
{
    store_del_arg_t d;
    data_del_result_t dummy;
    memset(&d, 0, sizeof d);
    d.a = a;
    d.res = res ? res : &dummy;
    return store_run_freeing(st, store_object_delete_fn, &d);
}

/* Decrypted source bytes into an (encrypting) writer, 1 MiB at a time. */
static wh_status_t copy_through(data_reader_t *r, store_writer_t *w, uint64_t size)
{
    const size_t chunk = 1u << 20;
    char *buf = malloc(chunk);
    if (!buf)
        return WH_ERR_NOMEM;
    wh_status_t s = WH_OK;
    for (uint64_t done = 0; done < size && s == WH_OK;) {
        size_t n = (size_t)WH_MIN((uint64_t)chunk, size - done);
        s = store_reader_pread(r, buf, n, done);
        if (s == WH_OK)
            s = store_writer_write(w, buf, n);
        done += n;
    }
    free(buf);
    return s;
}

wh_status_t store_object_copy(store_t *st, const store_copy_args_t *a, data_obj_meta_t *out_meta)
{
    const char *sbucket = a->src_bucket, *dbucket = a->dst_bucket, *dkey = a->dst_key;
    const data_obj_meta_t *replace_meta = a->replace_meta;
    store_copy_sse_t *sse = a->sse;
    data_obj_meta_t src;
    data_reader_t *r = NULL;
    store_writer_t *w = NULL;
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    memset(&old, 0, sizeof old);
    size_t dklen = strlen(dkey);
    if (!store_key_valid(dkey, dklen)) {
        wh_warn("store", "rejecting invalid destination key (%zu bytes)", dklen);
        return WH_ERR_INVALID;
    }
    wh_status_t s = store_object_reader(
        st,
        &(store_read_args_t){.bucket = sbucket, .key = a->src_key, .version_id = a->src_version},
        &src, &r);
    if (s != WH_OK)
        return s;
    const char *dst_sse = sse ? sse->dst_sse : NULL;
    bool recrypt = src.sse || dst_sse;
    if (sse) {
        snprintf(sse->src_etag, sizeof sse->src_etag, "%s", src.etag);
        sse->src_size = src.size;
    }
    /* An SSE-C source's ETag is store_sse_c_etag's under its data key (or, for rows written
     * before that, the MD5): the key is kept to check the bytes read against it. */
    uint8_t src_key[STORE_SSE_KEY_LEN];
    bool src_c = false;
    char new_etag[33] = "";
    if (src.sse) {
        store_sse_t ps;
        s = sse && sse->src_key ? sse->src_key(sse->arg, &src, src_key) : WH_ERR_AUTH;
        if (s == WH_OK)
            s = store_reader_set_key(r, src_key);
        if (s == WH_OK)
            src_c = store_sse_parse(src.sse, &ps) == WH_OK && ps.kind == STORE_SSE_C;
        if (s != WH_OK)
            goto out;
    }
    s = store_writer_open(st, &w);
    if (s != WH_OK)
        goto out;
    if (dst_sse) {
        store_sse_t ds;
        s = store_sse_parse(dst_sse, &ds);
        if (s == WH_OK)
            s = store_writer_encrypt(w, sse->dst_key, dst_sse, 0);
        if (s != WH_OK)
            goto out;
    }
    s = recrypt ? copy_through(r, w, src.size) : store_writer_append(w, r, 0, src.size);
    if (s != WH_OK)
        goto out;
    if (recrypt && strlen(src.etag) == 32) { /* an MD5 (sealed under SSE-C): the bytes read */
        char md5[33], mac[33] = "";
        store_writer_md5_hex(w, md5);
        if (src_c)
            store_sse_c_etag(src_key, md5, mac);
        if (strcmp(md5, src.etag) != 0 && strcmp(mac, src.etag) != 0) {
            wh_error("store", "copy of bucket=%s: the source's bytes do not match its etag",
                     sbucket);
            s = WH_ERR_CHECKSUM;
            goto out;
        }
        /* The copy's ETag is its own kind's: the MD5, sealed when it is SSE-C. */
        memcpy(new_etag, md5, sizeof md5);
        store_crypt_etag_seal(w, new_etag);
    }

    data_obj_meta_t nm = src;
    if (recrypt) { /* the plaintext went through the writer: one blob, no part boundaries */
        nm.sse = (char *)dst_sse;
        nm.parts = 0;
        nm.part_sizes = NULL;
        if (new_etag[0])
            memcpy(nm.etag, new_etag, sizeof new_etag);
    }
    nm.user_meta_json = src.user_meta_json;
    nm.acl = NULL; /* S3 never copies an ACL */
    if (replace_meta) {
        snprintf(nm.content_type, sizeof nm.content_type, "%s", replace_meta->content_type);
        nm.user_meta_json = replace_meta->user_meta_json;
        snprintf(nm.owner, sizeof nm.owner, "%s", replace_meta->owner);
        nm.acl = replace_meta->acl;
    }
    /* The copy's lock is what the request set (replace_meta), never the source's. */
    nm.lock_mode = replace_meta ? replace_meta->lock_mode : DATA_LOCK_NONE;
    nm.lock_until = replace_meta ? replace_meta->lock_until : 0;
    nm.legal_hold = replace_meta ? replace_meta->legal_hold : false;
    nm.mtime = time(NULL);
    s = store_writer_finish(w, &ref);
    if (s != WH_OK)
        goto out;
    s = meta_object_put(st->meta, dbucket, dkey, dklen, &nm, &ref, &old, NULL);
    if (s != WH_OK)
        goto out;
    store_release(st, &old);
    if (out_meta) {
        *out_meta = nm;
        out_meta->user_meta_json = nm.user_meta_json ? strdup(nm.user_meta_json) : NULL;
        out_meta->acl = nm.acl ? strdup(nm.acl) : NULL;
        out_meta->tags = nm.tags ? strdup(nm.tags) : NULL;
        out_meta->part_sizes = nm.part_sizes ? strdup(nm.part_sizes) : NULL;
        out_meta->sse = nm.sse ? strdup(nm.sse) : NULL;
    }
    store_writer_free(w);
    w = NULL;
out:
    store_writer_fail(w, s);
    store_reader_close(r);
    data_ref_clear(&ref);
    data_ref_clear(&old);
    data_obj_meta_free(&src);
    memset(src_key, 0, sizeof src_key);
    return s;
}

/* ---- listing ---- */

wh_status_t store_object_list(store_t *st, const char *bucket, const data_list_params_t *p,
                              data_list_result_t *out)
{
    return meta_object_list(st->meta, bucket, p, out);
}
