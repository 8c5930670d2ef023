/*
 * gatherv_linear.c - linear gatherv: every rank sends its block to the
 * root in one message (an empty one for an empty block), and the root
 * receives each straight into its receive buffer at that rank's
 * displacement.  Only the root knows every count, so no rank can forward
 * another's block as the tree gather does; one message per block also
 * lets the root's length check catch a rank whose sendcount differs from
 * the root's recvcounts entry (vector_util.h).
 *
 * The root's own block is one copy (none in place: sendbuf == recvbuf +
 * displs[root] elements), after its receives are posted.  Receives write
 * disjoint blocks and wait for nothing.  Tag 0: one message per pair.
 *
 * Cost: the root receives size-1 messages in turn.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/vector_util.h"

static weft_status_t gv_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    uint64_t own = (uint64_t)a->count * a->elem_size;
    if (a->rank != a->root) {
        wf_plan_send(plan, a->root, 0, wf_bref(WF_BUF_SEND, 0), own,
                     WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
    }
    for (int r = 0; r < a->size; r++) {
        if (r == a->root)
            continue;
        uint64_t off, bytes = wf_v_block(a, a->vcounts, a->vdispls, r, &off);
        wf_plan_recv(plan, r, 0, wf_bref(WF_BUF_RECV, off), bytes, WF_NO_DEP,
                     WF_NO_DEP, WF_NO_DEP);
    }
    uint64_t off, bytes = wf_v_block(a, a->vcounts, a->vdispls, a->root, &off);
    if (!a->in_place && bytes)
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, off), wf_bref(WF_BUF_SEND, 0),
                     bytes, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool gv_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_GATHERV &&
           (a->rank != a->root || a->vcounts);
}

static double gv_cost(const wf_coll_args_t *a)
{
    double n = a->size;
    return wf_cost(a, n - 1, (double)a->count * (double)a->elem_size, 0);
}

const wf_algo_t wf_algo_gatherv_linear = {
    .name = "linear",
    .coll = WF_COLL_GATHERV,
    .id = 71,
    .supports = gv_supports,
    .cost = gv_cost,
    .build = gv_build,
};
