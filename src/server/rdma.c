/* Placeholder until the libfabric engine lands: every token is declined with 501, honestly. */
#include "server/rdma.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct srv_rdma {
    int unused;
};

void srv_rdma_config_init(srv_rdma_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->providers = "shm,tcp";
    cfg->mem_budget = 256ULL << 20;
    cfg->chunk_size = 4ULL << 20;
    cfg->window = 4;
    cfg->max_peers = 256;
}

wh_status_t srv_rdma_init(const srv_rdma_config_t *cfg, srv_rdma_t **out)
{
    *out = calloc(1, sizeof(srv_rdma_t));
    return *out ? WH_OK : WH_ERR_NOMEM;
}

void srv_rdma_fini(srv_rdma_t *r)
{
    free(r);
}

static void decline(srv_rdma_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->http_status = 501;
    res->s3_code = "NotImplemented";
    snprintf(res->message, sizeof res->message, "RDMA data path not built into this wharfd");
}

bool srv_rdma_check(srv_rdma_t *r, const char *token, const srv_peer_t *peer, uint64_t need,
                    srv_rdma_result_t *res)
{
    decline(res);
    return false;
}

wh_status_t srv_rdma_get(srv_rdma_t *r, const char *token, const srv_peer_t *peer, int fd,
                         uint64_t off, uint64_t len, srv_rdma_result_t *res)
{
    decline(res);
    return WH_ERR_DECLINED;
}

wh_status_t srv_rdma_put(srv_rdma_t *r, const char *token, const srv_peer_t *peer,
                         srv_rdma_sink_cb sink, void *arg, srv_rdma_result_t *res)
{
    decline(res);
    return WH_ERR_DECLINED;
}

void srv_rdma_metrics(srv_rdma_t *r, struct wh_sbuf *out)
{
}
