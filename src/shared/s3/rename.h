/* SPDX-License-Identifier: Apache-2.0 */
/* RenameObject's x-amz-rename-source header (S3 Express): "bucket/key", URL-encoded, a leading
 * "/" allowed; wharf renames within one bucket, as S3 Express does. Pure, so a fuzzer can
 * drive it (fuzz/fuzz_rename_source.c). */
#ifndef WH_S3_RENAME_H
#define WH_S3_RENAME_H

#include "base/util.h"

#include <stddef.h>

/* 0 with the decoded source key in *key (the caller frees it; *klen its length, and it holds no
 * NUL byte); -1 with *why naming what was wrong: a bad percent-escape, no "bucket/key" form, an
 * empty key, a version id (?versionId=), a NUL byte, or a bucket other than bucket. */
int s3_rename_source_parse(const char *h, const char *bucket, char **key, size_t *klen,
                           const char **why);

#endif
