/* SPDX-License-Identifier: Apache-2.0 */
/* The wharf CLI: shared state and helpers between main.c and the subcommands. */
#ifndef WH_CLI_CLI_H
#define WH_CLI_CLI_H

#include "wharf/wharf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli {
    const char *endpoint, *access_key, *secret_key, *region, *provider, *unix_socket, *ca_bundle;
    const char *fallback_s;
    wharf_fallback_t fallback;
    const char *transport; /* cp */
    const char *bucket;    /* verify */
    uint64_t size;         /* verify */
    unsigned concurrency;
    uint64_t chunk_size;
    int verify; /* checksum verification, --no-verify turns it off */
    bool quiet, help, version;
} cli_t;

/* Creates the client from the global flags; prints the reason and returns 1 on failure. */
int cli_client(const cli_t *g, wharf_client_t **out);
/* Prints "wharf <what>: <last error>" and returns 1. */
int cli_fail(const char *what, wharf_status_t st);
/* "s3://bucket/key" -> bucket (copied) and key (points into url, "" when absent). */
int cli_parse_s3(const char *url, char *bucket, size_t blen, const char **key);
void cli_fmt_bytes(uint64_t n, char *out, size_t outlen);
void cli_print_report(FILE *f, const char *what, const wharf_report_t *r);

/* `wharf cp` (cp.c). */
int cli_cp(const cli_t *g, int argc, char **argv);
/* `wharf verify` (verify.c). */
int cli_verify(const cli_t *g, int argc, char **argv);

#endif
