/*
 * allreduce_util.h - pieces shared by the allreduce algorithms: the chunk
 * size, the non-power-of-two fold and per-unit data-flow tracking for the
 * exchange algorithms.  The trivial plans are every unrooted collective's
 * (wf_unr_trivial in unrooted_util.h); the pipelined binary tree is in
 * allreduce_tree.h.
 */
#ifndef WF_ALLREDUCE_UTIL_H
#define WF_ALLREDUCE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"

/* Elements per pipelined chunk (WEFT_CHUNK_SIZE, at least one). */
size_t wf_arutil_chunk_elems(const wf_coll_args_t *a);

/*
 * The fold that turns `size` ranks into p = 2^k participants: of the first
 * 2*rem ranks (rem = size - p) each even rank hands its whole vector to the
 * odd rank above it and later receives the result from it; the odd ranks
 * and the ranks from 2*rem on take part as virtual ranks 0..p-1, in the
 * order of their real ranks (so a lower virtual rank always stands for
 * lower real ranks, which keeps reduction orders canonical).
 */
typedef struct {
    int p;       /* participants: the largest power of two <= size */
    int rem;     /* size - p */
    int vrank;   /* this rank's virtual rank, -1 when it folds out */
    int partner; /* the real rank this one folds with, -1 if none */
} wf_arfold_t;

void wf_arfold_init(wf_arfold_t *f, int rank, int size);
int wf_arfold_real(const wf_arfold_t *f, int vrank);

/*
 * Data-flow state of one unit (a range of elements that always travels as
 * one message) for the exchange algorithms.  A unit's current value lives
 * in SEND until a step writes it to RECV; received partner data lands in
 * SCRATCH at the unit's own element offset less sc_base (an algorithm that
 * only ever receives into part of the vector needs less scratch), or, once
 * wf_arx_use_slots has been called for more than WF_ARX_SLOTS units, in
 * slot u mod WF_ARX_SLOTS of one unit each: as in the ring, a unit is
 * then reduced while its slot is still in the core's cache, where a
 * receive into half a vector of scratch has gone out to memory by the
 * time it is reduced (with the single copy rhd on 2 ranks was slower than
 * the ring without slots and level with them;
 * bench/results/2026-11-27-rhd-scratch-slots.md).  The helpers below add
 * the dependencies every step needs:
 *   writer  - the last step that wrote RECV[unit] (what readers wait for);
 *   reader  - the last send that read RECV[unit] memory since then (what
 *             the next write waits for; in these algorithms a unit that
 *             is read twice is never written again);
 *   sc_user - the last reduce that read SCRATCH[unit] (what the next
 *             receive into it waits for); with slots, slot_user[slot]
 *             plays that part for the slot.
 */
typedef struct {
    int32_t writer, reader, sc_user;
} wf_arunit_t;

#define WF_ARX_SLOTS 16

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    wf_arunit_t *units;
    size_t nunits;
    size_t sc_base; /* element whose partner data lands at scratch 0 */
    size_t slot_elems; /* elements per scratch slot; 0: no slots */
    int32_t slot_user[WF_ARX_SLOTS]; /* the last reduce that read a slot */
} wf_arx_t;

bool wf_arx_init(wf_arx_t *x, const wf_coll_args_t *a, wf_plan_t *plan,
                 size_t nunits);
void wf_arx_fini(wf_arx_t *x);
/* Receives into WF_ARX_SLOTS slots of unit_elems elements (no unit is
 * longer) when there are more units than slots; call before the first
 * wf_arx_recv_reduce.  Returns the scratch bytes the plan needs:
 * `unslotted` when slots are not used. */
uint64_t wf_arx_use_slots(wf_arx_t *x, size_t unit_elems,
                          uint64_t unslotted);

/* Sends the unit's current value; returns the step. */
int32_t wf_arx_send(wf_arx_t *x, size_t u, size_t off, size_t len, int peer,
                    uint32_t tag);
/* Receives the peer's value of the unit into scratch and reduces it with
 * the current one into RECV: peer op own when peer_first, else own op
 * peer.  Returns the reduce. */
int32_t wf_arx_recv_reduce(wf_arx_t *x, size_t u, size_t off, size_t len,
                           int peer, uint32_t tag, bool peer_first);
/* Receives a final value of the unit straight into RECV. */
int32_t wf_arx_recv(wf_arx_t *x, size_t u, size_t off, size_t len, int peer,
                    uint32_t tag);
/* WEFT_AVG's division of the unit, which must already be in RECV. */
void wf_arx_avg(wf_arx_t *x, size_t u, size_t off, size_t len);

#endif /* WF_ALLREDUCE_UTIL_H */
