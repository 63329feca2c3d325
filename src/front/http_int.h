/* Internal to the HTTP front (http.c: the request's life; http_reply.c: replies;
 * http_front.c: the daemons, connection limits and deadlines, the handler threads). */
#ifndef WH_FRONT_HTTP_INT_H
#define WH_FRONT_HTTP_INT_H

#include "front/front.h"

#include <microhttpd.h>
#include <time.h>

/* ---- http.c: libmicrohttpd callbacks ---- */

enum MHD_Result srv_http_access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls);
void *srv_http_uri_cb(void *cls, const char *uri, struct MHD_Connection *c);
void srv_http_completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                           enum MHD_RequestTerminationCode toe);

/* The request path before any S3 handler, without libmicrohttpd (the fuzz driver calls it
 * the way the callbacks do). A request starts zeroed with srv, method and raw_uri set. */
/* Adds one header line as libmicrohttpd hands it over; false once the size or line limit
 * is passed (or on OOM, with hdr_oom set): the request is to be refused. */
bool srv_req_add_header(srv_req_t *r, const char *key, const char *value);
/* Sorts the headers by name and joins repeats; false on OOM. */
bool srv_req_index_headers(srv_req_t *r);
/* Splits raw_uri into path and query; false on OOM. */
bool srv_req_split_uri(srv_req_t *r);
/* SigV4 over the collected request, with the server's credentials; fills r->auth. */
s3_err_t srv_req_verify(srv_req_t *r, time_t now, char *msg, size_t msglen);
/* Frees everything the request holds, and r. */
void srv_req_free(srv_req_t *r);

/* ---- http_front.c ---- */

/* The connection's request headers are complete: its header deadline no longer applies. */
void srv_conn_headers_done(srv_t *s, struct MHD_Connection *c);
/* The connection's request ended; its next request's headers are due within the deadline. */
void srv_conn_request_done(srv_t *s, struct MHD_Connection *c);

/* Runs job->fn(job->arg) on a handler thread (handlers may block on disk and on RDMA; the
 * event threads must not). Returns false when no handler thread can take it (none running
 * and none can be started): the caller then runs it itself. */
bool srv_jobs_submit(srv_t *s, srv_job_t *job);

/* The absolute path of the server's Unix socket when r came over TCP from this host (the
 * connection's two ends have one address), else NULL: /health names it to such a peer, so a
 * client given only the HTTP endpoint can find the socket (for ofi+shm). buf holds it. */
const char *srv_unix_path_for_local_peer(srv_req_t *r, char *buf, size_t len);

/* Connection and handler gauges for /metrics. */
void srv_http_metrics(srv_t *s, wh_sbuf_t *out);

#endif
