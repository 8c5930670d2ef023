/*
 * bcast_linear.c - linear broadcast: the root sends the whole buffer to
 * every other rank itself (Open MPI's basic_linear).
 *
 * One round whatever the size of the communicator, where the binomial
 * tree needs ceil(log2 n) rounds, each of which waits for a forwarding
 * rank to get a core and its data; the price is the root sending n - 1
 * copies one after the other.  So it is for ranks that share a machine's
 * cores (linear_cost below), as the linear allreduce: there, on 8 ranks,
 * it was the fastest broadcast from 8 B to 256 MiB (with the single copy
 * every receiver reads its copy itself, all at once).
 *
 * The plan is the pipelined broadcast of bcast_pipe.h down a star: the
 * buffer travels in chunks of WEFT_CHUNK_SIZE, chunk c with tag c, to the
 * ranks after the root in order (root + 1, root + 2, ...).  The root
 * sends out of its send buffer and copies each chunk into its receive
 * buffer (out of place) after the chunk's first send; a receiver writes
 * each region of its buffer once.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/bcast_pipe.h"
#include "algo/cost.h"
#include "algo/linear_util.h"
#include "algo/rtree.h"
#include "common.h"

static weft_status_t linear_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    int n = a->size;
    bool root = a->rank == a->root;
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, true, &st))
        return st;
    /* A star: every other rank is the root's child, from root + 1 on. */
    int *kids = root ? malloc((size_t)(n - 1) * sizeof(*kids)) : NULL;
    if (root && !kids)
        return wf_algo_build_status(&wf_algo_bcast_linear, a, true);
    for (int v = 1; root && v < n; v++)
        kids[v - 1] = wf_rtree_rank(v, a->root, n);
    wf_bcast_pipe_t shape = {.parent = root ? -1 : a->root,
                             .nkids = root ? n - 1 : 0, .kids = kids,
                             .chunk_elems = wf_rtree_chunk_elems(a)};
    wf_bcast_pipe_build(a, plan, &shape);
    free(kids);
    return wf_algo_build_status(&wf_algo_bcast_linear, a, plan->failed);
}

static bool linear_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BROADCAST;
}

/* Priced only where every rank shares one machine and the ranks outnumber
 * its cores, as the linear allreduce (allreduce_linear.c): elsewhere the
 * root's n - 1 sends in a row are the critical path, which the model's
 * rounds do not see.  The terms are those of the root sending every chunk
 * n - 1 times (wf_linear_rooted_terms). */
static double linear_cost(const wf_coll_args_t *a)
{
    return wf_linear_cost(a, wf_linear_rooted_terms);
}

const wf_algo_t wf_algo_bcast_linear = {
    .name = "linear",
    .coll = WF_COLL_BROADCAST,
    .id = 27,
    .supports = linear_supports,
    .cost = linear_cost,
    .cost_terms = wf_linear_rooted_terms,
    .build = linear_build,
};
