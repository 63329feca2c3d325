/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of data-path providers: names, the family that implements each, and what
 * each can do. wharfd (--providers, metrics labels), libwharf (provider names, "auto") and the
 * xfer core all read it; nothing else lists providers. */
#include "xfer/xfer.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern const struct xfer_ops xfer_ofi_ops;
extern const struct xfer_ops xfer_cma_ops;
extern const struct xfer_ops xfer_cuda_ops;

/* Preference order: shared memory first (no copy through a NIC), then the network ones. */
static const xfer_provider_t g_providers[] = {
    {"ofi+shm", "shm", "shm", "ofi", "cma",
     XFER_CAP_HOST_LOCAL | XFER_CAP_BOUND_PEER | XFER_CAP_TARGET_PROGRESS | XFER_CAP_AUTO},
    {"ofi+tcp", "tcp", "tcp;ofi_rxm", "ofi", NULL,
     XFER_CAP_NET_ADDR | XFER_CAP_TARGET_PROGRESS | XFER_CAP_AUTO},
    {"ofi+verbs", "verbs", "verbs;ofi_rxm", "ofi", NULL,
     XFER_CAP_NET_ADDR | XFER_CAP_TARGET_PROGRESS | XFER_CAP_PINS_MEMORY},
    {"ofi+efa", "efa", "efa", "ofi", NULL,
     XFER_CAP_NET_ADDR | XFER_CAP_TARGET_PROGRESS | XFER_CAP_PINS_MEMORY},
    {"ofi+cxi", "cxi", "cxi", "ofi", NULL,
     XFER_CAP_NET_ADDR | XFER_CAP_TARGET_PROGRESS | XFER_CAP_PINS_MEMORY},
    /* GPU memory on this host: the server opens the client's CUDA IPC handle and copies
     * itself; never "auto" (a client picks it by registering device memory). */
    {"cuda+ipc", "cuda", "cuda", "cuda", NULL,
     XFER_CAP_HOST_LOCAL | XFER_CAP_PEER_PID | XFER_CAP_DEVICE_MEM},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

#define XFER_NPROV (sizeof g_providers / sizeof g_providers[0] - 1)

static const char *g_known[XFER_NPROV + 1]; /* the names of g_providers, filled once */
static pthread_once_t g_known_once = PTHREAD_ONCE_INIT;

static void xfer_known_fill(void)
{
    for (size_t i = 0; i < XFER_NPROV; i++)
        g_known[i] = g_providers[i].name;
    g_known[XFER_NPROV] = NULL;
}

/* Families: every ops table this build has. */
static const struct xfer_ops *const g_families[] = {&xfer_ofi_ops, &xfer_cma_ops, &xfer_cuda_ops};

const xfer_provider_t *xfer_providers(void)
{
    return g_providers;
}

static bool xfer_name_is(const char *name, const char *s, size_t n)
{
    return name && strlen(name) == n && strncmp(name, s, n) == 0;
}

const xfer_provider_t *xfer_provider_find(const char *s, size_t n)
{
    if (!s)
        return NULL;
    for (const xfer_provider_t *p = g_providers; p->name; p++)
        if (xfer_name_is(p->name, s, n) || xfer_name_is(p->short_name, s, n) ||
            xfer_name_is(p->fabric, s, n))
            return p;
    return NULL;
}

const xfer_provider_t *xfer_provider_by_fabric(const char *fabric)
{
    if (!fabric)
        return NULL;
    for (const xfer_provider_t *p = g_providers; p->name; p++)
        if (strcmp(p->fabric, fabric) == 0)
            return p;
    return NULL;
}

const char *xfer_provider_list(char *out, size_t outlen, xfer_name_kind_t kind)
{
    size_t off = 0;
    if (!out || !outlen)
        return out;
    out[0] = '\0';
    for (const xfer_provider_t *p = g_providers; p->name && off < outlen; p++) {
        int n = snprintf(out + off, outlen - off, "%s%s", off ? ", " : "",
                         kind == XFER_NAME_SHORT    ? p->short_name
                         : kind == XFER_NAME_FABRIC ? p->fabric
                                                    : p->name);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    return out;
}

const struct xfer_ops *xfer_family(const char *family)
{
    if (!family)
        return NULL;
    for (size_t i = 0; i < sizeof g_families / sizeof g_families[0]; i++)
        if (strcmp(g_families[i]->family, family) == 0)
            return g_families[i];
    return NULL;
}

const char *xfer_fabric_name(const char *wharf_name)
{
    for (const xfer_provider_t *p = g_providers; wharf_name && p->name; p++)
        if (strcmp(p->name, wharf_name) == 0)
            return p->fabric;
    return NULL;
}

const char *xfer_wharf_name(const char *fabric_name)
{
    const xfer_provider_t *p = xfer_provider_by_fabric(fabric_name);
    return p ? p->name : NULL;
}

const char *const *xfer_known_names(void)
{
    pthread_once(&g_known_once, xfer_known_fill);
    return g_known;
}
