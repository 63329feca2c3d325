/* `wharf bench fetch|put|rdma3|limits ...` and `wharf report RESULTS_DIR`: the benchmark suite
 * (bench/lib/grid.c, docs/benchmarks.md). Configuration comes from the flags after the
 * subcommand and from the environment main.c exported (WHARF_ENDPOINT, WHARF_ACCESS_KEY,
 * WHARF_SECRET_KEY, WHARF_REGION, WHARF_PROVIDER, WHARF_UNIX_SOCKET). */
#include "cli/bench.h"

#include "wbench.h"

#include <stdio.h>
#include <string.h>

int cli_bench_main(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    if (strcmp(argv[0], "report") == 0)
        return wb_report_main(argc - 1, argv + 1);
    if (argc < 2) {
        fprintf(stderr, "usage: wharf bench fetch|put|rdma3|limits [options] (--help)\n"
                        "       wharf report RESULTS_DIR [--out DIR]\n");
        return 2;
    }
    return wb_bench_main(argc - 1, argv + 1);
}
