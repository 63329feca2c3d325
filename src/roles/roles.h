/* Command lines of the cluster roles (roles.c), dispatched from main.c. */
#ifndef WH_ROLES_ROLES_H
#define WH_ROLES_ROLES_H

#include "base/log.h"

#include <stddef.h>
#include <stdint.h>

int srv_storage_main(int argc, char **argv);
int srv_gateway_main(int argc, char **argv);
/* `wharfd user ...` and `wharfd key ...` (user_cmd.c); argv[1] is "user" or "key". */
int srv_user_main(int argc, char **argv);

/* The options several roles take, parsed in one place. Each role lists the ones it takes in
 * its getopt table (SRV_OPTS_RDMA, SRV_OPTS_S3) and hands every option it does not know
 * itself to srv_common_opt. */
typedef struct srv_common {
    const char *cmd;        /* "serve", "gateway", "storage": for the --help hint */
    const char *region;     /* NULL: the default */
    wh_log_level_t log_level;
    const char *providers;  /* NULL: the default */
    uint64_t rdma_mem;      /* 0: the default */
    const char *server_key_file;
    const char *account_id;
    unsigned lifecycle_period_s; /* 0: the default */
} srv_common_t;
enum { SRV_OPT_REGION = 0x100, SRV_OPT_LOG, SRV_OPT_PROVIDERS, SRV_OPT_RDMA_MEM,
       SRV_OPT_KEY_FILE, SRV_OPT_ACCOUNT, SRV_OPT_LIFECYCLE };
#define SRV_OPTS_RDMA                                                                       \
    {"log-level", required_argument, NULL, SRV_OPT_LOG},                                    \
        {"providers", required_argument, NULL, SRV_OPT_PROVIDERS},                          \
        {"rdma-mem", required_argument, NULL, SRV_OPT_RDMA_MEM}
#define SRV_OPTS_S3                                                                         \
    {"region", required_argument, NULL, SRV_OPT_REGION},                                    \
        {"server-key-file", required_argument, NULL, SRV_OPT_KEY_FILE},                     \
        {"account-id", required_argument, NULL, SRV_OPT_ACCOUNT},                           \
        {"lifecycle-period", required_argument, NULL, SRV_OPT_LIFECYCLE}
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
int srv_parse_listen(const char *s, char *host, size_t hostlen, uint16_t *port);
const char *srv_cluster_secret(void);             /* NULL (and says why) when unset/short */
void srv_block_signals(void);

#endif
