/*
 * linear_util.h - the root's side of the linear reductions (allreduce and
 * reduce linear): every other rank's vector comes straight to the root,
 * which reduces them all itself.
 */
#ifndef WF_LINEAR_UTIL_H
#define WF_LINEAR_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"

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
