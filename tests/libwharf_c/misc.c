/* SPDX-License-Identifier: Apache-2.0 */
/* client_misc BUCKET: the non-data calls and the ABI rules, over HTTP.
 * - buckets: create, EXISTS on a second create, list, NOT_EMPTY on delete, delete;
 * - ListObjectsV2 across continuation tokens (1003 keys), prefixes, a callback that stops;
 * - errors: NOT_FOUND, AUTH (bad secret), INVALID arguments, each with a message;
 * - struct sizes: a caller built against a smaller wharf_report_t / wharf_stat_t gets only the
 *   fields it knows, and nothing past its size is written. */
#include "common.h"
#include "wharf_version.h"

#include <stddef.h>

typedef struct list_acc {
    unsigned n;
    uint64_t bytes;
    unsigned stop_after;
    char last[256];
    int sorted;
} list_acc_t;

static int list_cb(void *arg, const char *key, uint64_t length, int64_t mtime, const char *etag)
{
    list_acc_t *a = arg;
    if (a->last[0] && strcmp(a->last, key) >= 0)
        a->sorted = 0;
    snprintf(a->last, sizeof a->last, "%s", key);
    a->n++;
    a->bytes += length;
    TC_CHECK(mtime > 1600000000, "key %s: mtime %" PRId64, key, mtime);
    TC_CHECK(etag && etag[0] == '"', "key %s: etag %s", key, etag ? etag : "(null)");
    return a->stop_after && a->n >= a->stop_after;
}

static int bucket_cb(void *arg, const char *name, uint64_t length, int64_t mtime, const char *etag)
{
    const char *want = arg;
    if (!strcmp(name, want))
        return 1; /* found: stop */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s BUCKET\n", argv[0]);
        return 2;
    }
    const char *bucket = argv[1];
    tc_opts_t o = {.provider = "none", .max_retries = -1};
    wharf_client_t *c = tc_client(&o);
    TC_CHECK(!strcmp(wharf_client_provider(c), "none"), "provider none");
    TC_CHECK(!strcmp(wharf_version(), WH_VERSION), "version %s", wharf_version());

    TC_OK(wharf_bucket_create(c, bucket));
    /* us-east-1: re-creating one's own bucket succeeds, as S3 answers there (200). */
    TC_OK(wharf_bucket_create(c, bucket));
    TC_ERR(wharf_bucket_list(c, bucket_cb, (void *)bucket), WHARF_ERR_CANCELED);

    /* many keys: more than one ListObjectsV2 page */
    const unsigned nkeys = 1003;
    uint8_t small[64];
    for (unsigned i = 0; i < nkeys; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s/k%05u", i % 2 ? "odd" : "even", i);
        tc_fill(small, (i % 7) + 1, i, 0);
        TC_OK(wharf_object_put(c, bucket, key, small, (i % 7) + 1, NULL, NULL));
    }
    list_acc_t a = {.sorted = 1};
    TC_OK(wharf_object_list(c, bucket, NULL, list_cb, &a));
    TC_CHECK(a.n == nkeys && a.sorted, "listed %u keys (sorted %d), wanted %u", a.n, a.sorted,
             nkeys);
    memset(&a, 0, sizeof a);
    a.sorted = 1;
    TC_OK(wharf_object_list(c, bucket, "odd/", list_cb, &a));
    TC_CHECK(a.n == nkeys / 2, "prefix odd/: %u keys", a.n);
    memset(&a, 0, sizeof a);
    a.stop_after = 3;
    TC_ERR(wharf_object_list(c, bucket, NULL, list_cb, &a), WHARF_ERR_CANCELED);
    TC_CHECK(a.n == 3, "the callback stopped after %u", a.n);
    memset(&a, 0, sizeof a);
    TC_OK(wharf_object_list(c, bucket, "nothing-here/", list_cb, &a));
    TC_CHECK(a.n == 0, "empty prefix listed %u", a.n);

    /* keys that need encoding survive the round trip */
    const char *odd_keys[] = {"sp ace/a+b=c&d", "unicode/\xc3\xa9t\xc3\xa9",
                              "dots/./x",       "q?x#y",
                              "pct%20raw",      "tilde~/-_."};
    for (size_t i = 0; i < sizeof odd_keys / sizeof odd_keys[0]; i++) {
        uint8_t v[9] = "payload0", back[16];
        v[7] = (uint8_t)('0' + i);
        TC_OK(wharf_object_put(c, bucket, odd_keys[i], v, 8, NULL, NULL));
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        TC_OK(
            wharf_object_get(c, bucket, odd_keys[i], back, sizeof back, 0, WHARF_WHOLE, NULL, &r));
        TC_CHECK(r.bytes == 8 && !memcmp(back, v, 8), "key \"%s\" round trip", odd_keys[i]);
        list_acc_t la = {.sorted = 1};
        TC_OK(wharf_object_list(c, bucket, odd_keys[i], list_cb, &la));
        TC_CHECK(la.n == 1 && !strcmp(la.last, odd_keys[i]), "list of \"%s\" gave %u \"%s\"",
                 odd_keys[i], la.n, la.last);
        TC_OK(wharf_object_delete(c, bucket, odd_keys[i]));
    }

    TC_ERR(wharf_bucket_delete(c, bucket), WHARF_ERR_NOT_EMPTY);
    TC_CHECK(strstr(wharf_last_error(), "BucketNotEmpty") != NULL, "message: %s",
             wharf_last_error());

    /* errors with messages */
    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    TC_ERR(wharf_object_stat(c, bucket, "no/such/key", &s), WHARF_ERR_NOT_FOUND);
    TC_CHECK(strstr(wharf_last_error(), "no/such/key") != NULL, "message names the key: %s",
             wharf_last_error());
    uint8_t buf[16];
    TC_ERR(wharf_object_get(c, "no-such-bucket-xyz", "k", buf, sizeof buf, 0, 4, NULL, NULL),
           WHARF_ERR_NOT_FOUND);
    TC_ERR(wharf_object_get(c, NULL, "k", buf, sizeof buf, 0, 4, NULL, NULL), WHARF_ERR_INVALID);
    TC_CHECK(wharf_last_error()[0] != '\0', "INVALID without a message");
    TC_ERR(wharf_mem_register(c, buf, sizeof buf, WHARF_MEM_CUDA, NULL), WHARF_ERR_INVALID);
    wharf_mem_t *mm;
    TC_ERR(wharf_mem_register(c, buf, sizeof buf, WHARF_MEM_CUDA, &mm), WHARF_ERR_UNSUPPORTED);
    /* RDMA asked of an HTTP-only client: an error unless fallback=http */
    wharf_xfer_opts_t rd = tc_xopts(WHARF_TRANSPORT_RDMA);
    TC_ERR(wharf_object_put(c, bucket, "x", buf, sizeof buf, &rd, NULL), WHARF_ERR_UNSUPPORTED);

    /* bad credentials */
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    cfg.endpoint = tc_env("WHARF_ENDPOINT", "http://127.0.0.1:9000");
    cfg.access_key = tc_env("WHARF_ACCESS_KEY", "wharfadmin");
    cfg.secret_key = "definitely-wrong";
    wharf_client_t *bad;
    TC_OK(wharf_client_create(&cfg, &bad));
    TC_ERR(wharf_object_stat(bad, bucket, "even/k00000", &s), WHARF_ERR_AUTH);
    TC_ERR(wharf_bucket_create(bad, "another-bucket-x"), WHARF_ERR_AUTH);
    TC_CHECK(strstr(wharf_last_error(), "403") != NULL, "message: %s", wharf_last_error());
    wharf_client_destroy(bad);
    /* config errors */
    cfg.secret_key = "x";
    cfg.endpoint = "ftp://nope";
    TC_ERR(wharf_client_create(&cfg, &bad), WHARF_ERR_INVALID);
    cfg.endpoint = tc_env("WHARF_ENDPOINT", "http://127.0.0.1:9000");
    cfg.provider = "ofi+bogus";
    TC_ERR(wharf_client_create(&cfg, &bad), WHARF_ERR_INVALID);
    cfg.provider = "ofi+shm";
    cfg.unix_socket = NULL;
    TC_ERR(wharf_client_create(&cfg, &bad), WHARF_ERR_INVALID);
    TC_CHECK(strstr(wharf_last_error(), "unix_socket") != NULL, "message: %s", wharf_last_error());
    /* GPU memory on a network provider without FI_HMEM (Debian's tcp) and no Unix socket:
     * refused, naming both ways it could have been reached */
    cfg.secret_key = tc_env("WHARF_SECRET_KEY", "wharfadmin-secret");
    cfg.provider = "ofi+tcp";
    if (wharf_client_create(&cfg, &bad) == WHARF_OK) {
        TC_ERR(wharf_mem_register(bad, buf, sizeof buf, WHARF_MEM_CUDA, &mm),
               WHARF_ERR_UNSUPPORTED);
        TC_CHECK(strstr(wharf_last_error(), "FI_HMEM") != NULL &&
                     strstr(wharf_last_error(), "unix_socket") != NULL,
                 "message: %s", wharf_last_error());
        wharf_client_destroy(bad);
    } else {
        TC_CHECK(0, "an ofi+tcp client: %s", wharf_last_error());
    }
    cfg.secret_key = "x";
    /* nothing listening: a connection error, quickly */
    cfg.provider = NULL;
    cfg.endpoint = "http://127.0.0.1:1";
    cfg.max_retries = 0;
    TC_OK(wharf_client_create(&cfg, &bad));
    double t0 = tc_now();
    TC_ERR(wharf_object_stat(bad, bucket, "k", &s), WHARF_ERR_TRANSPORT);
    TC_CHECK(tc_now() - t0 < 5, "connection refused took %.1fs", tc_now() - t0);
    TC_CHECK(strstr(wharf_last_error(), "127.0.0.1:1") != NULL, "message: %s", wharf_last_error());
    wharf_client_destroy(bad);

    /* ABI: an older, smaller report struct gets only its own fields */
    struct {
        wharf_report_t r;
        uint8_t canary[64];
    } big;
    size_t old = offsetof(wharf_report_t, fallback_reason);
    memset(&big, 0x77, sizeof big);
    wharf_report_init(&big.r, old);
    TC_CHECK(big.r.size == old, "report size");
    TC_OK(
        wharf_object_get(c, bucket, "even/k00000", buf, sizeof buf, 0, WHARF_WHOLE, NULL, &big.r));
    TC_CHECK(big.r.bytes == 1 && big.r.transport == WHARF_TRANSPORT_HTTP, "old-size report");
    TC_CHECK(tc_all((uint8_t *)&big.r + old, sizeof big - old, 0x77),
             "wrote past the caller's report size");
    struct {
        wharf_stat_t s;
        uint8_t canary[32];
    } bs;
    size_t olds = offsetof(wharf_stat_t, content_type);
    memset(&bs, 0x55, sizeof bs);
    wharf_stat_init(&bs.s, olds);
    TC_OK(wharf_object_stat(c, bucket, "even/k00000", &bs.s));
    TC_CHECK(bs.s.length == 1 && bs.s.etag[0] == '"', "old-size stat");
    TC_CHECK(tc_all((uint8_t *)&bs.s + olds, sizeof bs - olds, 0x55),
             "wrote past the caller's stat size");

    /* clean up: every key, then the bucket */
    for (unsigned i = 0; i < nkeys; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s/k%05u", i % 2 ? "odd" : "even", i);
        TC_OK(wharf_object_delete(c, bucket, key));
    }
    TC_OK(wharf_bucket_delete(c, bucket));
    TC_ERR(wharf_bucket_delete(c, bucket), WHARF_ERR_NOT_FOUND);
    wharf_stats_t st;
    wharf_stats_init(&st, sizeof st);
    TC_OK(wharf_client_stats(c, &st));
    TC_CHECK(st.http_ops >= nkeys && st.rdma_ops == 0, "stats http_ops %" PRIu64, st.http_ops);
    wharf_client_destroy(c);
    printf("OK\n");
    return 0;
}
