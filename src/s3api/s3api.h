/* The S3 API: the dispatch and the object handlers, one file per API family. The bucket,
 * configuration and IAM handlers and what every handler shares (answers, authorization,
 * encryption, versions, ACLs, Object Lock, tagging) are the layer below (s3ctl/s3ctl.h).
 *
 *   s3api.c     the srv_ops table (route.h), the dispatch (begin, finish, one reply sender)
 *               and srv_s3_app, the S3 API as the front serves it
 *   s3_read.c   GetObject, HeadObject
 *   s3_write.c  PutObject, CopyObject, DeleteObject, DeleteObjects
 *   s3_rdma.c   the x-amz-rdma-token data path for PUT and UploadPart, and RDMA refusals
 *   s3_list.c   ListObjects, ListObjectsV2, ListObjectVersions
 *   s3_mpu.c    multipart: create, parts (and part copy), complete, abort, list parts/uploads
 *   s3_mpu_sums.c  the whole-object checksum of a multipart upload (COMPOSITE, FULL_OBJECT)
 *   s3_meta.c   object metadata: what is kept from a request, the headers sent back
 *   s3_attrs.c  GetObjectAttributes, and ?partNumber= reads
 *   s3_post.c   POST Object: the browser form upload (policy, form signature, streamed file)
 *   delegate.c  a GET or RDMA transfer handed to the engine's thread (delegate.h)
 *
 * A handler never queues a response itself: it returns the HTTP status and fills a srv_out_t
 * (an S3 error with its message, or a success with its headers and body), and srv_s3_send
 * turns that into the one reply. http.c has verified SigV4 (or found no signature: the
 * anonymous principal) before any handler runs, and srv_authorize has allowed the row's IAM
 * action before its begin step. */
#ifndef WH_S3API_S3API_H
#define WH_S3API_S3API_H

#include "front/front.h"
#include "s3ctl/s3ctl.h"

#include <stdbool.h>
#include <stdint.h>

/* The S3 API as the front serves it: its routing table and its steps (s3api.c). The roles
 * hand it to srv_start. */
extern const srv_app_ops_t srv_s3_app;
extern const srv_op_t srv_ops[];
extern const size_t srv_ops_count;
/* srv_route_parse_in (route.h) over srv_ops. */
void srv_route_parse(const char *method, const char *raw_path, const char *raw_query,
                     const char *host, const char *endpoint_host, bool has_copy_source,
                     srv_route_t *out);
/* The steps of srv_s3_app (front.h, srv_app_ops_t, says when each runs). */
void srv_s3_begin(srv_req_t *r);
void srv_s3_finish(srv_req_t *r);
void srv_s3_cleanup(srv_req_t *r);
void srv_s3_body_digest(srv_req_t *r, const void *p, size_t n);
/* s3_post.c: a piece of a POST Object form body (SRV_BODY_FORM); 0, or -1 with r->body_err
 * and r->body_msg set. */
int srv_s3_form_feed(srv_req_t *r, const void *p, size_t n);

/* Object metadata from the request (Content-Type, x-amz-meta-*, kept standard headers) into
 * m; an error status when a value cannot be kept as sent. */
int srv_meta_from_request(srv_req_t *r, srv_out_t *o, store_obj_meta_t *m);
/* A Content-Encoding list without its aws-chunked entries (malloc'd; "" when none is left):
 * "gzip, aws-chunked" keeps "gzip", "aws-chunked,br" keeps "br". NULL: no memory. */
char *srv_content_encoding_kept(const char *v);
/* The object's headers on a GET/HEAD answer; whole: the reply is the whole object. */
void srv_object_headers(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m, bool whole);

/* s3_attrs.c: ?partNumber=N of a GET/HEAD as the byte range of part N (*ranged: a 206 with
 * Content-Range). 0 or the error's status (400 InvalidPart past the last part). */
int srv_part_range(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m, uint64_t *off,
                   uint64_t *len, bool *ranged);

/* ---- shared between families ------------------------------------------------------------ */

/* s3_rdma.c: a failed or declined transfer as its answer (never 200, never a body). */
int srv_rdma_refuse(srv_req_t *r, srv_out_t *o, const srv_rdma_result_t *res, wh_status_t st);
/* s3_rdma.c: PUT or UploadPart whose body comes by RDMA read from the client's memory. */
/* crc32c: compute the body's CRC-32C (a part of an upload whose algorithm is CRC32C); it is
 * also computed when the request names CRC32C itself. */
int srv_rdma_put_object(srv_req_t *r, srv_out_t *o, bool part, bool crc32c);
/* The upload (its row from store_mpu_meta) was created with x-amz-checksum-algorithm CRC32C. */
bool srv_mpu_names_crc32c(const store_obj_meta_t *upload);

/* s3_write.c: the PUT body path shared by PutObject and UploadPart. */
int srv_put_begin(srv_req_t *r, srv_out_t *o, bool part);
/* The bucket's data layout for the writer r->w just opened (a cluster: replicas, or the
 * erasure coding of its tag wharf-ec), before any byte is written: every writer of new bytes
 * (PUT, UploadPart, POST, RDMA PUT and UploadPart, UploadPartCopy) asks it. 0, or the error
 * answered (400 naming a malformed tag, 503 naming too few servers up); the caller then
 * aborts the writer. */
int srv_put_layout(srv_req_t *r, srv_out_t *o);
int srv_put_finish(srv_req_t *r, srv_out_t *o, bool part);
/* Commits r->w as the object (with the request's metadata, etag_hex and, when not NULL, the
 * crc64nvme c64) or as the part; adds ETag and the verified checksums to the answer. 0 or the
 * error's status. */
int srv_put_commit(srv_req_t *r, srv_out_t *o, bool part, const s3_sums_t *want,
                   const char *etag_hex, const char *c64);
/* After store_writer_open for a PUT or UploadPart: part ETags where allowed (see srv_config_t). */
void srv_put_etag_mode(srv_req_t *r, bool part);

/* s3_write.c: x-amz-copy-source, parsed and opened (preconditions applied). */
typedef struct srv_copy_src {
    char *bucket;
    char *key;
    char version_id[STORE_VERSION_ID_MAX]; /* ?versionId= of the source, or "" */
} srv_copy_src_t;
int srv_copy_src_parse(srv_req_t *r, srv_out_t *o, srv_copy_src_t *c);
/* Opens the copy source (rd NULL: its metadata only; else a reader of its bytes, the
 * caller's to close), checks s3:GetObject and the x-amz-copy-source-if-* conditions. */
int srv_copy_src_open(srv_req_t *r, srv_out_t *o, const srv_copy_src_t *c, store_obj_meta_t *m,
                      store_reader_t **rd);
void srv_copy_src_free(srv_copy_src_t *c);

/* s3_mpu.c: the headers CreateMultipartUpload names the object's checksum with; kept in the
 * upload's metadata JSON under the same names, never sent back as metadata. */
#define SRV_MPU_SUM_ALGO "x-amz-checksum-algorithm"
#define SRV_MPU_SUM_TYPE "x-amz-checksum-type"

/* s3_mpu_sums.c: CreateMultipartUpload's x-amz-checksum-algorithm and -type, checked and kept
 * in m's metadata JSON (and echoed on the answer); 0 or the error's status. */
int srv_mpu_sum_request(srv_req_t *r, srv_out_t *o, store_obj_meta_t *m);
/* s3_mpu_sums.c: what CompleteMultipartUpload derives for the upload, and the whole-object
 * values the client expects (x-amz-checksum-crc32c / -crc64nvme on the request). */
int srv_mpu_sum_complete(srv_req_t *r, srv_out_t *o, store_mpu_sums_t *sums);

/* s3_mpu.c: partNumber and uploadId of UploadPart(Copy), with the upload looked up. */
int srv_mpu_part_query(srv_req_t *r, srv_out_t *o);

/* ---- handler steps (the srv_ops rows) --------------------------------------------------- */

int srv_read_object(srv_req_t *r, srv_out_t *o);

int srv_write_put_begin(srv_req_t *r, srv_out_t *o);
int srv_write_put_finish(srv_req_t *r, srv_out_t *o);
int srv_write_copy(srv_req_t *r, srv_out_t *o);
int srv_write_delete(srv_req_t *r, srv_out_t *o);
int srv_write_rename(srv_req_t *r, srv_out_t *o); /* s3_rename.c */
/* s3_append.c: PutObject with x-amz-write-offset-bytes. begin: 0 when absent or acceptable,
 * before the body; commit: in place of the object commit of srv_put_commit. */
int srv_append_begin(srv_req_t *r, srv_out_t *o);
int srv_append_commit(srv_req_t *r, srv_out_t *o, const s3_sums_t *want, const char *etag_hex,
                      const char *c64);
int srv_write_delete_many_begin(srv_req_t *r, srv_out_t *o);
int srv_write_delete_many_finish(srv_req_t *r, srv_out_t *o);

int srv_object_attributes(srv_req_t *r, srv_out_t *o);

int srv_list_v1(srv_req_t *r, srv_out_t *o);
int srv_list_v2(srv_req_t *r, srv_out_t *o);
int srv_list_versions(srv_req_t *r, srv_out_t *o);

/* s3_post.c: POST Object (the browser form upload). */
int srv_post_begin(srv_req_t *r, srv_out_t *o);
int srv_post_finish(srv_req_t *r, srv_out_t *o);
void srv_post_free(srv_req_t *r);

int srv_mpu_create(srv_req_t *r, srv_out_t *o);
int srv_mpu_part_begin(srv_req_t *r, srv_out_t *o);
int srv_mpu_part_finish(srv_req_t *r, srv_out_t *o);
int srv_mpu_part_copy(srv_req_t *r, srv_out_t *o);
int srv_mpu_complete_begin(srv_req_t *r, srv_out_t *o);
int srv_mpu_complete_finish(srv_req_t *r, srv_out_t *o);
int srv_mpu_abort(srv_req_t *r, srv_out_t *o);
int srv_mpu_list_parts(srv_req_t *r, srv_out_t *o);
int srv_mpu_list_uploads(srv_req_t *r, srv_out_t *o);

#endif
