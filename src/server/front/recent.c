/* SPDX-License-Identifier: Apache-2.0 */
/* The ring of recent error responses (recent.h). */
#include "front/recent.h"

#include <string.h>

void front_recent_init(front_recent_t *rc)
{
    memset(rc, 0, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
}

void front_recent_free(front_recent_t *rc)
{
    pthread_mutex_destroy(&rc->mu);
}

void front_recent_add(front_recent_t *rc, const front_recent_err_t *e)
{
    pthread_mutex_lock(&rc->mu);
    front_recent_err_t *slot = &rc->e[rc->n % FRONT_RECENT_ERRORS];
    *slot = *e;
    slot->seq = ++rc->n;
    pthread_mutex_unlock(&rc->mu);
}

size_t front_recent_copy(front_recent_t *rc, front_recent_err_t *out, size_t cap, uint64_t *total)
{
    pthread_mutex_lock(&rc->mu);
    uint64_t n = rc->n;
    size_t have = n < FRONT_RECENT_ERRORS ? (size_t)n : FRONT_RECENT_ERRORS;
    size_t k = have < cap ? have : cap;
    for (size_t i = 0; i < k; i++)
        out[i] = rc->e[(n - 1 - i) % FRONT_RECENT_ERRORS];
    pthread_mutex_unlock(&rc->mu);
    if (total)
        *total = n;
    return k;
}
