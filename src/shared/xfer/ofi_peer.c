/* SPDX-License-Identifier: Apache-2.0 */
/* ofi family, the server's peers: a hash map from fabric address to AV entry, bounded by
 * max_peers with LRU eviction (fi_av_remove), and the check that a network token's endpoint
 * is on the HTTP requester's host, so a request cannot aim the server at a third machine. */
#include "xfer/ofi.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static uint64_t ofi_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void ofi_lru_unlink(ofi_peer_t *p)
{
    p->lprev->lnext = p->lnext;
    p->lnext->lprev = p->lprev;
}

static void ofi_lru_push(ofi_xfer_t *o, ofi_peer_t *p)
{
    p->lnext = o->lru.lnext;
    p->lprev = &o->lru;
    o->lru.lnext->lprev = p;
    o->lru.lnext = p;
}

/* Removes p from the map and the AV. Caller holds o->lock; p->refs == 0. */
static void ofi_peer_drop(ofi_xfer_t *o, ofi_peer_t *p)
{
    ofi_peer_t **pp = &o->buckets[p->hash & (o->nbuckets - 1)];
    while (*pp && *pp != p)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = p->hnext;
    ofi_lru_unlink(p);
    if (o->av)
        fi_av_remove(o->av, &p->fi_addr, 1, 0);
    o->npeers--;
    free(p);
}

/* Finds or inserts the peer; takes a reference. Caller holds o->lock. */
wh_status_t ofi_peer_get(ofi_xfer_t *o, const uint8_t *name, size_t len, ofi_peer_t **out,
                         char *err, size_t errlen)
{
    uint64_t h = ofi_hash(name, len);
    for (ofi_peer_t *p = o->buckets[h & (o->nbuckets - 1)]; p; p = p->hnext) {
        if (p->hash == h && p->name_len == len && memcmp(p->name, name, len) == 0 && !p->bad) {
            p->refs++;
            ofi_lru_unlink(p);
            ofi_lru_push(o, p);
            *out = p;
            return WH_OK;
        }
    }
    if (o->npeers >= o->max_peers) {
        ofi_peer_t *victim = NULL;
        for (ofi_peer_t *p = o->lru.lprev; p != &o->lru; p = p->lprev)
            if (p->refs == 0) {
                victim = p;
                break;
            }
        if (!victim) {
            return wh_errf(WH_ERR_BUSY, err, errlen,
                           "endpoint cache full: %u peers, all with transfers in flight; retry "
                           "later or raise max_peers",
                           o->max_peers);
        }
        wh_debug("xfer", "evicting peer provider=%s", o->base._name);
        ofi_peer_drop(o, victim);
    }
    ofi_peer_t *p = calloc(1, sizeof *p);
    if (!p)
        return WH_ERR_NOMEM;
    memcpy(p->name, name, len);
    p->name_len = len;
    p->hash = h;
    int rc = fi_av_insert(o->av, name, 1, &p->fi_addr, 0, NULL);
    if (rc != 1) {
        free(p);
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': libfabric %s cannot use this address (fi_av_insert: "
                       "%s)",
                       o->base._fabric, rc < 0 ? fi_strerror(-rc) : "not inserted");
    }
    p->refs = 1;
    p->hnext = o->buckets[h & (o->nbuckets - 1)];
    o->buckets[h & (o->nbuckets - 1)] = p;
    ofi_lru_push(o, p);
    o->npeers++;
    *out = p;
    return WH_OK;
}

void ofi_peer_put(ofi_xfer_t *o, ofi_peer_t *p)
{
    if (p && --p->refs == 0 && p->bad)
        ofi_peer_drop(o, p);
}

/* Close: every peer. */
void ofi_peers_free(ofi_xfer_t *o)
{
    for (unsigned i = 0; o->buckets && i < o->nbuckets; i++) {
        ofi_peer_t *p = o->buckets[i];
        while (p) {
            ofi_peer_t *n = p->hnext;
            free(p);
            p = n;
        }
    }
    free(o->buckets);
    o->buckets = NULL;
}

/* ---- network peers: the token must name the requester's host ---------------------------- */

/* Is numeric address a (from inet_ntop) one of this host's interface addresses? */
static bool ofi_host_local(const char *a)
{
    struct ifaddrs *ifs = NULL;
    bool found = false;
    if (getifaddrs(&ifs) != 0)
        return false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        char buf[INET6_ADDRSTRLEN];
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, sizeof buf);
        else if (i->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, buf, sizeof buf);
        else
            continue;
        found = strcmp(buf, a) == 0;
    }
    freeifaddrs(ifs);
    return found;
}

wh_status_t ofi_check_host(ofi_xfer_t *o, const xfer_token_t *t, const char *host, char *err,
                           size_t errlen)
{
    char want[INET6_ADDRSTRLEN + 8], got[INET6_ADDRSTRLEN];
    /* host is "1.2.3.4", "1.2.3.4:port", "[::1]:port" or "::1". */
    snprintf(want, sizeof want, "%s", host);
    char *p = want;
    if (*p == '[') {
        p++;
        char *e = strchr(p, ']');
        if (e)
            *e = '\0';
    } else if (strchr(p, ':') == strrchr(p, ':') && strchr(p, ':')) {
        *strchr(p, ':') = '\0';
    }
    const struct sockaddr *sa = (const struct sockaddr *)t->ep_name;
    if (t->ep_name_len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)t->ep_name)->sin_addr, got, sizeof got);
    } else if (t->ep_name_len >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)t->ep_name)->sin6_addr, got, sizeof got);
    } else {
        return WH_OK; /* not an IP address (verbs GIDs, efa, cxi): the fabric binds it */
    }
    /* A loopback HTTP peer is on this host: it may name any address of this host. */
    bool loop = strncmp(p, "127.", 4) == 0 || strcmp(p, "::1") == 0;
    if (strcmp(got, p) == 0 ||
        (loop && (strncmp(got, "127.", 4) == 0 || !strcmp(got, "::1") || ofi_host_local(got))))
        return WH_OK;
    return wh_errf(WH_ERR_AUTH, err, errlen,
                   "token field 'ep-name': endpoint address %s is not the requester's address %s",
                   got, p);
}
