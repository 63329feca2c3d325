/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket lifecycle documents (lifecycle.h). */
#include "s3/lifecycle.h"
#include "s3/tags.h"
#include "s3/xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rule_free(s3_lc_rule_t *r)
{
    free(r->id);
    free(r->prefix);
    for (size_t i = 0; i < r->ntags; i++) {
        free(r->tags[i].key);
        free(r->tags[i].value);
    }
    free(r->tags);
    memset(r, 0, sizeof *r);
}

static void rule_init(s3_lc_rule_t *r)
{
    memset(r, 0, sizeof *r);
    r->size_gt = r->size_lt = -1;
    r->exp_date = -1;
}

void s3_lc_free(s3_lc_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        rule_free(&c->rules[i]);
    free(c->rules);
    memset(c, 0, sizeof *c);
}

/* ---- parsing ---- */

typedef struct {
    s3_lc_t *c;
    s3_lc_rule_t cur;
    /* Seen in the current rule: */
    int status;           /* 0 none, 1 Enabled, 2 Disabled */
    unsigned filter_kids; /* direct children of Filter */
    bool has_filter, has_exp, has_nc, has_abort, exp_days_set, exp_date_set, exp_marker_set;
    bool nc_newer_set;
    char *tag_key, *tag_value;
    bool tag_key_set, tag_value_set;
    s3_err_t err;
    char *msg;
    size_t msglen;
    bool other_root;
} lc_x_t;

#define LC_FAIL(x, e, ...) ((x)->err = s3_errf((e), (x)->msg, (x)->msglen, __VA_ARGS__))

/* A whole number 0..max of at most 19 digits. */
static int parse_num(const char *t, size_t len, int64_t max, int64_t *out)
{
    if (len == 0 || len > 19)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        if (v > (INT64_MAX - (t[i] - '0')) / 10)
            return -1;
        v = v * 10 + (t[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

/* ISO 8601 at midnight UTC: YYYY-MM-DDT00:00:00Z, optionally with .000 or +00:00. */
static int parse_date(const char *t, size_t len, int64_t *out)
{
    char b[40];
    if (len < 10 || len >= sizeof b)
        return -1;
    memcpy(b, t, len);
    b[len] = '\0';
    int y, mo, d, n = 0;
    if (sscanf(b, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
        return -1;
    const char *rest = b + 10;
    if (*rest && strcmp(rest, "T00:00:00Z") && strcmp(rest, "T00:00:00.000Z") &&
        strcmp(rest, "T00:00:00+00:00") && strcmp(rest, "T00:00:00.000+00:00"))
        return -2; /* not midnight UTC */
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return -1;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d};
    time_t v = timegm(&tm);
    struct tm back;
    if (v == (time_t)-1 || !gmtime_r(&v, &back) || back.tm_mday != d)
        return -1; /* 2021-02-30 */
    *out = (int64_t)v;
    return 0;
}

static char *dup_text(lc_x_t *x, const char *t, size_t len, size_t max, const char *what)
{
    if (len > max || memchr(t, '\0', len)) {
        LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                "a lifecycle rule's %s is longer than %zu bytes or "
                "holds NUL",
                what, max);
        return NULL;
    }
    char *s = strndup(t, len);
    if (!s)
        x->err = S3_ERR_INTERNAL;
    return s;
}

static void end_rule(lc_x_t *x)
{
    s3_lc_rule_t *r = &x->cur;
    const char *id = r->id ? r->id : "(no ID)";
    if (!x->status) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "lifecycle rule %s has no Status (Enabled or "
                "Disabled)",
                id);
        return;
    }
    r->enabled = x->status == 1;
    if (x->has_filter && r->legacy_prefix) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "lifecycle rule %s has both a Filter and a top-level "
                "Prefix; use the Filter",
                id);
        return;
    }
    if (x->filter_kids > 1) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "the Filter of lifecycle rule %s names more than one "
                "condition; put them in an And",
                id);
        return;
    }
    if (r->size_gt >= 0 && r->size_lt >= 0 && r->size_gt >= r->size_lt) {
        LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                "lifecycle rule %s: ObjectSizeGreaterThan (%lld) "
                "must be less than ObjectSizeLessThan (%lld)",
                id, (long long)r->size_gt, (long long)r->size_lt);
        return;
    }
    if (x->has_exp) {
        int n = x->exp_days_set + x->exp_date_set + x->exp_marker_set;
        if (n == 0) {
            LC_FAIL(x, S3_ERR_MALFORMED_XML,
                    "the Expiration of lifecycle rule %s names none of "
                    "Days, Date and ExpiredObjectDeleteMarker",
                    id);
            return;
        }
        if (n > 1) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "the Expiration of lifecycle rule %s may name "
                    "only one of Days, Date and ExpiredObjectDeleteMarker",
                    id);
            return;
        }
        if (r->exp_marker && r->ntags) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "lifecycle rule %s: ExpiredObjectDeleteMarker "
                    "cannot be used with a tag filter",
                    id);
            return;
        }
    }
    if (x->has_nc && !r->nc_days) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "the NoncurrentVersionExpiration of lifecycle rule %s "
                "needs NoncurrentDays",
                id);
        return;
    }
    if (x->has_abort && !r->abort_days) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "the AbortIncompleteMultipartUpload of lifecycle rule "
                "%s needs DaysAfterInitiation",
                id);
        return;
    }
    if (r->abort_days && (r->ntags || r->size_gt >= 0 || r->size_lt >= 0)) {
        LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                "lifecycle rule %s: AbortIncompleteMultipartUpload "
                "cannot be used with a tag or size filter",
                id);
        return;
    }
    if (!r->exp_days && r->exp_date < 0 && !r->exp_marker && !r->nc_days && !r->abort_days) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "lifecycle rule %s names no action (Expiration, "
                "NoncurrentVersionExpiration or AbortIncompleteMultipartUpload)",
                id);
        return;
    }
    for (size_t i = 0; r->id && i < x->c->n; i++)
        if (x->c->rules[i].id && strcmp(x->c->rules[i].id, r->id) == 0) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "lifecycle rule ID %s is used twice; rule IDs "
                    "must be unique",
                    id);
            return;
        }
    if (x->c->n >= S3_LC_MAX_RULES) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML, "a lifecycle configuration holds at most %d rules",
                S3_LC_MAX_RULES);
        return;
    }
    s3_lc_rule_t *rs = realloc(x->c->rules, (x->c->n + 1) * sizeof *rs);
    if (!rs) {
        x->err = S3_ERR_INTERNAL;
        return;
    }
    x->c->rules = rs;
    rs[x->c->n++] = *r;
    rule_init(r);
    x->status = 0;
    x->filter_kids = 0;
    x->has_filter = x->has_exp = x->has_nc = x->has_abort = false;
    x->exp_days_set = x->exp_date_set = x->exp_marker_set = x->nc_newer_set = false;
}

/* A filter condition: f is the path below Filter/ (or Filter/And/), in_and whether so. */
static void filter_elem(lc_x_t *x, const char *f, bool in_and, const char *t, size_t len)
{
    s3_lc_rule_t *r = &x->cur;
    if (!strcmp(f, "Prefix")) {
        if (r->prefix) {
            LC_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a lifecycle Filter names Prefix twice, or the "
                    "rule has a top-level Prefix too; use the Filter");
            return;
        }
        r->prefix = dup_text(x, t, len, S3_LC_MAX_PREFIX, "Prefix");
    } else if (!strcmp(f, "Tag/Key")) {
        free(x->tag_key);
        x->tag_key = dup_text(x, t, len, S3_TAG_KEY_MAX * 4, "tag key");
        x->tag_key_set = true;
        return; /* counted with its Tag */
    } else if (!strcmp(f, "Tag/Value")) {
        free(x->tag_value);
        x->tag_value = dup_text(x, t, len, S3_TAG_VALUE_MAX * 4, "tag value");
        x->tag_value_set = true;
        return;
    } else if (!strcmp(f, "Tag")) {
        if (!x->tag_key_set || !x->tag_key || !*x->tag_key) {
            LC_FAIL(x, S3_ERR_MALFORMED_XML, "a lifecycle filter's Tag needs a non-empty Key");
            return;
        }
        if (r->ntags >= S3_LC_MAX_TAGS) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT, "a lifecycle filter names at most %d tags",
                    S3_LC_MAX_TAGS);
            return;
        }
        for (size_t i = 0; i < r->ntags; i++)
            if (strcmp(r->tags[i].key, x->tag_key) == 0) {
                LC_FAIL(x, S3_ERR_INVALID_ARGUMENT, "a lifecycle filter names tag key %s twice",
                        x->tag_key);
                return;
            }
        s3_lc_tag_t *ts = realloc(r->tags, (r->ntags + 1) * sizeof *ts);
        if (!ts) {
            x->err = S3_ERR_INTERNAL;
            return;
        }
        r->tags = ts;
        ts[r->ntags].key = x->tag_key;
        ts[r->ntags].value = x->tag_value ? x->tag_value : strdup("");
        if (!ts[r->ntags].value) {
            x->err = S3_ERR_INTERNAL;
            return;
        }
        r->ntags++;
        x->tag_key = x->tag_value = NULL;
        x->tag_key_set = x->tag_value_set = false;
    } else if (!strcmp(f, "ObjectSizeGreaterThan") || !strcmp(f, "ObjectSizeLessThan")) {
        bool gt = f[10] == 'G';
        int64_t *dst = gt ? &r->size_gt : &r->size_lt;
        if (*dst >= 0 || parse_num(t, len, INT64_MAX, dst) != 0) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "a lifecycle filter's %s must be given once, "
                    "as a whole number of bytes",
                    f);
            return;
        }
    } else if (!in_and && !strcmp(f, "And")) {
        r->and_form = true;
    } else {
        LC_FAIL(x, S3_ERR_MALFORMED_XML, "unknown lifecycle filter element %s", f);
        return;
    }
    if (!in_and)
        x->filter_kids++;
}

static void lc_cb(void *arg, const char *path, const char *text, size_t len)
{
    lc_x_t *x = arg;
    if (x->err != S3_OK)
        return;
    static const char root[] = "LifecycleConfiguration";
    size_t rl = sizeof root - 1;
    if (strncmp(path, root, rl) != 0 || (path[rl] && path[rl] != '/')) {
        x->other_root = true;
        return;
    }
    const char *p = path + rl;
    if (!*p)
        return;
    if (strncmp(p, "/Rule", 5) != 0 || (p[5] && p[5] != '/')) {
        LC_FAIL(x, S3_ERR_MALFORMED_XML,
                "LifecycleConfiguration holds %s; only Rule elements "
                "are allowed",
                p + 1);
        return;
    }
    const char *f = p + 5;
    if (!*f) {
        end_rule(x);
        return;
    }
    f++;
    s3_lc_rule_t *r = &x->cur;
    int64_t v;
    if (!strcmp(f, "ID")) {
        if (r->id || len > 255) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "a lifecycle rule's ID is given twice or longer "
                    "than 255 characters");
            return;
        }
        r->id = dup_text(x, text, len, 255, "ID");
    } else if (!strcmp(f, "Status")) {
        if (len == 7 && !memcmp(text, "Enabled", 7))
            x->status = 1;
        else if (len == 8 && !memcmp(text, "Disabled", 8))
            x->status = 2;
        else
            LC_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a lifecycle rule's Status must be Enabled or "
                    "Disabled, got \"%.*s\"",
                    (int)(len > 32 ? 32 : len), text);
    } else if (!strcmp(f, "Prefix")) {
        if (r->legacy_prefix || r->prefix) {
            LC_FAIL(x, S3_ERR_MALFORMED_XML,
                    "a lifecycle rule names Prefix twice, or both a "
                    "top-level Prefix and a Filter's; use the Filter");
            return;
        }
        r->legacy_prefix = true;
        r->prefix = dup_text(x, text, len, S3_LC_MAX_PREFIX, "Prefix");
    } else if (!strcmp(f, "Filter")) {
        x->has_filter = true;
    } else if (!strncmp(f, "Filter/And/", 11)) {
        filter_elem(x, f + 11, true, text, len);
    } else if (!strncmp(f, "Filter/", 7)) {
        filter_elem(x, f + 7, false, text, len);
    } else if (!strcmp(f, "Expiration")) {
        x->has_exp = true;
    } else if (!strcmp(f, "Expiration/Days")) {
        if (x->exp_days_set || parse_num(text, len, S3_LC_MAX_DAYS, &v) != 0 || v < 1) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "'Days' for Expiration action must be a "
                    "positive integer");
            return;
        }
        x->exp_days_set = true;
        r->exp_days = v;
    } else if (!strcmp(f, "Expiration/Date")) {
        int rc = x->exp_date_set ? -1 : parse_date(text, len, &v);
        if (rc == -2) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT, "'Date' must be at midnight GMT, got \"%.*s\"",
                    (int)(len > 40 ? 40 : len), text);
            return;
        }
        if (rc != 0) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "Expiration's Date must be an ISO 8601 date "
                    "such as 2030-01-01T00:00:00Z, got \"%.*s\"",
                    (int)(len > 40 ? 40 : len), text);
            return;
        }
        x->exp_date_set = true;
        r->exp_date = v;
    } else if (!strcmp(f, "Expiration/ExpiredObjectDeleteMarker")) {
        if (len == 4 && !memcmp(text, "true", 4))
            r->exp_marker = true;
        else if (!(len == 5 && !memcmp(text, "false", 5))) {
            LC_FAIL(x, S3_ERR_MALFORMED_XML, "ExpiredObjectDeleteMarker must be true or false");
            return;
        }
        if (r->exp_marker)
            x->exp_marker_set = true;
    } else if (!strcmp(f, "NoncurrentVersionExpiration")) {
        x->has_nc = true;
    } else if (!strcmp(f, "NoncurrentVersionExpiration/NoncurrentDays")) {
        if (r->nc_days || parse_num(text, len, S3_LC_MAX_DAYS, &v) != 0 || v < 1) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "'NoncurrentDays' for "
                    "NoncurrentVersionExpiration action must be a positive integer");
            return;
        }
        r->nc_days = v;
    } else if (!strcmp(f, "NoncurrentVersionExpiration/NewerNoncurrentVersions")) {
        if (x->nc_newer_set || parse_num(text, len, 100, &v) != 0 || v < 1) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "NewerNoncurrentVersions must be a whole "
                    "number from 1 to 100");
            return;
        }
        x->nc_newer_set = true;
        r->nc_newer = v;
    } else if (!strcmp(f, "AbortIncompleteMultipartUpload")) {
        x->has_abort = true;
    } else if (!strcmp(f, "AbortIncompleteMultipartUpload/DaysAfterInitiation")) {
        if (r->abort_days || parse_num(text, len, S3_LC_MAX_DAYS, &v) != 0 || v < 1) {
            LC_FAIL(x, S3_ERR_INVALID_ARGUMENT,
                    "'DaysAfterInitiation' for "
                    "AbortIncompleteMultipartUpload action must be a positive integer");
            return;
        }
        r->abort_days = v;
    } else if (!strncmp(f, "Transition", 10) || !strncmp(f, "NoncurrentVersionTransition", 27)) {
        LC_FAIL(x, S3_ERR_NOT_IMPLEMENTED,
                "lifecycle transitions are not implemented: wharf "
                "has one storage class (rule %s names %s)",
                r->id ? r->id : "(no ID)", f);
    } else {
        LC_FAIL(x, S3_ERR_MALFORMED_XML, "unknown lifecycle rule element %s", f);
    }
}

s3_err_t s3_lc_parse(const char *xml, size_t len, s3_lc_t *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (msg && msglen)
        msg[0] = '\0';
    lc_x_t x = {.c = out, .err = S3_OK, .msg = msg, .msglen = msglen};
    rule_init(&x.cur);
    if (s3_xml_walk(xml, len, lc_cb, &x) != 0 && x.err == S3_OK)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the lifecycle configuration is not "
                        "well-formed XML");
    if (x.err == S3_OK && x.other_root)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "the document is not a "
                        "LifecycleConfiguration");
    if (x.err == S3_OK && out->n == 0)
        x.err = s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
                        "a LifecycleConfiguration needs at "
                        "least one Rule");
    rule_free(&x.cur);
    free(x.tag_key);
    free(x.tag_value);
    if (x.err != S3_OK)
        s3_lc_free(out);
    return x.err;
}

/* ---- writing ---- */

static void elem_i64(wh_sbuf_t *b, const char *name, int64_t v)
{
    s3_xml_elem_u64(b, name, (uint64_t)v);
}

void s3_lc_format(const s3_lc_t *c, wh_sbuf_t *b, const char *xmlns)
{
    wh_sbuf_printf(b, "<LifecycleConfiguration xmlns=\"%s\">", xmlns);
    for (size_t i = 0; i < c->n; i++) {
        const s3_lc_rule_t *r = &c->rules[i];
        wh_sbuf_puts(b, "<Rule>");
        if (r->id)
            s3_xml_elem(b, "ID", r->id);
        if (r->legacy_prefix) {
            s3_xml_elem(b, "Prefix", r->prefix ? r->prefix : "");
        } else {
            unsigned n =
                (r->prefix != NULL) + (unsigned)r->ntags + (r->size_gt >= 0) + (r->size_lt >= 0);
            bool and = r->and_form || n > 1;
            wh_sbuf_puts(b, and? "<Filter><And>" : "<Filter>");
            if (r->prefix)
                s3_xml_elem(b, "Prefix", r->prefix);
            for (size_t j = 0; j < r->ntags; j++) {
                wh_sbuf_puts(b, "<Tag>");
                s3_xml_elem(b, "Key", r->tags[j].key);
                s3_xml_elem(b, "Value", r->tags[j].value);
                wh_sbuf_puts(b, "</Tag>");
            }
            if (r->size_gt >= 0)
                elem_i64(b, "ObjectSizeGreaterThan", r->size_gt);
            if (r->size_lt >= 0)
                elem_i64(b, "ObjectSizeLessThan", r->size_lt);
            wh_sbuf_puts(b, and? "</And></Filter>" : "</Filter>");
        }
        s3_xml_elem(b, "Status", r->enabled ? "Enabled" : "Disabled");
        if (r->exp_days || r->exp_date >= 0 || r->exp_marker) {
            wh_sbuf_puts(b, "<Expiration>");
            if (r->exp_days)
                elem_i64(b, "Days", r->exp_days);
            if (r->exp_date >= 0) {
                time_t t = (time_t)r->exp_date;
                struct tm tm;
                char d[40];
                gmtime_r(&t, &tm);
                strftime(d, sizeof d, "%Y-%m-%dT00:00:00.000Z", &tm);
                s3_xml_elem(b, "Date", d);
            }
            if (r->exp_marker)
                s3_xml_elem(b, "ExpiredObjectDeleteMarker", "true");
            wh_sbuf_puts(b, "</Expiration>");
        }
        if (r->nc_days) {
            wh_sbuf_puts(b, "<NoncurrentVersionExpiration>");
            elem_i64(b, "NoncurrentDays", r->nc_days);
            if (r->nc_newer)
                elem_i64(b, "NewerNoncurrentVersions", r->nc_newer);
            wh_sbuf_puts(b, "</NoncurrentVersionExpiration>");
        }
        if (r->abort_days) {
            wh_sbuf_puts(b, "<AbortIncompleteMultipartUpload>");
            elem_i64(b, "DaysAfterInitiation", r->abort_days);
            wh_sbuf_puts(b, "</AbortIncompleteMultipartUpload>");
        }
        wh_sbuf_puts(b, "</Rule>");
    }
    wh_sbuf_puts(b, "</LifecycleConfiguration>");
}

/* ---- matching ---- */

int64_t s3_lc_due(int64_t since, int64_t days, int64_t day_s)
{
    int64_t t = since + days * day_s;
    if (day_s == 86400 && t % 86400 != 0)
        t += 86400 - (t % 86400 + 86400) % 86400;
    return t;
}

bool s3_lc_rule_needs_tags(const s3_lc_rule_t *r)
{
    return r->ntags > 0;
}

bool s3_lc_rule_matches(const s3_lc_rule_t *r, const char *key, size_t klen, uint64_t size,
                        const char *tags)
{
    if (r->prefix) {
        size_t pl = strlen(r->prefix);
        if (klen < pl || memcmp(key, r->prefix, pl) != 0)
            return false;
    }
    if (r->size_gt >= 0 && !(size > (uint64_t)r->size_gt))
        return false;
    if (r->size_lt >= 0 && !(size < (uint64_t)r->size_lt))
        return false;
    if (!r->ntags)
        return true;
    if (!tags || !*tags)
        return false;
    s3_tagset_t *t = malloc(sizeof *t);
    char msg[128];
    if (!t || s3_tags_parse_query(tags, strlen(tags), S3_TAGS_MAX, t, msg, sizeof msg) != S3_OK) {
        free(t);
        return false; /* unreadable tags match no tag filter: nothing is deleted for them */
    }
    bool ok = true;
    for (size_t i = 0; i < r->ntags && ok; i++) {
        bool found = false;
        for (size_t j = 0; j < t->n && !found; j++)
            found = strcmp(t->tags[j].key, r->tags[i].key) == 0 &&
                    strcmp(t->tags[j].value, r->tags[i].value) == 0;
        ok = found;
    }
    free(t);
    return ok;
}
