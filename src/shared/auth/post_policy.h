/* SPDX-License-Identifier: Apache-2.0 */
/* The POST policy document of a browser upload form (S3 "POST Policy"): the expiration and
 * the conditions every form field must meet. Pure: the caller decodes the form. */
#ifndef WH_AUTH_POST_POLICY_H
#define WH_AUTH_POST_POLICY_H

#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* A form field as sent (name in any case; compared case-insensitively, as S3 does). */
typedef struct auth_post_field {
    const char *name;
    const char *value;
} auth_post_field_t;

/* content-length-range of the policy, when it has one. */
typedef struct auth_post_range {
    bool set;
    uint64_t min, max;
} auth_post_range_t;

/* Checks the decoded policy JSON against the form: bucket is the URL's bucket (the "bucket"
 * condition's value), fields every form field except the file. Answers S3's way:
 * InvalidPolicyDocument for a policy that is not one (bad JSON, no expiration, a condition of
 * an unknown kind), AccessDenied naming the failed condition, the expiry, or the extra form
 * fields no condition names (policy, x-amz-signature and x-ignore-* are exempt). range gets
 * the content-length-range, for the caller to apply to the file's size. */
s3_err_t auth_post_policy_check(const char *json, size_t len, time_t now, const char *bucket,
                                const auth_post_field_t *fields, size_t n, auth_post_range_t *range,
                                char *msg, size_t msglen);

#endif
