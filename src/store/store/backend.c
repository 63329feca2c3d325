/* SPDX-License-Identifier: Apache-2.0 */
/* Which metadata backend a location names: here, in the layer that links both backends, so
 * that meta (their interface) links neither and the backends link only meta. */
#include "base/log.h"
#include "meta/meta.h"
#include "store/store.h"

#include <string.h>

wh_status_t store_meta_open(const char *url_or_path, struct meta **out)
{
    if (meta_url_is_pg(url_or_path))
        return meta_pg_open(url_or_path, out);
    if (!url_or_path || !url_or_path[0]) {
        wh_error("store", "no metadata location given: pass a SQLite path or a "
                          "postgresql://USER@HOST:PORT/DB URL");
        return WH_ERR_INVALID;
    }
    if (strstr(url_or_path, "://")) {
        wh_error("store", "unknown metadata URL scheme in '%s'; use postgresql://USER@HOST:PORT/DB",
                 url_or_path);
        return WH_ERR_INVALID;
    }
    return meta_sqlite_open(url_or_path, out);
}
