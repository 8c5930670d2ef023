/*
 * scatterv_linear.c - linear scatterv: the root sends every rank its block
 * in one message (an empty one for an empty block) from its send buffer
 * at that rank's displacement; each rank receives straight into its
 * receive buffer.  Only the root knows every count, so no rank forwards
 * another's block; one message per block lets each receiver's length
 * check catch a recvcount that differs from the root's sendcounts entry
 * (vector_util.h).
 *
 * The root's own block is one copy (none in place: recvbuf == sendbuf +
 * displs[root] elements), after its sends are posted.  Sends only read
 * the send buffer and wait for nothing.  Tag 0: one message per pair.
 *
 * Cost: the root sends size-1 messages in turn.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/vector_util.h"

static weft_status_t sv_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    uint64_t own = (uint64_t)a->count * a->elem_size;
    if (a->rank != a->root) {
        wf_plan_recv(plan, a->root, 0, wf_bref(WF_BUF_RECV, 0), own,
                     WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
    }
    /* Nearest ranks first, as the linear broadcast's root sends. */
    for (int k = 1; k < a->size; k++) {
        int r = (a->root + k) % a->size;
        uint64_t off, bytes = wf_v_block(a, a->vcounts, a->vdispls, r, &off);
        wf_plan_send(plan, r, 0, wf_bref(WF_BUF_SEND, off), bytes, WF_NO_DEP,
                     WF_NO_DEP, WF_NO_DEP);
    }
    uint64_t off, bytes = wf_v_block(a, a->vcounts, a->vdispls, a->root, &off);
    if (!a->in_place && bytes)
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, 0), wf_bref(WF_BUF_SEND, off),
                     bytes, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool sv_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_SCATTERV && (a->rank != a->root || a->vcounts);
}

static double sv_cost(const wf_coll_args_t *a)
{
    double n = a->size;
    return wf_cost(a, n - 1, (double)a->count * (double)a->elem_size, 0);
}

const wf_algo_t wf_algo_scatterv_linear = {
    .name = "linear",
    .coll = WF_COLL_SCATTERV,
    .id = 72,
    .supports = sv_supports,
    .cost = sv_cost,
    .build = sv_build,
};
