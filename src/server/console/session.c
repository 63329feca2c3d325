/* SPDX-License-Identifier: Apache-2.0 */
/* The console's sessions and the parsing of what identifies one (console.h). */
#include "console/console.h"
#include "base/codec.h"
#include "base/digest.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct con_session {
    bool used;
    char sid_hash[65]; /* SHA-256 of the id, hex: the id itself is never kept */
    char csrf[CONSOLE_SID_LEN + 1];
    auth_principal_t who;
    time_t created, last;
} con_session_t;

struct console_sessions {
    pthread_mutex_t mu;
    size_t max;
    unsigned ttl_s, idle_s;
    con_session_t *s;
};

static bool is_lhex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool console_cookie_sid(const char *cookie, char sid[CONSOLE_SID_LEN + 1])
{
    sid[0] = '\0';
    if (!cookie)
        return false;
    const size_t nlen = sizeof CONSOLE_COOKIE - 1;
    const char *p = cookie;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ';')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        const char *name_end = p;
        while (name_end > name && (name_end[-1] == ' ' || name_end[-1] == '\t'))
            name_end--;
        if (*p != '=') { /* a pair without a value: skip it */
            continue;
        }
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        const char *val = p;
        while (*p && *p != ';')
            p++;
        const char *val_end = p;
        while (val_end > val && (val_end[-1] == ' ' || val_end[-1] == '\t'))
            val_end--;
        if ((size_t)(name_end - name) != nlen || memcmp(name, CONSOLE_COOKIE, nlen) != 0)
            continue;
        /* The first pair of our name decides: a second one (a cookie planted for a wider
         * path or domain) is never tried in its place. */
        if ((size_t)(val_end - val) != CONSOLE_SID_LEN)
            return false;
        for (size_t i = 0; i < CONSOLE_SID_LEN; i++)
            if (!is_lhex(val[i]))
                return false;
        memcpy(sid, val, CONSOLE_SID_LEN);
        sid[CONSOLE_SID_LEN] = '\0';
        return true;
    }
    return false;
}

bool console_origin_ok(const char *origin, const char *host, bool tls)
{
    if (!origin || !host || !*host)
        return false;
    const char *scheme = tls ? "https://" : "http://";
    size_t sl = strlen(scheme);
    if (strncasecmp(origin, scheme, sl) != 0)
        return false;
    const char *o = origin + sl;
    /* Origin is scheme://host[:port] with no path; Host is host[:port]. The default port
     * may appear in one and not the other. */
    size_t ol = strlen(o), hl = strlen(host);
    if (ol == hl && strncasecmp(o, host, hl) == 0)
        return true;
    const char *dport = tls ? ":443" : ":80";
    size_t dl = strlen(dport);
    if (ol == hl + dl && strncasecmp(o, host, hl) == 0 && strcmp(o + hl, dport) == 0)
        return true;
    if (hl == ol + dl && strncasecmp(o, host, ol) == 0 && strcmp(host + ol, dport) == 0)
        return true;
    return false;
}

bool console_str_eq(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    size_t n = la < lb ? la : lb;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

console_sessions_t *console_sessions_new(size_t max, unsigned ttl_s, unsigned idle_s)
{
    if (!max)
        return NULL;
    console_sessions_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->s = calloc(max, sizeof *t->s);
    if (!t->s) {
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->max = max;
    t->ttl_s = ttl_s;
    t->idle_s = idle_s;
    return t;
}

void console_sessions_free(console_sessions_t *t)
{
    if (!t)
        return;
    memset(t->s, 0, t->max * sizeof *t->s);
    free(t->s);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static bool ended(const console_sessions_t *t, const con_session_t *s, time_t now)
{
    return now - s->created >= (time_t)t->ttl_s || now - s->last >= (time_t)t->idle_s ||
           now < s->created;
}

static bool random_hex(char out[CONSOLE_SID_LEN + 1])
{
    unsigned char b[CONSOLE_SID_LEN / 2];
    if (wh_random_bytes(b, sizeof b) != 0)
        return false;
    wh_hex_encode(b, sizeof b, out);
    out[CONSOLE_SID_LEN] = '\0';
    memset(b, 0, sizeof b);
    return true;
}

bool console_session_create(console_sessions_t *t, const auth_principal_t *who, time_t now,
                            char sid[CONSOLE_SID_LEN + 1], char csrf[CONSOLE_SID_LEN + 1])
{
    if (!random_hex(sid) || !random_hex(csrf))
        return false;
    char h[65];
    wh_sha256_hex(sid, CONSOLE_SID_LEN, h);
    pthread_mutex_lock(&t->mu);
    con_session_t *slot = NULL;
    for (size_t i = 0; i < t->max && !slot; i++)
        if (!t->s[i].used || ended(t, &t->s[i], now))
            slot = &t->s[i];
    if (!slot) { /* full: the least recently used goes */
        slot = &t->s[0];
        for (size_t i = 1; i < t->max; i++)
            if (t->s[i].last < slot->last)
                slot = &t->s[i];
    }
    memset(slot, 0, sizeof *slot);
    slot->used = true;
    memcpy(slot->sid_hash, h, sizeof h);
    memcpy(slot->csrf, csrf, CONSOLE_SID_LEN + 1);
    slot->who = *who;
    slot->created = slot->last = now;
    pthread_mutex_unlock(&t->mu);
    return true;
}

/* The slot of sid, the table locked; NULL: none. */
static con_session_t *find_locked(console_sessions_t *t, const char *sid)
{
    if (!sid || strlen(sid) != CONSOLE_SID_LEN)
        return NULL;
    char h[65];
    wh_sha256_hex(sid, CONSOLE_SID_LEN, h);
    for (size_t i = 0; i < t->max; i++)
        if (t->s[i].used && console_str_eq(t->s[i].sid_hash, h))
            return &t->s[i];
    return NULL;
}

bool console_session_get(console_sessions_t *t, const char *sid, time_t now, auth_principal_t *who,
                         char csrf[CONSOLE_SID_LEN + 1], time_t *expires)
{
    pthread_mutex_lock(&t->mu);
    con_session_t *s = find_locked(t, sid);
    bool ok = s && !ended(t, s, now);
    if (s && !ok)
        memset(s, 0, sizeof *s);
    if (ok) {
        s->last = now;
        if (who)
            *who = s->who;
        if (csrf)
            memcpy(csrf, s->csrf, CONSOLE_SID_LEN + 1);
        if (expires)
            *expires = s->created + (time_t)t->ttl_s;
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

bool console_session_drop(console_sessions_t *t, const char *sid)
{
    pthread_mutex_lock(&t->mu);
    con_session_t *s = find_locked(t, sid);
    if (s)
        memset(s, 0, sizeof *s);
    pthread_mutex_unlock(&t->mu);
    return s != NULL;
}

size_t console_session_count(console_sessions_t *t)
{
    size_t n = 0;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->max; i++)
        n += t->s[i].used;
    pthread_mutex_unlock(&t->mu);
    return n;
}
