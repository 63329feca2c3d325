/* SPDX-License-Identifier: Apache-2.0 */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Atomic: a SIGHUP changes it while every thread reads it. */
static _Atomic int g_level = WH_LOG_INFO;
static const char *const g_names[] = {"error", "warn", "info", "debug", "trace"};

void wh_log_set_level(wh_log_level_t lvl)
{
    atomic_store_explicit(&g_level, (int)lvl, memory_order_relaxed);
}

wh_log_level_t wh_log_get_level(void)
{
    return (wh_log_level_t)atomic_load_explicit(&g_level, memory_order_relaxed);
}

int wh_log_parse_level(const char *name, wh_log_level_t *out)
{
    for (int i = 0; i < (int)(sizeof g_names / sizeof g_names[0]); i++) {
        if (strcasecmp(name, g_names[i]) == 0) {
            *out = (wh_log_level_t)i;
            return 0;
        }
    }
    return -1;
}

void wh_log_emit(wh_log_level_t lvl, const char *mod, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n =
        snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ level=%s mod=%s msg=\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(tv.tv_usec / 1000), g_names[lvl], mod ? mod : "-");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 2, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 3)
        len = sizeof line - 3;
    line[len++] = '"';
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
