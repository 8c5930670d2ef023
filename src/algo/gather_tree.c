/*
 * gather_tree.c - binomial-tree gather to the root.
 *
 * In the binomial tree over relative ranks (rtree.h) the subtree of vr is
 * the contiguous range [vr, vr + subtree(vr)).  A leaf sends its block to
 * its parent; an inner rank collects its own block and its children's
 * subtrees in scratch, in relative order, and forwards the whole subtree
 * in one message; the root receives each child's subtree straight into
 * its receive buffer.  ceil(log2 n) rounds and n-1 messages in all, versus
 * n-1 rounds at the root for a linear gather: the choice for small and
 * medium blocks.  The root's receive buffer is in absolute rank order, so
 * a child subtree that wraps past rank n-1 arrives as two messages, one
 * per contiguous range; the child splits its scratch the same way.
 *
 * Dependencies: an inner rank's send waits for the copy of its own block
 * and for every child's receive (joined with empty copies when there are
 * more than three).  Nothing is overwritten: each scratch or receive
 * region is written once.  The root's own block is one copy (none in
 * place).  Tags: 0, and 1 for the second half of a wrapped subtree.
 * Messages are not chunked: the data only goes up the tree, and the root
 * receives all of it whatever the chunking.
 *
 * Cost: wf_cost(ceil(log2 n), (n-1) * block, 0), the root's link
 * carrying all other blocks (wf_rtree_blocks_cost, the same for both).
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/deps.h"
#include "algo/rtree.h"
#include "common.h"

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int n, vr;
    uint64_t blk;
} gtree_t;

/* The root: its own block, then each child's subtree in place. */
static void build_root(gtree_t *g)
{
    const wf_coll_args_t *a = g->a;
    int kids[WF_RTREE_MAX_CHILDREN], abs[2], len[2];
    int nk = wf_rtree_children(0, g->n, false, kids);
    for (int i = 0; i < nk; i++) {
        int peer = wf_rtree_rank(kids[i], a->root, g->n);
        int np = wf_rtree_subtree_msgs(kids[i], a->root, g->n, abs, len);
        for (int p = 0; p < np; p++)
            wf_plan_recv(g->plan, peer, (uint32_t)p,
                         wf_bref(WF_BUF_RECV, (uint64_t)abs[p] * g->blk),
                         (uint64_t)len[p] * g->blk, WF_NO_DEP, WF_NO_DEP,
                         WF_NO_DEP);
    }
    /* After the receives in plan order, so that they are posted first. */
    if (!a->in_place)
        wf_plan_copy(g->plan, wf_bref(WF_BUF_RECV, (uint64_t)a->root * g->blk),
                     wf_bref(WF_BUF_SEND, 0), g->blk, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
}

/* An inner non-root rank: collect the subtree in scratch, forward it. */
static void build_inner(gtree_t *g, const int *kids, int nk, int parent)
{
    const wf_coll_args_t *a = g->a;
    int32_t got[WF_RTREE_MAX_CHILDREN];
    int sz = wf_rtree_subtree(g->vr, g->n), abs[2], len[2];
    wf_bref_t own = wf_bref(WF_BUF_SCRATCH, 0);
    g->plan->scratch_bytes = (uint64_t)sz * g->blk;
    for (int i = 0; i < nk; i++)
        got[i] = wf_plan_recv(
            g->plan, wf_rtree_rank(kids[i], a->root, g->n), 0,
            wf_bref(WF_BUF_SCRATCH, (uint64_t)(kids[i] - g->vr) * g->blk),
            (uint64_t)wf_rtree_subtree(kids[i], g->n) * g->blk, WF_NO_DEP,
            WF_NO_DEP, WF_NO_DEP);
    /* After the receives in plan order, so that they are posted first;
     * first among what the send waits for. */
    wf_deps_t d = wf_deps_none();
    wf_deps_add(&d, g->plan, own,
                wf_plan_copy(g->plan, own, wf_bref(WF_BUF_SEND, 0), g->blk,
                             WF_NO_DEP, WF_NO_DEP, WF_NO_DEP));
    for (int i = 0; i < nk; i++)
        wf_deps_add(&d, g->plan, own, got[i]);
    int32_t all = wf_deps_join(&d, g->plan, own);
    int np = wf_rtree_subtree_msgs(g->vr, a->root, g->n, abs, len);
    for (int p = 0, first = 0; p < np; first += len[p], p++)
        wf_plan_send(g->plan, parent, (uint32_t)p,
                     wf_bref(WF_BUF_SCRATCH, (uint64_t)first * g->blk),
                     (uint64_t)len[p] * g->blk, all, WF_NO_DEP, WF_NO_DEP);
}

static weft_status_t gtree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    gtree_t g = {.a = a, .plan = plan, .n = a->size,
                 .vr = wf_rtree_vrank(a->rank, a->root, a->size),
                 .blk = (uint64_t)a->count * a->elem_size};
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, false, &st))
        return st;
    if (g.vr == 0) {
        build_root(&g);
    } else {
        int kids[WF_RTREE_MAX_CHILDREN];
        int nk = wf_rtree_children(g.vr, g.n, false, kids);
        int parent = wf_rtree_rank(wf_rtree_parent(g.vr), a->root, g.n);
        if (nk == 0) /* a leaf: one block, never split */
            wf_plan_send(plan, parent, 0, wf_bref(WF_BUF_SEND, 0), g.blk,
                         WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        else
            build_inner(&g, kids, nk, parent);
    }
    return wf_algo_build_status(&wf_algo_gather_tree, a, plan->failed);
}

static bool gtree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_GATHER;
}

const wf_algo_t wf_algo_gather_tree = {
    .name = "tree",
    .coll = WF_COLL_GATHER,
    .id = 25,
    .supports = gtree_supports,
    .cost = wf_rtree_blocks_cost,
    .build = gtree_build,
};
