/* Storage role membership and metrics: registration in the metadata database and the
 * heartbeat thread (wired to store/meta.h once that API lands). */
#include "base/log.h"
#include "server/storage_int.h"

#include <inttypes.h>

#define MOD "storage"

wh_status_t srv_storage_membership_start(srv_storage_t *s)
{
    return WH_OK;
}

void srv_storage_membership_stop(srv_storage_t *s)
{
}

void srv_storage_metrics(srv_storage_t *s, wh_sbuf_t *out)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } m[] = {
        {"wharf_storage_token_rejects_total", "Internal requests refused (403) by the token check.",
         offsetof(srv_storage_t, token_rejects)},
        {"wharf_storage_chunks_written_total", "Chunks written durably.",
         offsetof(srv_storage_t, chunks_written)},
        {"wharf_storage_chunks_deleted_total", "Chunks deleted by garbage collection.",
         offsetof(srv_storage_t, chunks_deleted)},
        {"wharf_storage_read_errors_total", "Chunk reads refused: missing, damaged or failed.",
         offsetof(srv_storage_t, read_errors)},
        {"wharf_http_read_bytes_total", "Chunk bytes served over HTTP to gateways.",
         offsetof(srv_storage_t, http_read_bytes)},
        {"wharf_http_write_bytes_total", "Chunk bytes received over HTTP from gateways.",
         offsetof(srv_storage_t, http_write_bytes)},
        {"wharf_storage_heartbeats_total", "Heartbeats written to the metadata database.",
         offsetof(srv_storage_t, heartbeats)},
        {"wharf_storage_heartbeat_failures_total", "Heartbeats that failed.",
         offsetof(srv_storage_t, heartbeat_failures)},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(m); i++)
        wh_sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", m[i].name,
                       m[i].help, m[i].name, m[i].name,
                       (uint64_t)atomic_load((_Atomic uint64_t *)((char *)s + m[i].off)));
    wh_sbuf_printf(out, "# TYPE wharf_storage_meta_up gauge\nwharf_storage_meta_up %d\n",
                   (int)atomic_load(&s->meta_up));
}
