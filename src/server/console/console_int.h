/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the console: the HTTP side (console.c) and the data the pages show (api.c). */
#ifndef WH_CONSOLE_CONSOLE_INT_H
#define WH_CONSOLE_CONSOLE_INT_H

#include "console/console.h"
#include "s3ctl/s3ctl.h"

#include <jansson.h>

/* The pages' files, embedded at build time (cmake/embed_assets.cmake). */
typedef struct console_asset {
    const char *path; /* "/console/console.js" */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len;
} console_asset_t;
extern const console_asset_t console_assets[];
extern const size_t console_assets_count;

/* Largest object the object browser downloads (an S3 client reads the others). */
#define CONSOLE_DOWNLOAD_MAX (1u << 20)
/* Objects listed per page of the object browser. */
#define CONSOLE_LIST_PAGE 200
/* Objects counted per bucket on the buckets page (beyond: shown as a lower bound), and over
 * all buckets of one request. */
#define CONSOLE_COUNT_MAX 100000
#define CONSOLE_COUNT_TOTAL 1000000

/* Replies: JSON (taken), an error as {"error":code,"message":msg}, or bytes (malloc'd, taken). */
void console_reply_json(front_req_t *r, int status, json_t *j);
void console_reply_error(front_req_t *r, int status, const char *code, const char *msg);
void console_reply_bytes(front_req_t *r, int status, const char *type, void *data, size_t n,
                         const char *disposition);
/* The error an s3ctl step put in o, as a console error. */
void console_reply_out(front_req_t *r, const s3h_out_t *o);
void console_out_init(s3h_out_t *o);
void console_out_free(s3h_out_t *o);
/* A JSON string of s; invalid UTF-8 becomes an escaped form of its bytes. */
json_t *console_jstr(const char *s);

/* The API's GET endpoints (api.c); the request's principal is in r->who, the console
 * permission checked. */
void console_api_cluster(front_req_t *r);
void console_api_buckets(front_req_t *r);
void console_api_objects(front_req_t *r);
void console_api_head(front_req_t *r);
void console_api_download(front_req_t *r);
void console_api_metrics(front_req_t *r);
void console_api_errors(front_req_t *r);

#endif
