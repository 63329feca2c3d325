/* What the roles share (roles.h), and `wharfd storage ...`. main.c dispatches by the first
 * argument; `wharfd serve` stays in main.c, `wharfd gateway` is gateway.c. An S3 front is
 * assembled here only (srv_s3_front_start): the roles open the store, the identities and the
 * RDMA engine and hand them, with the S3 API, to the front. */
#include "roles/roles.h"
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
               "\n"
               "A storage server of a cluster: registers itself in the metadata database\n"
               "(address, capacity, heartbeat), keeps chunks under DIR, serves gateways over an\n"
               "internal HTTP API and moves bytes to and from client memory by RDMA itself.\n"
               "Every internal request must carry a token signed with WHARF_CLUSTER_SECRET\n"
               "(environment; the same on every gateway and storage server).\n"
               "\n"
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
               "                       answers 501 to a push and the gateway relays the copy\n");
    return 0;
}

int srv_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "wharfd: ");
    fprintf(stderr, fmt, arg);
    if (cmd)
        fprintf(stderr, "\nrun 'wharfd %s --help' for the options\n", cmd);
    else
        fprintf(stderr, "\nrun 'wharfd --help' for the options\n");
    return 2;
}

static int bad(const char *fmt, const char *arg)
{
    return srv_usage_error("storage", fmt, arg);
}

void srv_common_init(srv_common_t *co, const char *cmd)
{
    memset(co, 0, sizeof *co);
    co->cmd = cmd;
    co->log_level = WH_LOG_INFO;
}

static int common_bad(const srv_common_t *co, const char *fmt, const char *arg)
{
    return srv_usage_error(co->cmd, fmt, arg);
}

int srv_common_opt(srv_common_t *co, int c, const char *arg)
{
    switch (c) {
    case SRV_OPT_REGION:
        if (!*arg || strlen(arg) > 63)
            return common_bad(co, "--region wants a region name, got '%s'", arg);
        co->region = arg;
        return 1;
    case SRV_OPT_LOG:
        if (wh_log_parse_level(arg, &co->log_level) != 0)
            return common_bad(co, "--log-level wants error, warn, info, debug or trace, got '%s'",
                              arg);
        return 1;
    case SRV_OPT_PROVIDERS:
        co->providers = arg;
        return 1;
    case SRV_OPT_RDMA_MEM:
        if (wh_parse_size(arg, &co->rdma_mem) != 0 || co->rdma_mem == 0)
            return common_bad(co,
                              "--rdma-mem wants a size (" WH_SIZE_SYNTAX "), such as 256M, "
                              "got '%s'",
                              arg);
        return 1;
    case SRV_OPT_KEY_FILE:
        co->server_key_file = arg;
        return 1;
    case SRV_OPT_TLS_CERT:
        co->tls_cert = arg;
        return 1;
    case SRV_OPT_TLS_KEY:
        co->tls_key = arg;
        return 1;
    case SRV_OPT_LIFECYCLE: {
        uint64_t v;
        if (wh_parse_u64(arg, strlen(arg), &v) != 0 || v < 1 || v > 604800)
            return common_bad(co, "--lifecycle-period wants seconds from 1 to 604800, got '%s'",
                              arg);
        co->lifecycle_period_s = (unsigned)v;
        return 1;
    }
    case SRV_OPT_ACCOUNT:
        if (!srv_ident_account_arg(arg))
            return 2;
        co->account_id = arg;
        return 1;
    default:
        return 0;
    }
}

int srv_common_apply(const srv_common_t *co, srv_config_t *cfg)
{
    if (co->providers)
        cfg->rdma.providers = co->providers;
    if (co->rdma_mem)
        cfg->rdma.mem_budget = co->rdma_mem;
    if (co->region)
        cfg->region = co->region;
    cfg->server_key_file = co->server_key_file;
    if (!co->tls_cert != !co->tls_key)
        return common_bad(co, "%sTLS needs both --tls-cert FILE and --tls-key FILE", "");
    cfg->tls_cert = co->tls_cert;
    cfg->tls_key = co->tls_key;
    if (co->lifecycle_period_s)
        cfg->lifecycle_period_s = co->lifecycle_period_s;
    if (!(cfg->account_id = srv_ident_account_arg(co->account_id)))
        return 2;
    wh_log_set_level(co->log_level);
    /* Root's key pair. */
    cfg->access_key = getenv("WHARF_ACCESS_KEY");
    cfg->secret_key = getenv("WHARF_SECRET_KEY");
    if (!cfg->access_key || !*cfg->access_key || !cfg->secret_key || !*cfg->secret_key) {
        cfg->access_key = WH_DEV_ACCESS_KEY;
        cfg->secret_key = WH_DEV_SECRET_KEY;
        fprintf(stderr,
                "wharfd: WHARF_ACCESS_KEY/WHARF_SECRET_KEY unset; using the development "
                "credentials access_key=%s secret_key=%s\n",
                cfg->access_key, cfg->secret_key);
    }
    return 0;
}

int srv_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port, bool any_port)
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

const char *srv_cluster_secret(void)
{
    const char *s = getenv("WHARF_CLUSTER_SECRET");
    if (!s || strlen(s) < 16) {
        fprintf(stderr, "wharfd: WHARF_CLUSTER_SECRET must be set to the cluster's shared "
                        "secret (16 characters or more), the same on every gateway and "
                        "storage server\n");
        return NULL;
    }
    return s;
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

void srv_front_hup(void *srv)
{
    srv_reload_tls(srv);
}

static void storage_hup(void *s)
{
    srv_storage_reload_tls(s);
}

void srv_wait_signals(void (*on_hup)(void *arg), void *arg)
{
    sigset_t set;
    signal_set(&set);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            if (on_hup)
                on_hup(arg);
            continue;
        }
        wh_info("main", "signal received sig=%s, shutting down", sig == SIGTERM ? "TERM" : "INT");
        return;
    }
}

void srv_block_signals(void)
{
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

wh_status_t srv_s3_front_start(const srv_config_t *cfg, store_t *st, srv_t **out)
{
    srv_parts_t parts = {.app = &srv_s3_app, .store = st, .console = &srv_console_app};
    char kbuf[1024];
    bool create = false;
    const char *kf =
        srv_ident_key_path(cfg->server_key_file, cfg->data_dir, kbuf, sizeof kbuf, &create);
    srv_ident_config_t icfg = {.meta = store_meta(st),
                               .key_file = kf,
                               .create_key = create,
                               .account_id = cfg->account_id,
                               .root_access_key = cfg->access_key};
    if (!kf)
        wh_warn("http", "no server key file (--server-key-file): only the root key signs "
                        "requests; users' access keys cannot be used");
    wh_status_t s = srv_ident_open(&icfg, &parts.ident);
    if (s != WH_OK) {
        store_close(st);
        return s;
    }
    srv_rdma_config_t rcfg = cfg->rdma;
    if (!rcfg.node && strcmp(cfg->listen_host, "0.0.0.0") != 0)
        rcfg.node = cfg->listen_host; /* fabric listeners only where HTTP listens */
    if ((s = srv_rdma_init(&rcfg, &parts.rdma)) != WH_OK) {
        wh_error("http", "cannot start the rdma engine providers=%s: %s", cfg->rdma.providers,
                 wh_status_str(s));
        srv_ident_close(parts.ident);
        store_close(st);
        return s;
    }
    return srv_start(cfg, &parts, out);
}

int srv_storage_main(int argc, char **argv)
{
    srv_storage_config_t cfg;
    srv_storage_config_init(&cfg);
    char host[64] = "127.0.0.1";
    bool have_listen = false;
    srv_common_t co;
    srv_common_init(&co, "storage");
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
        SRV_OPTS_RDMA,
        SRV_OPTS_TLS,
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
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
            if (srv_parse_listen(optarg, host, sizeof host, &cfg.listen_port, false) != 0)
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
            int h = srv_common_opt(&co, c, optarg);
            if (h == 2)
                return 2;
            if (h == 0)
                return bad("unknown option '%s'", argv[optind - 1]);
            break;
        }
        }
    }
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
    if (!(cfg.secret = srv_cluster_secret()))
        return 2;
    cfg.listen_host = host;
    if (co.providers)
        cfg.rdma.providers = co.providers;
    if (co.rdma_mem)
        cfg.rdma.mem_budget = co.rdma_mem;
    wh_log_set_level(co.log_level);
    if (!co.tls_cert != !co.tls_key)
        return bad("%sTLS needs both --tls-cert FILE and --tls-key FILE", "");
    cfg.tls_cert = co.tls_cert;
    cfg.tls_key = co.tls_key;
    srv_block_signals();
    srv_storage_t *s = NULL;
    wh_status_t st = srv_storage_start(&cfg, &s);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot start the storage server: %s (see the log above)\n",
                wh_status_str(st));
        return 1;
    }
    printf("wharfd storage serving %s://%s:%u data=%s\n", cfg.tls_cert ? "https" : "http", host,
           (unsigned)cfg.listen_port, cfg.data_dir);
    fflush(stdout);
    srv_wait_signals(storage_hup, s);
    srv_storage_stop(s);
    return 0;
}
