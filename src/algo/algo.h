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
#include <stdint.h>

#include "sched/plan.h"
#include "weft.h"

/* Collective kinds; the values travel in message signatures. */
typedef enum {
    WF_COLL_ALLREDUCE = 1,
    WF_COLL_SEND = 2,
    WF_COLL_RECV = 3,
    WF_COLL_BROADCAST = 4,
    WF_COLL_REDUCE = 5,
    WF_COLL_ALLGATHER = 6,
    WF_COLL_REDUCE_SCATTER = 7,
    WF_COLL_ALLTOALL = 8,
    WF_COLL_BARRIER = 9,
    WF_COLL_GATHER = 10,
    WF_COLL_SCATTER = 11,
    WF_COLL_MAX
} wf_coll_t;

/*
 * Everything an algorithm may look at.  `count` is the count the caller
 * passed, whose meaning depends on the collective (see weft.h): elements of
 * the whole buffer for allreduce, broadcast and reduce, of one rank's block
 * for allgather, reduce-scatter, alltoall (per peer), gather and scatter.
 * Buffer layouts in the plan (WF_BUF_SEND, WF_BUF_RECV) follow weft.h;
 * wf_coll_buffer_bytes gives their sizes.
 *
 * in_place is set when the caller's buffers alias the way weft.h defines
 * in-place for that collective (allgather: sendbuf == recvbuf + rank *
 * block; reduce-scatter: recvbuf == sendbuf + rank * block; gather and
 * scatter: the same on the root; the others: sendbuf == recvbuf).  The
 * plan must then be correct for that aliasing, and may skip the copy of
 * the rank's own block.
 */
typedef struct wf_coll_args {
    wf_coll_t coll;
    size_t count;
    weft_dtype_t dtype;
    weft_op_t op;       /* reducing collectives only */
    size_t elem_size;
    int peer;           /* send/recv */
    int root;           /* broadcast, reduce, gather, scatter */
    int rank;
    int size;
    size_t chunk_bytes; /* WEFT_CHUNK_SIZE */
    bool in_place;
    int local_size;     /* ranks sharing this machine (0: unknown, 1) */
    int host_cores;     /* its CPUs (0: unknown, enough) */
    int link_mbps;      /* WEFT_LINK_MBPS (0: the cost model's own) */
    size_t single_copy_min; /* the transport copies messages of this many
                             * bytes or more once between ranks on one
                             * machine (WEFT_TCP_CMA_MIN); 0: never */
} wf_coll_args_t;

/* Sizes in bytes of the send and receive buffers the plan may touch on
 * this rank (0 for a buffer the rank does not use). */
void wf_coll_buffer_bytes(const wf_coll_args_t *args, uint64_t *send_bytes,
                          uint64_t *recv_bytes);

/* Whether the collective combines values with args->op. */
bool wf_coll_reduces(wf_coll_t coll);

struct wf_cost_terms;

typedef struct wf_algo {
    const char *name;
    wf_coll_t coll;
    uint8_t id; /* unique, travels in signatures */
    bool (*supports)(const wf_coll_args_t *args);
    /* Estimated time in microseconds (alpha-beta model), for selection. */
    double (*cost)(const wf_coll_args_t *args);
    /* What cost() evaluates, where the algorithm describes itself that
     * way (the collectives with more than one algorithm; NULL elsewhere):
     * struct wf_cost_terms in cost.h. */
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

const char *wf_coll_name(wf_coll_t coll);

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
