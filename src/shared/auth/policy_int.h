/* SPDX-License-Identifier: Apache-2.0 */
/* The compiled form of a policy, shared by the parser (policy.c) and the evaluator
 * (policy_eval.c). Private to src/shared/s3. */
#ifndef WH_AUTH_POLICY_INT_H
#define WH_AUTH_POLICY_INT_H

#include "auth/authz.h"

#include <stddef.h>

typedef struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    max_align_t data[];
} arena_blk_t;

typedef enum {
    K_UNKNOWN,
    K_SOURCE_IP,
    K_PREFIX,
    K_DELIMITER,
    K_MAX_KEYS,
    K_SECURE_TRANSPORT,
    K_USERNAME,
    K_PRINCIPAL_ARN,
    K_X_AMZ_ACL,
    K_AUTH_TYPE,
    K_SIGNATURE_VERSION,
} cond_key_t;

typedef enum {
    T_STR,
    T_STR_IC,
    T_LIKE,
    T_NUM_EQ,
    T_NUM_LT,
    T_NUM_LE,
    T_NUM_GT,
    T_NUM_GE,
    T_IP,
    T_BOOL,
    T_NULL
} cond_test_t;

typedef struct cond_val {
    const char *s;
    bool has_var; /* contains ${...}: expanded per request */
    double num;
    auth_ip_t ip;
    unsigned plen; /* CIDR prefix length */
} cond_val_t;

typedef struct cond {
    cond_test_t test;
    bool neg, if_exists;
    cond_key_t key;
    size_t n;
    cond_val_t *v;
} cond_t;

/* P_SERVICE: an AWS service principal ("Service": "logging.s3.amazonaws.com"), accepted as
 * AWS documents such policies, and matching no principal of wharf's. */
typedef enum { P_ANY, P_ACCOUNT, P_ARN, P_CANONICAL, P_SERVICE } princ_kind_t;
typedef struct princ {
    princ_kind_t kind;
    const char *s; /* account id, ARN, or canonical id */
} princ_t;

typedef struct pattern {
    const char *s;
    bool has_var;
} pattern_t;

typedef struct stmt {
    bool deny;
    bool has_principal, not_principal;
    size_t np;
    princ_t *p;
    bool not_action;
    size_t na;
    pattern_t *a;
    bool not_resource;
    size_t nr;
    pattern_t *r;
    size_t nc;
    cond_t *c;
} stmt_t;

struct auth_policy {
    arena_blk_t *arena;
    bool vars; /* Version 2012-10-17: ${...} policy variables are expanded */
    size_t n;
    stmt_t *st;
};

#endif
