/*
 * allreduce_ring.c - ring allreduce: reduce-scatter then allgather, each
 * segment cut into chunks so transfers and reductions pipeline.
 *
 * The buffer is split into `size` near-equal segments.  In reduce-scatter
 * step s (0 <= s < size-1) rank r sends segment r-s to its right neighbour
 * and receives segment r-s-1 from its left one, which it reduces with its
 * own contribution; after size-1 steps it owns the full reduction of
 * segment r+1.  Allgather step t then sends segment r+1-t and receives
 * segment r-t, straight into the receive buffer.  Works for every size
 * (no power-of-two assumption) and for counts below the size (empty
 * segments send nothing).
 *
 * Dependencies per chunk express both data flow and buffer reuse:
 *  - a reduce-scatter send of step s waits for the reduce of step s-1;
 *  - received chunks land in a pool of WF_RING_SLOTS chunk-sized scratch
 *    slots, taken in turn, so a receive waits for the reduce that read its
 *    slot last (the chunk received WF_RING_SLOTS receives earlier).  A
 *    slot per chunk of a segment would do without these waits, but its
 *    scratch, as large as the buffer on 2 ranks, streams through memory
 *    instead of staying in the caches: with one copy per byte on one
 *    machine that made the ring slower than the tree on large messages
 *    (bench/results/2026-11-24-one-host-constants.md, "Two fixes found
 *    by these sweeps");
 *  - an allgather receive overwrites a segment that a reduce-scatter send
 *    read, so it waits for that send (not in step 0 out of place, whose
 *    sends read the send buffer).
 * Messages to one neighbour are numbered in order; both sides enumerate
 * (step, chunk) identically, so the numbers match.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

/* Scratch slots of one chunk each (see above). */
#define WF_RING_SLOTS 16

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    size_t chunk_elems;
    size_t max_chunks;
    uint32_t send_tag, recv_tag;
    int right, left;
} ring_t;

static size_t seg_chunks(const ring_t *g, int seg, size_t *start,
                         size_t *len)
{
    wf_algo_segment(g->a->count, g->a->size, seg, start, len);
    return (*len + g->chunk_elems - 1) / g->chunk_elems;
}

static uint64_t chunk_len(const ring_t *g, size_t len, size_t c)
{
    size_t first = c * g->chunk_elems;
    return WF_MIN(g->chunk_elems, len - first);
}

/* Reduce-scatter; fills `owned[c]` (the step that finalises each chunk of
 * the owned segment) and `rs_send[s * max_chunks + c]`.
 * prev_red[c]: the reduce of chunk c in the previous step (what its send in
 * this step waits for); slot_user[k]: the last reduce that read scratch
 * slot k. */
static void reduce_scatter(ring_t *g, int32_t *owned, int32_t *rs_send)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size, mc = g->max_chunks;
    uint64_t slot_bytes = g->chunk_elems * es;
    size_t nslots = WF_MIN(mc * (size_t)(a->size - 1), (size_t)WF_RING_SLOTS);
    int32_t *prev_red = malloc(mc * sizeof(*prev_red));
    int32_t slot_user[WF_RING_SLOTS];
    size_t received = 0;
    if (!prev_red) {
        g->plan->failed = true;
        return;
    }
    for (size_t i = 0; i < mc; i++)
        prev_red[i] = WF_NO_DEP;
    for (size_t k = 0; k < WF_RING_SLOTS; k++)
        slot_user[k] = WF_NO_DEP;
    for (int s = 0; s < a->size - 1; s++) {
        size_t start, len;
        int seg = wf_unr_mod(a->rank - s, a->size);
        size_t n = seg_chunks(g, seg, &start, &len);
        for (size_t c = 0; c < n; c++) {
            uint64_t off = (start + c * g->chunk_elems) * es;
            wf_bref_t src = wf_bref(s == 0 ? WF_BUF_SEND : WF_BUF_RECV, off);
            rs_send[(size_t)s * mc + c] =
                wf_plan_send(g->plan, g->right, g->send_tag++, src,
                             chunk_len(g, len, c) * es,
                             s == 0 ? WF_NO_DEP : prev_red[c], WF_NO_DEP,
                             WF_NO_DEP);
        }
        seg = wf_unr_mod(a->rank - s - 1, a->size);
        n = seg_chunks(g, seg, &start, &len);
        for (size_t c = 0; c < n; c++) {
            uint64_t off = (start + c * g->chunk_elems) * es;
            uint64_t elems = chunk_len(g, len, c);
            size_t k = received++ % nslots;
            wf_bref_t slot = wf_bref(WF_BUF_SCRATCH, k * slot_bytes);
            int32_t rv = wf_plan_recv(g->plan, g->left, g->recv_tag++, slot,
                                      elems * es, slot_user[k], WF_NO_DEP,
                                      WF_NO_DEP);
            prev_red[c] = slot_user[k] = wf_plan_reduce(
                g->plan, wf_bref(WF_BUF_RECV, off), wf_bref(WF_BUF_SEND, off),
                slot, elems, rv, WF_NO_DEP, WF_NO_DEP);
            owned[c] = prev_red[c];
            if (a->op == WEFT_AVG && s == a->size - 2)
                owned[c] = wf_plan_avg(g->plan, wf_bref(WF_BUF_RECV, off),
                                       elems, owned[c], WF_NO_DEP, WF_NO_DEP);
        }
    }
    free(prev_red);
    g->plan->scratch_bytes = nslots * slot_bytes;
}

static void allgather(ring_t *g, const int32_t *owned, const int32_t *rs_send)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size, mc = g->max_chunks;
    int32_t *prev = malloc(mc * sizeof(*prev));
    if (!prev) {
        g->plan->failed = true;
        return;
    }
    for (size_t c = 0; c < mc; c++)
        prev[c] = owned[c];
    for (int t = 0; t < a->size - 1; t++) {
        size_t start, len;
        int seg = wf_unr_mod(a->rank + 1 - t, a->size);
        size_t n = seg_chunks(g, seg, &start, &len);
        for (size_t c = 0; c < n; c++)
            wf_plan_send(g->plan, g->right, g->send_tag++,
                         wf_bref(WF_BUF_RECV,
                                 (start + c * g->chunk_elems) * es),
                         chunk_len(g, len, c) * es, prev[c], WF_NO_DEP,
                         WF_NO_DEP);
        seg = wf_unr_mod(a->rank - t, a->size);
        n = seg_chunks(g, seg, &start, &len);
        /* Out of place, reduce-scatter step 0 sent from the send buffer:
         * nothing to wait for before overwriting the receive buffer. */
        bool overwrites_sent = t > 0 || a->in_place;
        for (size_t c = 0; c < n; c++)
            prev[c] = wf_plan_recv(
                g->plan, g->left, g->recv_tag++,
                wf_bref(WF_BUF_RECV, (start + c * g->chunk_elems) * es),
                chunk_len(g, len, c) * es,
                overwrites_sent ? rs_send[(size_t)t * mc + c] : WF_NO_DEP,
                WF_NO_DEP, WF_NO_DEP);
    }
    free(prev);
}

static weft_status_t ring_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    ring_t g = {.a = a, .plan = plan};
    g.right = wf_unr_mod(a->rank + 1, a->size);
    g.left = wf_unr_mod(a->rank - 1, a->size);
    g.chunk_elems = wf_arutil_chunk_elems(a);
    size_t max_seg = (a->count + (size_t)a->size - 1) / (size_t)a->size;
    g.max_chunks = (max_seg + g.chunk_elems - 1) / g.chunk_elems;
    int32_t *owned = malloc(g.max_chunks * sizeof(*owned));
    int32_t *rs_send = calloc((size_t)a->size * g.max_chunks,
                              sizeof(*rs_send));
    if (owned && rs_send) {
        for (size_t i = 0; i < (size_t)a->size * g.max_chunks; i++)
            rs_send[i] = WF_NO_DEP;
        reduce_scatter(&g, owned, rs_send);
        allgather(&g, owned, rs_send);
    } else {
        plan->failed = true;
    }
    free(owned);
    free(rs_send);
    return wf_algo_build_status(&wf_algo_allreduce_ring, a, plan->failed);
}

static bool ring_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

/* 2(n-1) rounds; each rank sends 2(n-1)/n of the bytes and reduces
 * (n-1)/n of them. */
static void ring_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    /* Every rank sends every segment but one in each half, in chunks. */
    double pieces = wf_msgs_pieces(a->count, a->elem_size, a->size,
                                   a->chunk_bytes);
    *t = (wf_cost_terms_t){
        .rounds = 2 * (n - 1), .path_sent = 2 * (n - 1) / n * bytes,
        .path_reduced = (n - 1) / n * bytes,
        .messages = 2 * (n - 1) * pieces,
        .bytes = 2 * (n - 1) * bytes, .reduced = (n - 1) * bytes};
}

static double ring_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, ring_terms);
}

const wf_algo_t wf_algo_allreduce_ring = {
    .name = "ring",
    .coll = WF_COLL_ALLREDUCE,
    .id = 1,
    .supports = ring_supports,
    .cost = ring_cost,
    .cost_terms = ring_terms,
    .build = ring_build,
};
