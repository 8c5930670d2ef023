/*
 * deps.h - more dependencies than the WF_STEP_MAX_DEPS (three) a step
 * holds: the surplus is folded into copies of nothing, each of which
 * waits for three steps and so stands for all of them (the engine runs an
 * empty copy as soon as its dependencies are done).  `anchor` is any
 * buffer reference that exists on this rank, for those copies: the engine
 * passes its pointer to memmove, even for 0 bytes.
 */
#ifndef WF_ALGO_DEPS_H
#define WF_ALGO_DEPS_H

#include <stdint.h>

#include "plan/plan.h"

/* The steps a later step waits for: at most three after folding. */
typedef struct {
    int32_t d[WF_STEP_MAX_DEPS];
    int n;
} wf_deps_t;

static inline wf_deps_t wf_deps_none(void)
{
    wf_deps_t d = {{WF_NO_DEP, WF_NO_DEP, WF_NO_DEP}, 0};
    return d;
}

/* Adds `step` (nothing for WF_NO_DEP or a step already there); a fourth
 * one folds the three before it into an empty copy first. */
void wf_deps_add(wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor,
                 int32_t step);

/* One step that completes when all of *d are done: WF_NO_DEP for none,
 * the step itself for one, else an empty copy that waits for them. */
int32_t wf_deps_join(const wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor);

#endif /* WF_ALGO_DEPS_H */
