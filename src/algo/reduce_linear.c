/*
 * reduce_linear.c - linear reduce: every rank sends its vector straight
 * to the root, which reduces them all itself (Open MPI's basic_linear).
 *
 * One round whatever the size of the communicator, where the binomial
 * tree needs ceil(log2 n), each waiting for an inner rank to get a core,
 * receive and reduce before it forwards; the price is the root receiving
 * n - 1 vectors and reducing them one after the other.  So, as the linear
 * broadcast and allreduce, it is for ranks that share a machine's cores
 * (linear_cost below).
 *
 * The vector travels in chunks of WEFT_CHUNK_SIZE, chunk c with tag c;
 * the root's side is linear_util.h's (own chunk first, then the others in
 * rank order, WEFT_AVG divided once).  A rank other than the root only
 * sends from its send buffer, so all of its chunks go at once.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/linear_util.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t linear_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    size_t es = a->elem_size;
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, false, &st))
        return st;
    size_t ce = wf_rtree_chunk_elems(a);
    size_t nc = wf_rtree_nchunks(a->count, ce);
    if (a->rank == a->root) {
        wf_linear_root(a, plan, ce, nc, false);
    } else {
        for (size_t c = 0; c < nc; c++) {
            size_t len = WF_MIN(ce, a->count - c * ce);
            wf_plan_send(plan, a->root, (uint32_t)c,
                         wf_bref(WF_BUF_SEND, c * ce * es), len * es,
                         WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        }
    }
    return wf_algo_build_status(&wf_algo_reduce_linear, a, plan->failed);
}

static bool linear_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE;
}

/* The root receives and reduces every chunk from n - 1 ranks
 * (wf_linear_rooted_terms, plus its reductions): its link and its
 * reductions are the critical path, one round per chunk, and all of it is
 * the root's own work. */
static void linear_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_linear_rooted_terms(a, t);
    wf_cost_terms_reduce_sent(t);
    t->own_reduced = t->own_bytes;
}

/* Priced only where every rank shares one machine and the ranks outnumber
 * its cores, as the other linear algorithms: elsewhere the root's n - 1
 * receives and reductions in a row are a critical path that only the own
 * terms see, and the tree and rsg spread them. */
static double linear_cost(const wf_coll_args_t *a)
{
    return wf_linear_cost(a, linear_terms);
}

const wf_algo_t wf_algo_reduce_linear = {
    .name = "linear",
    .coll = WF_COLL_REDUCE,
    .id = 28,
    .supports = linear_supports,
    .cost = linear_cost,
    .cost_terms = linear_terms,
    .build = linear_build,
};
