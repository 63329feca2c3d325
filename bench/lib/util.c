/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark support: statistics, CPU accounting, /metrics scraping, environment, result files. */
#include "wbench.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef WB_SOURCE_DIR
#define WB_SOURCE_DIR "."
#endif

/* ---- time and statistics ---- */

double wb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p% of samples at or below it. */
static double nearest_rank(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t r = (size_t)ceil(p / 100.0 * (double)n);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return sorted[r - 1];
}

void wb_lat_stats(double *v, size_t n, wb_lat_t *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    out->min = v[0];
    out->max = v[n - 1];
    out->mean = sum / (double)n;
    out->p50 = nearest_rank(v, n, 50);
    out->p90 = nearest_rank(v, n, 90);
    out->p99 = nearest_rank(v, n, 99);
}

double wb_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

json_t *wb_summary_json(const double *v, size_t n)
{
    json_t *o = json_object();
    json_t *vals = json_array();
    double *tmp = n ? malloc(n * sizeof *tmp) : NULL;
    double mn = n ? v[0] : 0, mx = n ? v[0] : 0;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(vals, json_real(v[i]));
        if (v[i] < mn)
            mn = v[i];
        if (v[i] > mx)
            mx = v[i];
        if (tmp)
            tmp[i] = v[i];
    }
    json_object_set_new(o, "median", json_real(tmp ? wb_median(tmp, n) : 0));
    json_object_set_new(o, "min", json_real(mn));
    json_object_set_new(o, "max", json_real(mx));
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    json_object_set_new(o, "values", vals);
    free(tmp);
    return o;
}

json_t *wb_lat_json(const wb_lat_t *l)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:I}", "min_ms", l->min * 1e3, "p50_ms",
                     l->p50 * 1e3, "p90_ms", l->p90 * 1e3, "p99_ms", l->p99 * 1e3, "max_ms",
                     l->max * 1e3, "mean_ms", l->mean * 1e3, "samples", (json_int_t)l->n);
}

/* ---- CPU ---- */

int wb_hostcpu_read(wb_hostcpu_t *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 5)
        return -1;
    /* guest and guest_nice (8, 9) are already inside user and nice. */
    uint64_t total = 0;
    for (int i = 0; i < 8 && i < n; i++)
        total += v[i];
    out->total = total;
    out->busy = total - v[3] - v[4];
    return 0;
}

double wb_hostcpu_busy_s(const wb_hostcpu_t *a, const wb_hostcpu_t *b)
{
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(b->busy - a->busy) / (double)(hz > 0 ? hz : 100);
}

double wb_hostcpu_fraction(const wb_hostcpu_t *a, const wb_hostcpu_t *b)
{
    uint64_t t = b->total - a->total;
    return t ? (double)(b->busy - a->busy) / (double)t : 0;
}

double wb_self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* ---- memory ---- */

void *wb_alloc_prefaulted(size_t len)
{
    if (len == 0)
        len = 1;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* Huge pages make prefaulting (and RDMA registration) cheap: a 4 KiB fault costs ~12 us
     * on these VMs. MAP_POPULATE after the advice would be ignored, so touch every page. */
    madvise(p, len, MADV_HUGEPAGE);
    memset(p, 0x5a, len);
    return p;
}

void wb_free(void *p, size_t len)
{
    if (p)
        munmap(p, len ? len : 1);
}

uint64_t wb_count_not(const uint8_t *p, size_t n, uint8_t b)
{
    uint64_t bad = 0;
    uint64_t w = 0x0101010101010101ull * b;
    size_t i = 0;
    /* Fast path: whole 64-byte blocks compared as words; exact count only on a mismatch. */
    for (; i + 64 <= n; i += 64) {
        const uint64_t *q = (const uint64_t *)(const void *)(p + i);
        uint64_t x = (q[0] ^ w) | (q[1] ^ w) | (q[2] ^ w) | (q[3] ^ w) | (q[4] ^ w) | (q[5] ^ w) |
                     (q[6] ^ w) | (q[7] ^ w);
        if (x)
            for (size_t k = 0; k < 64; k++)
                bad += p[i + k] != b;
    }
    for (; i < n; i++)
        bad += p[i] != b;
    return bad;
}

/* ---- /metrics ---- */

typedef struct wb_buf {
    char *p;
    size_t n, cap;
} wb_buf_t;

static size_t buf_write_cb(char *data, size_t sz, size_t nm, void *arg)
{
    wb_buf_t *b = arg;
    size_t n = sz * nm;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->cap ? b->cap * 2 : 65536);
        while (nc < b->n + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np)
            return 0;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

static int metrics_add(wb_metrics_t *m, const char *name, size_t nlen, double v)
{
    if (nlen >= sizeof m->m[0].name)
        nlen = sizeof m->m[0].name - 1;
    for (size_t i = 0; i < m->n; i++)
        if (strlen(m->m[i].name) == nlen && memcmp(m->m[i].name, name, nlen) == 0) {
            m->m[i].value += v;
            return 0;
        }
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        wb_metric_t *nm = realloc(m->m, nc * sizeof *nm);
        if (!nm)
            return -1;
        m->m = nm;
        m->cap = nc;
    }
    memcpy(m->m[m->n].name, name, nlen);
    m->m[m->n].name[nlen] = 0;
    m->m[m->n].value = v;
    m->n++;
    return 0;
}

int wb_metrics_parse(const char *text, wb_metrics_t *out)
{
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > 0 && p[0] != '#') {
            size_t nl = 0;
            while (nl < len && p[nl] != '{' && p[nl] != ' ')
                nl++;
            /* the value is the last space-separated field before an optional timestamp:
             * Prometheus text puts it right after the labels */
            const char *q = p + nl;
            if (q < p + len && *q == '{') {
                const char *close = memchr(q, '}', (size_t)(p + len - q));
                q = close ? close + 1 : p + len;
            }
            while (q < p + len && *q == ' ')
                q++;
            if (q < p + len && nl > 0) {
                char num[64];
                size_t k = 0;
                while (q + k < p + len && q[k] != ' ' && k < sizeof num - 1) {
                    num[k] = q[k];
                    k++;
                }
                num[k] = 0;
                char *end;
                double v = strtod(num, &end);
                if (end != num && *end == 0 && isfinite(v))
                    if (metrics_add(out, p, nl, v) != 0)
                        return -1;
            }
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    out->ok = 1;
    return 0;
}

static long metrics_get(const char *url, const char *ak, const char *sk, const char *region,
                        int sign, wb_buf_t *b, char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, errlen, "curl_easy_init failed");
        return -1;
    }
    char userpwd[512], sigv4[128];
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (sign && ak && sk) {
        snprintf(userpwd, sizeof userpwd, "%s:%s", ak, sk);
        snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", region ? region : "us-east-1");
        curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
    }
    CURLcode rc = curl_easy_perform(h);
    long code = -1;
    if (rc != CURLE_OK)
        snprintf(err, errlen, "GET %.200s failed: %.40s", url, curl_easy_strerror(rc));
    else
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    return code;
}

int wb_metrics_scrape(const char *endpoint, const char *ak, const char *sk, const char *region,
                      wb_metrics_t *out)
{
    memset(out, 0, sizeof *out);
    char url[1024];
    snprintf(url, sizeof url, "%s/metrics", endpoint);
    wb_buf_t b = {0};
    long code = metrics_get(url, ak, sk, region, 0, &b, out->err, sizeof out->err);
    if (code == 403 || code == 401) {
        b.n = 0;
        code = metrics_get(url, ak, sk, region, 1, &b, out->err, sizeof out->err);
    }
    int rc = -1;
    if (code == 200 && b.p)
        rc = wb_metrics_parse(b.p, out);
    else if (code > 0)
        snprintf(out->err, sizeof out->err, "GET %.200s answered HTTP %ld", url, code);
    free(b.p);
    return rc;
}

double wb_metrics_get(const wb_metrics_t *m, const char *name, int *found)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->m[i].name, name) == 0) {
            if (found)
                *found = 1;
            return m->m[i].value;
        }
    if (found)
        *found = 0;
    return 0;
}

void wb_metrics_free(wb_metrics_t *m)
{
    free(m->m);
    m->m = NULL;
    m->n = m->cap = 0;
}

json_t *wb_metrics_delta_json(const wb_metrics_t *before, const wb_metrics_t *after,
                              const char *const *prefixes)
{
    json_t *o = json_object();
    for (size_t i = 0; i < after->n; i++) {
        const char *name = after->m[i].name;
        int match = prefixes == NULL;
        for (const char *const *pp = prefixes; pp && *pp; pp++)
            if (strncmp(name, *pp, strlen(*pp)) == 0)
                match = 1;
        if (!match)
            continue;
        double d = after->m[i].value - wb_metrics_get(before, name, NULL);
        if (d != 0)
            json_object_set_new(o, name, json_real(d));
    }
    return o;
}

/* ---- environment ---- */

/* First line of a command's stdout, trimmed; "" when it fails. */
static void run_line(const char *cmd, char *out, size_t outlen)
{
    out[0] = 0;
    FILE *f = popen(cmd, "r");
    if (!f)
        return;
    if (fgets(out, (int)outlen, f) == NULL)
        out[0] = 0;
    pclose(f);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = 0;
}

json_t *wb_env_json(const char *provider)
{
    json_t *env = json_object();
    char line[512], model[256] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    snprintf(model, sizeof model, "%s", c + 2);
                    model[strcspn(model, "\n")] = 0;
                }
                break;
            }
        fclose(f);
    }
    json_object_set_new(env, "cpu_model", json_string(model));
    json_object_set_new(env, "cpu_cores", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    json_object_set_new(env, "memory_bytes", json_integer((json_int_t)pages * psz));
    struct utsname u;
    if (uname(&u) == 0) {
        char k[512];
        snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.machine);
        json_object_set_new(env, "kernel", json_string(k));
        json_object_set_new(env, "hostname", json_string(u.nodename));
    }
    /* "fi_info: 1.17.0\nlibfabric: 1.17.0\n..." */
    char fv[256] = "";
    run_line("fi_info --version 2>/dev/null | grep '^libfabric:' | cut -d' ' -f2", fv, sizeof fv);
    json_object_set_new(env, "libfabric_version", json_string(fv));
    json_object_set_new(env, "provider", json_string(provider ? provider : "none"));
    char thp[128] = "";
    run_line("cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null", thp, sizeof thp);
    json_object_set_new(env, "transparent_hugepage", json_string(thp));

    json_t *gpus = json_array();
    FILE *g = popen("command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi "
                    "--query-gpu=index,name,memory.total,driver_version "
                    "--format=csv,noheader,nounits 2>/dev/null",
                    "r");
    if (g) {
        while (fgets(line, sizeof line, g)) {
            char name[256];
            int idx;
            long mem;
            char drv[64];
            if (sscanf(line, "%d, %255[^,], %ld, %63s", &idx, name, &mem, drv) == 4)
                json_array_append_new(gpus,
                                      json_pack("{s:i,s:s,s:I,s:s}", "index", idx, "name", name,
                                                "memory_mib", (json_int_t)mem, "driver", drv));
        }
        pclose(g);
    }
    json_object_set_new(env, "gpus", gpus);

    char commit[128] = "", dirty[16] = "";
    run_line("git -C " WB_SOURCE_DIR " rev-parse HEAD 2>/dev/null", commit, sizeof commit);
    run_line("git -C " WB_SOURCE_DIR " status --porcelain --untracked-files=no 2>/dev/null "
             "| head -1 | wc -l",
             dirty, sizeof dirty);
    json_object_set_new(env, "git_commit", json_string(commit));
    json_object_set_new(env, "git_dirty", json_boolean(atoi(dirty) > 0));
    char curlv[128];
    snprintf(curlv, sizeof curlv, "%s", curl_version());
    json_object_set_new(env, "libcurl", json_string(curlv));
    return env;
}

void wb_timestamp(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int mkdir_p(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

int wb_write_result(const char *dir, const char *benchmark, const char *tag, const char *backend,
                    json_t *root, char *path_out, size_t pathlen, char *err, size_t errlen)
{
    if (mkdir_p(dir) != 0) {
        snprintf(err, errlen, "cannot create results folder %s: %s", dir, strerror(errno));
        return -1;
    }
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
    char path[1024];
    for (int k = 0; k < 100; k++) {
        char suffix[8] = "";
        if (k)
            snprintf(suffix, sizeof suffix, "-%d", k);
        snprintf(path, sizeof path, "%s/%s%s%s-%s-%s%s.json", dir, benchmark,
                 tag && *tag ? "-" : "", tag ? tag : "", backend, ts, suffix);
        if (access(path, F_OK) != 0)
            break;
    }
    if (json_dump_file(root, path, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10)) !=
        0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (path_out)
        snprintf(path_out, pathlen, "%s", path);
    return 0;
}
