/*
 * hier_rooted.c - broadcast and reduce across machines, node-aware: the
 * data crosses the network once per machine.  Each machine has a leader,
 * the root on the root's machine and the first rank elsewhere.
 *
 *   broadcast  the root broadcasts to the leaders, each leader to the
 *              ranks of its machine;
 *   reduce     each machine reduces to its leader (into scratch, where a
 *              leader has no receive buffer), the leaders reduce to the
 *              root.
 *
 * Phases are planned by the cost model's pick for their group (embed.h).
 */
#include "algo/cost.h"
#include "algo/hier_util.h"
#include "common.h"

static bool rooted_supports(const wf_coll_args_t *a)
{
    return wf_hier_applies(a);
}

/* ---- broadcast ------------------------------------------------------------ */

static double bcast_cost(const wf_coll_args_t *a)
{
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_BROADCAST, a->count, 0,
                                          a->nodes->nodes, 0, false);
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_BROADCAST, a->count, 0,
                                      a->nodes->max_local, 0, true);
    return wf_embed_cost(&across) + wf_embed_cost(&in);
}

static weft_status_t bcast_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, a->root));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    weft_status_t st = WEFT_OK;
    wf_subcall_t s;
    if (wf_hier_leads(&h, a->rank)) {
        /* The root sends from its send buffer (and fills its receive
         * buffer, as a broadcast's root does); the leaders receive. */
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_BROADCAST, a->count, h.node,
                                  h.m->nodes, h.leader_node, false),
            .group = h.leaders, .send = wf_bref(WF_BUF_SEND, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(0)};
        s.args.in_place = a->in_place;
        st = wf_embed_call(&e, &s);
    }
    wf_embed_phase_end(&e);
    if (st == WEFT_OK && h.nlocal > 1) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_BROADCAST, a->count, h.local,
                                  h.nlocal,
                                  wf_hier_local_index(&h, h.leaders[h.node]),
                                  true),
            .group = h.mine, .send = wf_bref(WF_BUF_RECV, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(1)};
        s.args.in_place = true;
        st = wf_embed_call(&e, &s);
    }
    wf_hier_free(&h);
    return st == WEFT_OK && plan->failed ? WEFT_ERR_NO_MEMORY : st;
}

const wf_algo_t wf_algo_bcast_hier = {
    .name = "hier",
    .coll = WF_COLL_BROADCAST,
    .id = 57,
    .node_aware = true,
    .supports = rooted_supports,
    .cost = bcast_cost,
    .build = bcast_build,
};

/* ---- reduce --------------------------------------------------------------- */

static double reduce_cost(const wf_coll_args_t *a)
{
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_REDUCE, a->count, 0,
                                      a->nodes->max_local, 0, true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_REDUCE, a->count, 0,
                                          a->nodes->nodes, 0, false);
    return wf_embed_cost(&in) + wf_embed_cost(&across);
}

static weft_status_t reduce_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, a->root));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    bool root = a->rank == a->root, leads = wf_hier_leads(&h, a->rank);
    uint64_t bytes = (uint64_t)a->count * a->elem_size;
    /* Where this machine's sum is after the first phase: the root's
     * receive buffer, another leader's scratch; on a machine of one rank,
     * its own data. */
    wf_bref_t sum = wf_bref(WF_BUF_SEND, 0);
    weft_status_t st = WEFT_OK;
    wf_subcall_t s;
    if (h.nlocal > 1) {
        if (leads)
            sum = root ? wf_bref(WF_BUF_RECV, 0)
                       : wf_bref(WF_BUF_SCRATCH, wf_embed_reserve(&e, bytes));
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_REDUCE, a->count, h.local,
                                  h.nlocal,
                                  wf_hier_local_index(&h, h.leaders[h.node]),
                                  true),
            .group = h.mine, .send = wf_bref(WF_BUF_SEND, 0), .recv = sum,
            .tag_base = WF_HIER_TAGS(0)};
        /* In place only where the sum lands on the data (the root). */
        s.args.in_place = root && a->in_place;
        st = wf_embed_call(&e, &s);
    }
    wf_embed_phase_end(&e);
    if (st == WEFT_OK && leads) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_REDUCE, a->count, h.node,
                                  h.m->nodes, h.leader_node, false),
            .group = h.leaders, .send = sum,
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(1)};
        s.args.in_place = root && (h.nlocal > 1 || a->in_place);
        st = wf_embed_call(&e, &s);
    }
    if (st == WEFT_OK && root && a->op == WEFT_AVG) {
        wf_embed_phase_end(&e);
        wf_plan_avg(plan, wf_bref(WF_BUF_RECV, 0), a->count, e.join,
                    WF_NO_DEP, WF_NO_DEP);
    }
    wf_hier_free(&h);
    return st == WEFT_OK && plan->failed ? WEFT_ERR_NO_MEMORY : st;
}

const wf_algo_t wf_algo_reduce_hier = {
    .name = "hier",
    .coll = WF_COLL_REDUCE,
    .id = 58,
    .node_aware = true,
    .supports = rooted_supports,
    .cost = reduce_cost,
    .build = reduce_build,
};
