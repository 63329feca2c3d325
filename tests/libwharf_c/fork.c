/* SPDX-License-Identifier: Apache-2.0 */
/* client_fork TRANSPORT BUCKET: a client used (worker pool started, memory registered, RDMA
 * done) in the parent, then fork()ed, as PyTorch DataLoader workers are. Each child keeps using
 * the parent's client and registration (re-initialised on first use in the child), GETs and
 * PUTs, and checks its data; the parent keeps working during and after. */
#include "common.h"

#include <sys/wait.h>

#define SIZE (12ull << 20)
#define NCHILD 3

static int child_main(wharf_client_t *c, wharf_transport_t t, const char *bucket, uint8_t *buf,
                      unsigned id)
{
    wharf_xfer_opts_t o = tc_xopts(t);
    for (unsigned round = 0; round < 2; round++) {
        memset(buf, 0, SIZE);
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        TC_OK(wharf_object_get(c, bucket, "fork/src", buf, SIZE, 0, WHARF_WHOLE, &o, &r));
        tc_check_report(&r, t, SIZE, "child GET");
        TC_CHECK(tc_verify(buf, SIZE, 11, 0) < 0, "child %u: GET data differs", id);
    }
    /* PUT from the (inherited) registered buffer */
    tc_fill(buf, SIZE, 100 + id, 0);
    char key[64];
    snprintf(key, sizeof key, "fork/child-%u", id);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    TC_OK(wharf_object_put(c, bucket, key, buf, SIZE, &o, &r));
    tc_check_report(&r, t, SIZE, "child PUT");
    printf("child %u pid %d OK provider %s\n", id, (int)getpid(), wharf_client_provider(c));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s rdma|http BUCKET\n", argv[0]);
        return 2;
    }
    wharf_transport_t t = tc_transport(argv[1]);
    const char *bucket = argv[2];
    tc_opts_t o = {.concurrency = 3, .chunk_size = 2ull << 20, .max_retries = -1};
    wharf_client_t *c = tc_client(&o);
    tc_bucket(c, bucket);
    uint8_t *buf = tc_alloc(SIZE, false);
    tc_fill(buf, SIZE, 11, 0);
    wharf_mem_t *m = NULL;
    if (t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(c, buf, SIZE, WHARF_MEM_HOST, &m));
    wharf_xfer_opts_t xo = tc_xopts(t);
    TC_OK(wharf_object_put(c, bucket, "fork/src", buf, SIZE, &xo, NULL));
    memset(buf, 0, SIZE);
    TC_OK(wharf_object_get(c, bucket, "fork/src", buf, SIZE, 0, WHARF_WHOLE, &xo, NULL));
    TC_CHECK(tc_verify(buf, SIZE, 11, 0) < 0, "parent GET before fork differs");

    pid_t pids[NCHILD];
    for (unsigned i = 0; i < NCHILD; i++) {
        fflush(stdout);
        pids[i] = fork();
        TC_CHECK(pids[i] >= 0, "fork failed");
        if (pids[i] == 0) {
            alarm(120); /* a hung child fails the test instead of hanging it */
            _exit(child_main(c, t, bucket, buf, i));
        }
    }
    /* the parent keeps using its client while the children run */
    for (unsigned round = 0; round < 3; round++) {
        memset(buf, 0, SIZE);
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        TC_OK(wharf_object_get(c, bucket, "fork/src", buf, SIZE, 0, WHARF_WHOLE, &xo, &r));
        tc_check_report(&r, t, SIZE, "parent GET after fork");
        TC_CHECK(tc_verify(buf, SIZE, 11, 0) < 0, "parent GET after fork differs");
    }
    for (unsigned i = 0; i < NCHILD; i++) {
        int status = 0;
        TC_CHECK(waitpid(pids[i], &status, 0) == pids[i], "waitpid");
        TC_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %u failed (status 0x%x)", i,
                 status);
    }
    /* the children's objects are what they wrote */
    for (unsigned i = 0; i < NCHILD; i++) {
        char key[64];
        snprintf(key, sizeof key, "fork/child-%u", i);
        memset(buf, 0, SIZE);
        TC_OK(wharf_object_get(c, bucket, key, buf, SIZE, 0, WHARF_WHOLE, &xo, NULL));
        TC_CHECK(tc_verify(buf, SIZE, 100 + i, 0) < 0, "%s differs", key);
        TC_OK(wharf_object_delete(c, bucket, key));
    }
    TC_OK(wharf_object_delete(c, bucket, "fork/src"));
    wharf_mem_deregister(m);
    wharf_client_destroy(c);
    printf("OK\n");
    return 0;
}
