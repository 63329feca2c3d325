/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the S3 XML parsers. The first byte picks the parser (Complete, Delete,
 * CreateBucket, walk, escape round trip, VersioningConfiguration); the rest is the document.
 * Checks the limits the parsers promise, and that s3_xml_escape output parses back to the
 * same key. */
#include "s3/xml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_cb(void *arg, const char *path, const char *text, size_t len)
{
    size_t *n = arg;
    if (!path || !text || strlen(path) == 0)
        abort();
    (void)len;
    (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 6;
    char *xml = malloc(size);
    if (!xml)
        return 0;
    memcpy(xml, data + 1, size - 1);
    size_t len = size - 1;
    switch (which) {
    case 0: {
        s3_part_ref_t *parts = NULL;
        size_t n = 0;
        if (s3_xml_parse_complete(xml, len, &parts, &n) == S3_OK) {
            if (n == 0 || n > S3_XML_MAX_PARTS)
                abort();
            for (size_t i = 0; i < n; i++)
                if (parts[i].number < 1 || parts[i].number > S3_XML_MAX_PARTS ||
                    parts[i].etag[0] == '\0')
                    abort();
            free(parts);
        }
        break;
    }
    case 1: {
        s3_delete_req_t d;
        if (s3_xml_parse_delete(xml, len, &d) == S3_OK) {
            if (d.n == 0 || d.n > S3_XML_MAX_DELETE_KEYS)
                abort();
            for (size_t i = 0; i < d.n; i++)
                if (strlen(d.keys[i]) > 1024 ||
                    (d.version_ids[i] && (!d.version_ids[i][0] || strlen(d.version_ids[i]) > 128)))
                    abort();
            s3_delete_req_free(&d);
        }
        break;
    }
    case 2: {
        char loc[64];
        if (s3_xml_parse_create_bucket(xml, len, loc, sizeof loc) == S3_OK && strlen(loc) >= 64)
            abort();
        break;
    }
    case 3: {
        size_t n = 0;
        (void)s3_xml_walk(xml, len, walk_cb, &n);
        break;
    }
    case 5: {
        int status = 0;
        if (s3_xml_parse_versioning(xml, len, &status) == S3_OK && status != 1 && status != 2)
            abort();
        break;
    }
    default: {
        /* The input as a key: what the writer escapes, the parser reads back unchanged. */
        char *key = malloc(len + 1);
        if (!key)
            break;
        memcpy(key, xml, len);
        key[len] = '\0';
        wh_sbuf_t b;
        wh_sbuf_init(&b);
        wh_sbuf_puts(&b, "<Delete><Object>");
        s3_xml_elem(&b, "Key", key);
        wh_sbuf_puts(&b, "</Object></Delete>");
        s3_delete_req_t d;
        if (!b.oom && s3_xml_parse_delete(b.data, b.len, &d) == S3_OK) {
            if (d.n != 1 || strcmp(d.keys[0], key) != 0)
                abort();
            s3_delete_req_free(&d);
        }
        wh_sbuf_free(&b);
        free(key);
        break;
    }
    }
    free(xml);
    return 0;
}
