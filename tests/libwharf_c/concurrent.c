/* SPDX-License-Identifier: Apache-2.0 */
/* client_concurrent TRANSPORT BUCKET: 8 threads GET disjoint ranges of one object into disjoint
 * ranges of ONE registered buffer at the same time, several rounds, on one client; then 8
 * threads PUT disjoint slices of one registered buffer as separate objects. (The seed project's
 * client crashed on exactly the first.) */
#include "common.h"

#include <pthread.h>

#define NTHREADS 8
#define SLICE (8ull << 20)
#define ROUNDS 3

static wharf_client_t *g_c;
static wharf_transport_t g_t;
static const char *g_bucket;
static uint8_t *g_buf;
static const uint64_t g_seed = 4242;
static pthread_barrier_t g_round; /* rounds in lockstep, so the slots stay disjoint */

typedef struct job {
    unsigned id;
    int failed;
    char msg[512];
} job_t;

static void *get_worker(void *arg)
{
    job_t *j = arg;
    for (unsigned round = 0; round < ROUNDS; round++) {
        /* rounds in lockstep: a thread that failed still waits, so nobody waits forever */
        pthread_barrier_wait(&g_round);
        if (j->failed)
            continue;
        /* thread id's slice of the object lands in slot (id + round) % N of the buffer */
        unsigned slot = (j->id + round) % NTHREADS;
        uint64_t off = (uint64_t)j->id * SLICE;
        uint8_t *dst = g_buf + (uint64_t)slot * SLICE;
        wharf_xfer_opts_t o = tc_xopts(g_t);
        o.concurrency = 2;
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        wharf_status_t st =
            wharf_object_get(g_c, g_bucket, "concurrent/src", dst, SLICE, off, SLICE, &o, &r);
        int64_t bad = st == WHARF_OK ? tc_verify(dst, SLICE, g_seed, off) : -1;
        if (st != WHARF_OK || r.bytes != SLICE || r.transport != g_t || bad >= 0) {
            snprintf(j->msg, sizeof j->msg,
                     "thread %u round %u: %s bytes %" PRIu64
                     " transport %d, first bad byte %" PRId64 ": %s",
                     j->id, round, wharf_status_str(st), r.bytes, (int)r.transport, bad,
                     wharf_last_error());
            j->failed = 1;
        }
    }
    return NULL;
}

static void *put_worker(void *arg)
{
    job_t *j = arg;
    char key[64];
    snprintf(key, sizeof key, "concurrent/part-%u", j->id);
    wharf_xfer_opts_t o = tc_xopts(g_t);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st =
        wharf_object_put(g_c, g_bucket, key, g_buf + (uint64_t)j->id * SLICE, SLICE, &o, &r);
    if (st != WHARF_OK || r.transport != g_t) {
        snprintf(j->msg, sizeof j->msg, "PUT %s: %s transport %d: %s", key, wharf_status_str(st),
                 (int)r.transport, wharf_last_error());
        j->failed = 1;
    }
    return NULL;
}

static void run(void *(*fn)(void *), const char *what)
{
    pthread_t th[NTHREADS];
    job_t jobs[NTHREADS];
    memset(jobs, 0, sizeof jobs);
    double t0 = tc_now();
    for (unsigned i = 0; i < NTHREADS; i++) {
        jobs[i].id = i;
        TC_CHECK(pthread_create(&th[i], NULL, fn, &jobs[i]) == 0, "pthread_create");
    }
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    for (unsigned i = 0; i < NTHREADS; i++)
        TC_CHECK(!jobs[i].failed, "%s", jobs[i].msg);
    printf("%s: %u threads OK in %.3fs\n", what, NTHREADS, tc_now() - t0);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s rdma|http BUCKET\n", argv[0]);
        return 2;
    }
    g_t = tc_transport(argv[1]);
    g_bucket = argv[2];
    tc_opts_t o = {.concurrency = 4, .chunk_size = 2ull << 20, .max_retries = -1};
    g_c = tc_client(&o);
    tc_bucket(g_c, g_bucket);
    uint64_t total = NTHREADS * SLICE;
    uint8_t *src = tc_alloc(total, false);
    tc_fill(src, total, g_seed, 0);
    wharf_xfer_opts_t xo = tc_xopts(WHARF_TRANSPORT_HTTP);
    TC_OK(wharf_object_put(g_c, g_bucket, "concurrent/src", src, total, &xo, NULL));

    TC_CHECK(pthread_barrier_init(&g_round, NULL, NTHREADS) == 0, "barrier");
    g_buf = tc_alloc(total, false);
    memset(g_buf, 0, total);
    wharf_mem_t *m = NULL;
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_OK(wharf_mem_register(g_c, g_buf, total, WHARF_MEM_HOST, &m));
    run(get_worker, "concurrent GET into one buffer");

    /* the buffer now holds slices in rotated order; PUT each slot as its own object */
    run(put_worker, "concurrent PUT from one buffer");
    for (unsigned i = 0; i < NTHREADS; i++) {
        char key[64];
        snprintf(key, sizeof key, "concurrent/part-%u", i);
        memset(src, 0, SLICE);
        TC_OK(wharf_object_get(g_c, g_bucket, key, src, SLICE, 0, WHARF_WHOLE, &xo, NULL));
        TC_CHECK(!memcmp(src, g_buf + (uint64_t)i * SLICE, SLICE), "object %s differs", key);
        TC_OK(wharf_object_delete(g_c, g_bucket, key));
    }
    wharf_stats_t st;
    wharf_stats_init(&st, sizeof st);
    TC_OK(wharf_client_stats(g_c, &st));
    if (g_t == WHARF_TRANSPORT_RDMA)
        TC_CHECK(st.rdma_bytes == (uint64_t)ROUNDS * total + total,
                 "rdma_bytes %" PRIu64 ", wanted %" PRIu64, st.rdma_bytes,
                 (uint64_t)ROUNDS * total + total);
    TC_OK(wharf_object_delete(g_c, g_bucket, "concurrent/src"));
    wharf_mem_deregister(m);
    wharf_client_destroy(g_c);
    tc_free(src, total);
    tc_free(g_buf, total);
    printf("OK\n");
    return 0;
}
