/*
 * reducescatter_rhd.c - reduce-scatter by recursive halving.  On a power
 * of two each rank starts responsible for all blocks; in each round
 * (distance d = size/2, size/4, ..., 1) it splits its range of blocks in
 * two, sends the half its partner r ^ d keeps and receives the partner's
 * contribution to the half it keeps, adding it to its partial sums.
 * After log2(size) rounds it holds the sum of block r.
 *
 * Other sizes fold (unrooted_util.h): rank p + i sends its whole input to
 * rank i, which adds it to its own first; ranks 0..p-1 halve over
 * "virtual ranks", rank v standing for blocks v and v + p (contiguous in
 * the virtual block order, so every range is one virtual interval); at
 * the end rank i sends the finished block p + i to rank p + i.
 *
 * Buffers: P (partial sums), as large as the half kept after the first
 * round, indexed by virtual offset minus that half's start; Q (incoming
 * contributions), the same, or when the rounds receive more than
 * RHD_SLOTS pieces in all, RHD_SLOTS slots of one chunk taken in turn: a
 * piece is then reduced while its slot is still in the core's cache,
 * where a receive into half a vector has gone out to memory by the time
 * it is reduced (as in the rhd allreduce, allreduce_util.h; without slots
 * rhd lost to the ring on 8 ranks at 256 MiB,
 * bench/results/2026-11-28-constants-on-written-inputs.md, and the slots
 * came in bench/results/2026-11-28-reducescatter-chunk-slots.md); F (only
 * on a rank that folds in) the sum of its own and the folded rank's
 * input, indexed by virtual offset.  The caller's send buffer is only
 * read; the last round writes block r of the result straight into the
 * receive buffer.
 *
 * Pieces: every range is cut at the chunk grid (aligned at virtual 0) and
 * at the non-contiguous virtual boundaries, so a piece of a later, nested
 * range lies inside one piece of the earlier one: each dependency below
 * is a single step, found through per-round traces.
 *  - the send of round i reads the partial of round i-1 (its reduce), or
 *    F (its reduce) or the send buffer (nothing) in round 0;
 *  - the receive of round i overwrites Q where round i-1's reduce read,
 *    so it waits for that reduce; with slots, for the last reduce that
 *    read its slot (RHD_SLOTS receives earlier);
 *  - with slots, the send of piece k of a round also waits for the
 *    reduce of received piece k - RHD_SLOTS of that round (rhd_round);
 *  - the reduce waits for its receive and for the step that produced its
 *    other operand; the P region it writes was last read by that same
 *    step (sends read only the other half);
 *  - in place the folded rank's final receive overwrites its own input
 *    block, which its fold sends read: it waits for them.
 *  - WEFT_AVG: the owner of each result block divides it once.
 * Tags restart at 0 per pair: partners differ each round; the fold goes
 * p+i -> i and the result i -> p+i.
 *
 * Cost: power of two: log2(size) rounds, (size-1) blocks sent and
 * reduced.  Other sizes: two more rounds and a whole input more.
 */
#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

#define RHD_SLOTS 16

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    wf_unr_fold_t f;
    wf_unr_cuts_t cuts;
    uint64_t base;            /* virtual start of the first kept half */
    uint64_t q_off, p_off, f_off;
    uint64_t slot_bytes;      /* bytes per slot of Q; 0: no slots */
    uint64_t received;        /* pieces received in the rounds so far */
    int32_t slot_user[RHD_SLOTS]; /* the last reduce that read a slot */
    wf_unr_trace_t prev, cur; /* reduces of the last and this round */
    wf_unr_trace_t fold;      /* F's reduces, or the folded rank's sends */
    bool folds_in;
} rhd_t;

static uint64_t vbyte(const rhd_t *g, int v)
{
    return wf_unr_vstart(&g->f, v) * g->f.block;
}

/* Where round `round` reads this rank's running value of virtual byte x,
 * adding the step that wrote it to *d. */
static wf_bref_t operand(rhd_t *g, int round, uint64_t x, uint64_t len,
                         wf_deps_t *d)
{
    wf_bref_t anchor = wf_bref(WF_BUF_SCRATCH, 0);
    if (round > 0) {
        wf_unr_trace_deps(&g->prev, x, len, d, g->plan, anchor);
        return wf_bref(WF_BUF_SCRATCH, g->p_off + x - g->base);
    }
    if (g->folds_in) {
        wf_unr_trace_deps(&g->fold, x, len, d, g->plan, anchor);
        return wf_bref(WF_BUF_SCRATCH, g->f_off + x);
    }
    return wf_bref(WF_BUF_SEND, wf_unr_vreal(&g->f, x));
}

/* Rank i < e: receive rank p+i's input into F and add the own input. */
static void rhd_fold_in(rhd_t *g)
{
    int from = g->a->rank + g->f.p;
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, 0, vbyte(g, g->f.p));
    uint64_t x, len;
    uint32_t tag = 0;
    wf_unr_trace_batch(&g->fold);
    while (wf_unr_next(&it, &x, &len)) {
        wf_bref_t fx = wf_bref(WF_BUF_SCRATCH, g->f_off + x);
        int32_t rv = wf_plan_recv(g->plan, from, tag++, fx, len, WF_NO_DEP,
                                  WF_NO_DEP, WF_NO_DEP);
        int32_t red = wf_plan_reduce(
            g->plan, fx, wf_bref(WF_BUF_SEND, wf_unr_vreal(&g->f, x)), fx,
            len / g->a->elem_size, rv, WF_NO_DEP, WF_NO_DEP);
        wf_unr_trace_add(&g->fold, x, len, red);
    }
}

static int32_t rhd_send_piece(rhd_t *g, int round, int peer, uint32_t tag,
                              uint64_t x, uint64_t len, int32_t pace)
{
    wf_deps_t d = wf_deps_none();
    wf_bref_t src = operand(g, round, x, len, &d);
    wf_deps_add(&d, g->plan, wf_bref(WF_BUF_SCRATCH, 0), pace);
    return wf_plan_send(g->plan, peer, tag, src, len, d.d[0], d.d[1],
                        d.d[2]);
}

static void rhd_send(rhd_t *g, int round, int peer, uint64_t lo, uint64_t hi)
{
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, lo, hi);
    uint64_t x, len;
    uint32_t tag = 0;
    while (wf_unr_next(&it, &x, &len))
        rhd_send_piece(g, round, peer, tag++, x, len, WF_NO_DEP);
}

/* Receives the partner's piece [x, x + len) and adds it; in the last
 * round the own block goes to the receive buffer.  Returns the reduce. */
static int32_t rhd_recv_piece(rhd_t *g, int round, bool last, int peer,
                              uint32_t tag, uint64_t x, uint64_t len)
{
    const wf_coll_args_t *a = g->a;
    wf_bref_t anchor = wf_bref(WF_BUF_SCRATCH, 0);
    uint64_t own = vbyte(g, a->rank);
    wf_deps_t war = wf_deps_none(), d = wf_deps_none();
    wf_bref_t q = wf_bref(WF_BUF_SCRATCH, g->q_off + x - g->base);
    int32_t *slot_user = NULL;
    if (g->slot_bytes) {
        uint64_t slot = g->received++ % RHD_SLOTS;
        q = wf_bref(WF_BUF_SCRATCH, g->q_off + slot * g->slot_bytes);
        slot_user = &g->slot_user[slot];
        wf_deps_add(&war, g->plan, anchor, *slot_user);
    } else if (round > 0) {
        wf_unr_trace_deps(&g->prev, x, len, &war, g->plan, anchor);
    }
    int32_t rv = wf_plan_recv(g->plan, peer, tag, q, len, war.d[0],
                              war.d[1], war.d[2]);
    wf_deps_add(&d, g->plan, anchor, rv);
    wf_bref_t src = operand(g, round, x, len, &d);
    bool result = last && x < own + g->f.block;
    wf_bref_t dst = result ? wf_bref(WF_BUF_RECV, x - own)
                           : wf_bref(WF_BUF_SCRATCH, g->p_off + x - g->base);
    size_t elems = len / a->elem_size;
    int32_t red = wf_plan_reduce(g->plan, dst, src, q, elems, d.d[0], d.d[1],
                                 d.d[2]);
    wf_unr_trace_add(&g->cur, x, len, red);
    if (slot_user)
        *slot_user = red;
    if (result && a->op == WEFT_AVG)
        wf_plan_avg(g->plan, dst, elems, red, WF_NO_DEP, WF_NO_DEP);
    return red;
}

/* One round with the partner: send the half it keeps, receive and add
 * its part of the half kept here.  With slots, piece k of the sends waits
 * for the reduce of received piece k - RHD_SLOTS, which frees the slot
 * that piece k of this rank's receives takes: partners halve in step, so
 * the partner's slot for the piece is then about free too and its receive
 * posted.  A piece sent before its receive is read by the transport into
 * a buffer of its own and copied again; the first round, whose sends
 * need nothing, sent every piece at once. */
static void rhd_round(rhd_t *g, int round, bool last, int peer,
                      uint64_t give_lo, uint64_t give_hi, uint64_t keep_lo,
                      uint64_t keep_hi)
{
    wf_unr_iter_t out = wf_unr_pieces(&g->cuts, give_lo, give_hi);
    wf_unr_iter_t in = wf_unr_pieces(&g->cuts, keep_lo, keep_hi);
    int32_t reduced[RHD_SLOTS];
    uint32_t sent = 0, received = 0;
    uint64_t x, len;
    bool sending = true, receiving = true;
    wf_unr_trace_clear(&g->cur);
    while (sending || receiving) {
        if (sending && (sending = wf_unr_next(&out, &x, &len))) {
            int32_t pace = g->slot_bytes && sent >= RHD_SLOTS &&
                                   sent - RHD_SLOTS < received
                               ? reduced[(sent - RHD_SLOTS) % RHD_SLOTS]
                               : WF_NO_DEP;
            rhd_send_piece(g, round, peer, sent, x, len, pace);
            sent++;
        }
        if (receiving && (receiving = wf_unr_next(&in, &x, &len))) {
            reduced[received % RHD_SLOTS] =
                rhd_recv_piece(g, round, last, peer, received, x, len);
            received++;
        }
    }
    wf_unr_trace_t t = g->prev;
    g->prev = g->cur;
    g->cur = t;
}

static void rhd_main(rhd_t *g)
{
    int v = g->a->rank, p = g->f.p;
    if (g->folds_in)
        rhd_fold_in(g);
    int lo = 0, round = 0;
    for (int d = p / 2; d >= 1; d /= 2, round++) {
        int keep = (v & d) ? lo + d : lo, give = (v & d) ? lo : lo + d;
        rhd_round(g, round, d == 1, v ^ d, vbyte(g, give), vbyte(g, give + d),
                  vbyte(g, keep), vbyte(g, keep + d));
        lo = keep;
    }
    if (v < g->f.e) /* hand block v + p to its owner */
        rhd_send(g, round, v + p, vbyte(g, v) + g->f.block,
                 vbyte(g, v + 1));
}

/* Rank p + i: send the whole input to rank i, receive the result. */
static void rhd_folded(rhd_t *g)
{
    const wf_coll_args_t *a = g->a;
    int host = a->rank - g->f.p;
    wf_unr_iter_t it = wf_unr_pieces(&g->cuts, 0, vbyte(g, g->f.p));
    uint64_t x, len, mine = vbyte(g, host) + g->f.block;
    uint32_t tag = 0;
    wf_unr_trace_batch(&g->fold);
    while (wf_unr_next(&it, &x, &len)) {
        int32_t s = wf_plan_send(
            g->plan, host, tag++, wf_bref(WF_BUF_SEND, wf_unr_vreal(&g->f, x)),
            len, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        wf_unr_trace_add(&g->fold, x, len, s);
    }
    it = wf_unr_pieces(&g->cuts, mine, mine + g->f.block);
    tag = 0;
    while (wf_unr_next(&it, &x, &len)) {
        wf_deps_t d = wf_deps_none();
        wf_bref_t dst = wf_bref(WF_BUF_RECV, x - mine);
        if (a->in_place) /* the fold sends read these bytes */
            wf_unr_trace_deps(&g->fold, x, len, &d, g->plan, dst);
        int32_t rv = wf_plan_recv(g->plan, host, tag++, dst, len, d.d[0],
                                  d.d[1], d.d[2]);
        if (a->op == WEFT_AVG)
            wf_plan_avg(g->plan, dst, len / a->elem_size, rv, WF_NO_DEP,
                        WF_NO_DEP);
    }
}

/* The pieces the rounds of rhd_main receive, in all. */
static uint64_t rhd_pieces_received(const rhd_t *g)
{
    int v = g->a->rank, lo = 0;
    uint64_t n = 0, x, len;
    for (int d = g->f.p / 2; d >= 1; d /= 2) {
        int keep = (v & d) ? lo + d : lo;
        wf_unr_iter_t it = wf_unr_pieces(&g->cuts, vbyte(g, keep),
                                         vbyte(g, keep + d));
        while (wf_unr_next(&it, &x, &len))
            n++;
        lo = keep;
    }
    return n;
}

static void rhd_layout(rhd_t *g)
{
    int v = g->a->rank, half = g->f.p / 2;
    int lo = v < half ? 0 : half;
    g->base = vbyte(g, lo);
    uint64_t kept = vbyte(g, lo + half) - g->base;
    uint64_t q_bytes = kept;
    g->folds_in = v < g->f.e;
    for (int i = 0; i < RHD_SLOTS; i++)
        g->slot_user[i] = WF_NO_DEP;
    if (rhd_pieces_received(g) > RHD_SLOTS) {
        /* No piece is longer than the grid. */
        g->slot_bytes = wf_unr_grid(g->a);
        q_bytes = RHD_SLOTS * g->slot_bytes;
    }
    g->q_off = 0;
    g->p_off = q_bytes;
    g->f_off = q_bytes + kept;
    g->plan->scratch_bytes = g->f_off + (g->folds_in ? vbyte(g, g->f.p) : 0);
}

static weft_status_t rhd_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    rhd_t g = {.a = a, .plan = plan, .f = wf_unr_fold(a)};
    g.cuts = wf_unr_vcuts(&g.f, wf_unr_grid(a));
    wf_unr_trace_init(&g.prev);
    wf_unr_trace_init(&g.cur);
    wf_unr_trace_init(&g.fold);
    if (a->rank >= g.f.p) {
        rhd_folded(&g);
    } else {
        rhd_layout(&g);
        rhd_main(&g);
    }
    bool failed = g.prev.failed || g.cur.failed || g.fold.failed ||
                  plan->failed;
    wf_unr_trace_free(&g.prev);
    wf_unr_trace_free(&g.cur);
    wf_unr_trace_free(&g.fold);
    return wf_algo_build_status(&wf_algo_reducescatter_rhd, a, failed);
}

static bool rhd_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE_SCATTER;
}

static void rhd_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_unr_fold_t f = wf_unr_fold(a);
    double n = f.n, block = (double)f.block, e = f.e;
    double grid = (double)wf_unr_grid(a), lg = wf_ceil_log2(f.p);
    double moved = (n - 1) * block;
    /* Each of the p ranks sends half of what it still holds each round;
     * the first round's sends are input (below). */
    double first = wf_unr_group_msgs(&f, f.p / 2, f.p / 2 * n * block, grid);
    double msgs = first;
    for (int d = f.p / 4; d >= 1; d /= 2)
        msgs += wf_unr_group_msgs(&f, d, d * n * block, grid);
    /* The fold: a whole input in (2e + 1 runs in the buffer), one
     * finished block out. */
    double fold_in = e * wf_unr_runs_msgs(2 * e + 1, n * block, grid);
    msgs += fold_in + e * wf_msgs(block, grid);
    /* Sent at once: the folded ranks' inputs and the first round of the
     * p - e ranks that received none; everything else was reduced from
     * a receive first.  The first round's sends that slots pace
     * (rhd_round) are not counted as waits: their data is there and the
     * receiver is busy with the pieces before them, not asleep (counted,
     * the model took the ring on 4 and 8 ranks from 128 MiB where rhd was
     * the faster; bench/results/2026-11-29-rhd-reducescatter-paced.md). */
    double upfront = fold_in + first * (f.p - e) / f.p;
    *t = (wf_cost_terms_t){
        .rounds = e > 0 ? lg + 2 : lg,
        .path_sent = WF_COST_FAR_FACTOR * (e > 0 ? moved + n * block : moved),
        .path_reduced = e > 0 ? moved + n * block : moved,
        .messages = msgs, .bytes = n * moved + e * block,
        .reduced = n * moved, .waits = msgs - upfront};
}

static double rhd_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, rhd_terms);
}

const wf_algo_t wf_algo_reducescatter_rhd = {
    .name = "rhd",
    .coll = WF_COLL_REDUCE_SCATTER,
    .id = 46,
    .supports = rhd_supports,
    .cost = rhd_cost,
    .cost_terms = rhd_terms,
    .build = rhd_build,
};
