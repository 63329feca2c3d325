/* SPDX-License-Identifier: Apache-2.0 */
/* SigV4 signing (client side): the Authorization header and presigned URLs. */
#include "auth/sigv4_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Signing (client) */

typedef struct sign_hdr {
    char *lname;
    const char *value;
    size_t idx;
} sign_hdr_t;

static int sign_hdr_cmp(const void *a, const void *b)
{
    const sign_hdr_t *x = a, *y = b;
    int c = strcmp(x->lname, y->lname);
    if (c)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx; /* stable: keep the caller's order */
}

int auth_sigv4_sign_service(const auth_sign_input_t *in, const char *service,
                            wh_sbuf_t *canonical_request, char *out, size_t outlen)
{
    int rc = -1;
    wh_sbuf_t creq, signed_hdrs;
    wh_sbuf_init(&creq);
    wh_sbuf_init(&signed_hdrs);
    sign_hdr_t *hs = calloc(in->n_headers ? in->n_headers : 1, sizeof *hs);
    if (!hs)
        return -1;
    for (size_t i = 0; i < in->n_headers; i++) {
        hs[i].lname = strdup(in->header_names[i]);
        if (!hs[i].lname)
            goto cleanup;
        for (char *c = hs[i].lname; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        hs[i].value = in->header_values[i] ? in->header_values[i] : "";
        hs[i].idx = i;
    }
    qsort(hs, in->n_headers, sizeof *hs, sign_hdr_cmp);

    char amz_date[17], date8[9], scope[160];
    wh_amz_date(in->when, amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/%s/" SIGV4_TERM, date8, in->region, service) >=
        sizeof scope)
        goto cleanup;

    wh_sbuf_puts(&creq, in->method);
    wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_puts(&creq, in->canonical_uri && *in->canonical_uri ? in->canonical_uri : "/");
    wh_sbuf_append(&creq, "\n", 1);
    if (auth_sigv4_canonical_query(in->query, NULL, &creq) != 0)
        goto cleanup;
    wh_sbuf_append(&creq, "\n", 1);
    for (size_t i = 0; i < in->n_headers; i++) {
        int same = i > 0 && strcmp(hs[i].lname, hs[i - 1].lname) == 0;
        if (same) {
            wh_sbuf_append(&creq, ",", 1); /* repeated header: values comma-joined in order */
        } else {
            if (i > 0) {
                wh_sbuf_append(&creq, "\n", 1);
                wh_sbuf_append(&signed_hdrs, ";", 1);
            }
            wh_sbuf_puts(&creq, hs[i].lname);
            wh_sbuf_append(&creq, ":", 1);
            wh_sbuf_puts(&signed_hdrs, hs[i].lname);
        }
        sigv4_canon_value(&creq, hs[i].value);
    }
    if (in->n_headers)
        wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_append(&creq, "\n", 1);
    if (signed_hdrs.len)
        wh_sbuf_append(&creq, signed_hdrs.data, signed_hdrs.len);
    wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_puts(&creq, in->payload_hash ? in->payload_hash : AUTH_UNSIGNED_PAYLOAD);
    if (creq.oom || signed_hdrs.oom)
        goto cleanup;

    uint8_t key[32];
    char sig[65];
    auth_sigv4_signing_key_service(in->secret_key, date8, in->region, service, key);
    sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
    int n = snprintf(out, outlen, SIGV4_ALGO " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                     in->access_key, scope, signed_hdrs.data ? signed_hdrs.data : "", sig);
    if (n < 0 || (size_t)n >= outlen)
        goto cleanup;
    if (canonical_request)
        wh_sbuf_append(canonical_request, creq.data, creq.len);
    rc = 0;
cleanup:
    for (size_t i = 0; i < in->n_headers; i++)
        free(hs[i].lname);
    free(hs);
    wh_sbuf_free(&creq);
    wh_sbuf_free(&signed_hdrs);
    return rc;
}

int auth_sigv4_sign(const auth_sign_input_t *in, char *out, size_t outlen)
{
    return auth_sigv4_sign_service(in, "s3", NULL, out, outlen);
}

int auth_sigv4_presign(const char *method, const char *canonical_uri, const char *host,
                       const char *access_key, const char *secret_key, const char *region,
                       time_t when, unsigned expires, wh_sbuf_t *out)
{
    if (expires < 1 || expires > SIGV4_MAX_PRESIGN_EXPIRES)
        return -1;
    char amz_date[17], date8[9], scope[160];
    wh_amz_date(when, amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/s3/" SIGV4_TERM, date8, region) >=
        sizeof scope)
        return -1;
    int rc = -1;
    wh_sbuf_t q, cred, creq;
    wh_sbuf_init(&q);
    wh_sbuf_init(&cred);
    wh_sbuf_init(&creq);
    wh_sbuf_puts(&cred, access_key);
    wh_sbuf_append(&cred, "/", 1);
    wh_sbuf_puts(&cred, scope);
    /* Already in canonical (sorted) order. */
    wh_sbuf_puts(&q, "X-Amz-Algorithm=" SIGV4_ALGO "&X-Amz-Credential=");
    s3_uri_encode(cred.data ? cred.data : "", cred.len, 1, &q);
    wh_sbuf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%u&X-Amz-SignedHeaders=host", amz_date,
                   expires);
    wh_sbuf_printf(&creq, "%s\n%s\n", method,
                   canonical_uri && *canonical_uri ? canonical_uri : "/");
    wh_sbuf_append(&creq, q.data, q.len);
    wh_sbuf_puts(&creq, "\nhost:");
    sigv4_canon_value(&creq, host);
    wh_sbuf_puts(&creq, "\n\nhost\n" AUTH_UNSIGNED_PAYLOAD);
    if (q.oom || cred.oom || creq.oom)
        goto cleanup;
    uint8_t key[32];
    char sig[65];
    auth_sigv4_signing_key(secret_key, date8, region, key);
    sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
    wh_sbuf_append(out, q.data, q.len);
    wh_sbuf_puts(out, "&X-Amz-Signature=");
    wh_sbuf_puts(out, sig);
    rc = out->oom ? -1 : 0;
cleanup:
    wh_sbuf_free(&q);
    wh_sbuf_free(&cred);
    wh_sbuf_free(&creq);
    return rc;
}
