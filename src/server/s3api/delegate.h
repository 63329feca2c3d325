/* SPDX-License-Identifier: Apache-2.0 */
/* Data paths the store's data table runs itself (a cluster gateway: storage servers move the
 * bytes), in the server's terms: rdma_result_t for RDMA replies, an MHD response that
 * streams a reader for HTTP GET. Used by the S3 handlers when the bytes are not local. */
#ifndef WH_S3API_DELEGATE_H
#define WH_S3API_DELEGATE_H

#include "front/front.h"

/* RDMA PUT delegated to the data table. WH_ERR_UNSUPPORTED: the table has none (local files:
 * use rdma_put_tok). On WH_OK the writer holds the object and etag (may be "") is what the
 * table vouches for when it cannot give an MD5. */
wh_status_t s3api_delegate_rdma_put(front_req_t *r, const xfer_token_arg_t *token,
                                    rdma_result_t *res, char etag[48]);
/* RDMA GET of [off, off+len) of rd, delegated. */
wh_status_t s3api_delegate_rdma_get(front_req_t *r, data_reader_t *rd,
                                    const xfer_token_arg_t *token, uint64_t off, uint64_t len,
                                    rdma_result_t *res);
/* A response streaming [off, off+len) of rd through store_reader_pread; takes rd (closed with
 * the response) on success, NULL on failure (rd untouched). A read failure mid-stream ends
 * the response with an error, so the client sees a short body, never wrong bytes. */
struct MHD_Response *s3api_reader_response(data_reader_t *rd, uint64_t off, uint64_t len);

#endif
