/* SPDX-License-Identifier: Apache-2.0 */
/* `wharfd serve`: one server holding its own data and metadata (SQLite in --data, or
 * PostgreSQL by --meta), serving S3 over HTTP and RDMA. */
#include "base/defaults.h"
#include "base/log.h"
#include "base/util.h"
#include "ident/identity.h"
#include "roles/roles.h"
#include "roles/config.h"
#include "front/front.h"
#include "s3api/s3api.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEV_ACCESS_KEY WH_DEV_ACCESS_KEY
#define DEV_SECRET_KEY WH_DEV_SECRET_KEY

/* The text of `wharfd --help` after the command lines: what wharfd is, serve's options, and those
 * the roles share. */
void role_serve_help(FILE *f)
{
    fprintf(f,
            "\n"
            "An S3-compatible object server whose data path can bypass HTTP: a signed request\n"
            "carrying x-amz-rdma-token has its bytes moved by one-sided RDMA.\n"
            "\n"
            "options of serve:\n"
            "  --data DIR           data directory (objects and the SQLite metadata); created\n"
            "  --listen HOST:PORT   TCP address to serve HTTP on (default 127.0.0.1:9000)\n"
            "  --unix PATH          Unix-domain socket to also serve on (default DIR/wharfd.sock;\n"
            "                       \"none\" disables it). Peers proven over it (SO_PEERCRED)\n"
            "                       may use the same-host shm transport.\n"
            "  --region NAME        S3 region (default us-east-1)\n"
            "  --sigv2 on|off       serve AWS Signature Version 2 requests (default on)\n"
            "  --log-level LEVEL    error, warn, info (default), debug, trace\n"
            "  --providers LIST     RDMA providers, comma-separated: shm,tcp (default) or none\n"
            "  --rdma-mem SIZE      registered buffer budget for RDMA (default: 1/64 of RAM,\n"
            "                       64M..1G); a bare number is bytes, K/M/G/T (KiB/MiB/GiB/TiB)\n"
            "                       multiply by 1024^n\n"
            "  --shm-trust-local    serve shm to TCP peers too (trusted single-user hosts only)\n"
            "  --copy-threads N     copy threads of the direct path (bound shm, GPU memory),\n"
            "                       shared by the requests in flight (default: one per core)\n"
            "  --put-threads N      at most N of them for one PUT (default 2: its writes into\n"
            "                       one file take the file's lock in turn)\n"
            "  --cold-reads direct|buffered  RDMA GETs over network providers read data that\n"
            "                       is not in the page cache with O_DIRECT straight into the\n"
            "                       registered buffer (direct, the default), or through the cache\n"
            "  --cuda-pinned-mem SIZE  pinned host memory staging copies to and from GPU\n"
            "                       memory, 16M per copy slot (default: 16M per core, at most\n"
            "                       1/32 of RAM)\n"
            "  --etag-part-size SIZE  PutObject ETags above SIZE (default 64M) are the md5 of\n"
            "                       their SIZE parts' md5s, \"-N\", hashed in parallel; 0: always\n"
            "                       one MD5 (a Content-MD5 or an UploadPart always gets one)\n"
            "  --rdma-etag digest|md5  ETags of RDMA PUTs and parts of 4M or more without\n"
            "                       Content-MD5: digest (default) makes them from the CRCs the\n"
            "                       server computes anyway, as \"hex-N\" (parts: \"hex\"), with\n"
            "                       no MD5 pass; md5: the MD5 forms above\n"
            "  --meta URL           metadata in PostgreSQL (postgresql://USER@HOST:PORT/DB)\n"
            "                       instead of SQLite in DIR; hosts H1:P1,H2:P2: whichever takes\n"
            "                       writes, followed after a failover\n"
            "  --reserve BYTES      space held back so deletes work on a full disk (default 8M;\n"
            "                       0 for none)\n"
            "  --high-water PCT     refuse new writes (507) once the data file system is this\n"
            "                       full, 1..100 (default 99; 100: only when full)\n"
            "  --durability disk|memory  what an acknowledged write survives: disk (default:\n"
            "                       the object's file is synced before the reply) or memory\n"
            "                       (the page cache: a crash of wharfd, not of the host)\n"
            "  --data-writes buffered|mapped|direct  large RDMA PUTs into the page cache\n"
            "                       by pwrite (buffered, the default), over bound shm through a\n"
            "                       mapping of the file (mapped: one copy, no per-PUT thread\n"
            "                       cap), or past the cache with O_DIRECT (direct: cold\n"
            "                       storage, where what is written is not read back soon)\n"
            "  --put-stripes N      a buffered RDMA PUT of --put-stripe-min or more goes into N\n"
            "                       files at once, committed as one object (default: one per\n"
            "                       two cores, at most 16; 1: one file), so that its copy\n"
            "                       threads do not wait on one file's lock (--put-threads each)\n"
            "  --put-stripe-min SIZE  the smallest PUT that is striped (default 64M, >= 16M)\n"
            "  --server-key-file F  the key that seals users' secret keys (64 hex characters;\n"
            "                       default WHARF_SERVER_KEY_FILE, else DIR/server.key, made\n"
            "                       0600 on first start)\n"
            "  --account-id N       12-digit account of ARNs (default WHARF_ACCOUNT_ID or\n"
            "                       000000000000)\n"
            "  --lifecycle-period S seconds between passes applying buckets' lifecycle rules\n"
            "                       (default 3600)\n"
            "\n"
            "\n" ROLE_HELP_FRONT "\n"
            "Root's credentials come from WHARF_ACCESS_KEY and WHARF_SECRET_KEY; when unset,\n"
            "the development defaults " DEV_ACCESS_KEY " / " DEV_SECRET_KEY " are used and\n"
            "printed. IAM users and their keys: wharfd user --help, or the IAM API.\n"
            "TLS (serve and gateway):\n"
            "  --tls-cert FILE      PEM certificate chain (leaf first): the TCP port then\n"
            "                       serves only HTTPS; SIGHUP reloads it and --tls-key\n"
            "  --tls-key FILE       its PEM private key (unencrypted)\n");
}

static int bad_usage(const char *fmt, const char *arg)
{
    return role_usage_error(NULL, fmt, arg);
}

int role_serve_main(int argc, char **argv)
{
    front_config_t cfg;
    front_config_init(&cfg);
    store_config_t scfg = {0};
    char host[64] = "127.0.0.1";
    const char *listen_arg = NULL;
    role_common_t co;
    role_common_init(&co, "serve");

    enum {
        O_DATA = 1,
        O_LISTEN,
        O_UNIX,
        O_SHM,
        O_COPY,
        O_PUT_THREADS,
        O_PINNED,
        O_COLD,
        O_ETAG,
        O_RDMA_ETAG,
        O_HELP,
        O_META,
        O_RESERVE,
        O_HIGH_WATER,
        O_DURABILITY,
        O_DATA_WRITES,
        O_PUT_STRIPES,
        O_PUT_STRIPE_MIN
    };
    static const struct option opts[] = {
        {"data", required_argument, NULL, O_DATA},
        {"listen", required_argument, NULL, O_LISTEN},
        {"unix", required_argument, NULL, O_UNIX},
        ROLE_OPTS_RDMA,
        ROLE_OPTS_S3,
        ROLE_OPTS_TLS,
        {"shm-trust-local", no_argument, NULL, O_SHM},
        {"copy-threads", required_argument, NULL, O_COPY},
        {"put-threads", required_argument, NULL, O_PUT_THREADS},
        {"cuda-pinned-mem", required_argument, NULL, O_PINNED},
        {"cold-reads", required_argument, NULL, O_COLD},
        {"etag-part-size", required_argument, NULL, O_ETAG},
        {"rdma-etag", required_argument, NULL, O_RDMA_ETAG},
        {"help", no_argument, NULL, O_HELP},
        {"meta", required_argument, NULL, O_META},
        {"reserve", required_argument, NULL, O_RESERVE},
        {"high-water", required_argument, NULL, O_HIGH_WATER},
        {"durability", required_argument, NULL, O_DURABILITY},
        {"data-writes", required_argument, NULL, O_DATA_WRITES},
        {"put-stripes", required_argument, NULL, O_PUT_STRIPES},
        {"put-stripe-min", required_argument, NULL, O_PUT_STRIPE_MIN},
        {NULL, 0, NULL, 0},
    };
    if (role_conf_begin("serve", role_serve_main, opts, &argc, &argv) != 0)
        return 2;
    opterr = 0;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DATA:
            cfg.data_dir = optarg;
            break;
        case O_LISTEN:
            listen_arg = optarg;
            if (role_parse_listen(optarg, host, sizeof host, &cfg.listen_port, true) != 0)
                return bad_usage("--listen wants HOST:PORT (e.g. 127.0.0.1:9000), got '%s'",
                                 optarg);
            break;
        case O_UNIX:
            cfg.unix_path = strcmp(optarg, "none") == 0 ? "" : optarg;
            break;
        case O_SHM:
            cfg.rdma.shm_trust_local = true;
            break;
        case O_COPY: {
            char *end = NULL;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v == 0 || v > 64)
                return bad_usage("--copy-threads wants a count 1..64, got '%s'", optarg);
            cfg.rdma.copy_threads = (unsigned)v;
            break;
        }
        case O_PUT_THREADS: {
            char *end = NULL;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v == 0 || v > 64)
                return bad_usage("--put-threads wants a count 1..64, got '%s'", optarg);
            cfg.rdma.put_threads = (unsigned)v;
            break;
        }
        case O_COLD:
            if (strcmp(optarg, "direct") && strcmp(optarg, "buffered"))
                return bad_usage("--cold-reads wants direct or buffered, got '%s'", optarg);
            cfg.rdma.cold_buffered = strcmp(optarg, "buffered") == 0;
            break;
        case O_PINNED:
            if (wh_parse_size(optarg, &cfg.rdma.cuda_pinned) != 0 ||
                cfg.rdma.cuda_pinned < (16u << 20))
                return bad_usage("--cuda-pinned-mem wants a size of at least 16M, got '%s'",
                                 optarg);
            break;
        case O_ETAG:
            if (wh_parse_size(optarg, &cfg.etag_part_size) != 0 ||
                (cfg.etag_part_size && cfg.etag_part_size < (4ULL << 20)))
                return bad_usage("--etag-part-size wants a size of at least 4M (" WH_SIZE_SYNTAX
                                 "), or 0 for whole-object MD5 ETags, got '%s'",
                                 optarg);
            break;
        case O_RDMA_ETAG:
            if (strcmp(optarg, "digest") != 0 && strcmp(optarg, "md5") != 0)
                return bad_usage("--rdma-etag wants digest or md5, got '%s'", optarg);
            cfg.rdma_digest_etag = strcmp(optarg, "digest") == 0;
            break;
        case O_HELP:
            role_wharfd_usage(stdout);
            return 0;
        case O_META:
            if (strncmp(optarg, "postgresql://", 13) != 0 &&
                strncmp(optarg, "postgres://", 11) != 0)
                return bad_usage("--meta wants postgresql://USER@HOST:PORT/DB, got '%s'", optarg);
            scfg.meta_url = optarg;
            break;
        case O_RESERVE:
            if (wh_parse_size(optarg, &scfg.reserve_bytes) != 0)
                return bad_usage("--reserve wants a byte count such as 8388608 or 8M, got '%s'",
                                 optarg);
            if (scfg.reserve_bytes == 0)
                scfg.reserve_bytes = UINT64_MAX; /* none */
            break;
        case O_DATA_WRITES:
            if (strcmp(optarg, "mapped") && strcmp(optarg, "buffered") && strcmp(optarg, "direct"))
                return bad_usage("--data-writes wants buffered, mapped or direct, got '%s'",
                                 optarg);
            scfg.direct_writes = strcmp(optarg, "direct") == 0;
            scfg.map_writes = strcmp(optarg, "mapped") == 0;
            break;
        case O_PUT_STRIPES: {
            char *end = NULL;
            unsigned long v = strtoul(optarg, &end, 10);
            if (!*optarg || *end || v == 0 || v > DATA_MAX_STRIPES)
                return bad_usage("--put-stripes wants a count 1..16 (1: one file), got '%s'",
                                 optarg);
            scfg.put_stripes = (unsigned)v;
            break;
        }
        case O_PUT_STRIPE_MIN:
            if (wh_parse_size(optarg, &scfg.put_stripe_min) != 0 ||
                scfg.put_stripe_min < 2 * DATA_STRIPE_ALIGN)
                return bad_usage("--put-stripe-min wants a size of at least 16M (" WH_SIZE_SYNTAX
                                 "), got '%s'",
                                 optarg);
            break;
        case O_DURABILITY:
            if (strcmp(optarg, "disk") && strcmp(optarg, "memory"))
                return bad_usage("--durability wants disk or memory, got '%s'", optarg);
            scfg.durability =
                strcmp(optarg, "memory") == 0 ? DATA_DURABLE_MEMORY : DATA_DURABLE_DISK;
            break;
        case O_HIGH_WATER: {
            uint64_t v;
            if (wh_parse_u64(optarg, strlen(optarg), &v) != 0 || v < 1 || v > 100)
                return bad_usage("--high-water wants a percentage 1..100, got '%s'", optarg);
            scfg.high_water_pct = (unsigned)v;
            break;
        }
        case ':':
            return bad_usage("option %s needs a value", argv[optind - 1]);
        default: {
            int h = role_common_opt(&co, c, optarg);
            if (h == 2)
                return 2;
            if (h == 0)
                return bad_usage("unknown option '%s'", argv[optind - 1]);
            break;
        }
        }
    }
    role_conf_parsed();
    if (optind < argc)
        return bad_usage("unexpected argument '%s'", argv[optind]);
    if (!cfg.data_dir)
        return bad_usage("%s--data DIR is required", "");
    (void)listen_arg;
    cfg.listen_host = host;
    if (role_common_apply(&co, &cfg) != 0 || role_common_meta(&co, scfg.meta_url) != 0)
        return 2;
    if (role_conf_stop_here())
        return role_conf_finish();

    if (wh_mkdir_p(cfg.data_dir, 0755) != 0) {
        wh_error("main", "cannot create the data directory %s: %m", cfg.data_dir);
        return 1;
    }

    /* Every thread started from here on inherits the mask, so the signals reach
     * role_wait_signals only. */
    role_block_signals();

    front_t *srv = NULL;
    scfg.data_dir = cfg.data_dir;
    store_t *store = NULL;
    wh_status_t st = store_open(&scfg, &store);
    if (st != WH_OK)
        wh_error("http", "cannot open the store dir=%s: %s", cfg.data_dir, wh_status_str(st));
    else
        st = role_s3_front_start(&cfg, store, &srv);
    if (st != WH_OK) {
        fprintf(stderr, "wharfd: cannot start: %s (see the log above)\n", wh_status_str(st));
        return 1;
    }
    printf("wharfd %s serving %s://%s:%u data=%s access_key=%s\n", FRONT_VERSION,
           cfg.tls_cert ? "https" : "http", host, (unsigned)cfg.listen_port, cfg.data_dir,
           cfg.access_key);
    fflush(stdout);

    role_wait_signals(role_front_hup, srv);
    front_stop(srv);
    role_notify_done();
    return 0;
}
