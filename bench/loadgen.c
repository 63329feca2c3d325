/* bench/loadgen: N concurrent keep-alive HTTP connections doing GETs, one thread (libcurl multi),
 * so the load generator spends as little of the host's CPU as it can. Reports ops/s, GB/s and
 * nearest-rank latency percentiles as JSON on stdout.
 *
 *   loadgen --url-fmt 'http://127.0.0.1:9000/bucket/small/%05u.bin' --keys 64 \
 *           --connections 16 --duration 10 [--warmup 1] [--sigv4 us-east-1 --user AK:SK]
 *           [--expect-bytes 262144]
 *
 * Key i of --keys is requested round-robin per connection (connection c starts at key c).
 * Every reply must be 200 with --expect-bytes body bytes; others count as errors. */
#include "wbench.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LG_MAX_CONN 1024

typedef struct lg_conn {
    CURL *h;
    double t0;
    uint64_t got;
    unsigned next_key;
    int busy;
} lg_conn_t;

static size_t lg_write(char *p, size_t sz, size_t nm, void *arg)
{
    lg_conn_t *c = arg;
    c->got += sz * nm;
    return sz * nm;
}

static void lg_set_url(lg_conn_t *c, const char *fmt, unsigned nkeys)
{
    char url[2048];
    snprintf(url, sizeof url, fmt, c->next_key % nkeys);
    c->next_key++;
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    c->got = 0;
    c->t0 = wb_now();
}

static void usage(void)
{
    fprintf(stderr, "usage: loadgen --url-fmt FMT (with one %%u) --keys N [--connections 16] "
                    "[--duration S] [--warmup S] [--sigv4 REGION --user AK:SK] "
                    "[--expect-bytes N]\n");
}

int main(int argc, char **argv)
{
    const char *fmt = NULL, *region = NULL, *user = NULL;
    unsigned nkeys = 0, nconn = 16;
    double duration = 10, warmup = 1;
    long long expect = -1;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(a, "--url-fmt") == 0)
            fmt = v;
        else if (strcmp(a, "--keys") == 0)
            nkeys = (unsigned)atoi(v);
        else if (strcmp(a, "--connections") == 0)
            nconn = (unsigned)atoi(v);
        else if (strcmp(a, "--duration") == 0)
            duration = atof(v);
        else if (strcmp(a, "--warmup") == 0)
            warmup = atof(v);
        else if (strcmp(a, "--sigv4") == 0)
            region = v;
        else if (strcmp(a, "--user") == 0)
            user = v;
        else if (strcmp(a, "--expect-bytes") == 0)
            expect = atoll(v);
        else {
            usage();
            return 2;
        }
    }
    if (!fmt || !strstr(fmt, "%") || nkeys == 0 || nconn == 0 || nconn > LG_MAX_CONN ||
        duration <= 0 || duration > 600 || warmup < 0 || warmup > 60 || (region && !user)) {
        usage();
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)nconn);
    lg_conn_t *conns = calloc(nconn, sizeof *conns);
    size_t cap = 1 << 16, n = 0;
    double *lat = malloc(cap * sizeof *lat);
    char sigv4[128];
    struct curl_slist *hdrs = NULL;
    if (region) {
        snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", region);
        /* curl 7.88 does not send it; S3 requires it and curl signs this value */
        hdrs = curl_slist_append(hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    }
    for (unsigned i = 0; i < nconn; i++) {
        lg_conn_t *c = &conns[i];
        c->h = curl_easy_init();
        c->next_key = i;
        curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, lg_write);
        curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 60L);
        curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
        if (region) {
            curl_easy_setopt(c->h, CURLOPT_AWS_SIGV4, sigv4);
            curl_easy_setopt(c->h, CURLOPT_USERPWD, user);
            curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
        }
        lg_set_url(c, fmt, nkeys);
        curl_multi_add_handle(m, c->h);
        c->busy = 1;
    }
    double t_start = wb_now(), t_measure = t_start + warmup, t_stop = t_measure + duration;
    double cpu0 = 0, t_first = 0;
    wb_hostcpu_t h0 = {0}, h1 = {0};
    int measuring = 0;
    uint64_t ops = 0, bytes = 0, errors = 0;
    char first_err[256] = "";
    unsigned busy = nconn;
    double deadline = t_stop + 120; /* bounded drain */
    while (busy > 0 && wb_now() < deadline) {
        int running;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            lg_conn_t *c;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            double now = wb_now();
            long code = 0;
            curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
            int bad = msg->data.result != CURLE_OK || code != 200 ||
                      (expect >= 0 && c->got != (uint64_t)expect);
            if (!measuring && now >= t_measure) {
                measuring = 1;
                t_first = now;
                cpu0 = wb_self_cpu_s();
                wb_hostcpu_read(&h0);
            }
            if (measuring && c->t0 >= t_first) {
                if (bad) {
                    errors++;
                    if (!first_err[0])
                        snprintf(first_err, sizeof first_err,
                                 "curl %d (%s), HTTP %ld, %llu bytes", (int)msg->data.result,
                                 curl_easy_strerror(msg->data.result), code,
                                 (unsigned long long)c->got);
                } else {
                    ops++;
                    bytes += c->got;
                    if (n == cap) {
                        cap *= 2;
                        double *nl = realloc(lat, cap * sizeof *lat);
                        if (!nl)
                            return 1;
                        lat = nl;
                    }
                    lat[n++] = now - c->t0;
                }
            } else if (bad && !first_err[0]) {
                snprintf(first_err, sizeof first_err, "warm-up: curl %d (%s), HTTP %ld",
                         (int)msg->data.result, curl_easy_strerror(msg->data.result), code);
                errors++;
            }
            curl_multi_remove_handle(m, c->h);
            if (now < t_stop) {
                lg_set_url(c, fmt, nkeys);
                curl_multi_add_handle(m, c->h);
            } else {
                c->busy = 0;
                busy--;
            }
        }
        if (busy)
            curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    double t_end = wb_now();
    wb_hostcpu_read(&h1);
    double cpu = wb_self_cpu_s() - cpu0;
    double wall = measuring ? t_end - t_first : 0;
    wb_lat_t ls;
    wb_lat_stats(lat, n, &ls);
    json_t *o = json_object();
    json_object_set_new(o, "connections", json_integer(nconn));
    json_object_set_new(o, "keys", json_integer(nkeys));
    json_object_set_new(o, "ops", json_integer((json_int_t)ops));
    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(o, "errors", json_integer((json_int_t)errors));
    json_object_set_new(o, "first_error", first_err[0] ? json_string(first_err) : json_null());
    json_object_set_new(o, "wall_s", json_real(wall));
    json_object_set_new(o, "ops_per_s", json_real(wall > 0 ? (double)ops / wall : 0));
    json_object_set_new(o, "throughput_gbps_bytes",
                        json_real(wall > 0 ? (double)bytes / wall / 1e9 : 0));
    json_object_set_new(o, "latency", wb_lat_json(&ls));
    json_object_set_new(o, "client_cpu_s", json_real(cpu));
    json_object_set_new(o, "host_cpu_s", json_real(wb_hostcpu_busy_s(&h0, &h1)));
    json_object_set_new(o, "signed", json_boolean(region != NULL));
    json_dumpf(o, stdout, JSON_SORT_KEYS | JSON_REAL_PRECISION(8));
    printf("\n");
    json_decref(o);
    for (unsigned i = 0; i < nconn; i++) {
        if (conns[i].busy)
            curl_multi_remove_handle(m, conns[i].h);
        curl_easy_cleanup(conns[i].h);
    }
    curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    curl_global_cleanup();
    free(conns);
    free(lat);
    return errors ? 1 : 0;
}
