/* SPDX-License-Identifier: Apache-2.0 */
/* Small shared helpers: growable string buffer, time, safe integer parsing, fs. */
#ifndef WH_BASE_UTIL_H
#define WH_BASE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define WH_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WH_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Growable NUL-terminated buffer. A failed allocation sets oom and further appends are no-ops,
 * so callers check once at the end. */
typedef struct wh_sbuf {
    char *data;
    size_t len, cap;
    bool oom;
} wh_sbuf_t;

void wh_sbuf_init(wh_sbuf_t *b);
void wh_sbuf_free(wh_sbuf_t *b);
void wh_sbuf_reset(wh_sbuf_t *b);
void wh_sbuf_append(wh_sbuf_t *b, const void *p, size_t n);
void wh_sbuf_puts(wh_sbuf_t *b, const char *s);
void wh_sbuf_printf(wh_sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wh_sbuf_vprintf(wh_sbuf_t *b, const char *fmt, va_list ap);
/* Takes ownership of the data (caller frees); b is reset. */
char *wh_sbuf_steal(wh_sbuf_t *b);

/* FNV-1a of a NUL-terminated string: slot choice for small in-memory tables. */
uint32_t wh_fnv1a(const char *s);

/* Monotonic and wall clocks. */
uint64_t wh_now_ns(void);
double wh_now_s(void);
/* CLOCK_REALTIME now + ns: the deadline pthread_cond_timedwait takes. */
void wh_deadline_ns(struct timespec *ts, uint64_t ns);

/* HTTP date (RFC 7231 IMF-fixdate) into out[30]; parse accepts IMF-fixdate, RFC 850, asctime. */
void wh_http_date(time_t t, char out[30]);
int wh_http_date_parse(const char *s, time_t *out);
/* ISO 8601 with milliseconds, as S3 XML uses: 2009-10-12T17:50:30.000Z (out[25]). */
void wh_iso8601(time_t t, char out[25]);
/* x-amz-date basic form 20130524T000000Z (out[17]) and parse of it. */
void wh_amz_date(time_t t, char out[17]);
int wh_amz_date_parse(const char *s, time_t *out);

/* Strict decimal parse of an unsigned 64-bit integer: digits only, no sign, no overflow. */
int wh_parse_u64(const char *s, size_t n, uint64_t *out);

/* The one size parser of every command line (wharfd, wharf, the benchmarks). A bare number is
 * bytes (so is a number with a B); a suffix K, M, G, T (or KiB, MiB, GiB, TiB; any case; an
 * optional B after K/M/G/T) multiplies by 1024^n. Digits only before the suffix: no sign, no
 * fraction, no spaces, no overflow. Returns 0, or -1 for anything else. */
int wh_parse_size(const char *s, uint64_t *out);
/* What wh_parse_size accepts, for help texts and error messages. */
#define WH_SIZE_SYNTAX "bytes, or with a suffix K, M, G, T (KiB, MiB, GiB, TiB)"

/* write/pwrite/pread loops that handle EINTR and short transfers. Return 0 or -errno. */
int wh_write_all(int fd, const void *p, size_t n);
int wh_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
int wh_pread_all(int fd, void *p, size_t n, uint64_t off);
/* mkdir -p */
int wh_mkdir_p(const char *path, unsigned mode);

#endif
