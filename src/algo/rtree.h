/*
 * rtree.h - shared pieces of the rooted collectives (broadcast, reduce,
 * gather, scatter): binomial trees over ranks renumbered relative to the
 * root, the chunk grid, the cost terms, and the trivial plans (one rank,
 * zero elements).
 *
 * Relative rank vr = (rank - root) mod n, so the root is 0.  In the
 * binomial tree the parent of vr > 0 is vr with its lowest set bit
 * cleared; the children of vr are vr + 2^k for every 2^k below that bit
 * (every 2^k < n for the root), and the subtree of vr is the contiguous
 * range [vr, vr + wf_rtree_subtree(vr)) of relative ranks.  The tree has
 * depth ceil(log2 n) and the root has that many children.
 */
#ifndef WF_RTREE_H
#define WF_RTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"

struct wf_cost_terms;

/* Enough for every child of a binomial root of INT_MAX ranks. */
#define WF_RTREE_MAX_CHILDREN 32

static inline int wf_rtree_vrank(int rank, int root, int n)
{
    return (rank - root + n) % n;
}

static inline int wf_rtree_rank(int vr, int root, int n)
{
    return (vr + root) % n;
}

/* Relative parent of vr > 0. */
static inline int wf_rtree_parent(int vr)
{
    return vr & (vr - 1);
}

/* Number of relative ranks in the subtree rooted at vr. */
int wf_rtree_subtree(int vr, int n);

/* Children of vr, relative, in descending subtree size (largest first:
 * the order a broadcast or scatter serves them) or ascending (smallest
 * first: the order their reductions or blocks arrive).  Returns the count. */
int wf_rtree_children(int vr, int n, bool largest_first, int *children);

/* This rank's place in the binomial tree as absolute ranks: its parent
 * (-1 at the root) and its children, in the order wf_rtree_children
 * gives them.  Returns the number of children. */
int wf_rtree_place(const wf_coll_args_t *a, bool largest_first, int *parent,
                   int *children);

/* The messages that carry the blocks of relative rank vr's subtree
 * between vr and its parent in gather and scatter: one, or two where the
 * parent is the root, whose user buffer is in absolute rank order, and
 * the subtree wraps past rank n-1.  Message i (tag i) holds len[i]
 * blocks, in the root's buffer from absolute rank abs[i] on (abs is set
 * only where the parent is the root).  Returns the number of messages. */
int wf_rtree_subtree_msgs(int vr, int root, int n, int abs[2], int len[2]);

/* Elements per pipelined chunk: WEFT_CHUNK_SIZE rounded down to whole
 * elements, raised where needed so that a buffer has at most 2^28 chunks
 * (tags stay far below 2^32 even when a plan numbers two phases). */
size_t wf_rtree_chunk_elems(const wf_coll_args_t *a);

/* Elements per chunk of a chain (the pipelined chain broadcast and
 * reduce) for this call: the chunk count that minimises the chain's time
 * under the cost model, (n-2+C)(alpha + beta*B/C), C = sqrt((n-2) beta B /
 * alpha), in chunks no larger than wf_rtree_chunk_elems and no smaller
 * than 8 KiB (bcast_ring.c says why). */
size_t wf_chain_chunk_elems(const wf_coll_args_t *a);

/* The cost terms of a chain of n ranks (wf_chain_chunk_elems chunks) that
 * moves the vector from its first rank to its last, every rank between
 * forwarding each chunk as it lands: the broadcast chain's; the reduce
 * chain adds a reduction of every chunk it forwards. */
void wf_chain_terms(const wf_coll_args_t *a, struct wf_cost_terms *t);

/* Between machines a chain pays a round per hop, not per chunk (rtree.c
 * says what showed it). */
void wf_chain_rounds_per_hop(const wf_coll_args_t *a,
                             struct wf_cost_terms *t);

/* ceil(count / chunk_elems), at least 1 when count > 0. */
size_t wf_rtree_nchunks(size_t count, size_t chunk_elems);

/* For the cost model: the chunks of wf_rtree_chunk_elems the buffer is
 * cut into, at least one. */
double wf_rtree_cost_chunks(const wf_coll_args_t *a);

/* The cost terms of the binomial tree pipelined in chunks of
 * wf_rtree_chunk_elems: the root sends (or receives) every chunk to each
 * of its L = ceil(log2 n) children in turn, the deepest path is L hops,
 * and every other rank receives (or sends) each chunk once.  The
 * broadcast adds its waits, the reduce its reductions and waits. */
void wf_rtree_terms(const wf_coll_args_t *a, struct wf_cost_terms *t);

/* Plans for one rank: the local copy from `src` to `dst` (bytes) unless in
 * place, and nothing else.  Returns the plan's status. */
weft_status_t wf_rtree_build_single(const wf_coll_args_t *a, wf_plan_t *plan,
                                    wf_bref_t dst, wf_bref_t src,
                                    uint64_t bytes);

/* Zero elements on several ranks: one empty message along every edge of
 * the binomial tree (towards the leaves when `down`, else towards the
 * root, a parent waiting for its children first), tag 0, so that a rank
 * whose count differs is told by the signature check. */
weft_status_t wf_rtree_build_empty(const wf_coll_args_t *a, wf_plan_t *plan,
                                   bool down);

/* The cases every rooted collective plans alike: one rank
 * (wf_rtree_build_single of the whole buffer, SEND to RECV) and no
 * elements (wf_rtree_build_empty, towards the leaves when `down`).  True
 * when the plan is complete; *st then says whether it was built. */
bool wf_rtree_trivial(const wf_coll_args_t *a, wf_plan_t *plan, bool down,
                      weft_status_t *st);

/* A broadcast root's copy of bytes [off, off + len) of its send buffer
 * into its receive buffer (out of place; nothing elsewhere), after `sent`,
 * the root's first send of those bytes.  The root sends out of its send
 * buffer, so nothing waits for the copy; it goes piece by piece behind the
 * sends because one copy of the whole buffer ran before any of them and
 * delayed the root's first send by the copy's time
 * (bench/results/2026-12-01-root-copy-and-bounded-send-buffers.md, "The
 * broadcast root's copy"). */
void wf_rtree_bcast_root_copy(const wf_coll_args_t *a, wf_plan_t *plan,
                              int32_t sent, uint64_t off, uint64_t len);

/* The cost of the binomial gather and scatter: ceil(log2 n) rounds, the
 * root's link carrying every other rank's block (a copy or nothing on one
 * rank). */
double wf_rtree_blocks_cost(const wf_coll_args_t *a);

#endif /* WF_RTREE_H */
