/* SPDX-License-Identifier: Apache-2.0 */
/* The internal token (see itoken.h): sign, parse, verify. One implementation for the storage
 * server's HTTP and RDMA paths and for the gateway. */
#include "cluster/itoken.h"
#include "base/codec.h"
#include "base/digest.h"
#include "base/util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NFIELDS 15

static const char *const g_ops[] = {NULL,   "get",  "put",  "del",  "rget",
                                    "rput", "push", "cput", "rdec", "renc"};

const char *cl_op_name(cl_op_t op)
{
    return op >= CL_OP_GET && op <= CL_OP_LAST ? g_ops[op] : "?";
}

static bool op_has_mtok(cl_op_t op)
{
    return op == CL_OP_RGET || op == CL_OP_RPUT || op == CL_OP_PUSH || op == CL_OP_CPUT ||
           op == CL_OP_RDEC || op == CL_OP_RENC;
}

static bool hexn(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* push: "CRC@ADDR" (ADDR 1..255 bytes); cput: "CRC". */
static bool copy_mtok_ok(cl_op_t op, const char *m, size_t n)
{
    if (op == CL_OP_CPUT)
        return n == 16 && hexn(m, 16);
    return n >= 18 && n <= 17 + 255 && hexn(m, 16) && m[16] == '@';
}

/* rdec: "SHA256@TOKEN", the token at least one byte. */
static bool rdec_mtok_ok(const char *m, size_t n)
{
    return n > CL_RDEC_MTOK_PREFIX && hexn(m, 64) && m[64] == '@';
}

bool cl_itoken_rdec_args(const cl_itoken_t *t, char sha_hex[65], const char **mtok)
{
    if ((t->op != CL_OP_RDEC && t->op != CL_OP_RENC) || !rdec_mtok_ok(t->mtok, strlen(t->mtok)))
        return false;
    memcpy(sha_hex, t->mtok, 64);
    sha_hex[64] = '\0';
    *mtok = t->mtok + CL_RDEC_MTOK_PREFIX;
    return true;
}

bool cl_itoken_copy_args(const cl_itoken_t *t, uint64_t *crc, char *addr, size_t addrlen)
{
    if ((t->op != CL_OP_PUSH && t->op != CL_OP_CPUT) ||
        !copy_mtok_ok(t->op, t->mtok, strlen(t->mtok)) || wh_hex_u64(t->mtok, 16, crc) != 0)
        return false;
    if (addr && addrlen)
        snprintf(addr, addrlen, "%s", t->op == CL_OP_PUSH ? t->mtok + 17 : "");
    return true;
}

bool cl_chunk_id_valid(const char *s, size_t len)
{
    if (len != CL_CHUNK_ID_LEN)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

wh_status_t cl_chunk_id_new(char out[CL_CHUNK_ID_LEN + 1])
{
    uint8_t b[CL_CHUNK_ID_LEN / 2];
    if (wh_random_bytes(b, sizeof b) != 0)
        return WH_ERR_IO;
    wh_hex_encode(b, sizeof b, out);
    return WH_OK;
}

/* A field may carry printable ASCII except '|'. */
static bool field_ok(const char *s)
{
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e || *s == '|')
            return false;
    return true;
}

static void mac_hex(const void *key, size_t klen, const char *msg, size_t n, char out[65])
{
    uint8_t mac[WH_SHA256_LEN];
    wh_hmac_sha256(key, klen, msg, n, mac);
    wh_hex_encode(mac, sizeof mac, out);
}

wh_status_t cl_itoken_sign(const void *key, size_t klen, const cl_itoken_t *t, char *out,
                           size_t outlen, char *err, size_t errlen)
{
    if (t->op < CL_OP_GET || t->op > CL_OP_LAST)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'op': unknown operation");
    if (!cl_chunk_id_valid(t->chunk, strlen(t->chunk)))
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'chunk': not 32 hex digits");
    if (!t->peer.addr[0] || !field_ok(t->peer.addr))
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'addr': empty or has '|'");
    if (t->mtok[0] && !field_ok(t->mtok))
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "itoken field 'mtok': has '|' or a non-printable byte");
    if (op_has_mtok(t->op) != (t->mtok[0] != '\0'))
        return wh_errf(
            WH_ERR_INVALID, err, errlen,
            "itoken field 'mtok': required exactly for rget, rput, push, cput, rdec and renc");
    if ((t->op == CL_OP_PUSH || t->op == CL_OP_CPUT) &&
        !copy_mtok_ok(t->op, t->mtok, strlen(t->mtok)))
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "itoken field 'mtok': a push carries CRC@ADDR, a cput CRC (16 hex)");
    if ((t->op == CL_OP_RDEC || t->op == CL_OP_RENC) && !rdec_mtok_ok(t->mtok, strlen(t->mtok)))
        return wh_errf(
            WH_ERR_INVALID, err, errlen,
            "itoken field 'mtok': an rdec or renc carries SHA256@TOKEN (64 hex, '@', the "
            "memory token)");
    if (!t->target[0] || !field_ok(t->target))
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "itoken field 'target': empty or has '|' (the storage server it is for)");
    if (t->op == CL_OP_PUT && !t->has_crc)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "itoken field 'crc': a put carries the chunk's crc64nvme");
    char nonce[17], crc[17] = "-";
    if (t->nonce[0]) {
        if (strlen(t->nonce) != 16 || !hexn(t->nonce, 16))
            return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'nonce': not 16 hex digits");
        memcpy(nonce, t->nonce, 17);
    } else {
        uint8_t rnd[8];
        if (wh_random_bytes(rnd, sizeof rnd) != 0)
            return wh_errf(WH_ERR_IO, err, errlen, "itoken field 'nonce': no random bytes");
        wh_hex_encode(rnd, sizeof rnd, nonce);
    }
    if (t->has_crc)
        snprintf(crc, sizeof crc, "%016" PRIx64, t->crc);
    int n = snprintf(out, outlen,
                     "wit2|%s|%s|%" PRIx64 "|%" PRIx64 "|%" PRId64 "|%s|%s|%ld|%lu|%s|%s|%s|%s|",
                     g_ops[t->op], t->chunk, t->off, t->len, t->expires,
                     t->peer.is_unix ? "unix" : "tcp", t->peer.addr, (long)t->peer.pid,
                     (unsigned long)t->peer.uid, t->mtok[0] ? t->mtok : "-", crc, t->target, nonce);
    if (n < 0 || (size_t)n + 65 > outlen)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken does not fit in %zu bytes", outlen);
    mac_hex(key, klen, out, (size_t)n - 1, out + n); /* the MAC covers up to the last '|' */
    return WH_OK;
}

static int dec_u64(const char *s, size_t n, uint64_t *v)
{
    return n == 0 || n > 20 ? -1 : wh_parse_u64(s, n, v);
}

wh_status_t cl_itoken_parse(const char *s, size_t len, cl_itoken_t *out, size_t *mac_at, char *err,
                            size_t errlen)
{
    static const char *const names[NFIELDS] = {"version", "op",   "chunk",  "off",   "len",
                                               "exp",     "peer", "addr",   "pid",   "uid",
                                               "mtok",    "crc",  "target", "nonce", "mac"};
    const char *f[NFIELDS];
    size_t fl[NFIELDS], nf = 0, start = 0;
    if (len > CL_ITOKEN_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken longer than %d bytes", CL_ITOKEN_MAX);
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '|')
            continue;
        if (nf == NFIELDS)
            return wh_errf(WH_ERR_INVALID, err, errlen, "itoken has more than %d fields", NFIELDS);
        f[nf] = s + start;
        fl[nf++] = i - start;
        start = i + 1;
    }
    if (nf != NFIELDS)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken has %zu fields, want %d", nf, NFIELDS);
    for (size_t i = 0; i < NFIELDS; i++)
        for (size_t j = 0; j < fl[i]; j++)
            if (f[i][j] < 0x21 || f[i][j] > 0x7e)
                return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field '%s': non-printable byte",
                               names[i]);
    cl_itoken_t t;
    memset(&t, 0, sizeof t);
    if (fl[0] != 4 || memcmp(f[0], "wit2", 4) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'version': not wit2");
    for (int op = CL_OP_GET; op <= CL_OP_LAST; op++)
        if (strlen(g_ops[op]) == fl[1] && memcmp(g_ops[op], f[1], fl[1]) == 0)
            t.op = (cl_op_t)op;
    if (!t.op)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'op': unknown operation");
    if (!cl_chunk_id_valid(f[2], fl[2]))
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'chunk': not 32 hex digits");
    memcpy(t.chunk, f[2], CL_CHUNK_ID_LEN);
    if (wh_hex_u64(f[3], fl[3], &t.off) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'off': not hex");
    if (wh_hex_u64(f[4], fl[4], &t.len) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'len': not hex");
    if (t.off + t.len < t.off)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken fields 'off'+'len' overflow");
    uint64_t v;
    if (dec_u64(f[5], fl[5], &v) != 0 || v > INT64_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'exp': not a Unix time");
    t.expires = (int64_t)v;
    if (fl[6] == 4 && memcmp(f[6], "unix", 4) == 0)
        t.peer.is_unix = true;
    else if (!(fl[6] == 3 && memcmp(f[6], "tcp", 3) == 0))
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'peer': not tcp or unix");
    if (fl[7] == 0 || fl[7] >= sizeof t.peer.addr)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'addr': empty or too long");
    memcpy(t.peer.addr, f[7], fl[7]);
    if (dec_u64(f[8], fl[8], &v) != 0 || v > INT32_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'pid': not a pid");
    t.peer.pid = (pid_t)v;
    if (dec_u64(f[9], fl[9], &v) != 0 || v > UINT32_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'uid': not a uid");
    t.peer.uid = (uid_t)v;
    if (fl[10] == 1 && f[10][0] == '-') {
        if (op_has_mtok(t.op))
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "itoken field 'mtok': %s needs one (RDMA: a memory token; push, cput: "
                           "a crc; rdec, renc: the body's SHA-256 and a memory token)",
                           g_ops[t.op]);
    } else {
        if (!op_has_mtok(t.op))
            return wh_errf(
                WH_ERR_INVALID, err, errlen,
                "itoken field 'mtok': only rget, rput, push, cput, rdec and renc carry one");
        if (fl[10] == 0 || fl[10] >= sizeof t.mtok)
            return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'mtok': empty or too long");
        if ((t.op == CL_OP_PUSH || t.op == CL_OP_CPUT) && !copy_mtok_ok(t.op, f[10], fl[10]))
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "itoken field 'mtok': a push carries CRC@ADDR, a cput CRC (16 hex)");
        if ((t.op == CL_OP_RDEC || t.op == CL_OP_RENC) && !rdec_mtok_ok(f[10], fl[10]))
            return wh_errf(
                WH_ERR_INVALID, err, errlen,
                "itoken field 'mtok': an rdec or renc carries SHA256@TOKEN (64 hex, '@', the "
                "memory token)");
        memcpy(t.mtok, f[10], fl[10]);
    }
    if (fl[11] == 16 && hexn(f[11], 16)) {
        t.has_crc = wh_hex_u64(f[11], 16, &t.crc) == 0;
    } else if (!(fl[11] == 1 && f[11][0] == '-')) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'crc': not 16 hex digits or -");
    }
    if (t.op == CL_OP_PUT && !t.has_crc)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "itoken field 'crc': a put carries the chunk's crc64nvme");
    if (fl[12] == 0 || fl[12] >= sizeof t.target)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'target': empty or too long");
    memcpy(t.target, f[12], fl[12]);
    if (fl[13] != 16 || !hexn(f[13], 16))
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'nonce': not 16 hex digits");
    memcpy(t.nonce, f[13], 16);
    if (fl[14] != 64 || wh_hex_decode(f[14], 64, (uint8_t[32]){0}, 32) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "itoken field 'mac': not 64 hex digits");
    *mac_at = (size_t)(f[14] - s);
    *out = t;
    return WH_OK;
}

wh_status_t cl_itoken_verify(const void *key, size_t klen, const char *s, size_t len, time_t now,
                             cl_itoken_t *out, char *err, size_t errlen)
{
    cl_itoken_t t;
    size_t mac_at = 0;
    wh_status_t st = cl_itoken_parse(s, len, &t, &mac_at, err, errlen);
    if (st != WH_OK)
        return st;
    char want[65];
    mac_hex(key, klen, s, mac_at - 1, want);
    unsigned diff = 0;
    for (size_t i = 0; i < 64; i++) /* constant time; the received MAC may be upper case */
        diff |= (unsigned)(want[i] ^ (char)(s[mac_at + i] | 0x20));
    if (diff)
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "itoken signature does not match (is WHARF_CLUSTER_SECRET the same on "
                       "gateway and storage server?)");
    if (t.expires < (int64_t)now)
        return wh_errf(WH_ERR_AUTH, err, errlen, "itoken expired %" PRId64 " s ago",
                       (int64_t)now - t.expires);
    if (t.expires > (int64_t)now + CL_ITOKEN_MAX_LIFE)
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "itoken expiry is more than %d s ahead (clock skew, or forged)",
                       CL_ITOKEN_MAX_LIFE);
    *out = t;
    return WH_OK;
}

/* ---- single use -------------------------------------------------------------------------- */

#define REPLAY_HEADS 65536u

typedef struct replay_ent {
    struct replay_ent *next;
    int64_t expires;
    uint64_t nonce;
} replay_ent_t;

struct cl_replay {
    pthread_mutex_t mu;
    size_t n, max;
    replay_ent_t *head[REPLAY_HEADS];
};

cl_replay_t *cl_replay_new(size_t max_entries)
{
    cl_replay_t *rc = calloc(1, sizeof *rc);
    if (!rc)
        return NULL;
    pthread_mutex_init(&rc->mu, NULL);
    rc->max = max_entries ? max_entries : CL_REPLAY_MAX;
    return rc;
}

void cl_replay_free(cl_replay_t *rc)
{
    if (!rc)
        return;
    for (size_t i = 0; i < REPLAY_HEADS; i++)
        for (replay_ent_t *e = rc->head[i], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    pthread_mutex_destroy(&rc->mu);
    free(rc);
}

size_t cl_replay_count(cl_replay_t *rc)
{
    pthread_mutex_lock(&rc->mu);
    size_t n = rc->n;
    pthread_mutex_unlock(&rc->mu);
    return n;
}

/* Drops the expired entries of one chain (the caller holds mu). */
static void replay_prune(cl_replay_t *rc, size_t h, int64_t now)
{
    for (replay_ent_t **pp = &rc->head[h]; *pp;) {
        if ((*pp)->expires < now) {
            replay_ent_t *d = *pp;
            *pp = d->next;
            free(d);
            rc->n--;
        } else {
            pp = &(*pp)->next;
        }
    }
}

wh_status_t cl_itoken_admit(cl_replay_t *rc, const cl_itoken_t *t, const char *self, time_t now,
                            char *err, size_t errlen)
{
    if (!self || strcmp(t->target, self) != 0)
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "itoken is for storage server %s, not this one (%s)", t->target,
                       self ? self : "?");
    uint64_t nonce = 0;
    if (wh_hex_u64(t->nonce, 16, &nonce) != 0)
        return wh_errf(WH_ERR_AUTH, err, errlen, "itoken has no nonce");
    /* the nonce is random: its low bits spread the chains */
    size_t h = (size_t)(nonce % REPLAY_HEADS);
    wh_status_t st = WH_OK;
    pthread_mutex_lock(&rc->mu);
    replay_prune(rc, h, (int64_t)now);
    for (replay_ent_t *e = rc->head[h]; e; e = e->next)
        if (e->nonce == nonce && e->expires == t->expires) {
            st = wh_errf(WH_ERR_AUTH, err, errlen,
                         "itoken was used before (a replay): each token is admitted once");
            break;
        }
    if (st == WH_OK && rc->n >= rc->max) {
        /* full: expired entries of every chain go first; still full, refuse */
        for (size_t i = 0; i < REPLAY_HEADS && rc->n >= rc->max; i++)
            replay_prune(rc, i, (int64_t)now);
        if (rc->n >= rc->max)
            st = wh_errf(WH_ERR_BUSY, err, errlen,
                         "too many unexpired internal tokens remembered (%zu): try again", rc->n);
    }
    if (st == WH_OK) {
        replay_ent_t *e = malloc(sizeof *e);
        if (!e) {
            st = wh_errf(WH_ERR_NOMEM, err, errlen, "out of memory remembering an itoken");
        } else {
            e->nonce = nonce;
            e->expires = t->expires;
            e->next = rc->head[h];
            rc->head[h] = e;
            rc->n++;
        }
    }
    pthread_mutex_unlock(&rc->mu);
    return st;
}
