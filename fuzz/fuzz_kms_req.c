/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the KMS JSON API's request parser (ident_kms_req_parse,
 * src/server/ident/kms_req.c): the body of a TrentService.* request. Checks that an accepted
 * body gives NUL-terminated fields within their bounds, and that the key reference it names
 * resolves to a valid key id or to none (ident_kms_ref_id). */
#include "ident/kms.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ident_kms_req_t q;
    char msg[300];
    wh_status_t st = ident_kms_req_parse((const char *)data, size, &q, msg, sizeof msg);
    if (st != WH_OK) {
        if (st != WH_ERR_INVALID && st != WH_ERR_UNSUPPORTED)
            abort();
        if (!memchr(msg, '\0', sizeof msg) || !msg[0])
            abort(); /* every refusal says why */
        return 0;
    }
    if (!memchr(q.key_id, '\0', sizeof q.key_id) || !memchr(q.marker, '\0', sizeof q.marker))
        abort();
    if ((q.has_limit && (q.limit < 1 || q.limit > 1000)) ||
        (q.has_window && (q.window_days < 7 || q.window_days > 30)))
        abort();
    char id[IDENT_KMS_ID_MAX + 1];
    const char *got = ident_kms_ref_id(q.key_id, id);
    if (got && (got != id || !ident_kms_id_valid(id)))
        abort();
    return 0;
}
