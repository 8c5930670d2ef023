/*
 * test_algo_unrooted.c - the unrooted collectives (allgather ring/rd/
 * bruck, reduce-scatter ring/rhd, alltoall pairwise, barrier
 * dissemination): each through the schedule simulator on its own, then
 * closed-form checks of what their plans send.
 */
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "sim.h"
#include "test.h"

WF_TEST(algo_unrooted_sim_allgather_ring, 300)
{
    wf_sim_matrix(&wf_algo_allgather_ring, 9);
}

WF_TEST(algo_unrooted_sim_allgather_rd, 300)
{
    wf_sim_matrix(&wf_algo_allgather_rd, 9);
}

WF_TEST(algo_unrooted_sim_allgather_bruck, 300)
{
    wf_sim_matrix(&wf_algo_allgather_bruck, 9);
}

WF_TEST(algo_unrooted_sim_reducescatter_ring, 300)
{
    wf_sim_matrix(&wf_algo_reducescatter_ring, 9);
}

WF_TEST(algo_unrooted_sim_reducescatter_rhd, 300)
{
    wf_sim_matrix(&wf_algo_reducescatter_rhd, 9);
}

WF_TEST(algo_unrooted_sim_alltoall_pairwise, 300)
{
    wf_sim_matrix(&wf_algo_alltoall_pairwise, 9);
}

WF_TEST(algo_unrooted_sim_barrier_dissemination, 120)
{
    wf_sim_matrix(&wf_algo_barrier_dissemination, 9);
    for (int n = 17; n <= 33; n += 8)
        wf_sim_check_barrier(&wf_algo_barrier_dissemination, n);
}

/* Sizes the matrix does not reach (odd folds, wraps), with larger
 * chunks, several seeds. */
WF_TEST(algo_unrooted_sim_more_sizes, 300)
{
    const wf_algo_t *algos[] = {
        &wf_algo_allgather_ring, &wf_algo_allgather_rd,
        &wf_algo_allgather_bruck, &wf_algo_reducescatter_ring,
        &wf_algo_reducescatter_rhd, &wf_algo_alltoall_pairwise};
    int sizes[] = {11, 12, 15, 17, 24, 31, 33};
    size_t counts[] = {3, 40, 129};
    size_t chunks[] = {4, 24, 1 << 20};
    for (size_t ai = 0; ai < sizeof(algos) / sizeof(*algos); ai++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(*sizes); si++)
            for (size_t ci = 0; ci < 3; ci++)
                for (int ip = 0; ip < 2; ip++) {
                    wf_sim_case_t c = {
                        .coll = algos[ai]->coll, .size = sizes[si],
                        .count = counts[ci], .dtype = WEFT_INT32,
                        .op = ip ? WEFT_AVG : WEFT_SUM, .in_place = ip,
                        .chunk_bytes = chunks[(ci + si) % 3]};
                    for (unsigned seed = 1; seed <= 2; seed++)
                        ASSERT_TRUE(wf_sim_check(algos[ai], &c, seed));
                }
}

typedef struct {
    int sends, recvs, copies, peers;
    uint64_t sent_bytes;
} census_t;

static wf_coll_args_t args_for(wf_coll_t coll, int size, int rank,
                               size_t count, size_t chunk, bool in_place)
{
    wf_coll_args_t a = {.coll = coll, .count = count, .dtype = WEFT_INT32,
                        .op = WEFT_SUM, .elem_size = 4, .peer = -1,
                        .rank = rank, .size = size, .chunk_bytes = chunk,
                        .in_place = in_place};
    return a;
}

/* Builds rank r's plan and counts its steps. */
static census_t census(const wf_algo_t *algo, wf_coll_t coll, int size,
                       int rank, size_t count, size_t chunk, bool in_place)
{
    wf_coll_args_t a = args_for(coll, size, rank, count, chunk, in_place);
    wf_plan_t plan;
    census_t c;
    memset(&c, 0, sizeof(c));
    wf_plan_init(&plan, a.dtype, a.op, a.elem_size, size);
    ASSERT_OK(algo->build(&a, &plan));
    char *seen = calloc((size_t)size, 1);
    for (uint32_t i = 0; i < plan.nsteps; i++) {
        const wf_step_t *s = &plan.steps[i];
        if (s->kind == WF_STEP_SEND) {
            c.sends++;
            c.sent_bytes += s->count;
            if (!seen[s->peer]++)
                c.peers++;
        }
        c.recvs += s->kind == WF_STEP_RECV;
        c.copies += s->kind == WF_STEP_COPY;
    }
    free(seen);
    wf_plan_free(&plan);
    return c;
}

/* The matching send of rank `src`'s plan for a receive, or -1. */
static int32_t find_send(const wf_plan_t *plan, int dst, uint32_t tag)
{
    for (uint32_t i = 0; i < plan->nsteps; i++)
        if (plan->steps[i].kind == WF_STEP_SEND &&
            plan->steps[i].peer == dst && plan->steps[i].tag == tag)
            return (int32_t)i;
    return -1;
}

/* Message rounds on the critical path over all ranks' plans: a receive
 * ends one round after its send starts; local steps take no time. */
static int rounds_of(const wf_algo_t *algo, wf_coll_t coll, int size,
                     size_t count, size_t chunk)
{
    wf_plan_t *plans = calloc((size_t)size, sizeof(*plans));
    int **t = calloc((size_t)size, sizeof(*t));
    for (int r = 0; r < size; r++) {
        wf_coll_args_t a = args_for(coll, size, r, count, chunk, false);
        wf_plan_init(&plans[r], a.dtype, a.op, a.elem_size, size);
        ASSERT_OK(algo->build(&a, &plans[r]));
        t[r] = calloc(plans[r].nsteps + 1, sizeof(int));
    }
    int best = 0;
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < size; r++)
            for (uint32_t i = 0; i < plans[r].nsteps; i++) {
                const wf_step_t *s = &plans[r].steps[i];
                int v = 0;
                for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
                    if (s->deps[d] != WF_NO_DEP && t[r][s->deps[d]] > v)
                        v = t[r][s->deps[d]];
                if (s->kind == WF_STEP_RECV) {
                    int32_t j = find_send(&plans[s->peer], r, s->tag);
                    ASSERT_TRUE(j >= 0);
                    if (t[s->peer][j] + 1 > v)
                        v = t[s->peer][j] + 1;
                }
                if (v != t[r][i]) {
                    t[r][i] = v;
                    changed = true;
                }
                best = v > best ? v : best;
            }
    }
    for (int r = 0; r < size; r++) {
        wf_plan_free(&plans[r]);
        free(t[r]);
    }
    free(plans);
    free(t);
    return best;
}

WF_TEST(algo_unrooted_closed_forms, 60)
{
    const size_t chunk = 1 << 20, count = 100; /* one chunk per block */
    const uint64_t block = count * 4;
    for (int n = 2; n <= 20; n++) {
        int lg = wf_ceil_log2(n);
        bool pow2 = (n & (n - 1)) == 0;
        for (int r = 0; r < n; r += (n > 6 ? 3 : 1)) {
            census_t c = census(&wf_algo_allgather_ring, WF_COLL_ALLGATHER,
                                n, r, count, chunk, false);
            ASSERT_EQ(c.sends, n - 1);
            ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);
            ASSERT_EQ(c.peers, 1);
            ASSERT_EQ(c.copies, 1);
            c = census(&wf_algo_allgather_ring, WF_COLL_ALLGATHER, n, r,
                       count, chunk, true);
            ASSERT_EQ(c.copies, 0);
            ASSERT_EQ(c.sends, n - 1);

            c = census(&wf_algo_allgather_bruck, WF_COLL_ALLGATHER, n, r,
                       count, chunk, true);
            ASSERT_EQ(c.peers, lg); /* one partner per round */
            ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);
            ASSERT_EQ(c.copies, 0); /* no rotation: blocks land in place */

            if (pow2) {
                c = census(&wf_algo_allgather_rd, WF_COLL_ALLGATHER, n, r,
                           count, chunk, true);
                ASSERT_EQ(c.peers, lg);
                ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);
                c = census(&wf_algo_reducescatter_rhd,
                           WF_COLL_REDUCE_SCATTER, n, r, count, chunk,
                           false);
                ASSERT_EQ(c.peers, lg);
                ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);
            }

            c = census(&wf_algo_reducescatter_ring, WF_COLL_REDUCE_SCATTER,
                       n, r, count, chunk, true);
            ASSERT_EQ(c.sends, n - 1);
            ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);

            c = census(&wf_algo_alltoall_pairwise, WF_COLL_ALLTOALL, n, r,
                       count, chunk, false);
            ASSERT_EQ(c.sends, n - 1);
            ASSERT_EQ(c.peers, n - 1);
            ASSERT_EQ(c.sent_bytes, (uint64_t)(n - 1) * block);

            c = census(&wf_algo_barrier_dissemination, WF_COLL_BARRIER, n,
                       r, 0, chunk, false);
            ASSERT_EQ(c.sends, lg);
            ASSERT_EQ(c.recvs, lg);
            ASSERT_EQ(c.sent_bytes, 0);
        }
    }
}

/* Rounds on the critical path, over all ranks (one chunk per block). */
WF_TEST(algo_unrooted_rounds, 120)
{
    const size_t chunk = 1 << 20, count = 10;
    for (int n = 2; n <= 17; n++) {
        int lg = wf_ceil_log2(n), p = 1;
        while (p * 2 <= n)
            p *= 2;
        int folded = wf_ceil_log2(p) + (p == n ? 0 : 2);
        ASSERT_EQ(rounds_of(&wf_algo_allgather_ring, WF_COLL_ALLGATHER, n,
                            count, chunk), n - 1);
        /* Bruck's last round may forward only data it had before the
         * previous round, so it can overlap: at most lg, lg on 2^k. */
        int bruck = rounds_of(&wf_algo_allgather_bruck, WF_COLL_ALLGATHER,
                              n, count, chunk);
        ASSERT_TRUE(bruck <= lg && (p != n || bruck == lg));
        /* Folding adds one round in, one out; where no rank's last
         * partner carries folded data the two overlap. */
        int rd = rounds_of(&wf_algo_allgather_rd, WF_COLL_ALLGATHER, n,
                           count, chunk);
        ASSERT_TRUE(rd <= folded && rd >= folded - (p == n ? 0 : 1));
        ASSERT_EQ(rounds_of(&wf_algo_reducescatter_ring,
                            WF_COLL_REDUCE_SCATTER, n, count, chunk), n - 1);
        int rhd = rounds_of(&wf_algo_reducescatter_rhd,
                            WF_COLL_REDUCE_SCATTER, n, count, chunk);
        ASSERT_TRUE(rhd <= folded && rhd >= folded - (p == n ? 0 : 1));
        ASSERT_EQ(rounds_of(&wf_algo_barrier_dissemination, WF_COLL_BARRIER,
                            n, 0, chunk), lg);
    }
}

/* Out of place, every allgather's first send reads the caller's send
 * buffer and waits for nothing: a first round that waited for the
 * own-block copy made rd slower than Bruck on 4 ranks from 256 KiB
 * (bench/results/2026-11-27-sweeps-in-one-job.md). */
WF_TEST(algo_unrooted_first_send_waits_for_nothing, 60)
{
    const wf_algo_t *algos[] = {&wf_algo_allgather_ring,
                                &wf_algo_allgather_rd,
                                &wf_algo_allgather_bruck};
    size_t chunks[] = {64, 1 << 20};
    for (size_t ai = 0; ai < 3; ai++)
        for (int n = 2; n <= 9; n++)
            for (int r = 0; r < n; r++)
                for (size_t ci = 0; ci < 2; ci++) {
                    wf_coll_args_t a = args_for(WF_COLL_ALLGATHER, n, r, 40,
                                                chunks[ci], false);
                    wf_plan_t plan;
                    wf_plan_init(&plan, a.dtype, a.op, a.elem_size, n);
                    ASSERT_OK(algos[ai]->build(&a, &plan));
                    uint32_t i = 0;
                    while (i < plan.nsteps &&
                           plan.steps[i].kind != WF_STEP_SEND)
                        i++;
                    ASSERT_TRUE(i < plan.nsteps);
                    const wf_step_t *first = &plan.steps[i];
                    ASSERT_EQ(first->src.buf, WF_BUF_SEND);
                    for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
                        ASSERT_EQ(first->deps[d], WF_NO_DEP);
                    wf_plan_free(&plan);
                }
}

/* Chunking: a block of k chunks goes out as k messages per hop. */
WF_TEST(algo_unrooted_chunking, 60)
{
    census_t c = census(&wf_algo_allgather_ring, WF_COLL_ALLGATHER, 5, 2,
                        1000, 1024, false); /* 4000 B = 4 chunks */
    ASSERT_EQ(c.sends, 4 * 4);
    c = census(&wf_algo_reducescatter_ring, WF_COLL_REDUCE_SCATTER, 5, 2,
               1000, 1024, false);
    ASSERT_EQ(c.sends, 4 * 4);
    c = census(&wf_algo_alltoall_pairwise, WF_COLL_ALLTOALL, 5, 2, 1000,
               1024, false);
    ASSERT_EQ(c.sends, 4 * 4);
    /* Bruck merges contiguous blocks: 8 ranks, 1 KiB blocks, 1 MiB chunks:
     * one message per round unless the run wraps past the last block. */
    c = census(&wf_algo_allgather_bruck, WF_COLL_ALLGATHER, 8, 0, 256,
               1 << 20, false);
    ASSERT_EQ(c.sends, 3);
}

static uint64_t scratch_of(const wf_algo_t *algo, int size, int rank,
                           size_t count, size_t chunk)
{
    wf_coll_args_t a = args_for(WF_COLL_REDUCE_SCATTER, size, rank, count,
                                chunk, false);
    wf_plan_t plan;
    wf_plan_init(&plan, a.dtype, a.op, a.elem_size, size);
    ASSERT_OK(algo->build(&a, &plan));
    uint64_t bytes = plan.scratch_bytes;
    wf_plan_free(&plan);
    return bytes;
}

/* Large reduce-scatters receive into 16 slots of one chunk, reduced while
 * they are in cache; receiving into a whole block (ring) or half the
 * vector (rhd) made both slower, a chunk having gone out to memory by
 * the time it was reduced
 * (bench/results/2026-11-28-reducescatter-chunk-slots.md).  Only the
 * partial sums the ring forwards and rhd's running sums of the kept half
 * still take blocks. */
WF_TEST(algo_unrooted_reducescatter_chunk_slots, 30)
{
    const uint64_t chunk = 1 << 18, block = 32 * chunk; /* 32 chunks */
    const size_t count = block / 4;
    for (int r = 0; r < 2; r++) {
        ASSERT_EQ(scratch_of(&wf_algo_reducescatter_ring, 2, r, count, chunk),
                  16 * chunk);
        ASSERT_EQ(scratch_of(&wf_algo_reducescatter_rhd, 2, r, count, chunk),
                  16 * chunk + block);
    }
    for (int r = 0; r < 4; r++) {
        ASSERT_EQ(scratch_of(&wf_algo_reducescatter_ring, 4, r, count, chunk),
                  2 * block + 16 * chunk);
        ASSERT_EQ(scratch_of(&wf_algo_reducescatter_rhd, 4, r, count, chunk),
                  16 * chunk + 2 * block);
    }
    /* 16 pieces or fewer in all: no slots. */
    const size_t small = 8 * chunk / 4;
    ASSERT_EQ(scratch_of(&wf_algo_reducescatter_ring, 2, 0, small, chunk),
              2 * 8 * chunk);
    ASSERT_EQ(scratch_of(&wf_algo_reducescatter_rhd, 2, 0, small, chunk),
              2 * 8 * chunk);
}

/* rhd's first round sends need no earlier step: all 32 pieces went at
 * once, and about a sixth arrived before their receive was posted, read
 * into the transport's own buffers and copied again (4 and 8 ranks at
 * 128-256 MiB took 1.1-1.3x the ring's time).  Piece k >= 16 now waits
 * for the reduce of received piece k - 16, which frees its slot. */
WF_TEST(algo_unrooted_reducescatter_rhd_paced_sends, 30)
{
    const uint64_t chunk = 1 << 18, block = 32 * chunk;
    wf_coll_args_t a = args_for(WF_COLL_REDUCE_SCATTER, 2, 0, block / 4,
                                chunk, false);
    wf_plan_t plan;
    wf_plan_init(&plan, a.dtype, a.op, a.elem_size, 2);
    ASSERT_OK(wf_algo_reducescatter_rhd.build(&a, &plan));
    int paced = 0;
    for (uint32_t i = 0; i < plan.nsteps; i++) {
        const wf_step_t *s = &plan.steps[i];
        if (s->kind != WF_STEP_SEND)
            continue;
        int32_t waits_for_tag = -1; /* the receive its reduce read */
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++) {
            if (s->deps[d] == WF_NO_DEP)
                continue;
            const wf_step_t *red = &plan.steps[s->deps[d]];
            ASSERT_EQ(red->kind, WF_STEP_REDUCE);
            for (int e = 0; e < WF_STEP_MAX_DEPS; e++)
                if (red->deps[e] != WF_NO_DEP &&
                    plan.steps[red->deps[e]].kind == WF_STEP_RECV)
                    waits_for_tag = (int32_t)plan.steps[red->deps[e]].tag;
        }
        ASSERT_EQ(waits_for_tag, s->tag < 16 ? -1 : (int32_t)s->tag - 16);
        paced += waits_for_tag >= 0;
    }
    ASSERT_EQ(paced, 16);
    wf_plan_free(&plan);
}

/* A Bruck or rd send piece that spans what many earlier steps wrote
 * waits for them through zero-byte joining copies; run such plans. */
WF_TEST(algo_unrooted_joined_dependencies, 120)
{
    census_t c = census(&wf_algo_allgather_bruck, WF_COLL_ALLGATHER, 16, 3,
                        1, 1 << 20, false);
    ASSERT_TRUE(c.copies > 1); /* the own block, then joins */
    c = census(&wf_algo_allgather_rd, WF_COLL_ALLGATHER, 32, 5, 1, 1 << 20,
               true);
    ASSERT_TRUE(c.copies > 0);
    const wf_algo_t *algos[] = {&wf_algo_allgather_bruck,
                                &wf_algo_allgather_rd};
    int sizes[] = {16, 29, 32, 33};
    for (int ai = 0; ai < 2; ai++)
        for (int si = 0; si < 4; si++)
            for (int ip = 0; ip < 2; ip++)
                for (unsigned seed = 1; seed <= 3; seed++) {
                    wf_sim_case_t k = {.coll = WF_COLL_ALLGATHER,
                                       .size = sizes[si], .count = 1 + ip,
                                       .dtype = WEFT_INT8, .in_place = ip,
                                       .chunk_bytes = 1 << 20};
                    ASSERT_TRUE(wf_sim_check(algos[ai], &k, seed));
                }
}
