/* SPDX-License-Identifier: Apache-2.0 */
/* libfabric, opened on first use instead of linked (ofi_dl.c says why). Its few exported
 * functions that xfer calls go through the wrappers below, under their own names; everything
 * else in libfabric's headers is an inline call through an object's ops table, which needs no
 * symbol. Include this after <rdma/fabric.h> and before any use. */
#ifndef WH_XFER_OFI_DL_H
#define WH_XFER_OFI_DL_H

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Every signal's disposition, taken before a call into libfabric that may load or initialise
 * a provider; ofi_sig_restore puts back any that the call changed (ofi_dl.c says why). */
typedef struct ofi_sig_saved {
    struct sigaction act[NSIG];
    bool have[NSIG];
} ofi_sig_saved_t;

void ofi_sig_save(ofi_sig_saved_t *s);
/* what: the call that ran, for the log line of each disposition put back. */
void ofi_sig_restore(const ofi_sig_saved_t *s, const char *what);

int ofi_dl_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
void ofi_dl_freeinfo(struct fi_info *info);
struct fi_info *ofi_dl_dupinfo(const struct fi_info *info);
int ofi_dl_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
uint32_t ofi_dl_version(void);
const char *ofi_dl_strerror(int errnum);

#define fi_getinfo ofi_dl_getinfo
#define fi_freeinfo ofi_dl_freeinfo
#define fi_dupinfo ofi_dl_dupinfo
/* fabric.h's inline fi_allocinfo calls fi_dupinfo by its linked name */
#define fi_allocinfo() ofi_dl_dupinfo(NULL)
#define fi_fabric ofi_dl_fabric
#define fi_version ofi_dl_version
#define fi_strerror ofi_dl_strerror

#endif
