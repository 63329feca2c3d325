/* Internal to the HTTP front (http.c: the request's life; http_reply.c: replies;
 * http_front.c: the daemons, connection limits and deadlines, the handler threads). */
#ifndef WH_SERVER_HTTP_INT_H
#define WH_SERVER_HTTP_INT_H

#include "server/server.h"

#include <microhttpd.h>

/* ---- http.c: libmicrohttpd callbacks ---- */

enum MHD_Result srv_http_access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version,
                                   const char *upload_data, size_t *upload_data_size,
                                   void **con_cls);
void *srv_http_uri_cb(void *cls, const char *uri, struct MHD_Connection *c);
void srv_http_completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                           enum MHD_RequestTerminationCode toe);

/* ---- http_front.c ---- */

/* The connection's request headers are complete: its header deadline no longer applies. */
void srv_conn_headers_done(srv_t *s, struct MHD_Connection *c);
/* The connection's request ended; its next request's headers are due within the deadline. */
void srv_conn_request_done(srv_t *s, struct MHD_Connection *c);

/* Runs job->fn(job->arg) on a handler thread (handlers may block on disk and on RDMA; the
 * event threads must not). Returns false when no handler thread can take it (none running
 * and none can be started): the caller then runs it itself. */
bool srv_jobs_submit(srv_t *s, srv_job_t *job);

/* Connection and handler gauges for /metrics. */
void srv_http_metrics(srv_t *s, wh_sbuf_t *out);

#endif
