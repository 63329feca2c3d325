/* SPDX-License-Identifier: Apache-2.0 */
/* client_kill TRANSPORT BUCKET SIZE: PUTs a SIZE-byte object, prints "GO" and then GETs it over
 * and over. The pytest driver kills wharfd after GO; the GET in flight must return an error
 * (not hang, not report success with missing bytes) within the client's timeout. Exits 0 when
 * a call failed with a transport-level error in time, 1 otherwise. */
#include "common.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s rdma|http BUCKET SIZE\n", argv[0]);
        return 2;
    }
    wharf_transport_t t = tc_transport(argv[1]);
    const char *bucket = argv[2];
    uint64_t size = strtoull(argv[3], NULL, 10);
    const unsigned timeout_ms = 15000;
    tc_opts_t o = {
        .concurrency = 2, .chunk_size = 16ull << 20, .timeout_ms = timeout_ms, .max_retries = 1};
    wharf_client_t *c = tc_client(&o);
    tc_bucket(c, bucket);
    uint8_t *buf = tc_alloc(size, false);
    tc_fill(buf, size, 5, 0);
    wharf_mem_t *m = NULL;
    if (t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(c, buf, size, WHARF_MEM_HOST, &m));
    wharf_xfer_opts_t xo = tc_xopts(t);
    TC_OK(wharf_object_put(c, bucket, "kill/obj", buf, size, &xo, NULL));
    printf("GO\n");
    fflush(stdout);
    double deadline = tc_now() + 60;
    unsigned n = 0;
    while (tc_now() < deadline) {
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        double t0 = tc_now();
        wharf_status_t st = wharf_object_get(c, bucket, "kill/obj", buf, size, 0, size, &xo, &r);
        double el = tc_now() - t0;
        n++;
        if (st == WHARF_OK) {
            TC_CHECK(r.bytes == size,
                     "a GET reported success with %" PRIu64 " of %" PRIu64 " bytes", r.bytes, size);
            continue;
        }
        printf("GET %u failed after %.3fs with %s: %s\n", n, el, wharf_status_str(st),
               wharf_last_error());
        TC_CHECK(st == WHARF_ERR_TRANSPORT || st == WHARF_ERR_TIMEOUT || st == WHARF_ERR_HTTP ||
                     st == WHARF_ERR_IO,
                 "unexpected status %s", wharf_status_str(st));
        /* connect retries with backoff add a little on top of the request timeout */
        TC_CHECK(el < timeout_ms / 1000.0 + 5, "the failing call took %.1fs", el);
        /* and the next call fails fast too: nothing is left hanging */
        t0 = tc_now();
        st = wharf_object_get(c, bucket, "kill/obj", buf, size, 0, size, &xo, &r);
        TC_CHECK(st != WHARF_OK && tc_now() - t0 < timeout_ms / 1000.0 + 5,
                 "a call after the kill returned %s after %.1fs", wharf_status_str(st),
                 tc_now() - t0);
        wharf_mem_deregister(m);
        wharf_client_destroy(c);
        printf("OK\n");
        return 0;
    }
    TC_CHECK(0, "no GET failed within 60s of GO (%u GETs): was the server killed?", n);
    return 1;
}
