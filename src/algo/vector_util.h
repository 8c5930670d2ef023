/*
 * vector_util.h - what the vector collectives' algorithms (allgatherv,
 * gatherv, scatterv, alltoallv, reduce_scatterv) share: the byte extent
 * of rank r's block from the per-rank counts and displacements, and how a
 * block is cut into messages.
 *
 * Every block, even an empty one, travels as at least one message.  Where
 * all ranks pass the same counts (allgatherv, reduce_scatterv), the
 * signature carries their digest, and a message in every step is what
 * lets a rank whose counts differ be told; where each rank knows only its
 * own side (gatherv, scatterv, alltoallv), a block is exactly one message,
 * so the receiver's length check compares the two sides' counts.
 */
#ifndef WF_ALGO_VECTOR_UTIL_H
#define WF_ALGO_VECTOR_UTIL_H

#include <stdint.h>

#include "algo/algo.h"

/* Rank r's block in the buffer `counts`/`displs` describe: *off bytes
 * from the start, the block's length returned. */
static inline uint64_t wf_v_block(const wf_coll_args_t *a,
                                  const size_t *counts, const size_t *displs,
                                  int r, uint64_t *off)
{
    *off = (uint64_t)displs[r] * a->elem_size;
    return (uint64_t)counts[r] * a->elem_size;
}

/* The messages a block of `bytes` is cut into at the chunk grid: at
 * least one. */
static inline uint64_t wf_v_chunks(uint64_t bytes, uint64_t grid)
{
    return bytes ? (bytes + grid - 1) / grid : 1;
}

/* The mean block of the call in bytes, for the cost model. */
static inline double wf_v_mean_block(const wf_coll_args_t *a)
{
    double total = 0;
    for (int r = 0; a->vcounts && r < a->size; r++)
        total += (double)a->vcounts[r];
    return total * (double)a->elem_size / (a->size > 0 ? a->size : 1);
}

#endif /* WF_ALGO_VECTOR_UTIL_H */
