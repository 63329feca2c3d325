/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the client's list of gateways. The config's endpoint is one URL or a comma-separated
 * list of them ("http://gw1:9000,http://gw2:9000"): gateways of one cluster, each able to serve
 * any request. Each thread walks the list round robin, so the requests of one operation (the
 * ranged GETs of a large object, the parts of an upload) spread over the gateways; a gateway
 * that refused a connection or died mid-request is skipped for a short while, and http.c fails
 * over to the next one (which requests it may re-send there is decided in http.c). */
#include "client/client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* How long a gateway that failed is passed over before a request tries it again. */
#define WC_EP_DOWN_MS 2000u

/* "http://host:port[/]" -> the URL without a trailing slash and the Host header "host:port".
 * ep is ep[0..len) (not NUL-terminated: a piece of the list). */
static wh_status_t parse_one(const char *ep, size_t len, wc_endpoint_t *out)
{
    size_t skip;
    if (len >= 7 && !strncmp(ep, "http://", 7)) {
        skip = 7;
    } else if (len >= 8 && !strncmp(ep, "https://", 8)) {
        skip = 8;
    } else {
        wc_set_error("endpoint \"%.*s\" must start with http:// or https://", (int)len, ep);
        return WH_ERR_INVALID;
    }
    const char *p = ep + skip;
    size_t rest = len - skip, hl = 0;
    while (hl < rest && !strchr("/?#", p[hl]))
        hl++;
    if (hl == 0) {
        wc_set_error("endpoint \"%.*s\" has no host", (int)len, ep);
        return WH_ERR_INVALID;
    }
    if (hl < rest && !(rest - hl == 1 && p[hl] == '/')) {
        wc_set_error("endpoint \"%.*s\" must not have a path; use http://host:port", (int)len, ep);
        return WH_ERR_INVALID;
    }
    char *h = strndup(p, hl);
    char *u = strndup(ep, skip + hl);
    if (!h || !u) {
        free(h);
        free(u);
        wc_set_error("wharf_client_create: out of memory");
        return WH_ERR_NOMEM;
    }
    out->host = h;
    out->url = u;
    atomic_init(&out->down_until_ms, 0);
    return WH_OK;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

wh_status_t wc_endpoints_parse(const char *list, wc_endpoint_t **out, unsigned *n_out)
{
    wc_endpoint_t *eps = calloc(WC_MAX_ENDPOINTS, sizeof *eps);
    if (!eps) {
        wc_set_error("wharf_client_create: out of memory");
        return WH_ERR_NOMEM;
    }
    unsigned n = 0;
    wh_status_t st = WH_OK;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        while (len && is_space(*s))
            s++, len--;
        while (len && is_space(s[len - 1]))
            len--;
        if (len == 0) {
            wc_set_error("endpoint list \"%s\" has an empty entry; write URLs separated by "
                         "commas, e.g. http://gw1:9000,http://gw2:9000",
                         list);
            st = WH_ERR_INVALID;
            goto err;
        }
        if (n == WC_MAX_ENDPOINTS) {
            wc_set_error("endpoint list has more than %u endpoints", WC_MAX_ENDPOINTS);
            st = WH_ERR_INVALID;
            goto err;
        }
        st = parse_one(s, len, &eps[n]);
        if (st != WH_OK)
            goto err;
        for (unsigned i = 0; i < n; i++) {
            if (!strcmp(eps[i].url, eps[n].url)) {
                wc_set_error("endpoint %s is listed twice", eps[n].url);
                n++;
                st = WH_ERR_INVALID;
                goto err;
            }
        }
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    *out = eps;
    *n_out = n;
    return WH_OK;

err:
    wc_endpoints_free(eps, n);
    return st;
}

void wc_endpoints_free(wc_endpoint_t *eps, unsigned n)
{
    if (!eps)
        return;
    for (unsigned i = 0; i < n; i++) {
        free(eps[i].url);
        free(eps[i].host);
    }
    free(eps);
}

/* ---- choosing one ----------------------------------------------------------------------- */

/* Each thread's place in the round; new threads start one further along than the last, so
 * the workers of one operation begin on different gateways. */
static _Atomic unsigned g_rr_seed;
static __thread unsigned t_rr;
static __thread bool t_rr_set;

static uint64_t now_ms(void)
{
    return (uint64_t)(wh_now_s() * 1000.0);
}

unsigned wc_endpoint_pick(wharf_client_t *c, uint64_t tried)
{
    unsigned n = c->neps;
    if (n <= 1)
        return 0;
    if (!t_rr_set) {
        t_rr = atomic_fetch_add(&g_rr_seed, 1);
        t_rr_set = true;
    }
    unsigned start = t_rr++ % n;
    uint64_t now = now_ms();
    /* the next one in the round that is up and not yet tried by this request, else one not
     * yet tried (all that are left were failing a moment ago), else the next in the round */
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (start + k) % n;
        if (!(tried & (1ull << i)) && atomic_load(&c->eps[i].down_until_ms) <= now)
            return i;
    }
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (start + k) % n;
        if (!(tried & (1ull << i)))
            return i;
    }
    return start;
}

void wc_endpoint_failed(wharf_client_t *c, unsigned i)
{
    if (i < c->neps && c->neps > 1)
        atomic_store(&c->eps[i].down_until_ms, now_ms() + WC_EP_DOWN_MS);
}

void wc_endpoint_ok(wharf_client_t *c, unsigned i)
{
    if (i < c->neps && c->neps > 1 && atomic_load(&c->eps[i].down_until_ms) != 0)
        atomic_store(&c->eps[i].down_until_ms, 0);
}

/* ---- the server's Unix socket ----------------------------------------------------------- */

/* How long finding the socket may take: one GET /health on this host's own server. */
#define WC_SOCK_FIND_MS 3000L

static size_t sock_hdr_cb(char *line, size_t size, size_t n, void *arg)
{
    wc_reply_header(arg, line, size * n); /* reply.c: fuzzed */
    return size * n;
}

static size_t discard_cb(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

wh_status_t wc_unix_socket_find(const char *endpoint, const char *ca_bundle, char *out, size_t cap,
                                char *err, size_t errlen)
{
    wc_endpoint_t *eps = NULL;
    unsigned n = 0;
    if (wc_endpoints_parse(endpoint, &eps, &n) != WH_OK)
        return wh_errf(WH_ERR_INVALID, err, errlen, "%s", wc_get_error());
    if (n != 1) {
        wc_endpoints_free(eps, n);
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "the endpoint lists %u gateways; a Unix socket reaches one server", n);
    }
    char url[1100];
    snprintf(url, sizeof url, "%s/health", eps[0].url);
    wc_endpoints_free(eps, n);
    CURL *h = curl_easy_init();
    if (!h)
        return wh_errf(WH_ERR_NOMEM, err, errlen, "cannot create a curl handle");
    wc_resp_t hd;
    memset(&hd, 0, sizeof hd);
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, WC_SOCK_FIND_MS);
    if (ca_bundle && *ca_bundle)
        curl_easy_setopt(h, CURLOPT_CAINFO, ca_bundle);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, sock_hdr_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    CURLcode rc = curl_easy_perform(h);
    long code = hd.status;
    curl_easy_cleanup(h);
    if (rc != CURLE_OK)
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "GET %s failed: %s", url,
                       cerr[0] ? cerr : curl_easy_strerror(rc));
    if (code != 200)
        return wh_errf(WH_ERR_PROTOCOL, err, errlen, "GET %s answered %ld", url, code);
    const char *path = hd.unix_socket;
    if (!path[0])
        return wh_errf(WH_ERR_NOT_FOUND, err, errlen,
                       "the server at %s names no Unix socket to this host (another host, or "
                       "it serves none)",
                       endpoint);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (path[0] != '/' || strlen(path) >= cap || strlen(path) >= sizeof sa.sun_path)
        return wh_errf(WH_ERR_PROTOCOL, err, errlen, "the server named an unusable socket '%s'",
                       path);
    /* Same host, but maybe another mount namespace or a path this user may not open. */
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return wh_errf(WH_ERR_NOT_FOUND, err, errlen,
                       "the server's Unix socket %s cannot be reached from here: %s", path,
                       strerror(e));
    }
    close(fd);
    memcpy(out, path, strlen(path) + 1);
    return WH_OK;
}

WHARF_API wharf_status_t wharf_endpoint_unix_socket(const char *endpoint, const char *ca_bundle,
                                                    char *buf, size_t cap)
{
    wc_clear_error();
    wc_global_init();
    if (!endpoint || !buf || !cap) {
        wc_set_error("wharf_endpoint_unix_socket: endpoint and buf must not be NULL");
        return WHARF_ERR_INVALID;
    }
    char err[WC_ERR_LEN] = "";
    wh_status_t st = wc_unix_socket_find(endpoint, ca_bundle, buf, cap, err, sizeof err);
    if (st != WH_OK)
        wc_set_error("%s", err);
    return (wharf_status_t)st;
}
