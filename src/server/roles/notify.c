/* SPDX-License-Identifier: Apache-2.0 */
/* Signals and the service manager: the roles' signal wait (SIGTERM/SIGINT stop, SIGHUP
 * reloads), and sd_notify(3) to systemd: READY=1 once the role listens, RELOADING=1 around a
 * reload, STOPPING=1 when it drains, and WATCHDOG=1 every half of WATCHDOG_USEC when the
 * unit sets WatchdogSec. Without NOTIFY_SOCKET each message is nothing. */
#include "roles/roles.h"
#include "roles/config.h"
#include "roles/storage.h"
#include "base/log.h"
#include "front/front.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#define MOD "main"

static pthread_t g_dog;
static bool g_dog_on;
static pthread_mutex_t g_dog_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_dog_cv;
static bool g_dog_stop; /* under g_dog_mu */
static uint64_t g_dog_period_us;

static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_dog_mu);
    while (!g_dog_stop) {
        sd_notify(0, "WATCHDOG=1");
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + g_dog_period_us * 1000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        while (!g_dog_stop && pthread_cond_timedwait(&g_dog_cv, &g_dog_mu, &ts) == 0) {
        }
    }
    pthread_mutex_unlock(&g_dog_mu);
    return NULL;
}

static void notify_ready(void)
{
    sd_notify(0, "READY=1\nSTATUS=serving");
    uint64_t usec = 0;
    if (g_dog_on || sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return;
    g_dog_period_us = usec / 2 ? usec / 2 : 1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_dog_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g_dog, NULL, watchdog, NULL) == 0) {
        g_dog_on = true;
        wh_info(MOD, "watchdog pings every %llu ms", (unsigned long long)(g_dog_period_us / 1000));
    } else
        wh_error(MOD, "cannot start the watchdog thread: the service manager may kill wharfd");
}

void role_notify_done(void)
{
    if (!g_dog_on)
        return;
    pthread_mutex_lock(&g_dog_mu);
    g_dog_stop = true;
    pthread_cond_signal(&g_dog_cv);
    pthread_mutex_unlock(&g_dog_mu);
    pthread_join(g_dog, NULL);
    g_dog_on = false;
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

void role_block_signals(void)
{
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void role_wait_signals(void (*on_hup)(void *arg), void *arg)
{
    notify_ready();
    sigset_t set;
    signal_set(&set);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
                       (unsigned long long)ts.tv_sec * 1000000ULL +
                           (unsigned long long)ts.tv_nsec / 1000);
            if (on_hup)
                on_hup(arg);
            sd_notify(0, "READY=1");
            continue;
        }
        wh_info(MOD, "signal received sig=%s, shutting down", sig == SIGTERM ? "TERM" : "INT");
        sd_notify(0, "STOPPING=1");
        return;
    }
}

/* A live key of an S3 front (config.h's role_conf_apply_fn); value NULL: its default. The
 * reload's check parsed every value already. */
static int notify_front_apply(void *arg, const char *key, const char *value)
{
    front_t *s = arg;
    unsigned long v = value ? strtoul(value, NULL, 10) : 0;
    if (strcmp(key, "log-level") == 0) {
        wh_log_level_t l = WH_LOG_INFO;
        if (value && wh_log_parse_level(value, &l) != 0)
            return -1;
        wh_log_set_level(l);
        return 0;
    }
    if (strcmp(key, "max-uploads") == 0) {
        atomic_store(&s->cfg.max_uploads, value ? (unsigned)v : FRONT_MAX_UPLOADS_DEFAULT);
        return 0;
    }
    if (strcmp(key, "lifecycle-period") == 0) {
        atomic_store(&s->cfg.lifecycle_period_s, value ? (unsigned)v : 0);
        return 0;
    }
    if (strcmp(key, "shutdown-grace") == 0) {
        s->cfg.shutdown_grace_s = value ? (unsigned)v : ROLE_SHUTDOWN_GRACE_DEFAULT;
        return 0;
    }
    return -1;
}

void role_front_hup(void *srv)
{
    role_conf_reload(notify_front_apply, srv);
    front_reload_tls(srv);
}

static int storage_apply(void *arg, const char *key, const char *value)
{
    if (strcmp(key, "shutdown-grace") == 0) {
        role_storage_set_grace(arg, value ? (unsigned)strtoul(value, NULL, 10)
                                          : ROLE_SHUTDOWN_GRACE_DEFAULT);
        return 0;
    }
    if (strcmp(key, "log-level") == 0) {
        wh_log_level_t l = WH_LOG_INFO;
        if (value && wh_log_parse_level(value, &l) != 0)
            return -1;
        wh_log_set_level(l);
        return 0;
    }
    return -1;
}

void role_storage_hup(void *s)
{
    role_conf_reload(storage_apply, s);
    role_storage_reload_tls(s);
}
