/*
 * plan_cache.h - plans built once per call signature and shared.
 *
 * An algorithm's plan is a pure function of the call's arguments
 * (wf_coll_args_t: collective, count, dtype, op, root, ranks, chunk size,
 * in place or not, the machine's shape), and so is the algorithm the cost
 * model picks for them.  Buffers enter a plan only as WF_BUF_SEND/RECV/
 * SCRATCH references, so a training loop that calls the same allreduce
 * every step can run one plan every time.  Choosing, building and indexing
 * it on every call was a large share of a small call's user-space work
 * (bench/results/2026-11-26-small-messages-first-pass.md).
 *
 * A built plan is immutable once published and reference counted: the
 * cache holds one reference, every request running it another, so an
 * evicted plan lives until its last request ends (and a request may
 * outlive its communicator).
 */
#ifndef WF_PLAN_CACHE_H
#define WF_PLAN_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "algo/algo.h"
#include "plan/built.h"



/* Plans of more steps are built per call and not kept: their operations
 * move enough data that building is a small share of their time, and a
 * full cache of them would hold megabytes. */
#define WF_PLAN_CACHE_MAX_STEPS 4096

/* Lookups scan every entry. */
#define WF_PLAN_CACHE_MAX_ENTRIES 256

typedef struct wf_plan_cache {
    pthread_mutex_t lock;
    int cap;                  /* entries; 0: every call builds its own */
    wf_built_plan_t **entry;  /* cap slots, NULL when free */
    uint64_t *used;           /* tick of each entry's last hit */
    uint64_t tick;
    uint64_t hits, misses;    /* for tests */
} wf_plan_cache_t;

/* `entries` is WEFT_PLAN_CACHE.  Never fails: without memory for the
 * slots the cache is simply off. */
void wf_plan_cache_init(wf_plan_cache_t *cache, int entries);
/* Drops the cache's references; plans still running live on. */
void wf_plan_cache_fini(wf_plan_cache_t *cache);

/* The plan for `args` with the algorithm `algo_spec` (WEFT_ALGO) picks:
 * the cached one, or a new one (selected, built, indexed, then cached
 * when it is small enough).  On success *out holds a reference for the
 * caller to release with wf_built_plan_release.  Errors are those of
 * wf_algo_select and of the algorithm's build. */
weft_status_t wf_plan_cache_get(wf_plan_cache_t *cache,
                                const wf_coll_args_t *args,
                                const char *algo_spec,
                                wf_built_plan_t **out);


#endif /* WF_PLAN_CACHE_H */
