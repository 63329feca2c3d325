/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the HTTP front (http.c: the request's life; http_reply.c: replies;
 * http_front.c: the daemons, connection limits and deadlines, the handler threads). */
#ifndef WH_FRONT_HTTP_INT_H
#define WH_FRONT_HTTP_INT_H

#include "front/front.h"

#include <microhttpd.h>
#include <time.h>

/* ---- http.c: libmicrohttpd callbacks ---- */

enum MHD_Result front_http_access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls);
void *front_http_uri_cb(void *cls, const char *uri, struct MHD_Connection *c);
void front_http_completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                             enum MHD_RequestTerminationCode toe);

/* The request path before any S3 handler, without libmicrohttpd (the fuzz driver calls it
 * the way the callbacks do). A request starts zeroed with srv, method and raw_uri set. */
/* Adds one header line as libmicrohttpd hands it over; false once the size or line limit
 * is passed (or on OOM, with hdr_oom set): the request is to be refused. */
bool front_req_add_header(front_req_t *r, const char *key, const char *value);
/* front_req_add_header as MHD_get_connection_values' iterator (cls: the request). */
enum MHD_Result front_req_collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value);
/* Sorts the headers by name and joins repeats; false on OOM. */
bool front_req_index_headers(front_req_t *r);
/* Splits raw_uri into path and query; false on OOM. */
bool front_req_split_uri(front_req_t *r);
/* SigV4 over the collected request, with the server's credentials; fills r->auth. */
s3_err_t front_req_verify(front_req_t *r, time_t now, char *msg, size_t msglen);
/* Frees everything the request holds, and r. */
void front_req_free(front_req_t *r);

/* ---- http_front.c ---- */

/* The connection's request headers are complete: its header deadline no longer applies. */
void front_conn_headers_done(front_t *s, struct MHD_Connection *c);
/* The connection's request ended; its next request's headers are due within the deadline. */
void front_conn_request_done(front_t *s, struct MHD_Connection *c);

/* Runs job->fn(job->arg) on a handler thread (handlers may block on disk and on RDMA; the
 * event threads must not). Returns false when no handler thread can take it (none running
 * and none can be started): the caller then runs it itself. */
bool front_jobs_submit(front_t *s, front_job_t *job);

/* The absolute path of the server's Unix socket when r came over TCP from this host (the
 * connection's two ends have one address), else NULL: /health names it to such a peer, so a
 * client given only the HTTP endpoint can find the socket (for ofi+shm). buf holds it. */
const char *front_unix_path_for_local_peer(front_req_t *r, char *buf, size_t len);

/* Connection and handler gauges for /metrics. */
void front_http_metrics(front_t *s, wh_sbuf_t *out);

#endif
