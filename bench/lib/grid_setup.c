/* SPDX-License-Identifier: Apache-2.0 */
/* The grid's objects, written over HTTP before any timed window, and the PUT objects
 * removed after the run. */
#include "grid.h"

#include "base/crc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- setup: buckets and objects over HTTP ---- */

unsigned grid_objects_for(const g_cfg_t *cfg, uint64_t size)
{
    if (cfg->objects)
        return cfg->objects;
    uint64_t n = WB_GIB / size;
    return (unsigned)(n < 4 ? 4 : n > 64 ? 64 : n);
}

static wharf_client_t *grid_http_client(const g_cfg_t *cfg, char *err, size_t n)
{
    wharf_client_config_t cc;
    wharf_client_config_init(&cc, sizeof cc);
    cc.endpoint = cfg->endpoint;
    cc.access_key = cfg->ak;
    cc.secret_key = cfg->sk;
    cc.region = cfg->region;
    cc.provider = "none";
    wharf_client_t *c = NULL;
    wharf_status_t rc = wharf_client_create(&cc, &c);
    if (rc != WHARF_OK) {
        snprintf(err, n, "client create: %s: %s", wharf_status_str(rc), wharf_last_error());
        return NULL;
    }
    return c;
}

static int setup_bucket(wharf_client_t *c, const char *bucket, char *err, size_t n)
{
    wharf_status_t rc = wharf_bucket_create(c, bucket);
    if (rc != WHARF_OK && rc != WHARF_ERR_EXISTS) {
        snprintf(err, n, "create bucket %s: %s: %s", bucket, wharf_status_str(rc),
                 wharf_last_error());
        return -1;
    }
    return 0;
}

int grid_setup_objects(const g_cfg_t *cfg, char *err, size_t n)
{
    wharf_client_t *c = grid_http_client(cfg, err, n);
    if (!c)
        return -1;
    int rc = -1;
    uint8_t *buf = NULL;
    size_t blen = 0;
    double t0 = wb_now();
    uint64_t uploaded = 0;
    if (setup_bucket(c, cfg->bucket_get, err, n) != 0 ||
        setup_bucket(c, cfg->bucket_put, err, n) != 0)
        goto cleanup;
    int need_get = 0;
    for (unsigned k = 0; k < cfg->nops; k++)
        need_get |= cfg->ops[k] == G_GET;
    for (unsigned si = 0; si < cfg->nsizes && need_get; si++) {
        uint64_t size = cfg->sizes[si];
        if (size > blen) {
            wb_free(buf, blen);
            blen = (size_t)size;
            buf = wb_alloc_prefaulted(blen);
            if (!buf) {
                snprintf(err, n, "cannot allocate %zu bytes", blen);
                goto cleanup;
            }
        }
        unsigned nobj = grid_objects_for(cfg, size);
        for (unsigned i = 0; i < nobj; i++) {
            char key[128];
            grid_obj_key(cfg, G_GET, size, i, key, sizeof key);
            wharf_stat_t st;
            wharf_stat_init(&st, sizeof st);
            int have =
                wharf_object_stat(c, cfg->bucket_get, key, &st) == WHARF_OK && st.length == size;
            if (have && cfg->skip_upload)
                continue;
            memset(buf, wb_fill_byte(i), size);
            if (have && st.has_crc64nvme && st.crc64nvme == wh_crc64nvme(0, buf, size))
                continue; /* already there with the right bytes */
            wharf_report_t r;
            wharf_report_init(&r, sizeof r);
            wharf_xfer_opts_t o;
            wharf_xfer_opts_init(&o, sizeof o);
            o.transport = WHARF_TRANSPORT_HTTP;
            wharf_status_t prc = wharf_object_put(c, cfg->bucket_get, key, buf, size, &o, &r);
            if (prc != WHARF_OK) {
                snprintf(err, n, "upload %s/%s: %s: %s", cfg->bucket_get, key,
                         wharf_status_str(prc), wharf_last_error());
                goto cleanup;
            }
            uploaded += size;
        }
    }
    if (uploaded)
        fprintf(stderr, "bench: wrote %.2f GB of test objects over HTTP in %.1f s\n",
                (double)uploaded / 1e9, wb_now() - t0);
    rc = 0;
cleanup:
    wb_free(buf, blen);
    wharf_client_destroy(c);
    return rc;
}

static int delete_cb(void *arg, const char *key, uint64_t length, int64_t mtime, const char *etag)
{
    void **a = arg;
    wharf_object_delete(a[0], a[1], key);
    return 0;
}

void grid_cleanup_put_objects(const g_cfg_t *cfg)
{
    char err[G_ERR];
    wharf_client_t *c = grid_http_client(cfg, err, sizeof err);
    if (!c)
        return;
    void *a[2] = {c, (void *)cfg->bucket_put};
    wharf_object_list(c, cfg->bucket_put, "b1put/", delete_cb, a);
    wharf_client_destroy(c);
}
