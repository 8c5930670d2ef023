/*
 * linear_util.h - what the linear algorithms (broadcast, reduce and
 * allreduce linear) share: where the cost model prices them, the cost
 * terms of a root that serves every other rank itself, and the root's
 * side of the linear reductions, where every other rank's vector comes
 * straight to the root, which reduces them all itself.
 */
#ifndef WF_LINEAR_UTIL_H
#define WF_LINEAR_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"
#include "algo/cost.h"

/* The cost of a linear algorithm whose terms are `terms`, where every
 * rank shares one machine and the ranks outnumber its cores, and INFINITY
 * elsewhere: there the root's n - 1 messages (and reductions) one after
 * the other are a critical path that the model's rounds do not see (each
 * algorithm's linear_cost says what showed it). */
double wf_linear_cost(const wf_coll_args_t *a, wf_cost_terms_fn terms);

/* The cost terms of a root that exchanges every chunk (of
 * wf_rtree_chunk_elems) with each of the n - 1 other ranks itself: its
 * link is the critical path, one round per chunk, and that work is its
 * own.  No message waits for a receive of the call.  The linear
 * broadcast's; the linear reduce adds the root's reductions. */
void wf_linear_rooted_terms(const wf_coll_args_t *a, wf_cost_terms_t *t);

/* Scratch slots per peer at the root: chunk c + 1 of a peer can land
 * while chunk c is reduced. */
#define WF_LINEAR_SLOTS 2

/*
 * Plans the root's part in chunks of `chunk` elements: chunk c of every
 * other rank is received (tag c, or 2c when `send_back`) into that rank's
 * scratch slot c mod WF_LINEAR_SLOTS (a receive waits for the reduce that
 * last read its slot), the root's own chunk and then the others, in rank
 * order, are reduced into RECV (each reduce after the one before), and
 * WEFT_AVG divides once.  With `send_back` (allreduce) the result chunk
 * then goes to every other rank with tag 2c + 1.  Sets the plan's scratch
 * size; marks the plan failed when out of memory.
 */
void wf_linear_root(const wf_coll_args_t *a, wf_plan_t *plan, size_t chunk,
                    size_t nchunks, bool send_back);

#endif /* WF_LINEAR_UTIL_H */
