/* SPDX-License-Identifier: Apache-2.0 */
/* The wharfd roles: the cluster roles' command lines (roles.c), dispatched from commands.c, and
 * what the three role mains (serve, gateway, storage) share: one option parser, one listen parser,
 * one usage error, one signal wait, and the one place an S3 front is assembled. */
#ifndef WH_ROLES_ROLES_H
#define WH_ROLES_ROLES_H

#include "base/log.h"
#include "base/status.h"
#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* `wharfd serve` (serve.c): one server with its own data and metadata. */
int role_serve_main(int argc, char **argv);
int role_storage_main(int argc, char **argv);
int role_gateway_main(int argc, char **argv);
/* wharfd's main (commands.c): runs the command argv[1] names, from its table of commands. */
int role_wharfd_main(int argc, char **argv);
/* `wharfd --help` (commands.c: the table's command lines, then role_serve_help). */
void role_wharfd_usage(FILE *f);
/* The rest of `wharfd --help`: serve's options and those the roles share (serve.c). */
void role_serve_help(FILE *f);
/* `wharfd user ...` and `wharfd key ...` (user_cmd.c); argv[1] is "user" or "key". */
int role_user_main(int argc, char **argv);
/* `wharfd node list|drain|remove` (node_cmd.c). */
int role_node_main(int argc, char **argv);
/* The cluster's dashboard (`wharfd node status`, and the gateway's GET /?x-wharf-cluster that
 * `wharf admin cluster` reads), text or JSON, appended to b; 0, or 1 when the database could
 * not be read (said on stderr). */
struct meta;
int role_node_status(struct meta *m, bool json, wh_sbuf_t *b);

/* The options several roles take, parsed in one place. Each role lists the ones it takes in
 * its getopt table (ROLE_OPTS_*) and hands every option it does not know itself to
 * role_common_opt. Every option is also a key of the role's configuration file (config.h). */
typedef struct role_common {
    const char *cmd;    /* "serve", "gateway", "storage": for the --help hint */
    const char *region; /* NULL: the default */
    bool sigv2_off;     /* --sigv2 off */
    wh_log_level_t log_level;
    const char *providers; /* NULL: the default */
    uint64_t rdma_mem;     /* 0: the default */
    const char *server_key_file;
    const char *account_id;
    const char *tls_cert, *tls_key;  /* --tls-cert, --tls-key (every role) */
    unsigned lifecycle_period_s;     /* 0: the default */
    unsigned shutdown_grace_s;       /* 0: ROLE_SHUTDOWN_GRACE_DEFAULT */
    const char *access_key;          /* root's; NULL: WHARF_ACCESS_KEY */
    const char *secret_key_file;     /* root's secret; NULL: WHARF_SECRET_KEY */
    const char *meta_password_file;  /* PostgreSQL's password (PGPASSWORD for libpq) */
    const char *cluster_secret_file; /* NULL: WHARF_CLUSTER_SECRET */
    unsigned front[8]; /* --http-threads .. --max-buckets, in ROLE_OPT_HTTP_THREADS order; 0:
                        * the default */
} role_common_t;
#define ROLE_SHUTDOWN_GRACE_DEFAULT 30
enum {
    ROLE_OPT_REGION = 0x100,
    ROLE_OPT_LOG,
    ROLE_OPT_PROVIDERS,
    ROLE_OPT_RDMA_MEM,
    ROLE_OPT_KEY_FILE,
    ROLE_OPT_ACCOUNT,
    ROLE_OPT_TLS_CERT,
    ROLE_OPT_TLS_KEY,
    ROLE_OPT_LIFECYCLE,
    ROLE_OPT_SHUTDOWN_GRACE,
    ROLE_OPT_ACCESS_KEY,
    ROLE_OPT_SECRET_KEY_FILE,
    ROLE_OPT_META_PW_FILE,
    ROLE_OPT_CLUSTER_SECRET_FILE,
    ROLE_OPT_HTTP_THREADS, /* the HTTP front's counts and seconds, in role_common_t.front order */
    ROLE_OPT_HANDLER_THREADS,
    ROLE_OPT_MAX_CONNS,
    ROLE_OPT_MAX_CONNS_IP,
    ROLE_OPT_IDLE_TIMEOUT,
    ROLE_OPT_HEADER_TIMEOUT,
    ROLE_OPT_MAX_UPLOADS,
    ROLE_OPT_MAX_BUCKETS,
    ROLE_OPT_SIGV2
};
/* clang-format off */
#define ROLE_OPTS_RDMA \
    {"log-level", required_argument, NULL, ROLE_OPT_LOG}, \
    {"providers", required_argument, NULL, ROLE_OPT_PROVIDERS}, \
    {"rdma-mem", required_argument, NULL, ROLE_OPT_RDMA_MEM}, \
    {"meta-password-file", required_argument, NULL, ROLE_OPT_META_PW_FILE}
#define ROLE_OPTS_S3 \
    {"region", required_argument, NULL, ROLE_OPT_REGION}, \
    {"server-key-file", required_argument, NULL, ROLE_OPT_KEY_FILE}, \
    {"account-id", required_argument, NULL, ROLE_OPT_ACCOUNT}, \
    {"lifecycle-period", required_argument, NULL, ROLE_OPT_LIFECYCLE}, \
    {"shutdown-grace", required_argument, NULL, ROLE_OPT_SHUTDOWN_GRACE}, \
    {"access-key", required_argument, NULL, ROLE_OPT_ACCESS_KEY}, \
    {"secret-key-file", required_argument, NULL, ROLE_OPT_SECRET_KEY_FILE}, \
    {"http-threads", required_argument, NULL, ROLE_OPT_HTTP_THREADS}, \
    {"handler-threads", required_argument, NULL, ROLE_OPT_HANDLER_THREADS}, \
    {"max-conns", required_argument, NULL, ROLE_OPT_MAX_CONNS}, \
    {"max-conns-per-ip", required_argument, NULL, ROLE_OPT_MAX_CONNS_IP}, \
    {"idle-timeout", required_argument, NULL, ROLE_OPT_IDLE_TIMEOUT}, \
    {"header-timeout", required_argument, NULL, ROLE_OPT_HEADER_TIMEOUT}, \
    {"max-uploads", required_argument, NULL, ROLE_OPT_MAX_UPLOADS}, \
    {"max-buckets", required_argument, NULL, ROLE_OPT_MAX_BUCKETS}, \
    {"sigv2", required_argument, NULL, ROLE_OPT_SIGV2}
#define ROLE_OPTS_TLS \
    {"tls-cert", required_argument, NULL, ROLE_OPT_TLS_CERT}, \
    {"tls-key", required_argument, NULL, ROLE_OPT_TLS_KEY}
#define ROLE_OPTS_CLUSTER \
    {"cluster-secret-file", required_argument, NULL, ROLE_OPT_CLUSTER_SECRET_FILE}
/* clang-format on */
/* --help's text of the options serve and gateway share beyond their own lists. */
#define ROLE_HELP_FRONT                                                                            \
    "HTTP front (defaults derived from the host):\n"                                               \
    "  --http-threads N     event threads (default: the CPU count)\n"                              \
    "  --handler-threads N  most S3 handlers running at once; they may wait on disk\n"             \
    "                       or RDMA (default 256)\n"                                               \
    "  --max-conns N        connections open at once (default: RLIMIT_NOFILE, raised\n"            \
    "                       to its hard limit, less a reserve for files)\n"                        \
    "  --max-conns-per-ip N connections open at once from one address (default: a\n"               \
    "                       quarter of --max-conns)\n"                                             \
    "  --idle-timeout S     close a connection that moves no byte for S s (default 30)\n"          \
    "  --max-uploads N      incomplete multipart uploads one bucket may hold (default\n"           \
    "                       10000; CreateMultipartUpload past it is TooManyUploads)\n"             \
    "  --max-buckets N      buckets one IAM user may own (default 100; CreateBucket past\n"        \
    "                       it is TooManyBuckets; root is not bound)\n"                            \
    "  --header-timeout S   close a connection whose request headers are not complete\n"           \
    "                       S s after it opened or its last request ended (default 20)\n"          \
    "  --shutdown-grace S   at SIGTERM, wait up to S s (0..3600, default 30) for the\n"            \
    "                       requests in flight, then up to 5 s more for their handlers\n"          \
    "\n"                                                                                           \
    "Secrets, from files (refused when others may read or write them, a warning when\n"            \
    "the group may read them) or the environment, never from a flag's value:\n"                    \
    "  --access-key ID      root's access key (default WHARF_ACCESS_KEY)\n"                        \
    "  --secret-key-file F  root's secret key, the first line of F (default\n"                     \
    "                       WHARF_SECRET_KEY); with neither, the development pair\n"               \
    "  --meta-password-file F  PostgreSQL's password for --meta, the first line of F\n"            \
    "                       (given to libpq as PGPASSWORD)\n"                                      \
    "\n"                                                                                           \
    "Configuration:\n"                                                                             \
    "  --config FILE        read the options from FILE (an ini file: key = value, the\n"           \
    "                       option's name with _ for -, under an optional [ROLE]\n"                \
    "                       section); an option on the command line wins over its key\n"           \
    "  --print-config       print the effective settings, each with its source\n"                  \
    "                       (command line, FILE:LINE, environment, default), secrets\n"            \
    "                       masked, and exit\n"                                                    \
    "  wharfd check-config FILE  check FILE (its first section names the role) without\n"          \
    "                       starting; names the bad key, its line and why; exit 2\n"               \
    "\n"                                                                                           \
    "SIGHUP reads FILE again: log_level, max_uploads, lifecycle_period and\n"                      \
    "shutdown_grace change live, other changed keys are logged as needing a\n"                     \
    "restart, and a bad file changes\n"                                                            \
    "nothing; it also reloads the TLS certificate and key (a bad pair keeps the old).\n"           \
    "SIGTERM or SIGINT stops accepting (new connections are refused), lets in-flight\n"            \
    "requests finish within --shutdown-grace, and exits 0. With NOTIFY_SOCKET set\n"               \
    "(systemd Type=notify or notify-reload) it says READY=1 once listening,\n"                     \
    "RELOADING=1 around a reload, STOPPING=1 at SIGTERM, and WATCHDOG=1 every half of\n"           \
    "WATCHDOG_USEC when that is set.\n"
void role_common_init(role_common_t *co, const char *cmd);
/* 1: c was a common option and its value is good; 0: not a common option; 2: a bad value
 * (said on stderr): exit 2. */
int role_common_opt(role_common_t *co, int c, const char *arg);

struct front_config;
/* The common options into an S3 front's config (serve, gateway), and root's key pair from
 * WHARF_ACCESS_KEY / WHARF_SECRET_KEY (the development pair, printed, when unset). 0, or 2
 * after saying what is wrong. */
int role_common_apply(const role_common_t *co, struct front_config *cfg);

/* Shared option helpers. */
/* HOST:PORT into host and *port: 0, or -1 when malformed. any_port: port 0 is taken (serve's
 * --listen), else refused. */
int role_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port, bool any_port);
/* Says what is wrong with the command line (fmt has one %s, for arg) and where the options are
 * listed: 'wharfd CMD --help', or 'wharfd --help' with cmd NULL. Returns 2, the exit status. */
int role_usage_error(const char *cmd, const char *fmt, const char *arg);
/* The cluster's shared secret: co's --cluster-secret-file, else WHARF_CLUSTER_SECRET; NULL
 * (and says why) when unset, short or in a file others may read. */
const char *role_cluster_secret(const role_common_t *co);
/* PostgreSQL's password from --meta-password-file into PGPASSWORD, which libpq reads, and a
 * warning when url (the --meta given) carries a password on the command line. 0, or 2 after
 * saying what is wrong. */
int role_common_meta(const role_common_t *co, const char *url);
/* Blocks TERM, INT and HUP in this thread and every thread it starts afterwards
 * (libmicrohttpd's inherit the mask) and ignores SIGPIPE (sendfile to a closed socket): call
 * before starting anything. */
void role_block_signals(void);
/* Tells the service manager the role is ready (sd_notify READY=1; watchdog pings from here
 * on when WATCHDOG_USEC is set), then waits for TERM or INT (blocked by role_block_signals),
 * logs which came and says STOPPING=1. On each HUP in between calls on_hup(arg) (the role's
 * reload; NULL: none) between RELOADING=1 and READY=1. notify.c. */
void role_wait_signals(void (*on_hup)(void *arg), void *arg);
/* After the role stopped: the watchdog pings end. */
void role_notify_done(void);
/* on_hup of an S3 front (serve, gateway): arg is its front_t. Reads the configuration file
 * again (config.h: live keys log_level, max_uploads, lifecycle_period, shutdown_grace) and the TLS
 * pair. */
void role_front_hup(void *srv);
/* on_hup of a storage server: arg is its role_storage_t (live keys: log_level,
 * shutdown_grace). */
void role_storage_hup(void *s);

struct store;
struct front;
/* An S3 front over st (taken, also on failure): opens the identities over its metadata (the
 * server key from cfg, or under cfg->data_dir) and the RDMA engine (fabric listeners where
 * HTTP listens), and starts the front with the S3 API (front.h: front_start). */
wh_status_t role_s3_front_start(const struct front_config *cfg, struct store *st,
                                struct front **out);

#endif
