/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of the cuda+ipc server share over the CUDA stand-in (fake_cuda.c): a server
 * opened with the environment as it stands, and a client's cuda1 token for "device" memory. */
#ifndef WHARF_TEST_CUDA_FAKE_H
#define WHARF_TEST_CUDA_FAKE_H

#include "xfer/token.h"
#include "xfer/xfer.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A cuda+ipc server (WHARF_CUDA_SOURCE and WHARF_CUDA_REGCACHE as set); NULL, said on stderr,
 * when it does not open. */
static inline xfer_t *fake_cuda_server(void)
{
    char err[256];
    xfer_config_t cfg;
    xfer_config_init(&cfg);
    cfg.provider = "cuda+ipc";
    cfg.role = XFER_ROLE_SERVER;
    xfer_t *x = NULL;
    if (xfer_open(&cfg, &x, err, sizeof err) != WH_OK)
        fprintf(stderr, "  server open: %s\n", err);
    return x;
}

/* The client's side: registers [dev, dev+dev_len) and parses a token for its first len bytes
 * into *t. false, said on stderr, on any failure. */
static inline bool fake_cuda_token(void *dev, size_t dev_len, uint64_t len, xfer_t **cx,
                                   xfer_mr_t **mr, xfer_token_t *t)
{
    char err[256], tok[XFER_TOKEN_MAX_LEN + 1];
    xfer_config_t cc;
    xfer_config_init(&cc);
    cc.provider = "cuda+ipc";
    cc.role = XFER_ROLE_CLIENT;
    bool ok = xfer_open(&cc, cx, err, sizeof err) == WH_OK &&
              xfer_mr_reg_device(*cx, dev, dev_len, mr, err, sizeof err) == WH_OK &&
              xfer_token_pack(*cx, *mr, dev, len, tok, sizeof tok) == WH_OK &&
              xfer_token_parse(tok, strlen(tok), t, err, sizeof err) == WH_OK;
    if (!ok)
        fprintf(stderr, "  client token: %s\n", err);
    return ok;
}

#endif
