/* SPDX-License-Identifier: Apache-2.0 */
/* host_signals LIBWHARF BUCKET: libwharf loaded into a program that set up its signals first,
 * as Python (ctypes) or any plugin host loads it. This program is not linked with libwharf: it
 * installs handlers for SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS and SIGILL, then dlopens
 * LIBWHARF, creates a client ($WHARF_PROVIDER, $WHARF_ENDPOINT, ... as tests/libwharf_c), moves
 * an object each way, and checks after each step that no disposition of any signal changed;
 * then raises SIGTERM and SIGINT and checks that its own handlers ran. Prints OK, exits 0. */
#include "wharf/wharf.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static volatile sig_atomic_t g_caught[NSIG];

static void on_signal(int sig)
{
    g_caught[sig]++;
}

static const int k_sigs[] = {SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS, SIGILL};
static struct sigaction g_before[NSIG];

static void snapshot(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, NULL, &g_before[sig]);
}

/* Every signal's disposition is what snapshot() saw. */
static void expect_unchanged(const char *after)
{
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &now) != 0)
            continue;
        Dl_info di;
        CHECK(now.sa_handler == g_before[sig].sa_handler &&
                  (now.sa_flags & SA_SIGINFO) == (g_before[sig].sa_flags & SA_SIGINFO),
              "after %s: the handler of SIG%s changed to %p (%s)", after, sigabbrev_np(sig),
              (void *)now.sa_handler,
              dladdr((void *)now.sa_handler, &di) && di.dli_fname ? di.dli_fname : "?");
    }
}

#define SYM(h, name) ((__typeof__(&name))sym(h, #name))

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    CHECK(p, "dlsym %s: %s", name, dlerror());
    return p;
}

static const char *env(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s LIBWHARF BUCKET\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof k_sigs / sizeof k_sigs[0]; i++)
        CHECK(sigaction(k_sigs[i], &sa, NULL) == 0, "sigaction %d", k_sigs[i]);
    snapshot();

    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(h, "dlopen %s: %s", argv[1], dlerror());
    expect_unchanged("dlopen libwharf");

    wharf_client_config_t cfg;
    SYM(h, wharf_client_config_init)(&cfg, sizeof cfg);
    cfg.endpoint = env("WHARF_ENDPOINT", "http://127.0.0.1:9000");
    cfg.access_key = env("WHARF_ACCESS_KEY", "");
    cfg.secret_key = env("WHARF_SECRET_KEY", "");
    cfg.provider = env("WHARF_PROVIDER", "none");
    cfg.unix_socket = env("WHARF_UNIX_SOCKET", NULL);
    wharf_client_t *c = NULL;
    wharf_status_t st = SYM(h, wharf_client_create)(&cfg, &c);
    CHECK(st == WHARF_OK, "wharf_client_create: %d %s", st, SYM(h, wharf_last_error)());
    const char *prov = SYM(h, wharf_client_provider)(c);
    CHECK(!strcmp(prov, cfg.provider), "provider %s, asked for %s", prov, cfg.provider);
    expect_unchanged("wharf_client_create");

    const char *bucket = argv[2];
    static char src[1 << 20], dst[1 << 20];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (char)(i * 7 + 1);
    wharf_mem_t *m1 = NULL, *m2 = NULL;
    if (strcmp(prov, "none") != 0) {
        CHECK(SYM(h, wharf_mem_register)(c, src, sizeof src, WHARF_MEM_HOST, &m1) == WHARF_OK,
              "register src");
        CHECK(SYM(h, wharf_mem_register)(c, dst, sizeof dst, WHARF_MEM_HOST, &m2) == WHARF_OK,
              "register dst");
    }
    CHECK(SYM(h, wharf_bucket_create)(c, bucket) == WHARF_OK, "create bucket: %s",
          SYM(h, wharf_last_error)());
    wharf_report_t rep;
    SYM(h, wharf_report_init)(&rep, sizeof rep);
    st = SYM(h, wharf_object_put)(c, bucket, "o", src, sizeof src, NULL, &rep);
    CHECK(st == WHARF_OK, "put: %s", SYM(h, wharf_last_error)());
    CHECK(rep.transport == (strcmp(prov, "none") ? WHARF_TRANSPORT_RDMA : WHARF_TRANSPORT_HTTP),
          "put went over transport %d", (int)rep.transport);
    st = SYM(h, wharf_object_get)(c, bucket, "o", dst, sizeof dst, 0, WHARF_WHOLE, NULL, &rep);
    CHECK(st == WHARF_OK && !memcmp(src, dst, sizeof src), "get: %s", SYM(h, wharf_last_error)());
    CHECK(SYM(h, wharf_object_delete)(c, bucket, "o") == WHARF_OK, "delete");
    CHECK(SYM(h, wharf_bucket_delete)(c, bucket) == WHARF_OK, "delete bucket");
    expect_unchanged("put and get");

    raise(SIGTERM);
    raise(SIGINT);
    CHECK(g_caught[SIGTERM] == 1 && g_caught[SIGINT] == 1,
          "the program's handlers ran SIGTERM %d times, SIGINT %d times", (int)g_caught[SIGTERM],
          (int)g_caught[SIGINT]);

    SYM(h, wharf_mem_deregister)(m1);
    SYM(h, wharf_mem_deregister)(m2);
    SYM(h, wharf_client_destroy)(c);
    printf("provider %s\nOK\n", prov);
    return 0;
}
