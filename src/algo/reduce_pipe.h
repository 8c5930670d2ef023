/*
 * reduce_pipe.h - a reduction pipelined in chunks up a tree to the root,
 * whatever the tree's shape.  The binomial reduce (reduce_tree.c) and the
 * chain (reduce_ring.c) differ only in who is whose child and in how
 * large a chunk is; the plan of one rank is built here from its place in
 * the tree.
 */
#ifndef WF_REDUCE_PIPE_H
#define WF_REDUCE_PIPE_H

#include <stddef.h>

#include "algo/algo.h"
#include "algo/rtree.h"

/* One rank's place in the tree, in absolute ranks. */
typedef struct {
    int parent; /* -1 at the root */
    int nkids;
    /* In the order their sums are combined (the order they are ready). */
    int kids[WF_RTREE_MAX_CHILDREN];
    size_t chunk_elems; /* elements per pipelined chunk, >= 1 */
} wf_reduce_pipe_t;

/* The plan of rank a->rank: the pipelined reduction for a->count > 0
 * elements on a->size > 1 ranks, wf_rtree_trivial's plan otherwise (one
 * rank, no elements: the binomial tree's empty messages); `algo` names
 * the plan in its status. */
weft_status_t wf_reduce_pipe_build(const wf_algo_t *algo,
                                   const wf_coll_args_t *a, wf_plan_t *plan,
                                   const wf_reduce_pipe_t *shape);

#endif /* WF_REDUCE_PIPE_H */
