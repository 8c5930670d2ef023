/*
 * allreduce_dbtree.c - double binary tree allreduce (as in NCCL): two
 * pipelined trees, each carrying half of the vector, built so that the
 * interior nodes of one are leaves of the other.
 *
 * A single pipelined tree (allreduce_tree.c) makes its interior nodes send
 * three chunks per chunk of data (one up, two down) while leaves send one,
 * so the bandwidth is a third of a link.  Here tree 0 is the in-order
 * binary tree over ranks (odd ranks are leaves) and tree 1 the same shape
 * over positions mirrored (even size: rank n-1-x at position x) or shifted
 * by one (odd size: rank x+1 at position x), which makes the even ranks
 * its leaves.  Tree 0 carries elements [0, count/2), tree 1 the rest.  A
 * rank is interior in at most one tree (up to one rank with odd sizes is
 * interior in both), so it sends about 3/2 + 1/2 = 2 vectors, like the
 * ring, in logarithmic depth.  Each tree's root divides its half once for
 * WEFT_AVG.
 *
 * Dependencies are those of the pipelined tree (wf_artree_chunk in
 * allreduce_tree.c); the two trees touch disjoint halves of RECV and
 * disjoint scratch, so they need none between them.  Their chunks are
 * emitted interleaved so that the engine starts both trees at once.
 *
 * Tags: 4 * chunk + 2 * tree + (0 up, 1 down); a pair of ranks can be
 * linked in both trees, in either direction, and the tree bit keeps them
 * apart.
 *
 * Cost: with D the depth and C = min(bytes / 2, chunk size) (a tree's
 * chunk), a rank sends two vectors plus the fill of the tree it is
 * interior in, and reduces about one vector (two children on half of it):
 *   wf_cost(2D, 2 * bytes + 3 * (D-1) * C, bytes + 2 * (D-1) * C).
 */
#include "algo/allreduce_tree.h"
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

static weft_status_t dbtree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    wf_artree_t t[2] = {{0}, {0}};
    size_t half = a->count / 2;
    uint64_t used = 0;
    for (int i = 0; i < 2; i++) {
        wf_artree_node_t node;
        wf_artree_node(a->size, a->rank, i, &node);
        uint64_t s = wf_artree_init(&t[i], a, plan, &node, i ? half : 0,
                                    i ? a->count - half : half, (uint32_t)i,
                                    used);
        if (s == UINT64_MAX)
            break;
        used += s;
    }
    for (size_t c = 0; !plan->failed &&
                       (c < t[0].nchunks || c < t[1].nchunks); c++)
        for (int i = 0; i < 2; i++)
            if (c < t[i].nchunks)
                wf_artree_chunk(&t[i], c);
    plan->scratch_bytes = used;
    wf_artree_fini(&t[0]);
    wf_artree_fini(&t[1]);
    return wf_algo_build_status(&wf_algo_allreduce_dbtree, a, plan->failed);
}

static bool dbtree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

static void dbtree_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double bytes = (double)a->count * (double)a->elem_size;
    double chunk = WF_MIN(bytes / 2, (double)a->chunk_bytes);
    double d = wf_artree_depth(a->size);
    /* Two trees, each with half of the vector. */
    double msgs = 4 * (a->size - 1) * wf_msgs(bytes / 2, chunk);
    *t = (wf_cost_terms_t){.rounds = 2 * d,
                           .path_sent = 2 * bytes + 3 * (d - 1) * chunk,
                           .path_reduced = bytes + 2 * (d - 1) * chunk,
                           .messages = msgs,
                           .bytes = 2 * (a->size - 1) * bytes,
                           .reduced = (a->size - 1) * bytes};
}

static double dbtree_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, dbtree_terms);
}

const wf_algo_t wf_algo_allreduce_dbtree = {
    .name = "dbtree",
    .coll = WF_COLL_ALLREDUCE,
    .id = 13,
    .supports = dbtree_supports,
    .cost = dbtree_cost,
    .cost_terms = dbtree_terms,
    .build = dbtree_build,
};
