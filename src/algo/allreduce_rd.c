/*
 * allreduce_rd.c - recursive doubling allreduce: the latency choice for
 * small messages.
 *
 * With p = 2^k ranks, in step j (distance d = 2^j) every rank exchanges
 * its whole current vector with rank ^ d and reduces the two; after log2(p)
 * steps every rank holds the full reduction.  Other sizes fold first (see
 * wf_arfold_t in allreduce_util.h): of the first 2*(size - p) ranks each
 * even one sends its vector to the odd one above it, which reduces it in
 * and takes part as a virtual rank; at the end the odd one sends the result
 * back.  WEFT_AVG divides once on each participant after the last step,
 * before the fold-out (every rank's every element is divided once).
 *
 * Identical bits everywhere.  The two partners of a step compute the same
 * reduction from the same two operands, but floating-point reductions of
 * exotic kernels (NaN propagation of MIN/MAX, say) need not be commutative
 * bit for bit.  So the order is canonical: the operand of the lower
 * virtual rank is always the first one, also in the fold (the folded-out
 * even rank is the lower one).  By induction all ranks of a group of 2^j
 * virtual ranks hold the same bits after step j, so every rank ends with
 * exactly the same result: a balanced tree reduction in rank order.
 *
 * Chunks and dependencies.  The vector is cut into chunks of
 * WEFT_CHUNK_SIZE; each chunk flows through the steps on its own, so chunk
 * c of step j+1 can travel while chunk c+1 of step j is still reduced.
 * Partner data lands in scratch at the chunk's own offset (scratch is one
 * vector).  Per chunk (wf_arx_* in allreduce_util.c): a send waits for the
 * reduce that produced its data; a receive into scratch waits for the
 * reduce that last read that scratch; a reduce waits for its receive, the
 * previous writer of its RECV chunk and the send that read that memory
 * (in place, or once the chunk lives in RECV).
 *
 * Tags: step messages use the chunk index (each step has its own partner);
 * fold-in uses the chunk index, fold-out nchunks + chunk.
 *
 * Cost: log2(p) rounds each sending and reducing the whole vector; a fold
 * adds two rounds, two vectors sent and one reduced:
 *   wf_cost(log2 p + 2f, (log2 p + 2f) * bytes, (log2 p + f) * bytes),
 * f = 1 when size is not a power of two.
 */
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

typedef struct {
    wf_arx_t x;
    wf_arfold_t f;
    size_t chunk;
} rd_t;

static size_t rd_len(const rd_t *g, size_t u)
{
    return WF_MIN(g->chunk, g->x.a->count - u * g->chunk);
}

/* A folded-out rank: hand the vector over, get the result back. */
static void rd_folded(rd_t *g)
{
    size_t n = g->x.nunits;
    for (size_t u = 0; u < n; u++)
        wf_arx_send(&g->x, u, u * g->chunk, rd_len(g, u), g->f.partner,
                    (uint32_t)u);
    for (size_t u = 0; u < n; u++)
        wf_arx_recv(&g->x, u, u * g->chunk, rd_len(g, u), g->f.partner,
                    (uint32_t)(n + u));
}

static void rd_participant(rd_t *g)
{
    const wf_coll_args_t *a = g->x.a;
    size_t n = g->x.nunits;
    if (g->f.partner >= 0)
        for (size_t u = 0; u < n; u++)
            wf_arx_recv_reduce(&g->x, u, u * g->chunk, rd_len(g, u),
                               g->f.partner, (uint32_t)u, true);
    for (int d = 1; d < g->f.p; d *= 2) {
        int vpeer = g->f.vrank ^ d, peer = wf_arfold_real(&g->f, vpeer);
        for (size_t u = 0; u < n; u++) {
            wf_arx_send(&g->x, u, u * g->chunk, rd_len(g, u), peer,
                        (uint32_t)u);
            wf_arx_recv_reduce(&g->x, u, u * g->chunk, rd_len(g, u), peer,
                               (uint32_t)u, vpeer < g->f.vrank);
        }
    }
    for (size_t u = 0; u < n && a->op == WEFT_AVG; u++)
        wf_arx_avg(&g->x, u, u * g->chunk, rd_len(g, u));
    if (g->f.partner >= 0)
        for (size_t u = 0; u < n; u++)
            wf_arx_send(&g->x, u, u * g->chunk, rd_len(g, u), g->f.partner,
                        (uint32_t)(n + u));
    g->x.plan->scratch_bytes = (uint64_t)a->count * a->elem_size;
}

static weft_status_t rd_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    rd_t g;
    g.chunk = wf_arutil_chunk_elems(a);
    wf_arfold_init(&g.f, a->rank, a->size);
    if (wf_arx_init(&g.x, a, plan, (a->count + g.chunk - 1) / g.chunk)) {
        if (g.f.vrank < 0)
            rd_folded(&g);
        else
            rd_participant(&g);
        wf_arx_fini(&g.x);
    }
    return wf_algo_build_status(&wf_algo_allreduce_rd, a, plan->failed);
}

static bool rd_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

static void rd_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_arfold_t f;
    wf_arfold_init(&f, 0, a->size);
    double bytes = (double)a->count * (double)a->elem_size;
    double steps = wf_ceil_log2(f.p), fold = f.rem ? 1 : 0;
    double msgs = (f.p * steps + 2 * f.rem) *
                  wf_msgs(bytes, (double)a->chunk_bytes);
    *t = (wf_cost_terms_t){
        .rounds = steps + 2 * fold, .path_sent = (steps + 2 * fold) * bytes,
        .path_reduced = (steps + fold) * bytes, .messages = msgs,
        .bytes = (f.p * steps + 2 * f.rem) * bytes,
        .reduced = (f.p * steps + f.rem) * bytes};
}

static double rd_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms_between(a, rd_terms, wf_cost_far_bytes);
}

const wf_algo_t wf_algo_allreduce_rd = {
    .name = "rd",
    .coll = WF_COLL_ALLREDUCE,
    .id = 11,
    .supports = rd_supports,
    .cost = rd_cost,
    .cost_terms = rd_terms,
    .build = rd_build,
};
