/*
 * bcast_sag.c - scatter-allgather broadcast (van de Geijn): a binomial
 * scatter of n segments from the root, then a ring allgather of the
 * segments.
 *
 * Segment j (wf_algo_segment of the buffer into n parts) belongs to the
 * rank with relative rank j.  Scatter: the root sends each child the
 * contiguous segments of its subtree [c, c + subtree(c)), largest subtree
 * first; every rank receives its subtree's segments straight into its
 * receive buffer and forwards the children's parts on.  Allgather: n-1
 * steps over the chain vr -> vr+1 (relative); in step t rank vr passes
 * segment vr-t on.  Two savings over a plain ring: the root already has
 * every segment, so nobody sends to it and it sends out of its own
 * buffer; and a rank that got a segment in the scatter (its subtree's) is
 * not sent it again, its predecessor skips it and it forwards its own
 * copy at the step where it would have forwarded the received one.
 * Each link carries about 2(n-1)/n of the buffer with ceil(log2 n) + n-1
 * rounds: the choice for medium and large messages where the chain's
 * pipeline fill (n-2 chunks) is still significant.
 *
 * Both phases cut their messages at a grid of WEFT_CHUNK_SIZE cells over
 * the whole buffer, so a forwarded piece always lies inside one received
 * piece.  Dependencies: a forwarding send waits for the receive of its
 * piece, from the scatter (have[cell]) or from the previous allgather step
 * (ring[cell], the latest ring receive into that cell, which is the
 * segment being forwarded).  Every element of a receive buffer is written
 * once, so there are no reuse hazards; the root copies each piece into
 * its receive buffer (out of place) after its one send of it in the
 * scatter, or for segment 0 in the allgather.  Tags: the scatter piece in
 * cell g uses g; allgather pieces are numbered in order on both sides of
 * a link, from 2^30 up.
 *
 * Cost: wf_cost(ceil(log2 n) + n - 1, 2 (n-1)/n * bytes, 0).
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "common.h"

#define SAG_RING_TAG (1u << 30)

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int n, vr;
    size_t ce;        /* grid cell, elements */
    int32_t *have;    /* per cell: the scatter receive that filled it */
    int32_t *ring;    /* per cell: the latest allgather receive */
    uint32_t send_seq, recv_seq;
} sag_t;

/* Elements [*lo, *hi) of segments [j0, j1). */
static void seg_range(const sag_t *g, int j0, int j1, size_t *lo, size_t *hi)
{
    size_t s0, l0, s1, l1;
    wf_algo_segment(g->a->count, g->n, j0, &s0, &l0);
    wf_algo_segment(g->a->count, g->n, j1 - 1, &s1, &l1);
    *lo = s0;
    *hi = s1 + l1;
}

/* Whether relative rank v holds segment j after the scatter. */
static bool has_seg(const sag_t *g, int v, int j)
{
    return j >= v && j < v + wf_rtree_subtree(v, g->n);
}

static wf_bref_t ref(const sag_t *g, size_t elem)
{
    return wf_bref(g->vr == 0 ? WF_BUF_SEND : WF_BUF_RECV,
                   (uint64_t)elem * g->a->elem_size);
}

/* Scatter: receive this rank's subtree, send each child its part. */
static void scatter(sag_t *g)
{
    const wf_coll_args_t *a = g->a;
    size_t lo, hi, es = a->elem_size;
    if (g->vr != 0) {
        int parent = wf_rtree_rank(wf_rtree_parent(g->vr), a->root, g->n);
        seg_range(g, g->vr, g->vr + wf_rtree_subtree(g->vr, g->n), &lo, &hi);
        for (size_t p = lo; p < hi; p = (p / g->ce + 1) * g->ce) {
            size_t cell = p / g->ce, end = WF_MIN(hi, (cell + 1) * g->ce);
            g->have[cell] = wf_plan_recv(
                g->plan, parent, (uint32_t)cell, ref(g, p), (end - p) * es,
                WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        }
    }
    int kids[WF_RTREE_MAX_CHILDREN];
    int nk = wf_rtree_children(g->vr, g->n, true, kids);
    for (int i = 0; i < nk; i++) {
        int peer = wf_rtree_rank(kids[i], a->root, g->n);
        seg_range(g, kids[i], kids[i] + wf_rtree_subtree(kids[i], g->n), &lo,
                  &hi);
        for (size_t p = lo; p < hi; p = (p / g->ce + 1) * g->ce) {
            size_t cell = p / g->ce, end = WF_MIN(hi, (cell + 1) * g->ce);
            int32_t sent = wf_plan_send(
                g->plan, peer, (uint32_t)cell, ref(g, p), (end - p) * es,
                g->vr == 0 ? WF_NO_DEP : g->have[cell], WF_NO_DEP, WF_NO_DEP);
            wf_rtree_bcast_root_copy(a, g->plan, sent, (uint64_t)p * es,
                                     (end - p) * es);
        }
    }
}

/* One allgather step: forward segment vr-t, receive segment vr-1-t. */
static void ring_step(sag_t *g, int t)
{
    const wf_coll_args_t *a = g->a;
    int n = g->n, vr = g->vr;
    size_t lo, hi, es = a->elem_size;
    int j = (vr - t + n) % n;
    if (vr != n - 1 && !has_seg(g, vr + 1, j)) {
        int next = wf_rtree_rank(vr + 1, a->root, n);
        bool mine = has_seg(g, vr, j);
        seg_range(g, j, j + 1, &lo, &hi);
        for (size_t p = lo; p < hi; p = (p / g->ce + 1) * g->ce) {
            size_t cell = p / g->ce, end = WF_MIN(hi, (cell + 1) * g->ce);
            int32_t dep = vr == 0 ? WF_NO_DEP
                          : mine  ? g->have[cell]
                                  : g->ring[cell];
            int32_t sent = wf_plan_send(g->plan, next,
                                        SAG_RING_TAG + g->send_seq++,
                                        ref(g, p), (end - p) * es, dep,
                                        WF_NO_DEP, WF_NO_DEP);
            /* The root's own segment 0 is the one the scatter left. */
            if (j == 0)
                wf_rtree_bcast_root_copy(a, g->plan, sent, (uint64_t)p * es,
                                         (end - p) * es);
        }
    }
    j = (vr - 1 - t + 2 * n) % n;
    if (vr != 0 && !has_seg(g, vr, j)) {
        int prev = wf_rtree_rank(vr - 1, a->root, n);
        seg_range(g, j, j + 1, &lo, &hi);
        for (size_t p = lo; p < hi; p = (p / g->ce + 1) * g->ce) {
            size_t cell = p / g->ce, end = WF_MIN(hi, (cell + 1) * g->ce);
            g->ring[cell] = wf_plan_recv(
                g->plan, prev, SAG_RING_TAG + g->recv_seq++,
                wf_bref(WF_BUF_RECV, (uint64_t)p * es), (end - p) * es,
                WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        }
    }
}

static weft_status_t sag_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, true, &st))
        return st;
    sag_t g = {.a = a, .plan = plan, .n = a->size,
               .vr = wf_rtree_vrank(a->rank, a->root, a->size),
               .ce = wf_rtree_chunk_elems(a)};
    size_t ncells = wf_rtree_nchunks(a->count, g.ce);
    g.have = malloc(2 * ncells * sizeof(int32_t));
    if (!g.have) {
        WEFT_WARN(COLL, "out of memory building a scatter-allgather "
                  "broadcast plan for %zu elements", a->count);
        return WEFT_ERR_NO_MEMORY;
    }
    g.ring = g.have + ncells;
    for (size_t i = 0; i < 2 * ncells; i++)
        g.have[i] = WF_NO_DEP;
    scatter(&g);
    for (int t = 0; t < g.n - 1; t++)
        ring_step(&g, t);
    free(g.have);
    return wf_algo_build_status(&wf_algo_bcast_sag, a, plan->failed);
}

static bool sag_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BROADCAST;
}

/* The grid cells of ce elements that elements [lo, hi) touch. */
static double cells_between(size_t lo, size_t hi, size_t ce)
{
    return hi > lo ? (double)((hi - 1) / ce - lo / ce + 1) : 0;
}

static void sag_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    size_t ce = wf_rtree_chunk_elems(a), lo, len, end;
    double msgs = 0;
    /* Relative rank v gets the segments of its subtree [v, v + subtree)
     * in one range in the scatter and every other segment in the ring,
     * one segment at a time; both cut at a grid of ce-element cells.  A
     * segment j lies in the subtree of popcount(j) of the ranks v >= 1. */
    for (int v = 0; v < a->size; v++) {
        wf_algo_segment(a->count, a->size, v, &lo, &len);
        msgs += (n - 1 - __builtin_popcount((unsigned)v)) *
                cells_between(lo, lo + len, ce);
        if (v == 0)
            continue;
        int last = v + wf_rtree_subtree(v, a->size) - 1;
        wf_algo_segment(a->count, a->size, last, &end, &len);
        msgs += cells_between(lo, end + len, ce);
    }
    /* The root's sends wait for nothing: its scatter of segments 1..n-1
     * and its ring sends of the segments relative rank 1 lacks. */
    double upfront = 0;
    int kids[WF_RTREE_MAX_CHILDREN], sub1 = wf_rtree_subtree(1, a->size);
    int nk = wf_rtree_children(0, a->size, true, kids);
    for (int i = 0; i < nk; i++) {
        int last = kids[i] + wf_rtree_subtree(kids[i], a->size) - 1;
        wf_algo_segment(a->count, a->size, kids[i], &lo, &len);
        wf_algo_segment(a->count, a->size, last, &end, &len);
        upfront += cells_between(lo, end + len, ce);
    }
    for (int j = 0; j < a->size; j++) {
        if (j >= 1 && j < 1 + sub1)
            continue;
        wf_algo_segment(a->count, a->size, j, &lo, &len);
        upfront += cells_between(lo, lo + len, ce);
    }
    *t = (wf_cost_terms_t){.rounds = wf_ceil_log2(a->size) + n - 1,
                           .path_sent = 2 * (n - 1) / n * bytes,
                           .messages = msgs, .bytes = (n - 1) * bytes,
                           .waits = msgs - upfront};
}

static double sag_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, sag_terms);
}

const wf_algo_t wf_algo_bcast_sag = {
    .name = "sag",
    .coll = WF_COLL_BROADCAST,
    .id = 22,
    .supports = sag_supports,
    .cost = sag_cost,
    .cost_terms = sag_terms,
    .build = sag_build,
};
