/*
 * built.h - a plan built for one call signature, with its dependency
 * index: what the plan cache (algo/plan_cache.h) hands out and the engine
 * runs.  Immutable once published and reference counted: the cache holds
 * one reference, every request running it another, so an evicted plan
 * lives until its last request ends.
 */
#ifndef WF_PLAN_BUILT_H
#define WF_PLAN_BUILT_H

#include <stdint.h>

#include "plan/coll.h"
#include "plan/plan.h"

struct wf_algo;

typedef struct wf_built_plan {
    int refs; /* atomic */
    wf_coll_args_t args; /* the key, compared whole */
    uint64_t hash;
    const struct wf_algo *algo; /* the algorithm that built it (algo/algo.h) */
    const char *algo_name;      /* its name and id, for the engine: */
    uint8_t algo_id;            /* signatures and history */
    wf_plan_t plan;
    wf_plan_index_t deps; /* deps.pending: the counts every run starts from */
    /* The largest transfer that reads or writes each buffer (wf_buf_id_t),
     * in bytes: what decides whether the engine registers the buffer for
     * a run (sched/reg.c), found once per plan rather than per call. */
    uint64_t transfer_max[3];
} wf_built_plan_t;

/* Fills built->transfer_max from the plan's steps. */
void wf_built_plan_measure(wf_built_plan_t *built);

/* A new plan (one reference) equal to `src` but with every transfer to or
 * from `peer`: how a receive from any source gets its plan once the
 * engine knows the sender (sched/p2p_seq.c).  NULL when out of memory. */
wf_built_plan_t *wf_built_plan_retarget(const wf_built_plan_t *src,
                                        int peer);

/* Drops one reference; the last frees the plan and its index. */
void wf_built_plan_release(wf_built_plan_t *built);

#endif /* WF_PLAN_BUILT_H */
