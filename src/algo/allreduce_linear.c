/*
 * allreduce_linear.c - linear allreduce: every rank sends its vector to
 * rank 0, which reduces them in rank order and sends the result back to
 * every rank (Open MPI's basic_linear).
 *
 * Two dependent message rounds whatever the size of the communicator,
 * where the binary tree needs 2 log2(n) and recursive doubling log2(n);
 * the price is rank 0 handling 2(n-1) messages and reducing n-1 vectors
 * in a row.  So it is for small and medium messages on ranks that share
 * a machine's cores (linear_cost below).
 *
 * Chunks and dependencies.  The vector travels in chunks of
 * WEFT_CHUNK_SIZE.  Rank 0 receives and reduces them as the linear reduce
 * does (linear_util.h) and sends each result chunk to every peer.  A peer
 * sends chunk c from SEND and receives the result into RECV after that
 * send (in place they are the same memory).  Only rank 0 reduces, so every
 * rank gets the same bits.
 *
 * Tags: 2c up, 2c + 1 down.
 */
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/linear_util.h"
#include "algo/unrooted_util.h"
#include "common.h"

static void linear_peer(const wf_coll_args_t *a, wf_plan_t *plan,
                        size_t chunk, size_t nchunks)
{
    size_t es = a->elem_size;
    for (size_t c = 0; c < nchunks; c++) {
        size_t len = WF_MIN(chunk, a->count - c * chunk);
        uint64_t off = (uint64_t)c * chunk * es;
        int32_t up = wf_plan_send(plan, 0, (uint32_t)(2 * c),
                                  wf_bref(WF_BUF_SEND, off), len * es,
                                  WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        wf_plan_recv(plan, 0, (uint32_t)(2 * c + 1),
                     wf_bref(WF_BUF_RECV, off), len * es, up, WF_NO_DEP,
                     WF_NO_DEP);
    }
}

static weft_status_t linear_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    size_t chunk = wf_arutil_chunk_elems(a);
    size_t nchunks = (a->count + chunk - 1) / chunk;
    if (a->rank == 0)
        wf_linear_root(a, plan, chunk, nchunks, true);
    else
        linear_peer(a, plan, chunk, nchunks);
    return wf_algo_build_status(&wf_algo_allreduce_linear, a, plan->failed);
}

static bool linear_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

/* Rank 0's link carries n-1 vectors in and n-1 out, and it reduces n-1 in
 * a row: the critical path.  Two rounds. */
static void linear_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    double msgs = 2 * (n - 1) * wf_msgs(bytes, (double)a->chunk_bytes);
    *t = (wf_cost_terms_t){.rounds = 2, .path_sent = (n - 1) * bytes,
                           .path_reduced = (n - 1) * bytes, .messages = msgs,
                           .bytes = 2 * (n - 1) * bytes,
                           .reduced = (n - 1) * bytes};
}

/* Priced only where every rank shares one machine and the ranks
 * outnumber its cores.  There the CPUs are the bottleneck and the model's
 * CPU term counts rank 0's messages and reductions with everyone's, and a
 * dependent round costs a rank that gives up its core: linear has two,
 * the tree 2 log2(n).  On 3, 4 and 8 ranks sharing 2 cores linear was
 * measured fastest there from 8 bytes to 128 KiB, ahead of rd, the tree
 * and dbtree (bench/results/2026-11-27-linear-allreduce.md).  Elsewhere
 * rank 0's 2(n-1) messages and n-1 reductions, one after the other, are
 * the critical path, and the model has no term for one rank's work: the
 * plain terms took linear on 2 ranks at 128 KiB, where rd is faster, and
 * at 8 bytes on any number of machines, where rank 0's messages alone
 * would take milliseconds on 1024.  So auto does not choose it there
 * (WEFT_ALGO still can). */
static double linear_cost(const wf_coll_args_t *a)
{
    return wf_linear_cost(a, linear_terms);
}

const wf_algo_t wf_algo_allreduce_linear = {
    .name = "linear",
    .coll = WF_COLL_ALLREDUCE,
    .id = 14,
    .supports = linear_supports,
    .cost = linear_cost,
    .cost_terms = linear_terms,
    .build = linear_build,
};
