/*
 * rtree.c - shared pieces of the rooted collectives (see rtree.h).
 */
#include "algo/rtree.h"

#include "algo/cost.h"
#include "common.h"

/* Far below 2^31, so two phases numbered apart (chunk, chunk + 2^30) and
 * their split messages never collide within 32 bits. */
#define RTREE_MAX_CHUNKS ((size_t)1 << 28)

int wf_rtree_subtree(int vr, int n)
{
    if (vr == 0)
        return n;
    int low = vr & -vr;
    return WF_MIN(low, n - vr);
}

int wf_rtree_children(int vr, int n, bool largest_first, int *children)
{
    int limit = vr == 0 ? n : (vr & -vr), k = 0;
    int masks[WF_RTREE_MAX_CHILDREN];
    /* Every 2^b below vr's lowest set bit with vr + 2^b < n. */
    for (int b = 0; b < 31; b++) {
        int m = 1 << b;
        if (m >= limit || m >= n - vr)
            break;
        masks[k++] = m;
    }
    for (int i = 0; i < k; i++)
        children[i] = vr + masks[largest_first ? k - 1 - i : i];
    return k;
}

int wf_rtree_wrap(int lo, int cnt, int root, int n, int abs[2], int len[2])
{
    abs[0] = wf_rtree_rank(lo, root, n);
    if (abs[0] + cnt <= n) {
        len[0] = cnt;
        return 1;
    }
    len[0] = n - abs[0];
    abs[1] = 0;
    len[1] = cnt - len[0];
    return 2;
}

size_t wf_rtree_chunk_elems(const wf_coll_args_t *a)
{
    size_t ce = WF_MAX((size_t)1, a->chunk_bytes / a->elem_size);
    size_t least = (a->count + RTREE_MAX_CHUNKS - 1) / RTREE_MAX_CHUNKS;
    return WF_MAX(ce, least);
}

size_t wf_rtree_nchunks(size_t count, size_t chunk_elems)
{
    return (count + chunk_elems - 1) / chunk_elems;
}

int32_t wf_rtree_join(wf_plan_t *plan, const int32_t *deps, int n,
                      wf_bref_t anchor)
{
    int32_t live[WF_STEP_MAX_DEPS];
    int nlive = 0;
    int32_t joined = WF_NO_DEP;
    for (int i = 0; i < n; i++) {
        if (deps[i] == WF_NO_DEP)
            continue;
        if (nlive == WF_STEP_MAX_DEPS) {
            /* An empty copy is a no-op that the engine runs as soon as
             * its dependencies are done: a join point. */
            joined = wf_plan_copy(plan, anchor, anchor, 0, live[0], live[1],
                                  live[2]);
            live[0] = joined;
            nlive = 1;
        }
        live[nlive++] = deps[i];
    }
    if (nlive == 0)
        return WF_NO_DEP;
    if (nlive == 1)
        return live[0];
    return wf_plan_copy(plan, anchor, anchor, 0, live[0], live[1],
                        nlive > 2 ? live[2] : WF_NO_DEP);
}

weft_status_t wf_rtree_build_single(const wf_coll_args_t *a, wf_plan_t *plan,
                                    wf_bref_t dst, wf_bref_t src,
                                    uint64_t bytes)
{
    if (!a->in_place && bytes)
        wf_plan_copy(plan, dst, src, bytes, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

bool wf_rtree_trivial(const wf_coll_args_t *a, wf_plan_t *plan, bool down,
                      weft_status_t *st)
{
    if (a->size == 1)
        *st = wf_rtree_build_single(a, plan, wf_bref(WF_BUF_RECV, 0),
                                    wf_bref(WF_BUF_SEND, 0),
                                    (uint64_t)a->count * a->elem_size);
    else if (a->count == 0)
        *st = wf_rtree_build_empty(a, plan, down);
    else
        return false;
    return true;
}

void wf_rtree_bcast_root_copy(const wf_coll_args_t *a, wf_plan_t *plan)
{
    if (a->rank == a->root && !a->in_place && a->count)
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, 0), wf_bref(WF_BUF_SEND, 0),
                     (uint64_t)a->count * a->elem_size, WF_NO_DEP,
                     WF_NO_DEP, WF_NO_DEP);
}

weft_status_t wf_rtree_build_empty(const wf_coll_args_t *a, wf_plan_t *plan,
                                   bool down)
{
    int n = a->size, vr = wf_rtree_vrank(a->rank, a->root, n);
    int kids[WF_RTREE_MAX_CHILDREN];
    int nk = wf_rtree_children(vr, n, down, kids);
    wf_bref_t sref = wf_bref(WF_BUF_SEND, 0), rref = wf_bref(WF_BUF_RECV, 0);
    int32_t up = WF_NO_DEP;
    if (down && vr != 0)
        up = wf_plan_recv(plan, wf_rtree_rank(wf_rtree_parent(vr), a->root,
                                              n),
                          0, rref, 0, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    /* Going up, the receives are chained rather than joined: a join is an
     * empty copy, and with no elements the buffers may be NULL. */
    for (int i = 0; i < nk; i++) {
        int peer = wf_rtree_rank(kids[i], a->root, n);
        if (down)
            wf_plan_send(plan, peer, 0, sref, 0, up, WF_NO_DEP, WF_NO_DEP);
        else
            up = wf_plan_recv(plan, peer, 0, rref, 0, up, WF_NO_DEP,
                              WF_NO_DEP);
    }
    if (!down && vr != 0)
        wf_plan_send(plan, wf_rtree_rank(wf_rtree_parent(vr), a->root, n), 0,
                     sref, 0, up, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

double wf_rtree_single_cost(const wf_coll_args_t *a)
{
    (void)a;
    return wf_cost(a, 0, 0, 0);
}
