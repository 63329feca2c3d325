/* SPDX-License-Identifier: Apache-2.0 */
/* bench/loadgen: N concurrent keep-alive HTTP connections doing GETs (or PUTs), one thread
 * (libcurl multi), so the load generator spends as little of the host's CPU as it can. Reports
 * ops/s, GB/s and nearest-rank latency percentiles as JSON on stdout.
 *
 *   loadgen --url-fmt 'http://127.0.0.1:9000/bucket/small/%05u.bin' --keys 64 \
 *           --connections 16 --duration 10 [--warmup 1] [--sigv4 us-east-1 --user AK:SK]
 *           [--expect-bytes 262144] [--put-bytes 4096]
 *
 * Key i of --keys is requested round-robin per connection (connection c starts at key c).
 * Every reply must be 200 with --expect-bytes body bytes; others count as errors. With
 * --put-bytes N every request is a PUT of N bytes (a pattern that differs per request, so
 * no two consecutive writes of a key are the same object); bytes then counts what was sent. */
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
    uint64_t sent; /* PUT: body bytes handed to curl */
    unsigned next_key;
    int busy;
} lg_conn_t;

static size_t lg_write(char *p, size_t sz, size_t nm, void *arg)
{
    lg_conn_t *c = arg;
    c->got += sz * nm;
    return sz * nm;
}

/* PUT bodies: one buffer, its first 8 bytes changed per request. */
static char *g_body;
static size_t g_body_len;
static uint64_t g_body_seq;

static size_t lg_read(char *p, size_t sz, size_t nm, void *arg)
{
    lg_conn_t *c = arg;
    size_t left = g_body_len - c->sent, n = sz * nm < left ? sz * nm : left;
    memcpy(p, g_body + c->sent, n);
    if (c->sent == 0 && n >= sizeof g_body_seq) {
        uint64_t seq = ++g_body_seq;
        memcpy(p, &seq, sizeof seq);
    }
    c->sent += n;
    return n;
}

static void lg_set_url(lg_conn_t *c, const char *fmt, unsigned nkeys)
{
    c->sent = 0;
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
                    "[--expect-bytes N] [--put-bytes N]\n");
}

int main(int argc, char **argv)
{
    const char *fmt = NULL, *region = NULL, *user = NULL;
    unsigned nkeys = 0, nconn = 16;
    double duration = 10, warmup = 1;
    long long expect = -1, put_bytes = -1;
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
        else if (strcmp(a, "--put-bytes") == 0)
            put_bytes = atoll(v);
        else {
            usage();
            return 2;
        }
    }
    if (!fmt || !strstr(fmt, "%") || nkeys == 0 || nconn == 0 || nconn > LG_MAX_CONN ||
        duration <= 0 || duration > 600 || warmup < 0 || warmup > 60 || (region && !user) ||
        put_bytes > (1LL << 30)) {
        usage();
        return 2;
    }
    if (put_bytes >= 0) {
        g_body_len = (size_t)put_bytes;
        g_body = malloc(g_body_len ? g_body_len : 1);
        if (!g_body)
            return 1;
        for (size_t i = 0; i < g_body_len; i++)
            g_body[i] = (char)(i * 131 + 7);
        expect = -1; /* a PUT's reply has no body to count */
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
        if (g_body) {
            curl_easy_setopt(c->h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c->h, CURLOPT_READFUNCTION, lg_read);
            curl_easy_setopt(c->h, CURLOPT_READDATA, c);
            curl_easy_setopt(c->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)g_body_len);
        }
        if (region) {
            curl_easy_setopt(c->h, CURLOPT_AWS_SIGV4, sigv4);
            curl_easy_setopt(c->h, CURLOPT_USERPWD, user);
        }
        if (hdrs)
            curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
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
                        snprintf(first_err, sizeof first_err, "curl %d (%s), HTTP %ld, %llu bytes",
                                 (int)msg->data.result, curl_easy_strerror(msg->data.result), code,
                                 (unsigned long long)c->got);
                } else {
                    ops++;
                    bytes += g_body ? c->sent : c->got;
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
    json_object_set_new(o, "method", json_string(g_body ? "PUT" : "GET"));
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
    free(g_body);
    return errors ? 1 : 0;
}
