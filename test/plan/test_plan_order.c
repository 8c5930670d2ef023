/*
 * test_plan_order.c - where a plan puts its local work.  The engine runs
 * the steps that are ready together in plan order, a copy or reduction
 * inline, so one that waits for nothing and comes first holds back every
 * transfer behind it: a broadcast root's 64 MiB copy held back its first
 * send (bench/results/2026-12-01-root-copy-and-bounded-send-buffers.md,
 * "The broadcast root's copy").
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "plan/plan.h"
#include "test.h"

static bool is_transfer(const wf_step_t *s)
{
    return s->kind == WF_STEP_SEND || s->kind == WF_STEP_RECV;
}

static bool waits_for_nothing(const wf_step_t *s)
{
    for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
        if (s->deps[d] != WF_NO_DEP)
            return false;
    return true;
}

/* Whether some transfer of the plan waits for step i, directly or
 * through joins (empty copies). */
static bool a_transfer_waits_for(const wf_plan_t *p, uint32_t i)
{
    for (uint32_t j = i + 1; j < p->nsteps; j++) {
        const wf_step_t *s = &p->steps[j];
        bool join = s->kind == WF_STEP_COPY && s->count == 0;
        if (!is_transfer(s) && !join)
            continue;
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
            if (s->deps[d] == (int32_t)i &&
                (!join || a_transfer_waits_for(p, j)))
                return true;
    }
    return false;
}

/* A local step with work that waits for nothing comes after every
 * transfer that waits for nothing, unless a transfer needs it. */
static void check_order(const wf_algo_t *algo, const wf_coll_args_t *a,
                        const wf_plan_t *p)
{
    uint32_t last_free_transfer = 0;
    bool any = false;
    for (uint32_t i = 0; i < p->nsteps; i++)
        if (is_transfer(&p->steps[i]) && waits_for_nothing(&p->steps[i]))
            last_free_transfer = i, any = true;
    for (uint32_t i = 0; any && i < last_free_transfer; i++) {
        const wf_step_t *s = &p->steps[i];
        if (is_transfer(s) || s->count == 0 || !waits_for_nothing(s) ||
            a_transfer_waits_for(p, i))
            continue;
        wf_test_fail(__FILE__, __LINE__, "%s %s, rank %d of %d (root %d, "
                     "%zu elements): %s step %u waits for nothing and runs "
                     "before transfer %u", wf_coll_name(algo->coll),
                     algo->name, a->rank, a->size, a->root, a->count,
                     wf_step_kind_name((wf_step_kind_t)s->kind), i,
                     last_free_transfer);
    }
}

WF_TEST(plan_local_work_after_free_transfers, 60)
{
    size_t n_algos;
    const wf_algo_t *const *algos = wf_algo_registry(&n_algos);
    static const int sizes[] = {2, 3, 4, 5, 8};
    for (size_t k = 0; k < n_algos; k++) {
        const wf_algo_t *algo = algos[k];
        if (algo->coll == WF_COLL_SEND || algo->coll == WF_COLL_RECV ||
            algo->coll == WF_COLL_BARRIER)
            continue;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
            for (int root = 0; root < sizes[si]; root += sizes[si] - 1)
                for (int r = 0; r < sizes[si]; r++) {
                    wf_coll_args_t a = {
                        .coll = algo->coll, .count = 1000,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .peer = -1, .root = root, .rank = r,
                        .size = sizes[si], .chunk_bytes = 256};
                    if (!algo->supports(&a))
                        continue;
                    wf_plan_t p;
                    wf_plan_init(&p, a.dtype, a.op, a.elem_size, a.size);
                    ASSERT_OK(algo->build(&a, &p));
                    check_order(algo, &a, &p);
                    wf_plan_free(&p);
                }
    }
}
