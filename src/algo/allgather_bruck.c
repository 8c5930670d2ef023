/*
 * allgather_bruck.c - Bruck's allgather: ceil(log2 size) rounds for any
 * size.  Each rank sees the blocks in its own "position" order: position
 * q holds block (rank + q) mod size, so position 0 is its own block.  In
 * round k (distance d = 2^k) rank r sends its positions [0, cnt), cnt =
 * min(d, size - d), to rank r - d and receives the same count from rank
 * r + d into positions [d, d + cnt).  After the last round every position
 * is filled.
 *
 * The textbook version works in a scratch buffer and rotates it into
 * place at the end.  Here position q is simply the receive buffer's block
 * (rank + q) mod size: the sender's positions [0, cnt) are the blocks s,
 * s+1, ..., which are exactly the blocks the receiver's positions [d,
 * d + cnt) name, so every piece lands in its final place and no rotation
 * (and no scratch) is needed.  A run of positions is contiguous in the
 * buffer except where the block index wraps from size-1 to 0, so pieces
 * are cut there as well as at the chunk grid; both sides cut the sender's
 * positions with the sender's wrap point, so they agree.
 *
 * Dependencies: receives write blocks not yet held by anyone on this rank
 * (no reader before them), so they wait for nothing.  A send piece reads
 * positions that the own-block copy and the receives of earlier rounds
 * wrote; a trace (unrooted_util.h) in position space finds those steps,
 * and more than three are folded into zero-byte copies.  Round 0 sends the
 * own block from the send buffer and waits for nothing.
 *
 * Tags: in round k the pair (r, r - 2^k) is unique (two distances 2^j and
 * 2^k below size differ mod size), so tags restart at 0 every round.
 *
 * Cost: ceil(log2 size) rounds, (size-1) blocks sent, nothing reduced.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    uint64_t block;
    wf_unr_trace_t trace; /* writers, in this rank's position space */
} bruck_t;

/* The receive-buffer offset of byte `pos` of rank s's position space. */
static uint64_t pos_real(const bruck_t *g, int s, uint64_t pos)
{
    int blk = wf_unr_mod(s + (int)(pos / g->block), g->a->size);
    return (uint64_t)blk * g->block + pos % g->block;
}

/* Cuts for rank s's positions: the chunk grid and s's wrap point. */
static wf_unr_cuts_t pos_cuts(const bruck_t *g, int s)
{
    wf_unr_cuts_t c = {.grid = wf_unr_grid(g->a),
                       .b0 = (uint64_t)(g->a->size - s) * g->block,
                       .step = 1, .nbreaks = 1};
    return c;
}

static void bruck_round_send(bruck_t *g, int k, uint64_t cnt)
{
    const wf_coll_args_t *a = g->a;
    int to = wf_unr_mod(a->rank - (1 << k), a->size);
    wf_unr_cuts_t cuts = pos_cuts(g, a->rank);
    wf_unr_iter_t it = wf_unr_pieces(&cuts, 0, cnt * g->block);
    wf_bref_t anchor = wf_bref(WF_BUF_RECV, 0);
    uint64_t pos, len;
    uint32_t tag = 0;
    while (wf_unr_next(&it, &pos, &len)) {
        wf_deps_t d = wf_deps_none();
        wf_bref_t src;
        if (k == 0 && !a->in_place) {
            src = wf_bref(WF_BUF_SEND, pos); /* own block, from the caller */
        } else {
            src = wf_bref(WF_BUF_RECV, pos_real(g, a->rank, pos));
            wf_unr_trace_deps(&g->trace, pos, len, &d, g->plan, anchor);
        }
        wf_plan_send(g->plan, to, tag++, src, len, d.d[0], d.d[1], d.d[2]);
    }
}

static void bruck_round_recv(bruck_t *g, int k, uint64_t cnt)
{
    const wf_coll_args_t *a = g->a;
    int from = wf_unr_mod(a->rank + (1 << k), a->size);
    uint64_t shift = ((uint64_t)1 << k) * g->block;
    wf_unr_cuts_t cuts = pos_cuts(g, from); /* the sender's pieces */
    wf_unr_iter_t it = wf_unr_pieces(&cuts, 0, cnt * g->block);
    uint64_t pos, len;
    uint32_t tag = 0;
    wf_unr_trace_batch(&g->trace);
    while (wf_unr_next(&it, &pos, &len)) {
        int32_t rv = wf_plan_recv(g->plan, from, tag++,
                                  wf_bref(WF_BUF_RECV, pos_real(g, from, pos)),
                                  len, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        wf_unr_trace_add(&g->trace, pos + shift, len, rv);
    }
}

static weft_status_t bruck_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    bruck_t g = {.a = a, .plan = plan};
    g.block = (uint64_t)a->count * a->elem_size;
    wf_unr_trace_init(&g.trace);
    for (int k = 0; (1 << k) < a->size; k++) {
        int d = 1 << k;
        uint64_t cnt = (uint64_t)WF_MIN(d, a->size - d);
        bruck_round_send(&g, k, cnt);
        bruck_round_recv(&g, k, cnt);
        /* Round 0 sends the own block from the send buffer; its copy
         * comes after that round's transfers, which it would otherwise
         * hold back (they are ready at the same time and start in plan
         * order), and before the rounds that read it. */
        if (k == 0 && !a->in_place) {
            int32_t cp = wf_plan_copy(
                plan, wf_bref(WF_BUF_RECV, (uint64_t)a->rank * g.block),
                wf_bref(WF_BUF_SEND, 0), g.block, WF_NO_DEP, WF_NO_DEP,
                WF_NO_DEP);
            wf_unr_trace_batch(&g.trace);
            wf_unr_trace_add(&g.trace, 0, g.block, cp);
        }
    }
    bool failed = g.trace.failed || plan->failed;
    wf_unr_trace_free(&g.trace);
    return wf_algo_build_status(&wf_algo_allgather_bruck, a, failed);
}

static bool bruck_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLGATHER;
}

static void bruck_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, block = (double)a->count * (double)a->elem_size;
    double grid = (double)wf_unr_grid(a), msgs = 0;
    /* Round k sends cnt = min(d, n - d) blocks, in chunks, and once more
     * on the cnt - 1 ranks whose run of blocks wraps past the last one. */
    double upfront = 0;
    for (int d = 1; d < a->size; d *= 2) {
        int cnt = WF_MIN(d, a->size - d);
        msgs += n * wf_msgs(cnt * block, grid) + cnt - 1;
        /* Every run starts with the rank's own block, sent at once: all
         * of it where it is alone (round 0, and the last round when it
         * sends one block), else the pieces that hold nothing else. */
        upfront += n * (cnt == 1 ? wf_msgs(block, grid)
                                 : wf_unr_own_msgs(block, grid));
    }
    *t = (wf_cost_terms_t){.rounds = wf_ceil_log2(a->size),
                           .path_sent = WF_COST_FAR_FACTOR * (n - 1) * block,
                           .messages = msgs,
                           .bytes = n * (n - 1) * block,
                           .waits = msgs - upfront};
}

static double bruck_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, bruck_terms);
}

const wf_algo_t wf_algo_allgather_bruck = {
    .name = "bruck",
    .coll = WF_COLL_ALLGATHER,
    .id = 42,
    .supports = bruck_supports,
    .cost = bruck_cost,
    .cost_terms = bruck_terms,
    .build = bruck_build,
};
