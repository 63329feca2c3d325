/* SPDX-License-Identifier: Apache-2.0 */
/* Structured logging: one line per event, "ts=... level=... mod=... msg=... key=value".
 * Messages are lowercase. Thread-safe (one write(2) per line). */
#ifndef WH_BASE_LOG_H
#define WH_BASE_LOG_H

typedef enum {
    WH_LOG_ERROR = 0,
    WH_LOG_WARN,
    WH_LOG_INFO,
    WH_LOG_DEBUG,
    WH_LOG_TRACE
} wh_log_level_t;

void wh_log_set_level(wh_log_level_t lvl);
/* Accepts "error", "warn", "info", "debug", "trace"; returns -1 on an unknown name. */
int wh_log_parse_level(const char *name, wh_log_level_t *out);
wh_log_level_t wh_log_get_level(void);
void wh_log_emit(wh_log_level_t lvl, const char *mod, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define WH_LOG(lvl, mod, ...)                                                                      \
    do {                                                                                           \
        if ((lvl) <= wh_log_get_level())                                                           \
            wh_log_emit((lvl), (mod), __VA_ARGS__);                                                \
    } while (0)
#define wh_error(mod, ...) WH_LOG(WH_LOG_ERROR, mod, __VA_ARGS__)
#define wh_warn(mod, ...) WH_LOG(WH_LOG_WARN, mod, __VA_ARGS__)
#define wh_info(mod, ...) WH_LOG(WH_LOG_INFO, mod, __VA_ARGS__)
#define wh_debug(mod, ...) WH_LOG(WH_LOG_DEBUG, mod, __VA_ARGS__)
#define wh_trace(mod, ...) WH_LOG(WH_LOG_TRACE, mod, __VA_ARGS__)

#endif
