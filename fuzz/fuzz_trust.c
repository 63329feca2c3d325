/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for a role's trust policy (src/server/s3ctl/iam_roles.c): the shape check
 * CreateRole applies and the evaluation AssumeRole applies. The input is split at the first
 * NUL into the policy document and the caller's ARN. A policy that lets the caller assume the
 * role must hold an Allow and a Principal naming the caller, its account (or an ARN without
 * one, "arn:aws:iam:::...") or "*". */
#include "s3ctl/iam_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    const char *doc = buf;
    const char *who = buf + strlen(buf) + (strlen(buf) < size ? 1 : 0);
    (void)iam_trust_invalid(doc);
    if (iam_trust_allows(doc, who, "000000000000", "sts:AssumeRole")) {
        if (!strstr(doc, "Allow"))
            abort();
        /* Someone was named: the caller (non-empty), the account, or "*". */
        if (!(*who && strstr(doc, who)) && !strstr(doc, "000000000000") && !strstr(doc, "*") &&
            !strstr(doc, "arn:aws:iam:::"))
            abort();
    }
    free(buf);
    return 0;
}
