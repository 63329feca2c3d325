/* SPDX-License-Identifier: Apache-2.0 */
/* bench/wharf_bench: the benchmark suite's one entry point (docs/benchmarks.md).
 *   wharf_bench fetch|put|rdma-vs-http|limits [options]    the grid over libwharf (grid.c)
 *   wharf_bench report RESULTS_DIR [--out DIR]              bench/report.py over result files
 * It is a program of its own, not a subcommand of the wharf CLI, so that the CLI links only
 * libwharf's public ABI and the benchmark's dependencies stay in bench/. */
#include "wbench.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s fetch|put|rdma-vs-http|limits|report ... (--help)\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "report") == 0)
        return wb_report_main(argc - 2, argv + 2);
    return wb_bench_main(argc - 1, argv + 1);
}
