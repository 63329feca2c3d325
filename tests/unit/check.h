/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal unit-test harness: CHECK records a failure and goes on; the runner prints the
 * closing line "N passed, N failed" and exits non-zero on any failure. */
#ifndef WH_TEST_CHECK_H
#define WH_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int g_check_pass, g_check_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            g_check_pass++;                                                                        \
        } else {                                                                                   \
            g_check_fail++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);             \
        if (a_ == b_) {                                                                            \
            g_check_pass++;                                                                        \
        } else {                                                                                   \
            g_check_fail++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s == %s (0x%llx != 0x%llx)\n", __FILE__, __LINE__, #a,   \
                    #b, a_, b_);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ && b_ && strcmp(a_, b_) == 0) {                                                     \
            g_check_pass++;                                                                        \
        } else {                                                                                   \
            g_check_fail++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s == %s (\"%s\" != \"%s\")\n", __FILE__, __LINE__, #a,   \
                    #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                   \
        }                                                                                          \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        fprintf(stderr, "-- %s\n", #fn);                                                           \
        fn();                                                                                      \
    } while (0)

static inline int check_done(void)
{
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail ? 1 : 0;
}

#endif
