/* SPDX-License-Identifier: Apache-2.0 */
/* S3 Object Lock documents (object_lock.h). */
#include "s3/object_lock.h"
#include "s3/xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int s3_lock_mode_parse(const char *s, size_t len, s3_lock_mode_t *out)
{
    if (len == 10 && memcmp(s, "GOVERNANCE", 10) == 0)
        *out = S3_LOCK_GOVERNANCE;
    else if (len == 10 && memcmp(s, "COMPLIANCE", 10) == 0)
        *out = S3_LOCK_COMPLIANCE;
    else
        return -1;
    return 0;
}

const char *s3_lock_mode_name(s3_lock_mode_t m)
{
    return m == S3_LOCK_GOVERNANCE ? "GOVERNANCE" : m == S3_LOCK_COMPLIANCE ? "COMPLIANCE" : "";
}

static int digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int s3_lock_date_parse(const char *s, size_t len, int64_t *out)
{
    /* YYYY-MM-DDTHH:MM:SS, then .f{1,9}, then Z or +00:00. */
    int y, mo, d, h, mi, se;
    if (len < 20 || len > 40 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':' || digits(s, 4, &y) || digits(s + 5, 2, &mo) ||
        digits(s + 8, 2, &d) || digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) ||
        digits(s + 17, 2, &se))
        return -1;
    size_t i = 19;
    bool frac = false;
    if (s[i] == '.') {
        size_t j = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (s[i] != '0')
                frac = true;
            i++;
        }
        if (i == j || i - j > 9)
            return -1;
    }
    size_t rest = len - i;
    if (!((rest == 1 && (s[i] == 'Z' || s[i] == 'z')) ||
          (rest == 6 && memcmp(s + i, "+00:00", 6) == 0)))
        return -1;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    time_t v = timegm(&tm);
    struct tm back;
    if (v == (time_t)-1 || !gmtime_r(&v, &back) || back.tm_mday != d)
        return -1; /* 2030-02-30 */
    *out = (int64_t)v + (frac ? 1 : 0);
    return 0;
}

void s3_lock_date_format(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm)) {
        snprintf(out, 32, "1970-01-01T00:00:00.000Z");
        return;
    }
    strftime(out, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* A whole number 1..max of at most 10 digits into *out: 0, or -1. */
static int positive(const char *t, size_t len, int64_t max, int64_t *out)
{
    if (len == 0 || len > 10)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        v = v * 10 + (t[i] - '0');
    }
    if (v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

/* ---- parsing: one walker state for the three documents ---- */

typedef struct {
    const char *root; /* the document element expected */
    s3_err_t err;
    char *msg;
    size_t msglen;
    bool seen_root, other_root;
    /* ObjectLockConfiguration */
    bool enabled, has_rule, has_default;
    int rules;
    s3_lock_config_t *cfg;
    /* Retention */
    s3_lock_retention_t *ret;
    bool has_mode, has_date;
    /* LegalHold */
    bool *hold;
    bool has_status;
} lk_x_t;

#define LK_FAIL(x, e, ...) ((x)->err = s3_errf((e), (x)->msg, (x)->msglen, __VA_ARGS__))
#define LK_SHOW(len) ((int)((len) > 40 ? 40 : (len)))

static void cfg_elem(lk_x_t *x, const char *f, const char *t, size_t len)
{
    s3_lock_config_t *c = x->cfg;
    if (!strcmp(f, "ObjectLockEnabled")) {
        if (x->enabled || len != 7 || memcmp(t, "Enabled", 7) != 0) {
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "ObjectLockEnabled must be given once, as "
                    "Enabled, got \"%.*s\"",
                    LK_SHOW(len), t);
            return;
        }
        x->enabled = true;
    } else if (!strcmp(f, "Rule")) {
        if (++x->rules > 1 || !x->has_default)
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "an ObjectLockConfiguration holds at most one "
                    "Rule, and a Rule needs a DefaultRetention");
    } else if (!strcmp(f, "Rule/DefaultRetention")) {
        if (x->has_default) {
            LK_FAIL(x, S3_ERR_MALFORMED_XML, "a Rule holds one DefaultRetention");
            return;
        }
        x->has_default = true;
        if (c->mode == S3_LOCK_NONE)
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a DefaultRetention needs a Mode (GOVERNANCE or "
                    "COMPLIANCE)");
        else if ((c->days > 0) == (c->years > 0))
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a DefaultRetention needs exactly one of Days and "
                    "Years");
    } else if (!strcmp(f, "Rule/DefaultRetention/Mode")) {
        s3_lock_mode_t m;
        if (c->mode != S3_LOCK_NONE || s3_lock_mode_parse(t, len, &m) != 0) {
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a DefaultRetention's Mode must be given once, as "
                    "GOVERNANCE or COMPLIANCE, got \"%.*s\"",
                    LK_SHOW(len), t);
            return;
        }
        c->mode = m;
    } else if (!strcmp(f, "Rule/DefaultRetention/Days")) {
        if (c->days)
            LK_FAIL(x, S3_ERR_MALFORMED_XML, "DefaultRetention/Days is given twice");
        else if (positive(t, len, S3_LOCK_MAX_DAYS, &c->days) != 0)
            LK_FAIL(x, S3_ERR_INVALID_RETENTION_PERIOD,
                    "Default retention period must be a positive "
                    "integer value of days, at most %d (got \"%.*s\")",
                    S3_LOCK_MAX_DAYS, LK_SHOW(len), t);
    } else if (!strcmp(f, "Rule/DefaultRetention/Years")) {
        if (c->years)
            LK_FAIL(x, S3_ERR_MALFORMED_XML, "DefaultRetention/Years is given twice");
        else if (positive(t, len, S3_LOCK_MAX_YEARS, &c->years) != 0)
            LK_FAIL(x, S3_ERR_INVALID_RETENTION_PERIOD,
                    "Default retention period must be a positive "
                    "integer value of years, at most %d (got \"%.*s\")",
                    S3_LOCK_MAX_YEARS, LK_SHOW(len), t);
    } else {
        LK_FAIL(x, S3_ERR_MALFORMED_XML, "unknown ObjectLockConfiguration element %s", f);
    }
}

static void ret_elem(lk_x_t *x, const char *f, const char *t, size_t len)
{
    s3_lock_retention_t *r = x->ret;
    if (!strcmp(f, "Mode")) {
        if (x->has_mode || s3_lock_mode_parse(t, len, &r->mode) != 0) {
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a Retention's Mode must be given once, as "
                    "GOVERNANCE or COMPLIANCE, got \"%.*s\"",
                    LK_SHOW(len), t);
            return;
        }
        x->has_mode = true;
    } else if (!strcmp(f, "RetainUntilDate")) {
        if (x->has_date || s3_lock_date_parse(t, len, &r->until) != 0) {
            LK_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a Retention's RetainUntilDate must be given "
                    "once, as an ISO 8601 time such as 2030-01-01T00:00:00Z, got \"%.*s\"",
                    LK_SHOW(len), t);
            return;
        }
        x->has_date = true;
    } else {
        LK_FAIL(x, S3_ERR_MALFORMED_XML, "unknown Retention element %s", f);
    }
}

static void hold_elem(lk_x_t *x, const char *f, const char *t, size_t len)
{
    if (strcmp(f, "Status") != 0) {
        LK_FAIL(x, S3_ERR_MALFORMED_XML, "unknown LegalHold element %s", f);
        return;
    }
    if (x->has_status ||
        !((len == 2 && !memcmp(t, "ON", 2)) || (len == 3 && !memcmp(t, "OFF", 3)))) {
        LK_FAIL(x, S3_ERR_MALFORMED_XML,
                "a LegalHold's Status must be given once, as ON or "
                "OFF, got \"%.*s\"",
                LK_SHOW(len), t);
        return;
    }
    x->has_status = true;
    *x->hold = len == 2;
}

static void lk_cb(void *arg, const char *path, const char *text, size_t len)
{
    lk_x_t *x = arg;
    if (x->err != S3_OK)
        return;
    size_t rl = strlen(x->root);
    if (strncmp(path, x->root, rl) != 0 || (path[rl] && path[rl] != '/')) {
        x->other_root = true;
        return;
    }
    if (!path[rl]) {
        x->seen_root = true;
        return;
    }
    const char *f = path + rl + 1;
    if (x->cfg)
        cfg_elem(x, f, text, len);
    else if (x->ret)
        ret_elem(x, f, text, len);
    else
        hold_elem(x, f, text, len);
}

static s3_err_t lk_walk(lk_x_t *x, const char *xml, size_t len, const char *what)
{
    if (x->msg && x->msglen)
        x->msg[0] = '\0';
    if (s3_xml_walk(xml, len, lk_cb, x) != 0 && x->err == S3_OK)
        x->err =
            s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen, "the %s is not well-formed XML", what);
    if (x->err == S3_OK && (x->other_root || !x->seen_root))
        x->err =
            s3_errf(S3_ERR_MALFORMED_XML, x->msg, x->msglen, "the document is not a %s", x->root);
    return x->err;
}

s3_err_t s3_lock_config_parse(const char *xml, size_t len, s3_lock_config_t *out, char *msg,
                              size_t msglen)
{
    s3_lock_config_t c = {0};
    lk_x_t x = {
        .root = "ObjectLockConfiguration", .err = S3_OK, .msg = msg, .msglen = msglen, .cfg = &c};
    if (lk_walk(&x, xml, len, "object lock configuration") != S3_OK)
        return x.err;
    if (!x.enabled)
        return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                       "an ObjectLockConfiguration needs "
                       "ObjectLockEnabled: Enabled");
    if (c.mode != S3_LOCK_NONE && !x.has_default)
        return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                       "a retention Mode belongs in "
                       "Rule/DefaultRetention");
    *out = c;
    return S3_OK;
}

void s3_lock_config_format(const s3_lock_config_t *c, wh_sbuf_t *out, const char *xmlns)
{
    if (xmlns)
        wh_sbuf_printf(out, "<ObjectLockConfiguration xmlns=\"%s\">", xmlns);
    else
        wh_sbuf_printf(out, "<ObjectLockConfiguration>");
    s3_xml_elem(out, "ObjectLockEnabled", "Enabled");
    if (c->mode != S3_LOCK_NONE) {
        wh_sbuf_printf(out, "<Rule><DefaultRetention>");
        s3_xml_elem(out, "Mode", s3_lock_mode_name(c->mode));
        if (c->days > 0)
            s3_xml_elem_u64(out, "Days", (uint64_t)c->days);
        else
            s3_xml_elem_u64(out, "Years", (uint64_t)c->years);
        wh_sbuf_printf(out, "</DefaultRetention></Rule>");
    }
    wh_sbuf_printf(out, "</ObjectLockConfiguration>");
}

int64_t s3_lock_config_until(const s3_lock_config_t *c, int64_t now)
{
    if (c->mode == S3_LOCK_NONE)
        return 0;
    if (c->days > 0)
        return now + c->days * 86400;
    /* Years as calendar years, as S3 counts them (a leap day included). */
    time_t t = (time_t)now;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return now + c->years * 365 * 86400;
    tm.tm_year += (int)c->years;
    return (int64_t)timegm(&tm);
}

s3_err_t s3_lock_retention_parse(const char *xml, size_t len, s3_lock_retention_t *out, char *msg,
                                 size_t msglen)
{
    s3_lock_retention_t r = {0};
    lk_x_t x = {.root = "Retention", .err = S3_OK, .msg = msg, .msglen = msglen, .ret = &r};
    if (lk_walk(&x, xml, len, "retention") != S3_OK)
        return x.err;
    if (x.has_mode != x.has_date)
        return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                       "a Retention needs both Mode and "
                       "RetainUntilDate, or neither (to remove it)");
    *out = r;
    return S3_OK;
}

void s3_lock_retention_format(const s3_lock_retention_t *r, wh_sbuf_t *out, const char *xmlns)
{
    if (xmlns)
        wh_sbuf_printf(out, "<Retention xmlns=\"%s\">", xmlns);
    else
        wh_sbuf_printf(out, "<Retention>");
    if (r->mode != S3_LOCK_NONE) {
        char d[32];
        s3_lock_date_format(r->until, d);
        s3_xml_elem(out, "Mode", s3_lock_mode_name(r->mode));
        s3_xml_elem(out, "RetainUntilDate", d);
    }
    wh_sbuf_printf(out, "</Retention>");
}

s3_err_t s3_lock_legal_hold_parse(const char *xml, size_t len, bool *on, char *msg, size_t msglen)
{
    bool h = false;
    lk_x_t x = {.root = "LegalHold", .err = S3_OK, .msg = msg, .msglen = msglen, .hold = &h};
    if (lk_walk(&x, xml, len, "legal hold") != S3_OK)
        return x.err;
    if (!x.has_status)
        return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen, "a LegalHold needs a Status (ON or OFF)");
    *on = h;
    return S3_OK;
}

void s3_lock_legal_hold_format(bool on, wh_sbuf_t *out, const char *xmlns)
{
    if (xmlns)
        wh_sbuf_printf(out, "<LegalHold xmlns=\"%s\">", xmlns);
    else
        wh_sbuf_printf(out, "<LegalHold>");
    s3_xml_elem(out, "Status", on ? "ON" : "OFF");
    wh_sbuf_printf(out, "</LegalHold>");
}
