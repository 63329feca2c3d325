/* SPDX-License-Identifier: Apache-2.0 */
/* client_timeouts STALL_MS TOTAL_MS: one ListBuckets against $WHARF_ENDPOINT (a test's own
 * slow or stalled server, python/client_host) with stall_timeout_ms and timeout_ms set (0:
 * the defaults), no retries. Prints the defaults wharf_client_config_init gives, then
 * "status NAME elapsed_ms N" and the error, then OK: the driver judges the result. */
#include "common.h"

#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int count_cb(void *arg, const char *name, uint64_t length, int64_t mtime, const char *etag)
{
    (*(unsigned *)arg)++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s STALL_MS TOTAL_MS\n", argv[0]);
        return 2;
    }
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    printf("defaults timeout_ms %u stall_timeout_ms %u\n", cfg.timeout_ms, cfg.stall_timeout_ms);
    cfg.endpoint = tc_env("WHARF_ENDPOINT", "http://127.0.0.1:9000");
    cfg.access_key = tc_env("WHARF_ACCESS_KEY", "wharfadmin");
    cfg.secret_key = tc_env("WHARF_SECRET_KEY", "wharfadmin-secret");
    cfg.provider = "none";
    cfg.max_retries = 0;
    if (atoi(argv[1]) > 0)
        cfg.stall_timeout_ms = (unsigned)atoi(argv[1]);
    if (atoi(argv[2]) > 0)
        cfg.timeout_ms = (unsigned)atoi(argv[2]);
    wharf_client_t *c = NULL;
    TC_OK(wharf_client_create(&cfg, &c));
    unsigned n = 0;
    double t0 = now_ms();
    wharf_status_t st = wharf_bucket_list(c, count_cb, &n);
    printf("status %d elapsed_ms %.0f buckets %u\n", (int)st, now_ms() - t0, n);
    printf("error %s\n", st == WHARF_OK ? "-" : wharf_last_error());
    wharf_client_destroy(c);
    printf("OK\n");
    return 0;
}
