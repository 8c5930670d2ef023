/*
 * scatter_tree.c - binomial-tree scatter from the root.
 *
 * The mirror image of the binomial gather (gather_tree.c): the root sends
 * each child the blocks of the child's whole subtree [c, c + subtree(c))
 * (relative ranks), largest subtree first, straight out of its send
 * buffer; an inner rank receives its subtree's blocks into scratch, passes
 * each of its children their part, and copies its own block out; a leaf
 * receives its block straight into its receive buffer.  ceil(log2 n)
 * rounds instead of the n-1 of a linear scatter.  The root's send buffer
 * is in absolute rank order, so a subtree that wraps past rank n-1 leaves
 * the root as two messages (tags 0 and 1), which the child receives one
 * after the other into its scratch.
 *
 * Dependencies: an inner rank's send to a child waits for the receive(s)
 * holding that child's blocks; the copy of its own block waits for the
 * first receive.  Every region is written once and the root writes only
 * its own block (one copy, none in place), so there are no reuse hazards.
 * Messages are not chunked: each block leaves the root once whatever the
 * chunking.
 *
 * Cost: wf_cost(ceil(log2 n), (n-1) * block, 0), the root's link
 * carrying all other blocks (wf_rtree_blocks_cost, the same for both).
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "common.h"

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int n, vr;
    uint64_t blk;
} stree_t;

static void build_root(stree_t *g)
{
    const wf_coll_args_t *a = g->a;
    int kids[WF_RTREE_MAX_CHILDREN], abs[2], len[2];
    int nk = wf_rtree_children(0, g->n, true, kids);
    for (int i = 0; i < nk; i++) {
        int peer = wf_rtree_rank(kids[i], a->root, g->n);
        int np = wf_rtree_subtree_msgs(kids[i], a->root, g->n, abs, len);
        for (int p = 0; p < np; p++)
            wf_plan_send(g->plan, peer, (uint32_t)p,
                         wf_bref(WF_BUF_SEND, (uint64_t)abs[p] * g->blk),
                         (uint64_t)len[p] * g->blk, WF_NO_DEP, WF_NO_DEP,
                         WF_NO_DEP);
    }
    /* After the sends in plan order, so that they are posted first. */
    if (!a->in_place)
        wf_plan_copy(g->plan, wf_bref(WF_BUF_RECV, 0),
                     wf_bref(WF_BUF_SEND, (uint64_t)a->root * g->blk), g->blk,
                     WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
}

/* An inner non-root rank: receive the subtree, hand it on, keep its own. */
static void build_inner(stree_t *g, const int *kids, int nk, int parent)
{
    const wf_coll_args_t *a = g->a;
    int abs[2], len[2];
    int np = wf_rtree_subtree_msgs(g->vr, a->root, g->n, abs, len);
    int32_t got[2] = {WF_NO_DEP, WF_NO_DEP};
    g->plan->scratch_bytes =
        (uint64_t)wf_rtree_subtree(g->vr, g->n) * g->blk;
    for (int p = 0, first = 0; p < np; first += len[p], p++)
        got[p] = wf_plan_recv(g->plan, parent, (uint32_t)p,
                              wf_bref(WF_BUF_SCRATCH,
                                      (uint64_t)first * g->blk),
                              (uint64_t)len[p] * g->blk, WF_NO_DEP,
                              WF_NO_DEP, WF_NO_DEP);
    for (int i = 0; i < nk; i++) {
        int lo = kids[i] - g->vr, cnt = wf_rtree_subtree(kids[i], g->n);
        /* Blocks [0, len[0]) came in the first message, the rest in the
         * second. */
        int32_t d0 = lo < len[0] ? got[0] : WF_NO_DEP;
        int32_t d1 = lo + cnt > len[0] ? got[1] : WF_NO_DEP;
        wf_plan_send(g->plan, wf_rtree_rank(kids[i], a->root, g->n), 0,
                     wf_bref(WF_BUF_SCRATCH, (uint64_t)lo * g->blk),
                     (uint64_t)cnt * g->blk, d0, d1, WF_NO_DEP);
    }
    wf_plan_copy(g->plan, wf_bref(WF_BUF_RECV, 0), wf_bref(WF_BUF_SCRATCH, 0),
                 g->blk, got[0], WF_NO_DEP, WF_NO_DEP);
}

static weft_status_t stree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    stree_t g = {.a = a, .plan = plan, .n = a->size,
                 .vr = wf_rtree_vrank(a->rank, a->root, a->size),
                 .blk = (uint64_t)a->count * a->elem_size};
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, true, &st))
        return st;
    if (g.vr == 0) {
        build_root(&g);
    } else {
        int kids[WF_RTREE_MAX_CHILDREN];
        int nk = wf_rtree_children(g.vr, g.n, true, kids);
        int parent = wf_rtree_rank(wf_rtree_parent(g.vr), a->root, g.n);
        if (nk == 0) /* a leaf: one block, never split */
            wf_plan_recv(plan, parent, 0, wf_bref(WF_BUF_RECV, 0), g.blk,
                         WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        else
            build_inner(&g, kids, nk, parent);
    }
    return wf_algo_build_status(&wf_algo_scatter_tree, a, plan->failed);
}

static bool stree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_SCATTER;
}

const wf_algo_t wf_algo_scatter_tree = {
    .name = "tree",
    .coll = WF_COLL_SCATTER,
    .id = 26,
    .supports = stree_supports,
    .cost = wf_rtree_blocks_cost,
    .build = stree_build,
};
