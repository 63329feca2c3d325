/* SPDX-License-Identifier: Apache-2.0 */
/* RenameObject's source conditions (data/types.h, data_rename_src_cond_t): the same rules as a
 * copy source's (x-amz-copy-source-if-*), each failure a 412 to the caller. */
#include "data/types.h"

bool data_rename_src_cond_ok(const data_rename_src_cond_t *c, const data_obj_meta_t *m)
{
    if (!c)
        return true;
    if (c->if_match) {
        if (!data_etag_list_match(c->if_match, m->etag))
            return false;
    } else if (c->has_ius && m->mtime > c->ius) {
        return false;
    }
    if (c->if_none_match) {
        if (data_etag_list_match(c->if_none_match, m->etag))
            return false;
    } else if (c->has_ims && m->mtime <= c->ims) {
        return false;
    }
    return true;
}
