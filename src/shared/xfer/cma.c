/* SPDX-License-Identifier: Apache-2.0 */
/* The cma family of xfer: wharfd's own cross-memory copy (process_vm_writev/readv) into the
 * process the kernel named for the HTTP connection (SO_PEERCRED), serving shm tokens of bound
 * peers. Server role only; clients keep using ofi+shm, whose endpoint name goes into the token.
 *
 * Why not libfabric's shm initiator: in libfabric 1.17 smr_rma_fast() calls
 * process_vm_writev(peer_smr->pid, ...) with the pid read from the peer's shared-memory
 * region on every op, under a spinlock that also lives in that region. The peer can rewrite
 * both at any time, so a one-time check of the pid is racy (it can be flipped to a victim's pid
 * after the check) and the spinlock lets a peer hang a server thread. Here the copy goes to
 * the pid the kernel reported, bounds checked against the token by the xfer core. The token's
 * shm endpoint is still checked to belong to that pid (1.17 region layout, verified against
 * fi_version()), so a token naming another process's endpoint is refused up front.
 *
 * Posts are synchronous and may come from several threads at once (disjoint ranges), so one
 * request can use several cores; nothing is ever in flight after a post returns, so a batch
 * always ends idle. */
#include "xfer/ofi_dl.h"
#include "xfer/xfer.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <rdma/fabric.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct cma_xfer {
    struct xfer base; /* first */
    uint64_t chunk;   /* bytes per process_vm_* call */
} cma_xfer_t;

typedef struct cma_batch {
    struct xfer_batch base; /* first */
    pid_t pid;
    uid_t uid;      /* the requester's, (uid_t)-1: not bound to one */
    uint64_t start; /* the process's start time (its identity with pid) */
    /* /proc/PID/mem opened at begin, before the full check: it holds the address space the
     * checked program ran in. A read of one byte of it (at probe, in the token's region)
     * fails once that address space is gone, that is after any exec (even one that execs
     * back to an unprivileged program) or exit of the process. -1: not available (wharfd
     * may not open it), and every post runs the full check instead. */
    int memfd;
    uint64_t probe;
} cma_batch_t;

static wh_status_t cma_open(const xfer_config_t *cfg, const xfer_provider_t *prov, xfer_t **out,
                            char *err, size_t errlen)
{
    if (cfg->role != XFER_ROLE_SERVER) {
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen,
                       "the cma transport only serves (server role); a client of %s "
                       "opens %s",
                       prov->short_name, prov->name);
    }
    cma_xfer_t *o = calloc(1, sizeof *o);
    if (!o)
        return WH_ERR_NOMEM;
    o->chunk = cfg->chunk_size;
    *out = &o->base;
    return WH_OK;
}

static void cma_close(xfer_t *x)
{
    free(x);
}

static void cma_forget_after_fork(xfer_t *x)
{
    (void)x; /* no provider state: nothing to leave alone */
}

/* Local memory needs no registration for a cross-memory copy; the handle only carries the
 * range so the core can bounds-check posts. */
static wh_status_t cma_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out)
{
    xfer_mr_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    m->_x = x;
    m->_addr = addr;
    m->_len = len;
    *out = m;
    return WH_OK;
}

static void cma_mr_dereg(xfer_mr_t *mr)
{
    free(mr);
}

/* ---- the process must still be the requester ---------------------------------------------- */

uint64_t xfer_proc_start_time(pid_t pid)
{
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* comm (field 2) may hold spaces and parentheses: fields count from the last ')'. */
    char *s = strrchr(buf, ')');
    if (!s)
        return 0;
    s++;
    for (int field = 3; field < 22; field++) {
        s = strchr(s + 1, ' ');
        if (!s)
            return 0;
    }
    return strtoull(s + 1, NULL, 10);
}

/* The kernel's SO_PEERCRED names a pid and its uid at connect time. Between then and a copy
 * the process can exec a setuid-root (or setgid, or file-capability) program and keep both
 * its pid and its real uid: wharfd (root) would then read and write the memory of a
 * privileged program for an unprivileged user. So when a batch begins (and around each copy
 * where the batch holds no /proc/PID/mem, cma_batch_same): the same process (start time),
 * every uid (real, effective, saved, filesystem) still the requester's, and still dumpable
 * (the kernel makes /proc/PID root's when a privileged exec made it non-dumpable). */
static wh_status_t cma_peer_same(pid_t pid, uid_t uid, uint64_t start, char *err, size_t errlen)
{
    if (start && xfer_proc_start_time(pid) != start)
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "requesting process %d is gone (its pid now "
                       "names another process)",
                       (int)pid);
    if (uid == (uid_t)-1)
        return WH_OK;
    char sp[64], buf[4096];
    snprintf(sp, sizeof sp, "/proc/%d/status", (int)pid);
    int fd = open(sp, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    unsigned ids[4];
    const char *u = n > 0 ? (buf[n] = '\0', strstr(buf, "\nUid:")) : NULL;
    if (!u || sscanf(u, "\nUid: %u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]) != 4)
        return wh_errf(WH_ERR_AUTH, err, errlen, "requesting process %d is gone", (int)pid);
    for (int i = 0; i < 4; i++)
        if (ids[i] != (unsigned)uid)
            return wh_errf(WH_ERR_AUTH, err, errlen,
                           "requesting process %d changed credentials since it connected "
                           "(uids %u/%u/%u/%u, connected as %u): no transfer into a process "
                           "that exec'd a privileged program",
                           (int)pid, ids[0], ids[1], ids[2], ids[3], (unsigned)uid);
    struct stat stt;
    snprintf(sp, sizeof sp, "/proc/%d", (int)pid);
    if (stat(sp, &stt) != 0 || stt.st_uid != uid)
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "requesting process %d is no longer dumpable as uid %u (it exec'd a "
                       "privileged program)",
                       (int)pid, (unsigned)uid);
    if (start && xfer_proc_start_time(pid) != start) /* reused while we looked */
        return wh_errf(WH_ERR_AUTH, err, errlen, "requesting process %d is gone", (int)pid);
    return WH_OK;
}

/* The check around each post: that the address space the batch began with still runs (one
 * byte read through the /proc/PID/mem the batch holds: a few microseconds), or, without it, the
 * full check above (six /proc reads: 44% of the server's samples on the VM's PUT profile when
 * run around every 256 KiB piece). With the file, any exec or exit since the batch began fails
 * it (the pid, or a process that reused it, runs another address space); without it, one that
 * changed the process or its uids does. */
static wh_status_t cma_batch_same(const cma_batch_t *b, char *err, size_t errlen)
{
    if (b->memfd < 0)
        return cma_peer_same(b->pid, b->uid, b->start, err, errlen);
    unsigned char c;
    ssize_t n = pread(b->memfd, &c, 1, (off_t)b->probe);
    if (n == 1)
        return WH_OK;
    /* The kernel answers 0 once the address space is gone, and an error (EIO) where it still
     * runs but the probe's byte is not mapped (the client unmapped its buffer): then the full
     * check decides, and the copy reports what is not mapped. */
    if (n < 0)
        return cma_peer_same(b->pid, b->uid, b->start, err, errlen);
    return wh_errf(WH_ERR_AUTH, err, errlen,
                   "requesting process %d is gone or exec'd another program since the "
                   "transfer began",
                   (int)b->pid);
}

/* ---- the token must name the requester's own shm endpoint -------------------------------- */

/* The 1.17 shm region header: version byte 4, then resv, flags (u16), pid (int) at offset 4.
 * Checked against the running libfabric's version; another version skips this consistency
 * check (the data path stays bound to the kernel's pid either way). */
#define SMR117_VERSION 4
#define SMR117_PID_OFF 4

static wh_status_t cma_check_owner(const xfer_token_t *t, pid_t pid, uid_t uid, char *err,
                                   size_t errlen)
{
    char name[XFER_TOKEN_MAX_EP_NAME + 1], path[XFER_TOKEN_MAX_EP_NAME + 16];
    size_t n = t->ep_name_len;
    memcpy(name, t->ep_name, n);
    name[n] = '\0';
    if (n > 0 && strlen(name) != n && strlen(name) + 1 != n) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': not an shm endpoint name");
    }
    const char *s = strstr(name, "://");
    s = s ? s + 3 : name;
    if (!*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': not an shm endpoint name");
    }
    for (const char *c = s; *c; c++)
        if (*c < 0x21 || *c > 0x7e) {
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "token field 'ep-name': not an shm endpoint name");
        }

    if (fi_version() != FI_VERSION(1, 17)) {
        wh_debug("xfer", "shm region layout not verified for this libfabric, skipping "
                         "endpoint owner check");
        return WH_OK;
    }
    snprintf(path, sizeof path, "/dev/shm/%s", s);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': shm endpoint '%.64s' does not exist on this host",
                       s);
    }
    struct stat stt;
    unsigned char hdr[8];
    wh_status_t st = WH_OK;
    if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode) ||
        pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
        wh_errf(WH_OK, err, errlen, "token field 'ep-name': shm endpoint '%.64s' is not readable",
                s);
        st = WH_ERR_INVALID;
    } else if (uid != (uid_t)-1 && stt.st_uid != uid) {
        wh_errf(WH_OK, err, errlen,
                "token's shm endpoint belongs to uid %u, but the request came from uid %u",
                (unsigned)stt.st_uid, (unsigned)uid);
        st = WH_ERR_AUTH;
    } else if (hdr[0] != SMR117_VERSION) {
        wh_debug("xfer", "unknown shm region version, owner check skipped version=%u", hdr[0]);
    } else {
        int rpid;
        memcpy(&rpid, hdr + SMR117_PID_OFF, sizeof rpid);
        if (rpid != (int)pid) {
            wh_errf(WH_OK, err, errlen,
                    "token names the shm endpoint of process %d, but the request came from "
                    "process %d; a client may only name its own memory",
                    rpid, (int)pid);
            st = WH_ERR_AUTH;
        }
    }
    close(fd);
    return st;
}

/* The kernel-named pid, chunked, synchronous. mr is not needed: the copy is the kernel's. */
static wh_status_t cma_batch_post(xfer_batch_t *xb, xfer_op_t op, xfer_mr_t *mr, void *local,
                                  size_t len, uint64_t roff, unsigned tag)
{
    cma_batch_t *b = (cma_batch_t *)xb;
    const cma_xfer_t *o = (const cma_xfer_t *)xb->_x;
    uint64_t raddr = xb->_rbase + roff;
    size_t done = 0;
    char why[sizeof b->base._err];
    /* Before a write, so that no byte lands in another program; a read needs only the probe
     * after it (a read changes nothing, and its bytes are not used when that fails). */
    wh_status_t pst =
        op == XFER_OP_WRITE || b->memfd < 0 ? cma_batch_same(b, why, sizeof why) : WH_OK;
    while (pst == WH_OK && done < len) {
        size_t n = WH_MIN(len - done, o->chunk);
        struct iovec l = {(char *)local + done, n};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), n};
        ssize_t got = op == XFER_OP_WRITE ? process_vm_writev(b->pid, &l, 1, &r, 1, 0)
                                          : process_vm_readv(b->pid, &l, 1, &r, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int e = got < 0 ? errno : EFAULT;
            /* The program changed under the copy: that is the failure to report. */
            if (b->memfd >= 0 && (pst = cma_batch_same(b, why, sizeof why)) != WH_OK)
                break;
            /* Direct batches take posts from several threads: the first failure reports. */
            wh_status_t fail = e == EPERM ? WH_ERR_AUTH : WH_ERR_TRANSPORT;
            const char *what = e == ESRCH    ? "the client process is gone"
                               : e == EFAULT ? "the token's region is not mapped in the client"
                               : e == EPERM  ? "no permission to access the client process"
                                             : "cross-memory copy failed";
            wh_status_t cur = xfer_batch_fail(
                &b->base, fail, "shm %s failed at offset 0x%llx: %s (%s)",
                op == XFER_OP_WRITE ? "write" : "read",
                (unsigned long long)(raddr - b->base._rbase + done), what, strerror(e));
            if (cur == fail)
                wh_warn("xfer", "cma transfer failed pid=%d err='%s'", (int)b->pid, strerror(e));
            return cur;
        }
        done += (size_t)got;
        __atomic_fetch_add(&b->base._bytes_done, (uint64_t)got, __ATOMIC_RELAXED);
    }
    /* After the copy too: an exec during it fails the batch, so bytes read from a process
     * that became privileged are never used (and a write is reported). */
    if (pst == WH_OK)
        pst = cma_batch_same(b, why, sizeof why);
    if (pst != WH_OK) {
        wh_status_t cur = xfer_batch_fail(&b->base, pst, "%s", why);
        if (cur == pst)
            wh_warn("xfer", "cma transfer refused pid=%d: %s", (int)b->pid, why);
        return cur;
    }
    return WH_OK;
}

/* The crc fused into the copy: each 1 MiB block is checksummed, then copied while it is still
 * in the cache, so the source is read from memory once instead of twice. */
#define CMA_CRC_BLOCK (1u << 20)

static wh_status_t cma_batch_post_crc(xfer_batch_t *xb, const void *local, size_t len,
                                      uint64_t roff, uint64_t *crc_out)
{
    uint64_t crc = 0;
    for (size_t k = 0; k < len; k += CMA_CRC_BLOCK) {
        size_t m = WH_MIN(len - k, (size_t)CMA_CRC_BLOCK);
        const uint8_t *p = (const uint8_t *)local + k;
        crc = wh_crc64nvme(crc, p, m);
        wh_status_t st =
            cma_batch_post(xb, XFER_OP_WRITE, NULL, (void *)(uintptr_t)p, m, roff + k, 0);
        if (st != WH_OK)
            return st;
    }
    *crc_out = crc;
    return WH_OK;
}

static wh_status_t cma_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out,
                                   char *err, size_t errlen)
{
    if (tgt->bind_pid <= 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "%s serves only peers the kernel identified",
                       x->_name);
    }
    uint64_t start = tgt->bind_start ? tgt->bind_start : xfer_proc_start_time(tgt->bind_pid);
    /* Opened before the full check, so that the address space it holds is the one of the
     * program that passed it: an exec in between leaves it holding a dead one (probe below). */
    char mp[64];
    snprintf(mp, sizeof mp, "/proc/%d/mem", (int)tgt->bind_pid);
    int memfd = open(mp, O_RDONLY | O_CLOEXEC);
    wh_status_t st = cma_peer_same(tgt->bind_pid, tgt->bind_uid, start, err, errlen);
    if (st == WH_OK)
        st = cma_check_owner(tgt->token, tgt->bind_pid, tgt->bind_uid, err, errlen);
    unsigned char c;
    if (st == WH_OK && memfd >= 0 && pread(memfd, &c, 1, (off_t)tgt->token->base) != 1) {
        /* Not readable this way (an exec just now, or a region the probe cannot read): every
         * post runs the full check, and the first one fails if the process exec'd. */
        close(memfd);
        memfd = -1;
    }
    cma_batch_t *b = st == WH_OK ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        if (memfd >= 0)
            close(memfd);
        return st == WH_OK ? WH_ERR_NOMEM : st;
    }
    b->pid = tgt->bind_pid;
    b->uid = tgt->bind_uid;
    b->start = start;
    b->memfd = memfd;
    b->probe = tgt->token->base;
    b->base._direct = true;
    *out = &b->base;
    return WH_OK;
}

static wh_status_t cma_batch_wait(xfer_batch_t *xb, unsigned tag)
{
    (void)tag; /* posts are synchronous: nothing to wait for */
    return xfer_batch_status(xb);
}

static wh_status_t cma_batch_end(xfer_batch_t *xb)
{
    cma_batch_t *b = (cma_batch_t *)xb;
    if (b->memfd >= 0)
        close(b->memfd);
    free(xb);
    return WH_OK;
}

/* No progress hooks, stalled or quiesce (NULL): the copies are synchronous, so nothing is
 * ever left in flight and nothing arrives after a request ends. */
const struct xfer_ops xfer_cma_ops = {
    .family = "cma",
    .open = cma_open,
    .close = cma_close,
    .forget_after_fork = cma_forget_after_fork,
    .mr_reg = cma_mr_reg,
    .mr_dereg = cma_mr_dereg,
    .batch_begin = cma_batch_begin,
    .batch_post = cma_batch_post,
    .batch_wait = cma_batch_wait,
    .batch_end = cma_batch_end,
    .batch_post_crc = cma_batch_post_crc,
};
