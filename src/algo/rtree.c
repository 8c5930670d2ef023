/*
 * rtree.c - shared pieces of the rooted collectives (see rtree.h).
 */
#include "algo/rtree.h"

#include <math.h>

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

int wf_rtree_place(const wf_coll_args_t *a, bool largest_first, int *parent,
                   int *children)
{
    int n = a->size, vr = wf_rtree_vrank(a->rank, a->root, n);
    int nk = wf_rtree_children(vr, n, largest_first, children);
    for (int i = 0; i < nk; i++)
        children[i] = wf_rtree_rank(children[i], a->root, n);
    *parent = vr ? wf_rtree_rank(wf_rtree_parent(vr), a->root, n) : -1;
    return nk;
}

/* Blocks [lo, lo + cnt) in relative order as absolute ranks: one range,
 * or two when they wrap past rank n-1.  Fills abs[i] (first absolute
 * rank) and len[i]; returns the number of ranges. */
static int wrap(int lo, int cnt, int root, int n, int abs[2], int len[2])
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

int wf_rtree_subtree_msgs(int vr, int root, int n, int abs[2], int len[2])
{
    int sz = wf_rtree_subtree(vr, n);
    if (wf_rtree_parent(vr) == 0)
        return wrap(vr, sz, root, n, abs, len);
    len[0] = sz;
    return 1;
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

double wf_rtree_cost_chunks(const wf_coll_args_t *a)
{
    return (double)WF_MAX((size_t)1, wf_rtree_nchunks(
                                         a->count, wf_rtree_chunk_elems(a)));
}

void wf_rtree_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, L = wf_ceil_log2(a->size);
    double bytes = (double)a->count * (double)a->elem_size;
    double nc = wf_rtree_cost_chunks(a);
    *t = (wf_cost_terms_t){.rounds = L * nc, .path_sent = L * bytes,
                           .messages = (n - 1) * nc,
                           .bytes = (n - 1) * bytes};
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

void wf_rtree_bcast_root_copy(const wf_coll_args_t *a, wf_plan_t *plan,
                              int32_t sent, uint64_t off, uint64_t len)
{
    if (a->rank == a->root && !a->in_place && len)
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, off),
                     wf_bref(WF_BUF_SEND, off), len, sent, WF_NO_DEP,
                     WF_NO_DEP);
}

weft_status_t wf_rtree_build_empty(const wf_coll_args_t *a, wf_plan_t *plan,
                                   bool down)
{
    int kids[WF_RTREE_MAX_CHILDREN], parent;
    int nk = wf_rtree_place(a, down, &parent, kids);
    wf_bref_t sref = wf_bref(WF_BUF_SEND, 0), rref = wf_bref(WF_BUF_RECV, 0);
    int32_t up = WF_NO_DEP;
    if (down && parent >= 0)
        up = wf_plan_recv(plan, parent, 0, rref, 0, WF_NO_DEP, WF_NO_DEP,
                          WF_NO_DEP);
    /* Going up, the receives are chained rather than joined: a join is an
     * empty copy, and with no elements the buffers may be NULL. */
    for (int i = 0; i < nk; i++) {
        if (down)
            wf_plan_send(plan, kids[i], 0, sref, 0, up, WF_NO_DEP, WF_NO_DEP);
        else
            up = wf_plan_recv(plan, kids[i], 0, rref, 0, up, WF_NO_DEP,
                              WF_NO_DEP);
    }
    if (!down && parent >= 0)
        wf_plan_send(plan, parent, 0, sref, 0, up, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

double wf_rtree_blocks_cost(const wf_coll_args_t *a)
{
    if (a->size == 1)
        return wf_cost(a, 0, 0, 0);
    double blk = (double)a->count * (double)a->elem_size;
    return wf_cost(a, wf_ceil_log2(a->size), (a->size - 1) * blk, 0);
}

/* Below this a chunk's own overheads (a message, a frame, a round of the
 * engine) outweigh what a shorter fill saves. */
#define WF_CHAIN_MIN_CHUNK ((size_t)8 << 10)

size_t wf_chain_chunk_elems(const wf_coll_args_t *a)
{
    size_t most = wf_rtree_chunk_elems(a), es = a->elem_size;
    size_t least = WF_MAX((size_t)1, WF_CHAIN_MIN_CHUNK / es);
    if (a->size <= 2 || a->count <= least)
        return most;
    wf_cost_model_t m = wf_cost_model(a);
    double bytes = (double)a->count * (double)es;
    double k = sqrt((a->size - 2) * m.beta_us_per_byte * bytes / m.alpha_us);
    if (k <= 1)
        return most;
    size_t ce = (size_t)ceil((double)a->count / k);
    return WF_MIN(most, WF_MAX(least, ce));
}

void wf_chain_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    size_t ce = wf_chain_chunk_elems(a);
    double nc = (double)WF_MAX((size_t)1, wf_rtree_nchunks(a->count, ce));
    double chunk = WF_MIN((double)ce * (double)a->elem_size, bytes);
    /* The last chunk leaves the first rank of the chain after nc - 1
     * others and then takes n - 2 more hops; every rank but the first
     * forwards what it received, but the last, which keeps it. */
    *t = (wf_cost_terms_t){.rounds = n - 2 + nc,
                           .path_sent = bytes + (n - 2) * chunk,
                           .messages = (n - 1) * nc,
                           .bytes = (n - 1) * bytes,
                           .waits = (n - 2) * nc};
}

/* Between machines the first rank posts its chunks back to back and every
 * rank forwards each one as it lands, so a chunk after the first waits
 * for its own bytes on the link, not for a round: the chain pays a round
 * per hop, n - 1, where its terms count n - 2 + C.  On shaped links one
 * broadcast of 1 MiB took the same time in 26 chunks or 128, where a round
 * per extra chunk would have made the small chunks far slower; and one
 * 64 KiB call of the chain beat scatter-allgather, which the full count
 * had priced a little cheaper (bench/results/2026-11-27-shaped-links.md). */
void wf_chain_rounds_per_hop(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    t->rounds = a->size - 1;
}
