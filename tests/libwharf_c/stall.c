/* SPDX-License-Identifier: Apache-2.0 */
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
 *   client_stall late BUCKET KEY SIZE TIMEOUT_MS
 *                                       an RDMA GET of KEY with a client timeout of TIMEOUT_MS,
 *                                       short enough that the client gives up while the server
 *                                       still sends; then, as a caller may, deregisters the
 *                                       buffer and fills it with 0x5a, and makes 4 KiB RDMA
 *                                       GETs on the same client for 2 s (they drive its
 *                                       progress). Prints "LATE changed=N ...": N bytes of the
 *                                       handed-back buffer that something wrote after the GET
 *                                       had returned. Exit 0 when N is 0 and no small GET
 *                                       failed other than by timeout (some must work), 3
 *                                       otherwise, 4 when the GET did not time
 *                                       out (too fast: raise SIZE or lower TIMEOUT_MS), 5 when
 *                                       no byte had landed when it timed out (the server had
 *                                       not begun: nothing to test).
 *
 * No retries and no HTTP fallback: a 503 must show up as a failure. */
#include "common.h"

/* See "late" above. */
static int late_writes(wharf_client_t *c, const char *bucket, const char *key, uint8_t *buf,
                       uint64_t size, wharf_mem_t *m)
{
    wharf_xfer_opts_t xo = tc_xopts(WHARF_TRANSPORT_RDMA);
    double t0 = tc_now();
    wharf_status_t st = wharf_object_get(c, bucket, key, buf, size, 0, size, &xo, NULL);
    printf("GET %s %.3f %s\n", wharf_status_str(st), tc_now() - t0, st ? wharf_last_error() : "");
    if (st == WHARF_OK)
        return 4;
    /* The buffer was zero (a fresh mapping): did the server write any of it before the call
     * returned? If not, it had not begun, and nothing could be left half-done. */
    uint64_t before = 0;
    for (uint64_t i = 0; i < size; i++)
        before += buf[i] != 0;
    printf("LANDED before the return: %" PRIu64 " nonzero bytes\n", before);
    if (before == 0)
        return 5;
    /* The call returned: the buffer is the caller's again. */
    wharf_mem_deregister(m);
    memset(buf, 0x5a, size);
    enum { SMALL = 4096 };
    uint8_t *small = tc_alloc(SMALL, false);
    wharf_mem_t *sm = NULL;
    TC_OK(wharf_mem_register(c, small, SMALL, WHARF_MEM_HOST, &sm));
    /* A small GET may time out on a loaded host (TIMEOUT_MS is short); any other failure is
     * the server's writes of the abandoned GET having broken this client's connection. */
    unsigned small_ok = 0, small_n = 0, small_bad = 0;
    for (double end = tc_now() + 2.0; tc_now() < end; small_n++) {
        wharf_status_t sst = wharf_object_get(c, bucket, key, small, SMALL, 0, SMALL, &xo, NULL);
        if (sst == WHARF_OK) {
            small_ok++;
        } else {
            small_bad += sst != WHARF_ERR_TIMEOUT;
            printf("small GET failed: %s\n", wharf_last_error());
        }
        usleep(20000);
    }
    uint64_t changed = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < size; i++)
        if (buf[i] != 0x5a) {
            changed++;
            if (first == UINT64_MAX)
                first = i;
        }
    printf("LATE changed=%" PRIu64 " first=%" PRId64 " small_ok=%u of %u (failed other than "
           "by timeout: %u)\n",
           changed, first == UINT64_MAX ? (int64_t)-1 : (int64_t)first, small_ok, small_n,
           small_bad);
    wharf_mem_deregister(sm);
    wharf_client_destroy(c);
    return changed == 0 && small_ok > 0 && small_bad == 0 ? 0 : 3;
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 6 && !strcmp(argv[1], "late"))) {
        fprintf(stderr,
                "usage: %s put|get|probe BUCKET KEY SIZE, or late BUCKET KEY SIZE "
                "TIMEOUT_MS\n",
                argv[0]);
        return 2;
    }
    const char *mode = argv[1], *bucket = argv[2], *key = argv[3];
    uint64_t size = strtoull(argv[4], NULL, 10);
    tc_opts_t o = {.fallback = WHARF_FALLBACK_FAIL, .timeout_ms = 60000, .max_retries = 0};
    if (argc == 6)
        o.timeout_ms = (unsigned)atoi(argv[5]);
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
    if (!strcmp(mode, "late"))
        return late_writes(c, bucket, key, buf, size, m);
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
