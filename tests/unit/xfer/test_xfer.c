/* SPDX-License-Identifier: Apache-2.0 */
/* The xfer core (xfer.c, provider.c): the provider table and capability lookup, the defaults,
 * xfer_open's errors, and the batch logic every family goes through (bounds of the token's
 * region, tags, direct batches, the bound-peer dispatch to the cma family, byte counts, the
 * sticky failure). Runs in one process: a client-role transport packs tokens for this
 * process's own memory, and a server-role one moves bytes into it (shm bound to our own pid,
 * and tcp over loopback). */
#include "check.h"
#include "base/util.h"
#include "xfer/xfer.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_table(void)
{
    const xfer_provider_t *t = xfer_providers();
    const char *const *known = xfer_known_names();
    size_t n = 0;
    for (const xfer_provider_t *p = t; p->name; p++, n++) {
        /* Every entry is complete and names a family this build has. */
        CHECK(p->short_name && p->fabric && p->family);
        CHECK(xfer_family(p->family) != NULL);
        CHECK(strncmp(p->name, p->family, strlen(p->family)) == 0 &&
              p->name[strlen(p->family)] == '+');
        if (p->caps & XFER_CAP_BOUND_PEER)
            CHECK(p->bound_family && xfer_family(p->bound_family) != NULL);
        /* Names are unique and every kind finds the same entry. */
        CHECK(xfer_provider_find(p->name, strlen(p->name)) == p);
        CHECK(xfer_provider_find(p->short_name, strlen(p->short_name)) == p);
        CHECK(xfer_provider_find(p->fabric, strlen(p->fabric)) == p);
        CHECK(xfer_provider_by_fabric(p->fabric) == p);
        CHECK_STR(xfer_fabric_name(p->name), p->fabric);
        CHECK_STR(xfer_wharf_name(p->fabric), p->name);
        /* The known-names list is the table, in its order. */
        CHECK_STR(known[n], p->name);
    }
    CHECK(n == 6);
    CHECK(known[n] == NULL);
    CHECK_STR(t[0].name, "ofi+shm");
    CHECK_STR(t[1].name, "ofi+tcp");
    CHECK_STR(xfer_fabric_name("ofi+tcp"), "tcp;ofi_rxm");

    /* Lookups by length: a comma list is parsed in place. */
    const char *list = "tcp,shm";
    CHECK(xfer_provider_find(list, 3) == &t[1]);
    CHECK(xfer_provider_find(list + 4, 3) == &t[0]);
    CHECK(xfer_provider_find(list, 2) == NULL); /* "tc" is no name */
    CHECK(xfer_provider_find("ofi+nope", 8) == NULL);
    CHECK(xfer_provider_find(NULL, 0) == NULL);
    CHECK(xfer_provider_find("", 0) == NULL);
    CHECK(xfer_fabric_name("ofi+nope") == NULL);
    CHECK(xfer_wharf_name("nope") == NULL);
    CHECK(xfer_fabric_name(NULL) == NULL);

    char buf[128];
    CHECK_STR(xfer_provider_list(buf, sizeof buf, XFER_NAME),
              "ofi+shm, ofi+tcp, ofi+verbs, ofi+efa, ofi+cxi, cuda+ipc");
    CHECK_STR(xfer_provider_list(buf, sizeof buf, XFER_NAME_SHORT),
              "shm, tcp, verbs, efa, cxi, cuda");
    CHECK_STR(xfer_provider_list(buf, sizeof buf, XFER_NAME_FABRIC),
              "shm, tcp;ofi_rxm, verbs;ofi_rxm, efa, cxi, cuda");
    char tiny[8];
    xfer_provider_list(tiny, sizeof tiny, XFER_NAME); /* truncates, stays terminated */
    CHECK(strlen(tiny) < sizeof tiny);
    CHECK(xfer_family("ofi") != NULL && xfer_family("cma") != NULL);
    CHECK(xfer_family("cuda") != NULL);
    CHECK(xfer_family("ucx") == NULL && xfer_family(NULL) == NULL);
}

static void test_caps(void)
{
    const xfer_provider_t *shm = xfer_provider_find("shm", 3);
    const xfer_provider_t *tcp = xfer_provider_find("tcp", 3);
    const xfer_provider_t *verbs = xfer_provider_find("verbs", 5);
    CHECK(shm && tcp && verbs);
    if (!shm || !tcp || !verbs)
        return;
    CHECK(shm->caps & XFER_CAP_HOST_LOCAL);
    CHECK(shm->caps & XFER_CAP_BOUND_PEER);
    CHECK_STR(shm->bound_family, "cma");
    CHECK(!(shm->caps & XFER_CAP_NET_ADDR));
    CHECK(tcp->caps & XFER_CAP_NET_ADDR);
    CHECK(!(tcp->caps & (XFER_CAP_HOST_LOCAL | XFER_CAP_BOUND_PEER)));
    /* "auto" tries shm then tcp, nothing else. */
    const char *autos[4];
    size_t na = 0;
    for (const xfer_provider_t *p = xfer_providers(); p->name; p++)
        if ((p->caps & XFER_CAP_AUTO) && na < 4)
            autos[na++] = p->name;
    CHECK(na == 2);
    CHECK_STR(autos[0], "ofi+shm");
    CHECK_STR(autos[1], "ofi+tcp");
    CHECK(!(verbs->caps & XFER_CAP_AUTO));
    /* Only the hardware providers pin registered memory (the pool is sized by memlock). */
    CHECK(verbs->caps & XFER_CAP_PINS_MEMORY);
    CHECK(!(shm->caps & XFER_CAP_PINS_MEMORY) && !(tcp->caps & XFER_CAP_PINS_MEMORY));
    /* Every fabric provider needs target progress; GPU memory (the server copies) does not,
     * is never tried by "auto", and is served only to kernel-identified peers. */
    for (const xfer_provider_t *p = xfer_providers(); p->name; p++)
        CHECK(!!(p->caps & XFER_CAP_TARGET_PROGRESS) == (strcmp(p->family, "ofi") == 0));
    const xfer_provider_t *cuda = xfer_provider_find("cuda", 4);
    CHECK(cuda && (cuda->caps & XFER_CAP_PEER_PID) && (cuda->caps & XFER_CAP_DEVICE_MEM) &&
          !(cuda->caps & XFER_CAP_AUTO));
}

static void test_defaults_and_open_errors(void)
{
    xfer_config_t c;
    memset(&c, 0x5a, sizeof c);
    xfer_config_init(&c);
    CHECK_EQ_U64(c.chunk_size, XFER_DEFAULT_CHUNK);
    CHECK_EQ_U64(c.window, XFER_DEFAULT_WINDOW);
    CHECK_EQ_U64(c.max_peers, XFER_DEFAULT_MAX_PEERS);
    CHECK_EQ_U64(c.timeout_ms, XFER_DEFAULT_TIMEOUT_MS);
    CHECK_EQ_U64(c.reap_ms, XFER_DEFAULT_REAP_MS);
    CHECK(c.progress_thread);
    CHECK(c.provider == NULL && c.node == NULL);

    char err[256] = "";
    xfer_t *x = NULL;
    c.role = XFER_ROLE_CLIENT;
    c.provider = "ofi+nope";
    CHECK(xfer_open(&c, &x, err, sizeof err) == WH_ERR_UNSUPPORTED);
    CHECK(strstr(err, "ofi+nope") && strstr(err, "ofi+shm, ofi+tcp"));
    c.provider = "shm"; /* a short name is not a provider name for xfer_open */
    CHECK(xfer_open(&c, &x, err, sizeof err) == WH_ERR_UNSUPPORTED);
    c.provider = NULL;
    CHECK(xfer_open(&c, &x, err, sizeof err) == WH_ERR_INVALID);
    c.provider = "ofi+tcp";
    c.role = (xfer_role_t)7;
    CHECK(xfer_open(&c, &x, err, sizeof err) == WH_ERR_INVALID);
    CHECK(xfer_open(NULL, &x, err, sizeof err) == WH_ERR_INVALID);
    CHECK(x == NULL);
    xfer_close(NULL); /* NULL-safe */
    xfer_mr_dereg(NULL);
    CHECK(xfer_batch_end(NULL) == WH_OK);
    /* Every family's table has the required slots (xfer_open would refuse it otherwise). */
    const char *fams[] = {"ofi", "cma", "cuda"};
    for (size_t i = 0; i < 3; i++) {
        const struct xfer_ops *o = xfer_family(fams[i]);
        CHECK(o && o->open && o->close && o->forget_after_fork && o->mr_reg && o->mr_dereg &&
              o->batch_post && o->batch_wait && o->batch_end);
    }
}

/* An optional slot left NULL: its dispatch answers WH_ERR_UNSUPPORTED (naming what, where the
 * call takes a message) or does nothing, never a call through NULL. The table has no slot but
 * the family; only the dispatch functions under test are called. */
static void test_optional_slots(void)
{
    static const struct xfer_ops bare = {.family = "bare"};
    xfer_t x = {._ops = &bare, ._name = "bare+none", ._fabric = "bare", ._role = XFER_ROLE_CLIENT};
    static unsigned char buf[64];
    char err[256] = "", out[XFER_TOKEN_MAX_LEN];
    xfer_mr_t mr = {._x = &x, ._addr = buf, ._len = sizeof buf};
    xfer_mr_t *mrp = NULL;
    CHECK(xfer_token_pack(&x, &mr, buf, 16, out, sizeof out) == WH_ERR_UNSUPPORTED);
    CHECK(xfer_mr_reg_device(&x, buf, sizeof buf, &mrp, err, sizeof err) == WH_ERR_UNSUPPORTED);
    CHECK(mrp == NULL && strstr(err, "bare+none cannot register GPU memory"));
    xfer_progress_begin(&x);
    xfer_progress_end(&x);
    xfer_progress(&x);
    xfer_quiesce(&x);
    x._role = XFER_ROLE_SERVER;
    CHECK(xfer_stalled(&x) == 0);
    xfer_token_t t = {.dialect = XFER_TOKEN_DIALECT_OFI1, .size = sizeof buf, .provider = "bare"};
    xfer_target_t tgt = {.token = &t};
    xfer_batch_t *b = NULL;
    err[0] = '\0';
    CHECK(xfer_batch_begin(&x, &tgt, &b, err, sizeof err) == WH_ERR_UNSUPPORTED);
    CHECK(b == NULL && strstr(err, "bare+none cannot initiate transfers"));
    xfer_batch_t bb = {._x = &x, ._rsize = sizeof buf, ._direct = true, ._status = WH_OK};
    uint64_t crc = 0;
    CHECK(xfer_batch_post_crc(&bb, buf, 16, 0, &crc) == WH_ERR_UNSUPPORTED);
}

static xfer_t *open_role(const char *prov, xfer_role_t role, uint64_t chunk, unsigned window)
{
    xfer_config_t c;
    xfer_config_init(&c);
    c.provider = prov;
    c.role = role;
    c.chunk_size = chunk;
    c.window = window;
    c.timeout_ms = 3000;
    c.node = "127.0.0.1";
    char err[256] = "";
    xfer_t *x = NULL;
    if (xfer_open(&c, &x, err, sizeof err) != WH_OK) {
        fprintf(stderr, "  open %s: %s\n", prov, err);
        return NULL;
    }
    return x;
}

static unsigned char pat(size_t i, unsigned seed)
{
    return (unsigned char)((i * 2654435761u) >> 11 ^ seed);
}

#define TGT_LEN ((3u << 20) + 13u)

/* Batch logic against this process's own memory: the client registers tgt, the server writes
 * src into it in tagged pieces, reads it back, and every out-of-region post is refused. */
static void batch_roundtrip(const char *prov, pid_t bind)
{
    char ebuf[256];
    fprintf(stderr, "  batch %s bind_pid=%d\n", prov, (int)bind);
    xfer_t *cl = open_role(prov, XFER_ROLE_CLIENT, 0, 0);
    xfer_t *sv = open_role(prov, XFER_ROLE_SERVER, 256u << 10, 3);
    CHECK(cl && sv);
    if (!cl || !sv) {
        xfer_close(cl);
        xfer_close(sv);
        return;
    }
    CHECK_STR(xfer_name(sv), prov);
    unsigned char *tgt = malloc(TGT_LEN + 64), *src = malloc(TGT_LEN), *back = malloc(TGT_LEN);
    CHECK(tgt && src && back);
    memset(tgt, 0xee, TGT_LEN + 64);
    for (size_t i = 0; i < TGT_LEN; i++)
        src[i] = pat(i, 0x42);
    xfer_mr_t *cmr = NULL, *smr = NULL, *bmr = NULL;
    CHECK(xfer_mr_reg(cl, tgt, TGT_LEN + 64, &cmr) == WH_OK);
    CHECK(xfer_mr_reg(sv, src, TGT_LEN, &smr) == WH_OK);
    CHECK(xfer_mr_reg(sv, back, TGT_LEN, &bmr) == WH_OK);
    CHECK(xfer_mr_addr(smr) == src && xfer_mr_len(smr) == TGT_LEN);
    char tok[XFER_TOKEN_MAX_LEN + 1], err[256] = "";
    /* A token for a range outside the registration is refused. */
    CHECK(xfer_token_pack(cl, cmr, tgt + 65, TGT_LEN, tok, sizeof tok) == WH_ERR_INVALID);
    CHECK(xfer_token_pack(cl, cmr, tgt - 1, 4, tok, sizeof tok) == WH_ERR_INVALID);
    CHECK(xfer_token_pack(sv, cmr, tgt, 4, tok, sizeof tok) == WH_ERR_INVALID); /* other x */
    /* The token names [tgt + 32, tgt + 32 + TGT_LEN): 32 guard bytes on each side. */
    CHECK(xfer_token_pack(cl, cmr, tgt + 32, TGT_LEN, tok, sizeof tok) == WH_OK);
    xfer_token_t t;
    CHECK(xfer_token_parse(tok, strlen(tok), &t, err, sizeof err) == WH_OK);
    CHECK_STR(t.provider, xfer_fabric(sv));
    xfer_progress_begin(cl);

    xfer_target_t tg;
    memset(&tg, 0, sizeof tg);
    tg.token = &t;
    tg.bind_pid = bind;
    tg.bind_uid = bind ? getuid() : (uid_t)-1;
    tg.bind_host = bind ? NULL : "127.0.0.1";
    xfer_batch_t *b = NULL;
    /* A client-role transport cannot start batches. */
    CHECK(xfer_batch_begin(cl, &tg, &b, err, sizeof err) == WH_ERR_INVALID);
    wh_status_t st = xfer_batch_begin(sv, &tg, &b, err, sizeof err);
    CHECK(st == WH_OK);
    if (st != WH_OK) {
        fprintf(stderr, "  begin: %s\n", err);
        goto out;
    }
    /* Bound shm goes to the cma family: a direct batch; anything else is staged. */
    CHECK(xfer_batch_direct(b) == (bind > 0));
    CHECK_EQ_U64(xfer_batch_bytes(b), 0);
    CHECK_STR(xfer_batch_error(b, ebuf, sizeof ebuf), "");
    /* Refused before anything moves: outside the region, a bad tag, a bad op, outside the
     * local registration, no registration on a staged batch. */
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, 2, TGT_LEN - 1, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, 1, TGT_LEN, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, 16, UINT64_MAX - 8, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, 1, 0, XFER_TAG_ALL) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, (xfer_op_t)9, smr, src, 1, 0, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src + 1, TGT_LEN, 0, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_wait(b, XFER_TAG_ALL + 1) == WH_ERR_INVALID);
    CHECK(strstr(xfer_batch_error(b, ebuf, sizeof ebuf), "outside") != NULL);
    if (bind == 0)
        CHECK(xfer_batch_post(b, XFER_OP_WRITE, NULL, src, 1, 0, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, 0, TGT_LEN, 0) == WH_OK); /* empty */
    CHECK_EQ_U64(xfer_batch_bytes(b), 0);
    /* Three tagged pieces, waited for one tag at a time, then all. */
    size_t a = (1u << 20) + 5, c2 = (1u << 20) + 3;
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, a, 0, 1) == WH_OK);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src + a, c2, a, 2) == WH_OK);
    CHECK(xfer_batch_wait(b, 1) == WH_OK);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src + a + c2, TGT_LEN - a - c2, a + c2, 63) ==
          WH_OK);
    CHECK(xfer_batch_wait(b, 2) == WH_OK);
    CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_OK);
    CHECK_EQ_U64(xfer_batch_bytes(b), TGT_LEN);
    CHECK(memcmp(tgt + 32, src, TGT_LEN) == 0);
    bool guards = true;
    for (size_t i = 0; i < 32; i++)
        guards &= tgt[i] == 0xee && tgt[32 + TGT_LEN + i] == 0xee;
    CHECK(guards);
    /* Read it back into another buffer. */
    memset(back, 0, TGT_LEN);
    CHECK(xfer_batch_post(b, XFER_OP_READ, bmr, back, TGT_LEN, 0, 5) == WH_OK);
    CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_OK);
    CHECK(memcmp(back, src, TGT_LEN) == 0);
    CHECK_EQ_U64(xfer_batch_bytes(b), 2ull * TGT_LEN);
    CHECK(xfer_batch_end(b) == WH_OK);

    /* A token for another provider is refused by batch_begin. */
    xfer_token_t other = t;
    snprintf(other.provider, sizeof other.provider, "%s",
             strcmp(t.provider, "shm") == 0 ? "tcp;ofi_rxm" : "shm");
    tg.token = &other;
    b = NULL;
    CHECK(xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_ERR_INVALID);
    CHECK(strstr(err, "not this transport") != NULL);
out:
    xfer_progress_end(cl);
    xfer_mr_dereg(cmr);
    xfer_mr_dereg(smr);
    xfer_mr_dereg(bmr);
    xfer_close(sv);
    xfer_close(cl);
    free(tgt);
    free(src);
    free(back);
}

/* A bound batch whose process is gone fails, and the failure sticks: later posts return it. */
static void test_cma_sticky_failure(void)
{
    char ebuf[256];
    xfer_t *cl = open_role("ofi+shm", XFER_ROLE_CLIENT, 0, 0);
    xfer_t *sv = open_role("ofi+shm", XFER_ROLE_SERVER, 0, 0);
    CHECK(cl && sv);
    if (!cl || !sv) {
        xfer_close(cl);
        xfer_close(sv);
        return;
    }
    static unsigned char tgt[4096], src[4096];
    xfer_mr_t *cmr = NULL;
    char tok[XFER_TOKEN_MAX_LEN + 1], err[256];
    xfer_token_t t;
    CHECK(xfer_mr_reg(cl, tgt, sizeof tgt, &cmr) == WH_OK);
    CHECK(xfer_token_pack(cl, cmr, tgt, sizeof tgt, tok, sizeof tok) == WH_OK);
    CHECK(xfer_token_parse(tok, strlen(tok), &t, err, sizeof err) == WH_OK);
    /* The region is ours, but the token's base is moved to an unmapped address. */
    t.base = 16;
    xfer_target_t tg;
    memset(&tg, 0, sizeof tg);
    tg.token = &t;
    tg.bind_pid = getpid();
    tg.bind_uid = getuid();
    xfer_batch_t *b = NULL;
    CHECK(xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_OK);
    if (b) {
        CHECK(xfer_batch_post(b, XFER_OP_WRITE, NULL, src, 64, 0, 0) == WH_ERR_TRANSPORT);
        CHECK(strstr(xfer_batch_error(b, ebuf, sizeof ebuf), "not mapped") != NULL);
        CHECK(xfer_batch_post(b, XFER_OP_WRITE, NULL, src, 64, 0, 0) == WH_ERR_TRANSPORT);
        CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_ERR_TRANSPORT);
        CHECK(xfer_batch_end(b) == WH_OK); /* synchronous: never anything in flight */
    }
    /* A region the client unmaps during a batch fails as not mapped (a transport error), not
     * as a process that exec'd: its address space still runs. */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    memset(src, 0x5a, sizeof src);
    unsigned char *m =
        mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    xfer_mr_t *mmr = NULL;
    if (m != MAP_FAILED && xfer_mr_reg(cl, m, 4 * pg, &mmr) == WH_OK &&
        xfer_token_pack(cl, mmr, m, 4 * pg, tok, sizeof tok) == WH_OK &&
        xfer_token_parse(tok, strlen(tok), &t, err, sizeof err) == WH_OK) {
        tg.token = &t;
        b = NULL;
        CHECK(xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_OK);
        if (b) {
            CHECK(xfer_batch_post(b, XFER_OP_WRITE, NULL, src, 64, 0, 0) == WH_OK);
            CHECK(m[0] == src[0]);
            CHECK(munmap(m, 4 * pg) == 0);
            m = MAP_FAILED;
            CHECK(xfer_batch_post(b, XFER_OP_WRITE, NULL, src, 64, 0, 0) == WH_ERR_TRANSPORT);
            CHECK(strstr(xfer_batch_error(b, ebuf, sizeof ebuf), "not mapped") != NULL);
            CHECK(xfer_batch_end(b) == WH_OK);
        }
        b = NULL;
    }
    if (mmr)
        xfer_mr_dereg(mmr);
    if (m != MAP_FAILED)
        munmap(m, 4 * pg);
    tg.token = &t;
    /* A wrong uid for the bound pid is refused before anything moves. */
    tg.bind_uid = getuid() + 1;
    CHECK(xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_ERR_AUTH);
    xfer_mr_dereg(cmr);
    xfer_close(sv);
    xfer_close(cl);
}

/* A bound batch is bound to the program that passed its check at begin: once the process
 * execs another program (same pid, same uid, still dumpable: nothing the /proc check sees
 * changes), the next post fails as refused before a byte moves, instead of reading the new
 * program's memory. */
static void test_cma_exec(void)
{
    int tp[2], go[2];
    CHECK(pipe(tp) == 0 && pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60); /* never outlives a parent that died */
        close(tp[0]);
        close(go[1]);
        xfer_t *cl = open_role("ofi+shm", XFER_ROLE_CLIENT, 0, 0);
        static unsigned char buf[1 << 16];
        memset(buf, 'C', sizeof buf);
        xfer_mr_t *mr = NULL;
        char tok[XFER_TOKEN_MAX_LEN + 1];
        if (!cl || xfer_mr_reg(cl, buf, sizeof buf, &mr) != WH_OK ||
            xfer_token_pack(cl, mr, buf, sizeof buf, tok, sizeof tok) != WH_OK)
            _exit(2);
        if (write(tp[1], tok, strlen(tok) + 1) != (ssize_t)(strlen(tok) + 1))
            _exit(3);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(4);
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(5);
    }
    close(tp[1]);
    close(go[0]);
    char tok[XFER_TOKEN_MAX_LEN + 1] = "", err[256] = "", ebuf[256];
    size_t got = 0;
    while (got < sizeof tok - 1) {
        ssize_t n = read(tp[0], tok + got, sizeof tok - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(tok, '\0', got))
            break;
    }
    xfer_token_t t;
    CHECK(got > 0 && xfer_token_parse(tok, strlen(tok), &t, err, sizeof err) == WH_OK);
    xfer_t *sv = open_role("ofi+shm", XFER_ROLE_SERVER, 0, 0);
    CHECK(sv != NULL);
    xfer_target_t tg;
    memset(&tg, 0, sizeof tg);
    tg.token = &t;
    tg.bind_pid = pid;
    tg.bind_uid = getuid();
    xfer_batch_t *b = NULL, *w = NULL;
    unsigned char back[4096];
    CHECK(sv && xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_OK);
    CHECK(sv && xfer_batch_begin(sv, &tg, &w, err, sizeof err) == WH_OK);
    if (b && w) {
        /* The program that connected: its bytes arrive. */
        memset(back, 0, sizeof back);
        CHECK(xfer_batch_post(b, XFER_OP_READ, NULL, back, sizeof back, 0, 0) == WH_OK);
        CHECK(back[0] == 'C' && back[sizeof back - 1] == 'C');
        /* It execs /bin/sleep; wait (at most 5 s) until the kernel shows the new program. */
        CHECK(write(go[1], "x", 1) == 1);
        char exe[256], link[64];
        snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
        bool execd = false;
        for (int i = 0; i < 500 && !execd; i++) {
            ssize_t n = readlink(link, exe, sizeof exe - 1);
            execd = n > 6 && (exe[n] = '\0', strcmp(exe + n - 6, "/sleep") == 0);
            if (!execd)
                usleep(10000);
        }
        CHECK(execd);
        /* Both batches began with the program before: a read and a write are refused. */
        memset(back, 0, sizeof back);
        CHECK(xfer_batch_post(b, XFER_OP_READ, NULL, back, sizeof back, 0, 0) == WH_ERR_AUTH);
        CHECK(strstr(xfer_batch_error(b, ebuf, sizeof ebuf), "exec'd") != NULL);
        CHECK(back[0] == 0);
        CHECK(xfer_batch_post(w, XFER_OP_WRITE, NULL, back, sizeof back, 0, 0) == WH_ERR_AUTH);
        CHECK(strstr(xfer_batch_error(w, ebuf, sizeof ebuf), "exec'd") != NULL);
    }
    if (b)
        CHECK(xfer_batch_end(b) == WH_OK);
    if (w)
        CHECK(xfer_batch_end(w) == WH_OK);
    kill(pid, SIGKILL);
    int ws;
    waitpid(pid, &ws, 0);
    /* The child's shm endpoint outlived it (exec runs no destructor). */
    if (got > 0) {
        char name[XFER_TOKEN_MAX_EP_NAME + 1], path[XFER_TOKEN_MAX_EP_NAME + 16];
        memcpy(name, t.ep_name, t.ep_name_len);
        name[t.ep_name_len] = '\0';
        const char *s = strstr(name, "://");
        snprintf(path, sizeof path, "/dev/shm/%s", s ? s + 3 : name);
        unlink(path);
    }
    close(tp[0]);
    close(go[1]);
    xfer_close(sv);
}

static void test_batches(void)
{
    batch_roundtrip("ofi+shm", getpid()); /* bound: the cma family */
    batch_roundtrip("ofi+shm", 0);        /* trusted: libfabric's shm initiator */
    batch_roundtrip("ofi+tcp", 0);
}

/* xfer_quiesce on a tcp client replaces its endpoint: the next token names another address,
 * and the registration made before still takes the server's writes through it. */
static void test_quiesce(void)
{
    xfer_t *cl = open_role("ofi+tcp", XFER_ROLE_CLIENT, 0, 0);
    xfer_t *sv = open_role("ofi+tcp", XFER_ROLE_SERVER, 256u << 10, 3);
    CHECK(cl && sv);
    if (!cl || !sv) {
        xfer_close(cl);
        xfer_close(sv);
        return;
    }
    enum { N = (1u << 20) + 7 };
    unsigned char *tgt = calloc(1, N), *src = malloc(N);
    CHECK(tgt && src);
    for (size_t i = 0; i < N; i++)
        src[i] = pat(i, 0x17);
    xfer_mr_t *cmr = NULL, *smr = NULL;
    CHECK(xfer_mr_reg(cl, tgt, N, &cmr) == WH_OK);
    CHECK(xfer_mr_reg(sv, src, N, &smr) == WH_OK);
    char tok1[XFER_TOKEN_MAX_LEN + 1], tok2[XFER_TOKEN_MAX_LEN + 1], err[256] = "";
    CHECK(xfer_token_pack(cl, cmr, tgt, N, tok1, sizeof tok1) == WH_OK);
    xfer_quiesce(cl); /* no bracket open: returns at once, with a new endpoint */
    xfer_quiesce(NULL);
    xfer_quiesce(sv); /* server role: nothing to do */
    CHECK(xfer_token_pack(cl, cmr, tgt, N, tok2, sizeof tok2) == WH_OK);
    xfer_token_t t1, t2;
    CHECK(xfer_token_parse(tok1, strlen(tok1), &t1, err, sizeof err) == WH_OK);
    CHECK(xfer_token_parse(tok2, strlen(tok2), &t2, err, sizeof err) == WH_OK);
    CHECK(t1.ep_name_len != t2.ep_name_len || memcmp(t1.ep_name, t2.ep_name, t1.ep_name_len));
    CHECK(t1.key == t2.key); /* the same registration */
    xfer_progress_begin(cl);
    xfer_target_t tg;
    memset(&tg, 0, sizeof tg);
    tg.token = &t2;
    tg.bind_uid = (uid_t)-1;
    tg.bind_host = "127.0.0.1";
    xfer_batch_t *b = NULL;
    CHECK(xfer_batch_begin(sv, &tg, &b, err, sizeof err) == WH_OK);
    if (b) {
        CHECK(xfer_batch_post(b, XFER_OP_WRITE, smr, src, N, 0, 0) == WH_OK);
        CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_OK);
        CHECK_EQ_U64(xfer_batch_bytes(b), N);
        CHECK(xfer_batch_end(b) == WH_OK);
        CHECK(memcmp(tgt, src, N) == 0);
    }
    xfer_progress_end(cl);
    xfer_mr_dereg(cmr);
    xfer_mr_dereg(smr);
    xfer_close(sv);
    xfer_close(cl);
    free(tgt);
    free(src);
}

/* After fork, in the child: the transport is inert (no provider call, no lock), and closing
 * it frees only wharf's memory. */
static void test_forgotten(void)
{
    xfer_t *cl = open_role("ofi+shm", XFER_ROLE_CLIENT, 0, 0);
    CHECK(cl != NULL);
    if (!cl)
        return;
    static unsigned char buf[4096];
    xfer_mr_t *mr = NULL;
    CHECK(xfer_mr_reg(cl, buf, sizeof buf, &mr) == WH_OK);
    xfer_progress_begin(cl); /* the parent's progress thread runs across the fork */
    pid_t pid = fork();
    if (pid == 0) {
        char tok[XFER_TOKEN_MAX_LEN + 1];
        xfer_mr_t *mr2 = NULL;
        int bad = 0;
        xfer_forget_after_fork(cl);
        bad += xfer_mr_reg(cl, buf, sizeof buf, &mr2) != WH_ERR_INVALID;
        bad += xfer_token_pack(cl, mr, buf, 16, tok, sizeof tok) != WH_ERR_INVALID;
        xfer_progress_begin(cl);
        xfer_progress_end(cl);
        xfer_progress(cl);
        xfer_mr_dereg(mr);
        xfer_close(cl);
        _exit(bad);
    }
    int ws = -1;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    xfer_progress_end(cl);
    xfer_mr_dereg(mr);
    xfer_close(cl);
}

/* A batch is failed by whichever thread meets the failure first (a poster, or the thread that
 * drains the transport's completions for every batch, the reaper among them) while its owner
 * reads the message. The first failure must win whole: one status, its own message, never a
 * mix, and a reader sees "" or a whole message. Under TSan this also checks that no byte of
 * the message is read while it is written. */
#define FAIL_RACERS 4
#define FAIL_ROUNDS 2000
typedef struct {
    xfer_batch_t *b;
    unsigned id;
    unsigned *go;
} fail_racer_t;

static void *fail_racer(void *arg)
{
    fail_racer_t *r = arg;
    while (!__atomic_load_n(r->go, __ATOMIC_ACQUIRE))
        ;
    if (r->id == 0) { /* the owner: reads the message while the others fail the batch */
        char buf[256];
        for (unsigned i = 0; i < 64; i++) {
            xfer_batch_error(r->b, buf, sizeof buf);
            if (buf[0] && strncmp(buf, "racer ", 6) != 0)
                return (void *)1;
        }
        return NULL;
    }
    wh_status_t st = r->id % 2 ? WH_ERR_TRANSPORT : WH_ERR_TIMEOUT;
    xfer_batch_fail(r->b, st, "racer %u failed the batch with status %d", r->id, (int)st);
    return NULL;
}

static void test_batch_fail_race(void)
{
    unsigned bad = 0;
    for (unsigned round = 0; round < FAIL_ROUNDS; round++) {
        xfer_batch_t bb;
        memset(&bb, 0, sizeof bb);
        bb._status = WH_OK;
        unsigned go = 0;
        pthread_t th[FAIL_RACERS];
        fail_racer_t rs[FAIL_RACERS];
        for (unsigned i = 0; i < FAIL_RACERS; i++) {
            rs[i] = (fail_racer_t){.b = &bb, .id = i, .go = &go};
            CHECK(pthread_create(&th[i], NULL, fail_racer, &rs[i]) == 0);
        }
        __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
        for (unsigned i = 0; i < FAIL_RACERS; i++) {
            void *rv = NULL;
            pthread_join(th[i], &rv);
            bad += rv != NULL;
        }
        /* The message names the racer that won, and that racer's status is the batch's. */
        char buf[256], want[256];
        unsigned id = 0;
        xfer_batch_error(&bb, buf, sizeof buf);
        wh_status_t st = xfer_batch_status(&bb);
        if (sscanf(buf, "racer %u", &id) != 1 || id == 0 || id >= FAIL_RACERS) {
            bad++;
            continue;
        }
        snprintf(want, sizeof want, "racer %u failed the batch with status %d", id, (int)st);
        bad += strcmp(buf, want) != 0;
        bad += st != (id % 2 ? WH_ERR_TRANSPORT : WH_ERR_TIMEOUT);
        /* Failed stays failed: a later failure changes neither. */
        CHECK(xfer_batch_fail(&bb, WH_ERR_AUTH, "late") == st);
        CHECK_STR(xfer_batch_error(&bb, buf, sizeof buf), want);
    }
    CHECK(bad == 0);
    /* A zero-length buffer is left alone. */
    char one = 'x';
    xfer_batch_t bb;
    memset(&bb, 0, sizeof bb);
    CHECK(xfer_batch_error(&bb, &one, 0) == &one && one == 'x');
}

int main(void)
{
    RUN(test_table);
    RUN(test_optional_slots);
    RUN(test_caps);
    RUN(test_defaults_and_open_errors);
    RUN(test_batches);
    RUN(test_cma_sticky_failure);
    RUN(test_cma_exec);
    RUN(test_batch_fail_race);
    RUN(test_forgotten);
    RUN(test_quiesce);
    return check_done();
}
