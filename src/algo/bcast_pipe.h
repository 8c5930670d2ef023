/*
 * bcast_pipe.h - a broadcast pipelined in chunks down a tree from the
 * root, whatever the tree's shape.  The binomial broadcast
 * (bcast_tree.c), the chain (bcast_ring.c) and the linear broadcast
 * (bcast_linear.c, a root whose children are all the others) differ only
 * in who is whose child and in how large a chunk is; the plan of one rank
 * is built here from its place in the tree.  The mirror image of
 * reduce_pipe.h.
 */
#ifndef WF_BCAST_PIPE_H
#define WF_BCAST_PIPE_H

#include <stddef.h>

#include "algo/algo.h"

/* One rank's place in the tree, in absolute ranks. */
typedef struct {
    int parent;        /* -1 at the root */
    int nkids;
    const int *kids;   /* in the order each chunk is sent to them */
    size_t chunk_elems; /* elements per pipelined chunk, >= 1 */
} wf_bcast_pipe_t;

/*
 * Plans the chunks of rank a->rank, at least one (an empty one for zero
 * elements, so that one message still travels along every edge).  Chunk c
 * travels with tag c: it is received from the parent into RECV, then
 * sent to every child, out of SEND on the root and, after that receive,
 * out of RECV elsewhere; the root copies it into RECV (out of place)
 * after its first send (wf_rtree_bcast_root_copy).  Every region of RECV
 * is written once, so nothing else waits.  Marks the plan failed when out
 * of memory; the caller reports the status.
 */
void wf_bcast_pipe_build(const wf_coll_args_t *a, wf_plan_t *plan,
                         const wf_bcast_pipe_t *shape);

#endif /* WF_BCAST_PIPE_H */
