/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/place.c: distinct replicas, determinism, spread in proportion to the
 * free-space weights, and minimal movement when a node leaves. */
#include "check.h"
#include "cluster/place.h"

#include <stdio.h>
#include <string.h>

static void ids(char id[][33], size_t n)
{
    for (size_t i = 0; i < n; i++)
        snprintf(id[i], 33, "%032zx", i * 7919 + 1);
}

static void test_distinct_deterministic(void)
{
    cl_place_node_t nodes[4] = {
        {"n1", 100, NULL}, {"n2", 100, NULL}, {"n3", 100, NULL}, {"n4", 100, NULL}};
    char id[200][33];
    ids(id, 200);
    for (size_t i = 0; i < 200; i++) {
        size_t a[3], b[3];
        size_t k = cl_place(nodes, 4, id[i], 3, a);
        CHECK(k == 3);
        CHECK(a[0] != a[1] && a[0] != a[2] && a[1] != a[2]);
        CHECK(cl_place(nodes, 4, id[i], 3, b) == 3 && memcmp(a, b, sizeof a) == 0);
        /* the top 2 are the first 2 of the top 3 */
        size_t c[2];
        CHECK(cl_place(nodes, 4, id[i], 2, c) == 2 && c[0] == a[0] && c[1] == a[1]);
    }
    size_t one[3];
    CHECK(cl_place(nodes, 1, id[0], 3, one) == 1 && one[0] == 0);
    CHECK(cl_place(nodes, 0, id[0], 2, one) == 0);
    /* no replica asked for: none placed (the top list's last slot, best[-1], was read) */
    CHECK(cl_place(nodes, 4, id[0], 0, one) == 0);
}

static void test_weights(void)
{
    /* node 0 has three times the free space of the others: about 3/6 of primaries. */
    cl_place_node_t nodes[4] = {{"a", 3ULL << 40, NULL},
                                {"b", 1ULL << 40, NULL},
                                {"c", 1ULL << 40, NULL},
                                {"d", 1ULL << 40, NULL}};
    unsigned cnt[4] = {0};
    char id[33];
    for (unsigned i = 0; i < 6000; i++) {
        snprintf(id, sizeof id, "%032x", i * 2654435761u);
        size_t o[1];
        cl_place(nodes, 4, id, 1, o);
        cnt[o[0]]++;
    }
    fprintf(stderr, "primaries: %u %u %u %u\n", cnt[0], cnt[1], cnt[2], cnt[3]);
    CHECK(cnt[0] > 2700 && cnt[0] < 3300);
    for (int i = 1; i < 4; i++)
        CHECK(cnt[i] > 800 && cnt[i] < 1200);
}

static void test_minimal_movement(void)
{
    cl_place_node_t all[4] = {{"a", 1, NULL}, {"b", 1, NULL}, {"c", 1, NULL}, {"d", 1, NULL}};
    cl_place_node_t less[3] = {{"a", 1, NULL}, {"b", 1, NULL}, {"c", 1, NULL}}; /* d left */
    char id[33];
    unsigned moved = 0, on_d = 0;
    for (unsigned i = 0; i < 2000; i++) {
        snprintf(id, sizeof id, "%032x", i * 40503u + 7);
        size_t o4[1], o3[1];
        cl_place(all, 4, id, 1, o4);
        cl_place(less, 3, id, 1, o3);
        if (o4[0] == 3)
            on_d++;
        else
            moved += o4[0] != o3[0];
    }
    CHECK(moved == 0); /* only chunks that were on d move */
    CHECK(on_d > 300);
}

/* Zones: a chunk's replicas go to distinct zones while there are zones; without zones (or
 * one) the order is cl_place's; the spares follow in rank order. */
static void test_zones(void)
{
    cl_place_node_t z[5] = {
        {"a1", 1, "a"}, {"a2", 1, "a"}, {"a3", 1, "a"}, {"b1", 1, "b"}, {"c1", 1, "c"}};
    cl_place_node_t flat[5] = {
        {"a1", 1, NULL}, {"a2", 1, NULL}, {"a3", 1, NULL}, {"b1", 1, NULL}, {"c1", 1, NULL}};
    char id[33];
    unsigned differs = 0;
    for (unsigned i = 0; i < 500; i++) {
        snprintf(id, sizeof id, "%032x", i * 2654435761u + 3);
        size_t o[5], p[5], f[5];
        CHECK(cl_place_zoned(z, 5, id, 3, 5, o) == 5);
        /* three replicas, one per zone: a?, b1, c1 */
        unsigned seen = 0;
        for (int j = 0; j < 3; j++)
            seen |= 1u << (z[o[j]].zone[0] - 'a');
        CHECK(seen == 7);
        /* two replicas: two distinct zones */
        CHECK(cl_place_zoned(z, 5, id, 2, 2, p) == 2);
        CHECK(strcmp(z[p[0]].zone, z[p[1]].zone) != 0);
        /* every node once */
        unsigned all = 0;
        for (int j = 0; j < 5; j++)
            all |= 1u << o[j];
        CHECK(all == 31);
        /* no zones: the plain ranking */
        CHECK(cl_place_zoned(flat, 5, id, 3, 5, o) == 5);
        CHECK(cl_place(flat, 5, id, 5, f) == 5);
        CHECK(memcmp(o, f, sizeof o) == 0);
        differs += cl_place_zoned(z, 5, id, 3, 3, p) == 3 && memcmp(p, f, 3 * sizeof p[0]) != 0;
    }
    CHECK(differs > 100); /* plain ranking often puts two copies in zone a */
    /* fewer zones than replicas: distinct zones first, then the best of the rest */
    cl_place_node_t two[4] = {{"x1", 1, "x"}, {"x2", 1, "x"}, {"x3", 1, "x"}, {"y1", 1, "y"}};
    for (unsigned i = 0; i < 200; i++) {
        snprintf(id, sizeof id, "%032x", i * 97u + 11);
        size_t o[3];
        CHECK(cl_place_zoned(two, 4, id, 3, 3, o) == 3);
        CHECK(o[0] == 3 || o[1] == 3); /* y1 among the first two */
        CHECK(o[0] != o[1] && o[1] != o[2] && o[0] != o[2]);
    }
}

int main(void)
{
    RUN(test_distinct_deterministic);
    RUN(test_weights);
    RUN(test_minimal_movement);
    RUN(test_zones);
    return check_done();
}
