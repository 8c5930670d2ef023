/*
 * test_plan.c - plan shapes, plan validation, and the ring under many
 * random step orders (test/harness/sim.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "common.h"
#include "reduce/reduce.h"
#include "plan/plan.h"
#include "sim.h"
#include "test.h"

/* The ring through the schedule simulator, with many random orders where
 * counts below the size leave segments empty: a missed buffer-reuse
 * dependency hid there once (a receive overwrote a scratch slot before the
 * reduce that read it). */
WF_TEST(plan_ring_simulated_all_sizes, 120)
{
    for (int size = 1; size <= 9; size++) {
        size_t counts[] = {0, 1, (size_t)size - 1, (size_t)size, 37, 100};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            for (int op = 0; op < WEFT_OP_COUNT; op++)
                for (unsigned seed = 1;
                     seed <= (counts[k] < (size_t)size ? 40u : 3u); seed++) {
                    wf_sim_case_t c = {.coll = WF_COLL_ALLREDUCE,
                                       .size = size, .count = counts[k],
                                       .dtype = WEFT_INT32,
                                       .op = (weft_op_t)op,
                                       .in_place = (seed & 1) != 0,
                                       .chunk_bytes = 12};
                    ASSERT_TRUE(wf_sim_check(&wf_algo_allreduce_ring, &c,
                                             seed));
                }
    }
}

/* Shape: every rank sends and receives 2(n-1) segments' worth of bytes,
 * the same number of messages as its right neighbour receives. */
/* The ring's scratch stays a few chunks whatever the buffer: with a slot
 * per chunk of a segment, a 256 MiB allreduce on 2 ranks took 256 MiB of
 * scratch that streamed through memory on every call. */
WF_TEST(plan_ring_scratch_bounded, 30)
{
    size_t chunk = 256 << 10;
    wf_plan_t p;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 64u << 20,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM, .elem_size = 4,
                        .rank = 0, .size = 2, .chunk_bytes = chunk};
    wf_plan_init(&p, WEFT_FLOAT32, WEFT_SUM, 4, 2);
    ASSERT_OK(wf_algo_allreduce_ring.build(&a, &p));
    ASSERT_OK(wf_plan_validate(&p, 2, a.count * 4, a.count * 4));
    ASSERT_EQ(p.scratch_bytes, 16 * chunk);
    wf_plan_free(&p);
}

WF_TEST(plan_ring_shape, 30)
{
    for (int size = 2; size <= 13; size++) {
        size_t count = 1001, chunk = 64;
        uint64_t sent[13] = {0}, recvd[13] = {0}, nsend[13] = {0},
                 nrecv[13] = {0};
        for (int me = 0; me < size; me++) {
            wf_plan_t p;
            wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = count,
                                .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                                .elem_size = 4, .rank = me, .size = size,
                                .chunk_bytes = chunk};
            wf_plan_init(&p, WEFT_FLOAT32, WEFT_SUM, 4, size);
            ASSERT_OK(wf_algo_allreduce_ring.build(&a, &p));
            ASSERT_OK(wf_plan_validate(&p, size, count * 4, count * 4));
            for (uint32_t i = 0; i < p.nsteps; i++) {
                const wf_step_t *s = &p.steps[i];
                if (s->kind == WF_STEP_SEND) {
                    ASSERT_EQ(s->peer, (me + 1) % size);
                    ASSERT_TRUE(s->count <= chunk);
                    sent[me] += s->count, nsend[me]++;
                } else if (s->kind == WF_STEP_RECV) {
                    ASSERT_EQ(s->peer, (me + size - 1) % size);
                    recvd[me] += s->count, nrecv[me]++;
                }
            }
            /* A pool of 16 chunk-sized scratch slots, no more. */
            ASSERT_TRUE(p.scratch_bytes <= 16 * chunk);
            wf_plan_free(&p);
        }
        for (int me = 0; me < size; me++) {
            int right = (me + 1) % size;
            ASSERT_EQ(sent[me], recvd[right]);
            ASSERT_EQ(nsend[me], nrecv[right]);
            /* 2(n-1) of n segments: within one element per segment. */
            uint64_t ideal = 2 * (uint64_t)(size - 1) * count * 4 / (uint64_t)size;
            ASSERT_TRUE(sent[me] + 8 * (uint64_t)size >= ideal &&
                        sent[me] <= ideal + 8 * (uint64_t)size);
        }
    }
}

WF_TEST(plan_validate_rejects_forward_dependency, 10)
{
    wf_plan_t p;
    wf_plan_init(&p, WEFT_INT32, WEFT_SUM, 4, 2);
    int32_t a = wf_plan_send(&p, 1, 0, wf_bref(WF_BUF_SEND, 0), 4, WF_NO_DEP,
                             WF_NO_DEP, WF_NO_DEP);
    wf_plan_recv(&p, 1, 0, wf_bref(WF_BUF_RECV, 0), 4, a, WF_NO_DEP, WF_NO_DEP);
    ASSERT_OK(wf_plan_validate(&p, 2, 4, 4));
    p.steps[0].deps[0] = 1; /* points forward */
    ASSERT_STATUS(wf_plan_validate(&p, 2, 4, 4), WEFT_ERR_INTERNAL);
    p.steps[0].deps[0] = WF_NO_DEP;
    p.steps[1].count = 8; /* beyond the 4-byte receive buffer */
    ASSERT_STATUS(wf_plan_validate(&p, 2, 4, 4), WEFT_ERR_INTERNAL);
    p.steps[1].count = 4;
    p.steps[0].peer = 2; /* outside the 2 ranks */
    ASSERT_STATUS(wf_plan_validate(&p, 2, 4, 4), WEFT_ERR_INTERNAL);
    wf_plan_free(&p);
}
