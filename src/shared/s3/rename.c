/* SPDX-License-Identifier: Apache-2.0 */
/* x-amz-rename-source (s3/rename.h). */
#include "s3/rename.h"
#include "s3/uri.h"

#include <string.h>

int s3_rename_source_parse(const char *h, const char *bucket, char **key, size_t *klen,
                           const char **why)
{
    *key = NULL;
    *klen = 0;
    size_t n = strlen(h);
    if (memchr(h, '?', n)) {
        *why = "x-amz-rename-source names the current object of a key: no ?versionId= or other "
               "query";
        return -1;
    }
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    if (s3_uri_decode(h, n, &d) != 0 || d.oom) {
        wh_sbuf_free(&d);
        *why = "x-amz-rename-source is not valid: a bad percent-escape";
        return -1;
    }
    const char *s = d.data ? d.data : "";
    size_t len = d.len;
    if (len && *s == '/') {
        s++;
        len--;
    }
    const char *slash = memchr(s, '/', len);
    if (!slash || slash == s || (size_t)(slash + 1 - s) == len) {
        wh_sbuf_free(&d);
        *why = "x-amz-rename-source must be bucket/key (URL-encoded)";
        return -1;
    }
    size_t blen = (size_t)(slash - s);
    if (blen != strlen(bucket) || memcmp(s, bucket, blen) != 0) {
        wh_sbuf_free(&d);
        *why = "x-amz-rename-source names another bucket: RenameObject renames within the "
               "request's bucket";
        return -1;
    }
    size_t kl = len - blen - 1;
    if (memchr(slash + 1, '\0', kl)) {
        wh_sbuf_free(&d);
        *why = "x-amz-rename-source's key holds a NUL byte";
        return -1;
    }
    char *k = strndup(slash + 1, kl);
    wh_sbuf_free(&d);
    if (!k) {
        *why = "out of memory";
        return -1;
    }
    *key = k;
    *klen = kl;
    return 0;
}
