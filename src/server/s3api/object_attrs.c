/* SPDX-License-Identifier: Apache-2.0 */
/* GetObjectAttributes (ETag, Checksum, ObjectParts with paging, StorageClass, ObjectSize) and
 * the parts of a completed multipart object: the byte range of ?partNumber=N on GET and HEAD
 * (from the part sizes the completion recorded). */
#include "s3api/s3api.h"
#include "base/util.h"
#include "s3/xml.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The sizes of the parts of m (a multipart object), malloc'd into *out. 0 parts: none
 * recorded (a single PUT, or completed before part sizes were kept). */
static size_t part_sizes(const data_obj_meta_t *m, uint64_t **out)
{
    *out = NULL;
    if (!m->part_sizes || !m->parts)
        return 0;
    uint64_t *v = calloc(m->parts, sizeof *v);
    if (!v)
        return 0;
    size_t n = 0;
    const char *p = m->part_sizes;
    while (*p && n < m->parts) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (wh_parse_u64(p, l, &v[n]) != 0)
            break;
        n++;
        p += l + (e ? 1 : 0);
    }
    if (n != m->parts) { /* damaged: do not guess */
        free(v);
        return 0;
    }
    *out = v;
    return n;
}

int s3api_part_range(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, uint64_t *off,
                     uint64_t *len, bool *ranged)
{
    const char *pn = front_route_q(&r->route, "partNumber");
    *ranged = false;
    if (!pn)
        return 0;
    uint64_t n;
    if (wh_parse_u64(pn, strlen(pn), &n) != 0 || n < 1 || n > STORE_MAX_PARTS)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "Part number must be an integer between 1 and 10000, inclusive");
    if (front_hdr(r, "range"))
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "Cannot specify both Range header and partNumber query parameter");
    if (m->parts == 0) { /* a single PUT is its own part 1 */
        if (n != 1)      /* 400 InvalidPart past the last part, as S3 (and Ceph's tests) answer */
            return s3h_errf(o, S3_ERR_INVALID_PART,
                            "part %" PRIu64 " does not exist: the "
                            "object has 1 part",
                            n);
        *off = 0;
        *len = m->size;
        return 0;
    }
    uint64_t *sizes;
    size_t cnt = part_sizes(m, &sizes);
    if (cnt == 0)
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "the part sizes of this object were not recorded (it was completed "
                       "before they were kept); read it by Range");
    /* (x-amz-mp-parts-count comes with the object's headers) */
    if (n > cnt) {
        s3h_out_header_u64(o, "x-amz-mp-parts-count", cnt);
        free(sizes);
        return s3h_errf(o, S3_ERR_INVALID_PART,
                        "part %" PRIu64 " does not exist: the object "
                        "has %zu parts",
                        n, cnt);
    }
    uint64_t start = 0;
    for (size_t i = 0; i + 1 < n; i++)
        start += sizes[i];
    *off = start;
    *len = sizes[n - 1];
    free(sizes);
    *ranged = true;
    return 0;
}

enum { ATTR_ETAG = 1, ATTR_CHECKSUM = 2, ATTR_PARTS = 4, ATTR_CLASS = 8, ATTR_SIZE = 16 };

static int attrs_parse(front_req_t *r, s3h_out_t *o, unsigned *want)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"ETag", ATTR_ETAG},
                 {"Checksum", ATTR_CHECKSUM},
                 {"ObjectParts", ATTR_PARTS},
                 {"StorageClass", ATTR_CLASS},
                 {"ObjectSize", ATTR_SIZE}};
    const char *h = front_hdr(r, "x-amz-object-attributes");
    *want = 0;
    if (!h || !*h)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "x-amz-object-attributes is required: a list of ETag, Checksum, "
                       "ObjectParts, StorageClass, ObjectSize");
    for (const char *p = h; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *z = e;
        while (z > p && z[-1] == ' ')
            z--;
        if (z > p) {
            size_t l = (size_t)(z - p), i;
            for (i = 0; i < WH_ARRAY_SIZE(names); i++)
                if (strlen(names[i].name) == l && strncmp(p, names[i].name, l) == 0)
                    break;
            if (i == WH_ARRAY_SIZE(names))
                return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                                "Invalid attribute name specified: %.*s", (int)l, p);
            *want |= names[i].bit;
        }
        p = e;
    }
    if (!*want)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT, "x-amz-object-attributes names nothing");
    return 0;
}

static int hdr_uint(front_req_t *r, s3h_out_t *o, const char *name, uint64_t dflt, uint64_t *out)
{
    const char *v = front_hdr(r, name);
    *out = dflt;
    if (v && wh_parse_u64(v, strlen(v), out) != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s must be a non-negative integer", name);
    return 0;
}

int s3api_object_attributes(front_req_t *r, s3h_out_t *o)
{
    const char *vid;
    unsigned want;
    uint64_t max_parts, marker;
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3h_version_q(r, o, &vid)) ||
        (ret = attrs_parse(r, o, &want)) ||
        (ret = hdr_uint(r, o, "x-amz-max-parts", 1000, &max_parts)) ||
        (ret = hdr_uint(r, o, "x-amz-part-number-marker", 0, &marker)))
        return ret;
    if (max_parts > 1000)
        max_parts = 1000;
    data_obj_meta_t m;
    wh_status_t st = store_object_open(
        s3h_st(r), &(store_read_args_t){.bucket = s3h_b(r), .key = s3h_k(r), .version_id = vid}, &m,
        NULL);
    if (st == WH_ERR_NOT_FOUND) {
        ret = s3h_version_not_found(r, o, &m, vid);
        data_obj_meta_free(&m);
        return ret;
    }
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "looking up the object");
    /* An SSE-C object answers only to its key, as GET and HEAD do (sse.c). */
    s3h_sse_req_t sq;
    if ((ret = s3h_sse_request(r, o, false, false, &sq)) == 0)
        ret = s3h_sse_open(r, o, &m, &sq, NULL);
    if (ret == 0)
        s3h_sse_headers(o, m.sse, &sq);
    s3h_sse_req_wipe(&sq);
    if (ret) {
        data_obj_meta_free(&m);
        return ret;
    }
    char date[30];
    wh_http_date(m.mtime, date);
    s3h_out_header(o, MHD_HTTP_HEADER_LAST_MODIFIED, date);
    s3h_out_version(o, m.version_id, vid != NULL);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<GetObjectAttributesResponse xmlns=\"" S3H_XMLNS "\">");
    if (want & ATTR_ETAG)
        s3_xml_elem(&b, "ETag", m.etag); /* unquoted, as S3 answers here */
    if ((want & ATTR_CHECKSUM) && (m.crc64nvme[0] || m.crc32c[0])) {
        wh_sbuf_puts(&b, "<Checksum>");
        if (m.crc32c[0])
            s3_xml_elem(&b, "ChecksumCRC32C", m.crc32c);
        if (m.crc64nvme[0])
            s3_xml_elem(&b, "ChecksumCRC64NVME", m.crc64nvme);
        s3_xml_elem(&b, "ChecksumType", m.parts ? "COMPOSITE" : "FULL_OBJECT");
        wh_sbuf_puts(&b, "</Checksum>");
    }
    uint64_t *sizes = NULL;
    size_t cnt = (want & ATTR_PARTS) ? part_sizes(&m, &sizes) : 0;
    if (cnt) {
        wh_sbuf_puts(&b, "<ObjectParts>");
        s3_xml_elem_u64(&b, "PartsCount", cnt); /* TotalPartsCount in the SDKs */
        s3_xml_elem_u64(&b, "PartNumberMarker", marker);
        uint64_t last = marker, shown = 0;
        for (uint64_t i = marker; i < cnt && shown < max_parts; i++, shown++)
            last = i + 1;
        s3_xml_elem_u64(&b, "NextPartNumberMarker", last);
        s3_xml_elem_u64(&b, "MaxParts", max_parts);
        s3_xml_elem(&b, "IsTruncated", last < cnt ? "true" : "false");
        for (uint64_t i = marker; i < last; i++) {
            wh_sbuf_puts(&b, "<Part>");
            s3_xml_elem_u64(&b, "PartNumber", i + 1);
            s3_xml_elem_u64(&b, "Size", sizes[i]);
            wh_sbuf_puts(&b, "</Part>");
        }
        wh_sbuf_puts(&b, "</ObjectParts>");
    }
    free(sizes);
    if (want & ATTR_CLASS)
        s3_xml_elem(&b, "StorageClass", "STANDARD");
    if (want & ATTR_SIZE)
        s3_xml_elem_u64(&b, "ObjectSize", m.size);
    wh_sbuf_puts(&b, "</GetObjectAttributesResponse>");
    data_obj_meta_free(&m);
    return s3h_ok_xml(o, 200, &b);
}
