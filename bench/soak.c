/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak: a long-running mixed load against one wharfd, with every byte checked and the
 * server's resources sampled every second (docs/soak.md).
 *
 *   soak --endpoint http://127.0.0.1:9000 --pid PID --unix-socket DIR/wharfd.sock \
 *        --duration 600 --clients 64 --bad-clients 10 --out results/soak.json
 *
 * Well-behaved clients (threads, one libwharf client each, transports round-robin over
 * --transports http,shm,tcp) run GET, ranged GET, PUT, multipart PUT, DELETE, HEAD and LIST.
 * Every key has one owner, the only thread that writes it; object bytes are a function of
 * (run seed, key, version), so any reader can check them. The owner publishes each version
 * before it starts writing it and marks it committed once acknowledged; a reader on another
 * thread accepts any version between the one committed when its GET started and the newest
 * one started when it ended. Misbehaving clients (threads, and for the stopped-RDMA case a
 * child process) stall mid-request, disconnect mid-body and mid-response, send garbage, hold
 * idle sockets, sign badly and abandon multipart uploads; they are expected to fail, and only
 * their effect on the server is judged (a cut-off PUT must store nothing).
 *
 * Every --interval seconds the sampler reads the server's RSS, threads, VmLck and VmPin from
 * /proc/PID/status, counts /proc/PID/fd, and scrapes /metrics for registered RDMA memory.
 * After the run it fits a line to each series past --warmup and reports the slopes.
 * Exit status: 0 when well-behaved clients saw no error and no byte was wrong, 1 otherwise,
 * 2 for bad usage. */
#include "soak/soak.h"

#define SK_MAX_CLIENTS 256

#define SK_MAX_BAD 64

/* ---- parameters ------------------------------------------------------------------------- */

sk_params_t P;

/* ---- the byte pattern: object (key, version) byte i, computable anywhere ----------------- */

uint64_t sk_seed(unsigned key, uint64_t ver)
{
    return sk_mix(P.seed ^ ((uint64_t)key + 1) * 0xD6E8FEB86659FD93ull ^
                  ver * 0xA0761D6478BD642Full);
}

void sk_fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sk_word(seed, i >> 3);
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++)
        p[i] = sk_byte(seed, i);
}

/* Bytes of p[0..n) that differ from the pattern at object offsets [off, off+n). */
uint64_t sk_wrong(const uint8_t *p, uint64_t n, uint64_t seed, uint64_t off)
{
    uint64_t bad = 0, i = 0;
    while (i < n && ((off + i) & 7)) {
        bad += p[i] != sk_byte(seed, off + i);
        i++;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sk_word(seed, (off + i) >> 3), g;
        memcpy(&g, p + i, 8);
        if (g != v)
            for (unsigned k = 0; k < 8; k++)
                bad += p[i + k] != (uint8_t)(v >> (8 * k));
    }
    for (; i < n; i++)
        bad += p[i] != sk_byte(seed, off + i);
    return bad;
}

/* ---- random numbers (one state per thread) --------------------------------------------- */

uint64_t sk_rand(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    return sk_mix(*s);
}

double sk_unit(uint64_t *s)
{
    return (double)(sk_rand(s) >> 11) / 9007199254740992.0;
}

uint64_t sk_between(uint64_t *s, uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return hi <= lo ? lo : lo + sk_rand(s) % (hi - lo + 1);
}

/* Object sizes: skewed toward small, log-uniform inside each band, at most max. */
uint64_t sk_size(uint64_t *s, uint64_t max)
{
    static const struct {
        double p;
        uint64_t lo, hi;
    } band[] = {{0.05, 0, 0},
                {0.55, 1, 4096},
                {0.80, 4097, 256 << 10},
                {0.94, (256 << 10) + 1, 4 * WB_MIB},
                {0.99, 4 * WB_MIB + 1, 16 * WB_MIB},
                {1.00, 16 * WB_MIB + 1, 64 * WB_MIB}};
    double u = sk_unit(s);
    unsigned b = 0;
    while (b + 1 < sizeof band / sizeof band[0] && u > band[b].p)
        b++;
    uint64_t n = band[b].lo;
    if (band[b].hi > band[b].lo) {
        double l0 = log((double)band[b].lo), l1 = log((double)band[b].hi);
        n = (uint64_t)exp(l0 + (l1 - l0) * sk_unit(s));
    }
    return n > max ? max : n;
}

/* ---- bounded memory ---------------------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t used, peak;
} g_mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

uint64_t sk_mem_take(uint64_t n)
{
    n = (n + 4095) & ~4095ull;
    if (n == 0)
        n = 4096;
    if (n > P.mem_budget)
        n = P.mem_budget;
    pthread_mutex_lock(&g_mem.mu);
    while (g_mem.used + n > P.mem_budget)
        pthread_cond_wait(&g_mem.cv, &g_mem.mu);
    g_mem.used += n;
    if (g_mem.used > g_mem.peak)
        g_mem.peak = g_mem.used;
    pthread_mutex_unlock(&g_mem.mu);
    return n;
}

void sk_mem_give(uint64_t n)
{
    pthread_mutex_lock(&g_mem.mu);
    g_mem.used -= n;
    pthread_cond_broadcast(&g_mem.cv);
    pthread_mutex_unlock(&g_mem.mu);
}

/* ---- keys and their versions ------------------------------------------------------------- */

sk_key_t *g_keys;

unsigned g_nkeys;

static void sk_keys_init(void)
{
    g_nkeys = P.clients * P.keys_per_client;
    g_keys = calloc(g_nkeys, sizeof *g_keys);
    /* names that make SigV4 and URL encoding work: spaces, '+', '=', UTF-8, deep paths */
    static const char *const shape[] = {"c%03u/k%03u", "c%03u/dir a/k%03u+plus",
                                        "c%03u/d=1/\xc3\xbc-k%03u", "c%03u/a/b/c/d/k%03u.bin"};
    for (unsigned i = 0; i < g_nkeys; i++) {
        pthread_mutex_init(&g_keys[i].mu, NULL);
        snprintf(g_keys[i].name, sizeof g_keys[i].name, shape[i % 4], i / P.keys_per_client,
                 i % P.keys_per_client);
        g_keys[i].ring[0] = (sk_ver_t){0, 0, 1};
    }
}

/* Candidates a read may legitimately return: versions [lo, hi] of the key. Returns the count
 * (0 when hi-lo is past the ring: too many writes during one read to check it). */
unsigned sk_candidates(sk_key_t *k, uint64_t lo, sk_ver_t *out)
{
    pthread_mutex_lock(&k->mu);
    uint64_t hi = k->latest;
    unsigned n = 0;
    if (hi - lo < SK_RING)
        for (uint64_t v = lo; v <= hi; v++)
            out[n++] = k->ring[v % SK_RING];
    pthread_mutex_unlock(&k->mu);
    return n;
}

uint64_t sk_committed(sk_key_t *k, uint64_t *latest)
{
    pthread_mutex_lock(&k->mu);
    uint64_t c = k->committed;
    if (latest)
        *latest = k->latest;
    pthread_mutex_unlock(&k->mu);
    return c;
}

uint64_t sk_begin_write(sk_key_t *k, uint64_t size, int deleted)
{
    pthread_mutex_lock(&k->mu);
    uint64_t v = ++k->latest;
    k->ring[v % SK_RING] = (sk_ver_t){v, size, deleted};
    pthread_mutex_unlock(&k->mu);
    return v;
}

void sk_commit(sk_key_t *k, uint64_t v)
{
    pthread_mutex_lock(&k->mu);
    if (v > k->committed)
        k->committed = v;
    pthread_mutex_unlock(&k->mu);
}

/* ---- results shared by all threads -------------------------------------------------------- */

static const char *const sk_op_name[SK_OP_N] = {"put",       "multipart_put", "get",    "get_other",
                                                "range_get", "head",          "delete", "list"};

/* weights out of 100 */
const unsigned sk_op_weight[SK_OP_N] = {26, 4, 20, 14, 10, 8, 9, 9};

atomic_bool g_stop; /* well-behaved and bad loops end */
double g_t0, g_t_end;

static pthread_mutex_t g_res_mu = PTHREAD_MUTEX_INITIALIZER;

static json_t *g_err_classes, *g_err_samples, *g_wrong_samples, *g_bad_outcomes;

atomic_ullong g_ops_total, g_err_total, g_wrong_bytes, g_wrong_objects, g_bytes_put, g_bytes_got,
    g_busy_retries, g_unchecked_reads, g_bad_attempts;

static void sk_count(json_t *obj, const char *cls)
{
    json_t *v = json_object_get(obj, cls);
    json_object_set_new(obj, cls, json_integer(v ? json_integer_value(v) + 1 : 1));
}

void sk_error(const char *op, const char *key, wharf_status_t st, const char *msg)
{
    char cls[96];
    snprintf(cls, sizeof cls, "%s/%s", op, wharf_status_str(st));
    atomic_fetch_add(&g_err_total, 1);
    pthread_mutex_lock(&g_res_mu);
    sk_count(g_err_classes, cls);
    if (json_array_size(g_err_samples) < SK_MAX_SAMPLES_ERR)
        json_array_append_new(g_err_samples,
                              json_pack("{s:f,s:s,s:s,s:s}", "t_s", wb_now() - g_t0, "class", cls,
                                        "key", key, "message", msg ? msg : ""));
    pthread_mutex_unlock(&g_res_mu);
}

void sk_wrong_record(const char *op, const char *key, const char *what, uint64_t bytes)
{
    atomic_fetch_add(&g_wrong_objects, 1);
    atomic_fetch_add(&g_wrong_bytes, bytes);
    pthread_mutex_lock(&g_res_mu);
    if (json_array_size(g_wrong_samples) < SK_MAX_SAMPLES_ERR)
        json_array_append_new(g_wrong_samples,
                              json_pack("{s:f,s:s,s:s,s:s,s:I}", "t_s", wb_now() - g_t0, "op", op,
                                        "key", key, "what", what, "bytes", (json_int_t)bytes));
    pthread_mutex_unlock(&g_res_mu);
}

void sk_bad_outcome(const char *behaviour, const char *outcome)
{
    char cls[128];
    snprintf(cls, sizeof cls, "%s/%s", behaviour, outcome);
    pthread_mutex_lock(&g_res_mu);
    sk_count(g_bad_outcomes, cls);
    pthread_mutex_unlock(&g_res_mu);
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: soak --endpoint URL [--pid PID] [--unix-socket PATH] [--duration 600]\n"
            "            [--warmup S] [--clients 64] [--bad-clients 10]\n"
            "            [--transports http,shm,tcp]\n"
            "            [--max-size 64M] [--mem-budget 2G] [--keys-per-client 8] [--think-ms 0]\n"
            "            [--op-timeout-ms 120000] [--bad-sources 1] [--bad-kinds LIST]\n"
            "            [--interval 1] [--bucket NAME] [--seed N] [--out FILE.json]\n"
            "            [--inject-wrong-byte 1] (checks the checker: exits 1)\n"
            "credentials: --access-key/--secret-key or WHARF_ACCESS_KEY/WHARF_SECRET_KEY\n");
}

static uint64_t sk_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1024;
        break;
    case 'M':
    case 'm':
        v *= WB_MIB;
        break;
    case 'G':
    case 'g':
        v *= WB_GIB;
        break;
    default:
        break;
    }
    return (uint64_t)v;
}

static const char *sk_env(const char *n, const char *def)
{
    const char *v = getenv(n);
    return v && *v ? v : def;
}

static json_t *sk_lat_merged(sk_client_t *cls, unsigned n, unsigned op)
{
    size_t tot = 0;
    for (unsigned i = 0; i < n; i++)
        tot += cls[i].lat[op].n;
    double *v = malloc((tot ? tot : 1) * sizeof *v);
    size_t k = 0;
    for (unsigned i = 0; i < n && v; i++) {
        if (cls[i].lat[op].n)
            memcpy(v + k, cls[i].lat[op].v, cls[i].lat[op].n * sizeof *v);
        k += cls[i].lat[op].n;
    }
    wb_lat_t l;
    wb_lat_stats(v, k, &l);
    free(v);
    return wb_lat_json(&l);
}

int main(int argc, char **argv)
{
    const char *role = NULL, *key = NULL;
    uint64_t child_size = 0;
    P = (sk_params_t){.region = "us-east-1",
                      .transports = "http,shm,tcp",
                      .duration = 600,
                      .warmup = -1,
                      .interval = 1,
                      .clients = 64,
                      .bad_clients = 10,
                      .keys_per_client = 8,
                      .op_timeout_ms = 120000,
                      .bad_sources = 1,
                      .max_size = 64 * WB_MIB,
                      .mem_budget = 2 * WB_GIB};
    P.ak = sk_env("WHARF_ACCESS_KEY", "wharfadmin");
    P.sk = sk_env("WHARF_SECRET_KEY", "wharfadmin-secret");
    P.unix_socket = sk_env("WHARF_UNIX_SOCKET", NULL);
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
            return 2;
        }
#define OPT(name) (strcmp(a, name) == 0)
        if (OPT("--endpoint"))
            P.endpoint = v;
        else if (OPT("--access-key"))
            P.ak = v;
        else if (OPT("--secret-key"))
            P.sk = v;
        else if (OPT("--region"))
            P.region = v;
        else if (OPT("--unix-socket"))
            P.unix_socket = v;
        else if (OPT("--pid"))
            P.pid = atoi(v);
        else if (OPT("--duration"))
            P.duration = atof(v);
        else if (OPT("--warmup"))
            P.warmup = atof(v);
        else if (OPT("--interval"))
            P.interval = atof(v);
        else if (OPT("--clients"))
            P.clients = (unsigned)atoi(v);
        else if (OPT("--bad-clients"))
            P.bad_clients = (unsigned)atoi(v);
        else if (OPT("--transports"))
            P.transports = v;
        else if (OPT("--max-size"))
            P.max_size = sk_parse_size(v);
        else if (OPT("--mem-budget"))
            P.mem_budget = sk_parse_size(v);
        else if (OPT("--keys-per-client"))
            P.keys_per_client = (unsigned)atoi(v);
        else if (OPT("--think-ms"))
            P.think_ms = (unsigned)atoi(v);
        else if (OPT("--op-timeout-ms"))
            P.op_timeout_ms = (unsigned)atoi(v);
        else if (OPT("--bucket"))
            P.bucket = v;
        else if (OPT("--seed"))
            P.seed = strtoull(v, NULL, 0);
        else if (OPT("--out"))
            P.out = v;
        else if (OPT("--inject-wrong-byte"))
            P.inject_wrong = atoi(v);
        else if (OPT("--bad-sources"))
            P.bad_sources = atoi(v);
        else if (OPT("--bad-kinds"))
            P.bad_kinds = v;
        else if (OPT("--role"))
            role = v;
        else if (OPT("--key"))
            key = v;
        else if (OPT("--size"))
            child_size = strtoull(v, NULL, 0);
        else {
            usage();
            return 2;
        }
#undef OPT
    }
    if (!P.endpoint || sscanf(P.endpoint, "http://%255[^:/]:%d", P.host, &P.port) != 2) {
        usage();
        return 2;
    }
    unsigned kinds[SB_N], nkinds = 0;
    if (sk_bad_kinds(P.bad_kinds, kinds, &nkinds) != 0)
        return 2;
    if (role && !strcmp(role, "rdma-child"))
        return P.bucket && key ? sk_rdma_child(key, child_size, WB_MIN(P.duration, 600)) : 2;
    if (P.clients == 0 || P.clients > SK_MAX_CLIENTS || P.bad_clients > SK_MAX_BAD ||
        P.duration <= 0 || P.interval <= 0 || P.keys_per_client == 0 || P.keys_per_client > 64 ||
        P.mem_budget < 2 * P.max_size || P.max_size > 1 * WB_GIB) {
        fprintf(stderr,
                "soak: bad parameters (clients 1..%d, bad clients <= %d, keys per "
                "client 1..64, mem-budget >= 2 x max-size)\n",
                SK_MAX_CLIENTS, SK_MAX_BAD);
        usage();
        return 2;
    }
    if (P.warmup < 0)
        P.warmup = WB_MIN(60.0, P.duration / 5);
    if (!P.seed)
        P.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    char bucket[32];
    if (!P.bucket) {
        snprintf(bucket, sizeof bucket, "soak-%08x", (unsigned)sk_mix(P.seed));
        P.bucket = bucket;
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_err_classes = json_object();
    g_err_samples = json_array();
    g_wrong_samples = json_array();
    g_bad_outcomes = json_object();
    sk_keys_init();

    /* transports, round-robin over the well-behaved clients */
    const char *tnames[3];
    unsigned nt = 0;
    char tbuf[64];
    snprintf(tbuf, sizeof tbuf, "%s", P.transports);
    for (char *save = NULL, *t = strtok_r(tbuf, ",", &save); t && nt < 3;
         t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, "http") || !strcmp(t, "shm") || !strcmp(t, "tcp"))
            tnames[nt++] = !strcmp(t, "http") ? "http" : !strcmp(t, "shm") ? "shm" : "tcp";
        else {
            fprintf(stderr, "soak: unknown transport '%s' (http, shm, tcp)\n", t);
            return 2;
        }
    if (nt == 0)
        return 2;
    sk_client_t *cls = calloc(P.clients, sizeof *cls);
    int setup_failed = 0;
    for (unsigned i = 0; i < P.clients && !setup_failed; i++) {
        sk_client_t *cl = &cls[i];
        cl->id = i;
        cl->rng = sk_mix(P.seed + i * 7919 + 1);
        cl->transport_name = tnames[i % nt];
        const char *prov = !strcmp(cl->transport_name, "shm")   ? "ofi+shm"
                           : !strcmp(cl->transport_name, "tcp") ? "ofi+tcp"
                                                                : "none";
        cl->transport = strcmp(prov, "none") ? WHARF_TRANSPORT_RDMA : WHARF_TRANSPORT_HTTP;
        if (!(cl->c = sk_new_client(prov, cl->init_err, sizeof cl->init_err))) {
            fprintf(stderr, "soak: %s\n", cl->init_err);
            setup_failed = 1;
        }
    }
    wharf_client_t *admin = NULL;
    char err[256] = "";
    if (!setup_failed && (admin = sk_new_client("none", err, sizeof err))) {
        wharf_status_t st = wharf_bucket_create(admin, P.bucket);
        if (st != WHARF_OK && st != WHARF_ERR_EXISTS) {
            fprintf(stderr, "soak: creating bucket %s: %s\n", P.bucket, wharf_last_error());
            setup_failed = 1;
        }
        /* the object the misbehaving readers pull on */
        g_big_size = WB_MIN(32 * WB_MIB, P.max_size);
        uint8_t *big = malloc(g_big_size);
        sk_fill(big, g_big_size, 42);
        if (!setup_failed &&
            wharf_object_put(admin, P.bucket, g_big_key, big, g_big_size, NULL, NULL)) {
            fprintf(stderr, "soak: PUT %s: %s\n", g_big_key, wharf_last_error());
            setup_failed = 1;
        }
        free(big);
    } else if (!setup_failed) {
        fprintf(stderr, "soak: %s\n", err);
        setup_failed = 1;
    }
    if (setup_failed)
        return 1;

    sk_bad_t *bads = calloc(P.bad_clients ? P.bad_clients : 1, sizeof *bads);
    g_t0 = wb_now();
    char started[32];
    wb_timestamp(started);
    pthread_t sampler;
    pthread_create(&sampler, NULL, sk_sampler_main, NULL);
    for (unsigned i = 0; i < P.clients; i++)
        pthread_create(&cls[i].th, NULL, sk_client_main, &cls[i]);
    for (unsigned i = 0; i < P.bad_clients; i++) {
        bads[i] =
            (sk_bad_t){.id = i, .kind = kinds[i % nkinds], .rng = sk_mix(P.seed ^ (i + 1000))};
        bads[i].c = sk_new_client("none", err, sizeof err);
        if (bads[i].c)
            pthread_create(&bads[i].th, NULL, sk_bad_main, &bads[i]);
    }
    while (wb_now() - g_t0 < P.duration)
        usleep(100000);
    atomic_store(&g_stop, 1);
    for (unsigned i = 0; i < P.bad_clients; i++)
        if (bads[i].c)
            pthread_join(bads[i].th, NULL);
    for (unsigned i = 0; i < P.clients; i++)
        pthread_join(cls[i].th, NULL);
    pthread_join(sampler, NULL);
    g_t_end = wb_now();

    /* the server must still be alive and healthy */
    int alive = 1;
    if (P.pid > 0)
        alive = kill(P.pid, 0) == 0;
    wharf_stat_t bs;
    wharf_stat_init(&bs, sizeof bs);
    int healthy = alive && wharf_object_stat(admin, P.bucket, g_big_key, &bs) == WHARF_OK &&
                  bs.length == g_big_size;

    json_t *root = json_object();
    json_object_set_new(root, "benchmark", json_string("soak"));
    json_object_set_new(root, "started", json_string(started));
    json_object_set_new(root, "environment", wb_env_json(P.transports));
    json_object_set_new(
        root, "parameters",
        json_pack("{s:s,s:f,s:f,s:f,s:i,s:i,s:s,s:I,s:I,s:i,s:i,s:i,s:b,s:s,s:I,s:i}", "endpoint",
                  P.endpoint, "duration_s", P.duration, "warmup_s", P.warmup, "interval_s",
                  P.interval, "clients", (int)P.clients, "bad_clients", (int)P.bad_clients,
                  "transports", P.transports, "max_object_bytes", (json_int_t)P.max_size,
                  "mem_budget_bytes", (json_int_t)P.mem_budget, "keys_per_client",
                  (int)P.keys_per_client, "think_ms", (int)P.think_ms, "op_timeout_ms",
                  (int)P.op_timeout_ms, "bad_sources", P.bad_sources, "bucket", P.bucket, "seed",
                  (json_int_t)P.seed, "server_pid", P.pid));
    json_object_set_new(json_object_get(root, "parameters"), "bad_kinds",
                        json_string(P.bad_kinds ? P.bad_kinds : "all"));
    json_t *ops = json_object(), *lat = json_object();
    uint64_t total_ops = 0;
    for (unsigned op = 0; op < SK_OP_N; op++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < P.clients; i++)
            n += cls[i].ops[op];
        total_ops += n;
        json_object_set_new(ops, sk_op_name[op], json_integer((json_int_t)n));
        json_object_set_new(lat, sk_op_name[op], sk_lat_merged(cls, P.clients, op));
    }
    json_t *by_transport = json_object();
    for (unsigned t = 0; t < nt; t++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < P.clients; i++)
            if (cls[i].transport_name == tnames[t])
                for (unsigned op = 0; op < SK_OP_N; op++)
                    n += cls[i].ops[op];
        json_object_set_new(by_transport, tnames[t], json_integer((json_int_t)n));
    }
    double wall = g_t_end - g_t0;
    uint64_t errors = atomic_load(&g_err_total), wrong = atomic_load(&g_wrong_bytes),
             wrong_obj = atomic_load(&g_wrong_objects);
    json_object_set_new(root, "ops", ops);
    json_object_set_new(root, "ops_by_transport", by_transport);
    json_object_set_new(root, "ops_total", json_integer((json_int_t)total_ops));
    json_object_set_new(root, "ops_per_s", json_real(wall > 0 ? (double)total_ops / wall : 0));
    json_object_set_new(root, "latency", lat);
    json_object_set_new(root, "wall_s", json_real(wall));
    json_object_set_new(root, "bytes_put", json_integer((json_int_t)atomic_load(&g_bytes_put)));
    json_object_set_new(root, "bytes_got", json_integer((json_int_t)atomic_load(&g_bytes_got)));
    json_object_set_new(root, "errors", json_integer((json_int_t)errors));
    json_object_set_new(root, "errors_by_class", g_err_classes);
    json_object_set_new(root, "error_samples", g_err_samples);
    json_object_set_new(root, "wrong_bytes", json_integer((json_int_t)wrong));
    json_object_set_new(root, "wrong_objects", json_integer((json_int_t)wrong_obj));
    json_object_set_new(root, "wrong_samples", g_wrong_samples);
    json_object_set_new(root, "busy_retries",
                        json_integer((json_int_t)atomic_load(&g_busy_retries)));
    json_object_set_new(root, "unchecked_reads",
                        json_integer((json_int_t)atomic_load(&g_unchecked_reads)));
    json_object_set_new(root, "bad_client_attempts",
                        json_integer((json_int_t)atomic_load(&g_bad_attempts)));
    json_object_set_new(root, "bad_client_outcomes", g_bad_outcomes);
    json_object_set_new(root, "client_mem_peak_bytes", json_integer((json_int_t)g_mem.peak));
    json_object_set_new(root, "server_alive_at_end", json_boolean(alive));
    json_object_set_new(root, "server_healthy_at_end", json_boolean(healthy));
    json_object_set_new(root, "registered_metric",
                        g_registered_metric[0] ? json_string(g_registered_metric) : json_null());
    json_t *samples = json_array();
    for (size_t i = 0; i < g_nsamples; i++) {
        const sk_sample_t *s = &g_samples[i];
        json_t *o = json_pack("{s:f,s:b,s:I,s:I,s:I}", "t_s", s->t, "alive", s->alive, "ops",
                              (json_int_t)s->ops, "errors", (json_int_t)s->errors, "wrong_bytes",
                              (json_int_t)s->wrong_bytes);
        if (s->alive) {
            json_object_set_new(o, "rss_bytes", json_integer((json_int_t)s->rss));
            json_object_set_new(o, "threads", json_integer((json_int_t)s->threads));
            json_object_set_new(o, "fds", json_integer((json_int_t)s->fds));
            json_object_set_new(o, "vm_lck_bytes", json_integer((json_int_t)s->vm_lck));
            json_object_set_new(o, "vm_pin_bytes", json_integer((json_int_t)s->vm_pin));
        }
        if (s->has_registered)
            json_object_set_new(o, "registered_bytes", json_integer((json_int_t)s->registered));
        if (s->metrics_ok)
            json_object_set_new(o, "inflight_requests", json_integer((json_int_t)s->inflight));
        if (s->has_pool)
            json_object_set_new(o, "rdma_pool_busy",
                                json_integer((json_int_t)(s->pool_total - s->pool_free)));
        if (s->has_pipelines)
            json_object_set_new(o, "rdma_pipelines_active", json_integer((json_int_t)s->pipelines));
        json_array_append_new(samples, o);
    }
    json_object_set_new(root, "samples", samples);
    json_t *trend = json_object();
    json_object_set_new(trend, "from_s", json_real(P.warmup));
    json_object_set_new(trend, "rss_mib", sk_fit(offsetof(sk_sample_t, rss), P.warmup, WB_MIB));
    json_object_set_new(trend, "fds", sk_fit(offsetof(sk_sample_t, fds), P.warmup, 1));
    json_object_set_new(trend, "threads", sk_fit(offsetof(sk_sample_t, threads), P.warmup, 1));
    json_object_set_new(trend, "vm_lck_mib",
                        sk_fit(offsetof(sk_sample_t, vm_lck), P.warmup, WB_MIB));
    json_object_set_new(root, "after_warmup", trend);
    int ok = errors == 0 && wrong == 0 && wrong_obj == 0 && alive && healthy;
    json_object_set_new(root, "ok", json_boolean(ok));
    if (P.out) {
        if (json_dump_file(root, P.out,
                           JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10)) != 0)
            fprintf(stderr, "soak: cannot write %s\n", P.out);
    }
    fprintf(stderr,
            "soak: %.0f s, %" PRIu64 " ops (%.1f/s), errors %" PRIu64 ", wrong bytes %" PRIu64
            " in %" PRIu64 " objects, busy retries %llu, bad-client attempts %llu, server %s\n",
            wall, total_ops, wall > 0 ? (double)total_ops / wall : 0, errors, wrong, wrong_obj,
            (unsigned long long)atomic_load(&g_busy_retries),
            (unsigned long long)atomic_load(&g_bad_attempts),
            healthy ? "healthy"
            : alive ? "alive but not answering"
                    : "gone");
    json_decref(root);
    for (unsigned i = 0; i < P.clients; i++) {
        wharf_client_destroy(cls[i].c);
        for (unsigned op = 0; op < SK_OP_N; op++)
            free(cls[i].lat[op].v);
    }
    for (unsigned i = 0; i < P.bad_clients; i++)
        wharf_client_destroy(bads[i].c);
    wharf_client_destroy(admin);
    free(cls);
    free(bads);
    free(g_samples);
    curl_global_cleanup();
    return ok ? 0 : 1;
}
