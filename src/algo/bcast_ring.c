/*
 * bcast_ring.c - pipelined chain broadcast: root -> root+1 -> ... ->
 * root-1, in chunks of at most WEFT_CHUNK_SIZE.
 *
 * Every rank but the last forwards chunk c to its successor as soon as it
 * has received it, so after the pipeline fills (n-1 chunk times) one
 * chunk leaves the last link per chunk time: each link carries the buffer
 * exactly once, which is the bandwidth optimum for large messages (the
 * same idea as NCCL's ring broadcast).  Its weakness is the n-1 hop
 * pipeline depth, paid once per call; for small and medium messages the
 * binomial tree and scatter-allgather are cheaper.
 *
 * The chunks' buffers and dependencies are those of every pipelined
 * broadcast (bcast_pipe.h) with one child per rank: a forward of chunk c
 * waits for the receive of chunk c, and chunk c travels with tag c.  With
 * zero elements one empty message still travels down the chain, so that
 * a rank whose count differs is told.
 *
 * Cost: C chunks through n-1 links take n-2+C chunk times; on the
 * critical path a rank sends the whole buffer plus n-2 chunks of pipeline
 * fill: wf_cost(n-2+C, bytes + (n-2)*chunk, 0).  Between machines a
 * chunk after the first costs its bytes but no round, so the rounds are
 * n-1 there (ring_cost).
 *
 * Chunk size: the fill is n-2 chunks, so a medium message cut into the
 * usual chunks of WEFT_CHUNK_SIZE pays n-2 times most of itself: 64 KiB
 * on 4 hosts is one chunk and three whole hops, slower than the tree.
 * The chain therefore cuts a message into the number of chunks that
 * minimises that time under the cost model, (n-2+C)(alpha + beta*B/C),
 * C = sqrt((n-2) beta B / alpha), never into chunks above WEFT_CHUNK_SIZE
 * nor below WF_CHAIN_MIN_CHUNK (8 KiB, rtree.c).  On a 1 Gbit/s network
 * that is 8 KiB chunks for 64 KiB on 4 ranks, and the chain's time below
 * the tree's; on one machine (beta small against alpha) it leaves
 * WEFT_CHUNK_SIZE.
 * Every rank computes the same chunks from the same arguments
 * (wf_chain_chunk_elems, shared with the chain reduce).
 */
#include "algo/algo.h"
#include "algo/bcast_pipe.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t ring_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    int n = a->size, vr = wf_rtree_vrank(a->rank, a->root, n);
    if (n == 1)
        return wf_rtree_build_single(a, plan, wf_bref(WF_BUF_RECV, 0),
                                     wf_bref(WF_BUF_SEND, 0),
                                     (uint64_t)a->count * a->elem_size);
    /* Zero elements too: the pipe's one empty chunk goes down the chain. */
    int next = wf_rtree_rank(vr + 1, a->root, n);
    wf_bcast_pipe_t shape = {
        .parent = vr ? wf_rtree_rank(vr - 1 + n, a->root, n) : -1,
        .nkids = vr != n - 1 ? 1 : 0, .kids = &next,
        .chunk_elems = wf_chain_chunk_elems(a)};
    wf_bcast_pipe_build(a, plan, &shape);
    return wf_algo_build_status(&wf_algo_bcast_ring, a, plan->failed);
}

static bool ring_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BROADCAST;
}

static double ring_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms_between(a, wf_chain_terms,
                                    wf_chain_rounds_per_hop);
}

const wf_algo_t wf_algo_bcast_ring = {
    .name = "ring",
    .coll = WF_COLL_BROADCAST,
    .id = 21,
    .supports = ring_supports,
    .cost = ring_cost,
    .cost_terms = wf_chain_terms,
    .build = ring_build,
};
