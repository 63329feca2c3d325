/* Tests of src/cluster/place.c: distinct replicas, determinism, spread in proportion to the
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
    cl_place_node_t nodes[4] = {{"n1", 100}, {"n2", 100}, {"n3", 100}, {"n4", 100}};
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
    cl_place_node_t nodes[4] = {
        {"a", 3ULL << 40}, {"b", 1ULL << 40}, {"c", 1ULL << 40}, {"d", 1ULL << 40}};
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
    cl_place_node_t all[4] = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}};
    cl_place_node_t less[3] = {{"a", 1}, {"b", 1}, {"c", 1}}; /* d left */
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

int main(void)
{
    RUN(test_distinct_deterministic);
    RUN(test_weights);
    RUN(test_minimal_movement);
    return check_done();
}
