/* SPDX-License-Identifier: Apache-2.0 */
/* The data table contract, with a second implementation: bytes in memory, cut into chunks,
 * readers without an fd (pread only), delegated RDMA hooks, and multipart completion by
 * reference (the object reuses its parts' chunks). The store must work over it exactly as a
 * cluster gateway's remote table will: chunk maps committed with the rows, readers without a
 * local file, released bytes only once no row references them. Runs against SQLite and (the
 * /pg run) PostgreSQL metadata. */
#include "base/crc.h"
#include "base/log.h"
#include "helpers.h"
#include "xfer/token.h"

#include <pthread.h>

#define CHUNK 1000 /* small, so objects span several chunks */
#define MAX_CHUNKS 8192

/* The "storage servers": chunk id -> bytes. */
typedef struct {
    char id[DATA_ID_LEN + 1];
    char *bytes;
    size_t len;
    bool live;
} mem_chunk_t;

typedef struct {
    data_table_t base;
    pthread_mutex_t lock;
    mem_chunk_t chunks[MAX_CHUNKS];
    size_t n;
    unsigned next_id;
    int released, rdma_gets, rdma_puts;
    const xfer_token_arg_t *last_token; /* what the last delegated RDMA call was handed */
} mem_t;

typedef struct {
    data_writer_t base;
    data_ref_t ref; /* chunks written so far (ids into mem) */
    data_ref_t own; /* those this writer made (not appended by reference) */
    uint64_t size;
    char *cur; /* the chunk being filled */
    size_t cur_len;
} mem_writer_t;

typedef struct {
    data_reader_t base;
    data_ref_t ref;
} mem_reader_t;

static mem_t *MEM(data_table_t *d)
{
    return (mem_t *)d;
}

static mem_chunk_t *mem_find(mem_t *m, const char *id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->chunks[i].live && strcmp(m->chunks[i].id, id) == 0)
            return &m->chunks[i];
    return NULL;
}

static wh_status_t mem_flush(mem_writer_t *w)
{
    if (!w->cur_len)
        return WH_OK;
    mem_t *m = MEM(w->base.data);
    pthread_mutex_lock(&m->lock);
    mem_chunk_t *c = &m->chunks[m->n++];
    snprintf(c->id, sizeof c->id, "%032x", ++m->next_id);
    c->bytes = w->cur;
    c->len = w->cur_len;
    c->live = true;
    pthread_mutex_unlock(&m->lock);
    data_chunk_t *nc = realloc(w->ref.chunks, (w->ref.n_chunks + 1) * sizeof *nc);
    data_chunk_t *ch = &nc[w->ref.n_chunks++];
    w->ref.chunks = nc;
    memset(ch, 0, sizeof *ch);
    memcpy(ch->id, c->id, sizeof ch->id);
    ch->offset = w->size - w->cur_len;
    ch->length = w->cur_len;
    ch->crc64nvme = wh_crc64nvme(0, c->bytes, c->len);
    ch->n_replicas = 2;
    ch->replicas[0] = 1;
    ch->replicas[1] = 2;
    data_chunk_t *oc = realloc(w->own.chunks, (w->own.n_chunks + 1) * sizeof *oc);
    w->own.chunks = oc;
    oc[w->own.n_chunks++] = *ch;
    w->cur = NULL;
    w->cur_len = 0;
    return WH_OK;
}

static wh_status_t mem_writer_open(data_table_t *d, data_writer_t **out)
{
    mem_writer_t *w = calloc(1, sizeof *w);
    w->base.data = d;
    *out = &w->base;
    return WH_OK;
}

static wh_status_t mem_write(data_writer_t *dw, const void *p, size_t n)
{
    mem_writer_t *w = (mem_writer_t *)dw;
    const char *s = p;
    while (n) {
        if (!w->cur)
            w->cur = malloc(CHUNK);
        size_t k = CHUNK - w->cur_len < n ? CHUNK - w->cur_len : n;
        memcpy(w->cur + w->cur_len, s, k);
        w->cur_len += k;
        w->size += k;
        s += k;
        n -= k;
        if (w->cur_len == CHUNK)
            mem_flush(w);
    }
    return WH_OK;
}

/* By reference: the source's whole chunks are shared, not copied. */
static wh_status_t mem_append(data_writer_t *dw, data_reader_t *r, uint64_t off, uint64_t len)
{
    mem_writer_t *w = (mem_writer_t *)dw;
    mem_reader_t *mr = (mem_reader_t *)r;
    if (off != 0 || len != r->size || w->cur_len)
        return WH_ERR_UNSUPPORTED; /* whole, chunk-aligned sources only in this table */
    for (size_t i = 0; i < mr->ref.n_chunks; i++) {
        data_chunk_t *nc = realloc(w->ref.chunks, (w->ref.n_chunks + 1) * sizeof *nc);
        w->ref.chunks = nc;
        nc[w->ref.n_chunks] = mr->ref.chunks[i];
        nc[w->ref.n_chunks].offset = w->size + mr->ref.chunks[i].offset;
        w->ref.n_chunks++;
    }
    w->size += len;
    return WH_OK;
}

static wh_status_t mem_rdma_put(data_writer_t *dw, const xfer_token_arg_t *token,
                                const wh_peer_t *peer, uint64_t size, data_rdma_result_t *res)
{
    /* Stands in for storage servers reading the client's region: the "region" is the token's
     * string. */
    MEM(dw->data)->rdma_puts++;
    MEM(dw->data)->last_token = token;
    if (strlen(token->str) != size)
        return WH_ERR_INVALID;
    mem_write(dw, token->str, size);
    res->bytes = size;
    res->crc64nvme = wh_crc64nvme(0, token->str, size);
    snprintf(res->md5_hex, sizeof res->md5_hex, "%032x", (unsigned)size);
    return WH_OK;
}

static wh_status_t mem_finish(data_writer_t *dw, data_ref_t *ref)
{
    mem_writer_t *w = (mem_writer_t *)dw;
    mem_flush(w);
    mem_t *m = MEM(dw->data);
    pthread_mutex_lock(&m->lock);
    snprintf(w->ref.id, sizeof w->ref.id, "%032x", ++m->next_id | 0x10000000u);
    pthread_mutex_unlock(&m->lock);
    memset(ref, 0, sizeof *ref);
    return data_ref_copy(ref, &w->ref);
}

static void mem_writer_free(data_writer_t *dw)
{
    mem_writer_t *w = (mem_writer_t *)dw;
    free(w->cur);
    data_ref_clear(&w->ref);
    data_ref_clear(&w->own);
    free(w);
}

static void mem_release(data_table_t *d, const data_ref_t *ref)
{
    mem_t *m = MEM(d);
    pthread_mutex_lock(&m->lock);
    m->released++;
    for (size_t i = 0; i < ref->n_chunks; i++) {
        mem_chunk_t *c = mem_find(m, ref->chunks[i].id);
        if (c) {
            c->live = false;
            free(c->bytes);
            c->bytes = NULL;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static void mem_writer_abort(data_writer_t *dw)
{
    mem_writer_t *w = (mem_writer_t *)dw;
    mem_flush(w);
    /* Only chunks this writer made: appended ones belong to their source. */
    mem_release(dw->data, &w->own);
    MEM(dw->data)->released--; /* counts releases by the store only */
    mem_writer_free(dw);
}

static wh_status_t mem_reader_open(data_table_t *d, const data_ref_t *ref, uint64_t size,
                                   data_reader_t **out)
{
    mem_t *m = MEM(d);
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < ref->n_chunks; i++) {
        if (!mem_find(m, ref->chunks[i].id)) {
            pthread_mutex_unlock(&m->lock);
            return WH_ERR_NOT_FOUND;
        }
    }
    pthread_mutex_unlock(&m->lock);
    mem_reader_t *r = calloc(1, sizeof *r);
    r->base.data = d;
    r->base.size = size;
    data_ref_copy(&r->ref, ref);
    *out = &r->base;
    return WH_OK;
}

static wh_status_t mem_reader_pread(data_reader_t *rr, void *buf, size_t n, uint64_t off)
{
    mem_reader_t *r = (mem_reader_t *)rr;
    mem_t *m = MEM(rr->data);
    char *dst = buf;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < r->ref.n_chunks && n; i++) {
        const data_chunk_t *ch = &r->ref.chunks[i];
        if (off >= ch->offset + ch->length || off < ch->offset)
            continue;
        mem_chunk_t *c = mem_find(m, ch->id);
        if (!c) {
            pthread_mutex_unlock(&m->lock);
            return WH_ERR_IO;
        }
        size_t in = (size_t)(off - ch->offset), k = ch->length - in < n ? ch->length - in : n;
        memcpy(dst, c->bytes + in, k);
        dst += k;
        off += k;
        n -= k;
    }
    pthread_mutex_unlock(&m->lock);
    return n ? WH_ERR_IO : WH_OK;
}

static wh_status_t mem_rdma_get(data_reader_t *r, const xfer_token_arg_t *token,
                                const wh_peer_t *peer, uint64_t off, uint64_t len,
                                data_rdma_result_t *res)
{
    MEM(r->data)->rdma_gets++;
    MEM(r->data)->last_token = token;
    char *buf = malloc(len ? len : 1);
    wh_status_t st = mem_reader_pread(r, buf, len, off);
    res->bytes = st == WH_OK ? len : 0;
    res->crc64nvme = wh_crc64nvme(0, buf, len);
    free(buf);
    return st;
}

static void mem_reader_close(data_reader_t *rr)
{
    mem_reader_t *r = (mem_reader_t *)rr;
    data_ref_clear(&r->ref);
    free(r);
}

static void mem_close(data_table_t *d)
{
    mem_t *m = MEM(d);
    for (size_t i = 0; i < m->n; i++)
        free(m->chunks[i].bytes);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static const data_ops_t MEM_OPS = {
    .name = "memory-chunks",
    .close = mem_close,
    .writer_open = mem_writer_open,
    .write = mem_write,
    .append = mem_append,
    .rdma_put = mem_rdma_put,
    .finish = mem_finish,
    .writer_free = mem_writer_free,
    .writer_abort = mem_writer_abort,
    .reader_open = mem_reader_open,
    .reader_pread = mem_reader_pread,
    .rdma_get = mem_rdma_get,
    .reader_close = mem_reader_close,
    .release = mem_release,
};

static size_t live_chunks(mem_t *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        n += m->chunks[i].live;
    return n;
}

static void test_remote_style_table(void)
{
    char *dir = th_mkdtemp();
    meta_t *meta = NULL;
    CHECK(th_meta_open(dir, &meta) == WH_OK);
    if (!meta)
        return;
    mem_t *mem = calloc(1, sizeof *mem);
    mem->base.ops = &MEM_OPS;
    pthread_mutex_init(&mem->lock, NULL);
    store_t *st = NULL;
    CHECK(store_open_tables(meta, &mem->base, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "remote"}) == WH_OK);

    /* PUT 3500 bytes: four chunks, committed with the row. */
    char body[3500];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)(i * 7 + 3);
    data_obj_meta_t m;
    CHECK(th_put(st, "remote", "obj", body, sizeof body, &m) == WH_OK);
    CHECK_EQ_U64(live_chunks(mem), 4);
    data_ref_t ref;
    CHECK(meta_object_get(store_meta(st), "remote", "obj", 3, NULL, &ref) == WH_OK);
    CHECK_EQ_U64(ref.n_chunks, 4);
    CHECK(ref.n_chunks == 4 && ref.chunks[3].offset == 3000 && ref.chunks[3].length == 500);
    data_ref_clear(&ref);

    /* GET without an fd: pread, and delegated RDMA answered by the table. */
    data_reader_t *r = NULL;
    data_obj_meta_t rm;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "remote", .key = "obj"}, &rm,
                              &r) == WH_OK);
    if (r) {
        CHECK(store_reader_fd(r) == -1);
        char got[3500];
        CHECK(store_reader_pread(r, got, sizeof got, 0) == WH_OK &&
              memcmp(got, body, sizeof body) == 0);
        CHECK(store_reader_pread(r, got, 1200, 900) == WH_OK && memcmp(got, body + 900, 1200) == 0);
        data_rdma_result_t res;
        wh_peer_t peer = {.addr = "127.0.0.1:1"};
        /* The token reaches the table as the front parsed it, passed through untouched. */
        xfer_token_arg_t tok;
        xfer_token_arg_parse(&tok, "1000:1000:ofi1:shm:0011:1");
        CHECK(tok.st == WH_OK);
        CHECK(store_reader_rdma_get(r, &tok, &peer, 100, 2000, &res) == WH_OK);
        CHECK(MEM(store_data(st))->last_token == &tok);
        CHECK_EQ_U64(res.bytes, 2000);
        CHECK_EQ_U64(res.crc64nvme, wh_crc64nvme(0, body + 100, 2000));
        CHECK(store_reader_rdma_get(r, &tok, &peer, 3000, 501, &res) == WH_ERR_RANGE);
        store_reader_close(r);
        data_obj_meta_free(&rm);
    }
    int fd = -1;
    CHECK(store_object_open(st, &(store_read_args_t){.bucket = "remote", .key = "obj"}, &rm, &fd) ==
          WH_ERR_UNSUPPORTED);

    /* Overwrite: the old chunks are released after the commit. */
    CHECK(th_put(st, "remote", "obj", "short", 5, NULL) == WH_OK);
    CHECK_EQ_U64(live_chunks(mem), 1);
    size_t n = 0;
    wh_status_t s;
    char *g = th_get_reader(st, "remote", "obj", &n, &s);
    CHECK(s == WH_OK && n == 5 && memcmp(g, "short", 5) == 0);
    free(g);

    /* RDMA PUT delegated to the table: its digests stand for the bytes. */
    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    data_rdma_result_t res;
    wh_peer_t peer = {.addr = "127.0.0.1:1"};
    xfer_token_arg_t region = {.str = "client-region-bytes"};
    CHECK(store_writer_rdma_put(w, &region, &peer, 19, &res) == WH_OK);
    CHECK(MEM(store_data(st))->last_token == &region);
    CHECK_EQ_U64(store_writer_size(w), 19);
    CHECK_EQ_U64(store_writer_crc64nvme(w), wh_crc64nvme(0, "client-region-bytes", 19));
    data_obj_meta_t pm;
    memset(&pm, 0, sizeof pm);
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "remote", .key = "rdma"}, &pm) ==
          WH_OK);
    CHECK_STR(pm.etag, "00000000000000000000000000000013");
    CHECK_EQ_U64(mem->rdma_puts, 1);

    /* Multipart completed by reference: parts' chunks become the object's, none released. */
    char uid[65];
    CHECK(store_mpu_create(st, "remote", "mp", NULL, uid) == WH_OK);
    char *p1 = malloc(STORE_MIN_PART_SIZE);
    for (size_t i = 0; i < STORE_MIN_PART_SIZE; i++)
        p1[i] = (char)(i % 251);
    char e1[33], e2[33];
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, p1, STORE_MIN_PART_SIZE) == WH_OK);
    CHECK(store_mpu_part_commit(st, "remote", "mp", uid, 1, w, e1) == WH_OK);
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "end", 3) == WH_OK);
    CHECK(store_mpu_part_commit(st, "remote", "mp", uid, 2, w, e2) == WH_OK);
    size_t before = live_chunks(mem);
    int released = mem->released;
    store_complete_part_t cp[2] = {{1, e1}, {2, e2}};
    int bad = 0;
    CHECK(store_mpu_complete(
              st,
              &(store_mpu_complete_args_t){
                  .bucket = "remote", .key = "mp", .upload_id = uid, .parts = cp, .n = 2},
              &pm, &bad) == WH_OK);
    data_obj_meta_free(&pm);
    CHECK_EQ_U64(live_chunks(mem), before); /* no copy, nothing freed */
    CHECK_EQ_U64(mem->released, released);
    g = th_get_reader(st, "remote", "mp", &n, &s);
    CHECK(s == WH_OK && n == STORE_MIN_PART_SIZE + 3 && memcmp(g, p1, STORE_MIN_PART_SIZE) == 0 &&
          memcmp(g + STORE_MIN_PART_SIZE, "end", 3) == 0);
    free(g);

    /* A part the table pulled by RDMA has no CRC-32C here (the bytes never passed through):
     * it is kept as none, and an upload asking for a CRC-32C completes without one rather
     * than with a wrong one. */
    CHECK(store_mpu_create(st, "remote", "mq", NULL, uid) == WH_OK);
    CHECK(store_writer_open(st, &w) == WH_OK);
    CHECK(store_writer_write(w, "abc", 3) == WH_OK);
    CHECK(store_mpu_part_commit(st, "remote", "mq", uid, 1, w, e1) == WH_OK);
    CHECK(store_writer_open(st, &w) == WH_OK);
    region = (xfer_token_arg_t){.str = "end"};
    CHECK(store_writer_rdma_put(w, &region, &peer, 3, &res) == WH_OK);
    CHECK(store_mpu_part_commit(st, "remote", "mq", uid, 2, w, e2) == WH_OK);
    data_part_info_t *pi = NULL;
    size_t np = 0;
    CHECK(store_mpu_list_parts(st, "remote", "mq", uid, 0, 0, &pi, &np, NULL) == WH_OK);
    CHECK(np == 2 && pi[0].crc32c[0] && !pi[1].crc32c[0]);
    free(pi);
    store_complete_part_t cq[1] = {{2, e2}}; /* the last part may be small */
    store_mpu_sums_t sums = {STORE_SUM_COMPOSITE, NULL, NULL, NULL, NULL};
    memset(&pm, 0, sizeof pm);
    CHECK(store_mpu_complete(st,
                             &(store_mpu_complete_args_t){.bucket = "remote",
                                                          .key = "mq",
                                                          .upload_id = uid,
                                                          .parts = cq,
                                                          .n = 1,
                                                          .sums = &sums},
                             &pm, &bad) == WH_OK);
    CHECK_STR(pm.crc32c, "");
    CHECK(pm.crc64nvme[0] != '\0');
    data_obj_meta_free(&pm);
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "remote", .key = "mq"}, NULL) ==
          WH_OK);
    free(p1);

    /* Delete: released once; the row is gone. */
    CHECK(store_object_delete(st, &(store_delete_args_t){.bucket = "remote", .key = "mp"}, NULL) ==
          WH_OK);
    CHECK_EQ_U64(live_chunks(mem), 1 + 1); /* "obj" and "rdma" */
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "remote", .key = "mp"}, &rm, &r) ==
          WH_ERR_NOT_FOUND);
    store_close(st);
    th_rmdir(dir);
}

/* The dispatch rule (data.h): a table missing a required slot is refused where the store takes
 * it; a NULL optional slot is an operation not offered, which the store answers with
 * WH_ERR_UNSUPPORTED or does without (its fallback), and the writer stays usable. */
static void test_optional_slots(void)
{
    char *dir = th_mkdtemp();
    meta_t *meta = NULL;
    CHECK(th_meta_open(dir, &meta) == WH_OK);
    if (!meta)
        return;
    data_ops_t partial = MEM_OPS;
    partial.append = NULL; /* required */
    mem_t *bad = calloc(1, sizeof *bad);
    bad->base.ops = &partial;
    store_t *st = NULL;
    CHECK(store_open_tables(meta, &bad->base, &st) == WH_ERR_INVALID);
    CHECK(st == NULL);
    free(bad);

    CHECK(th_meta_open(dir, &meta) == WH_OK);
    if (!meta)
        return;
    data_ops_t lean = MEM_OPS;
    lean.rdma_put = NULL;
    lean.rdma_get = NULL;
    mem_t *mem = calloc(1, sizeof *mem);
    mem->base.ops = &lean;
    pthread_mutex_init(&mem->lock, NULL);
    CHECK(store_open_tables(meta, &mem->base, &st) == WH_OK);
    if (!st)
        return;
    CHECK(store_bucket_create(st, &(store_bucket_args_t){.bucket = "lean"}) == WH_OK);
    data_space_t sp;
    CHECK(store_space(st, &sp) == WH_ERR_UNSUPPORTED);

    store_writer_t *w = NULL;
    CHECK(store_writer_open(st, &w) == WH_OK);
    if (!w)
        return;
    char msg[128] = "x";
    CHECK(store_writer_bucket(w, "lean", msg, sizeof msg) == WH_OK); /* one layout */
    CHECK_STR(msg, "");
    CHECK(store_writer_begin_at(w, 2500) == WH_ERR_UNSUPPORTED); /* no positional writes */
    CHECK_EQ_U64(store_writer_stripe_len(w), 0);
    CHECK_EQ_U64(store_writer_write_unit(w), 0);
    data_rdma_result_t rr;
    CHECK(store_writer_rdma_put(w, NULL, NULL, 2500, &rr) == WH_ERR_UNSUPPORTED);
    char body[2500];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)(i * 13 + 1);
    CHECK(store_writer_write(w, body, sizeof body) == WH_OK); /* still usable */
    data_obj_meta_t pm;
    memset(&pm, 0, sizeof pm);
    CHECK(store_writer_commit(w, &(store_commit_args_t){.bucket = "lean", .key = "o"}, &pm) ==
          WH_OK);
    data_obj_meta_free(&pm);

    data_obj_meta_t rm;
    data_reader_t *r = NULL;
    CHECK(store_object_reader(st, &(store_read_args_t){.bucket = "lean", .key = "o"}, &rm, &r) ==
          WH_OK);
    if (r) {
        CHECK(store_reader_fd(r) == -1);
        int fd = -1;
        uint64_t foff = 0, flen = 0;
        CHECK(store_reader_extent(r, 0, &fd, &foff, &flen) == WH_ERR_UNSUPPORTED);
        CHECK(store_reader_prepare(r, 0, sizeof body, msg, sizeof msg) == WH_OK);
        CHECK(store_reader_rdma_get(r, NULL, NULL, 0, 1, &rr) == WH_ERR_UNSUPPORTED);
        char back[sizeof body];
        CHECK(store_reader_pread(r, back, sizeof back, 0) == WH_OK);
        CHECK(memcmp(back, body, sizeof body) == 0);
        store_reader_close(r);
        data_obj_meta_free(&rm);
    }
    store_close(st);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_remote_style_table);
    RUN(test_optional_slots);
    return check_done();
}
