/* SPDX-License-Identifier: Apache-2.0 */
/* client_integrity TRANSPORT BUCKET: PUT and GET objects of sizes 0, 1, 4095, 4096, 1 MiB+1 and
 * 64 MiB over TRANSPORT (rdma or http), whole and in ranges at the object's edges, into
 * unaligned destinations with guard bytes around them. Small chunk and part sizes make the
 * large object split into parallel ranged GETs and a multipart PUT. */
#include "common.h"

#define GUARD 4096
#define GUARD_BYTE 0xA5

static wharf_client_t *g_c;
static wharf_transport_t g_t;
static const char *g_bucket;

/* GET [off, off+len) (len may be WHARF_WHOLE) into a fresh buffer at an odd offset inside a
 * registered region; checks bytes, content and that nothing outside was written. */
static void get_range(const char *key, uint64_t size, uint64_t seed, uint64_t off, uint64_t len,
                      uint64_t dst_len, uint64_t want_bytes)
{
    uint64_t total = dst_len + 2 * GUARD + 8;
    uint8_t *buf = tc_alloc(total, false);
    memset(buf, GUARD_BYTE, total);
    uint8_t *dst = buf + GUARD + 3; /* unaligned on purpose */
    wharf_mem_t *m = NULL;
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(g_c, buf, total, WHARF_MEM_HOST, &m));
    wharf_xfer_opts_t o = tc_xopts(g_t);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    char what[160];
    snprintf(what, sizeof what, "GET %s off %" PRIu64 " len %" PRIu64 " (size %" PRIu64 ")", key,
             off, len, size);
    TC_OK(wharf_object_get(g_c, g_bucket, key, dst, dst_len, off, len, &o, &r));
    tc_check_report(&r, g_t, want_bytes, what);
    int64_t bad = tc_verify(dst, want_bytes, seed, off);
    TC_CHECK(bad < 0, "%s: byte %" PRId64 " differs", what, bad);
    TC_CHECK(tc_all(buf, GUARD + 3, GUARD_BYTE), "%s: wrote before the destination", what);
    TC_CHECK(tc_all(dst + want_bytes, total - (GUARD + 3) - want_bytes, GUARD_BYTE),
             "%s: wrote past the %" PRIu64 " bytes it reported", what, want_bytes);
    wharf_mem_deregister(m);
    tc_free(buf, total);
}

static void one_size(uint64_t size)
{
    char key[64];
    snprintf(key, sizeof key, "integrity/%" PRIu64, size);
    uint64_t seed = size * 7919 + 17;
    uint8_t *src = tc_alloc(size, false);
    tc_fill(src, size, seed, 0);
    wharf_mem_t *ms = NULL;
    if (g_t == WHARF_TRANSPORT_RDMA && size)
        TC_OK(wharf_mem_register(g_c, src, size, WHARF_MEM_HOST, &ms));
    wharf_xfer_opts_t o = tc_xopts(g_t);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    double t0 = tc_now();
    TC_OK(wharf_object_put(g_c, g_bucket, key, src, size, &o, &r));
    tc_check_report(&r, g_t, size, "PUT");
    TC_CHECK(r.etag[0] == '"', "PUT %s: etag \"%s\" is not quoted", key, r.etag);
    printf("put %-20s %10" PRIu64 " bytes %.3fs requests %u\n", key, size, tc_now() - t0,
           r.requests);

    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    TC_OK(wharf_object_stat(g_c, g_bucket, key, &s));
    TC_CHECK(s.length == size, "stat %s: length %" PRIu64 ", wanted %" PRIu64, key, s.length, size);
    TC_CHECK(!strcmp(s.etag, r.etag), "stat etag %s != put etag %s", s.etag, r.etag);

    /* whole object */
    uint64_t total = size + 2 * GUARD + 8;
    uint8_t *buf = tc_alloc(total, false);
    memset(buf, GUARD_BYTE, total);
    uint8_t *dst = buf + GUARD + 1;
    wharf_mem_t *md = NULL;
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(g_c, buf, total, WHARF_MEM_HOST, &md));
    wharf_report_init(&r, sizeof r);
    t0 = tc_now();
    TC_OK(wharf_object_get(g_c, g_bucket, key, dst, size, 0, WHARF_WHOLE, &o, &r));
    tc_check_report(&r, g_t, size, "GET whole");
    int64_t bad = tc_verify(dst, size, seed, 0);
    TC_CHECK(bad < 0, "GET %s: byte %" PRId64 " differs", key, bad);
    TC_CHECK(tc_all(buf, GUARD + 1, GUARD_BYTE) &&
                 tc_all(dst + size, total - GUARD - 1 - size, GUARD_BYTE),
             "GET %s wrote outside its destination", key);
    if (size && s.has_crc64nvme)
        TC_CHECK(r.crc64nvme == s.crc64nvme,
                 "GET %s: report crc %016" PRIx64 " != object crc %016" PRIx64, key, r.crc64nvme,
                 s.crc64nvme);
    printf("get %-20s %10" PRIu64 " bytes %.3fs requests %u\n", key, size, tc_now() - t0,
           r.requests);
    /* a destination one byte short is refused before anything moves */
    if (size) {
        wharf_report_init(&r, sizeof r);
        TC_ERR(wharf_object_get(g_c, g_bucket, key, dst, size - 1, 0, WHARF_WHOLE, &o, &r),
               WHARF_ERR_TOO_LARGE);
    }
    wharf_mem_deregister(md);
    tc_free(buf, total);

    /* ranges at the edges */
    if (size) {
        get_range(key, size, seed, 0, 1, 1, 1);
        get_range(key, size, seed, size - 1, 1, 1, 1);
        get_range(key, size, seed, size - 1, WHARF_WHOLE, 1, 1);
        get_range(key, size, seed, size / 2, size - size / 2, size - size / 2, size - size / 2);
        get_range(key, size, seed, size / 3, WHARF_WHOLE, size, size - size / 3);
        /* a range running past the end gets what exists */
        get_range(key, size, seed, size - 1, 100, 100, 1);
        if (size > 4096)
            get_range(key, size, seed, 4095, size, size, size - 4095);
        /* at the end: WHOLE gives nothing, an explicit range is unsatisfiable */
        get_range(key, size, seed, size, WHARF_WHOLE, 16, 0);
        uint8_t tmp[16];
        wharf_report_init(&r, sizeof r);
        wharf_xfer_opts_t oh = tc_xopts(WHARF_TRANSPORT_HTTP);
        TC_ERR(wharf_object_get(g_c, g_bucket, key, tmp, sizeof tmp, size, 10, &oh, &r),
               WHARF_ERR_RANGE);
        TC_ERR(
            wharf_object_get(g_c, g_bucket, key, tmp, sizeof tmp, size + 5, WHARF_WHOLE, &oh, &r),
            WHARF_ERR_RANGE);
    }
    TC_OK(wharf_object_delete(g_c, g_bucket, key));
    TC_ERR(wharf_object_stat(g_c, g_bucket, key, &s), WHARF_ERR_NOT_FOUND);
    wharf_mem_deregister(ms);
    tc_free(src, size);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s rdma|http BUCKET\n", argv[0]);
        return 2;
    }
    g_t = tc_transport(argv[1]);
    g_bucket = argv[2];
    tc_opts_t o = {.concurrency = 4,
                   .chunk_size = 4ull << 20,
                   .multipart_threshold = 16ull << 20,
                   .part_size = 5ull << 20,
                   .max_retries = -1};
    g_c = tc_client(&o);
    printf("provider %s transport %s\n", wharf_client_provider(g_c), argv[1]);
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_CHECK(strcmp(wharf_client_provider(g_c), "none") != 0,
                 "asked for RDMA but the client has no provider");
    tc_bucket(g_c, g_bucket);
    const uint64_t sizes[] = {0, 1, 4095, 4096, (1ull << 20) + 1, 64ull << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        one_size(sizes[i]);

    wharf_stats_t st;
    wharf_stats_init(&st, sizeof st);
    TC_OK(wharf_client_stats(g_c, &st));
    printf("stats rdma_ops %" PRIu64 " rdma_bytes %" PRIu64 " http_ops %" PRIu64
           " http_bytes %" PRIu64 " fallbacks %" PRIu64 "\n",
           st.rdma_ops, st.rdma_bytes, st.http_ops, st.http_bytes, st.fallbacks);
    TC_CHECK(st.fallbacks == 0 && st.declines == 0, "no fallback expected");
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_CHECK(st.rdma_bytes > 2 * (64ull << 20) && st.http_bytes == 0,
                 "rdma_bytes %" PRIu64 " http_bytes %" PRIu64, st.rdma_bytes, st.http_bytes);
    else
        TC_CHECK(st.http_bytes > 2 * (64ull << 20) && st.rdma_bytes == 0, "http_bytes %" PRIu64,
                 st.http_bytes);
    wharf_client_destroy(g_c);
    printf("OK\n");
    return 0;
}
