/*
 * built.c - the reference count of a built plan (plan/built.h).
 */
#include "plan/built.h"

#include <stdlib.h>

void wf_built_plan_release(wf_built_plan_t *built)
{
    if (!built || __atomic_sub_fetch(&built->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    wf_plan_free(&built->plan);
    wf_plan_index_free(&built->deps);
    free(built);
}
