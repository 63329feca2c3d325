/* SPDX-License-Identifier: Apache-2.0 */
/* client_fallback BUCKET: run against a wharfd started with --providers none, so every token
 * request is declined with 501. Checks both fallback policies:
 *   fail (default): GET and PUT over RDMA return WHARF_ERR_DECLINED with a message that says
 *                   what to do, and a declined PUT stores nothing;
 *   http:           the same calls succeed over HTTP, the report says fell_back and why, and
 *                   the client counters record the declines and fallbacks. */
#include "common.h"

#define SIZE ((8ull << 20) + 123)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s BUCKET\n", argv[0]);
        return 2;
    }
    const char *bucket = argv[1];
    tc_opts_t of = {.fallback = WHARF_FALLBACK_FAIL,
                    .chunk_size = 1ull << 20,
                    .concurrency = 4,
                    .max_retries = -1};
    tc_opts_t oh = of;
    oh.fallback = WHARF_FALLBACK_HTTP;
    wharf_client_t *cf = tc_client(&of);
    wharf_client_t *ch = tc_client(&oh);
    TC_CHECK(strcmp(wharf_client_provider(cf), "none") != 0, "the client needs a provider");
    tc_bucket(cf, bucket);

    uint8_t *src = tc_alloc(SIZE, false), *dst = tc_alloc(SIZE, false);
    tc_fill(src, SIZE, 99, 0);
    wharf_mem_t *msf, *mdf, *msh, *mdh;
    TC_OK(wharf_mem_register(cf, src, SIZE, WHARF_MEM_HOST, &msf));
    TC_OK(wharf_mem_register(cf, dst, SIZE, WHARF_MEM_HOST, &mdf));
    TC_OK(wharf_mem_register(ch, src, SIZE, WHARF_MEM_HOST, &msh));
    TC_OK(wharf_mem_register(ch, dst, SIZE, WHARF_MEM_HOST, &mdh));

    wharf_xfer_opts_t http = tc_xopts(WHARF_TRANSPORT_HTTP);
    wharf_xfer_opts_t rdma = tc_xopts(WHARF_TRANSPORT_RDMA);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_put(cf, bucket, "fb/obj", src, SIZE, &http, &r));
    tc_check_report(&r, WHARF_TRANSPORT_HTTP, SIZE, "seed PUT");
    wharf_stat_t s0;
    wharf_stat_init(&s0, sizeof s0);
    TC_OK(wharf_object_stat(cf, bucket, "fb/obj", &s0));

    /* ---- policy fail ---- */
    memset(dst, 0, SIZE);
    wharf_report_init(&r, sizeof r);
    TC_ERR(wharf_object_get(cf, bucket, "fb/obj", dst, SIZE, 0, WHARF_WHOLE, &rdma, &r),
           WHARF_ERR_DECLINED);
    const char *msg = wharf_last_error();
    TC_CHECK(strstr(msg, "declined") && strstr(msg, "501") && strstr(msg, "fallback=http"),
             "decline message \"%s\" should say declined, 501 and how to allow HTTP", msg);
    TC_CHECK(r.status == WHARF_ERR_DECLINED && !r.fell_back, "report status %d fell_back %d",
             (int)r.status, r.fell_back);
    printf("fail policy GET: %s\n", msg);

    uint8_t *other = tc_alloc(SIZE, false);
    tc_fill(other, SIZE, 7, 0);
    wharf_mem_t *mo;
    TC_OK(wharf_mem_register(cf, other, SIZE, WHARF_MEM_HOST, &mo));
    TC_ERR(wharf_object_put(cf, bucket, "fb/obj", other, SIZE, &rdma, &r), WHARF_ERR_DECLINED);
    printf("fail policy PUT: %s\n", wharf_last_error());
    TC_ERR(wharf_object_put(cf, bucket, "fb/new", other, SIZE, &rdma, &r), WHARF_ERR_DECLINED);
    wharf_stat_t s1;
    wharf_stat_init(&s1, sizeof s1);
    TC_OK(wharf_object_stat(cf, bucket, "fb/obj", &s1));
    TC_CHECK(s1.length == SIZE && !strcmp(s1.etag, s0.etag),
             "a declined PUT changed the object (length %" PRIu64 " etag %s)", s1.length, s1.etag);
    TC_ERR(wharf_object_stat(cf, bucket, "fb/new", &s1), WHARF_ERR_NOT_FOUND);
    /* a large GET: every piece is declined, nothing is silently moved over HTTP */
    wharf_stats_t st;
    wharf_stats_init(&st, sizeof st);
    TC_OK(wharf_client_stats(cf, &st));
    TC_CHECK(st.declines >= 3 && st.fallbacks == 0 && st.http_bytes == SIZE,
             "fail-policy counters: declines %" PRIu64 " fallbacks %" PRIu64 " http_bytes %" PRIu64,
             st.declines, st.fallbacks, st.http_bytes);

    /* ---- policy http ---- */
    memset(dst, 0, SIZE);
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_get(ch, bucket, "fb/obj", dst, SIZE, 0, WHARF_WHOLE, &rdma, &r));
    TC_CHECK(r.fell_back == 1 && r.transport == WHARF_TRANSPORT_HTTP && r.bytes == SIZE,
             "GET fell_back %d transport %d bytes %" PRIu64, r.fell_back, (int)r.transport,
             r.bytes);
    TC_CHECK(strstr(r.fallback_reason, "501") != NULL, "fallback reason \"%s\" names no 501",
             r.fallback_reason);
    TC_CHECK(tc_verify(dst, SIZE, 99, 0) < 0, "fallback GET data differs");
    printf("http policy GET: fell back: %s\n", r.fallback_reason);

    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_put(ch, bucket, "fb/put", src, SIZE, &rdma, &r));
    TC_CHECK(r.fell_back == 1 && r.transport == WHARF_TRANSPORT_HTTP && r.bytes == SIZE,
             "PUT fell_back %d transport %d", r.fell_back, (int)r.transport);
    memset(dst, 0, SIZE);
    TC_OK(wharf_object_get(ch, bucket, "fb/put", dst, SIZE, 0, WHARF_WHOLE, &http, NULL));
    TC_CHECK(tc_verify(dst, SIZE, 99, 0) < 0, "fallback PUT data differs");

    /* a ranged GET in the middle, several pieces */
    memset(dst, 0, SIZE);
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_get(ch, bucket, "fb/obj", dst + 5, SIZE - 5, 1000, 3ull << 20, &rdma, &r));
    TC_CHECK(r.fell_back && r.bytes == (3ull << 20), "ranged fallback bytes %" PRIu64, r.bytes);
    TC_CHECK(tc_verify(dst + 5, 3ull << 20, 99, 1000) < 0, "ranged fallback data differs");

    wharf_stats_init(&st, sizeof st);
    TC_OK(wharf_client_stats(ch, &st));
    printf("http policy stats: declines %" PRIu64 " fallbacks %" PRIu64 " rdma_bytes %" PRIu64
           " http_bytes %" PRIu64 "\n",
           st.declines, st.fallbacks, st.rdma_bytes, st.http_bytes);
    TC_CHECK(st.declines >= 3 && st.fallbacks >= 3 && st.rdma_bytes == 0,
             "http-policy counters: declines %" PRIu64 " fallbacks %" PRIu64, st.declines,
             st.fallbacks);

    /* AUTO with a provider tries RDMA too, and so is declined under fail */
    wharf_xfer_opts_t aut = tc_xopts(WHARF_TRANSPORT_AUTO);
    TC_ERR(wharf_object_get(cf, bucket, "fb/obj", dst, SIZE, 0, 4096, &aut, NULL),
           WHARF_ERR_DECLINED);

    TC_OK(wharf_object_delete(cf, bucket, "fb/obj"));
    TC_OK(wharf_object_delete(cf, bucket, "fb/put"));
    wharf_mem_deregister(msf);
    wharf_mem_deregister(mdf);
    wharf_mem_deregister(mo);
    wharf_mem_deregister(msh);
    wharf_mem_deregister(mdh);
    wharf_client_destroy(cf);
    wharf_client_destroy(ch);
    printf("OK\n");
    return 0;
}
