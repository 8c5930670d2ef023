/*
 * allreduce_rhd.c - Rabenseifner's allreduce: reduce-scatter by recursive
 * halving, then allgather by recursive doubling.  The bandwidth choice for
 * large messages on power-of-two sizes (ring's bytes in 2 log2(p) rounds
 * instead of 2(p-1)).
 *
 * The vector is split into p near-equal segments (p = 2^k participants).
 * Reduce-scatter: a rank's window starts as all segments; in each step it
 * halves, the rank keeps the half holding its own segment and exchanges
 * with the rank at distance half (p/2, p/4, ..., 1): it sends the other
 * half and receives, and reduces in, the partner's copy of its half.
 * After log2(p) steps virtual rank v owns the full reduction of segment v,
 * divides it there for WEFT_AVG (once per element), and the allgather
 * doubles the window back (distances 1, 2, ..., p/2), received straight
 * into RECV.  Other sizes fold in and out around this (wf_arfold_t in
 * allreduce_util.h), at the price of two extra whole-vector transfers on
 * the folded pairs.  Every element is reduced on one owner only, so all
 * ranks end with the same bits; the reduce order is still canonical (lower
 * virtual rank's operand first).
 *
 * Units and dependencies.  The vector is cut into units on one grid of
 * WEFT_CHUNK_SIZE chunks (finer when the vector has fewer than p chunks,
 * so that every segment gets its share), and segment s is the units
 * [s*n/p, (s+1)*n/p) of the n units, so every exchanged range is a whole number of units,
 * each unit has one writer at a time, and a rank sends at most one message
 * per unit in each step: about 2 log2(p) messages for a small vector
 * rather than one per segment (segments of a vector shorter than p chunks
 * are partly empty; their exchanges send nothing).  A unit
 * lives in SEND until first reduced, then in RECV; partner data lands in
 * scratch at the unit's own offset (less the start of the half kept in
 * the first step, the only one received into: half a vector of scratch,
 * a whole one on ranks that take a fold in), or, with more than
 * WF_ARX_SLOTS units, in WF_ARX_SLOTS slots of one unit taken in turn.
 * Per unit (wf_arx_* in allreduce_util.c): a send waits for the step that
 * produced its data; a receive into scratch waits for the reduce that last
 * read that scratch (or slot); a reduce waits for its receive and the
 * unit's previous writer; an
 * allgather receive into a unit waits for the reduce-scatter send that
 * read that memory (the same unit, sent to the same partner).
 *
 * Tags (the same partner appears in the two phases): unit u's
 * reduce-scatter message has tag u, its allgather message nunits + u;
 * fold-in u, fold-out 2 * nunits + u.
 *
 * Cost: 2 log2(p) rounds; a rank sends 2(p-1)/p of the bytes and reduces
 * (p-1)/p of them; a fold adds two rounds, two vectors sent and one
 * reduced:
 *   wf_cost(2 log2 p + 2f, (2(p-1)/p + 2f) * bytes, ((p-1)/p + f) * bytes).
 */
#include <stdlib.h>

#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

typedef struct {
    wf_arx_t x;
    wf_arfold_t f;
    size_t chunk;
    size_t *seg_unit; /* [p + 1]: first unit of each segment */
} rhd_t;

/* Element offset and length of unit u (of segment s). */
static void unit_range(const rhd_t *g, int s, size_t u, size_t *off,
                       size_t *len)
{
    (void)s;
    *off = u * g->chunk;
    *len = WF_MIN(g->chunk, g->x.a->count - *off);
}

/* First element of segment s. */
static size_t seg_start(const rhd_t *g, int s)
{
    return WF_MIN(g->seg_unit[s] * g->chunk, g->x.a->count);
}

static bool rhd_units(rhd_t *g)
{
    g->seg_unit = malloc(((size_t)g->f.p + 1) * sizeof(*g->seg_unit));
    if (!g->seg_unit) {
        g->x.plan->failed = true;
        return false;
    }
    size_t n = (g->x.a->count + g->chunk - 1) / g->chunk;
    for (int s = 0; s <= g->f.p; s++)
        g->seg_unit[s] = (size_t)s * n / (size_t)g->f.p;
    return wf_arx_init(&g->x, g->x.a, g->x.plan, g->seg_unit[g->f.p]);
}

typedef enum { RHD_SEND, RHD_RECV_REDUCE, RHD_RECV } rhd_op_t;

/* Applies one exchange operation to every unit of segments [lo, hi). */
static void for_units(rhd_t *g, int lo, int hi, rhd_op_t op, int peer,
                      uint32_t tag_base, bool peer_first)
{
    for (int s = lo; s < hi; s++)
        for (size_t u = g->seg_unit[s]; u < g->seg_unit[s + 1]; u++) {
            size_t off, len;
            uint32_t tag = tag_base + (uint32_t)u;
            unit_range(g, s, u, &off, &len);
            if (op == RHD_SEND)
                wf_arx_send(&g->x, u, off, len, peer, tag);
            else if (op == RHD_RECV_REDUCE)
                wf_arx_recv_reduce(&g->x, u, off, len, peer, tag,
                                   peer_first);
            else
                wf_arx_recv(&g->x, u, off, len, peer, tag);
        }
}

static void reduce_scatter(rhd_t *g)
{
    int v = g->f.vrank, lo = 0, hi = g->f.p;
    while (hi - lo > 1) {
        int half = (hi - lo) / 2, mid = lo + half;
        bool low = v < mid;
        int vpeer = low ? v + half : v - half;
        int peer = wf_arfold_real(&g->f, vpeer);
        for_units(g, low ? mid : lo, low ? hi : mid, RHD_SEND, peer, 0,
                  false);
        for_units(g, low ? lo : mid, low ? mid : hi, RHD_RECV_REDUCE, peer,
                  0, vpeer < v);
        if (low)
            hi = mid;
        else
            lo = mid;
    }
    if (g->x.a->op == WEFT_AVG)
        for (size_t u = g->seg_unit[v]; u < g->seg_unit[v + 1]; u++) {
            size_t off, len;
            unit_range(g, v, u, &off, &len);
            wf_arx_avg(&g->x, u, off, len);
        }
}

static void allgather(rhd_t *g)
{
    int v = g->f.vrank;
    uint32_t base = (uint32_t)g->x.nunits;
    for (int d = 1; d < g->f.p; d *= 2) {
        int lo = v & ~(d - 1), plo = lo ^ d;
        int peer = wf_arfold_real(&g->f, v ^ d);
        for_units(g, lo, lo + d, RHD_SEND, peer, base, false);
        for_units(g, plo, plo + d, RHD_RECV, peer, base, false);
    }
}

static void rhd_run(rhd_t *g)
{
    int p = g->f.p, partner = g->f.partner;
    uint32_t out_base = 2 * (uint32_t)g->x.nunits;
    if (g->f.vrank < 0) {
        for_units(g, 0, p, RHD_SEND, partner, 0, false);
        for_units(g, 0, p, RHD_RECV, partner, out_base, false);
        return;
    }
    size_t lo = 0, hi = g->x.a->count;
    if (partner < 0) {
        /* Without a fold only the half kept in the first step is ever
         * received into: scratch for that half alone. */
        if (g->f.vrank < p / 2)
            hi = seg_start(g, p / 2);
        else
            lo = seg_start(g, p / 2);
        g->x.sc_base = lo;
    }
    g->x.plan->scratch_bytes = wf_arx_use_slots(
        &g->x, g->chunk, (uint64_t)(hi - lo) * g->x.a->elem_size);
    if (partner >= 0)
        for_units(g, 0, p, RHD_RECV_REDUCE, partner, 0, true);
    reduce_scatter(g);
    allgather(g);
    if (partner >= 0)
        for_units(g, 0, p, RHD_SEND, partner, out_base, false);
}

static weft_status_t rhd_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    rhd_t g = {.x = {.a = a, .plan = plan}};
    wf_arfold_init(&g.f, a->rank, a->size);
    /* At least p units when there are p elements: on a coarser grid a
     * vector shorter than p chunks has empty segments, and the halving
     * then moves whole vectors (64 KiB on 4 ranks sent 128 KiB per rank
     * instead of 96). */
    size_t per_rank = (a->count + (size_t)g.f.p - 1) / (size_t)g.f.p;
    g.chunk = WF_MIN(wf_arutil_chunk_elems(a), WF_MAX((size_t)1, per_rank));
    if (rhd_units(&g)) {
        rhd_run(&g);
        wf_arx_fini(&g.x);
    }
    free(g.seg_unit);
    return wf_algo_build_status(&wf_algo_allreduce_rhd, a, plan->failed);
}

static bool rhd_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

static void rhd_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_arfold_t f;
    wf_arfold_init(&f, 0, a->size);
    double bytes = (double)a->count * (double)a->elem_size;
    double p = f.p, steps = wf_ceil_log2(f.p), fold = f.rem ? 1 : 0;
    /* Data moves per segment (the p pieces of the vector), each in chunks:
     * a participant sends p/2 + p/4 + ... = p - 1 segments in each half,
     * and a folded rank and its partner each send all p once. */
    double pieces = wf_msgs_pieces(a->count, a->elem_size, f.p,
                                   a->chunk_bytes);
    double msgs = 2 * (p - 1) * pieces + 2 * f.rem * pieces;
    *t = (wf_cost_terms_t){
        .rounds = 2 * steps + 2 * fold,
        .path_sent = (2 * (p - 1) / p + 2 * fold) * bytes,
        .path_reduced = ((p - 1) / p + fold) * bytes, .messages = msgs,
        .bytes = (2 * (p - 1) + 2 * f.rem) * bytes,
        .reduced = (p - 1 + f.rem) * bytes};
}

static double rhd_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms_between(a, rhd_terms, wf_cost_far_bytes);
}

const wf_algo_t wf_algo_allreduce_rhd = {
    .name = "rhd",
    .coll = WF_COLL_ALLREDUCE,
    .id = 10,
    .supports = rhd_supports,
    .cost = rhd_cost,
    .cost_terms = rhd_terms,
    .build = rhd_build,
};
