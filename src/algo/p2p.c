/*
 * p2p.c - point-to-point send and receive as one-step plans, so they share
 * the engine's matching, deadlines and error handling with collectives.
 * Per-pair ordering comes from the engine's per-peer sequence numbers.
 */
#include "algo/algo.h"

static weft_status_t send_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_plan_send(plan, a->peer, 0, wf_bref(WF_BUF_SEND, 0),
                 a->count * a->elem_size, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static weft_status_t recv_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_plan_recv(plan, a->peer, 0, wf_bref(WF_BUF_RECV, 0),
                 a->count * a->elem_size, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool p2p_supports(const wf_coll_args_t *a) { return a->peer >= 0; }

static double p2p_cost(const wf_coll_args_t *a)
{
    return 10.0 + (double)a->count * (double)a->elem_size * 1e-3;
}

const wf_algo_t wf_algo_p2p_send = {
    .name = "direct",
    .coll = WF_COLL_SEND,
    .id = 2,
    .supports = p2p_supports,
    .cost = p2p_cost,
    .build = send_build,
};

const wf_algo_t wf_algo_p2p_recv = {
    .name = "direct",
    .coll = WF_COLL_RECV,
    .id = 2,
    .supports = p2p_supports,
    .cost = p2p_cost,
    .build = recv_build,
};
