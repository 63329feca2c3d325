/* SPDX-License-Identifier: Apache-2.0 */
/* The storage server's scrubber: a background thread that reads every chunk file and checks
 * it against its block checksums (cl_chunk_verify), so that damage no read has touched yet is
 * found and repaired while another replica is still good. Rate-limited (--scrub-rate bytes per
 * second), one pass then a pause (--scrub-interval), resumable: where it is (the chunk
 * directory's prefix and the last id done) is kept in DIR/scrub.state, so a restart goes on
 * from there. A damaged copy is moved aside and reported like one a read found
 * (role_storage_damaged); the gateway holding the maintenance lock rewrites it from a good
 * replica. Progress and findings: wharf_storage_scrub_* in /metrics. */
#include "base/log.h"
#include "base/util.h"
#include "roles/storage_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MOD "scrub"

typedef struct scrub_state {
    unsigned prefix;                 /* 0..255: the chunk subdirectory in progress */
    char after[CL_CHUNK_ID_LEN + 1]; /* ids <= this one in it are done ("" none) */
    int64_t idle_until;              /* wall clock: the next pass starts then */
} scrub_state_t;

static void state_path(role_storage_t *s, char *out, size_t cap, const char *suffix)
{
    snprintf(out, cap, "%s/scrub.state%s", s->cfg.data_dir, suffix);
}

static void state_load(role_storage_t *s, scrub_state_t *st)
{
    memset(st, 0, sizeof *st);
    char p[4096], id[64] = "";
    state_path(s, p, sizeof p, "");
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    unsigned prefix = 0;
    long long idle = 0;
    if (fscanf(f, "wharf-scrub-1 %u %40s %lld", &prefix, id, &idle) == 3 && prefix < 256) {
        st->prefix = prefix;
        st->idle_until = idle;
        if (cl_chunk_id_valid(id, strlen(id)))
            memcpy(st->after, id, CL_CHUNK_ID_LEN + 1);
    }
    fclose(f);
}

/* Written to a temp file and renamed: a crash leaves the old state or the new one. Not
 * fsynced: losing it costs a rescan, never a chunk. */
static void state_save(role_storage_t *s, const scrub_state_t *st)
{
    char p[4096], t[4100];
    state_path(s, p, sizeof p, "");
    state_path(s, t, sizeof t, ".tmp");
    FILE *f = fopen(t, "w");
    if (!f)
        return;
    fprintf(f, "wharf-scrub-1 %u %s %lld\n", st->prefix, st->after[0] ? st->after : "-",
            (long long)st->idle_until);
    if (fclose(f) == 0)
        rename(t, p);
}

/* Sleeps up to ms unless asked to stop; true when stopping. */
static bool nap(role_storage_t *s, uint64_t ms)
{
    pthread_mutex_lock(&s->scrub_lock);
    if (!s->scrub_stop && ms) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        uint64_t ns = (uint64_t)dl.tv_nsec + ms * 1000000ULL;
        dl.tv_sec += (time_t)(ns / 1000000000ULL);
        dl.tv_nsec = (long)(ns % 1000000000ULL);
        pthread_cond_timedwait(&s->scrub_cond, &s->scrub_lock, &dl);
    }
    bool stop = s->scrub_stop;
    pthread_mutex_unlock(&s->scrub_lock);
    return stop;
}

/* Verifies one chunk; returns the bytes read. */
static uint64_t scrub_one(role_storage_t *s, const char *id)
{
    int fd = -1;
    cl_chunk_info_t info;
    wh_status_t st = cl_chunk_open(s->chunks, id, &fd, &info);
    if (st == WH_ERR_NOT_FOUND)
        return 0; /* deleted meanwhile */
    if (st == WH_ERR_CHECKSUM) {
        atomic_fetch_add(&s->scrub_damaged, 1);
        role_storage_damaged(s, id, -1);
        return 0;
    }
    if (st != WH_OK)
        return 0;
    st = cl_chunk_verify(fd, &info);
    uint64_t n = info.size;
    if (st == WH_ERR_CHECKSUM) {
        atomic_fetch_add(&s->scrub_damaged, 1);
        role_storage_damaged(s, id, fd);
    } else if (st != WH_OK) {
        wh_warn(MOD, "scrub could not read chunk id=%s: %s", id, wh_status_str(st));
    }
    close(fd);
    cl_chunk_info_free(&info);
    atomic_fetch_add(&s->scrub_chunks, 1);
    atomic_fetch_add(&s->scrub_bytes, n);
    return n;
}

static void *scrub_main(void *arg)
{
    role_storage_t *s = arg;
    scrub_state_t st;
    state_load(s, &st);
    uint64_t rate = s->cfg.scrub_rate;
    uint64_t t0 = wh_now_ns(), budget_bytes = 0, last_save = t0;
    while (!nap(s, 0)) {
        int64_t now = (int64_t)time(NULL);
        if (now < st.idle_until) {
            atomic_store(&s->scrub_prefix, 256);
            if (nap(s, (uint64_t)WH_MIN(st.idle_until - now, (int64_t)1) * 1000))
                break;
            t0 = wh_now_ns();
            budget_bytes = 0;
            continue;
        }
        if (st.prefix == 0 && !st.after[0])
            wh_info(MOD, "scrub pass started rate=%" PRIu64 " B/s", rate);
        atomic_store(&s->scrub_prefix, st.prefix);
        char(*ids)[CL_CHUNK_ID_LEN + 1] = NULL;
        size_t n = 0;
        cl_chunks_list_prefix(s->chunks, st.prefix, &ids, &n);
        bool stop = false;
        for (size_t i = 0; i < n && !stop; i++) {
            if (st.after[0] && strcmp(ids[i], st.after) <= 0)
                continue;
            budget_bytes += scrub_one(s, ids[i]);
            memcpy(st.after, ids[i], CL_CHUNK_ID_LEN + 1);
            /* the rate: sleep until budget_bytes were due */
            uint64_t due_ms = budget_bytes * 1000 / rate, el_ms = (wh_now_ns() - t0) / 1000000;
            if (due_ms > el_ms)
                stop = nap(s, due_ms - el_ms);
            else
                stop = nap(s, 0);
            if (wh_now_ns() - last_save > 5000000000ULL) {
                state_save(s, &st);
                last_save = wh_now_ns();
            }
        }
        free(ids);
        if (stop)
            break;
        st.after[0] = '\0';
        if (++st.prefix == 256) {
            st.prefix = 0;
            st.idle_until = (int64_t)time(NULL) + (int64_t)s->cfg.scrub_interval_s;
            atomic_fetch_add(&s->scrub_passes, 1);
            wh_info(MOD, "scrub pass done chunks=%" PRIu64 " damaged=%" PRIu64,
                    atomic_load(&s->scrub_chunks), atomic_load(&s->scrub_damaged));
        }
        state_save(s, &st);
        last_save = wh_now_ns();
    }
    state_save(s, &st);
    return NULL;
}

wh_status_t role_storage_scrub_start(role_storage_t *s)
{
    if (!s->cfg.scrub_rate)
        return WH_OK;
    pthread_mutex_init(&s->scrub_lock, NULL);
    pthread_cond_init(&s->scrub_cond, NULL);
    if (pthread_create(&s->scrub_thread, NULL, scrub_main, s) != 0) {
        pthread_mutex_destroy(&s->scrub_lock);
        pthread_cond_destroy(&s->scrub_cond);
        return WH_ERR_NOMEM;
    }
    s->scrub_started = true;
    return WH_OK;
}

void role_storage_scrub_stop(role_storage_t *s)
{
    if (!s->scrub_started)
        return;
    pthread_mutex_lock(&s->scrub_lock);
    s->scrub_stop = true;
    pthread_cond_broadcast(&s->scrub_cond);
    pthread_mutex_unlock(&s->scrub_lock);
    pthread_join(s->scrub_thread, NULL);
    pthread_mutex_destroy(&s->scrub_lock);
    pthread_cond_destroy(&s->scrub_cond);
    s->scrub_started = false;
}
