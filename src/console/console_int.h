/* Internal to the console: the HTTP side (console.c) and the data the pages show (api.c). */
#ifndef WH_CONSOLE_CONSOLE_INT_H
#define WH_CONSOLE_CONSOLE_INT_H

#include "console/console.h"
#include "s3ctl/s3ctl.h"

#include <jansson.h>

/* The pages' files, embedded at build time (cmake/embed_assets.cmake). */
typedef struct con_asset {
    const char *path; /* "/console/console.js" */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len;
} con_asset_t;
extern const con_asset_t con_assets[];
extern const size_t con_assets_count;

/* Largest object the object browser downloads (an S3 client reads the others). */
#define CON_DOWNLOAD_MAX (1u << 20)
/* Objects listed per page of the object browser. */
#define CON_LIST_PAGE 200
/* Objects counted per bucket on the buckets page (beyond: shown as a lower bound), and over
 * all buckets of one request. */
#define CON_COUNT_MAX 100000
#define CON_COUNT_TOTAL 1000000

/* Replies: JSON (taken), an error as {"error":code,"message":msg}, or bytes (malloc'd, taken). */
void con_reply_json(srv_req_t *r, int status, json_t *j);
void con_reply_error(srv_req_t *r, int status, const char *code, const char *msg);
void con_reply_bytes(srv_req_t *r, int status, const char *type, void *data, size_t n,
                     const char *disposition);
/* The error an s3ctl step put in o, as a console error. */
void con_reply_out(srv_req_t *r, const srv_out_t *o);
void con_out_init(srv_out_t *o);
void con_out_free(srv_out_t *o);
/* A JSON string of s; invalid UTF-8 becomes an escaped form of its bytes. */
json_t *con_jstr(const char *s);

/* The API's GET endpoints (api.c); the request's principal is in r->who, the console
 * permission checked. */
void con_api_cluster(srv_req_t *r);
void con_api_buckets(srv_req_t *r);
void con_api_objects(srv_req_t *r);
void con_api_head(srv_req_t *r);
void con_api_download(srv_req_t *r);
void con_api_metrics(srv_req_t *r);
void con_api_errors(srv_req_t *r);

#endif
