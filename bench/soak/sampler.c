/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak's sampler: the server's memory, descriptors and threads (/proc) and its metrics
 * over the run, and the fitted trends that say whether anything grows. */
#include "soak.h"

/* ---- the sampler -------------------------------------------------------------------------- */

sk_sample_t *g_samples;

size_t g_nsamples, g_cap_samples;

char g_registered_metric[96];

static void sk_proc_sample(sk_sample_t *s)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", P.pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    s->alive = 1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
            s->rss = (double)v * 1024;
        else if (sscanf(line, "VmLck: %llu kB", &v) == 1)
            s->vm_lck = (double)v * 1024;
        else if (sscanf(line, "VmPin: %llu kB", &v) == 1)
            s->vm_pin = (double)v * 1024;
        else if (sscanf(line, "Threads: %llu", &v) == 1)
            s->threads = (double)v;
    }
    fclose(f);
    snprintf(path, sizeof path, "/proc/%d/fd", P.pid);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        unsigned n = 0;
        while ((e = readdir(d)))
            n += e->d_name[0] != '.';
        closedir(d);
        s->fds = n;
    }
}

typedef struct sk_text {
    char *p;
    size_t n;
} sk_text_t;

static size_t sk_text_cb(char *d, size_t sz, size_t nm, void *arg)
{
    sk_text_t *t = arg;
    size_t n = sz * nm;
    char *np = realloc(t->p, t->n + n + 1);
    if (!np)
        return 0;
    memcpy(np + t->n, d, n);
    t->p = np;
    t->n += n;
    t->p[t->n] = 0;
    return n;
}

/* GET /metrics as text (signed when the server wants it); NULL when it cannot be had. */
static char *sk_metrics_text(void)
{
    char url[1024], userpwd[512], sigv4[128];
    snprintf(url, sizeof url, "%s/metrics", P.endpoint);
    for (int sign = 0; sign < 2; sign++) {
        CURL *h = curl_easy_init();
        if (!h)
            return NULL;
        sk_text_t t = {0};
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sk_text_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (sign) {
            snprintf(userpwd, sizeof userpwd, "%s:%s", P.ak, P.sk);
            snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", P.region);
            curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
            curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
        }
        long code = 0;
        CURLcode rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        if (rc == CURLE_OK && code == 200 && t.p)
            return t.p;
        free(t.p);
        if (rc != CURLE_OK || (code != 401 && code != 403))
            return NULL;
    }
    return NULL;
}

/* From /metrics: requests in flight, the RDMA buffer pool (all and free buffers), live RDMA
 * pipelines, and registered memory if wharfd exposes a series whose name says so. Read per
 * label set (the pool's total and free are one series name). */
static void sk_metrics_sample(sk_sample_t *s)
{
    char *text = sk_metrics_text();
    if (!text)
        return;
    s->metrics_ok = 1;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (line[0] == '#')
            continue;
        char *sp = strrchr(line, ' ');
        if (!sp)
            continue;
        double v = strtod(sp + 1, NULL);
        *sp = 0;
        if (!strcmp(line, "wharf_inflight_requests")) {
            s->inflight = v;
        } else if (!strcmp(line, "wharf_rdma_pool_buffers{state=\"total\"}")) {
            s->pool_total = v;
            s->has_pool = 1;
        } else if (!strcmp(line, "wharf_rdma_pool_buffers{state=\"free\"}")) {
            s->pool_free = v;
        } else if (!strcmp(line, "wharf_rdma_pipelines_active")) {
            s->pipelines = v;
            s->has_pipelines = 1;
        } else if (strstr(line, "registered") && strstr(line, "bytes")) {
            if (!g_registered_metric[0])
                snprintf(g_registered_metric, sizeof g_registered_metric, "%.*s",
                         (int)strcspn(line, "{"), line);
            s->registered += v;
            s->has_registered = 1;
        }
    }
    free(text);
}

void *sk_sampler_main(void *arg)
{
    double next = g_t0;
    while (!atomic_load(&g_stop)) {
        sk_sample_t s = {.t = wb_now() - g_t0};
        if (P.pid > 0)
            sk_proc_sample(&s);
        sk_metrics_sample(&s);
        s.ops = atomic_load(&g_ops_total);
        s.errors = atomic_load(&g_err_total);
        s.wrong_bytes = atomic_load(&g_wrong_bytes);
        if (g_nsamples == g_cap_samples) {
            size_t nc = g_cap_samples ? g_cap_samples * 2 : 1024;
            sk_sample_t *ns = realloc(g_samples, nc * sizeof *ns);
            if (!ns)
                break;
            g_samples = ns;
            g_cap_samples = nc;
        }
        g_samples[g_nsamples++] = s;
        next += P.interval;
        while (!atomic_load(&g_stop) && wb_now() < next)
            usleep(10000);
    }
    return NULL;
}

/* Least-squares slope (per minute) of field f of the samples taken at or after t_from. */
json_t *sk_fit(size_t off, double t_from, double scale)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, lo = INFINITY, hi = -INFINITY, first = NAN, last = NAN;
    size_t n = 0;
    for (size_t i = 0; i < g_nsamples; i++) {
        const sk_sample_t *s = &g_samples[i];
        if (s->t < t_from || !s->alive)
            continue;
        double y = *(const double *)((const char *)s + off) / scale, x = s->t / 60.0;
        if (isnan(first))
            first = y;
        last = y;
        sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
        lo = fmin(lo, y), hi = fmax(hi, y);
    }
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer((json_int_t)n));
    if (n >= 3 && n * sxx - sx * sx > 0) {
        double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        json_object_set_new(o, "slope_per_min", json_real(slope));
        json_object_set_new(o, "first", json_real(first));
        json_object_set_new(o, "last", json_real(last));
        json_object_set_new(o, "min", json_real(lo));
        json_object_set_new(o, "max", json_real(hi));
    } else {
        json_object_set_new(o, "slope_per_min", json_null());
    }
    return o;
}
