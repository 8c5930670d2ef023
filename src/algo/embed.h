/*
 * embed.h - plans made of other algorithms' plans, for the node-aware
 * algorithms (hier_*.c): a phase is one or more collectives among a group
 * of ranks (the ranks of one machine, one rank per machine), each planned
 * by the algorithm the cost model picks for that group, and copied into
 * the whole plan with its peers, buffers, scratch and tags moved to where
 * they belong.  Every step of a phase waits for every step of the phase
 * before it on this rank; ranks meet only through their messages.
 */
#ifndef WF_ALGO_EMBED_H
#define WF_ALGO_EMBED_H

#include <stdint.h>

#include "algo/algo.h"

/* Tags of one embedded call: base + its own, each below this. */
#define WF_EMBED_TAG_SPAN (1u << 20)

typedef struct {
    wf_plan_t *plan;
    uint64_t scratch_top; /* scratch the calls so far use, each its own */
    int32_t join;         /* what the current phase waits for */
    uint32_t phase_from;  /* the current phase's first step */
} wf_embed_t;

/* One collective among a group: args in the group's terms (rank, size,
 * root are positions in `group`, whose entries are the real ranks), its
 * buffers where `send` and `recv` point in the whole call's, its tags
 * from tag_base (distinct per call, the same on every rank). */
typedef struct {
    wf_coll_args_t args;
    const int *group;
    wf_bref_t send, recv;
    uint32_t tag_base;
} wf_subcall_t;

void wf_embed_init(wf_embed_t *e, wf_plan_t *plan);

/* Plans the call with the cost model's choice and adds it to the current
 * phase.  WEFT_ERR_NO_MEMORY, or WEFT_ERR_INTERNAL when it needs more
 * tags than WF_EMBED_TAG_SPAN. */
weft_status_t wf_embed_call(wf_embed_t *e, const wf_subcall_t *s);

/* Room in the scratch for data that lives across phases: its offset. */
uint64_t wf_embed_reserve(wf_embed_t *e, uint64_t bytes);

/* Ends the phase: what is added next waits for all of it. */
void wf_embed_phase_end(wf_embed_t *e);

/* The time the cost model expects for the call, with the algorithm it
 * would pick (the same pick as wf_embed_call). */
double wf_embed_cost(const wf_coll_args_t *args);

/* The same for a call across machines that `sharing` such calls make at
 * once, one per rank of each machine, through each machine's one link:
 * its bytes take that many times as long to cross. */
double wf_embed_cost_shared(const wf_coll_args_t *args, int sharing);

/* A sub-call's arguments: the whole call's, as the group's rank `rank` of
 * `size` with `count` elements and `root`; intra: the group is one
 * machine's ranks (else one rank per machine).  Not in place: the caller
 * says where the sub-call's buffers alias. */
wf_coll_args_t wf_embed_args(const wf_coll_args_t *a, wf_coll_t coll,
                             size_t count, int rank, int size, int root,
                             bool intra);

#endif /* WF_ALGO_EMBED_H */
