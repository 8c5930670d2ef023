/*
 * reduce_tree.c - binomial-tree reduction to the root, pipelined in
 * chunks.
 *
 * The mirror image of the binomial broadcast (rtree.h): every rank
 * combines its own contribution with its children's partial results and
 * sends the sum of its subtree to its parent; ceil(log2 n) levels, the
 * latency optimum for small messages.  Children are combined smallest
 * subtree first, the order in which their results are ready.  The buffer
 * is cut into chunks of WEFT_CHUNK_SIZE that move independently, so a rank
 * reduces and forwards chunk c while chunk c+1 is still arriving.  WEFT_AVG
 * sums up the tree and the root divides each chunk once at the end.
 *
 * The chunks' buffers and dependencies are those of every pipelined
 * reduction (reduce_pipe.c).
 *
 * Cost: as the broadcast tree, plus the reductions: the root receives and
 * reduces each chunk from each of its L = ceil(log2 n) children,
 * wf_cost(L * C, L * bytes, L * bytes).  Rabenseifner (rsg) moves and
 * reduces about 2 bytes per byte whatever n and wins for large messages.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/reduce_pipe.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t tree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_reduce_pipe_t shape = {.chunk_elems = wf_rtree_chunk_elems(a)};
    shape.nkids = wf_rtree_place(a, false, &shape.parent, shape.kids);
    return wf_reduce_pipe_build(&wf_algo_reduce_tree, a, plan, &shape);
}

static bool tree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE;
}

/* The binomial tree's terms (wf_rtree_terms), plus the reductions: the
 * root reduces every chunk from each of its L children, and every byte
 * sent is reduced once where it lands.  Every rank but the root sends
 * each chunk once: the leaves their input at once, the floor(n/2) - 1
 * others (the even ones but the last, counted from the root) what they
 * reduced from a receive. */
static void tree_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_rtree_terms(a, t);
    wf_cost_terms_reduce_sent(t);
    t->waits = (double)(a->size / 2 - 1) * wf_rtree_cost_chunks(a);
}

static double tree_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, tree_terms);
}

const wf_algo_t wf_algo_reduce_tree = {
    .name = "tree",
    .coll = WF_COLL_REDUCE,
    .id = 23,
    .supports = tree_supports,
    .cost = tree_cost,
    .cost_terms = tree_terms,
    .build = tree_build,
};
