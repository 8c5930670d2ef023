/*
 * algo.h - algorithm descriptors.  An algorithm turns one collective call
 * into a plan (plan/plan.h); it never does I/O and never includes
 * transport headers.  Every algorithm is one file and one line in
 * algo_list.h.
 */
#ifndef WF_ALGO_H
#define WF_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/coll.h"
#include "plan/plan.h"
#include "weft.h"

struct wf_cost_terms;

typedef struct wf_algo {
    const char *name;
    wf_coll_t coll;
    uint8_t id; /* unique, travels in signatures */
    bool node_aware; /* works in phases inside and across machines
                      * (hier_*.c) */
    bool (*supports)(const wf_coll_args_t *args);
    /* Estimated time in microseconds (alpha-beta model), for selection. */
    double (*cost)(const wf_coll_args_t *args);
    /* What cost() evaluates, where the algorithm describes itself that
     * way (the collectives with more than one algorithm; NULL elsewhere):
     * struct wf_cost_terms in cost.h.  Meaningful from two ranks on;
     * cost() itself answers for one rank. */
    void (*cost_terms)(const wf_coll_args_t *args,
                       struct wf_cost_terms *terms);
    weft_status_t (*build)(const wf_coll_args_t *args, wf_plan_t *plan);
} wf_algo_t;

#define WF_ALGO_DECLARE(sym) extern const wf_algo_t wf_algo_##sym;
#include "algo/algo_list.h"
#undef WF_ALGO_DECLARE

/* Picks the algorithm for `args`.  `spec` is WEFT_ALGO: "auto" (or empty)
 * uses the cost model; "NAME" applies to every collective that has an
 * algorithm of that name (the others use the cost model);
 * "allreduce:rhd,broadcast:tree" names one per collective, and a name there
 * that does not exist for that collective or does not support the call
 * fails with WEFT_ERR_UNSUPPORTED and a message.  The choice is logged at
 * info level once per collective and size class. */
weft_status_t wf_algo_select(const wf_coll_args_t *args, const char *spec,
                             const wf_algo_t **algo);

/* The algorithm the cost model picks for `args` (NULL when none supports
 * it), and its estimate in *cost (may be NULL); no log line. */
const wf_algo_t *wf_algo_cheapest(const wf_coll_args_t *args, double *cost);

/* The end of a build: WEFT_OK, or WEFT_ERR_NO_MEMORY when an allocation
 * failed while building (`failed`), logged once naming the algorithm. */
weft_status_t wf_algo_build_status(const wf_algo_t *algo,
                                   const wf_coll_args_t *args, bool failed);

/* Names of the algorithms registered for `coll`, space separated. */
const char *wf_algo_names(wf_coll_t coll);

/* Every registered algorithm (for the simulator and tests). */
const wf_algo_t *const *wf_algo_registry(size_t *count);

/* Splits `count` elements into `parts` near-equal segments; segment i
 * starts at *start (elements) and has *len elements. */
void wf_algo_segment(size_t count, int parts, int i, size_t *start,
                     size_t *len);

#endif /* WF_ALGO_H */
