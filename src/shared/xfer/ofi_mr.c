/* SPDX-License-Identifier: Apache-2.0 */
/* ofi family, memory registration and tokens: registrations with keys that say nothing about
 * each other, and ofi1 tokens naming a sub-range of one. */
#include "xfer/ofi.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "xfer/cuda.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdlib.h>
#include <string.h>

/* Registers one region described by attr (host memory, or GPU memory through FI_HMEM) with
 * a key the provider chooses or a random one. */
static wh_status_t ofi_mr_regattr(xfer_t *x, struct fi_mr_attr *attr, xfer_mr_t **out)
{
    ofi_xfer_t *o = ofi_x(x);
    void *addr = attr->mr_iov[0].iov_base;
    size_t len = attr->mr_iov[0].iov_len;
    attr->access =
        x->_role == XFER_ROLE_CLIENT ? FI_REMOTE_READ | FI_REMOTE_WRITE : FI_READ | FI_WRITE;
    ofi_mr_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    int rc = -FI_ENOKEY;
    for (int attempt = 0; attempt < 8 && rc == -FI_ENOKEY; attempt++) {
        uint64_t key = 0;
        /* Keys the caller chooses are random, so one registration's key says nothing about
         * another's. */
        if (!o->prov_key && wh_random_bytes(&key, sizeof key) != 0) {
            free(m);
            return WH_ERR_INTERNAL;
        }
        attr->requested_key = key;
        rc = fi_mr_regattr(o->domain, attr, 0, &m->mr);
    }
    if (rc) {
        wh_error("xfer", "fi_mr_regattr failed provider=%s len=%zu iface=%d err='%s'", x->_name,
                 len, (int)attr->iface, fi_strerror(-rc));
        free(m);
        return rc == -FI_ENOMEM ? WH_ERR_NOMEM : WH_ERR_TRANSPORT;
    }
    if (o->mr_endpoint) {
        if ((rc = fi_mr_bind(m->mr, &o->ep->fid, 0)) || (rc = fi_mr_enable(m->mr))) {
            wh_error("xfer", "fi_mr_bind failed provider=%s err='%s'", x->_name, fi_strerror(-rc));
            fi_close(&m->mr->fid);
            free(m);
            return WH_ERR_TRANSPORT;
        }
    }
    m->key = fi_mr_key(m->mr);
    m->desc = fi_mr_desc(m->mr);
    m->base._x = x;
    m->base._addr = addr;
    m->base._len = len;
    *out = &m->base;
    return WH_OK;
}

wh_status_t ofi_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out)
{
    struct iovec iov = {.iov_base = addr, .iov_len = len};
    struct fi_mr_attr attr = {.mr_iov = &iov, .iov_count = 1, .iface = FI_HMEM_SYSTEM};
    return ofi_mr_regattr(x, &attr, out);
}

/* GPU memory with the NIC: FI_HMEM_CUDA and the device's ordinal (libfabric's verbs provider
 * then registers it through dmabuf or NVIDIA peer memory). Written to libfabric's API; it has
 * not run here: no provider on the development hosts offers FI_HMEM for a network (Debian's
 * tcp has none, and there is no RDMA NIC). */
wh_status_t ofi_mr_reg_device(xfer_t *x, void *addr, size_t len, xfer_mr_t **out, char *err,
                              size_t errlen)
{
    ofi_xfer_t *o = ofi_x(x);
    if (!o->hmem)
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen, "%s", o->hmem_why);
    int dev = -1;
    wh_status_t st = cuda_device_of(addr, len, &dev, err, errlen);
    if (st != WH_OK)
        return st;
    struct iovec iov = {.iov_base = addr, .iov_len = len};
    struct fi_mr_attr attr = {.mr_iov = &iov, .iov_count = 1, .iface = FI_HMEM_CUDA};
    attr.device.cuda = dev;
    st = ofi_mr_regattr(x, &attr, out);
    if (st != WH_OK)
        return wh_errf(st, err, errlen,
                       "%s: fi_mr_regattr of GPU memory (FI_HMEM_CUDA, device "
                       "%d) failed; see the log (peer memory or dmabuf support in the "
                       "driver?)",
                       x->_name, dev);
    return WH_OK;
}

void ofi_mr_dereg(xfer_mr_t *mr)
{
    ofi_mr_t *m = (ofi_mr_t *)mr;
    if (!mr->_x->_forgotten && m->mr)
        fi_close(&m->mr->fid);
    free(m);
}

wh_status_t ofi_token_pack(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                           char *out, size_t outlen)
{
    ofi_xfer_t *o = ofi_x(x);
    const ofi_mr_t *m = (const ofi_mr_t *)mr;
    /* Without FI_MR_VIRT_ADDR the target address is an offset into the registration. */
    uint64_t base = o->virt_addr ? (uint64_t)(uintptr_t)addr
                                 : (uint64_t)((uintptr_t)addr - (uintptr_t)mr->_addr);
    /* The endpoint's name changes when ofi_quiesce replaces the endpoint. */
    uint8_t name[OFI_NAME_MAX];
    pthread_mutex_lock(&o->lock);
    size_t name_len = o->ep ? o->name_len : 0;
    memcpy(name, o->name, name_len);
    pthread_mutex_unlock(&o->lock);
    if (!name_len) {
        wh_error("xfer", "no endpoint to name in a token provider=%s (replacing it failed)",
                 x->_name);
        return WH_ERR_TRANSPORT;
    }
    return xfer_token_pack_ofi1(base, len, x->_fabric, name, name_len, m->key, out, outlen);
}
