/*
 * allgather_rd.c - recursive-doubling allgather.  On a power of two, in
 * round k rank r exchanges with r ^ 2^k everything it holds so far: the
 * 2^k blocks of its group (ranks equal to r above bit k), receiving the
 * partner's group; after log2(size) rounds it holds all blocks.
 *
 * Other sizes fold (unrooted_util.h): with p the largest power of two
 * below size and e = size - p, rank p + i first gives its block to rank
 * i (i < e), ranks 0..p-1 run the doubling where rank v stands for blocks
 * v and v + p, and finally rank i sends everything but block p + i back
 * to rank p + i.  That costs two extra rounds and one extra full transfer
 * for the folded ranks, which is why Bruck is the better choice there;
 * rd is kept correct for every size so that WEFT_ALGO=rd always works.
 *
 * Groups are contiguous in the fold's virtual block order, so a round
 * sends one virtual range, cut at the chunk grid and where the virtual
 * order is not contiguous in the buffer.  Data goes straight into the
 * receive buffer.
 *
 * Dependencies: receives write blocks this rank does not hold yet (no
 * earlier reader), so they wait for nothing.  A send piece of the own
 * block reads the send buffer (out of place) and waits for nothing; any
 * other reads what the own-block copy, the fold receive and earlier
 * rounds' receives wrote; a trace in virtual space finds those steps
 * (more than three are folded into zero-byte copies).  The folded rank's
 * final receive writes blocks other than its own, so in place it does
 * not touch its send data.
 *
 * Tags restart at 0 per message group: the pairs (r, r ^ 2^k) differ per
 * round, the fold goes p+i -> i and the return i -> p+i.
 *
 * Cost: power of two: log2(size) rounds, (size-1) blocks sent.  Other
 * sizes: log2(p) + 2 rounds and about 2 * size blocks on the folded pairs'
 * critical path.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    wf_unr_fold_t f;
    wf_unr_cuts_t cuts;
    wf_unr_trace_t trace; /* writers, in virtual byte offsets */
    bool own_copied;      /* the own block's copy is in the plan */
} rd_t;

/* Virtual byte offset of virtual rank v's first block. */
static uint64_t vbyte(const rd_t *g, int v)
{
    return wf_unr_vstart(&g->f, v) * g->f.block;
}

/* Out of place, the own block's copy into the receive buffer, added as
 * late as it can be: before the first send that reads part of it from the
 * receive buffer (a piece that runs on past the block), else last.  It
 * waits for nothing, and steps that are ready together start in plan
 * order, so first in the plan it held back every transfer of the first
 * round.  Its trace entry gets a batch of its own. */
static void copy_own(rd_t *g)
{
    const wf_coll_args_t *a = g->a;
    if (a->in_place || g->own_copied)
        return;
    g->own_copied = true;
    int32_t cp = wf_plan_copy(g->plan,
                              wf_bref(WF_BUF_RECV, (uint64_t)a->rank *
                                                       g->f.block),
                              wf_bref(WF_BUF_SEND, 0), g->f.block, WF_NO_DEP,
                              WF_NO_DEP, WF_NO_DEP);
    if (a->rank < g->f.p) {
        wf_unr_trace_batch(&g->trace);
        wf_unr_trace_add(&g->trace, vbyte(g, a->rank), g->f.block, cp);
    }
}

/* Sends virtual range [lo, hi) to `peer` from the receive buffer, each
 * piece after the steps that wrote it; tags continue from *tag.  A piece
 * of the rank's own block goes from the send buffer instead (out of
 * place), so round 0 does not wait for the own-block copy, as Bruck's and
 * the ring's first sends do not. */
static void send_range(rd_t *g, int peer, uint64_t lo, uint64_t hi,
                       uint32_t *tag)
{
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, lo, hi);
    wf_bref_t anchor = wf_bref(WF_BUF_RECV, 0);
    uint64_t own = vbyte(g, g->a->rank), x, len;
    bool from_send = !g->a->in_place && g->a->rank < g->f.p;
    while (wf_unr_next(&it, &x, &len)) {
        wf_deps_t d = wf_deps_none();
        wf_bref_t src;
        if (from_send && x >= own && x + len <= own + g->f.block) {
            src = wf_bref(WF_BUF_SEND, x - own);
        } else {
            if (x < own + g->f.block && x + len > own)
                copy_own(g);
            wf_unr_trace_deps(&g->trace, x, len, &d, g->plan, anchor);
            src = wf_bref(WF_BUF_RECV, wf_unr_vreal(&g->f, x));
        }
        wf_plan_send(g->plan, peer, (*tag)++, src, len, d.d[0], d.d[1],
                     d.d[2]);
    }
}

/* Receives virtual range [lo, hi) from `peer` into place and records the
 * writers (in the current trace batch). */
static void recv_range(rd_t *g, int peer, uint64_t lo, uint64_t hi,
                       uint32_t *tag)
{
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, lo, hi);
    uint64_t x, len;
    while (wf_unr_next(&it, &x, &len)) {
        int32_t rv = wf_plan_recv(g->plan, peer, (*tag)++,
                                  wf_bref(WF_BUF_RECV, wf_unr_vreal(&g->f, x)),
                                  len, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        wf_unr_trace_add(&g->trace, x, len, rv);
    }
}

/* Rank p + i: hand the block to rank i, get everything else back. */
static void rd_folded(rd_t *g)
{
    const wf_coll_args_t *a = g->a;
    int host = a->rank - g->f.p;
    uint64_t mine = vbyte(g, host) + g->f.block, total = vbyte(g, g->f.p);
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, mine, mine + g->f.block);
    uint64_t x, len;
    uint32_t tag = 0;
    while (wf_unr_next(&it, &x, &len))
        wf_plan_send(g->plan, host, tag++, wf_bref(WF_BUF_SEND, x - mine),
                     len, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    tag = 0;
    recv_range(g, host, 0, mine, &tag);
    recv_range(g, host, mine + g->f.block, total, &tag);
}

/* Rank v < p: fold in, double, return. */
static void rd_main(rd_t *g)
{
    const wf_coll_args_t *a = g->a;
    int v = a->rank, p = g->f.p;
    uint64_t mine = vbyte(g, v);
    uint32_t tag = 0;
    if (v < g->f.e) /* the folded rank's block follows ours */
        recv_range(g, v + p, mine + g->f.block, mine + 2 * g->f.block, &tag);
    for (int d = 1; d < p; d *= 2) {
        int partner = v ^ d, lo = v & ~(d - 1), plo = partner & ~(d - 1);
        uint32_t stag = 0, rtag = 0;
        send_range(g, partner, vbyte(g, lo), vbyte(g, lo + d), &stag);
        wf_unr_trace_batch(&g->trace);
        recv_range(g, partner, vbyte(g, plo), vbyte(g, plo + d), &rtag);
    }
    if (v < g->f.e) {
        uint64_t theirs = mine + g->f.block, total = vbyte(g, p);
        tag = 0;
        send_range(g, v + p, 0, theirs, &tag);
        send_range(g, v + p, theirs + g->f.block, total, &tag);
    }
}

static weft_status_t rd_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    rd_t g = {.a = a, .plan = plan, .f = wf_unr_fold(a)};
    g.cuts = wf_unr_vcuts(&g.f, wf_unr_grid(a));
    wf_unr_trace_init(&g.trace);
    if (a->rank >= g.f.p)
        rd_folded(&g);
    else
        rd_main(&g);
    copy_own(&g);
    bool failed = g.trace.failed || plan->failed;
    wf_unr_trace_free(&g.trace);
    return wf_algo_build_status(&wf_algo_allgather_rd, a, failed);
}

static bool rd_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLGATHER;
}

static void rd_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_unr_fold_t f = wf_unr_fold(a);
    double n = f.n, block = (double)f.block, e = f.e;
    double grid = (double)wf_unr_grid(a), msgs = 0, lg = wf_ceil_log2(f.p);
    for (int d = 1; d < f.p; d *= 2)
        msgs += wf_unr_group_msgs(&f, d, d * n * block, grid);
    /* The fold: one block in; back everything but that block, 2e runs in
     * the buffer. */
    msgs += e * (wf_msgs(block, grid) +
                 wf_unr_runs_msgs(2 * e, (n - 1) * block, grid));
    /* Sent at once: the pieces of a rank's own block that hold nothing
     * else.  That is the whole block where it is alone: the folded ranks'
     * one send, round 0, and on the e ranks that stand for two blocks
     * (their blocks are cut off from the rest of the buffer) every later
     * round and the send back; on the other p - e ranks in later rounds,
     * the chunks inside the block. */
    double whole = wf_msgs(block, grid);
    double upfront = e * whole + f.p * whole +
                     (lg - 1) * (e * whole +
                                 (f.p - e) * wf_unr_own_msgs(block, grid)) +
                     e * whole;
    *t = (wf_cost_terms_t){
        .rounds = e > 0 ? lg + 2 : lg,
        .path_sent = WF_COST_FAR_FACTOR * (e > 0 ? 2 * n - 1 : n - 1) * block,
        .messages = msgs, .bytes = n * (n - 1) * block,
        .waits = msgs - upfront};
}

static double rd_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, rd_terms);
}

const wf_algo_t wf_algo_allgather_rd = {
    .name = "rd",
    .coll = WF_COLL_ALLGATHER,
    .id = 41,
    .supports = rd_supports,
    .cost = rd_cost,
    .cost_terms = rd_terms,
    .build = rd_build,
};
