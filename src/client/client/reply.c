/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: parsing what the server sends back in headers: the status line, the headers the
 * protocol checks (x-amz-rdma-*, checksums, Content-Range, errors of bodiless replies, the
 * server's Unix socket named by /health).
 * Content-Range values are parsed by s3/range.h, the same family the server formats them with.
 * Free of curl calls, so fuzz/fuzz_client_reply.c compiles it in. */
#include "client/client_int.h"

#include "base/crc.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

void wc_trim_copy(char *dst, size_t dstlen, const char *v, size_t n)
{
    while (n && isspace((unsigned char)*v)) {
        v++;
        n--;
    }
    while (n && isspace((unsigned char)v[n - 1]))
        n--;
    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

void wc_reply_header(wc_resp_t *r, const char *buf, size_t n)
{
    if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
        /* a new status line (after 100 Continue, too): headers start over */
        const wc_req_t *req = r->_req;
        unsigned retries = r->retries;
        double t_first = r->t_first;
        wh_sbuf_t eb = r->err_body;
        uint64_t roff = r->_read_off;
        memset(r, 0, offsetof(wc_resp_t, retries));
        r->retries = retries;
        r->err_body = eb;
        r->_req = req;
        r->_read_off = roff;
        r->t_first = t_first ? t_first : wh_now_s();
        /* "HTTP/1.1 200 OK": three digits after the first space (buf is not NUL-terminated) */
        const char *sp = memchr(buf, ' ', n);
        size_t at = sp ? (size_t)(sp - buf) + 1 : n;
        long code = 0;
        size_t k = 0;
        for (; k < 3 && at + k < n && buf[at + k] >= '0' && buf[at + k] <= '9'; k++)
            code = code * 10 + (buf[at + k] - '0');
        r->status = k == 3 ? code : 0;
        return;
    }
    const char *colon = memchr(buf, ':', n);
    if (!colon)
        return;
    size_t nl = (size_t)(colon - buf);
    const char *v = colon + 1;
    size_t vl = n - nl - 1;
    char tmp[128];
#define IS(name) (nl == sizeof(name) - 1 && !strncasecmp(buf, name, nl))
    if (IS("etag")) {
        wc_trim_copy(r->etag, sizeof r->etag, v, vl);
    } else if (IS("content-length")) {
        wc_trim_copy(tmp, sizeof tmp, v, vl);
        r->has_content_length = wh_parse_u64(tmp, strlen(tmp), &r->content_length) == 0;
    } else if (IS("content-type")) {
        wc_trim_copy(r->content_type, sizeof r->content_type, v, vl);
    } else if (IS("last-modified")) {
        wc_trim_copy(r->last_modified, sizeof r->last_modified, v, vl);
    } else if (IS("content-range")) {
        wc_trim_copy(r->content_range, sizeof r->content_range, v, vl);
    } else if (IS("x-amz-rdma-reply")) {
        r->has_rdma_reply = true;
        wc_trim_copy(r->rdma_reply, sizeof r->rdma_reply, v, vl);
    } else if (IS("x-amz-rdma-bytes-transferred")) {
        wc_trim_copy(tmp, sizeof tmp, v, vl);
        r->has_rdma_bytes = wh_parse_u64(tmp, strlen(tmp), &r->rdma_bytes) == 0;
    } else if (IS("x-amz-checksum-crc64nvme")) {
        wc_trim_copy(tmp, sizeof tmp, v, vl);
        r->has_crc64 = wh_crc64nvme_from_b64(tmp, &r->crc64) == 0;
        r->bad_crc64 = !r->has_crc64;
    } else if (IS("x-amz-error-code")) {
        /* bodiless error replies (HEAD, and every token request) carry the S3 error here */
        wc_trim_copy(r->s3_code, sizeof r->s3_code, v, vl);
    } else if (IS("x-amz-error-message")) {
        wc_trim_copy(r->s3_message, sizeof r->s3_message, v, vl);
    } else if (IS("x-amz-version-id")) {
        wc_trim_copy(r->version_id, sizeof r->version_id, v, vl);
    } else if (IS("x-amz-request-id")) {
        wc_trim_copy(r->request_id, sizeof r->request_id, v, vl);
    } else if (IS("x-wharf-unix-socket")) {
        wc_trim_copy(r->unix_socket, sizeof r->unix_socket, v, vl);
    }
#undef IS
}
