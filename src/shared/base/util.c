/* SPDX-License-Identifier: Apache-2.0 */
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void wh_sbuf_init(wh_sbuf_t *b)
{
    memset(b, 0, sizeof *b);
}

void wh_sbuf_free(wh_sbuf_t *b)
{
    if (!b)
        return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

void wh_sbuf_reset(wh_sbuf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static bool sbuf_reserve(wh_sbuf_t *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void wh_sbuf_append(wh_sbuf_t *b, const void *p, size_t n)
{
    if (!sbuf_reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void wh_sbuf_puts(wh_sbuf_t *b, const char *s)
{
    wh_sbuf_append(b, s, strlen(s));
}

void wh_sbuf_vprintf(wh_sbuf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !sbuf_reserve(b, (size_t)n))
        return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void wh_sbuf_printf(wh_sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wh_sbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *wh_sbuf_steal(wh_sbuf_t *b)
{
    char *d = b->data;
    if (!d)
        d = calloc(1, 1);
    memset(b, 0, sizeof *b);
    return d;
}

uint64_t wh_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void wh_deadline_ns(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)(ns / 1000000000ULL);
    ts->tv_nsec += (long)(ns % 1000000000ULL);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

double wh_now_s(void)
{
    return (double)wh_now_ns() / 1e9;
}

static const char *const g_wday[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const g_mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void wh_http_date(time_t t, char out[30])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    char hms[16];
    strftime(hms, sizeof hms, "%d", &tm);
    /* day names and months are fixed English, not the locale's */
    int n = snprintf(out, 30, "%s, %s %s ", g_wday[tm.tm_wday % 7], hms, g_mon[tm.tm_mon % 12]);
    strftime(out + n, (size_t)(30 - n), "%Y %H:%M:%S GMT", &tm);
}

int wh_http_date_parse(const char *s, time_t *out)
{
    struct tm tm;
    const char *fmts[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                          "%a %b %e %H:%M:%S %Y"};
    for (size_t i = 0; i < WH_ARRAY_SIZE(fmts); i++) {
        memset(&tm, 0, sizeof tm);
        const char *end = strptime(s, fmts[i], &tm);
        if (end && *end == '\0') {
            *out = timegm(&tm);
            return 0;
        }
    }
    return -1;
}

void wh_iso8601(time_t t, char out[25])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 25, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

void wh_amz_date(time_t t, char out[17])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

int wh_amz_date_parse(const char *s, time_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (strlen(s) != 16)
        return -1;
    const char *end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
    if (!end || *end)
        return -1;
    *out = timegm(&tm);
    return 0;
}

int wh_parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int wh_parse_size(const char *s, uint64_t *out)
{
    if (!s)
        return -1;
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    uint64_t v;
    if (wh_parse_u64(s, n, &v) != 0)
        return -1;
    const char *u = s + n;
    static const char units[] = "KMGT";
    unsigned shift = 0;
    if ((u[0] == 'B' || u[0] == 'b') && !u[1]) {
        u++;
    } else if (*u) {
        const char *p = strchr(units, toupper((unsigned char)*u));
        if (!p)
            return -1;
        shift = 10u * (unsigned)(p - units + 1);
        u++;
        if ((u[0] == 'i' || u[0] == 'I') && (u[1] == 'B' || u[1] == 'b'))
            u += 2;
        else if (u[0] == 'B' || u[0] == 'b')
            u++;
        if (*u)
            return -1;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = v << shift;
    return 0;
}

int wh_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int wh_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int wh_pread_all(int fd, void *p, size_t n, uint64_t off)
{
    char *c = p;
    while (n) {
        ssize_t r = pread(fd, c, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EIO; /* short file */
        c += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int wh_mkdir_p(const char *path, unsigned mode)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return -ENAMETOOLONG;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, mode) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

uint32_t wh_fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}
