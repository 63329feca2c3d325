/* SPDX-License-Identifier: Apache-2.0 */
/* cuda.c / cuda_ipc.c without a GPU: libcuda is loaded at run time, and a host without a
 * driver (or with a library that is not one) fails cleanly with a reason; the cuda1 token
 * dialect round-trips and names every bad field. The GPU paths themselves are tested on a
 * GPU host by tests/python/test_cuda_direct.py. */
#include "check.h"
#include "xfer/cuda.h"
#include "xfer/token.h"
#include "xfer/xfer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_err[256];

static void test_cuda1_roundtrip(void)
{
    uint8_t uuid[16], ipc[XFER_TOKEN_CUDA_IPC_LEN];
    for (int i = 0; i < 16; i++)
        uuid[i] = (uint8_t)(0xa0 + i);
    for (int i = 0; i < XFER_TOKEN_CUDA_IPC_LEN; i++)
        ipc[i] = (uint8_t)(i * 7);
    char buf[XFER_TOKEN_MAX_LEN + 1];
    CHECK(xfer_token_pack_cuda1(0x7f0000200000ULL, 0x4000, uuid, ipc, 0x200, buf, sizeof buf) ==
          WH_OK);
    xfer_token_t t;
    memset(&t, 0, sizeof t);
    CHECK(xfer_token_parse(buf, strlen(buf), &t, g_err, sizeof g_err) == WH_OK);
    CHECK(t.dialect == XFER_TOKEN_DIALECT_CUDA1);
    CHECK_EQ_U64(t.base, 0x7f0000200000ULL);
    CHECK_EQ_U64(t.size, 0x4000);
    CHECK_EQ_U64(t.cuda_off, 0x200);
    CHECK(memcmp(t.cuda_uuid, uuid, 16) == 0);
    CHECK(memcmp(t.cuda_ipc, ipc, XFER_TOKEN_CUDA_IPC_LEN) == 0);
    CHECK_STR(t.provider, "cuda");
    /* offset + size wrapping is refused at pack time */
    CHECK(xfer_token_pack_cuda1(0, 0x10, uuid, ipc, UINT64_MAX - 4, buf, sizeof buf) ==
          WH_ERR_INVALID);
}

static void expect_bad(const char *tok, const char *want)
{
    xfer_token_t t;
    wh_status_t st = xfer_token_parse(tok, strlen(tok), &t, g_err, sizeof g_err);
    CHECK(st == WH_ERR_INVALID);
    if (!strstr(g_err, want)) {
        fprintf(stderr, "  token \"%.60s...\": message \"%s\" lacks \"%s\"\n", tok, g_err, want);
        CHECK(!"message names the field");
    }
}

static void test_cuda1_errors(void)
{
    char uuid[33], ipc[129], tok[512];
    memset(uuid, 'a', 32);
    uuid[32] = 0;
    memset(ipc, '0', 128);
    ipc[128] = 0;
    snprintf(tok, sizeof tok, "1000:10:cuda1:%s:%s", uuid, ipc);
    expect_bad(tok, "cuda1 has 6 fields");
    snprintf(tok, sizeof tok, "1000:10:cuda1:%.31s:%s:0", uuid, ipc);
    expect_bad(tok, "'device-uuid'");
    snprintf(tok, sizeof tok, "1000:10:cuda1:%s:%.127s:0", uuid, ipc);
    expect_bad(tok, "'ipc-handle'");
    snprintf(tok, sizeof tok, "1000:10:cuda1:%s:%s:xyz", uuid, ipc);
    expect_bad(tok, "'alloc-offset'");
    snprintf(tok, sizeof tok, "1000:10:cuda1:%s:%s:fffffffffffffff8", uuid, ipc);
    expect_bad(tok, "wraps");
    uuid[3] = 'G';
    snprintf(tok, sizeof tok, "1000:10:cuda1:%s:%s:0", uuid, ipc);
    expect_bad(tok, "'device-uuid'");
}

/* Run in a child-free way: the loader answers once per process, so each case that needs a
 * different WHARF_LIBCUDA runs as its own invocation of this program (see main). */
static int run_loader_case(const char *want)
{
    const cuda_api_t *api = NULL;
    wh_status_t st = cuda_load(&api, g_err, sizeof g_err);
    if (!want) { /* whatever this host has: either it loads, or it says why */
        CHECK(st == WH_OK || (st == WH_ERR_UNSUPPORTED && g_err[0]));
        fprintf(stderr, "  cuda on this host: %s\n", st == WH_OK ? "loaded" : g_err);
    } else {
        CHECK(st == WH_ERR_UNSUPPORTED);
        if (!strstr(g_err, want)) {
            fprintf(stderr, "  loader message \"%s\" lacks \"%s\"\n", g_err, want);
            CHECK(!"loader names the reason");
        }
        /* the same answer again, without retrying */
        char again[256];
        CHECK(cuda_load(&api, again, sizeof again) == WH_ERR_UNSUPPORTED);
        CHECK_STR(again, g_err);
        /* and the transport refuses to open, with the same reason */
        xfer_config_t cfg;
        xfer_config_init(&cfg);
        cfg.provider = "cuda+ipc";
        cfg.role = XFER_ROLE_CLIENT;
        xfer_t *x = NULL;
        char err[256] = "";
        CHECK(xfer_open(&cfg, &x, err, sizeof err) == WH_ERR_UNSUPPORTED);
        CHECK(x == NULL);
        CHECK(strstr(err, want) != NULL);
    }
    return 0;
}

/* GPU memory with the network providers: a client opened on a provider without FI_HMEM
 * (Debian's tcp has none) refuses device registration and says so, before touching CUDA; a
 * same-host provider points at cuda+ipc; WHARF_OFI_HMEM=0 is named when it is the reason;
 * host registrations are never marked as device memory; the server role refuses. */
static void reg_device_case(const char *prov, xfer_role_t role, const char *want)
{
    xfer_config_t cfg;
    xfer_config_init(&cfg);
    cfg.provider = prov;
    cfg.role = role;
    cfg.node = "127.0.0.1";
    xfer_t *x = NULL;
    char err[256] = "";
    if (xfer_open(&cfg, &x, err, sizeof err) != WH_OK) {
        fprintf(stderr, "  open %s: %s\n", prov, err);
        CHECK(!"provider opens");
        return;
    }
    static unsigned char buf[1 << 16];
    xfer_mr_t *mr = NULL;
    err[0] = '\0';
    CHECK(xfer_mr_reg_device(x, buf, sizeof buf, &mr, err, sizeof err) ==
          (role == XFER_ROLE_CLIENT ? WH_ERR_UNSUPPORTED : WH_ERR_INVALID));
    CHECK(mr == NULL);
    if (!strstr(err, want)) {
        fprintf(stderr, "  %s: \"%s\" lacks \"%s\"\n", prov, err, want);
        CHECK(!"the refusal names its reason");
    }
    if (role == XFER_ROLE_CLIENT) {
        CHECK(xfer_mr_reg(x, buf, sizeof buf, &mr) == WH_OK);
        CHECK(!xfer_mr_is_device(mr));
        xfer_mr_dereg(mr);
    }
    xfer_close(x);
}

static void test_hmem_refusals(void)
{
    unsetenv("WHARF_OFI_HMEM");
    reg_device_case("ofi+tcp", XFER_ROLE_CLIENT, "offers no FI_HMEM");
    reg_device_case("ofi+shm", XFER_ROLE_CLIENT, "cuda+ipc");
    reg_device_case("ofi+tcp", XFER_ROLE_SERVER, "registered by clients");
    setenv("WHARF_OFI_HMEM", "0", 1);
    reg_device_case("ofi+tcp", XFER_ROLE_CLIENT, "WHARF_OFI_HMEM=0");
    unsetenv("WHARF_OFI_HMEM");
    CHECK(!xfer_mr_is_device(NULL));
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--loader") == 0) {
        run_loader_case(strcmp(argv[2], "-") == 0 ? NULL : argv[2]);
    } else {
        test_cuda1_roundtrip();
        test_cuda1_errors();
        test_hmem_refusals();
        /* A missing library, and a library that is not a CUDA driver: each in a fresh
         * process, since the loader decides once per process. */
        char cmd[4200];
        const char *self = argv[0];
        snprintf(cmd, sizeof cmd,
                 "WHARF_LIBCUDA=/nonexistent/libcuda.so.1 '%s' --loader "
                 "'no NVIDIA driver'",
                 self);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "WHARF_LIBCUDA=libm.so.6 '%s' --loader 'has no symbol'", self);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof cmd, "'%s' --loader -", self);
        CHECK(system(cmd) == 0);
    }
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail ? 1 : 0;
}
