/* SPDX-License-Identifier: Apache-2.0 */
/* `wharf verify`: proves that the RDMA data path works end to end against a running wharfd.
 *   1. PUT and GET a random buffer (64 MiB by default) over RDMA, with no fallback allowed.
 *   2. The server's /metrics counter deltas must count at least 0.99 of the bytes as RDMA in
 *      each direction, in both families of names, which share one direction (docs/internals.md):
 *      read = bytes served by GET, write = bytes received by PUT
 *      (minio_api_rdma_{read,write}_bytes_total and wharf_rdma_{read,write}_bytes_total).
 *   3. The bytes read back must equal the bytes written.
 * Prints PASS, or "FAIL: <reason>" and exits 1. */
#include "cli/cli.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define M_PUT "minio_api_rdma_write_bytes_total"
#define M_GET "minio_api_rdma_read_bytes_total"
#define M_W_GET "wharf_rdma_read_bytes_total"
#define M_W_PUT "wharf_rdma_write_bytes_total"

typedef struct metrics_buf {
    char *data;
    size_t len, cap;
} metrics_buf_t;

static size_t metrics_write(char *p, size_t size, size_t n, void *arg)
{
    metrics_buf_t *b = arg;
    size_t len = size * n;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + len + 1)
            cap *= 2;
        if (cap > (64u << 20))
            return 0;
        char *d = realloc(b->data, cap);
        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

/* Sum of every series named exactly name (any labels). */
static double metric_sum(const char *text, const char *name, bool *found)
{
    double sum = 0;
    size_t nl = strlen(name);
    *found = false;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (*line != '#' && !strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '{')) {
            const char *v = line + nl;
            if (*v == '{') {
                v = strchr(v, '}');
                v = v ? v + 1 : line + nl;
            }
            char *end;
            double d = strtod(v, &end);
            if (end != v) {
                sum += d;
                *found = true;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return sum;
}

typedef struct scrape {
    double put_bytes, get_bytes;             /* MinIO names */
    double wharf_put_bytes, wharf_get_bytes; /* wharf names */
    const char *missing;                     /* a counter the server does not list (counted as 0) */
} scrape_t;

static int scrape_metrics(const cli_t *g, scrape_t *out, char *err, size_t errlen)
{
    int rc = -1;
    CURL *h = curl_easy_init();
    metrics_buf_t b = {0};
    if (!h) {
        snprintf(err, errlen, "cannot create a curl handle");
        return -1;
    }
    char url[1024];
    /* Over wharfd's Unix socket the front is plain HTTP, whatever the TCP port serves. */
    const char *ep = g->endpoint;
    bool plain = g->unix_socket && !strncmp(ep, "https://", 8);
    if (plain)
        ep += 8;
    size_t el = strlen(ep);
    snprintf(url, sizeof url, "%s%.*s/metrics", plain ? "http://" : "",
             (int)(el && ep[el - 1] == '/' ? el - 1 : el), ep);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (g->unix_socket)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, g->unix_socket);
    if (g->ca_bundle)
        curl_easy_setopt(h, CURLOPT_CAINFO, g->ca_bundle);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, metrics_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    CURLcode cc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "GET %.300s failed: %s", url, curl_easy_strerror(cc));
        goto out;
    }
    if (code != 200) {
        snprintf(err, errlen, "GET %.300s answered %ld", url, code);
        goto out;
    }
    bool f1, f2, f3, f4;
    const char *t = b.data ? b.data : "";
    out->put_bytes = metric_sum(t, M_PUT, &f1);
    out->get_bytes = metric_sum(t, M_GET, &f2);
    out->wharf_get_bytes = metric_sum(t, M_W_GET, &f3);
    out->wharf_put_bytes = metric_sum(t, M_W_PUT, &f4);
    /* a server with RDMA disabled may not list the counters at all: they count as 0 */
    out->missing = !f1 ? M_PUT : !f2 ? M_GET : !f3 ? M_W_GET : !f4 ? M_W_PUT : NULL;
    rc = 0;
out:
    free(b.data);
    curl_easy_cleanup(h);
    return rc;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    return 1;
}

/* Fast random fill: xorshift128+ seeded from the kernel (getrandom for 64 MiB is slow). */
static int fill_random(uint8_t *p, size_t n)
{
    uint64_t s[2];
    if (getrandom(s, sizeof s, 0) != (ssize_t)sizeof s)
        return -1;
    s[0] |= 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = s[0], y = s[1];
        s[0] = y;
        x ^= x << 23;
        s[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
        uint64_t v = s[1] + y;
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++)
        p[i] = (uint8_t)(s[0] >> (8 * (i & 7)));
    return 0;
}

int cli_verify(const cli_t *g, int argc, char **argv)
{
    if (argc != 0) {
        fprintf(stderr, "wharf verify: takes no arguments (flags: --size, --bucket)\n");
        return 2;
    }
    uint64_t size = g->size ? g->size : 64ull << 20;
    const char *bucket = g->bucket ? g->bucket : "wharf-verify";
    char key[96];
    snprintf(key, sizeof key, "verify-%ld-%ld", (long)getpid(), (long)time(NULL));
    int rc = 1;
    uint8_t *src = MAP_FAILED, *dst = MAP_FAILED;
    wharf_mem_t *msrc = NULL, *mdst = NULL;
    bool made_bucket = false, put_done = false;
    char err[512], b[32];
    cli_fmt_bytes(size, b, sizeof b);

    wharf_client_t *c;
    if (cli_client(g, &c))
        return fail("cannot create a client for %s: %s", g->endpoint, wharf_last_error());
    const char *prov = wharf_client_provider(c);
    printf("verify: endpoint %s, provider %s (asked: %s), unix socket %s, %s\n", g->endpoint, prov,
           g->provider, g->unix_socket ? g->unix_socket : "none", b);

    src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (src == MAP_FAILED || dst == MAP_FAILED) {
        rc = fail("cannot allocate 2 x %s", b);
        goto out;
    }
    if (fill_random(src, size) != 0) {
        rc = fail("getrandom failed");
        goto out;
    }
    memset(dst, 0, size); /* prefault, and a GET that lands nothing cannot match */
    if (!strcmp(prov, "none")) {
        rc = fail("no RDMA provider could be opened (provider %s%s); run on the wharfd host "
                  "with --unix-socket <data>/wharfd.sock, or --provider ofi+tcp",
                  g->provider, g->unix_socket ? "" : ", no unix socket");
        goto out;
    }
    wharf_status_t st = wharf_mem_register(c, src, size, WHARF_MEM_HOST, &msrc);
    if (st == WHARF_OK)
        st = wharf_mem_register(c, dst, size, WHARF_MEM_HOST, &mdst);
    if (st != WHARF_OK) {
        rc = fail("memory registration failed: %s", wharf_last_error());
        goto out;
    }
    st = wharf_bucket_create(c, bucket);
    if (st == WHARF_OK)
        made_bucket = true;
    else if (st != WHARF_ERR_EXISTS) {
        rc = fail("cannot create bucket %s: %s", bucket, wharf_last_error());
        goto out;
    }

    scrape_t m0 = {0}, m1 = {0}, m2 = {0};
    if (scrape_metrics(g, &m0, err, sizeof err) != 0) {
        rc = fail("cannot read the server's counters: %s", err);
        goto out;
    }
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = WHARF_TRANSPORT_RDMA;
    o.verify_checksum = 1;
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    st = wharf_object_put(c, bucket, key, src, size, &o, &r);
    if (st != WHARF_OK) {
        rc = fail("PUT %s/%s over RDMA failed: %s", bucket, key, wharf_last_error());
        goto out;
    }
    put_done = true;
    cli_print_report(stdout, "verify PUT", &r);
    if (r.transport != WHARF_TRANSPORT_RDMA || r.fell_back) {
        rc = fail("PUT did not move its bytes over RDMA (transport %d%s%s)", (int)r.transport,
                  r.fell_back ? ", fell back: " : "", r.fell_back ? r.fallback_reason : "");
        goto out;
    }
    if (scrape_metrics(g, &m1, err, sizeof err) != 0) {
        rc = fail("cannot read the server's counters: %s", err);
        goto out;
    }
    double dput = m1.put_bytes - m0.put_bytes, wput = m1.wharf_put_bytes - m0.wharf_put_bytes;
    if (dput < 0.99 * (double)size || wput < 0.99 * (double)size) {
        rc = fail("the server counted %.0f (%s) and %.0f (%s) of %" PRIu64 " PUT bytes as "
                  "RDMA; both must be at least 0.99 of it%s%s",
                  dput, M_PUT, wput, M_W_PUT, size, m1.missing ? "; /metrics does not list " : "",
                  m1.missing ? m1.missing : "");
        goto out;
    }

    wharf_report_init(&r, sizeof r);
    st = wharf_object_get(c, bucket, key, dst, size, 0, WHARF_WHOLE, &o, &r);
    if (st != WHARF_OK) {
        rc = fail("GET %s/%s over RDMA failed: %s", bucket, key, wharf_last_error());
        goto out;
    }
    cli_print_report(stdout, "verify GET", &r);
    if (r.transport != WHARF_TRANSPORT_RDMA || r.fell_back || r.bytes != size) {
        rc = fail("GET did not move all %" PRIu64 " bytes over RDMA (transport %d, bytes %" PRIu64
                  "%s%s)",
                  size, (int)r.transport, r.bytes, r.fell_back ? ", fell back: " : "",
                  r.fell_back ? r.fallback_reason : "");
        goto out;
    }
    if (scrape_metrics(g, &m2, err, sizeof err) != 0) {
        rc = fail("cannot read the server's counters: %s", err);
        goto out;
    }
    double dget = m2.get_bytes - m1.get_bytes, wget = m2.wharf_get_bytes - m1.wharf_get_bytes;
    if (dget < 0.99 * (double)size || wget < 0.99 * (double)size) {
        rc = fail("the server counted %.0f (%s) and %.0f (%s) of %" PRIu64 " GET bytes as "
                  "RDMA; both must be at least 0.99 of it%s%s",
                  dget, M_GET, wget, M_W_GET, size, m2.missing ? "; /metrics does not list " : "",
                  m2.missing ? m2.missing : "");
        goto out;
    }
    if (memcmp(src, dst, size) != 0) {
        size_t i = 0;
        while (i < size && src[i] == dst[i])
            i++;
        rc = fail("the bytes read back differ from the bytes written, first at offset %zu", i);
        goto out;
    }
    printf("PASS: %s PUT and GET over RDMA (%s); server counted %.0f PUT and %.0f GET bytes "
           "as RDMA; bytes match\n",
           b, prov, dput, dget);
    rc = 0;
out:
    fflush(stdout);
    if (put_done)
        wharf_object_delete(c, bucket, key);
    if (made_bucket)
        wharf_bucket_delete(c, bucket);
    wharf_mem_deregister(msrc);
    wharf_mem_deregister(mdst);
    if (src != MAP_FAILED)
        munmap(src, size);
    if (dst != MAP_FAILED)
        munmap(dst, size);
    wharf_client_destroy(c);
    return rc;
}
