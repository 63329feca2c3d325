/* The default `wharf bench` / `wharf report` when src/cli/bench.c is absent: say so. A strong
 * cli_bench_main in bench.c overrides this weak one at link time. */
#include "cli/bench.h"

#include <stdio.h>

__attribute__((weak)) int cli_bench_main(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "wharf %s: not built (src/cli/bench.c is absent from this build)\n",
            argc > 0 ? argv[0] : "bench");
    return 2;
}
