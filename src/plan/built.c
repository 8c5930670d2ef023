/*
 * built.c - a built plan's measures, copies and reference count
 * (plan/built.h).
 */
#include "plan/built.h"

#include <stdlib.h>
#include <string.h>

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

wf_built_plan_t *wf_built_plan_retarget(const wf_built_plan_t *src, int peer)
{
    wf_built_plan_t *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    /* Field by field: src->refs changes under other threads' feet. */
    b->refs = 1;
    b->args = src->args;
    b->args.peer = peer;
    b->hash = src->hash;
    b->algo = src->algo;
    b->algo_name = src->algo_name;
    b->algo_id = src->algo_id;
    b->plan = src->plan;
    memcpy(b->transfer_max, src->transfer_max, sizeof(b->transfer_max));
    b->plan.cap = src->plan.nsteps;
    b->plan.steps = malloc((src->plan.nsteps ? src->plan.nsteps : 1) *
                           sizeof(wf_step_t));
    if (!b->plan.steps) {
        free(b);
        return NULL;
    }
    memcpy(b->plan.steps, src->plan.steps,
           src->plan.nsteps * sizeof(wf_step_t));
    for (uint32_t i = 0; i < b->plan.nsteps; i++) {
        wf_step_t *s = &b->plan.steps[i];
        if (s->kind == WF_STEP_SEND || s->kind == WF_STEP_RECV)
            s->peer = peer;
    }
    if (wf_plan_index(&b->plan, &b->deps) != WEFT_OK) {
        free(b->plan.steps);
        free(b);
        return NULL;
    }
    return b;
}
