/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the metadata table's cluster members: storage nodes, the garbage-collection queue
 * (a chunk is never handed out while a committed row references it), advisory locks, and two
 * processes' worth of metadata sharing one database. PostgreSQL only (the /pg run); against
 * SQLite they check that the members are declined. */
#include "base/log.h"
#include "helpers.h"

#include <libpq-fe.h>

static bool g_pg;

static void mk_chunk(data_chunk_t *c, unsigned id, uint64_t off, uint64_t len, uint32_t n1,
                     uint32_t n2)
{
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%032x", id);
    c->offset = off;
    c->length = len;
    c->crc64nvme = 0x8000000000000000ULL | id; /* the top bit survives bigint storage */
    c->n_replicas = 2;
    c->replicas[0] = n1;
    c->replicas[1] = n2;
}

static size_t gc_drain(meta_t *m, char ids[][DATA_ID_LEN + 1], uint32_t *nodes, size_t cap)
{
    meta_gc_item_t *it = NULL;
    size_t n = 0;
    CHECK(meta_gc_take(m, 100, 0, &it, &n) == WH_OK);
    for (size_t i = 0; i < n && i < cap; i++) {
        memcpy(ids[i], it[i].chunk_id, sizeof ids[i]);
        nodes[i] = it[i].node;
    }
    CHECK(meta_gc_done(m, it, n) == WH_OK);
    free(it);
    return n;
}

static void test_nodes(void)
{
    char *dir = th_mkdtemp();
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    uint32_t a = 0, b = 0, a2 = 0;
    if (!g_pg) {
        CHECK(meta_node_register(m, "10.0.0.1:9100", "", true, 1, 1, &a) == WH_ERR_UNSUPPORTED);
        CHECK(meta_lock_try(m, 1) == WH_ERR_UNSUPPORTED);
        meta_close(m);
        th_rmdir(dir);
        return;
    }
    CHECK(meta_node_register(m, "10.0.0.1:9100", "", true, 1000, 600, &a) == WH_OK);
    CHECK(meta_node_register(m, "10.0.0.2:9100", "", true, 2000, 1500, &b) == WH_OK);
    CHECK(a != b);
    CHECK(meta_node_register(m, "10.0.0.1:9100", "", true, 1000, 500, &a2) == WH_OK);
    CHECK_EQ_U64(a2, a); /* stable per address */
    CHECK(meta_node_heartbeat(m, b, 2000, 1400) == WH_OK);
    CHECK(meta_node_heartbeat(m, 999999, 1, 1) == WH_ERR_NOT_FOUND);
    CHECK(meta_node_register(m, "", "", true, 1, 1, &a2) == WH_ERR_INVALID);
    meta_node_t *nodes = NULL;
    size_t n = 0;
    CHECK(meta_node_list(m, &nodes, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(nodes[0].addr, "10.0.0.1:9100");
        CHECK_EQ_U64(nodes[0].free, 500);
        CHECK_EQ_U64(nodes[1].free, 1400);
        CHECK_EQ_U64(nodes[1].capacity, 2000);
        CHECK(nodes[0].heartbeat > 0 && nodes[0].heartbeat <= nodes[0].now + 1);
    }
    free(nodes);

    /* identities: the same directory keeps its id (also at a new address); another one at
     * an address retires the row there; a row from before identities is adopted only by a
     * directory that holds chunks */
    char cid[META_UUID_MAX] = "";
    CHECK(meta_cluster_id(m, cid) == WH_OK && strlen(cid) == 36);
    uint32_t u1 = 0, u1b = 0, u2 = 0, u3 = 0;
    CHECK(meta_node_register(m, "10.0.0.3:9100", "dir-one", false, 10, 5, &u1) == WH_OK);
    CHECK(meta_node_register(m, "10.0.0.3:9100", "dir-one", false, 10, 5, &u1b) == WH_OK);
    CHECK_EQ_U64(u1b, u1);
    CHECK(meta_node_register(m, "10.0.0.3:9100", "dir-two", false, 10, 5, &u2) == WH_OK);
    CHECK(u2 != u1);
    CHECK(meta_node_heartbeat(m, u1, 10, 5) == WH_ERR_NOT_FOUND); /* retired */
    CHECK(meta_node_register(m, "10.0.0.4:9100", "dir-two", false, 10, 5, &u3) == WH_OK);
    CHECK_EQ_U64(u3, u2); /* moved: same node */
    CHECK(meta_node_register(m, "10.0.0.1:9100", "dir-three", false, 10, 5, &u3) == WH_OK);
    CHECK(u3 != a); /* an empty directory does not adopt the old row at its address */
    CHECK(meta_node_register(m, "10.0.0.2:9100", "dir-four", true, 10, 5, &u3) == WH_OK);
    CHECK_EQ_U64(u3, b); /* one with chunks does */
    CHECK(meta_node_list(m, &nodes, &n) == WH_OK);
    size_t retired = 0;
    for (size_t i = 0; i < n; i++)
        retired += nodes[i].retired;
    CHECK_EQ_U64(retired, 2);
    free(nodes);
    meta_close(m);
    th_rmdir(dir);
}

static void test_gc_queue(void)
{
    if (!g_pg)
        return;
    char *dir = th_mkdtemp();
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    char ids[16][DATA_ID_LEN + 1];
    uint32_t nodes[16];
    CHECK(meta_bucket_create(m, "gc", 1, "", NULL) == WH_OK);
    data_chunk_t ch[2];
    mk_chunk(&ch[0], 0xa1, 0, 100, 1, 2);
    mk_chunk(&ch[1], 0xa2, 100, 50, 2, 3);
    data_ref_t ref = {.chunks = ch, .n_chunks = 2}, old, got;
    snprintf(ref.id, sizeof ref.id, "%032x", 0x1);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 150;
    CHECK(meta_object_put(m, "gc", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    CHECK(meta_object_get(m, "gc", "k", 1, NULL, &got) == WH_OK);
    CHECK(got.n_chunks == 2 && got.chunks[0].crc64nvme == ch[0].crc64nvme);
    data_ref_clear(&got);
    CHECK_EQ_U64(gc_drain(m, ids, nodes, 16), 0); /* referenced: nothing to delete */

    /* Overwrite: both chunks, on each of their replicas, are queued by the same commit. */
    data_ref_t plain;
    memset(&plain, 0, sizeof plain);
    snprintf(plain.id, sizeof plain.id, "%032x", 0x2);
    CHECK(meta_object_put(m, "gc", "k", 1, &om, &plain, &old, NULL) == WH_OK);
    CHECK(old.n_chunks == 2);
    data_ref_clear(&old);
    size_t n = gc_drain(m, ids, nodes, 16);
    CHECK_EQ_U64(n, 4);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ids[i], ch[0].id) == 0 && (nodes[i] == 1 || nodes[i] == 2))
            seen++;
        if (strcmp(ids[i], ch[1].id) == 0 && (nodes[i] == 2 || nodes[i] == 3))
            seen++;
    }
    CHECK_EQ_U64(seen, 4);
    CHECK_EQ_U64(gc_drain(m, ids, nodes, 16), 0); /* done: gone from the queue */

    /* Multipart completed by reference: the part's chunk lives on in the object. */
    CHECK(meta_upload_create(m, "gc", "mp", "00000000000000000000000000000abc", NULL, 1) == WH_OK);
    data_chunk_t pc;
    mk_chunk(&pc, 0xb1, 0, 10, 4, 5);
    data_ref_t pref = {.chunks = &pc, .n_chunks = 1};
    snprintf(pref.id, sizeof pref.id, "%032x", 0x3);
    data_part_info_t info;
    memset(&info, 0, sizeof info);
    info.number = 1;
    info.size = 10;
    CHECK(meta_part_put(m, "gc", "mp", "00000000000000000000000000000abc", &info, &pref, &old) ==
          WH_OK);
    meta_part_t *parts = NULL, *all = NULL;
    size_t np = 0, nall = 0;
    CHECK(meta_part_list(m, "gc", "mp", "00000000000000000000000000000abc", 0, 0, &parts, &np,
                         NULL) == WH_OK);
    CHECK(np == 1 && parts[0].ref.n_chunks == 1 && strcmp(parts[0].ref.chunks[0].id, pc.id) == 0);
    data_ref_t oref = {.chunks = &pc, .n_chunks = 1};
    snprintf(oref.id, sizeof oref.id, "%032x", 0x4);
    om.size = 10;
    CHECK(meta_upload_complete(m, "gc", "mp", "00000000000000000000000000000abc", parts, np, &om,
                               &oref, &old, &all, &nall, NULL) == WH_OK);
    CHECK_EQ_U64(nall, 1);
    meta_parts_free(all, nall);
    meta_parts_free(parts, np);
    CHECK_EQ_U64(gc_drain(m, ids, nodes, 16), 0); /* still referenced by the object */
    CHECK(meta_object_delete(m, "gc", "mp", 2, &old) == WH_OK);
    data_ref_clear(&old);
    n = gc_drain(m, ids, nodes, 16);
    CHECK_EQ_U64(n, 2);
    CHECK(n >= 1 && strcmp(ids[0], pc.id) == 0);
    meta_close(m);
    th_rmdir(dir);
}

/* The cluster's intents and repair: a deferred copy waits for its grace and is dropped once a
 * commit lists it; chunks_on_node and chunk_move re-home a replica and queue the old copy. */
static void test_intents_and_repair(void)
{
    meta_t *m = NULL;
    char *dir = th_mkdtemp();
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    meta_gc_item_t it[3];
    memset(it, 0, sizeof it);
    if (!g_pg) {
        CHECK(meta_gc_defer(m, it, 1, 1) == WH_ERR_UNSUPPORTED);
        meta_close(m);
        th_rmdir(dir);
        return;
    }
    char ids[16][DATA_ID_LEN + 1];
    uint32_t nodes[16];
    CHECK(meta_bucket_create(m, "rp", 1, "", NULL) == WH_OK);
    /* intents for chunk c1 on nodes 7, 8, 9; the commit lists 7 and 8 */
    for (int i = 0; i < 3; i++) {
        snprintf(it[i].chunk_id, sizeof it[i].chunk_id, "%032x", 0xc1);
        it[i].node = (uint32_t)(7 + i);
    }
    CHECK(meta_gc_defer(m, it, 3, 1) == WH_OK);
    CHECK_EQ_U64(gc_drain(m, ids, nodes, 16), 0); /* not before the grace */
    data_chunk_t c;
    mk_chunk(&c, 0xc1, 0, 64, 7, 8);
    data_ref_t ref = {.chunks = &c, .n_chunks = 1}, old;
    snprintf(ref.id, sizeof ref.id, "%032x", 0x11);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 64;
    CHECK(meta_object_put(m, "rp", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    sleep(2);
    size_t n = gc_drain(m, ids, nodes, 16); /* only the copy no row lists: node 9 */
    CHECK_EQ_U64(n, 1);
    CHECK(n == 1 && nodes[0] == 9 && strcmp(ids[0], c.id) == 0);

    data_chunk_t *on = NULL;
    size_t non = 0;
    CHECK(meta_chunks_on_node(m, 8, "", 10, &on, &non) == WH_OK);
    CHECK(non == 1 && strcmp(on[0].id, c.id) == 0 && on[0].length == 64 &&
          on[0].crc64nvme == c.crc64nvme && on[0].n_replicas == 2);
    free(on);
    CHECK(meta_chunk_move(m, c.id, 8, 5, 0) == WH_OK);
    CHECK(meta_chunks_on_node(m, 8, "", 10, &on, &non) == WH_OK && non == 0);
    free(on);
    CHECK(meta_chunks_on_node(m, 5, "", 10, &on, &non) == WH_OK && non == 1);
    free(on);
    data_ref_t got;
    CHECK(meta_object_get(m, "rp", "k", 1, NULL, &got) == WH_OK);
    CHECK(got.n_chunks == 1 && got.chunks[0].replicas[0] == 7 && got.chunks[0].replicas[1] == 5);
    data_ref_clear(&got);
    n = gc_drain(m, ids, nodes, 16); /* the moved-away copy */
    CHECK(n == 1 && nodes[0] == 8);
    meta_close(m);
    th_rmdir(dir);
}

static void test_shared_database(void)
{
    if (!g_pg)
        return;
    char *dir = th_mkdtemp();
    meta_t *m1 = NULL, *m2 = NULL;
    CHECK(th_meta_open(dir, &m1) == WH_OK);
    CHECK(th_meta_open(dir, &m2) == WH_OK); /* a second gateway on the same database */
    if (!m1 || !m2)
        return;
    CHECK(meta_bucket_create(m1, "shared", 1, "", NULL) == WH_OK);
    CHECK(meta_bucket_exists(m2, "shared") == WH_OK);
    CHECK(meta_bucket_create(m2, "shared", 1, "", NULL) == WH_ERR_EXISTS);

    /* One repairer at a time: the advisory lock. */
    CHECK(meta_lock_try(m1, 4242) == WH_OK);
    CHECK(meta_lock_try(m1, 4242) == WH_OK); /* held already: still ours */
    CHECK(meta_lock_try(m2, 4242) == WH_ERR_BUSY);
    CHECK(meta_lock_release(m1, 4242) == WH_OK);
    CHECK(meta_lock_try(m2, 4242) == WH_OK);
    CHECK(meta_lock_try(m1, 4242) == WH_ERR_BUSY);
    meta_close(m2); /* its session ends: the lock goes with it (the server notices shortly) */
    wh_status_t ls = WH_ERR_BUSY;
    for (int i = 0; i < 100 && ls == WH_ERR_BUSY; i++) {
        ls = meta_lock_try(m1, 4242);
        if (ls == WH_ERR_BUSY)
            usleep(20000);
    }
    CHECK(ls == WH_OK);

    /* The schema version is recorded (the current one: META_SCHEMA_VERSION). */
    const char *url = th_meta_url(dir);
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, "SELECT max(version) FROM wharf_schema");
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) == META_SCHEMA_VERSION);
    PQclear(r);
    PQfinish(c);
    meta_close(m1);
    th_rmdir(dir);
}

/* Repair's view: the chunks with a copy on a node, and moving that copy elsewhere (the old
 * copy then goes to garbage collection). */
static void test_repair_queries(void)
{
    if (!g_pg)
        return;
    char *dir = th_mkdtemp();
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    char ids[64][DATA_ID_LEN + 1];
    uint32_t nodes[64];
    CHECK(meta_bucket_create(m, "rep", 1, "", NULL) == WH_OK);
    data_chunk_t ch[30];
    for (unsigned i = 0; i < 30; i++)
        mk_chunk(&ch[i], 0x100 + i, i * 10ULL, 10, i % 3 == 0 ? 7 : 8, 9);
    data_ref_t ref = {.chunks = ch, .n_chunks = 30}, old;
    snprintf(ref.id, sizeof ref.id, "%032x", 0x77);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 300;
    CHECK(meta_object_put(m, "rep", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    gc_drain(m, ids, nodes, 64);
    /* Node 7 holds every third chunk: 10 of them, read in pages of 4. */
    char after[DATA_ID_LEN + 1] = "";
    size_t total = 0;
    for (int page = 0; page < 10; page++) {
        data_chunk_t *got = NULL;
        size_t n = 0;
        CHECK(meta_chunks_on_node(m, 7, after, 4, &got, &n) == WH_OK);
        for (size_t i = 0; i < n; i++)
            CHECK(got[i].n_replicas == 2 && got[i].replicas[0] == 7 && got[i].length == 10);
        total += n;
        if (n)
            memcpy(after, got[n - 1].id, sizeof after);
        free(got);
        if (n < 4)
            break;
    }
    CHECK_EQ_U64(total, 10);
    /* Re-replicated from node 7 to node 11: the map says so, node 7's copy is collected. */
    CHECK(meta_chunk_move(m, ch[0].id, 7, 11, 0) == WH_OK);
    data_ref_t got;
    CHECK(meta_object_get(m, "rep", "k", 1, NULL, &got) == WH_OK);
    CHECK(got.n_chunks == 30 && got.chunks[0].n_replicas == 2 && got.chunks[0].replicas[0] == 11 &&
          got.chunks[0].replicas[1] == 9);
    data_ref_clear(&got);
    size_t n = gc_drain(m, ids, nodes, 64);
    CHECK(n == 1 && strcmp(ids[0], ch[0].id) == 0 && nodes[0] == 7);
    data_chunk_t *left = NULL;
    size_t nl = 0;
    CHECK(meta_chunks_on_node(m, 7, "", 100, &left, &nl) == WH_OK);
    CHECK_EQ_U64(nl, 9);
    free(left);
    CHECK(meta_chunks_on_node(m, 11, "", 100, &left, &nl) == WH_OK);
    CHECK(nl == 1 && strcmp(left[0].id, ch[0].id) == 0);
    free(left);
    /* a move off a live server (drain, rebalance): its copy is collected only later */
    CHECK(meta_chunk_move(m, ch[3].id, 7, 12, 60) == WH_OK);
    CHECK(gc_drain(m, ids, nodes, 64) == 0);
    CHECK(meta_chunks_on_node(m, 12, "", 100, &left, &nl) == WH_OK);
    CHECK(nl == 1 && strcmp(left[0].id, ch[3].id) == 0);
    free(left);
    /* every chunk, paged */
    data_chunk_t *pg = NULL;
    size_t np = 0;
    CHECK(meta_chunks_page(m, "", 100, &pg, &np) == WH_OK);
    CHECK_EQ_U64(np, 30);
    free(pg);
    CHECK(meta_chunks_page(m, ch[27].id, 100, &pg, &np) == WH_OK);
    CHECK_EQ_U64(np, 2);
    free(pg);
    meta_close(m);
    th_rmdir(dir);
}

/* Node states: drain, remove (refused while the node holds a chunk's only live copy), zones,
 * the copies per node, and a removed node that does not register or heartbeat again. */
/* An erasure-coded object's chunk map: two stripes of 2+1 shard rows after a replicated
 * chunk; chunk_stripe gives a shard's stripe in shard order, chunk_find and chunks_on_node
 * carry the shard fields, a replicated chunk has no stripe. */
static void test_ec_stripes(void)
{
    if (!g_pg)
        return;
    char *dir = th_mkdtemp();
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    CHECK(meta_bucket_create(m, "ec", 1, "", NULL) == WH_OK);
    data_chunk_t ch[7];
    mk_chunk(&ch[0], 0x500, 0, 10, 1, 2);
    for (unsigned i = 0; i < 6; i++) {
        mk_chunk(&ch[1 + i], 0x600 + i, i < 3 ? 10 : 30, 20, 20 + i, 0);
        ch[1 + i].n_replicas = 1;
        ch[1 + i].ec_k = 2;
        ch[1 + i].ec_m = 1;
        ch[1 + i].ec_index = i % 3;
        ch[1 + i].ec_stripe = i / 3;
    }
    data_ref_t ref = {.chunks = ch, .n_chunks = 7}, old;
    snprintf(ref.id, sizeof ref.id, "%032x", 0x99);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 50;
    CHECK(meta_object_put(m, "ec", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    data_ref_t st = {{0}, NULL, 0};
    CHECK(meta_chunk_stripe(m, ch[5].id, &st) == WH_OK);
    CHECK(st.n_chunks == 3);
    for (size_t i = 0; i < st.n_chunks && st.n_chunks == 3; i++)
        CHECK(strcmp(st.chunks[i].id, ch[4 + i].id) == 0 && st.chunks[i].ec_index == i &&
              st.chunks[i].ec_k == 2 && st.chunks[i].offset == 30 &&
              st.chunks[i].replicas[0] == 23 + i && st.chunks[i].n_replicas == 1);
    data_ref_clear(&st);
    CHECK(meta_chunk_stripe(m, ch[0].id, &st) == WH_ERR_NOT_FOUND && st.n_chunks == 0);
    data_chunk_t f;
    CHECK(meta_chunk_find(m, ch[2].id, &f) == WH_OK && f.ec_k == 2 && f.ec_m == 1 &&
          f.ec_index == 1);
    data_chunk_t *on = NULL;
    size_t n = 0;
    CHECK(meta_chunks_on_node(m, 25, "", 10, &on, &n) == WH_OK);
    CHECK(n == 1 && on[0].ec_k == 2 && on[0].ec_index == 2 && strcmp(on[0].id, ch[6].id) == 0);
    free(on);
    meta_close(m);
    th_rmdir(dir);
}

static void test_node_states(void)
{
    char *dir = th_mkdtemp();
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (!m)
        return;
    uint32_t a = 0, b = 0, id = 0;
    uint64_t sole = 0;
    if (!g_pg) {
        CHECK(meta_node_drain(m, "10.1.0.1:9100", &id) == WH_ERR_UNSUPPORTED);
        meta_close(m);
        th_rmdir(dir);
        return;
    }
    CHECK(meta_node_register(m, "10.1.0.1:9100", "st-a", true, 1000, 600, &a) == WH_OK);
    CHECK(meta_node_register(m, "10.1.0.2:9100", "st-b", true, 1000, 600, &b) == WH_OK);
    CHECK(meta_node_set_zone(m, b, "rack-2") == WH_OK);
    CHECK(meta_bucket_create(m, "ns", 1, "", NULL) == WH_OK);
    data_chunk_t ch[3];
    mk_chunk(&ch[0], 0x500, 0, 10, a, b);
    mk_chunk(&ch[1], 0x501, 10, 10, a, b);
    mk_chunk(&ch[2], 0x502, 20, 10, a, a);
    ch[2].n_replicas = 1; /* only on a */
    data_ref_t ref = {.chunks = ch, .n_chunks = 3}, old;
    snprintf(ref.id, sizeof ref.id, "%032x", 0x55);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 30;
    CHECK(meta_object_put(m, "ns", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    meta_node_copies_t *cp = NULL;
    size_t nc = 0;
    CHECK(meta_node_copies(m, &cp, &nc) == WH_OK);
    uint64_t ca = 0, cb = 0;
    for (size_t i = 0; i < nc; i++) {
        ca += cp[i].id == a ? cp[i].copies : 0;
        cb += cp[i].id == b ? cp[i].copies : 0;
    }
    free(cp);
    CHECK_EQ_U64(ca, 3);
    CHECK_EQ_U64(cb, 2);
    /* a holds chunk 0x502 alone: refused, and it says how many */
    CHECK(meta_node_remove(m, "10.1.0.1:9100", 60, &id, &sole) == WH_ERR_BUSY);
    CHECK_EQ_U64(sole, 1);
    CHECK_EQ_U64(id, a);
    CHECK(meta_node_remove(m, "10.9.9.9:1", 60, &id, &sole) == WH_ERR_NOT_FOUND);
    CHECK(meta_node_drain(m, "10.9.9.9:1", &id) == WH_ERR_NOT_FOUND);
    CHECK(meta_node_drain(m, "10.1.0.1:9100", &id) == WH_OK && id == a);
    CHECK(meta_node_drain(m, "10.1.0.1:9100", &id) == WH_OK); /* idempotent */
    meta_node_t *nodes = NULL;
    size_t n = 0;
    CHECK(meta_node_list(m, &nodes, &n) == WH_OK);
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].id == a)
            CHECK(nodes[i].state == META_NODE_DRAINING && nodes[i].zone[0] == '\0');
        if (nodes[i].id == b)
            CHECK(nodes[i].state == META_NODE_ACTIVE && strcmp(nodes[i].zone, "rack-2") == 0);
    }
    free(nodes);
    /* the drain moved 0x502 to b: a's other copies are all on b, which is live */
    CHECK(meta_chunk_move(m, ch[2].id, a, b, 0) == WH_OK);
    CHECK(meta_node_remove(m, "10.1.0.1:9100", 60, &id, &sole) == WH_OK);
    CHECK(meta_node_remove(m, "10.1.0.1:9100", 60, &id, &sole) == WH_OK); /* idempotent */
    CHECK(meta_node_drain(m, "10.1.0.1:9100", &id) == WH_ERR_PRECONDITION);
    /* b is the only live node now: it holds the only live copy of all three */
    CHECK(meta_node_remove(m, "10.1.0.2:9100", 60, &id, &sole) == WH_ERR_BUSY);
    CHECK_EQ_U64(sole, 3);
    /* removed: no heartbeat, no registration under its identity */
    CHECK(meta_node_heartbeat(m, a, 1000, 600) == WH_ERR_NOT_FOUND);
    uint32_t again = 0;
    CHECK(meta_node_register(m, "10.1.0.1:9100", "st-a", true, 1000, 600, &again) ==
          WH_ERR_PRECONDITION);
    /* the scrubber's report and the maintenance gateway's view */
    CHECK(meta_node_report(m, b, 0.25, 3, 2) == WH_OK);
    CHECK(meta_node_list(m, &nodes, &n) == WH_OK);
    for (size_t i = 0; i < n; i++)
        if (nodes[i].id == b)
            CHECK(nodes[i].scrub_progress > 0.2499 && nodes[i].scrub_progress < 0.2501 &&
                  nodes[i].scrub_passes == 3 && nodes[i].damaged == 2);
    free(nodes);
    meta_cluster_status_t cs, got;
    CHECK(meta_cluster_status_get(m, &got) == WH_ERR_NOT_FOUND);
    memset(&cs, 0, sizeof cs);
    snprintf(cs.leader, sizeof cs.leader, "10.1.0.9:9000");
    cs.repair_pending = 7;
    cs.drain_pending = 5;
    CHECK(meta_cluster_status_put(m, &cs) == WH_OK);
    cs.repair_pending = 6; /* upserted */
    CHECK(meta_cluster_status_put(m, &cs) == WH_OK);
    CHECK(meta_cluster_status_get(m, &got) == WH_OK);
    CHECK(strcmp(got.leader, "10.1.0.9:9000") == 0 && got.repair_pending == 6 &&
          got.drain_pending == 5 && got.age_s >= 0 && got.age_s < 60);
    /* a new directory at that address is a new node */
    CHECK(meta_node_register(m, "10.1.0.1:9100", "st-a2", false, 1000, 600, &again) == WH_OK);
    CHECK(again != a);
    meta_close(m);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    g_pg = getenv("WHARF_TEST_PG_URL") && *getenv("WHARF_TEST_PG_URL");
    RUN(test_nodes);
    RUN(test_gc_queue);
    RUN(test_intents_and_repair);
    RUN(test_shared_database);
    RUN(test_repair_queries);
    RUN(test_ec_stripes);
    RUN(test_node_states);
    return check_done();
}
