/*
 * test_algo_vector.c - the vector collectives' plans (allgatherv,
 * gatherv, scatterv, alltoallv, reduce_scatterv) in the schedule
 * simulator (harness/sim.h): every rank's plan run with real data, a
 * random ready step at a time, so a missing dependency gives a wrong
 * result under some order and a plan that cannot finish is a deadlock.
 * Counts that differ per rank, with zeros, one rank holding everything,
 * all empty and random ones; blocks in reverse order with gaps that must
 * stay untouched; 16-byte chunks so that blocks are cut into many
 * messages of different numbers; every root up to 7 ranks; in place and
 * out of place; several seeds.  Each element is checked against a value
 * computed from its sender, destination and index.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "sim.h"
#include "test.h"

enum { UNEVEN, ONE_HOLDS_ALL, ALL_EMPTY, RANDOM, NPATTERNS };

static size_t pattern_count(int pattern, int r, int n, unsigned *rng)
{
    switch (pattern) {
    case UNEVEN: return r % 3 == 1 ? 0 : (size_t)(1 + 5 * r + (r % 2));
    case ONE_HOLDS_ALL: return r == n - 1 ? 41 : 0;
    case ALL_EMPTY: return 0;
    default: return (size_t)(rand_r(rng) % 23);
    }
}

static void run_sizes(const wf_algo_t *algo, wf_coll_t coll)
{
    static const int sizes[] = {1, 2, 3, 4, 5, 7, 13};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++) {
        int n = sizes[si];
        bool matrix = coll == WF_COLL_ALLTOALLV;
        size_t *counts = calloc((size_t)n * (size_t)n, sizeof(size_t));
        for (int pattern = 0; pattern < NPATTERNS; pattern++) {
            unsigned rng = (unsigned)(n * 17 + pattern);
            for (int r = 0; r < n; r++)
                for (int p = 0; p < (matrix ? n : 1); p++)
                    counts[matrix ? r * n + p : r] = pattern_count(
                        pattern, matrix ? (r + p) % n : r, n, &rng);
            /* In place, alltoallv's counts must be symmetric. */
            bool symmetric = true;
            for (int r = 0; matrix && r < n; r++)
                for (int p = 0; p < n; p++)
                    symmetric &= counts[r * n + p] == counts[p * n + r];
            bool rooted = coll == WF_COLL_GATHERV || coll == WF_COLL_SCATTERV;
            int nroots = rooted ? (n <= 7 ? n : 2) : 1;
            for (int root = 0; root < nroots; root++)
                for (int ip = 0; ip < 2; ip++)
                    for (int op = 0; op < (coll == WF_COLL_REDUCE_SCATTERV
                                               ? 2 : 1); op++) {
                        if (ip && matrix && !symmetric)
                            continue;
                        wf_sim_vcase_t c = {
                            .coll = coll, .size = n,
                            .op = op ? WEFT_MAX : WEFT_SUM,
                            .root = root == 1 && n > 7 ? n - 1 : root,
                            .in_place = ip, .chunk_bytes = 16,
                            .counts = counts};
                        for (unsigned seed = 1; seed <= 3; seed++)
                            ASSERT_TRUE(wf_sim_check_vector(algo, &c, seed));
                    }
        }
        free(counts);
    }
}

WF_TEST(algo_vector_sim_allgatherv_ring, 60)
{
    run_sizes(&wf_algo_allgatherv_ring, WF_COLL_ALLGATHERV);
}
WF_TEST(algo_vector_sim_gatherv_linear, 60)
{
    run_sizes(&wf_algo_gatherv_linear, WF_COLL_GATHERV);
}
WF_TEST(algo_vector_sim_scatterv_linear, 60)
{
    run_sizes(&wf_algo_scatterv_linear, WF_COLL_SCATTERV);
}
WF_TEST(algo_vector_sim_alltoallv_pairwise, 60)
{
    run_sizes(&wf_algo_alltoallv_pairwise, WF_COLL_ALLTOALLV);
}
WF_TEST(algo_vector_sim_reducescatterv_ring, 60)
{
    run_sizes(&wf_algo_reducescatterv_ring, WF_COLL_REDUCE_SCATTERV);
}
