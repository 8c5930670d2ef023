/*
 * sim.h - the schedule simulator for tests: runs the plans of every rank of
 * one collective in a single thread, executing a random ready step each
 * time, with real data, then checks every rank's result against a serial
 * reference.  Sends copy their data when they execute, so a missing
 * dependency (reading before a write, reusing a buffer still needed) gives
 * a wrong result under some order, and a plan that cannot finish is a
 * deadlock.  Plans must give each message between one (sender, receiver)
 * pair a distinct tag.
 */
#ifndef WF_SIM_H
#define WF_SIM_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"

typedef struct {
    wf_coll_t coll;
    int size;
    size_t count;       /* as the caller of the public API passes it */
    weft_dtype_t dtype;
    weft_op_t op;
    int root;
    bool in_place;
    size_t chunk_bytes;
    /* Machines, for the node-aware algorithms: 0 for none, else this many
     * ranks on each (the last may have fewer), consecutive ranks or, with
     * interleave, rank r on machine r % machines. */
    int ranks_per_node;
    bool interleave;
} wf_sim_case_t;

/* Runs and checks one case; false (nothing run) when the algorithm does
 * not support it.  Fails the test on a wrong element or a deadlock. */
bool wf_sim_check(const wf_algo_t *algo, const wf_sim_case_t *c,
                  unsigned seed);

/* The standard matrix for one algorithm (a node-aware one on machines of
 * 2 and 3 ranks, consecutive and interleaved): world sizes 1..max_size plus 13
 * and 16, counts 0, 1, size-1, size+1, 37 and a few chunks' worth (small
 * chunks), int32/float32/int8/bfloat16, every op for reducing collectives,
 * every root up to 9 ranks (three beyond), in place and out of place.  For a
 * barrier it checks that no rank passes before every rank entered. */
void wf_sim_matrix(const wf_algo_t *algo, int max_size);

/* The barrier property alone: with one rank held back, no other rank
 * completes its plan. */
void wf_sim_check_barrier(const wf_algo_t *algo, int size);

/* A vector collective's case, int32 elements: counts[r] for rank r's
 * block (allgatherv, gatherv, scatterv, reduce_scatterv), or for
 * alltoallv a size x size matrix, counts[from * size + to] (symmetric
 * for in place).  Blocks lie in reverse rank order with gaps, which must
 * stay untouched. */
typedef struct {
    wf_coll_t coll;
    int size;
    weft_op_t op;     /* reduce_scatterv: WEFT_SUM or WEFT_MAX */
    int root;
    bool in_place;
    size_t chunk_bytes;
    const size_t *counts;
} wf_sim_vcase_t;

/* Runs and checks one vector case as wf_sim_check does. */
bool wf_sim_check_vector(const wf_algo_t *algo, const wf_sim_vcase_t *c,
                         unsigned seed);

#endif /* WF_SIM_H */
