/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the per-client worker pool. Created lazily, grown to the largest concurrency asked
 * for, never per call. Each worker owns one curl handle for its lifetime, so its connection to
 * the server is reused across requests. */
#include "client/client_int.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>

#define MOD "client"

void wc_pool_init(wc_pool_t *p)
{
    memset(p, 0, sizeof *p);
    wh_mutex_init(&p->mu);
    pthread_cond_init(&p->cv, NULL);
}

static void *pool_worker(void *arg)
{
    wc_pool_t *p = arg;
    wc_conn_t *conn = wc_conn_new(); /* NULL: tasks see it and fail with NOMEM */
    wh_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            wh_cond_wait(&p->cv, &p->mu);
        if (!p->head)
            break; /* stop, queue drained */
        wc_task_t *t = p->head;
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
        wh_mutex_unlock(&p->mu);
        t->fn(t->arg, conn);
        wh_mutex_lock(&p->mu);
    }
    wh_mutex_unlock(&p->mu);
    wc_conn_free(conn);
    return NULL;
}

wh_status_t wc_pool_ensure(wc_pool_t *p, unsigned n)
{
    if (n > WC_POOL_MAX_THREADS)
        n = WC_POOL_MAX_THREADS;
    wh_status_t st = WH_OK;
    wh_mutex_lock(&p->mu);
    while (p->nthreads < n) {
        int rc = pthread_create(&p->threads[p->nthreads], NULL, pool_worker, p);
        if (rc != 0) {
            /* fewer workers is still correct: the caller runs chunks itself too */
            wh_warn(MOD, "pthread_create failed err=\"%s\" workers=%u", strerror(rc), p->nthreads);
            if (p->nthreads == 0)
                st = wh_status_from_errno(rc);
            break;
        }
        p->nthreads++;
    }
    wh_mutex_unlock(&p->mu);
    return st;
}

void wc_pool_submit(wc_pool_t *p, wc_task_t *t)
{
    t->next = NULL;
    wh_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    pthread_cond_signal(&p->cv);
    wh_mutex_unlock(&p->mu);
}

bool wc_pool_cancel(wc_pool_t *p, wc_task_t *t)
{
    bool found = false;
    wh_mutex_lock(&p->mu);
    for (wc_task_t **pp = &p->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            if (p->tail == t)
                p->tail = prev;
            found = true;
            break;
        }
    }
    wh_mutex_unlock(&p->mu);
    return found;
}

void wc_pool_fini(wc_pool_t *p)
{
    wh_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    unsigned n = p->nthreads;
    wh_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv);
    wh_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

void wc_pool_forget_after_fork(wc_pool_t *p)
{
    /* the threads and their curl handles exist only in the parent; leak, never touch */
    wh_mutex_init(&p->mu);
    pthread_cond_init(&p->cv, NULL);
    p->head = p->tail = NULL;
    p->nthreads = 0;
    p->stop = false;
}

/* ---- group ------------------------------------------------------------------------------ */

void wc_group_init(wc_group_t *g, unsigned pending)
{
    wh_mutex_init(&g->mu);
    pthread_cond_init(&g->cv, NULL);
    g->pending = pending;
}

void wc_group_done(wc_group_t *g)
{
    wh_mutex_lock(&g->mu);
    if (--g->pending == 0)
        pthread_cond_broadcast(&g->cv);
    wh_mutex_unlock(&g->mu);
}

void wc_group_wait(wc_group_t *g)
{
    wh_mutex_lock(&g->mu);
    while (g->pending > 0)
        wh_cond_wait(&g->cv, &g->mu);
    wh_mutex_unlock(&g->mu);
}

void wc_group_fini(wc_group_t *g)
{
    pthread_cond_destroy(&g->cv);
    wh_mutex_destroy(&g->mu);
}
