/* SPDX-License-Identifier: Apache-2.0 */
/* What the roles share (roles.h), and `wharfd storage ...`. main.c dispatches by the first
 * argument; `wharfd serve` stays in main.c, `wharfd gateway` is gateway.c. An S3 front is
 * assembled here only (role_s3_front_start): the roles open the store, the identities and the
 * RDMA engine and hand them, with the S3 API, to the front. */
#include "roles/roles.h"
#include "roles/config.h"
#include "base/log.h"
#include "base/util.h"
#include "base/defaults.h"
#include "ident/identity.h"
#include "front/front.h"
#include "roles/storage.h"
#include "s3api/s3api.h"
#include "console/console.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int role_usage(FILE *f)
{
    fprintf(f, "usage: wharfd storage --meta postgresql://USER@HOST:PORT/DB --data DIR\n"
               "                      --listen HOST:PORT [--providers LIST] [--rdma-mem BYTES]\n"
               "       wharfd storage --config FILE [options] [--print-config]\n"
               "\n"
               "A storage server of a cluster: registers itself in the metadata database\n"
               "(address, capacity, heartbeat), keeps chunks under DIR, serves gateways over an\n"
               "internal HTTP API and moves bytes to and from client memory by RDMA itself.\n"
               "Every internal request must carry a token signed with WHARF_CLUSTER_SECRET\n"
               "(environment; the same on every gateway and storage server).\n"
               "\n"
               "  --meta URL           the cluster's PostgreSQL (registration and heartbeat)\n"
               "  --data DIR           where this server keeps its chunks (created)\n"
               "  --listen HOST:PORT   address of the internal API; gateways reach it there, so\n"
               "                       give an address they can route to (0.0.0.0 is refused)\n"
               "  --providers LIST     RDMA providers: shm,tcp (default) or none\n"
               "  --rdma-mem BYTES     registered buffer budget (default: sized from the host,\n"
               "                       within RLIMIT_MEMLOCK where the provider pins; K/M/G ok)\n"
               "  --scrub-rate BYTES   bytes per second the scrubber reads to verify every chunk\n"
               "                       against its block checksums (default 32M; 0: off)\n"
               "  --scrub-interval SECS  pause between two scrub passes (default 604800)\n"
               "  --zone NAME          failure domain (rack, room, site: 1 to 63 of A-Z a-z\n"
               "                       0-9 . _ -): a chunk's copies go to distinct zones where\n"
               "                       there are enough (default none)\n"
               "  --log-level LEVEL    error, warn, info (default), debug, trace\n"
               "  --tls-cert FILE --tls-key FILE  serve the internal API over HTTPS only (give\n"
               "                       the gateways --cluster-ca); SIGHUP reloads the pair\n"
               "  --cluster-ca FILE    the other storage servers serve HTTPS: dial them so when\n"
               "                       sending a copy (repair, drain), verifying their\n"
               "                       certificates with these CAs; a TLS server without it\n"
               "                       answers 501 to a push and the gateway relays the copy\n"
               "  --shutdown-grace S   at SIGTERM, refuse new connections and wait up to S s\n"
               "                       (0..3600, default 30) for the requests in flight\n"
               "  --cluster-secret-file F  the cluster's shared secret, its first line (else\n"
               "                       WHARF_CLUSTER_SECRET); refused if others may read it\n"
               "  --meta-password-file F  PostgreSQL's password, its first line (given to\n"
               "                       libpq as PGPASSWORD); refused if others may read it\n"
               "  --config FILE        read the options from FILE (an ini file: key = value, the\n"
               "                       option's name with _ for -); an option given here wins\n"
               "  --print-config       print the effective settings, each with its source\n"
               "                       (command line, FILE:LINE, environment, default), and exit\n"
               "\n"
               "SIGHUP reads FILE again (log_level and shutdown_grace change live; other changed\n"
               "keys are logged as needing a restart; a bad file changes nothing) and the TLS\n"
               "pair. SIGTERM or SIGINT drains (--shutdown-grace) and exits 0. With\n"
               "NOTIFY_SOCKET set (systemd Type=notify) it says READY=1, RELOADING=1,\n"
               "STOPPING=1 and WATCHDOG=1.\n");
    return 0;
}

int role_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "wharfd: ");
    role_conf_where(stderr);
    fprintf(stderr, fmt, arg);
    if (cmd)
        fprintf(stderr, "\nrun 'wharfd %s --help' for the options\n", cmd);
    else
        fprintf(stderr, "\nrun 'wharfd --help' for the options\n");
    return 2;
}

static int bad(const char *fmt, const char *arg)
{
    return role_usage_error("storage", fmt, arg);
}

void role_common_init(role_common_t *co, const char *cmd)
{
    memset(co, 0, sizeof *co);
    co->cmd = cmd;
    co->log_level = WH_LOG_INFO;
}

static int common_bad(const role_common_t *co, const char *fmt, const char *arg)
{
    return role_usage_error(co->cmd, fmt, arg);
}

int role_common_opt(role_common_t *co, int c, const char *arg)
{
    switch (c) {
    case ROLE_OPT_REGION:
        if (!*arg || strlen(arg) > 63)
            return common_bad(co, "--region wants a region name, got '%s'", arg);
        co->region = arg;
        return 1;
    case ROLE_OPT_SIGV2:
        if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0)
            return common_bad(co, "--sigv2 wants on or off, got '%s'", arg);
        co->sigv2_off = strcmp(arg, "off") == 0;
        return 1;
    case ROLE_OPT_LOG:
        if (wh_log_parse_level(arg, &co->log_level) != 0)
            return common_bad(co, "--log-level wants error, warn, info, debug or trace, got '%s'",
                              arg);
        return 1;
    case ROLE_OPT_PROVIDERS:
        co->providers = arg;
        return 1;
    case ROLE_OPT_RDMA_MEM:
        if (wh_parse_size(arg, &co->rdma_mem) != 0 || co->rdma_mem == 0)
            return common_bad(co,
                              "--rdma-mem wants a size (" WH_SIZE_SYNTAX "), such as 256M, "
                              "got '%s'",
                              arg);
        return 1;
    case ROLE_OPT_KEY_FILE:
        co->server_key_file = arg;
        return 1;
    case ROLE_OPT_TLS_CERT:
        co->tls_cert = arg;
        return 1;
    case ROLE_OPT_TLS_KEY:
        co->tls_key = arg;
        return 1;
    case ROLE_OPT_LIFECYCLE: {
        uint64_t v;
        if (wh_parse_u64(arg, strlen(arg), &v) != 0 || v < 1 || v > 604800)
            return common_bad(co, "--lifecycle-period wants seconds from 1 to 604800, got '%s'",
                              arg);
        co->lifecycle_period_s = (unsigned)v;
        return 1;
    }
    case ROLE_OPT_ACCOUNT:
        if (!ident_account_arg(arg))
            return 2;
        co->account_id = arg;
        return 1;
    case ROLE_OPT_SHUTDOWN_GRACE: {
        uint64_t v;
        if (wh_parse_u64(arg, strlen(arg), &v) != 0 || v > 3600)
            return common_bad(co, "--shutdown-grace wants seconds from 0 to 3600, got '%s'", arg);
        co->shutdown_grace_s = v ? (unsigned)v : UINT32_MAX; /* UINT32_MAX: 0 given */
        return 1;
    }
    case ROLE_OPT_ACCESS_KEY:
        if (!*arg || strlen(arg) > 128)
            return common_bad(co,
                              "--access-key wants an access key id (1 to 128 characters), "
                              "got '%s'",
                              arg);
        co->access_key = arg;
        return 1;
    case ROLE_OPT_SECRET_KEY_FILE:
        co->secret_key_file = arg;
        return 1;
    case ROLE_OPT_META_PW_FILE:
        co->meta_password_file = arg;
        return 1;
    case ROLE_OPT_CLUSTER_SECRET_FILE:
        co->cluster_secret_file = arg;
        return 1;
    case ROLE_OPT_HTTP_THREADS:
    case ROLE_OPT_HANDLER_THREADS:
    case ROLE_OPT_MAX_CONNS:
    case ROLE_OPT_MAX_CONNS_IP:
    case ROLE_OPT_IDLE_TIMEOUT:
    case ROLE_OPT_HEADER_TIMEOUT:
    case ROLE_OPT_MAX_UPLOADS:
    case ROLE_OPT_MAX_BUCKETS: {
        static const struct {
            const char *fmt;
            unsigned max;
        } lim[] = {{"--http-threads wants a whole number from 1 to 256, got '%s'", 256},
                   {"--handler-threads wants a whole number from 1 to 65536, got '%s'", 65536},
                   {"--max-conns wants a whole number from 1 to 1000000, got '%s'", 1000000},
                   {"--max-conns-per-ip wants a whole number from 1 to 1000000, got '%s'", 1000000},
                   {"--idle-timeout wants a whole number from 1 to 86400, got '%s'", 86400},
                   {"--header-timeout wants a whole number from 1 to 86400, got '%s'", 86400},
                   {"--max-uploads wants a whole number from 1 to 100000000, got '%s'", 100000000},
                   {"--max-buckets wants a whole number from 1 to 1000000, got '%s'", 1000000}};
        size_t i = (size_t)(c - ROLE_OPT_HTTP_THREADS);
        uint64_t v;
        if (wh_parse_u64(arg, strlen(arg), &v) != 0 || v < 1 || v > lim[i].max)
            return common_bad(co, lim[i].fmt, arg);
        co->front[i] = (unsigned)v;
        return 1;
    }
    default:
        return 0;
    }
}

/* Secrets read from files, held for the process's life (reachable, for LeakSanitizer). */
static char *g_root_secret, *g_cluster_secret;

/* s, kept in *slot for the process; a check (check-config, --print-config, a reload's) only
 * validated it, and the running process's copy stays as it is: a placeholder comes back. */
static const char *keep_secret(char **slot, char *s)
{
    if (role_conf_stop_here()) {
        free(s);
        return "(checked)";
    }
    free(*slot);
    *slot = s;
    return s;
}

int role_common_apply(const role_common_t *co, front_config_t *cfg)
{
    if (co->providers)
        cfg->rdma.providers = co->providers;
    if (co->rdma_mem)
        cfg->rdma.mem_budget = co->rdma_mem;
    if (co->region)
        cfg->region = co->region;
    cfg->sigv2_off = co->sigv2_off;
    cfg->server_key_file = co->server_key_file;
    if (!co->tls_cert != !co->tls_key)
        return common_bad(co, "%sTLS needs both --tls-cert FILE and --tls-key FILE", "");
    cfg->tls_cert = co->tls_cert;
    cfg->tls_key = co->tls_key;
    if (co->lifecycle_period_s)
        cfg->lifecycle_period_s = co->lifecycle_period_s;
    cfg->shutdown_grace_s = co->shutdown_grace_s == UINT32_MAX ? 0
                            : co->shutdown_grace_s             ? co->shutdown_grace_s
                                                               : ROLE_SHUTDOWN_GRACE_DEFAULT;
    unsigned *front[] = {&cfg->http_threads,     &cfg->handler_threads, &cfg->max_conns,
                         &cfg->max_conns_per_ip, &cfg->conn_timeout_s,  &cfg->header_timeout_s};
    for (size_t i = 0; i < sizeof front / sizeof front[0]; i++)
        if (co->front[i])
            *front[i] = co->front[i];
    if (co->front[6])
        cfg->max_uploads = co->front[6];
    if (co->front[7])
        cfg->max_buckets = co->front[7];
    if (!(cfg->account_id = ident_account_arg(co->account_id)))
        return 2;
    const char *kf = co->server_key_file;
    if (!kf || !*kf)
        kf = getenv("WHARF_SERVER_KEY_FILE");
    if (kf && *kf && access(kf, F_OK) == 0 && role_conf_secret_mode("server_key_file", kf) != 0)
        return 2;
    /* Root's key pair: the access key from --access-key or WHARF_ACCESS_KEY, the secret from
     * --secret-key-file or WHARF_SECRET_KEY, never from a flag's value. */
    cfg->access_key = co->access_key ? co->access_key : getenv("WHARF_ACCESS_KEY");
    if (co->secret_key_file) {
        char *sk = NULL;
        if (role_conf_read_secret("secret_key_file", co->secret_key_file, &sk) != 0)
            return 2;
        cfg->secret_key = keep_secret(&g_root_secret, sk);
    } else
        cfg->secret_key = getenv("WHARF_SECRET_KEY");
    bool has_a = cfg->access_key && *cfg->access_key;
    bool has_s = cfg->secret_key && *cfg->secret_key;
    if (has_a != has_s)
        return common_bad(co,
                          "%sroot's key pair needs both an access key (--access-key or "
                          "WHARF_ACCESS_KEY) and a secret (--secret-key-file or "
                          "WHARF_SECRET_KEY)",
                          "");
    if (role_conf_stop_here())
        return 0;
    wh_log_set_level(co->log_level);
    if (!has_a) {
        cfg->access_key = WH_DEV_ACCESS_KEY;
        cfg->secret_key = WH_DEV_SECRET_KEY;
        fprintf(stderr,
                "wharfd: WHARF_ACCESS_KEY/WHARF_SECRET_KEY unset; using the development "
                "credentials access_key=%s secret_key=%s\n",
                cfg->access_key, cfg->secret_key);
    }
    return 0;
}

int role_common_meta(const role_common_t *co, const char *url)
{
    if (co->meta_password_file) {
        char *pw = NULL;
        if (role_conf_read_secret("meta_password_file", co->meta_password_file, &pw) != 0)
            return 2;
        if (!role_conf_stop_here())
            setenv("PGPASSWORD", pw, 1); /* before any thread: libpq reads it at connect */
        free(pw);
    }
    const char *s = url ? strstr(url, "://") : NULL;
    const char *at = s ? strchr(s + 3, '@') : NULL;
    const char *colon = s ? strchr(s + 3, ':') : NULL;
    if (at && colon && colon < at && role_conf_on_command_line("meta") && !role_conf_stop_here())
        wh_warn("main", "--meta carries a password on the command line, where every local "
                        "user can read it (ps); give it in meta_password_file or the "
                        "configuration file instead");
    return 0;
}

int role_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port, bool any_port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
        return -1;
    uint64_t p;
    if (wh_parse_u64(colon + 1, strlen(colon + 1), &p) != 0 || (p == 0 && !any_port) || p > 65535)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    *port = (uint16_t)p;
    return 0;
}

const char *role_cluster_secret(const role_common_t *co)
{
    if (co->cluster_secret_file) {
        char *s = NULL;
        if (role_conf_read_secret("cluster_secret_file", co->cluster_secret_file, &s) != 0)
            return NULL;
        if (strlen(s) >= 16)
            return keep_secret(&g_cluster_secret, s);
        free(s);
        fprintf(stderr,
                "wharfd: cluster_secret_file %s: the secret must be 16 characters or "
                "more\n",
                co->cluster_secret_file);
        return NULL;
    }
    const char *s = getenv("WHARF_CLUSTER_SECRET");
    if (role_conf_stop_here() && (!s || !*s))
        return ""; /* check-config, --print-config: the service's environment may have it */
    if (!s || strlen(s) < 16) {
        fprintf(stderr, "wharfd: the cluster's shared secret (16 characters or more, the same "
                        "on every gateway and storage server) must be in the file "
                        "--cluster-secret-file names or in WHARF_CLUSTER_SECRET\n");
        return NULL;
    }
    return s;
}

wh_status_t role_s3_front_start(const front_config_t *cfg, store_t *st, front_t **out)
{
    front_parts_t parts = {.app = &s3api_app, .store = st, .console = &console_app};
    char kbuf[1024];
    bool create = false;
    const char *kf =
        ident_key_path(cfg->server_key_file, cfg->data_dir, kbuf, sizeof kbuf, &create);
    ident_config_t icfg = {.meta = store_meta(st),
                           .key_file = kf,
                           .create_key = create,
                           .account_id = cfg->account_id,
                           .root_access_key = cfg->access_key};
    if (!kf)
        wh_warn("http", "no server key file (--server-key-file): only the root key signs "
                        "requests; users' access keys cannot be used");
    wh_status_t s = ident_open(&icfg, &parts.ident);
    if (s != WH_OK) {
        store_close(st);
        return s;
    }
    rdma_config_t rcfg = cfg->rdma;
    if (!rcfg.node && strcmp(cfg->listen_host, "0.0.0.0") != 0)
        rcfg.node = cfg->listen_host; /* fabric listeners only where HTTP listens */
    if ((s = rdma_init(&rcfg, &parts.rdma)) != WH_OK) {
        wh_error("http", "cannot start the rdma engine providers=%s: %s", cfg->rdma.providers,
                 wh_status_str(s));
        ident_close(parts.ident);
        store_close(st);
        return s;
    }
    return front_start(cfg, &parts, out);
}

int role_storage_main(int argc, char **argv)
{
    role_storage_config_t cfg;
    role_storage_config_init(&cfg);
    char host[64] = "127.0.0.1";
    bool have_listen = false;
    role_common_t co;
    role_common_init(&co, "storage");
    enum {
        O_META = 1,
        O_DATA,
        O_LISTEN,
        O_SCRUB_RATE,
        O_SCRUB_INTERVAL,
        O_ZONE,
        O_CLUSTER_CA,
        O_HELP
    };
    static const struct option opts[] = {
        {"meta", required_argument, NULL, O_META},
        {"data", required_argument, NULL, O_DATA},
        {"listen", required_argument, NULL, O_LISTEN},
        {"scrub-rate", required_argument, NULL, O_SCRUB_RATE},
        {"scrub-interval", required_argument, NULL, O_SCRUB_INTERVAL},
        {"zone", required_argument, NULL, O_ZONE},
        {"cluster-ca", required_argument, NULL, O_CLUSTER_CA},
        ROLE_OPTS_RDMA,
        ROLE_OPTS_TLS,
        ROLE_OPTS_CLUSTER,
        {"shutdown-grace", required_argument, NULL, ROLE_OPT_SHUTDOWN_GRACE},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    if (role_conf_begin("storage", role_storage_main, opts, &argc, &argv) != 0)
        return 2;
    opterr = 0;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_META:
            cfg.meta_url = optarg;
            break;
        case O_DATA:
            cfg.data_dir = optarg;
            break;
        case O_LISTEN:
            if (role_parse_listen(optarg, host, sizeof host, &cfg.listen_port, false) != 0)
                return bad("--listen wants HOST:PORT (e.g. 10.0.0.2:9100), got '%s'", optarg);
            have_listen = true;
            break;
        case O_SCRUB_RATE:
            if (wh_parse_size(optarg, &cfg.scrub_rate) != 0)
                return bad("--scrub-rate wants bytes per second (e.g. 32M, 0 for off), got '%s'",
                           optarg);
            break;
        case O_SCRUB_INTERVAL: {
            uint64_t v = 0;
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v > 86400 * 365)
                return bad("--scrub-interval wants seconds (0..31536000), got '%s'", optarg);
            cfg.scrub_interval_s = (unsigned)v;
            break;
        }
        case O_ZONE: {
            size_t zl = strlen(optarg);
            bool ok = zl >= 1 && zl <= 63;
            for (size_t i = 0; ok && i < zl; i++)
                ok = (optarg[i] >= 'a' && optarg[i] <= 'z') ||
                     (optarg[i] >= 'A' && optarg[i] <= 'Z') ||
                     (optarg[i] >= '0' && optarg[i] <= '9') || strchr("._-", optarg[i]);
            if (!ok)
                return bad("--zone wants 1 to 63 of A-Z a-z 0-9 . _ - (e.g. rack-1), got '%s'",
                           optarg);
            cfg.zone = optarg;
            break;
        }
        case O_CLUSTER_CA:
            if (access(optarg, R_OK) != 0)
                return bad("--cluster-ca wants a readable PEM file of CAs, got '%s'", optarg);
            cfg.cluster_ca = optarg;
            break;
        case O_HELP:
            return role_usage(stdout);
        case ':':
            return bad("option %s needs a value", argv[optind - 1]);
        default: {
            int h = role_common_opt(&co, c, optarg);
            if (h == 2)
                return 2;
            if (h == 0)
                return bad("unknown option '%s'", argv[optind - 1]);
            break;
        }
        }
    }
    role_conf_parsed();
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!cfg.data_dir)
        return bad("%s--data DIR is required", "");
    if (!cfg.meta_url)
        return bad("%s--meta postgresql://USER@HOST:PORT/DB is required", "");
    if (!have_listen)
        return bad("%s--listen HOST:PORT is required (the address gateways reach)", "");
    /* The listen address is the one registered for gateways to dial: a wildcard would be
     * registered as is, and no gateway can dial it. */
    struct in_addr ia;
    if (inet_pton(AF_INET, host, &ia) == 1 && ia.s_addr == htonl(INADDR_ANY))
        return bad("--listen %s: gateways dial the address a storage server registers, and "
                   "no one can dial 0.0.0.0; give this host's address they route to (e.g. "
                   "10.0.0.2:9100)",
                   host);
    if (!co.tls_cert != !co.tls_key)
        return bad("%sTLS needs both --tls-cert FILE and --tls-key FILE", "");
    if (!(cfg.secret = role_cluster_secret(&co)))
        return 2;
    if (role_common_meta(&co, cfg.meta_url) != 0)
        return 2;
    if (role_conf_stop_here())
        return role_conf_finish();
    cfg.listen_host = host;
    if (co.providers)
        cfg.rdma.providers = co.providers;
    if (co.rdma_mem)
        cfg.rdma.mem_budget = co.rdma_mem;
    wh_log_set_level(co.log_level);
    cfg.tls_cert = co.tls_cert;
    cfg.tls_key = co.tls_key;
    if (co.shutdown_grace_s)
        cfg.shutdown_grace_s = co.shutdown_grace_s == UINT32_MAX ? 0 : co.shutdown_grace_s;
    role_block_signals();
    role_storage_t *s = NULL;
    wh_status_t st = role_storage_start(&cfg, &s);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot start the storage server: %s (see the log above)\n",
                wh_status_str(st));
        return 1;
    }
    printf("wharfd storage serving %s://%s:%u data=%s\n", cfg.tls_cert ? "https" : "http", host,
           (unsigned)cfg.listen_port, cfg.data_dir);
    fflush(stdout);
    role_wait_signals(role_storage_hup, s);
    role_storage_stop(s);
    role_notify_done();
    return 0;
}
