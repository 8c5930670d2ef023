/*
 * hier_unrooted.c - allgather, reduce-scatter and barrier across
 * machines, node-aware, each through the leaders (the first rank of each
 * machine), so the network carries each machine's data once:
 *
 *   allgather      gather inside each machine to its leader, allgather
 *                  among the leaders (each machine's blocks padded to the
 *                  largest machine's count), the leader puts every block
 *                  in its rank's place, broadcast inside;
 *   reducescatter  reduce inside to the leader, allreduce among the
 *                  leaders, the leader lines its machine's blocks up in
 *                  its ranks' order, scatter inside;
 *   barrier        inside, among the leaders, inside again.
 *
 * A machine's ranks need not be consecutive ranks, hence the leader's
 * copies into rank order.  Phases are planned by the cost model's pick
 * for their group (embed.h).
 */
#include "algo/cost.h"
#include "algo/hier_util.h"
#include "common.h"

static bool data_supports(const wf_coll_args_t *a)
{
    return wf_hier_applies(a);
}

/* ---- allgather ------------------------------------------------------------ */

static double allgather_cost(const wf_coll_args_t *a)
{
    int L = a->nodes->max_local, N = a->nodes->nodes;
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_GATHER, a->count, 0, L, 0,
                                      true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_ALLGATHER,
                                          a->count * (size_t)L, 0, N, 0,
                                          false);
    wf_coll_args_t out = wf_embed_args(a, WF_COLL_BROADCAST,
                                       a->count * (size_t)a->size, 0, L, 0,
                                       true);
    return wf_embed_cost(&in) + wf_embed_cost(&across) + wf_embed_cost(&out);
}

static weft_status_t allgather_build(const wf_coll_args_t *a,
                                     wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, -1));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    const wf_node_map_t *m = h.m;
    uint64_t block = (uint64_t)a->count * a->elem_size;
    uint64_t slab = block * (uint64_t)m->max_local; /* one machine's */
    bool leads = wf_hier_leads(&h, a->rank);
    uint64_t all = leads ? wf_embed_reserve(&e, slab * (uint64_t)m->nodes)
                         : 0;
    /* The leader's machine's blocks, in its ranks' order, at its slab. */
    wf_bref_t mine = wf_bref(WF_BUF_SCRATCH, all + slab * (uint64_t)h.node);
    /* In place, this rank's block already sits in its receive buffer. */
    wf_bref_t own = a->in_place
                        ? wf_bref(WF_BUF_RECV, (uint64_t)a->rank * block)
                        : wf_bref(WF_BUF_SEND, 0);
    weft_status_t st = WEFT_OK;
    wf_subcall_t s = {
        .args = wf_embed_args(a, WF_COLL_GATHER, a->count, h.local,
                              h.nlocal, 0, true),
        .group = h.mine, .send = own, .recv = mine,
        .tag_base = WF_HIER_TAGS(0)};
    if (h.nlocal > 1)
        st = wf_embed_call(&e, &s);
    else
        wf_plan_copy(plan, mine, own, block, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
    wf_embed_phase_end(&e);
    if (st == WEFT_OK && leads) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_ALLGATHER,
                                  a->count * (size_t)m->max_local, h.node,
                                  m->nodes, 0, false),
            .group = h.leaders, .send = mine,
            .recv = wf_bref(WF_BUF_SCRATCH, all),
            .tag_base = WF_HIER_TAGS(1)};
        s.args.in_place = true;
        st = wf_embed_call(&e, &s);
        wf_embed_phase_end(&e);
        /* Every block to its rank's place. */
        for (int n = 0; n < m->nodes; n++) {
            int cnt;
            const int *ranks = wf_node_ranks(m, n, &cnt);
            for (int i = 0; i < cnt; i++)
                wf_plan_copy(plan,
                             wf_bref(WF_BUF_RECV, (uint64_t)ranks[i] * block),
                             wf_bref(WF_BUF_SCRATCH,
                                     all + slab * (uint64_t)n +
                                         block * (uint64_t)i),
                             block, e.join, WF_NO_DEP, WF_NO_DEP);
        }
    }
    wf_embed_phase_end(&e);
    if (st == WEFT_OK && h.nlocal > 1) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_BROADCAST,
                                  a->count * (size_t)a->size, h.local,
                                  h.nlocal, 0, true),
            .group = h.mine, .send = wf_bref(WF_BUF_RECV, 0),
            .recv = wf_bref(WF_BUF_RECV, 0), .tag_base = WF_HIER_TAGS(2)};
        s.args.in_place = true;
        st = wf_embed_call(&e, &s);
    }
    wf_hier_free(&h);
    return st == WEFT_OK && plan->failed ? WEFT_ERR_NO_MEMORY : st;
}

const wf_algo_t wf_algo_allgather_hier = {
    .name = "hier",
    .coll = WF_COLL_ALLGATHER,
    .id = 59,
    .node_aware = true,
    .supports = data_supports,
    .cost = allgather_cost,
    .build = allgather_build,
};

/* ---- reduce-scatter -------------------------------------------------------- */

static double reducescatter_cost(const wf_coll_args_t *a)
{
    int L = a->nodes->max_local, N = a->nodes->nodes;
    size_t total = a->count * (size_t)a->size;
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_REDUCE, total, 0, L, 0,
                                      true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_ALLREDUCE, total, 0, N,
                                          0, false);
    wf_coll_args_t out = wf_embed_args(a, WF_COLL_SCATTER, a->count, 0, L, 0,
                                       true);
    return wf_embed_cost(&in) + wf_embed_cost(&across) + wf_embed_cost(&out);
}

static weft_status_t reducescatter_build(const wf_coll_args_t *a,
                                         wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, -1));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    const wf_node_map_t *m = h.m;
    size_t total = a->count * (size_t)a->size;
    uint64_t block = (uint64_t)a->count * a->elem_size;
    bool leads = wf_hier_leads(&h, a->rank);
    /* The leader's: the whole sum, then its machine's blocks in order. */
    uint64_t sum = leads ? wf_embed_reserve(&e, block * (uint64_t)a->size)
                         : 0;
    uint64_t lined = leads ? wf_embed_reserve(&e, block * (uint64_t)h.nlocal)
                           : 0;
    weft_status_t st = WEFT_OK;
    wf_subcall_t s = {
        .args = wf_embed_args(a, WF_COLL_REDUCE, total, h.local, h.nlocal, 0,
                              true),
        .group = h.mine, .send = wf_bref(WF_BUF_SEND, 0),
        .recv = wf_bref(WF_BUF_SCRATCH, sum), .tag_base = WF_HIER_TAGS(0)};
    if (h.nlocal > 1)
        st = wf_embed_call(&e, &s);
    else
        wf_plan_copy(plan, wf_bref(WF_BUF_SCRATCH, sum),
                     wf_bref(WF_BUF_SEND, 0), block * (uint64_t)a->size,
                     WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    wf_embed_phase_end(&e);
    if (st == WEFT_OK && leads) {
        s = (wf_subcall_t){
            .args = wf_embed_args(a, WF_COLL_ALLREDUCE, total, h.node,
                                  m->nodes, 0, false),
            .group = h.leaders, .send = wf_bref(WF_BUF_SCRATCH, sum),
            .recv = wf_bref(WF_BUF_SCRATCH, sum), .tag_base = WF_HIER_TAGS(1)};
        s.args.in_place = true;
        st = wf_embed_call(&e, &s);
        wf_embed_phase_end(&e);
        for (int i = 0; i < h.nlocal; i++)
            wf_plan_copy(plan,
                         wf_bref(WF_BUF_SCRATCH, lined + block * (uint64_t)i),
                         wf_bref(WF_BUF_SCRATCH,
                                 sum + block * (uint64_t)h.mine[i]),
                         block, e.join, WF_NO_DEP, WF_NO_DEP);
    }
    wf_embed_phase_end(&e);
    if (st == WEFT_OK) {
        if (h.nlocal > 1) {
            s = (wf_subcall_t){
                .args = wf_embed_args(a, WF_COLL_SCATTER, a->count, h.local,
                                      h.nlocal, 0, true),
                .group = h.mine, .send = wf_bref(WF_BUF_SCRATCH, lined),
                .recv = wf_bref(WF_BUF_RECV, 0),
                .tag_base = WF_HIER_TAGS(2)};
            st = wf_embed_call(&e, &s);
        } else {
            wf_plan_copy(plan, wf_bref(WF_BUF_RECV, 0),
                         wf_bref(WF_BUF_SCRATCH, lined), block, e.join,
                         WF_NO_DEP, WF_NO_DEP);
        }
    }
    if (st == WEFT_OK && a->op == WEFT_AVG) {
        wf_embed_phase_end(&e);
        wf_plan_avg(plan, wf_bref(WF_BUF_RECV, 0), a->count, e.join,
                    WF_NO_DEP, WF_NO_DEP);
    }
    wf_hier_free(&h);
    return st == WEFT_OK && plan->failed ? WEFT_ERR_NO_MEMORY : st;
}

const wf_algo_t wf_algo_reducescatter_hier = {
    .name = "hier",
    .coll = WF_COLL_REDUCE_SCATTER,
    .id = 60,
    .node_aware = true,
    .supports = data_supports,
    .cost = reducescatter_cost,
    .build = reducescatter_build,
};

/* ---- barrier -------------------------------------------------------------- */

static bool barrier_supports(const wf_coll_args_t *a)
{
    return wf_hier_applies(a);
}

static double barrier_cost(const wf_coll_args_t *a)
{
    wf_coll_args_t in = wf_embed_args(a, WF_COLL_BARRIER, 0, 0,
                                      a->nodes->max_local, 0, true);
    wf_coll_args_t across = wf_embed_args(a, WF_COLL_BARRIER, 0, 0,
                                          a->nodes->nodes, 0, false);
    return 2 * wf_embed_cost(&in) + wf_embed_cost(&across);
}

static weft_status_t barrier_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    wf_hier_t h;
    WEFT_CHECK(wf_hier_init(&h, a, -1));
    wf_embed_t e;
    wf_embed_init(&e, plan);
    weft_status_t st = WEFT_OK;
    for (int phase = 0; phase < 3 && st == WEFT_OK; phase++) {
        bool across = phase == 1;
        if (across ? !wf_hier_leads(&h, a->rank) : h.nlocal < 2) {
            wf_embed_phase_end(&e);
            continue;
        }
        wf_subcall_t s = {
            .args = wf_embed_args(a, WF_COLL_BARRIER, 0,
                                  across ? h.node : h.local,
                                  across ? h.m->nodes : h.nlocal, 0, !across),
            .group = across ? h.leaders : h.mine,
            .send = wf_bref(WF_BUF_SEND, 0), .recv = wf_bref(WF_BUF_RECV, 0),
            .tag_base = WF_HIER_TAGS(phase)};
        st = wf_embed_call(&e, &s);
        wf_embed_phase_end(&e);
    }
    wf_hier_free(&h);
    return st == WEFT_OK && plan->failed ? WEFT_ERR_NO_MEMORY : st;
}

const wf_algo_t wf_algo_barrier_hier = {
    .name = "hier",
    .coll = WF_COLL_BARRIER,
    .id = 61,
    .node_aware = true,
    .supports = barrier_supports,
    .cost = barrier_cost,
    .build = barrier_build,
};
