/*
 * deps.c - folding dependencies into the three a step holds (deps.h).
 */
#include "algo/deps.h"

void wf_deps_add(wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor,
                 int32_t step)
{
    if (step == WF_NO_DEP)
        return;
    for (int i = 0; i < d->n; i++)
        if (d->d[i] == step)
            return;
    if (d->n == WF_STEP_MAX_DEPS) {
        int32_t j = wf_plan_copy(plan, anchor, anchor, 0, d->d[0], d->d[1],
                                 d->d[2]);
        *d = wf_deps_none();
        d->d[d->n++] = j;
    }
    d->d[d->n++] = step;
}

int32_t wf_deps_join(const wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor)
{
    if (d->n <= 1)
        return d->d[0];
    return wf_plan_copy(plan, anchor, anchor, 0, d->d[0], d->d[1], d->d[2]);
}
