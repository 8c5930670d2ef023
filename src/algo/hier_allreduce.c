/*
 * hier_allreduce.c - allreduce across machines, node-aware: the data
 * crosses the network once per machine, not once per rank.  Two shapes,
 * the cheaper by the cost model:
 *
 *   leaders  reduce inside each machine to its leader (its first rank),
 *            allreduce among the leaders, broadcast inside again: any
 *            layout, and the fewest network rounds for small messages;
 *   slices   every machine has L ranks and L divides the count: a
 *            reduce-scatter inside each machine leaves local rank j with
 *            slice j of the machine's sum, the ranks at place j of every
 *            machine allreduce that slice, an allgather inside puts the
 *            slices together.  Every rank carries 1/L of the network
 *            traffic (Horovod's hierarchical allreduce, NCCL's trees
 *            across nodes with rings inside work this way).
 *
 * Each phase is planned by the algorithm the cost model picks for its
 * group, with the one-host constants inside a machine and the network's
 * across (embed.h).  An average is summed in the phases and divided once
 * at the end, over every rank.
 */
#include "algo/cost.h"
#include "algo/hier_util.h"
#include "common.h"

static bool slices_fit(const wf_coll_args_t *a)
{
    const wf_node_map_t *m = a->nodes;
    return m->even && a->count >= (size_t)m->max_local &&
           a->count % (size_t)m->max_local == 0;
}

static double leaders_cost(const wf_coll_args_t *a)
{
    int L = a->nodes->max_local, N = a->nodes->nodes;
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_REDUCE, a->count, 0, L, 0,
                                      true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_ALLREDUCE, a->count, 0,
                                          N, 0, false);
    wf_coll_args_t out = wf_embed_args(a, WF_COLL_BROADCAST, a->count, 0, L,
                                       0, true);
    return wf_embed_cost(&in) + wf_embed_cost(&across) +
           wf_embed_cost(&out);
}

static double slices_cost(const wf_coll_args_t *a)
{
    int L = a->nodes->max_local, N = a->nodes->nodes;
    size_t block = a->count / (size_t)L;
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_REDUCE_SCATTER, block, 0, L,
                                      0, true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_ALLREDUCE, block, 0, N,
                                          0, false);
    wf_coll_args_t out = wf_embed_args(a, WF_COLL_ALLGATHER, block, 0, L, 0,
                                       true);
    /* The L slices' allreduces cross each machine's link at once. */
    return wf_embed_cost(&in) + wf_embed_cost_shared(&across, L) +
           wf_embed_cost(&out);
}

static bool use_slices(const wf_coll_args_t *a)
{
    return slices_fit(a) && slices_cost(a) <= leaders_cost(a);
}

static bool hier_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE && wf_hier_applies(a);
}

static double hier_cost(const wf_coll_args_t *a)
{
    double leaders = leaders_cost(a);
    return slices_fit(a) ? WF_MIN(leaders, slices_cost(a)) : leaders;
}

static weft_status_t build_leaders(const wf_hier_t *h,
                                   const wf_coll_args_t *a, wf_embed_t *e)
{
    uint64_t bytes = (uint64_t)a->count * a->elem_size;
    int lead = wf_hier_local_index(h, h->leaders[h->node]);
    wf_subcall_t s;
    if (h->nlocal > 1) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_REDUCE, a->count, h->local,
                                  h->nlocal, lead, true),
            .group = h->mine, .send = wf_bref(WF_BUF_SEND, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(0)};
        s.args.in_place = a->in_place;
        WEFT_CHECK(wf_embed_call(e, &s));
    } else if (!a->in_place) {
        wf_plan_copy(e->plan, wf_bref(WF_BUF_RECV, 0),
                     wf_bref(WF_BUF_SEND, 0), bytes, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
    }
    wf_embed_phase_end(e);
    if (wf_hier_leads(h, a->rank)) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_ALLREDUCE, a->count, h->node,
                                  h->m->nodes, 0, false),
            .group = h->leaders, .send = wf_bref(WF_BUF_RECV, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(1)};
        s.args.in_place = true;
        WEFT_CHECK(wf_embed_call(e, &s));
    }
    wf_embed_phase_end(e);
    if (h->nlocal > 1) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_BROADCAST, a->count, h->local,
                                  h->nlocal, lead, true),
            .group = h->mine, .send = wf_bref(WF_BUF_RECV, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(2)};
        s.args.in_place = true;
        WEFT_CHECK(wf_embed_call(e, &s));
    }
    return WEFT_OK;
}

static weft_status_t build_slices(const wf_hier_t *h,
                                  const wf_coll_args_t *a, wf_embed_t *e)
{
    size_t block = a->count / (size_t)h->nlocal;
    uint64_t mine = (uint64_t)h->local * block * a->elem_size;
    wf_subcall_t s = {
        .args = wf_embed_args(a, WF_COLL_REDUCE_SCATTER, block, h->local,
                              h->nlocal, 0, true),
        .group = h->mine, .send = wf_bref(WF_BUF_SEND, 0),
        .recv = wf_bref(WF_BUF_RECV, mine), .tag_base = WF_HIER_TAGS(0)};
    s.args.in_place = a->in_place;
    WEFT_CHECK(wf_embed_call(e, &s));
    wf_embed_phase_end(e);
    s = (wf_subcall_t){
        .args = wf_embed_args(a, WF_COLL_ALLREDUCE, block, h->node,
                              h->m->nodes, 0, false),
        .group = h->cross, .send = wf_bref(WF_BUF_RECV, mine),
        .recv = wf_bref(WF_BUF_RECV, mine), .tag_base = WF_HIER_TAGS(1)};
    s.args.in_place = true;
    WEFT_CHECK(wf_embed_call(e, &s));
    wf_embed_phase_end(e);
    s = (wf_subcall_t){
        .args = wf_embed_args(a, WF_COLL_ALLGATHER, block, h->local,
                              h->nlocal, 0, true),
        .group = h->mine, .send = wf_bref(WF_BUF_RECV, mine),
        .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(2)};
    s.args.in_place = true;
    return wf_embed_call(e, &s);
}

static weft_status_t hier_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, -1));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    weft_status_t st = use_slices(a) ? build_slices(&h, a, &e)
                                     : build_leaders(&h, a, &e);
    if (st == WEFT_OK && a->op == WEFT_AVG) {
        wf_embed_phase_end(&e);
        wf_plan_avg(plan, wf_bref(WF_BUF_RECV, 0), a->count, e.join,
                    WF_NO_DEP, WF_NO_DEP);
    }
    wf_hier_free(&h);
    if (st == WEFT_OK && plan->failed)
        st = WEFT_ERR_NO_MEMORY;
    return st;
}

const wf_algo_t wf_algo_allreduce_hier = {
    .name = "hier",
    .coll = WF_COLL_ALLREDUCE,
    .id = 56,
    .node_aware = true,
    .supports = hier_supports,
    .cost = hier_cost,
    .build = hier_build,
};
