/*
 * plan.h - what an algorithm produces: a list of steps over buffers, with
 * dependencies, that the engine executes.  No I/O happens here.
 *
 * Steps
 *   SEND   peer, tag, src, count bytes
 *   RECV   peer, tag, dst, count bytes
 *   REDUCE dst = src op src2, count elements (dst may alias src or src2)
 *   COPY   dst = src, count bytes
 *   AVG    dst = dst / nranks, count elements (WEFT_AVG's final division)
 * A step starts when all of its dependencies (earlier steps) are done, so
 * an algorithm expresses both data flow and buffer reuse as dependencies.
 * Steps that become ready together start in plan order, and a local step
 * (REDUCE, COPY, AVG) runs to its end as it starts, before the transfers
 * behind it are posted.  So a local step that waits for nothing comes
 * after the transfers that wait for nothing, unless they need it, and a
 * large one goes in pieces after the sends it can follow (the broadcast
 * root's copy: test/plan/test_plan_order.c).
 * Tags are unique per (peer, direction) within one plan; the engine adds
 * the operation's sequence number.
 */
#ifndef WF_PLAN_H
#define WF_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

typedef enum {
    WF_STEP_SEND = 0,
    WF_STEP_RECV,
    WF_STEP_REDUCE,
    WF_STEP_COPY,
    WF_STEP_AVG
} wf_step_kind_t;

/* The buffers a plan refers to: the caller's two and the plan's scratch. */
typedef enum { WF_BUF_SEND = 0, WF_BUF_RECV, WF_BUF_SCRATCH } wf_buf_id_t;

typedef struct {
    uint8_t buf; /* wf_buf_id_t */
    uint64_t off; /* bytes */
} wf_bref_t;

#define WF_STEP_MAX_DEPS 3
#define WF_NO_DEP (-1)

typedef struct wf_step {
    uint8_t kind;
    int32_t peer;
    uint32_t tag;
    wf_bref_t dst;
    wf_bref_t src;
    wf_bref_t src2;
    uint64_t count; /* bytes for SEND/RECV/COPY, elements otherwise */
    int32_t deps[WF_STEP_MAX_DEPS];
} wf_step_t;

typedef struct wf_plan {
    wf_step_t *steps;
    uint32_t nsteps;
    uint32_t cap;
    uint64_t scratch_bytes; /* the engine allocates this much scratch */
    weft_dtype_t dtype;
    weft_op_t op;
    size_t elem_size;
    int nranks;     /* divisor of AVG steps */
    bool failed;    /* an allocation failed while building */
} wf_plan_t;

static inline wf_bref_t wf_bref(wf_buf_id_t buf, uint64_t off)
{
    wf_bref_t r = {(uint8_t)buf, off};
    return r;
}

void wf_plan_init(wf_plan_t *plan, weft_dtype_t dtype, weft_op_t op,
                  size_t elem_size, int nranks);
void wf_plan_free(wf_plan_t *plan);

/* Each adder returns the new step's index, or WF_NO_DEP when allocation
 * failed (plan->failed is then set and later adds are ignored).  Dependency
 * arguments may be WF_NO_DEP; they must name earlier steps. */
int32_t wf_plan_send(wf_plan_t *plan, int peer, uint32_t tag, wf_bref_t src,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2);
int32_t wf_plan_recv(wf_plan_t *plan, int peer, uint32_t tag, wf_bref_t dst,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2);
int32_t wf_plan_reduce(wf_plan_t *plan, wf_bref_t dst, wf_bref_t a,
                       wf_bref_t b, uint64_t count, int32_t d0, int32_t d1,
                       int32_t d2);
int32_t wf_plan_copy(wf_plan_t *plan, wf_bref_t dst, wf_bref_t src,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2);
int32_t wf_plan_avg(wf_plan_t *plan, wf_bref_t dst, uint64_t count,
                    int32_t d0, int32_t d1, int32_t d2);

/* Checks structural invariants (dependencies point backwards, peers in
 * range, buffer references inside the given sizes).  For tests and debug
 * builds; returns WEFT_ERR_INTERNAL with a message on the first violation. */
weft_status_t wf_plan_validate(const wf_plan_t *plan, int nranks,
                               uint64_t send_bytes, uint64_t recv_bytes);

/* Appends a step as it is (plan composition, algo/embed.c); the index, or
 * WF_NO_DEP when allocation failed. */
int32_t wf_plan_add(wf_plan_t *plan, const wf_step_t *step);

const char *wf_step_kind_name(wf_step_kind_t kind);

/* The reverse of the dependency lists, for executing a plan: pending[i] is
 * the number of unfinished dependencies of step i, and the steps that
 * depend on step i are list[off[i]] .. list[off[i + 1] - 1]. */
typedef struct {
    uint32_t *pending;
    uint32_t *off;
    uint32_t *list;
} wf_plan_index_t;

/* Fills `ix` for `plan`; WEFT_ERR_NO_MEMORY (nothing allocated) on
 * failure.  Release with wf_plan_index_free. */
weft_status_t wf_plan_index(const wf_plan_t *plan, wf_plan_index_t *ix);
void wf_plan_index_free(wf_plan_index_t *ix);

#endif /* WF_PLAN_H */
