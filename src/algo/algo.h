/*
 * algo.h - algorithm descriptors.  An algorithm turns one collective call
 * into a plan (sched/plan.h); it never does I/O and never includes
 * transport headers.  Every algorithm is one file and one line in
 * algo_list.h.
 */
#ifndef WF_ALGO_H
#define WF_ALGO_H

#include <stdbool.h>
#include <stddef.h>

#include "sched/plan.h"
#include "weft.h"

/* Collective kinds; the values travel in message signatures. */
typedef enum {
    WF_COLL_ALLREDUCE = 1,
    WF_COLL_SEND = 2,
    WF_COLL_RECV = 3,
    WF_COLL_MAX
} wf_coll_t;

/* Everything an algorithm may look at. */
typedef struct wf_coll_args {
    wf_coll_t coll;
    size_t count;
    weft_dtype_t dtype;
    weft_op_t op;
    size_t elem_size;
    int peer;       /* send/recv */
    int rank;
    int size;
    size_t chunk_bytes; /* WEFT_CHUNK_SIZE */
    bool in_place;
} wf_coll_args_t;

typedef struct wf_algo {
    const char *name;
    wf_coll_t coll;
    uint8_t id; /* unique, travels in signatures */
    bool (*supports)(const wf_coll_args_t *args);
    /* Estimated time in microseconds (alpha-beta model), for selection. */
    double (*cost)(const wf_coll_args_t *args);
    weft_status_t (*build)(const wf_coll_args_t *args, wf_plan_t *plan);
} wf_algo_t;

#define WF_ALGO_DECLARE(sym) extern const wf_algo_t wf_algo_##sym;
#include "algo/algo_list.h"
#undef WF_ALGO_DECLARE

/* Picks the algorithm for `args`: the override in `spec` (WEFT_ALGO syntax:
 * "ring" or "allreduce:ring,broadcast:tree"; "auto" or empty = cost model)
 * when it names one that supports the call, else the cheapest.  An override
 * naming an unknown or unsupported algorithm fails with
 * WEFT_ERR_UNSUPPORTED and a message. */
weft_status_t wf_algo_select(const wf_coll_args_t *args, const char *spec,
                             const wf_algo_t **algo);

const char *wf_coll_name(wf_coll_t coll);

/* Splits `count` elements into `parts` near-equal segments; segment i
 * starts at *start (elements) and has *len elements. */
void wf_algo_segment(size_t count, int parts, int i, size_t *start,
                     size_t *len);

#endif /* WF_ALGO_H */
