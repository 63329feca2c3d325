/* SPDX-License-Identifier: Apache-2.0 */
/* bench/limits: this machine's limits (memcpy, process_vm_writev, loopback TCP, MD5, CRC), printed
 * as JSON. Every benchmark measures the same limits in its own run; this program is for a quick
 * look.   usage: limits [--bytes MIB] [--repeats N] */
#include "wbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    uint64_t mib = 1024;
    unsigned reps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
            mib = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
            reps = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--bytes MIB] [--repeats N]\n", argv[0]);
            return 2;
        }
    }
    if (mib < 16 || reps < 1) {
        fprintf(stderr, "limits: --bytes must be at least 16 (MiB) and --repeats at least 1\n");
        return 2;
    }
    wb_limits_t l;
    char err[512];
    if (wb_limits_measure(mib * WB_MIB, reps, &l, err, sizeof err) != 0) {
        fprintf(stderr, "limits: %s\n", err);
        return 1;
    }
    json_t *o = wb_limits_json(&l);
    json_dumpf(o, stdout, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
    printf("\n");
    json_decref(o);
    return 0;
}
