/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 API: the dispatch and the object handlers, one file per API family. The bucket,
 * configuration and IAM handlers and what every handler shares (answers, authorization,
 * encryption, versions, ACLs, Object Lock, tagging) are the layer below (s3ctl/s3ctl.h).
 *
 *   app.c       the front_ops table (route.h) and s3api_app, the S3 API as the front serves it
 *   s3api.c     the dispatch (begin, finish, one reply sender)
 *   object_read.c   GetObject, HeadObject
 *   object_write.c  PutObject, CopyObject, DeleteObject, DeleteObjects
 *   rdma_ops.c   the x-amz-rdma-token data path for PUT and UploadPart, and RDMA refusals
 *   object_batch.c  RDMA batches (POST /bucket?rdma-batch): many keys into or from one region
 *   list.c   ListObjects, ListObjectsV2, ListObjectVersions
 *   mpu.c    multipart: create, parts (and part copy), complete, abort, list parts/uploads
 *   mpu_sums.c  the whole-object checksum of a multipart upload (COMPOSITE, FULL_OBJECT)
 *   object_meta.c   object metadata: what is kept from a request, the headers sent back
 *   object_attrs.c  GetObjectAttributes, and ?partNumber= reads
 *   post_object.c   POST Object: the browser form upload (policy, form signature, streamed file)
 *   delegate.c  a GET or RDMA transfer handed to the engine's thread (delegate.h)
 *
 * A handler never queues a response itself: it returns the HTTP status and fills a s3h_out_t
 * (an S3 error with its message, or a success with its headers and body), and s3api_send
 * turns that into the one reply. http.c has verified SigV4 (or found no signature: the
 * anonymous principal) before any handler runs, and s3h_authorize has allowed the row's IAM
 * action before its begin step. */
#ifndef WH_S3API_S3API_H
#define WH_S3API_S3API_H

#include "front/front.h"
#include "s3ctl/s3ctl.h"

#include <stdbool.h>
#include <stdint.h>

/* The S3 API as the front serves it: its routing table and its steps (app.c, s3api.c). The roles
 * hand it to front_start. */
extern const front_app_ops_t s3api_app;
extern const front_op_t front_ops[];
extern const size_t s3api_ops_count;
/* front_route_parse_in (route.h) over front_ops. */
void s3api_route_parse(const char *method, const char *raw_path, const char *raw_query,
                       const char *host, const char *endpoint_host, bool has_copy_source,
                       front_route_t *out);
/* The steps of s3api_app (front.h, front_app_ops_t, says when each runs). */
void s3api_begin(front_req_t *r);
void s3api_finish(front_req_t *r);
void s3api_cleanup(front_req_t *r);
void s3api_body_digest(front_req_t *r, const void *p, size_t n);
/* post_object.c: a piece of a POST Object form body (FRONT_BODY_FORM); 0, or -1 with r->body_err
 * and r->body_msg set. */
int s3api_form_feed(front_req_t *r, const void *p, size_t n);

/* Object metadata from the request (Content-Type, x-amz-meta-*, kept standard headers) into
 * m; an error status when a value cannot be kept as sent. */
int s3api_meta_from_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m);
/* A Content-Encoding list without its aws-chunked entries (malloc'd; "" when none is left):
 * "gzip, aws-chunked" keeps "gzip", "aws-chunked,br" keeps "br". NULL: no memory. */
char *s3api_content_encoding_kept(const char *v);
/* The object's headers on a GET/HEAD answer; whole: the reply is the whole object. */
void s3api_object_headers(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, bool whole);

/* object_attrs.c: ?partNumber=N of a GET/HEAD as the byte range of part N (*ranged: a 206 with
 * Content-Range). 0 or the error's status (400 InvalidPart past the last part). */
int s3api_part_range(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, uint64_t *off,
                     uint64_t *len, bool *ranged);

/* ---- shared between families ------------------------------------------------------------ */

/* rdma_ops.c: a failed or declined transfer as its answer (never 200, never a body). */
int s3api_rdma_refuse(front_req_t *r, s3h_out_t *o, const rdma_result_t *res, wh_status_t st);
/* rdma_ops.c: PUT or UploadPart whose body comes by RDMA read from the client's memory. */
/* crc32c: compute the body's CRC-32C (a part of an upload whose algorithm is CRC32C); it is
 * also computed when the request names CRC32C itself. */
int s3api_rdma_put_object(front_req_t *r, s3h_out_t *o, bool part, bool crc32c);
/* The upload (its row from store_mpu_meta) was created with x-amz-checksum-algorithm CRC32C. */
bool s3api_mpu_names_crc32c(const data_obj_meta_t *upload);

/* object_write.c: the PUT body path shared by PutObject and UploadPart. */
int s3api_put_begin(front_req_t *r, s3h_out_t *o, bool part);
/* The bucket's data layout for the writer r->w just opened (a cluster: replicas, or the
 * erasure coding of its tag wharf-ec), before any byte is written: every writer of new bytes
 * (PUT, UploadPart, POST, RDMA PUT and UploadPart, UploadPartCopy) asks it. 0, or the error
 * answered (400 naming a malformed tag, 503 naming too few servers up); the caller then
 * aborts the writer. */
int s3api_put_layout(front_req_t *r, s3h_out_t *o);
int s3api_put_finish(front_req_t *r, s3h_out_t *o, bool part);
/* Commits r->w as the object (with the request's metadata, etag_hex and, when not NULL, the
 * crc64nvme c64) or as the part; adds ETag and the verified checksums to the answer. 0 or the
 * error's status. */
int s3api_put_commit(front_req_t *r, s3h_out_t *o, bool part, const s3_sums_t *want,
                     const char *etag_hex, const char *c64);
/* After store_writer_open for a PUT or UploadPart: part ETags where allowed (see front_config_t).
 */
void s3api_put_etag_mode(front_req_t *r, bool part);

/* object_write.c: x-amz-copy-source, parsed and opened (preconditions applied). */
typedef struct s3api_copy_src {
    char *bucket;
    char *key;
    char version_id[DATA_VERSION_ID_MAX]; /* ?versionId= of the source, or "" */
} s3api_copy_src_t;
int s3api_copy_src_parse(front_req_t *r, s3h_out_t *o, s3api_copy_src_t *c);
/* Opens the copy source (rd NULL: its metadata only; else a reader of its bytes, the
 * caller's to close), checks s3:GetObject and the x-amz-copy-source-if-* conditions. */
int s3api_copy_src_open(front_req_t *r, s3h_out_t *o, const s3api_copy_src_t *c, data_obj_meta_t *m,
                        data_reader_t **rd);
void s3api_copy_src_free(s3api_copy_src_t *c);

/* mpu.c: the headers CreateMultipartUpload names the object's checksum with; kept in the
 * upload's metadata JSON under the same names, never sent back as metadata. */
#define S3API_MPU_SUM_ALGO "x-amz-checksum-algorithm"
#define S3API_MPU_SUM_TYPE "x-amz-checksum-type"

/* mpu_sums.c: CreateMultipartUpload's x-amz-checksum-algorithm and -type, checked and kept
 * in m's metadata JSON (and echoed on the answer); 0 or the error's status. */
int s3api_mpu_sum_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m);
/* mpu_sums.c: what CompleteMultipartUpload derives for the upload, and the whole-object
 * values the client expects (x-amz-checksum-crc32c / -crc64nvme on the request). */
int s3api_mpu_sum_complete(front_req_t *r, s3h_out_t *o, store_mpu_sums_t *sums);

/* mpu.c: partNumber and uploadId of UploadPart(Copy), with the upload looked up. */
int s3api_mpu_part_query(front_req_t *r, s3h_out_t *o);

/* ---- handler steps (the front_ops rows) --------------------------------------------------- */

int s3api_read_object(front_req_t *r, s3h_out_t *o);
/* object_scatter.c: POST ?x-wharf-scatter=1, the scatter GET */
int s3api_scatter_begin(front_req_t *r, s3h_out_t *o);
int s3api_scatter_finish(front_req_t *r, s3h_out_t *o);
/* POST ?x-wharf-gather=1&uploadId&partNumber, the gather UploadPart (object_gather.c), and
 * the RDMA PUT of a part from the windows w[0..n) (sorted by part offset), size bytes in all
 * (rdma_ops.c). */
int s3api_gather_begin(front_req_t *r, s3h_out_t *o);
int s3api_gather_finish(front_req_t *r, s3h_out_t *o);
struct xfer_window;
int s3api_rdma_put_gather(front_req_t *r, s3h_out_t *o, bool crc32c, const struct xfer_window *w,
                          size_t n, uint64_t size);

int s3api_write_put_begin(front_req_t *r, s3h_out_t *o);
int s3api_write_put_finish(front_req_t *r, s3h_out_t *o);
int s3api_write_copy(front_req_t *r, s3h_out_t *o);
int s3api_write_delete(front_req_t *r, s3h_out_t *o);
int s3api_write_rename(front_req_t *r, s3h_out_t *o); /* object_rename.c */
/* object_append.c: PutObject with x-amz-write-offset-bytes. begin: 0 when absent or acceptable,
 * before the body; commit: in place of the object commit of s3api_put_commit. */
int s3api_append_begin(front_req_t *r, s3h_out_t *o);
int s3api_append_commit(front_req_t *r, s3h_out_t *o, const s3_sums_t *want, const char *etag_hex,
                        const char *c64);
int s3api_write_delete_many_begin(front_req_t *r, s3h_out_t *o);
int s3api_write_delete_many_finish(front_req_t *r, s3h_out_t *o);

int s3api_object_attributes(front_req_t *r, s3h_out_t *o);

/* object_batch.c: POST /bucket?rdma-batch, many keys into or from one token's region. */
int s3api_batch_begin(front_req_t *r, s3h_out_t *o);
int s3api_batch_finish(front_req_t *r, s3h_out_t *o);

int s3api_list_v1(front_req_t *r, s3h_out_t *o);
int s3api_list_v2(front_req_t *r, s3h_out_t *o);
int s3api_list_versions(front_req_t *r, s3h_out_t *o);

/* post_object.c: POST Object (the browser form upload). */
int s3api_post_begin(front_req_t *r, s3h_out_t *o);
int s3api_post_finish(front_req_t *r, s3h_out_t *o);
void s3api_post_free(front_req_t *r);

int s3api_mpu_create(front_req_t *r, s3h_out_t *o);
int s3api_mpu_part_begin(front_req_t *r, s3h_out_t *o);
int s3api_mpu_part_finish(front_req_t *r, s3h_out_t *o);
int s3api_mpu_part_copy(front_req_t *r, s3h_out_t *o);
int s3api_mpu_complete_begin(front_req_t *r, s3h_out_t *o);
int s3api_mpu_complete_finish(front_req_t *r, s3h_out_t *o);
int s3api_mpu_abort(front_req_t *r, s3h_out_t *o);
int s3api_mpu_list_parts(front_req_t *r, s3h_out_t *o);
int s3api_mpu_list_uploads(front_req_t *r, s3h_out_t *o);

#endif
