/* SPDX-License-Identifier: Apache-2.0 */
/* client_big TRANSPORT BUCKET [SIZE]: an object larger than 4 GiB (default 5 GiB) without
 * 5 GiB of source memory: the source is one (64 MiB + 4 KiB) memfd mapped again and again
 * into a contiguous view, so the pattern repeats with a period that is not a multiple of any
 * chunk or part size (a misplaced chunk is caught). It is PUT as a multipart upload, then a
 * range across the 4 GiB boundary and the whole object are read back (into a MAP_NORESERVE
 * buffer) and compared; the report's crc64nvme must equal the object's. 64-bit sizes and offsets
 * everywhere: a 32-bit truncation shows up as wrong bytes or a wrong length here. */
#include "common.h"

#include <sys/mman.h>

#define PERIOD ((64ull << 20) + 4096)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s rdma|http BUCKET [SIZE]\n", argv[0]);
        return 2;
    }
    wharf_transport_t t = tc_transport(argv[1]);
    const char *bucket = argv[2];
    uint64_t size = argc > 3 ? strtoull(argv[3], NULL, 10) : (5ull << 30);
    TC_CHECK(size > (4ull << 30) + (16ull << 20), "SIZE must be over 4 GiB + 16 MiB");
    tc_opts_t o = {.concurrency = 4, .max_retries = -1, .timeout_ms = 300000};
    wharf_client_t *c = tc_client(&o);
    tc_bucket(c, bucket);

    /* the repeating source view */
    int fd = memfd_create("wharf-big", MFD_CLOEXEC);
    TC_CHECK(fd >= 0, "memfd_create");
    TC_CHECK(ftruncate(fd, (off_t)PERIOD) == 0, "ftruncate");
    uint8_t *pat = mmap(NULL, PERIOD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    TC_CHECK(pat != MAP_FAILED, "mmap pattern");
    tc_fill(pat, PERIOD, 31337, 0);
    uint64_t nmaps = (size + PERIOD - 1) / PERIOD;
    uint64_t vlen = nmaps * PERIOD;
    uint8_t *view = mmap(NULL, vlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    TC_CHECK(view != MAP_FAILED, "reserve view");
    for (uint64_t k = 0; k < nmaps; k++) {
        void *p = mmap(view + k * PERIOD, PERIOD, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
        TC_CHECK(p == view + k * PERIOD, "map period %" PRIu64, k);
    }
    wharf_mem_t *mv = NULL;
    if (t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(c, view, size, WHARF_MEM_HOST, &mv));

    wharf_xfer_opts_t xo = tc_xopts(t);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    double t0 = tc_now();
    TC_OK(wharf_object_put(c, bucket, "big/obj", view, size, &xo, &r));
    tc_check_report(&r, t, size, "PUT big");
    uint64_t put_crc = r.crc64nvme;
    printf("PUT %" PRIu64 " bytes in %.1fs, %u requests, etag %s\n", size, tc_now() - t0,
           r.requests, r.etag);
    TC_CHECK(strchr(r.etag, '-') != NULL, "a %" PRIu64 "-byte PUT should be multipart (etag %s)",
             size, r.etag);

    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    TC_OK(wharf_object_stat(c, bucket, "big/obj", &s));
    TC_CHECK(s.length == size, "stat length %" PRIu64 ", wanted %" PRIu64, s.length, size);

    /* a range across the 4 GiB boundary */
    uint64_t roff = (4ull << 30) - (3ull << 20) - 5, rlen = (8ull << 20) + 11;
    uint8_t *small = tc_alloc(rlen + 64, false);
    wharf_mem_t *ms = NULL;
    if (t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(c, small, rlen + 64, WHARF_MEM_HOST, &ms));
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_get(c, bucket, "big/obj", small + 7, rlen, roff, rlen, &xo, &r));
    tc_check_report(&r, t, rlen, "GET across 4 GiB");
    TC_CHECK(!memcmp(small + 7, view + roff, rlen), "the range across 4 GiB differs");
    /* the last bytes, read with a 32-bit-truncation-prone offset */
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_get(c, bucket, "big/obj", small, 64, size - 10, WHARF_WHOLE, &xo, &r));
    tc_check_report(&r, t, 10, "GET tail");
    TC_CHECK(!memcmp(small, view + size - 10, 10), "the tail differs");
    printf("ranges across 4 GiB and at the end: OK\n");

    /* the whole object into a NORESERVE buffer */
    uint8_t *dst = tc_alloc(size, true);
    wharf_mem_t *md = NULL;
    if (t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(c, dst, size, WHARF_MEM_HOST, &md));
    wharf_report_init(&r, sizeof r);
    t0 = tc_now();
    TC_OK(wharf_object_get(c, bucket, "big/obj", dst, size, 0, WHARF_WHOLE, &xo, &r));
    tc_check_report(&r, t, size, "GET big");
    printf("GET %" PRIu64 " bytes in %.1fs, %u requests\n", size, tc_now() - t0, r.requests);
    for (uint64_t off = 0; off < size; off += PERIOD) {
        uint64_t n = size - off < PERIOD ? size - off : PERIOD;
        TC_CHECK(!memcmp(dst + off, pat, n), "whole GET differs in [%" PRIu64 ", +%" PRIu64 ")",
                 off, n);
    }
    if (s.has_crc64nvme) {
        TC_CHECK(r.crc64nvme == s.crc64nvme, "GET crc %016" PRIx64 " != object crc %016" PRIx64,
                 r.crc64nvme, s.crc64nvme);
        TC_CHECK(put_crc == s.crc64nvme, "PUT crc %016" PRIx64 " != object crc %016" PRIx64,
                 put_crc, s.crc64nvme);
    } else {
        printf("note: the server gave no crc64nvme for the object\n");
    }
    TC_OK(wharf_object_delete(c, bucket, "big/obj"));
    wharf_mem_deregister(md);
    wharf_mem_deregister(ms);
    wharf_mem_deregister(mv);
    tc_free(dst, size);
    wharf_client_destroy(c);
    printf("OK\n");
    return 0;
}
