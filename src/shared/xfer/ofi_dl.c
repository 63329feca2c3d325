/* SPDX-License-Identifier: Apache-2.0 */
/* libfabric is opened here, on the first call that needs it, not linked into libwharf or
 * wharfd. Linked, it is loaded with libwharf, and so are the provider libraries that a
 * distribution's libfabric links directly: Debian's pulls in libpsm_infinipath, whose
 * constructor replaces the handlers of SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS and SIGILL
 * with its own backtrace printer, which exits 1. A program that loads libwharf after setting
 * up its signals (Python through ctypes, any dlopen) then lost its SIGTERM handler before its
 * first call, and a client that never uses RDMA paid for it too.
 *
 * So: a process that never opens a fabric provider never loads libfabric. When one does, the
 * signal dispositions are saved before the load and before each call that may initialise a
 * provider (fi_getinfo, fi_fabric), and any that changed are put back, with an info line
 * naming the library that changed it. libwharf uses none of those providers' handlers; the
 * host's own are what it set up. (A host thread that changes a handler during that call
 * loses its change: a window of one provider open.) The host's environment is not touched. */
#include "xfer/ofi_dl.h"
#include "base/log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define OFI_DL_SONAME "libfabric.so.1"

static struct {
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                   struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    uint32_t (*version)(void);
    const char *(*strerror)(int);
    bool ok;
    char why[256];
} g_fi;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

void ofi_sig_save(ofi_sig_saved_t *s)
{
    for (int sig = 1; sig < NSIG; sig++)
        s->have[sig] = sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &s->act[sig]) == 0;
}

static const void *handler_of(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) ? (const void *)a->sa_sigaction : (const void *)a->sa_handler;
}

void ofi_sig_restore(const ofi_sig_saved_t *s, const char *what)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (!s->have[sig] || sigaction(sig, NULL, &now) != 0)
            continue;
        const struct sigaction *was = &s->act[sig];
        if (handler_of(&now) == handler_of(was) &&
            (now.sa_flags & SA_SIGINFO) == (was->sa_flags & SA_SIGINFO))
            continue;
        Dl_info di;
        const char *by = dladdr(handler_of(&now), &di) && di.dli_fname ? di.dli_fname : "?";
        if (sigaction(sig, was, NULL) == 0)
            wh_info("xfer", "signal handler restored sig=SIG%s changed_by='%s' during='%s'",
                    sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", by, what);
    }
}

static void load(void)
{
    ofi_sig_saved_t saved;
    ofi_sig_save(&saved);
    void *h = dlopen(OFI_DL_SONAME, RTLD_NOW | RTLD_LOCAL);
    ofi_sig_restore(&saved, "loading " OFI_DL_SONAME);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_fi.why, sizeof g_fi.why,
                 "cannot load " OFI_DL_SONAME " (%s): install libfabric (Debian: libfabric1) "
                 "or use HTTP only",
                 e ? e : "?");
        wh_warn("xfer", "libfabric not loaded err='%s'", e ? e : "?");
        return;
    }
    /* POSIX dlsym returns void *; a function pointer is read through it (the usual idiom). */
    *(void **)&g_fi.getinfo = dlsym(h, "fi_getinfo");
    *(void **)&g_fi.freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&g_fi.dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&g_fi.fabric = dlsym(h, "fi_fabric");
    *(void **)&g_fi.version = dlsym(h, "fi_version");
    *(void **)&g_fi.strerror = dlsym(h, "fi_strerror");
    if (!g_fi.getinfo || !g_fi.freeinfo || !g_fi.dupinfo || !g_fi.fabric || !g_fi.version ||
        !g_fi.strerror) {
        snprintf(g_fi.why, sizeof g_fi.why,
                 OFI_DL_SONAME " lacks a function xfer calls (fi_getinfo, fi_fabric, ...)");
        wh_warn("xfer", "libfabric unusable err='%s'", g_fi.why);
        return; /* h stays open: unloading a library whose constructors ran is not safe */
    }
    g_fi.ok = true;
}

static bool loaded(void)
{
    pthread_once(&g_once, load);
    return g_fi.ok;
}

int ofi_dl_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info)
{
    if (!loaded())
        return -FI_ENOSYS;
    ofi_sig_saved_t saved;
    ofi_sig_save(&saved);
    int rc = g_fi.getinfo(version, node, service, flags, hints, info);
    ofi_sig_restore(&saved, "fi_getinfo");
    return rc;
}

void ofi_dl_freeinfo(struct fi_info *info)
{
    if (info && loaded())
        g_fi.freeinfo(info);
}

struct fi_info *ofi_dl_dupinfo(const struct fi_info *info)
{
    return loaded() ? g_fi.dupinfo(info) : NULL;
}

int ofi_dl_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    if (!loaded())
        return -FI_ENOSYS;
    ofi_sig_saved_t saved;
    ofi_sig_save(&saved);
    int rc = g_fi.fabric(attr, fabric, context);
    ofi_sig_restore(&saved, "fi_fabric");
    return rc;
}

uint32_t ofi_dl_version(void)
{
    return loaded() ? g_fi.version() : 0;
}

const char *ofi_dl_strerror(int errnum)
{
    if (!loaded())
        return errnum == FI_ENOSYS ? g_fi.why : "libfabric is not loaded";
    return g_fi.strerror(errnum);
}
