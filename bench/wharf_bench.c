/* bench/wharf_bench: the same program as `wharf bench ...` and `wharf report ...`, for trees
 * where the wharf CLI is not built.   usage: wharf_bench fetch|put|rdma3|limits|report ... */
#include "wbench.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s fetch|put|rdma3|limits|report ... (--help)\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "report") == 0)
        return wb_report_main(argc - 2, argv + 2);
    return wb_bench_main(argc - 1, argv + 1);
}
