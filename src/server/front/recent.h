/* SPDX-License-Identifier: Apache-2.0 */
/* Recent error responses: a bounded ring the front fills on every reply of status 400 or more
 * (front_reply), for the browser console's "recent errors" page. Only what the reply line of the
 * log has: no query string (a presigned URL's), no header, no body. */
#ifndef WH_FRONT_RECENT_H
#define WH_FRONT_RECENT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define FRONT_RECENT_ERRORS 128 /* entries kept; older ones are overwritten */

typedef struct front_recent_err {
    uint64_t seq; /* 1, 2, ...: the order of arrival */
    time_t t;
    int status;
    char id[17];     /* x-amz-request-id */
    char method[12]; /* "GET", ... */
    char api[40];    /* the metrics label (route.h) */
    char code[48];   /* the S3 error code, or "" */
    char path[160];  /* raw path, percent-encoded, truncated */
    char msg[200];   /* the error message, truncated */
    char peer[64];   /* "ip:port" or "unix" */
} front_recent_err_t;

typedef struct front_recent {
    pthread_mutex_t mu;
    uint64_t n; /* errors recorded so far (the next one's seq is n + 1) */
    front_recent_err_t e[FRONT_RECENT_ERRORS];
} front_recent_t;

void front_recent_init(front_recent_t *rc);
void front_recent_free(front_recent_t *rc);
/* Records one error (e->seq is set here). */
void front_recent_add(front_recent_t *rc, const front_recent_err_t *e);
/* Copies up to cap entries, newest first; returns how many. *total: errors recorded so far. */
size_t front_recent_copy(front_recent_t *rc, front_recent_err_t *out, size_t cap, uint64_t *total);

#endif
