/* client_stall: the two sides of the stalled-client test (tests/func/test_rdma_stall.py).
 *
 *   client_stall put BUCKET KEY SIZE    creates the bucket and stores KEY (pattern seed 11)
 *                                       over HTTP.
 *   client_stall get BUCKET KEY SIZE    registers SIZE bytes, prints "GO" and starts one RDMA
 *                                       GET of KEY; the driver stops it (SIGSTOP) meanwhile.
 *   client_stall probe BUCKET KEY SIZE  one RDMA GET of KEY (bytes checked against pattern
 *                                       seed 11) and one RDMA PUT of 1 MiB; prints one line
 *                                       per call ("GET ok 0.123" or "PUT fail 5.0 <error>")
 *                                       and "OK" when both succeeded (exit 0), else exit 3.
 *
 * No retries and no HTTP fallback: a 503 must show up as a failure. */
#include "common.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s get|probe BUCKET KEY SIZE\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *bucket = argv[2], *key = argv[3];
    uint64_t size = strtoull(argv[4], NULL, 10);
    tc_opts_t o = {.fallback = WHARF_FALLBACK_FAIL, .timeout_ms = 60000, .max_retries = 0};
    wharf_client_t *c = tc_client(&o);
    uint8_t *buf = tc_alloc(size, false);
    if (!strcmp(mode, "put")) {
        tc_bucket(c, bucket);
        tc_fill(buf, size, 11, 0);
        wharf_xfer_opts_t ho = tc_xopts(WHARF_TRANSPORT_HTTP);
        TC_OK(wharf_object_put(c, bucket, key, buf, size, &ho, NULL));
        printf("OK\n");
        return 0;
    }
    wharf_mem_t *m = NULL;
    TC_OK(wharf_mem_register(c, buf, size, WHARF_MEM_HOST, &m));
    wharf_xfer_opts_t xo = tc_xopts(WHARF_TRANSPORT_RDMA);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    if (!strcmp(mode, "get")) {
        printf("GO\n");
        fflush(stdout);
        wharf_status_t st = wharf_object_get(c, bucket, key, buf, size, 0, size, &xo, &r);
        printf("GET %s %s\n", wharf_status_str(st), st ? wharf_last_error() : "");
        return 0;
    }
    bool ok = true;
    double t0 = tc_now();
    wharf_status_t st = wharf_object_get(c, bucket, key, buf, size, 0, size, &xo, &r);
    if (st == WHARF_OK && tc_verify(buf, size, 11, 0) >= 0)
        st = WHARF_ERR_IO;
    printf("GET %s %.3f %s\n", st == WHARF_OK ? "ok" : "fail", tc_now() - t0,
           st ? wharf_last_error() : "");
    ok &= st == WHARF_OK;
    uint64_t pn = 1u << 20;
    tc_fill(buf, pn, 12, 0);
    char pkey[96];
    snprintf(pkey, sizeof pkey, "probe/%d", (int)getpid());
    t0 = tc_now();
    st = wharf_object_put(c, bucket, pkey, buf, pn, &xo, &r);
    printf("PUT %s %.3f %s\n", st == WHARF_OK ? "ok" : "fail", tc_now() - t0,
           st ? wharf_last_error() : "");
    ok &= st == WHARF_OK;
    wharf_mem_deregister(m);
    wharf_client_destroy(c);
    if (!ok)
        return 3;
    printf("OK\n");
    return 0;
}
