/* The wharfd roles: the cluster roles' command lines (roles.c), dispatched from main.c, and what
 * the three role mains (serve, gateway, storage) share: one option parser, one listen parser,
 * one usage error, one signal wait, and the one place an S3 front is assembled. */
#ifndef WH_ROLES_ROLES_H
#define WH_ROLES_ROLES_H

#include "base/log.h"
#include "base/status.h"
#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int srv_storage_main(int argc, char **argv);
int srv_gateway_main(int argc, char **argv);
/* `wharfd user ...` and `wharfd key ...` (user_cmd.c); argv[1] is "user" or "key". */
int srv_user_main(int argc, char **argv);
/* `wharfd node list|drain|remove` (node_cmd.c). */
int srv_node_main(int argc, char **argv);
/* The cluster's dashboard (`wharfd node status`, and the gateway's GET /?x-wharf-cluster that
 * `wharf admin cluster` reads), text or JSON, appended to b; 0, or 1 when the database could
 * not be read (said on stderr). */
struct meta;
int srv_node_status(struct meta *m, bool json, wh_sbuf_t *b);

/* The options several roles take, parsed in one place. Each role lists the ones it takes in
 * its getopt table (SRV_OPTS_RDMA, SRV_OPTS_S3) and hands every option it does not know
 * itself to srv_common_opt. */
typedef struct srv_common {
    const char *cmd;    /* "serve", "gateway", "storage": for the --help hint */
    const char *region; /* NULL: the default */
    wh_log_level_t log_level;
    const char *providers; /* NULL: the default */
    uint64_t rdma_mem;     /* 0: the default */
    const char *server_key_file;
    const char *account_id;
    const char *tls_cert, *tls_key; /* --tls-cert, --tls-key (every role) */
    unsigned lifecycle_period_s;    /* 0: the default */
} srv_common_t;
enum {
    SRV_OPT_REGION = 0x100,
    SRV_OPT_LOG,
    SRV_OPT_PROVIDERS,
    SRV_OPT_RDMA_MEM,
    SRV_OPT_KEY_FILE,
    SRV_OPT_ACCOUNT,
    SRV_OPT_TLS_CERT,
    SRV_OPT_TLS_KEY,
    SRV_OPT_LIFECYCLE
};
#define SRV_OPTS_RDMA                                                                              \
    {"log-level", required_argument, NULL, SRV_OPT_LOG},                                           \
        {"providers", required_argument, NULL, SRV_OPT_PROVIDERS},                                 \
    {                                                                                              \
        "rdma-mem", required_argument, NULL, SRV_OPT_RDMA_MEM                                      \
    }
#define SRV_OPTS_S3                                                                                \
    {"region", required_argument, NULL, SRV_OPT_REGION},                                           \
        {"server-key-file", required_argument, NULL, SRV_OPT_KEY_FILE},                            \
        {"account-id", required_argument, NULL, SRV_OPT_ACCOUNT},                                  \
    {                                                                                              \
        "lifecycle-period", required_argument, NULL, SRV_OPT_LIFECYCLE                             \
    }
#define SRV_OPTS_TLS                                                                               \
    {"tls-cert", required_argument, NULL, SRV_OPT_TLS_CERT},                                       \
    {                                                                                              \
        "tls-key", required_argument, NULL, SRV_OPT_TLS_KEY                                        \
    }
void srv_common_init(srv_common_t *co, const char *cmd);
/* 1: c was a common option and its value is good; 0: not a common option; 2: a bad value
 * (said on stderr): exit 2. */
int srv_common_opt(srv_common_t *co, int c, const char *arg);

struct srv_config;
/* The common options into an S3 front's config (serve, gateway), and root's key pair from
 * WHARF_ACCESS_KEY / WHARF_SECRET_KEY (the development pair, printed, when unset). 0, or 2
 * after saying what is wrong. */
int srv_common_apply(const srv_common_t *co, struct srv_config *cfg);

/* Shared option helpers. */
/* HOST:PORT into host and *port: 0, or -1 when malformed. any_port: port 0 is taken (serve's
 * --listen), else refused. */
int srv_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port, bool any_port);
/* Says what is wrong with the command line (fmt has one %s, for arg) and where the options are
 * listed: 'wharfd CMD --help', or 'wharfd --help' with cmd NULL. Returns 2, the exit status. */
int srv_usage_error(const char *cmd, const char *fmt, const char *arg);
const char *srv_cluster_secret(void); /* NULL (and says why) when unset/short */
/* Blocks TERM, INT and HUP in this thread and every thread it starts afterwards
 * (libmicrohttpd's inherit the mask) and ignores SIGPIPE (sendfile to a closed socket): call
 * before starting anything. */
void srv_block_signals(void);
/* Waits for TERM or INT (blocked by srv_block_signals) and logs which came; on each HUP in
 * between calls on_hup(arg) (the role's TLS reload; NULL: none). */
void srv_wait_signals(void (*on_hup)(void *arg), void *arg);
/* on_hup of an S3 front (serve, gateway): arg is its srv_t. */
void srv_front_hup(void *srv);

struct store;
struct srv;
/* An S3 front over st (taken, also on failure): opens the identities over its metadata (the
 * server key from cfg, or under cfg->data_dir) and the RDMA engine (fabric listeners where
 * HTTP listens), and starts the front with the S3 API (front.h: srv_start). */
wh_status_t srv_s3_front_start(const struct srv_config *cfg, struct store *st, struct srv **out);

#endif
