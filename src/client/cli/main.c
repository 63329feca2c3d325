/* SPDX-License-Identifier: Apache-2.0 */
/* wharf: the command-line client. mb, rb, ls, rm, stat, cp, verify, admin cluster. Everything goes
 * through libwharf's public ABI. (The benchmark is its own program, bench/wharf_bench.)
 *
 * Global flags (anywhere on the command line) and their environment variables, read by
 * base/env.h (the first one set wins; the same order as the benchmarks and Python):
 *   --endpoint URL      WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
 *                                           default http://127.0.0.1:9000
 *   --access-key K      WHARF_ACCESS_KEY, AWS_ACCESS_KEY_ID        default wharfadmin
 *   --secret-key S      WHARF_SECRET_KEY, AWS_SECRET_ACCESS_KEY    default wharfadmin-secret
 *   --region R          WHARF_REGION, AWS_REGION, AWS_DEFAULT_REGION   default us-east-1
 *   --provider P        WHARF_PROVIDER      default auto (ofi+shm with a unix socket, else ofi+tcp)
 *   --unix-socket PATH  WHARF_UNIX_SOCKET   default ./data/wharfd.sock when it exists and the
 *                                           endpoint is the default one (what `make run` starts)
 *   --fallback fail|http WHARF_FALLBACK     default fail
 *   --ca-bundle FILE    WHARF_CA_BUNDLE, AWS_CA_BUNDLE   default the system's CA store */
#include "cli/cli.h"

#include "base/defaults.h"
#include "base/env.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_ENDPOINT WH_DEFAULT_ENDPOINT

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wharf [global flags] <command> [args]\n"
            "commands:\n"
            "  mb s3://bucket                 create a bucket\n"
            "  rb s3://bucket                 delete an empty bucket\n"
            "  ls [s3://bucket[/prefix]]      list buckets, or objects under a prefix\n"
            "  rm s3://bucket/key             delete an object\n"
            "  stat s3://bucket/key           show an object's size, etag, mtime, checksum\n"
            "  cp SRC DST                     copy a local file to s3://bucket/key or back\n"
            "       --transport rdma|http|auto  (default auto: rdma when a provider is open)\n"
            "  verify                         PUT and GET 64 MiB over RDMA and check that the\n"
            "                                 server counted it as RDMA; prints PASS or FAIL\n"
            "       --size SIZE  --bucket NAME\n"
            "  admin cluster [--json]         a cluster gateway's dashboard: storage servers\n"
            "                                 (address, id, zone, state, capacity, free),\n"
            "                                 repair/drain/damage/scrub backlogs, the GC and\n"
            "                                 repair leader (root's credentials)\n"
            "global flags (env):\n"
            "  --endpoint URL (WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL;\n"
            "                 default " DEFAULT_ENDPOINT ")\n"
            "  --access-key K (WHARF_ACCESS_KEY, AWS_ACCESS_KEY_ID)\n"
            "  --secret-key S (WHARF_SECRET_KEY, AWS_SECRET_ACCESS_KEY)\n"
            "  --region R (WHARF_REGION, AWS_REGION, AWS_DEFAULT_REGION; default " WH_DEFAULT_REGION
            ")\n"
            "  --provider auto|ofi+shm|ofi+tcp|none (WHARF_PROVIDER, default auto)\n"
            "  --unix-socket PATH (WHARF_UNIX_SOCKET, default ./data/wharfd.sock if present)\n"
            "  --fallback fail|http (WHARF_FALLBACK, default fail)\n"
            "  --ca-bundle FILE (WHARF_CA_BUNDLE, AWS_CA_BUNDLE): CAs of an https endpoint\n"
            "  --concurrency N  --chunk-size SIZE  --no-verify  --quiet\n"
            "sizes (--size, --chunk-size): " WH_SIZE_SYNTAX ";\n"
            "  a bare number is bytes: --chunk-size 64M, not 64\n");
}

/* ---- small helpers ---------------------------------------------------------------------- */

int cli_parse_s3(const char *url, char *bucket, size_t blen, const char **key)
{
    if (strncmp(url, "s3://", 5) != 0)
        return -1;
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t n = slash ? (size_t)(slash - b) : strlen(b);
    if (n == 0 || n >= blen)
        return -1;
    memcpy(bucket, b, n);
    bucket[n] = '\0';
    *key = slash ? slash + 1 : "";
    return 0;
}

void cli_fmt_bytes(uint64_t n, char *out, size_t outlen)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    unsigned i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(out, outlen, "%" PRIu64 " B", n);
    else
        snprintf(out, outlen, "%.1f %s", v, u[i]);
}

static const char *transport_name(wharf_transport_t t)
{
    switch (t) {
    case WHARF_TRANSPORT_RDMA:
        return "rdma";
    case WHARF_TRANSPORT_HTTP:
        return "http";
    case WHARF_TRANSPORT_NONE:
        return "none";
    default:
        return "auto";
    }
}

void cli_print_report(FILE *f, const char *what, const wharf_report_t *r)
{
    char b[32];
    cli_fmt_bytes(r->bytes, b, sizeof b);
    double mbs = r->wall_s > 0 ? (double)r->bytes / r->wall_s / 1e6 : 0;
    fprintf(f,
            "%s: transport %s%s%s%s, %s (%" PRIu64 " bytes) in %.3f s (%.1f MB/s), "
            "%u requests, %u retries, crc64nvme %016" PRIx64 "%s%s\n",
            what, transport_name(r->transport), r->provider[0] ? " (" : "", r->provider,
            r->provider[0] ? ")" : "", b, r->bytes, r->wall_s, mbs, r->requests, r->retries,
            r->crc64nvme, r->etag[0] ? ", etag " : "", r->etag);
    if (r->fell_back)
        fprintf(f, "%s: fell back to HTTP: %s\n", what, r->fallback_reason);
}

static wharf_fallback_t parse_fallback(const char *s, bool *ok)
{
    *ok = true;
    if (!s || !strcmp(s, "fail"))
        return WHARF_FALLBACK_FAIL;
    if (!strcmp(s, "http"))
        return WHARF_FALLBACK_HTTP;
    *ok = false;
    return WHARF_FALLBACK_FAIL;
}

int cli_client(const cli_t *g, wharf_client_t **out)
{
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    cfg.endpoint = g->endpoint;
    cfg.access_key = g->access_key;
    cfg.secret_key = g->secret_key;
    cfg.region = g->region;
    cfg.provider = g->provider;
    cfg.unix_socket = g->unix_socket;
    cfg.ca_bundle = g->ca_bundle;
    cfg.fallback = g->fallback;
    if (g->concurrency)
        cfg.concurrency = g->concurrency;
    if (g->chunk_size)
        cfg.chunk_size = g->chunk_size;
    cfg.verify_checksum = g->verify;
    wharf_status_t st = wharf_client_create(&cfg, out);
    if (st != WHARF_OK) {
        fprintf(stderr, "wharf: cannot create the client: %s (%s)\n", wharf_last_error(),
                wharf_status_str(st));
        return 1;
    }
    return 0;
}

int cli_fail(const char *what, wharf_status_t st)
{
    const char *m = wharf_last_error();
    fprintf(stderr, "wharf %s: %s\n", what, m && *m ? m : wharf_status_str(st));
    return 1;
}

/* ---- simple commands -------------------------------------------------------------------- */

static int need_bucket(const char *cmd, int argc, char **argv, char *bucket, const char **key)
{
    if (argc != 1 || cli_parse_s3(argv[0], bucket, 256, key) != 0) {
        fprintf(stderr, "wharf %s: expected one s3://bucket%s argument\n", cmd,
                strcmp(cmd, "mb") && strcmp(cmd, "rb") ? "/key" : "");
        return 2;
    }
    return 0;
}

static int cmd_mb_rb(const cli_t *g, const char *cmd, int argc, char **argv)
{
    char bucket[256];
    const char *key;
    int rc = need_bucket(cmd, argc, argv, bucket, &key);
    if (rc)
        return rc;
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    wharf_status_t st =
        !strcmp(cmd, "mb") ? wharf_bucket_create(c, bucket) : wharf_bucket_delete(c, bucket);
    if (st == WHARF_OK && !g->quiet)
        printf("%s: s3://%s\n", !strcmp(cmd, "mb") ? "make_bucket" : "remove_bucket", bucket);
    rc = st == WHARF_OK ? 0 : cli_fail(cmd, st);
    wharf_client_destroy(c);
    return rc;
}

static void fmt_time(int64_t t, char out[20])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 20, "%Y-%m-%d %H:%M:%S", &tm);
}

static int ls_bucket_cb(void *arg, const char *name, uint64_t length, int64_t mtime,
                        const char *etag)
{
    char t[20];
    fmt_time(mtime, t);
    printf("%s  %s\n", t, name);
    return 0;
}

static int ls_object_cb(void *arg, const char *key, uint64_t length, int64_t mtime,
                        const char *etag)
{
    char t[20];
    fmt_time(mtime, t);
    printf("%s %12" PRIu64 " %s\n", t, length, key);
    return 0;
}

static int cmd_ls(const cli_t *g, int argc, char **argv)
{
    char bucket[256];
    const char *prefix = NULL;
    if (argc > 1 || (argc == 1 && cli_parse_s3(argv[0], bucket, sizeof bucket, &prefix) != 0)) {
        fprintf(stderr, "wharf ls: expected no argument or one s3://bucket[/prefix]\n");
        return 2;
    }
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    wharf_status_t st = argc == 0 ? wharf_bucket_list(c, ls_bucket_cb, NULL)
                                  : wharf_object_list(c, bucket, prefix, ls_object_cb, NULL);
    int rc = st == WHARF_OK ? 0 : cli_fail("ls", st);
    wharf_client_destroy(c);
    return rc;
}

static int cmd_rm(const cli_t *g, int argc, char **argv)
{
    char bucket[256];
    const char *key;
    int rc = need_bucket("rm", argc, argv, bucket, &key);
    if (rc)
        return rc;
    if (!*key) {
        fprintf(stderr, "wharf rm: %s names no key; use rb to delete a bucket\n", argv[0]);
        return 2;
    }
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    wharf_status_t st = wharf_object_delete(c, bucket, key);
    if (st == WHARF_OK && !g->quiet)
        printf("delete: s3://%s/%s\n", bucket, key);
    rc = st == WHARF_OK ? 0 : cli_fail("rm", st);
    wharf_client_destroy(c);
    return rc;
}

static int cmd_stat(const cli_t *g, int argc, char **argv)
{
    char bucket[256];
    const char *key;
    int rc = need_bucket("stat", argc, argv, bucket, &key);
    if (rc)
        return rc;
    if (!*key) {
        fprintf(stderr, "wharf stat: %s names no key\n", argv[0]);
        return 2;
    }
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    wharf_status_t st = wharf_object_stat(c, bucket, key, &s);
    if (st == WHARF_OK) {
        char t[20];
        fmt_time(s.mtime, t);
        printf("key: s3://%s/%s\nsize: %" PRIu64 "\netag: %s\nlast-modified: %s UTC\n"
               "content-type: %s\n",
               bucket, key, s.length, s.etag, t, s.content_type);
        if (s.has_crc64nvme)
            printf("crc64nvme: %016" PRIx64 "\n", s.crc64nvme);
    }
    rc = st == WHARF_OK ? 0 : cli_fail("stat", st);
    wharf_client_destroy(c);
    return rc;
}

/* ---- globals and dispatch --------------------------------------------------------------- */

static const char *env_or(const wh_env_t *e, wh_env_key_t k, const char *def)
{
    return e->value[k] ? e->value[k] : def;
}

static bool is_default_endpoint(const char *ep)
{
    return !strcmp(ep, DEFAULT_ENDPOINT) || !strcmp(ep, DEFAULT_ENDPOINT "/") ||
           !strcmp(ep, "http://localhost:9000") || !strcmp(ep, "http://localhost:9000/");
}

/* Pulls the global flags (and per-command flags: --transport, --size, --bucket) out of argv,
 * leaving the command and its positional arguments in rest. */
static int parse_args(int argc, char **argv, cli_t *g, int *rargc, char **rest)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        static const char *const with_val[] = {"--endpoint",    "--access-key",
                                               "--secret-key",  "--region",
                                               "--provider",    "--unix-socket",
                                               "--fallback",    "--transport",
                                               "--concurrency", "--chunk-size",
                                               "--size",        "--bucket",
                                               "--ca-bundle",   NULL};
        const char *val = NULL;
        const char *flag = NULL;
        if (!strcmp(a, "--")) {
            while (++i < argc)
                rest[n++] = argv[i];
            break;
        }
        for (size_t k = 0; with_val[k]; k++) {
            size_t fl = strlen(with_val[k]);
            if (!strncmp(a, with_val[k], fl) && (a[fl] == '\0' || a[fl] == '=')) {
                flag = with_val[k];
                if (a[fl] == '=') {
                    val = a + fl + 1;
                } else if (i + 1 < argc) {
                    val = argv[++i];
                } else {
                    fprintf(stderr, "wharf: %s needs a value\n", flag);
                    return 2;
                }
                break;
            }
        }
        if (flag) {
            if (!strcmp(flag, "--endpoint"))
                g->endpoint = val;
            else if (!strcmp(flag, "--access-key"))
                g->access_key = val;
            else if (!strcmp(flag, "--secret-key"))
                g->secret_key = val;
            else if (!strcmp(flag, "--region"))
                g->region = val;
            else if (!strcmp(flag, "--provider"))
                g->provider = val;
            else if (!strcmp(flag, "--unix-socket"))
                g->unix_socket = val;
            else if (!strcmp(flag, "--ca-bundle"))
                g->ca_bundle = val;
            else if (!strcmp(flag, "--fallback"))
                g->fallback_s = val;
            else if (!strcmp(flag, "--transport"))
                g->transport = val;
            else if (!strcmp(flag, "--bucket"))
                g->bucket = val;
            else if (!strcmp(flag, "--concurrency")) {
                uint64_t v;
                if (wh_parse_u64(val, strlen(val), &v) != 0 || v == 0 || v > 64) {
                    fprintf(stderr, "wharf: --concurrency must be 1..64\n");
                    return 2;
                }
                g->concurrency = (unsigned)v;
            } else {
                uint64_t v;
                if (wh_parse_size(val, &v) != 0 || v == 0) {
                    fprintf(stderr,
                            "wharf: %s takes a size (" WH_SIZE_SYNTAX "), such as 64M, "
                            "not %s\n",
                            flag, val);
                    return 2;
                }
                if (!strcmp(flag, "--size"))
                    g->size = v;
                else
                    g->chunk_size = v;
            }
            continue;
        }
        if (!strcmp(a, "--no-verify"))
            g->verify = 0;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            g->quiet = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            g->help = true;
        else if (!strcmp(a, "--version"))
            g->version = true;
        else
            rest[n++] = argv[i];
    }
    *rargc = n;
    return 0;
}

/* admin cluster [--json]: what GET /?x-wharf-cluster answers (root's credentials only);
 * the same dashboard as `wharfd node status`, without access to the database. */
static int cmd_admin(const cli_t *g, int argc, char **argv)
{
    bool json = false;
    const char *what = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!what)
            what = argv[i];
        else {
            fprintf(stderr, "wharf admin: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!what || strcmp(what, "cluster") != 0) {
        fprintf(stderr, "wharf admin: expected 'cluster' [--json], got %s\n",
                what ? what : "nothing");
        return 2;
    }
    wharf_client_t *c;
    if (cli_client(g, &c))
        return 1;
    size_t cap = 64 << 10, len = 0;
    char *buf = NULL;
    wharf_status_t st = WHARF_ERR_NOMEM;
    for (int round = 0; round < 3; round++) { /* the dashboard may grow between two calls */
        free(buf);
        if (!(buf = malloc(cap))) {
            st = WHARF_ERR_NOMEM;
            break;
        }
        st = wharf_admin_cluster(c, json, buf, cap, &len);
        if (st != WHARF_ERR_TOO_LARGE)
            break;
        cap = len + 4096;
    }
    int rc = 0;
    if (st == WHARF_OK)
        fputs(buf, stdout);
    else
        rc = cli_fail("admin cluster", st);
    free(buf);
    wharf_client_destroy(c);
    return rc;
}

int main(int argc, char **argv)
{
    cli_t g;
    memset(&g, 0, sizeof g);
    g.verify = 1;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 1;
    int n = 0;
    int rc = parse_args(argc, argv, &g, &n, rest);
    if (rc)
        goto out;
    if (g.version) {
        printf("wharf %s\n", wharf_version());
        goto out;
    }
    if (g.help || n == 0) {
        usage(g.help ? stdout : stderr);
        rc = g.help ? 0 : 2;
        goto out;
    }
    wh_env_t env;
    wh_env_read(&env, NULL);
    if (!g.endpoint)
        g.endpoint = env_or(&env, WH_ENV_ENDPOINT, DEFAULT_ENDPOINT);
    if (!g.access_key)
        g.access_key = env_or(&env, WH_ENV_ACCESS_KEY, WH_DEV_ACCESS_KEY);
    if (!g.secret_key)
        g.secret_key = env_or(&env, WH_ENV_SECRET_KEY, WH_DEV_SECRET_KEY);
    if (!g.region)
        g.region = env_or(&env, WH_ENV_REGION, WH_DEFAULT_REGION);
    if (!g.provider)
        g.provider = env_or(&env, WH_ENV_PROVIDER, "auto");
    if (!g.fallback_s) {
        const char *f = getenv("WHARF_FALLBACK");
        g.fallback_s = f && *f ? f : "fail";
    }
    if (!g.unix_socket)
        g.unix_socket = env_or(&env, WH_ENV_UNIX_SOCKET, NULL);
    if (!g.ca_bundle)
        g.ca_bundle = env_or(&env, WH_ENV_CA_BUNDLE, NULL);
    if (!g.unix_socket && is_default_endpoint(g.endpoint) &&
        access("./data/" WH_DEFAULT_UNIX_SOCKET_NAME, F_OK) == 0)
        g.unix_socket = "./data/" WH_DEFAULT_UNIX_SOCKET_NAME;
    if (g.unix_socket && !*g.unix_socket)
        g.unix_socket = NULL;
    bool ok;
    g.fallback = parse_fallback(g.fallback_s, &ok);
    if (!ok) {
        fprintf(stderr, "wharf: --fallback must be fail or http, not %s\n", g.fallback_s);
        rc = 2;
        goto out;
    }

    const char *cmd = rest[0];
    int cargc = n - 1;
    char **cargv = rest + 1;
    if (!strcmp(cmd, "mb") || !strcmp(cmd, "rb"))
        rc = cmd_mb_rb(&g, cmd, cargc, cargv);
    else if (!strcmp(cmd, "ls"))
        rc = cmd_ls(&g, cargc, cargv);
    else if (!strcmp(cmd, "rm"))
        rc = cmd_rm(&g, cargc, cargv);
    else if (!strcmp(cmd, "stat"))
        rc = cmd_stat(&g, cargc, cargv);
    else if (!strcmp(cmd, "cp"))
        rc = cli_cp(&g, cargc, cargv);
    else if (!strcmp(cmd, "verify"))
        rc = cli_verify(&g, cargc, cargv);
    else if (!strcmp(cmd, "admin"))
        rc = cmd_admin(&g, cargc, cargv);
    else if (!strcmp(cmd, "bench") || !strcmp(cmd, "report")) {
        /* the benchmark is its own program (bench/wharf_bench.c says why) */
        fprintf(stderr, "wharf: the benchmark is a program of its own: %s\n",
                !strcmp(cmd, "bench") ? "build/bench/wharf_bench fetch|put|rdma-vs-http|limits ..."
                                      : "build/bench/wharf_bench report RESULTS_DIR");
        rc = 2;
    } else {
        fprintf(stderr, "wharf: unknown command %s\n", cmd);
        usage(stderr);
        rc = 2;
    }
out:
    free(rest);
    return rc;
}
