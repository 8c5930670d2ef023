/*
 * barrier_dissemination.c - the dissemination barrier (Hensgen, Finkel
 * and Manber): in round k (0 <= k < ceil(log2 size)) rank r sends an
 * empty message to r + 2^k and receives one from r - 2^k.  The send of
 * round k waits for the receive of round k-1 and, through the send of
 * round k-1, for every earlier receive (receives wait for nothing, so
 * the last one alone proves nothing about the others).  A message of
 * round k thus certifies that its sender has heard, directly or not, from
 * the 2^(k+1) - 1 ranks before it; after the last round every rank has
 * heard from all others, which is the barrier property (the simulator
 * checks it).  Works for every size and needs no root.
 *
 * Tags: the pair (r, r + 2^k) is unique to round k (two distances below
 * size differ mod size), but the round number is used as tag anyway.
 *
 * Cost: ceil(log2 size) rounds of empty messages.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

static weft_status_t diss_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    int32_t prev = WF_NO_DEP, sent = WF_NO_DEP;
    for (int k = 0; (1 << k) < a->size; k++) {
        int d = 1 << k;
        sent = wf_plan_send(plan, wf_unr_mod(a->rank + d, a->size),
                            (uint32_t)k, wf_bref(WF_BUF_SEND, 0), 0, prev,
                            sent, WF_NO_DEP);
        prev = wf_plan_recv(plan, wf_unr_mod(a->rank - d, a->size),
                            (uint32_t)k, wf_bref(WF_BUF_RECV, 0), 0,
                            WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    }
    return wf_algo_build_status(&wf_algo_barrier_dissemination, a, plan->failed);
}

static bool diss_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BARRIER;
}

static double diss_cost(const wf_coll_args_t *a)
{
    return wf_cost(a, wf_ceil_log2(a->size), 0, 0);
}

const wf_algo_t wf_algo_barrier_dissemination = {
    .name = "dissemination",
    .coll = WF_COLL_BARRIER,
    .id = 55,
    .supports = diss_supports,
    .cost = diss_cost,
    .build = diss_build,
};
