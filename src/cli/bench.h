/* `wharf bench` and `wharf report`: the dispatch point between the wharf CLI (src/cli/main.c)
 * and the benchmark code (src/cli/bench.c, written with bench/).
 *
 * main.c calls cli_bench_main with argv[0] = "bench" or "report" and the remaining arguments
 * after it. The global flags have already been parsed and exported to the environment
 * (WHARF_ENDPOINT, WHARF_ACCESS_KEY, WHARF_SECRET_KEY, WHARF_REGION, WHARF_PROVIDER,
 * WHARF_UNIX_SOCKET, WHARF_FALLBACK), so the benchmark reads its configuration from there.
 * Returns the process exit status.
 *
 * bench_weak.c holds a weak default that prints "not built"; a strong definition in bench.c
 * replaces it at link time. */
#ifndef WH_CLI_BENCH_H
#define WH_CLI_BENCH_H

int cli_bench_main(int argc, char **argv);

#endif
