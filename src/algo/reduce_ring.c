/*
 * reduce_ring.c - pipelined chain reduction: root-1 -> root-2 -> ... ->
 * root+1 -> root, in chunks, the mirror image of the chain broadcast
 * (bcast_ring.c).
 *
 * The last rank of the chain sends its input; every other rank adds its
 * own contribution to what its successor sent and passes the sum on, the
 * root keeping it.  Every link carries the buffer once and every rank
 * receives it once, where the binomial tree's root receives it
 * ceil(log2 n) times and reduce-scatter + gather (rsg) sends 2(n-1)/n of
 * it from every rank: between machines whose links carry the link rate
 * each way it is the bandwidth optimum for large messages (NCCL reduces
 * along its ring for the same reason).  Its weakness is the n-1 hop
 * pipeline depth, paid once per call.
 *
 * The chunks' buffers and dependencies are those of every pipelined
 * reduction (reduce_pipe.c) with one child per rank; the chunks are the
 * chain broadcast's (wf_chain_chunk_elems): many small ones where the
 * fill of n-2 chunks would cost more than their rounds.
 *
 * Cost: as the chain broadcast, plus one reduction of every chunk on
 * every rank but the last: on the critical path the whole buffer and the
 * n-2 chunks of fill are sent and reduced, wf_cost(n-2+C, bytes +
 * (n-2)*chunk, bytes + (n-2)*chunk); between machines a round per hop,
 * n-1, as for the broadcast.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/reduce_pipe.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t ring_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    int n = a->size, vr = wf_rtree_vrank(a->rank, a->root, n);
    wf_reduce_pipe_t shape = {
        .parent = vr ? wf_rtree_rank(vr - 1, a->root, n) : -1,
        .nkids = vr + 1 < n ? 1 : 0,
        .kids = {wf_rtree_rank(vr + 1, a->root, n)},
        .chunk_elems = wf_chain_chunk_elems(a)};
    return wf_reduce_pipe_build(&wf_algo_reduce_ring, a, plan, &shape);
}

static bool ring_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE;
}

/* The chain's terms, plus the reduction of every chunk by every rank but
 * the last, the root's on the critical path. */
static void ring_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_chain_terms(a, t);
    wf_cost_terms_reduce_sent(t);
}

static double ring_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms_between(a, ring_terms, wf_chain_rounds_per_hop);
}

const wf_algo_t wf_algo_reduce_ring = {
    .name = "ring",
    .coll = WF_COLL_REDUCE,
    .id = 29,
    .supports = ring_supports,
    .cost = ring_cost,
    .cost_terms = ring_terms,
    .build = ring_build,
};
