/* SPDX-License-Identifier: Apache-2.0 */
/* wharfd's configuration files (config.h): libinih reads the file, its keys become long
 * options ahead of the command line's, and the role's own getopt loop checks them all. */
#include "roles/config.h"
#include "base/log.h"
#include "roles/config_int.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MOD "config"
#define CONF_MAX_BYTES (1u << 20)
#define CONF_MAX_KEYS 256

enum { MODE_RUN, MODE_CHECK, MODE_PRINT, MODE_RELOAD };

typedef struct conf {
    int mode;
    unsigned role_bit;
    const char *role;
    role_main_fn main;
    const struct option *opts;
    char *path;  /* NULL: no file */
    int argc;    /* the merged vector: argv[0], the role, the file's keys, the command line */
    char **argv; /* its file entries are owned ("--name=value") */
    int *line;   /* per index of argv: the file's line, 0 for the command line */
    int nfile;   /* file entries at [2, 2 + nfile) */
    char **cl;   /* the command line's options less --config FILE and --print-config */
    int ncl;
    bool parsing;              /* between role_conf_begin and role_conf_parsed */
    char *live[CONF_MAX_KEYS]; /* values a reload applied (role_conf_keys' order) */
    bool live_set[CONF_MAX_KEYS];
} conf_t;

static int g_mode = MODE_RUN; /* the mode the next role_conf_begin takes */
static conf_t *g_conf;        /* the parse under way or last done */
static conf_t *g_run;         /* the running process's */

static unsigned role_bit(const char *role)
{
    if (strcmp(role, "serve") == 0)
        return ROLE_CONF_SERVE;
    if (strcmp(role, "gateway") == 0)
        return ROLE_CONF_GATEWAY;
    if (strcmp(role, "storage") == 0)
        return ROLE_CONF_STORAGE;
    return 0;
}

static const role_conf_key_t *key_find(unsigned bit, const char *name, size_t n)
{
    for (const role_conf_key_t *k = role_conf_keys; k->name; k++)
        if ((k->roles & bit) && strlen(k->name) == n && memcmp(k->name, name, n) == 0)
            return k;
    return NULL;
}

/* ---- the file ---------------------------------------------------------------------- */

typedef struct parse {
    unsigned bit;
    const char *role;
    const char *p, *end; /* the reader's place */
    int line;            /* the line the reader returned last */
    char err[400];       /* the first error, with its line */
    int n;
    char *name[CONF_MAX_KEYS]; /* the option's name ('-') */
    char *value[CONF_MAX_KEYS];
    int at[CONF_MAX_KEYS];
} parse_t;

static void perr(parse_t *ps, const char *fmt, const char *a, const char *b)
    __attribute__((format(printf, 2, 0)));
static void perr(parse_t *ps, const char *fmt, const char *a, const char *b)
{
    if (ps->err[0])
        return;
    int n = snprintf(ps->err, sizeof ps->err, "%d: ", ps->line);
    if (n > 0 && (size_t)n < sizeof ps->err)
        snprintf(ps->err + n, sizeof ps->err - (size_t)n, fmt, a, b);
}

/* libinih's reader: one line per call, so ps->line is the line the handler sees. */
static char *reader(char *str, int num, void *stream)
{
    parse_t *ps = stream;
    if (ps->p >= ps->end || num < 2)
        return NULL;
    const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    const char *eol = nl ? nl + 1 : ps->end;
    size_t len = (size_t)(eol - ps->p);
    ps->line++;
    if (len > (size_t)num - 1) {
        perr(ps, "a line longer than %s characters", "198", NULL);
        len = 0;
    } else if (memchr(ps->p, '\0', len)) {
        perr(ps, "a NUL byte%s%s", "", "");
        len = 0;
    }
    memcpy(str, ps->p, len);
    str[len] = '\0';
    ps->p = eol;
    return str;
}

static bool is_true(const char *v)
{
    return !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1");
}
static bool is_false(const char *v)
{
    return !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0");
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    parse_t *ps = user;
    if (*section && strcmp(section, ps->role) != 0) {
        perr(ps, "section [%s] in a file for wharfd %s", section, ps->role);
        return 0;
    }
    char opt[64];
    size_t n = strlen(name);
    bool ok = n > 0 && n < sizeof opt;
    for (size_t i = 0; ok && i < n; i++) {
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
             name[i] == '_';
        opt[i] = name[i] == '_' ? '-' : name[i];
    }
    const role_conf_key_t *k = ok ? key_find(ps->bit, opt, n) : NULL;
    if (!k) {
        perr(ps, "unknown key '%s' for wharfd %s", name, ps->role);
        return 0;
    }
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->name[i], k->name) == 0) {
            char prev[16];
            snprintf(prev, sizeof prev, "%d", ps->at[i]);
            perr(ps, "key '%s' set twice (first on line %s)", name, prev);
            return 0;
        }
    if (k->flags & ROLE_CONF_BOOL) {
        if (!is_true(value) && !is_false(value)) {
            perr(ps, "key '%s' wants true or false, got '%s'", name, value);
            return 0;
        }
    } else if (!*value) {
        perr(ps, "key '%s' has no value%s", name, "");
        return 0;
    }
    if (ps->n >= CONF_MAX_KEYS) {
        perr(ps, "too many keys%s%s", "", "");
        return 0;
    }
    ps->name[ps->n] = (char *)k->name;
    ps->value[ps->n] = strdup(value);
    ps->at[ps->n] = ps->line;
    if (!ps->value[ps->n]) {
        perr(ps, "out of memory%s%s", "", "");
        return 0;
    }
    ps->n++;
    return 1;
}

static void parse_free(parse_t *ps)
{
    for (int i = 0; i < ps->n; i++)
        free(ps->value[i]);
    ps->n = 0;
}

/* 0, or -1 with ps->err set. */
static int parse_text(parse_t *ps, const char *text, size_t len)
{
    ps->p = text;
    ps->end = text + len;
    ps->line = 0;
    ps->err[0] = '\0';
    ps->n = 0;
    int r = ini_parse_stream(reader, ps, handler, ps);
    if (r == 0 && !ps->err[0])
        return 0;
    if (!ps->err[0]) {
        if (r > 0)
            snprintf(ps->err, sizeof ps->err, "%d: not 'key = value', a [section] or a comment", r);
        else
            snprintf(ps->err, sizeof ps->err, "cannot be parsed (out of memory)");
    }
    parse_free(ps);
    return -1;
}

/* The whole file into a new string: 0, or -1 with err set. */
static int slurp(const char *path, char **out, size_t *len, char *err, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, cap, "cannot open it: %s", strerror(errno));
        return -1;
    }
    char *buf = malloc(CONF_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, CONF_MAX_BYTES + 1, f) : 0;
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > CONF_MAX_BYTES) {
        free(buf);
        snprintf(err, cap, "%s", !buf ? "out of memory" : bad ? "cannot read it" : "over 1 MiB");
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int role_conf_parse_text(const char *role, const char *text, size_t len)
{
    parse_t *ps = calloc(1, sizeof *ps);
    if (!ps)
        return -1;
    ps->role = role;
    ps->bit = role_bit(role);
    int r = parse_text(ps, text, len);
    parse_free(ps);
    free(ps);
    return r;
}

/* ---- a role's command line ---------------------------------------------------------- */

static void conf_free(conf_t *c)
{
    if (!c)
        return;
    for (int i = 2; i < 2 + c->nfile; i++)
        free(c->argv[i]);
    for (int i = 0; i < CONF_MAX_KEYS; i++)
        free(c->live[i]);
    free(c->argv);
    free(c->line);
    free(c->cl);
    free(c->path);
    free(c);
}

/* The table and the role's getopt table name the same options (less --help). */
static bool opts_match(unsigned bit, const struct option *opts, const char *role)
{
    bool ok = true;
    size_t n = 0;
    for (const struct option *o = opts; o->name; o++) {
        if (strcmp(o->name, "help") == 0)
            continue;
        n++;
        if (!key_find(bit, o->name, strlen(o->name))) {
            fprintf(stderr, "wharfd: internal: --%s of %s has no configuration key\n", o->name,
                    role);
            ok = false;
        }
    }
    size_t m = 0;
    for (const role_conf_key_t *k = role_conf_keys; k->name; k++)
        m += (k->roles & bit) != 0;
    if (ok && n != m) {
        fprintf(stderr, "wharfd: internal: %s has %zu options and %zu keys\n", role, n, m);
        ok = false;
    }
    return ok;
}

int role_conf_begin(const char *role, role_main_fn role_main, const struct option *opts, int *argc,
                    char ***argv)
{
    conf_t *c = calloc(1, sizeof *c);
    int n = *argc;
    char **av = *argv;
    if (!c || !(c->cl = calloc((size_t)n + 1, sizeof *c->cl))) {
        free(c);
        fprintf(stderr, "wharfd: out of memory\n");
        return 2;
    }
    c->mode = g_mode;
    c->role = role;
    c->role_bit = role_bit(role);
    c->main = role_main;
    c->opts = opts;
    if (!opts_match(c->role_bit, opts, role)) {
        conf_free(c);
        return 2;
    }
    const char *path = NULL;
    for (int i = 2; i < n; i++) {
        if (strcmp(av[i], "--config") == 0 && i + 1 < n)
            path = av[++i];
        else if (strncmp(av[i], "--config=", 9) == 0)
            path = av[i] + 9;
        else if (strcmp(av[i], "--config") == 0) {
            conf_free(c);
            fprintf(stderr, "wharfd: --config needs a FILE\n");
            return 2;
        } else if (strcmp(av[i], "--print-config") == 0) {
            if (c->mode == MODE_RUN)
                c->mode = MODE_PRINT;
        } else
            c->cl[c->ncl++] = av[i];
    }
    parse_t *ps = calloc(1, sizeof *ps);
    if (!ps) {
        conf_free(c);
        return 2;
    }
    ps->role = role;
    ps->bit = c->role_bit;
    if (path) {
        char *text = NULL;
        size_t len = 0;
        c->path = strdup(path);
        bool read = slurp(path, &text, &len, ps->err, sizeof ps->err) == 0;
        if (!read || parse_text(ps, text, len) != 0) {
            /* a parse error opens with its line */
            fprintf(stderr, "wharfd: %s%s%s\n", path, read ? ":" : ": ", ps->err);
            free(text);
            free(ps);
            conf_free(c);
            return 2;
        }
        free(text);
    }
    c->argc = 2 + ps->n + c->ncl;
    c->argv = calloc((size_t)c->argc + 1, sizeof *c->argv);
    c->line = calloc((size_t)c->argc + 1, sizeof *c->line);
    bool oom = !c->argv || !c->line;
    for (int i = 0; !oom && i < ps->n; i++) {
        const role_conf_key_t *k = key_find(c->role_bit, ps->name[i], strlen(ps->name[i]));
        char *a = NULL;
        if (k->flags & ROLE_CONF_BOOL) {
            if (is_false(ps->value[i]))
                continue; /* the default */
            oom = asprintf(&a, "--%s", k->name) < 0;
        } else
            oom = asprintf(&a, "--%s=%s", k->name, ps->value[i]) < 0;
        c->argv[2 + c->nfile] = oom ? NULL : a;
        c->line[2 + c->nfile] = ps->at[i];
        c->nfile += !oom;
    }
    c->argc = 2 + c->nfile + c->ncl;
    parse_free(ps);
    free(ps);
    if (oom) {
        fprintf(stderr, "wharfd: out of memory\n");
        conf_free(c);
        return 2;
    }
    c->argv[0] = av[0];
    c->argv[1] = av[1];
    for (int i = 0; i < c->ncl; i++)
        c->argv[2 + c->nfile + i] = c->cl[i];
    c->parsing = true;
    g_conf = c;
    if (c->mode == MODE_RUN || c->mode == MODE_PRINT)
        g_run = c;
    *argc = c->argc;
    *argv = c->argv;
    return 0;
}

void role_conf_parsed(void)
{
    if (g_conf)
        g_conf->parsing = false;
}

void role_conf_where(FILE *f)
{
    conf_t *c = g_conf;
    int i = optind - 1;
    if (!c || !c->parsing || !c->path || i < 2 || i >= 2 + c->nfile)
        return;
    const char *a = c->argv[i] + 2;
    size_t n = strcspn(a, "=");
    fprintf(f, "%s:%d: key ", c->path, c->line[i]);
    for (size_t j = 0; j < n; j++)
        fputc(a[j] == '-' ? '_' : a[j], f);
    fputs(": ", f);
}

bool role_conf_stop_here(void)
{
    return g_conf && g_conf->mode != MODE_RUN;
}

/* The option argv[i] names (exact, or a prefix naming one option as getopt_long takes). */
static const struct option *opt_of(const conf_t *c, const char *a, size_t n)
{
    const struct option *hit = NULL;
    int hits = 0;
    for (const struct option *o = c->opts; o->name; o++) {
        if (strlen(o->name) == n && memcmp(o->name, a, n) == 0)
            return o;
        if (strncmp(o->name, a, n) == 0) {
            hit = o;
            hits++;
        }
    }
    return hits == 1 ? hit : NULL;
}

/* The value of option name in c's vector (the last one given), its index in *at; NULL when
 * given nowhere. */
static const char *value_of(const conf_t *c, const char *name, int *at)
{
    const char *v = NULL;
    *at = -1;
    for (int i = 2; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2])
            continue;
        a += 2;
        size_t n = strcspn(a, "=");
        const struct option *o = opt_of(c, a, n);
        if (!o)
            continue;
        const char *val = "true";
        if (o->has_arg == required_argument)
            val = a[n] == '=' ? a + n + 1 : (i + 1 < c->argc ? c->argv[++i] : "");
        if (strcmp(o->name, name) == 0) {
            v = val;
            *at = a[n] == '=' || o->has_arg != required_argument ? i : i - 1;
        }
    }
    return v;
}

static void key_name(const char *opt, char *out, size_t cap)
{
    size_t i = 0;
    for (; opt[i] && i + 1 < cap; i++)
        out[i] = opt[i] == '-' ? '_' : opt[i];
    out[i] = '\0';
}

/* A URL with its password as ****. */
static void mask_url(const char *v, char *out, size_t cap)
{
    const char *s = strstr(v, "://");
    const char *at = s ? strchr(s + 3, '@') : NULL;
    const char *colon = s ? strchr(s + 3, ':') : NULL;
    if (at && colon && colon < at)
        snprintf(out, cap, "%.*s****%s", (int)(colon + 1 - v), v, at);
    else
        snprintf(out, cap, "%s", v);
}

/* A default's text for c's role: "serve: A; gateway: B" holds one per role. */
static void def_of(const conf_t *c, const char *def, char *out, size_t cap)
{
    char tag[16];
    snprintf(tag, sizeof tag, "%s: ", c->role);
    const char *p = strstr(def, tag);
    if (p && (p == def || p[-1] == ' ')) {
        p += strlen(tag);
        snprintf(out, cap, "%.*s", (int)strcspn(p, ";"), p);
    } else
        snprintf(out, cap, "%s", def);
}

static void print_config(const conf_t *c)
{
    printf("# wharfd %s: the effective settings, each with where it came from\n", c->role);
    for (const role_conf_key_t *k = role_conf_keys; k->name; k++) {
        if (!(k->roles & c->role_bit))
            continue;
        char key[64], val[1024], src[600], def[200];
        key_name(k->name, key, sizeof key);
        int at;
        const char *v = value_of(c, k->name, &at);
        const char *env = k->env ? getenv(k->env) : NULL;
        if (v && at >= 2 + c->nfile)
            snprintf(src, sizeof src, "command line");
        else if (v)
            snprintf(src, sizeof src, "%s:%d", c->path, c->line[at]);
        else if (env && *env) {
            snprintf(src, sizeof src, "environment %s", k->env);
            v = strstr(k->env, "SECRET") ? "****" : env;
        } else {
            snprintf(src, sizeof src, "default");
            def_of(c, k->def, def, sizeof def);
            v = def;
        }
        if (k->flags & ROLE_CONF_URL)
            mask_url(v, val, sizeof val);
        else
            snprintf(val, sizeof val, "%s", v);
        printf("%s = %s  # %s\n", key, val, src);
    }
}

int role_conf_finish(void)
{
    conf_t *c = g_conf;
    if (c && c->mode == MODE_PRINT)
        print_config(c);
    else if (c && c->mode == MODE_CHECK)
        printf("%s: ok (wharfd %s, %d keys)\n", c->path ? c->path : "-", c->role, c->nfile);
    fflush(stdout);
    return 0;
}

/* ---- check-config ------------------------------------------------------------------ */

/* The role the file's first section names: 0 with role set, or -1 after saying why. */
static int file_role(const char *path, const char **role)
{
    char err[200];
    char *text = NULL;
    size_t len = 0;
    if (slurp(path, &text, &len, err, sizeof err) != 0) {
        fprintf(stderr, "wharfd: %s: %s\n", path, err);
        return -1;
    }
    static const char *const roles[] = {"serve", "gateway", "storage"};
    int line = 0;
    *role = NULL;
    for (char *p = text; p && *p && !*role; line++) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        p += strspn(p, " \t");
        if (*p == '[') {
            for (int i = 0; i < 3 && !*role; i++) {
                size_t n = strlen(roles[i]);
                if (strncmp(p + 1, roles[i], n) == 0 && p[1 + n] == ']')
                    *role = roles[i];
            }
            if (!*role) {
                fprintf(stderr,
                        "wharfd: %s:%d: the first section must be [serve], [gateway] or "
                        "[storage]\n",
                        path, line + 1);
                free(text);
                return -1;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!*role) {
        fprintf(stderr,
                "wharfd: %s: no section names its role: open it with [serve], [gateway] or "
                "[storage]\n",
                path);
        return -1;
    }
    return 0;
}

int role_conf_check_main(int argc, char **argv, const role_main_fn mains[3])
{
    if (argc != 3 || argv[2][0] == '-') {
        fprintf(stderr, "usage: wharfd check-config FILE\n");
        return 2;
    }
    const char *role;
    if (file_role(argv[2], &role) != 0)
        return 2;
    char *av[] = {argv[0], (char *)role, "--config", argv[2], NULL};
    g_mode = MODE_CHECK;
    int idx = role_bit(role) == ROLE_CONF_SERVE ? 0 : role_bit(role) == ROLE_CONF_GATEWAY ? 1 : 2;
    int rc = mains[idx](4, av);
    g_mode = MODE_RUN;
    if (rc != 0)
        fprintf(stderr, "wharfd: %s: not valid (wharfd %s)\n", argv[2], role);
    return rc == 0 ? 0 : 2;
}

/* ---- reload -------------------------------------------------------------------------- */

int role_conf_reload(role_conf_apply_fn apply, void *arg)
{
    conf_t *old = g_run;
    if (!old || !old->path) {
        wh_info(MOD, "reload: no configuration file (--config) to read again");
        return 0;
    }
    int n = 4 + old->ncl;
    char **av = calloc((size_t)n + 1, sizeof *av);
    if (!av)
        return -1;
    av[0] = old->argv[0];
    av[1] = old->argv[1];
    av[2] = "--config";
    av[3] = old->path;
    for (int i = 0; i < old->ncl; i++)
        av[4 + i] = old->cl[i];
    wh_info(MOD, "reload: reading %s", old->path);
    g_mode = MODE_RELOAD;
    g_conf = NULL;
    int rc = old->main(n, av);
    conf_t *nw = g_conf;
    g_mode = MODE_RUN;
    g_conf = old;
    free(av);
    if (rc != 0 || !nw) {
        wh_error(MOD,
                 "reload refused: %s is not valid (the reason is logged above); nothing "
                 "changed",
                 old->path);
        conf_free(nw);
        return -1;
    }
    int ki = 0;
    for (const role_conf_key_t *k = role_conf_keys; k->name; k++, ki++) {
        if (!(k->roles & old->role_bit))
            continue;
        int at;
        const char *was = old->live_set[ki] ? old->live[ki] : value_of(old, k->name, &at);
        const char *now = value_of(nw, k->name, &at);
        if ((!was && !now) || (was && now && strcmp(was, now) == 0))
            continue;
        char key[64];
        key_name(k->name, key, sizeof key);
        if (!(k->flags & ROLE_CONF_LIVE)) {
            wh_warn(MOD, "reload: key %s changed; it takes effect at the next restart", key);
            continue;
        }
        if (apply(arg, k->name, now) != 0)
            continue;
        char *copy = now ? strdup(now) : NULL;
        free(old->live[ki]);
        old->live[ki] = copy;
        old->live_set[ki] = true;
        wh_info(MOD, "reload: key %s is now %s", key, now ? now : "its default");
    }
    conf_free(nw);
    return 0;
}

/* ---- secrets ------------------------------------------------------------------------- */

int role_conf_secret_mode(const char *key, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "wharfd: %s: cannot read %s: %s\n", key, path, strerror(errno));
        return -1;
    }
    unsigned mode = (unsigned)st.st_mode & 0777;
    if (mode & S_IRWXO) {
        fprintf(stderr,
                "wharfd: %s: refusing %s: other users may read or write it (mode %04o); "
                "chmod 600 it\n",
                key, path, mode);
        return -1;
    }
    if (mode & (S_IRGRP | S_IWGRP))
        wh_warn(MOD, "%s: %s may be read by its group (mode %04o); 0600 keeps it the owner's", key,
                path, mode);
    return 0;
}

int role_conf_read_secret(const char *key, const char *path, char **out)
{
    if (role_conf_secret_mode(key, path) != 0)
        return -1;
    char err[200];
    char *text = NULL;
    size_t len = 0;
    if (slurp(path, &text, &len, err, sizeof err) != 0) {
        fprintf(stderr, "wharfd: %s: %s: %s\n", key, path, err);
        return -1;
    }
    text[strcspn(text, "\r\n")] = '\0';
    if (!*text) {
        fprintf(stderr, "wharfd: %s: %s is empty (the secret is its first line)\n", key, path);
        free(text);
        return -1;
    }
    *out = text;
    return 0;
}

bool role_conf_on_command_line(const char *name)
{
    int at;
    return g_conf && value_of(g_conf, name, &at) && at >= 2 + g_conf->nfile;
}
