/*
 * test_algo_allreduce.c - the allreduce algorithms rhd, rd, tree, dbtree
 * and linear: the simulator's matrix for each (wrong results, deadlocks, tag
 * clashes, buffer overruns), larger chunked cases, and closed-form checks
 * of each plan's shape (bytes sent, message rounds, tree roles).
 */
#include <string.h>

#include "algo/allreduce_tree.h"
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "common.h"
#include "sim.h"
#include "test.h"

/* Many chunks per rank (pipelines, slot reuse) and odd sizes. */
static void big_cases(const wf_algo_t *algo)
{
    static const int sizes[] = {2, 3, 5, 6, 7, 8, 11, 12};
    static const size_t counts[] = {1000, 4097};
    for (size_t si = 0; si < WF_ARRAY_LEN(sizes); si++)
        for (size_t ci = 0; ci < WF_ARRAY_LEN(counts); ci++)
            for (int ip = 0; ip < 2; ip++)
                for (unsigned seed = 1; seed <= 2; seed++) {
                    wf_sim_case_t c = {.coll = WF_COLL_ALLREDUCE,
                                       .size = sizes[si],
                                       .count = counts[ci],
                                       .dtype = WEFT_FLOAT32,
                                       .op = seed == 1 ? WEFT_SUM : WEFT_AVG,
                                       .in_place = ip, .chunk_bytes = 64};
                    ASSERT_TRUE(wf_sim_check(algo, &c, seed));
                }
}

WF_TEST(algo_allreduce_rhd_sim, 600)
{
    wf_sim_matrix(&wf_algo_allreduce_rhd, 9);
    big_cases(&wf_algo_allreduce_rhd);
}

WF_TEST(algo_allreduce_rd_sim, 600)
{
    wf_sim_matrix(&wf_algo_allreduce_rd, 9);
    big_cases(&wf_algo_allreduce_rd);
}

WF_TEST(algo_allreduce_tree_sim, 600)
{
    wf_sim_matrix(&wf_algo_allreduce_tree, 9);
    big_cases(&wf_algo_allreduce_tree);
}

WF_TEST(algo_allreduce_dbtree_sim, 600)
{
    wf_sim_matrix(&wf_algo_allreduce_dbtree, 9);
    big_cases(&wf_algo_allreduce_dbtree);
}

WF_TEST(algo_allreduce_linear_sim, 600)
{
    wf_sim_matrix(&wf_algo_allreduce_linear, 9);
    big_cases(&wf_algo_allreduce_linear);
}

typedef struct {
    uint64_t sent, received, nsend, nrecv, scratch;
    int peers_sent; /* distinct peers sent to */
} shape_t;

static shape_t plan_shape(const wf_algo_t *algo, int rank, int size,
                          size_t count, size_t chunk_bytes)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = count,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .peer = -1, .rank = rank,
                        .size = size, .chunk_bytes = chunk_bytes};
    wf_plan_t plan;
    shape_t sh = {0};
    char seen[64] = {0};
    wf_plan_init(&plan, a.dtype, a.op, a.elem_size, size);
    ASSERT_OK(algo->build(&a, &plan));
    for (uint32_t i = 0; i < plan.nsteps; i++) {
        const wf_step_t *s = &plan.steps[i];
        if (s->kind == WF_STEP_SEND) {
            sh.sent += s->count;
            sh.nsend++;
            if (!seen[s->peer]++)
                sh.peers_sent++;
        } else if (s->kind == WF_STEP_RECV) {
            sh.received += s->count;
            sh.nrecv++;
        }
    }
    sh.scratch = plan.scratch_bytes;
    wf_plan_free(&plan);
    return sh;
}

/* rhd on 2^k ranks sends (and receives) 2(p-1)/p of the vector per rank,
 * to log2(p) partners; with the fold the odd ranks add two vectors. */
WF_TEST(algo_allreduce_rhd_shape, 60)
{
    size_t count = 1 << 12; /* divisible by every p below */
    uint64_t bytes = count * 4, chunk = bytes / 32; /* 32 units */
    for (int p = 2; p <= 32; p *= 2)
        for (int r = 0; r < p; r++) {
            shape_t sh = plan_shape(&wf_algo_allreduce_rhd, r, p, count,
                                    chunk);
            ASSERT_EQ(sh.sent, 2 * (uint64_t)(p - 1) * bytes / (uint64_t)p);
            ASSERT_EQ(sh.received, sh.sent);
            ASSERT_EQ(sh.peers_sent, wf_ceil_log2(p));
            /* One message per unit exchanged: 2(p-1) segments of 32/p. */
            ASSERT_EQ(sh.nsend, 2 * (uint64_t)(p - 1) * (32 / (uint64_t)p));
            /* Scratch for the half kept in the first step: 16 units,
             * as many as the slots. */
            ASSERT_EQ(sh.scratch, bytes / 2);
            /* With 64 units the half would be 32: the 16 slots instead. */
            shape_t fine = plan_shape(&wf_algo_allreduce_rhd, r, p, count,
                                      bytes / 64);
            ASSERT_EQ(fine.sent, sh.sent);
            ASSERT_EQ(fine.scratch, WF_ARX_SLOTS * (bytes / 64));
            /* A vector shorter than p chunks still moves only its
             * 2(p-1)/p share (the unit grid gets finer, never coarser
             * than one segment per rank), in at most one message per
             * segment and phase. */
            shape_t small = plan_shape(&wf_algo_allreduce_rhd, r, p, count,
                                       1 << 20);
            ASSERT_EQ(small.sent, sh.sent);
            ASSERT_TRUE(small.nsend <= 2 * (uint64_t)(p - 1));
        }
    /* 6 ranks: p = 4, ranks 0 and 2 fold out into 1 and 3. */
    shape_t out = plan_shape(&wf_algo_allreduce_rhd, 0, 6, count, chunk);
    shape_t in = plan_shape(&wf_algo_allreduce_rhd, 1, 6, count, chunk);
    shape_t plain = plan_shape(&wf_algo_allreduce_rhd, 5, 6, count, chunk);
    ASSERT_EQ(out.sent, bytes);
    ASSERT_EQ(out.received, bytes);
    ASSERT_EQ(plain.sent, 2 * 3 * bytes / 4);
    ASSERT_EQ(in.sent, plain.sent + bytes);
    ASSERT_EQ(in.received, plain.received + bytes);
    ASSERT_EQ(in.scratch, WF_ARX_SLOTS * chunk); /* a vector of 32 units */
    ASSERT_EQ(out.scratch, 0);
}

/* rd sends the whole vector log2(p) times, in chunks. */
WF_TEST(algo_allreduce_rd_shape, 60)
{
    size_t count = 1000;
    uint64_t bytes = count * 4;
    for (int p = 2; p <= 32; p *= 2)
        for (int r = 0; r < p; r++) {
            shape_t sh = plan_shape(&wf_algo_allreduce_rd, r, p, count, 1024);
            ASSERT_EQ(sh.sent, (uint64_t)wf_ceil_log2(p) * bytes);
            ASSERT_EQ(sh.received, sh.sent);
            ASSERT_EQ(sh.nsend, (uint64_t)wf_ceil_log2(p) * 4); /* chunks */
            ASSERT_EQ(sh.peers_sent, wf_ceil_log2(p));
        }
    /* 5 ranks: p = 4; rank 0 folds into rank 1. */
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_rd, 0, 5, count, 1 << 20).sent,
              bytes);
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_rd, 1, 5, count, 1 << 20).sent,
              3 * bytes);
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_rd, 4, 5, count, 1 << 20).sent,
              2 * bytes);
}

/* linear: rank 0 receives every other rank's vector and sends each the
 * result, a message per chunk; the others send theirs and receive the
 * result.  Rank 0's scratch is two chunk slots per peer, however long the
 * vector. */
WF_TEST(algo_allreduce_linear_shape, 60)
{
    size_t count = 1000;
    uint64_t bytes = count * 4; /* 4 chunks of 1024 bytes, the last 928 */
    for (int n = 2; n <= 9; n++) {
        shape_t root = plan_shape(&wf_algo_allreduce_linear, 0, n, count,
                                  1024);
        ASSERT_EQ(root.sent, (uint64_t)(n - 1) * bytes);
        ASSERT_EQ(root.received, root.sent);
        ASSERT_EQ(root.nsend, (uint64_t)(n - 1) * 4);
        ASSERT_EQ(root.nrecv, root.nsend);
        ASSERT_EQ(root.peers_sent, n - 1);
        ASSERT_EQ(root.scratch, (uint64_t)(n - 1) * 2 * 1024);
        for (int r = 1; r < n; r++) {
            shape_t peer = plan_shape(&wf_algo_allreduce_linear, r, n, count,
                                      1024);
            ASSERT_EQ(peer.sent, bytes);
            ASSERT_EQ(peer.received, bytes);
            ASSERT_EQ(peer.nsend, 4);
            ASSERT_EQ(peer.peers_sent, 1);
            ASSERT_EQ(peer.scratch, 0);
        }
    }
    /* One chunk: one slot per peer. */
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_linear, 0, 4, count, 1 << 20)
                  .scratch,
              3 * bytes);
}

/* Checks the in-order tree: one root, every other rank has exactly one
 * parent that lists it as a child, and the depth bound holds. */
static void check_tree(int n, int variant, int *interior)
{
    int roots = 0, depth_max = 0;
    wf_artree_node_t nodes[64];
    for (int r = 0; r < n; r++)
        wf_artree_node(n, r, variant, &nodes[r]);
    for (int r = 0; r < n; r++) {
        const wf_artree_node_t *x = &nodes[r];
        if (x->child[0] >= 0 || x->child[1] >= 0)
            interior[r]++;
        if (x->parent < 0) {
            roots++;
            continue;
        }
        const wf_artree_node_t *p = &nodes[x->parent];
        ASSERT_TRUE(p->child[0] == r || p->child[1] == r);
        int d = 0;
        for (int y = r; nodes[y].parent >= 0; y = nodes[y].parent)
            ASSERT_TRUE(++d <= n);
        depth_max = WF_MAX(depth_max, d);
    }
    ASSERT_EQ(roots, 1);
    ASSERT_EQ(depth_max, wf_artree_depth(n));
}

WF_TEST(algo_allreduce_tree_shape, 60)
{
    for (int n = 2; n <= 64; n++) {
        int interior[64] = {0}, both = 0;
        check_tree(n, 0, interior);
        check_tree(n, 1, interior);
        for (int r = 0; r < n; r++)
            both += interior[r] == 2;
        /* Complementary trees: at most one rank inside both. */
        ASSERT_TRUE(both <= 1);
    }
    /* Tree: rank 0 (root) sends the vector once down; an interior rank
     * sends up once and down twice; a leaf only up. */
    size_t count = 1000;
    uint64_t bytes = count * 4;
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_tree, 0, 8, count, 256).sent,
              bytes);
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_tree, 4, 8, count, 256).sent,
              3 * bytes);
    ASSERT_EQ(plan_shape(&wf_algo_allreduce_tree, 1, 8, count, 256).sent,
              bytes);
    /* Double tree: every rank sends at most two vectors. */
    for (int n = 2; n <= 16; n++)
        for (int r = 0; r < n; r++)
            ASSERT_TRUE(plan_shape(&wf_algo_allreduce_dbtree, r, n, count,
                                   256).sent <= 2 * bytes);
}
