/*
 * built.c - the reference count of a built plan (plan/built.h).
 */
#include "plan/built.h"

#include <stdlib.h>

void wf_built_plan_measure(wf_built_plan_t *built)
{
    const wf_plan_t *p = &built->plan;
    for (int b = 0; b < 3; b++)
        built->transfer_max[b] = 0;
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const wf_step_t *s = &p->steps[i];
        uint8_t b;
        if (s->kind == WF_STEP_SEND)
            b = s->src.buf;
        else if (s->kind == WF_STEP_RECV)
            b = s->dst.buf;
        else
            continue;
        if (s->count > built->transfer_max[b])
            built->transfer_max[b] = s->count;
    }
}

void wf_built_plan_release(wf_built_plan_t *built)
{
    if (!built || __atomic_sub_fetch(&built->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    wf_plan_free(&built->plan);
    wf_plan_index_free(&built->deps);
    free(built);
}
