/* SPDX-License-Identifier: Apache-2.0 */
/* S3 Object Lock documents: the bucket's ObjectLockConfiguration (Put/GetObjectLockConfiguration),
 * a version's Retention (Put/GetObjectRetention) and LegalHold (Put/GetObjectLegalHold), and the
 * x-amz-object-lock-retain-until-date form of a date. Parsed, checked against S3's rules and
 * written back in one canonical form (the configuration's stored form). Pure; shared with the
 * server (s3ctl/lock.c) and fuzz/fuzz_object_lock.c. */
#ifndef WH_S3_OBJECT_LOCK_H
#define WH_S3_OBJECT_LOCK_H

#include "base/util.h"
#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A retention mode; the numbers are the store's (data/types.h, data_lock_mode_t). */
typedef enum {
    S3_LOCK_NONE = 0,
    S3_LOCK_GOVERNANCE = 1,
    S3_LOCK_COMPLIANCE = 2,
} s3_lock_mode_t;

/* S3's limits of a default retention period (about 100 years). */
#define S3_LOCK_MAX_DAYS 36500
#define S3_LOCK_MAX_YEARS 100

typedef struct s3_lock_config {
    /* ObjectLockEnabled is always Enabled in a valid document. The default retention rule:
     * mode S3_LOCK_NONE when the document has no Rule; else exactly one of days, years > 0. */
    s3_lock_mode_t mode;
    int64_t days, years;
} s3_lock_config_t;

/* MalformedXML / InvalidArgument with msg naming the fault. */
s3_err_t s3_lock_config_parse(const char *xml, size_t len, s3_lock_config_t *out, char *msg,
                              size_t msglen);
/* The ObjectLockConfiguration document (no XML declaration; xmlns NULL: none). */
void s3_lock_config_format(const s3_lock_config_t *c, wh_sbuf_t *out, const char *xmlns);
/* The default retain-until of an object made at now under c (0 when c has no rule). */
int64_t s3_lock_config_until(const s3_lock_config_t *c, int64_t now);

/* A Retention document: mode and retain-until (both, or neither: no retention). */
typedef struct s3_lock_retention {
    s3_lock_mode_t mode;
    int64_t until; /* seconds since the epoch (a fraction of a second rounds up); 0: none */
} s3_lock_retention_t;
s3_err_t s3_lock_retention_parse(const char *xml, size_t len, s3_lock_retention_t *out, char *msg,
                                 size_t msglen);
void s3_lock_retention_format(const s3_lock_retention_t *r, wh_sbuf_t *out, const char *xmlns);

/* A LegalHold document: Status ON (*on true) or OFF. */
s3_err_t s3_lock_legal_hold_parse(const char *xml, size_t len, bool *on, char *msg, size_t msglen);
void s3_lock_legal_hold_format(bool on, wh_sbuf_t *out, const char *xmlns);

/* "GOVERNANCE" / "COMPLIANCE" (exact, as S3 takes them) into *out: 0, or -1. */
int s3_lock_mode_parse(const char *s, size_t len, s3_lock_mode_t *out);
const char *s3_lock_mode_name(s3_lock_mode_t m); /* "" for NONE */
/* An ISO 8601 date and time in UTC (2030-01-02T03:04:05Z, with an optional fraction of a
 * second, Z or +00:00), as S3 takes a retain-until date: seconds since the epoch (a fraction
 * rounds up), 0, or -1 when malformed. */
int s3_lock_date_parse(const char *s, size_t len, int64_t *out);
/* The date as S3 writes it: 2030-01-02T03:04:05.000Z. */
void s3_lock_date_format(int64_t t, char out[32]);

#endif
