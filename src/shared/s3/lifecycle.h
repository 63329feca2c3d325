/* SPDX-License-Identifier: Apache-2.0 */
/* S3 bucket lifecycle: the LifecycleConfiguration document (PutBucketLifecycleConfiguration's
 * body), parsed, checked against S3's rules, written back in one canonical form (the stored
 * form), and the filter of a rule matched against an object. Pure; shared with the server's
 * lifecycle worker (s3ctl/lifecycle_run.c) and fuzz/fuzz_lifecycle.c. Transitions (storage
 * classes) are not built: a rule naming one is refused with NotImplemented. */
#ifndef WH_S3_LIFECYCLE_H
#define WH_S3_LIFECYCLE_H

#include "base/util.h"
#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define S3_LC_MAX_RULES 1000
#define S3_LC_MAX_TAGS 10     /* tags of one rule's filter */
#define S3_LC_MAX_PREFIX 1024 /* bytes of a filter's prefix */
#define S3_LC_MAX_DAYS 2147483647LL

typedef struct s3_lc_tag {
    char *key, *value;
} s3_lc_tag_t;

typedef struct s3_lc_rule {
    char *id;           /* NULL when not given */
    bool enabled;       /* Status Enabled (else Disabled) */
    bool legacy_prefix; /* a top-level Prefix instead of a Filter */
    bool and_form;      /* the Filter held an And */
    char *prefix;       /* NULL: none */
    s3_lc_tag_t *tags;
    size_t ntags;
    int64_t size_gt, size_lt; /* ObjectSizeGreaterThan / LessThan, -1 when not given */
    /* Expiration: Days (0: none), Date (-1: none), ExpiredObjectDeleteMarker. */
    int64_t exp_days;
    int64_t exp_date;
    bool exp_marker;
    /* NoncurrentVersionExpiration: NoncurrentDays (0: none), NewerNoncurrentVersions (0). */
    int64_t nc_days;
    int64_t nc_newer;
    int64_t abort_days; /* AbortIncompleteMultipartUpload's DaysAfterInitiation (0) */
} s3_lc_rule_t;

typedef struct s3_lc {
    s3_lc_rule_t *rules;
    size_t n;
} s3_lc_t;

/* MalformedXML / InvalidArgument with msg naming the fault, NotImplemented for a Transition.
 * out is freed on failure. */
s3_err_t s3_lc_parse(const char *xml, size_t len, s3_lc_t *out, char *msg, size_t msglen);
/* The LifecycleConfiguration document (no XML declaration). */
void s3_lc_format(const s3_lc_t *c, wh_sbuf_t *out, const char *xmlns);
void s3_lc_free(s3_lc_t *c); /* NULL-safe */

/* Whether the rule's filter takes an object: key (klen bytes), size, and its tags in the
 * stored query form ("k=v&k2=v2", NULL or "" for none). Tags are read only when the rule
 * names some (s3_lc_rule_needs_tags). */
bool s3_lc_rule_matches(const s3_lc_rule_t *r, const char *key, size_t klen, uint64_t size,
                        const char *tags);
bool s3_lc_rule_needs_tags(const s3_lc_rule_t *r);

/* When a version of time since falls due under a rule of days whole days: since + days days,
 * rounded up to the next midnight UTC as S3 does. day_s: a day's seconds (86400; a test
 * setting may shorten it, and then nothing is rounded). */
int64_t s3_lc_due(int64_t since, int64_t days, int64_t day_s);

#endif
