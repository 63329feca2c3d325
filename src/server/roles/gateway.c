/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway role: `wharfd gateway --meta URL --listen HOST:PORT ...`: the S3 front (the
 * same HTTP server and handlers as `wharfd serve`) over a store whose metadata table is
 * PostgreSQL and whose data table is the cluster's storage servers (cluster/remote.h). The
 * process keeps no state of its own, so any number of gateways may serve one cluster. */
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/remote.h"
#include "ident/identity.h"
#include "roles/roles.h"
#include "roles/config.h"
#include "front/front.h"
#include "meta/meta.h"
#include "store/store.h"
#include "s3api/s3api.h"

#include <getopt.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int gw_usage(FILE *f)
{
    fprintf(f,
            "usage: wharfd gateway --meta postgresql://USER@HOST:PORT/DB --listen HOST:PORT\n"
            "                      [--unix PATH] [--replicas N] [--providers LIST] [options]\n"
            "\n"
            "A cluster's S3 front: SigV4, buckets, listings, multipart and placement, with\n"
            "metadata in PostgreSQL and object bytes on the storage servers that registered\n"
            "there. Stateless: run as many as you like against one database.\n"
            "\n"
            "  --meta URL           the cluster's PostgreSQL (schema created and migrated here)\n"
            "  --listen HOST:PORT   S3 endpoint (default 127.0.0.1:9000)\n"
            "  --unix PATH          also serve on this Unix socket (peers proven over it may use\n"
            "                       shm RDMA with storage servers on this host); default none\n"
            "  --replicas N         copies of each chunk on distinct storage servers, 1..3\n"
            "                       (default 2)\n"
            "  --ec K+M             erasure-code each chunk instead: K data + M parity shards on\n"
            "                       K+M distinct storage servers (e.g. 4+2; K+M <= 16); a bucket\n"
            "                       tag wharf-ec=K+M or wharf-ec=replicas overrides it\n"
            "  --chunk-size BYTES   bytes per chunk (default 8M; K/M/G ok; 64K..1G)\n"
            "  --providers LIST     RDMA providers this gateway vets tokens for: shm,tcp\n"
            "                       (default) or none; the bytes move between storage servers\n"
            "                       and clients, never through the gateway\n"
            "  --repair-after SECS  re-replicate the chunks of a storage server whose heartbeat\n"
            "                       is older than this (default 120); one gateway at a time\n"
            "  --orphan-grace SECS  chunk copies of a PUT that never commits are deleted this\n"
            "                       long after they were written (default 3600; a PUT must\n"
            "                       commit within it)\n"
            "  --storage-reserve BYTES  free bytes every storage server keeps: one with less\n"
            "                       than this plus a chunk takes no new copy (default 256M);\n"
            "                       a cluster where none has room answers 507\n"
            "  --drain-rate BYTES   bytes per second copied off draining storage servers\n"
            "                       (wharfd node drain; default 64M)\n"
            "  --rebalance-rate BYTES  bytes per second moved to where chunks rank now after\n"
            "                       the membership changed (a join); 0 off (default 16M)\n"
            "  --repair-parallel N  chunk copies (repair, drain, rebalance) in flight at once,\n"
            "                       each sent storage server to storage server; 1..64\n"
            "                       (default 4 per CPU of this host, at least 8, at most 64)\n"
            "  --region NAME        S3 region (default us-east-1)\n"
            "  --sigv2 on|off       serve AWS Signature Version 2 requests (default on)\n"
            "  --server-key-file F  the key that seals users' secret keys (64 hex characters);\n"
            "                       the same file on every gateway (also WHARF_SERVER_KEY_FILE);\n"
            "                       without it only the root key signs requests\n"
            "  --account-id N       12-digit account of ARNs (default WHARF_ACCOUNT_ID or\n"
            "                       000000000000)\n"
            "  --lifecycle-period S seconds between passes applying buckets' lifecycle rules\n"
            "                       (default 3600; run by one gateway, the lifecycle lock's\n"
            "                       holder)\n"
            "  --log-level LEVEL    error, warn, info (default), debug, trace\n"
            "  --rdma-mem SIZE      registered buffer budget for RDMA (default: 1/64 of RAM,\n"
            "                       64M..1G; K/M/G ok)\n"
            "  --tls-cert FILE --tls-key FILE  serve S3 over HTTPS only (SIGHUP reloads them)\n"
            "  --cluster-ca FILE    the storage servers serve HTTPS (wharfd storage --tls-cert):\n"
            "                       dial them so, verifying their certificates with these CAs\n"
            "  --cluster-secret-file F  the cluster's shared secret (16 characters or more),\n"
            "                       the first line of F (else WHARF_CLUSTER_SECRET, required)\n"
            "\n" ROLE_HELP_FRONT "\n"
            "Environment: WHARF_CLUSTER_SECRET (shared with the storage servers, unless\n"
            "--cluster-secret-file), WHARF_ACCESS_KEY / WHARF_SECRET_KEY (root's S3\n"
            "credentials, unless --access-key / --secret-key-file).\n");
    return 0;
}

static int gw_bad(const char *fmt, const char *arg)
{
    return role_usage_error("gateway", fmt, arg);
}

static void gw_metrics(void *arg, wh_sbuf_t *out)
{
    cl_remote_metrics(arg, out);
}

/* GET /?x-wharf-cluster: the dashboard `wharfd node status` prints, from the same database. */
static wh_status_t gw_admin_cluster(void *arg, bool json, wh_sbuf_t *out)
{
    return role_node_status(arg, json, out) == 0 ? WH_OK : WH_ERR_UNAVAILABLE;
}

int role_gateway_main(int argc, char **argv)
{
    front_config_t cfg;
    front_config_init(&cfg);
    cl_remote_config_t rc;
    cl_remote_config_init(&rc);
    char host[64] = "127.0.0.1";
    const char *meta_url = NULL;
    role_common_t co;
    role_common_init(&co, "gateway");
    cfg.unix_path = "";
    enum {
        O_META = 1,
        O_LISTEN,
        O_UNIX,
        O_REPL,
        O_EC,
        O_CHUNK,
        O_REPAIR,
        O_GRACE,
        O_CLUSTER_CA,
        O_RESERVE,
        O_DRAIN_RATE,
        O_REBALANCE_RATE,
        O_REPAIR_PARALLEL,
        O_HELP
    };
    static const struct option opts[] = {
        {"meta", required_argument, NULL, O_META},
        {"listen", required_argument, NULL, O_LISTEN},
        {"unix", required_argument, NULL, O_UNIX},
        {"replicas", required_argument, NULL, O_REPL},
        {"ec", required_argument, NULL, O_EC},
        {"chunk-size", required_argument, NULL, O_CHUNK},
        ROLE_OPTS_RDMA,
        ROLE_OPTS_S3,
        ROLE_OPTS_TLS,
        ROLE_OPTS_CLUSTER,
        {"cluster-ca", required_argument, NULL, O_CLUSTER_CA},
        {"repair-after", required_argument, NULL, O_REPAIR},
        {"orphan-grace", required_argument, NULL, O_GRACE},
        {"storage-reserve", required_argument, NULL, O_RESERVE},
        {"drain-rate", required_argument, NULL, O_DRAIN_RATE},
        {"rebalance-rate", required_argument, NULL, O_REBALANCE_RATE},
        {"repair-parallel", required_argument, NULL, O_REPAIR_PARALLEL},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    if (role_conf_begin("gateway", role_gateway_main, opts, &argc, &argv) != 0)
        return 2;
    opterr = 0;
    optind = 2;
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_META:
            meta_url = optarg;
            break;
        case O_LISTEN:
            if (role_parse_listen(optarg, host, sizeof host, &cfg.listen_port, false) != 0)
                return gw_bad("--listen wants HOST:PORT (e.g. 127.0.0.1:9000), got '%s'", optarg);
            break;
        case O_UNIX:
            cfg.unix_path = strcmp(optarg, "none") == 0 ? "" : optarg;
            break;
        case O_REPL:
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v < 1 || v > 3)
                return gw_bad("--replicas wants 1, 2 or 3, got '%s'", optarg);
            rc.replicas = (unsigned)v;
            break;
        case O_EC: {
            char why[160];
            if (cl_ec_parse(optarg, &rc.ec_k, &rc.ec_m, why, sizeof why) != WH_OK)
                return gw_bad("--ec: %s", why);
            break;
        }
        case O_CHUNK:
            if (wh_parse_size(optarg, &v) != 0 || v < (64u << 10) || v > (1ULL << 30))
                return gw_bad("--chunk-size wants 64K..1G (e.g. 8M), got '%s'", optarg);
            rc.chunk_size = v;
            break;
        case O_REPAIR:
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v < 1 || v > 86400 * 30)
                return gw_bad("--repair-after wants seconds (1..2592000), got '%s'", optarg);
            rc.repair_after_s = (unsigned)v;
            break;
        case O_GRACE:
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v < 1 || v > 86400 * 7)
                return gw_bad("--orphan-grace wants seconds (1..604800), got '%s'", optarg);
            rc.orphan_grace_s = (unsigned)v;
            break;
        case O_CLUSTER_CA:
            if (access(optarg, R_OK) != 0)
                return gw_bad("--cluster-ca wants a readable PEM file of CAs, got '%s'", optarg);
            rc.ca_file = optarg;
            break;
        case O_RESERVE:
            if (wh_parse_size(optarg, &v) != 0)
                return gw_bad("--storage-reserve wants bytes (e.g. 256M), got '%s'", optarg);
            rc.reserve_bytes = v;
            break;
        case O_DRAIN_RATE:
            if (wh_parse_size(optarg, &v) != 0 || v < 4096)
                return gw_bad("--drain-rate wants bytes per second, 4K or more (e.g. 64M), "
                              "got '%s'",
                              optarg);
            rc.drain_rate = v;
            break;
        case O_REBALANCE_RATE:
            if (wh_parse_size(optarg, &v) != 0 || (v != 0 && v < 4096))
                return gw_bad("--rebalance-rate wants bytes per second, 0 (off) or 4K or more "
                              "(e.g. 16M), got '%s'",
                              optarg);
            rc.rebalance_rate = v;
            break;
        case O_REPAIR_PARALLEL:
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v < 1 ||
                v > CL_REPAIR_PARALLEL_MAX)
                return gw_bad("--repair-parallel wants 1..64 copies in flight, got '%s'", optarg);
            rc.repair_parallel = (unsigned)v;
            break;
        case O_HELP:
            return gw_usage(stdout);
        case ':':
            return gw_bad("option %s needs a value", argv[optind - 1]);
        default: {
            int h = role_common_opt(&co, c, optarg);
            if (h == 2)
                return 2;
            if (h == 0)
                return gw_bad("unknown option '%s'", argv[optind - 1]);
            break;
        }
        }
    }
    role_conf_parsed();
    if (optind < argc)
        return gw_bad("unexpected argument '%s'", argv[optind]);
    if (!meta_url || !meta_url_is_pg(meta_url))
        return gw_bad("--meta postgresql://USER@HOST:PORT/DB is required, got '%s'",
                      meta_url ? meta_url : "");
    if (!(rc.secret = role_cluster_secret(&co)))
        return 2;
    cfg.listen_host = host;
    if (role_common_apply(&co, &cfg) != 0 || role_common_meta(&co, meta_url) != 0)
        return 2;
    if (role_conf_stop_here())
        return role_conf_finish();
    role_block_signals();

    meta_t *meta = NULL;
    data_table_t *data = NULL;
    store_t *st = NULL;
    wh_status_t s = store_meta_open(meta_url, &meta);
    if (s != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the metadata database %s: %s\n", meta_url,
                wh_status_str(s));
        return 1;
    }
    rc.meta = meta;
    char self[300];
    snprintf(self, sizeof self, "%s:%u", host, (unsigned)cfg.listen_port);
    rc.self_addr = self;
    if ((s = cl_remote_open(&rc, &data)) != WH_OK) {
        meta_close(meta);
        fprintf(stderr, "wharfd: cannot start the cluster data table: %s\n", wh_status_str(s));
        return 1;
    }
    if ((s = store_open_tables(meta, data, &st)) != WH_OK) {
        fprintf(stderr, "wharfd: cannot open the store: %s\n", wh_status_str(s));
        return 1;
    }
    cfg.metrics_extra = gw_metrics;
    cfg.metrics_extra_arg = data;
    cfg.admin_cluster = gw_admin_cluster;
    cfg.admin_cluster_arg = meta;
    front_t *srv = NULL;
    if ((s = role_s3_front_start(&cfg, st, &srv)) != WH_OK) {
        fprintf(stderr, "wharfd: cannot start: %s (see the log above)\n", wh_status_str(s));
        return 1;
    }
    printf("wharfd gateway serving %s://%s:%u replicas=%u chunk=%llu access_key=%s\n",
           cfg.tls_cert ? "https" : "http", host, (unsigned)cfg.listen_port, rc.replicas,
           (unsigned long long)rc.chunk_size, cfg.access_key);
    fflush(stdout);
    role_wait_signals(role_front_hup, srv);
    front_stop(srv);
    role_notify_done();
    return 0;
}
