/* SPDX-License-Identifier: Apache-2.0 */
/* Clang thread-safety analysis (-Wthread-safety): annotation macros and a mutex it knows.
 *
 * Under clang the macros are attributes; under gcc (the default build) they expand to nothing.
 * `make thread-safety` compiles the files that use them with clang -Wthread-safety -Werror.
 * The analysis sees only locks taken through wh_mutex_t: pthread's functions carry no
 * annotations, so an annotated file locks with wh_mutex_lock and waits with wh_cond_wait.
 *
 * What clang 14 checks in C: every path releases what it acquired and never releases what it
 * does not hold (no lock leaked by an early return, no double unlock), a wait holds its mutex,
 * a WH_REQUIRES function is called with the lock held, and a global WH_GUARDED_BY variable is
 * accessed only under its lock. Struct fields cannot be annotated in C before clang 19 (the
 * attribute cannot name a sibling field), so a field's lock is stated in a comment. */
#ifndef WH_BASE_TSA_H
#define WH_BASE_TSA_H

#include <pthread.h>
#include <time.h>

#if defined(__clang__)
#define WH_TSA_(x) __attribute__((x))
#else
#define WH_TSA_(x)
#endif

#define WH_CAPABILITY(name) WH_TSA_(capability(name))
#define WH_GUARDED_BY(mu) WH_TSA_(guarded_by(mu))
#define WH_PT_GUARDED_BY(mu) WH_TSA_(pt_guarded_by(mu))
#define WH_REQUIRES(...) WH_TSA_(requires_capability(__VA_ARGS__))
#define WH_ACQUIRE(...) WH_TSA_(acquire_capability(__VA_ARGS__))
#define WH_RELEASE(...) WH_TSA_(release_capability(__VA_ARGS__))
#define WH_EXCLUDES(...) WH_TSA_(locks_excluded(__VA_ARGS__))
/* For a function the analysis cannot follow (the wrappers below; code that runs before an
 * object is shared or in a fork child): say why where it is used. */
#define WH_NO_TSA WH_TSA_(no_thread_safety_analysis)

/* A pthread mutex as a capability. Same cost as pthread_mutex_t. */
typedef struct WH_CAPABILITY("mutex") wh_mutex {
    pthread_mutex_t m;
} wh_mutex_t;

static inline void wh_mutex_init(wh_mutex_t *mu)
{
    pthread_mutex_init(&mu->m, NULL);
}

static inline void wh_mutex_destroy(wh_mutex_t *mu)
{
    pthread_mutex_destroy(&mu->m);
}

static inline void wh_mutex_lock(wh_mutex_t *mu) WH_ACQUIRE(mu);
static inline void wh_mutex_unlock(wh_mutex_t *mu) WH_RELEASE(mu);
static inline void wh_cond_wait(pthread_cond_t *cv, wh_mutex_t *mu) WH_REQUIRES(mu);
static inline int wh_cond_timedwait(pthread_cond_t *cv, wh_mutex_t *mu,
                                    const struct timespec *deadline) WH_REQUIRES(mu);

/* The wrappers are where pthread's unannotated calls meet the analysis: not analysed. */
WH_NO_TSA static inline void wh_mutex_lock(wh_mutex_t *mu)
{
    pthread_mutex_lock(&mu->m);
}

WH_NO_TSA static inline void wh_mutex_unlock(wh_mutex_t *mu)
{
    pthread_mutex_unlock(&mu->m);
}

WH_NO_TSA static inline void wh_cond_wait(pthread_cond_t *cv, wh_mutex_t *mu)
{
    pthread_cond_wait(cv, &mu->m);
}

/* pthread_cond_timedwait's result (0, ETIMEDOUT, ...). */
WH_NO_TSA static inline int wh_cond_timedwait(pthread_cond_t *cv, wh_mutex_t *mu,
                                              const struct timespec *deadline)
{
    return pthread_cond_timedwait(cv, &mu->m, deadline);
}

#endif
