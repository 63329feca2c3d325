/* SPDX-License-Identifier: Apache-2.0 */
/* Signature Version 2 against AWS's published examples ("Signing and Authenticating REST
 * Requests": the johnsmith object GET, PUT, list, ?acl, the upload with x-amz-* headers on a
 * virtual-hosted bucket, and the query-string example), then the refusals: a changed
 * signature, an unknown key, a malformed header, a skewed or missing date, an expired URL,
 * and the POST form signature. */
#include "auth/sigv2.h"
#include "base/util.h"
#include "check.h"

#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define MAX_H 12
typedef struct treq {
    const char *names[MAX_H];
    const char *values[MAX_H];
    size_t n;
} treq_t;

static const char *treq_get(void *arg, const char *lname)
{
    treq_t *t = arg;
    for (size_t i = 0; i < t->n; i++)
        if (strcasecmp(t->names[i], lname) == 0)
            return t->values[i];
    return NULL;
}

static const char *treq_at(void *arg, size_t i, const char **value)
{
    treq_t *t = arg;
    if (i >= t->n)
        return NULL;
    *value = t->values[i];
    return t->names[i];
}

static const char *secret_of(void *arg, const char *ak)
{
    (void)arg;
    return strcmp(ak, "AKIAIOSFODNN7EXAMPLE") == 0 ? "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
                                                   : NULL;
}

static time_t at(const char *http_date)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    strptime(http_date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    return timegm(&tm);
}

/* Verifies method path?query with the headers (name, value pairs; NULL-terminated) at the
 * Date's time (plus skew). */
static s3_err_t verify(const char *method, const char *path, const char *query, const char *vhost,
                       long skew, char *msg, const char *const *h)
{
    treq_t t = {0};
    for (size_t i = 0; h[i] && t.n < MAX_H; i += 2) {
        t.names[t.n] = h[i];
        t.values[t.n++] = h[i + 1];
    }
    auth_http_req_t r = {.method = method,
                         .path = path,
                         .query = query,
                         .get_header = treq_get,
                         .header_at = treq_at,
                         .arg = &t};
    const char *d = treq_get(&t, "x-amz-date") ? treq_get(&t, "x-amz-date") : treq_get(&t, "date");
    time_t now = d ? at(d) + skew : (time_t)1175139000 + skew;
    auth_auth_t a;
    s3_err_t e = auth_sigv2_verify(&r, vhost, secret_of, NULL, now, &a, msg, 256);
    if (e == S3_OK && (!a.sigv2 || strcmp(a.access_key, "AKIAIOSFODNN7EXAMPLE") != 0))
        return S3_ERR_INTERNAL;
    return e;
}

static void test_aws_examples(void)
{
    char msg[256];
    const char *get[] = {"Host",
                         "johnsmith.s3.amazonaws.com",
                         "Date",
                         "Tue, 27 Mar 2007 19:36:42 +0000",
                         "Authorization",
                         "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
                         NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, get) == S3_OK);
    CHECK(verify("GET", "/johnsmith/photos/puppy.jpg", NULL, NULL, 0, msg, get) == S3_OK);
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, NULL, 0, msg, get) == S3_ERR_SIGNATURE_MISMATCH);
    CHECK(verify("HEAD", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, get) ==
          S3_ERR_SIGNATURE_MISMATCH);
    const char *put[] = {"Content-Type",
                         "image/jpeg",
                         "Content-Length",
                         "94328",
                         "Date",
                         "Tue, 27 Mar 2007 21:15:45 +0000",
                         "Authorization",
                         "AWS AKIAIOSFODNN7EXAMPLE:MyyxeRY7whkBe+bq8fHCL/2kKUg=",
                         NULL};
    CHECK(verify("PUT", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, put) == S3_OK);
    /* A list: its query parameters are not sub-resources, the bucket's "/" is signed. */
    const char *list[] = {"Date", "Tue, 27 Mar 2007 19:42:41 +0000", "Authorization",
                          "AWS AKIAIOSFODNN7EXAMPLE:htDYFYduRNen8P9ZfE/s9SuKy0U=", NULL};
    CHECK(verify("GET", "/", "prefix=photos&max-keys=50&marker=puppy", "johnsmith", 0, msg, list) ==
          S3_OK);
    const char *acl[] = {"Date", "Tue, 27 Mar 2007 19:44:46 +0000", "Authorization",
                         "AWS AKIAIOSFODNN7EXAMPLE:c2WLPFtWHVgbEmeEG93a4cG37dM=", NULL};
    CHECK(verify("GET", "/", "acl", "johnsmith", 0, msg, acl) == S3_OK);
    CHECK(verify("GET", "/", NULL, "johnsmith", 0, msg, acl) == S3_ERR_SIGNATURE_MISMATCH);
    /* x-amz-* headers: lowercase, sorted, repeated ones comma-joined (the caller joins). */
    const char *up[] = {"Content-MD5",
                        "4gJE4saaMU4BqNR0kLY+lw==",
                        "Content-Type",
                        "application/x-download",
                        "Date",
                        "Tue, 27 Mar 2007 21:06:08 +0000",
                        "x-amz-acl",
                        "public-read",
                        "X-Amz-Meta-ReviewedBy",
                        "joe@johnsmith.net,jane@johnsmith.net",
                        "X-Amz-Meta-FileChecksum",
                        "0x02661779",
                        "X-Amz-Meta-ChecksumAlgorithm",
                        "crc32",
                        "Authorization",
                        "AWS AKIAIOSFODNN7EXAMPLE:ilyl83RwaSoYIEdixDQcA4OnAnc=",
                        NULL};
    CHECK(verify("PUT", "/db-backup.dat.gz", NULL, "static.johnsmith.net", 0, msg, up) == S3_OK);
    /* The query form: Expires on the Date line; served until then, AccessDenied after. */
    const char *none[] = {NULL};
    const char *q = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&"
                    "Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    CHECK(verify("GET", "/photos/puppy.jpg", q, "johnsmith", 0, msg, none) == S3_OK);
    CHECK(verify("GET", "/photos/puppy.jpg", q, "johnsmith", 621, msg, none) ==
          S3_ERR_ACCESS_DENIED);
    CHECK(strstr(msg, "expired") != NULL);
    const char *q2 = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139621&"
                     "Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
    CHECK(verify("GET", "/photos/puppy.jpg", q2, "johnsmith", 0, msg, none) ==
          S3_ERR_SIGNATURE_MISMATCH);
}

static void test_refusals(void)
{
    char msg[256];
    const char *bad_sig[] = {"Date", "Tue, 27 Mar 2007 19:36:42 +0000", "Authorization",
                             "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMV=", NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, bad_sig) ==
          S3_ERR_SIGNATURE_MISMATCH);
    const char *unknown[] = {"Date", "Tue, 27 Mar 2007 19:36:42 +0000", "Authorization",
                             "AWS AKIANOSUCHKEY:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, unknown) ==
          S3_ERR_INVALID_ACCESS_KEY);
    const char *malformed[] = {"Date", "Tue, 27 Mar 2007 19:36:42 +0000", "Authorization",
                               "AWS HAHAHA", NULL};
    CHECK(verify("GET", "/", NULL, NULL, 0, msg, malformed) == S3_ERR_INVALID_ARGUMENT);
    const char *get[] = {"Date", "Tue, 27 Mar 2007 19:36:42 +0000", "Authorization",
                         "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 901, msg, get) ==
          S3_ERR_REQUEST_TIME_TOO_SKEWED);
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", -901, msg, get) ==
          S3_ERR_REQUEST_TIME_TOO_SKEWED);
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 899, msg, get) == S3_OK);
    const char *nodate[] = {"Authorization",
                            "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, nodate) ==
          S3_ERR_ACCESS_DENIED);
    const char *baddate[] = {"x-amz-date", "Bad Date", "Authorization",
                             "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=", NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, baddate) ==
          S3_ERR_ACCESS_DENIED);
    /* An x-amz-* header added after signing is in the string to sign: the signature fails. */
    const char *added[] = {"Date",
                           "Tue, 27 Mar 2007 19:36:42 +0000",
                           "x-amz-copy-source",
                           "/other/key",
                           "Authorization",
                           "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
                           NULL};
    CHECK(verify("GET", "/photos/puppy.jpg", NULL, "johnsmith", 0, msg, added) ==
          S3_ERR_SIGNATURE_MISMATCH);
    /* The POST form. */
    char sig[AUTH_SIGV2_SIG_LEN + 1], ak[128];
    auth_sigv2_sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "eyJwb2xpY3kiOjF9", 16, sig);
    CHECK(auth_sigv2_post_verify("AKIAIOSFODNN7EXAMPLE", sig, "eyJwb2xpY3kiOjF9", secret_of, NULL,
                                 ak, msg, sizeof msg) == S3_OK);
    CHECK(auth_sigv2_post_verify("AKIAIOSFODNN7EXAMPLE", sig, "eyJwb2xpY3kiOjJ9", secret_of, NULL,
                                 ak, msg, sizeof msg) == S3_ERR_SIGNATURE_MISMATCH);
    CHECK(auth_sigv2_post_verify("nobody", sig, "eyJwb2xpY3kiOjF9", secret_of, NULL, ak, msg,
                                 sizeof msg) == S3_ERR_INVALID_ACCESS_KEY);
}

int main(void)
{
    RUN(test_aws_examples);
    RUN(test_refusals);
    return check_done();
}
