/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf's gateway list (src/client/client/endpoints.c): parsing one URL or a comma-separated
 * list, the per-thread round robin, and passing over a gateway that just failed. */
#include "client/client_int.h"

#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void test_parse(void)
{
    wc_endpoint_t *eps = NULL;
    unsigned n = 0;
    CHECK(wc_endpoints_parse("http://127.0.0.1:9000/", &eps, &n) == WH_OK);
    CHECK(n == 1);
    CHECK_STR(eps[0].url, "http://127.0.0.1:9000");
    CHECK_STR(eps[0].host, "127.0.0.1:9000");
    wc_endpoints_free(eps, n);

    CHECK(wc_endpoints_parse(" http://a:1 ,https://[::1]:2/,\thttp://c:3", &eps, &n) == WH_OK);
    CHECK(n == 3);
    CHECK_STR(eps[0].url, "http://a:1");
    CHECK_STR(eps[1].url, "https://[::1]:2");
    CHECK_STR(eps[1].host, "[::1]:2");
    CHECK_STR(eps[2].host, "c:3");
    wc_endpoints_free(eps, n);

    /* bad lists are refused, naming what is wrong; outputs untouched */
    static const char *const bad[] = {"",
                                      ",",
                                      "http://a:1,",
                                      ",http://a:1",
                                      "http://a:1,,http://b:2",
                                      "ftp://a:1",
                                      "http://a:1,b:2",
                                      "http://a:1/path",
                                      "http://",
                                      "http://a:1,http://a:1",
                                      NULL};
    for (size_t i = 0; bad[i]; i++) {
        eps = NULL;
        n = 99;
        CHECK(wc_endpoints_parse(bad[i], &eps, &n) == WH_ERR_INVALID);
        CHECK(eps == NULL && n == 99);
        CHECK(wc_get_error()[0] != '\0');
    }
    CHECK(strstr((wc_endpoints_parse("http://a:1,http://a:1", &eps, &n), wc_get_error()),
                 "listed twice") != NULL);
    CHECK(strstr((wc_endpoints_parse("http://a:1,,http://b:2", &eps, &n), wc_get_error()),
                 "empty entry") != NULL);

    /* at most WC_MAX_ENDPOINTS */
    char list[4096] = "";
    for (unsigned i = 0; i <= WC_MAX_ENDPOINTS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%shttp://h%u:1", i ? "," : "",
                 i);
    CHECK(wc_endpoints_parse(list, &eps, &n) == WH_ERR_INVALID);
    *strrchr(list, ',') = '\0';
    CHECK(wc_endpoints_parse(list, &eps, &n) == WH_OK);
    CHECK(n == WC_MAX_ENDPOINTS);
    wc_endpoints_free(eps, n);
}

static void test_pick(void)
{
    wharf_client_t c;
    memset(&c, 0, sizeof c);
    CHECK(wc_endpoints_parse("http://a:1,http://b:2,http://c:3", &c.eps, &c.neps) == WH_OK);
    /* one thread walks the list in order, each gateway once per round */
    unsigned seen[3] = {0}, first = wc_endpoint_pick(&c, 0);
    seen[first]++;
    for (unsigned k = 1; k < 30; k++) {
        unsigned i = wc_endpoint_pick(&c, 0);
        CHECK(i == (first + k) % 3);
        seen[i]++;
    }
    CHECK(seen[0] == 10 && seen[1] == 10 && seen[2] == 10);
    /* a request's tried set is skipped */
    for (unsigned k = 0; k < 6; k++) {
        unsigned i = wc_endpoint_pick(&c, 1ull << 1);
        CHECK(i != 1);
        CHECK(wc_endpoint_pick(&c, (1ull << 0) | (1ull << 2)) == 1);
    }
    /* a failed gateway is passed over by every request until it answers again */
    wc_endpoint_failed(&c, 2);
    for (unsigned k = 0; k < 6; k++)
        CHECK(wc_endpoint_pick(&c, 0) != 2);
    /* unless it is the only one this request has not tried */
    CHECK(wc_endpoint_pick(&c, 3) == 2);
    wc_endpoint_ok(&c, 2);
    unsigned got2 = 0;
    for (unsigned k = 0; k < 6; k++)
        got2 += wc_endpoint_pick(&c, 0) == 2;
    CHECK(got2 == 2);
    /* every one tried: still an answer inside the list */
    CHECK(wc_endpoint_pick(&c, 7) < 3);
    wc_endpoints_free(c.eps, c.neps);

    memset(&c, 0, sizeof c);
    CHECK(wc_endpoints_parse("http://only:1", &c.eps, &c.neps) == WH_OK);
    wc_endpoint_failed(&c, 0);
    CHECK(wc_endpoint_pick(&c, 0) == 0);
    CHECK(wc_endpoint_pick(&c, 1) == 0);
    wc_endpoints_free(c.eps, c.neps);
}

/* Threads start at different places in the round: two threads' first picks differ. */
static wharf_client_t *g_c;
static void *first_pick(void *arg)
{
    *(unsigned *)arg = wc_endpoint_pick(g_c, 0);
    return NULL;
}

static void test_threads_spread(void)
{
    wharf_client_t c;
    memset(&c, 0, sizeof c);
    CHECK(wc_endpoints_parse("http://a:1,http://b:2", &c.eps, &c.neps) == WH_OK);
    g_c = &c;
    unsigned a = 9, b = 9;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_pick, &a) == 0);
    pthread_join(t, NULL);
    CHECK(pthread_create(&t, NULL, first_pick, &b) == 0);
    pthread_join(t, NULL);
    CHECK(a < 2 && b < 2 && a != b);
    wc_endpoints_free(c.eps, c.neps);
}

int main(void)
{
    RUN(test_parse);
    RUN(test_pick);
    RUN(test_threads_spread);
    return check_done();
}
