/*
 * bcast_tree.c - binomial-tree broadcast, pipelined in chunks.
 *
 * Ranks are renumbered relative to the root (rtree.h).  In round k of the
 * classic binomial broadcast every rank that has the data sends it to the
 * rank 2^k further on, so ceil(log2 n) rounds reach everyone: the latency
 * optimum for small messages.  For larger messages the buffer is cut into
 * chunks of WEFT_CHUNK_SIZE and every chunk travels the same tree: a rank
 * forwards chunk c to its children as soon as chunk c has arrived, so
 * deeper levels work on early chunks while the root still sends later
 * ones.  Children are served largest subtree first, chunk by chunk.
 *
 * The chunks' buffers and dependencies are those of every pipelined
 * broadcast (bcast_pipe.h): a forwarding send of chunk c waits for the
 * receive of chunk c and nothing else.  Chunk c travels with tag c; a
 * pair of ranks shares at most one tree edge, so tags are unique per
 * pair.
 *
 * Cost: the root sends each of the C chunks to its ceil(log2 n) = L
 * children, one after the other, and the deepest path is L hops, so
 * rounds = L * C and bytes = L * bytes.  Cheapest for small messages;
 * for large ones the chain (ring) and scatter-allgather (sag) send each
 * byte about once per link and win.
 */
#include "algo/algo.h"
#include "algo/bcast_pipe.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t tree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, true, &st))
        return st;
    int kids[WF_RTREE_MAX_CHILDREN];
    wf_bcast_pipe_t shape = {.kids = kids,
                             .chunk_elems = wf_rtree_chunk_elems(a)};
    shape.nkids = wf_rtree_place(a, true, &shape.parent, kids);
    wf_bcast_pipe_build(a, plan, &shape);
    return wf_algo_build_status(&wf_algo_bcast_tree, a, plan->failed);
}

static bool tree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BROADCAST;
}

/* The binomial tree's terms (wf_rtree_terms); every rank but the root's
 * L children gets each chunk forwarded. */
static void tree_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, L = wf_ceil_log2(a->size);
    wf_rtree_terms(a, t);
    t->waits = (n - 1 - L) * wf_rtree_cost_chunks(a);
}

static double tree_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, tree_terms);
}

const wf_algo_t wf_algo_bcast_tree = {
    .name = "tree",
    .coll = WF_COLL_BROADCAST,
    .id = 20,
    .supports = tree_supports,
    .cost = tree_cost,
    .cost_terms = tree_terms,
    .build = tree_build,
};
