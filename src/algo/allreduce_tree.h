/*
 * allreduce_tree.h - the pipelined binary tree that the tree and dbtree
 * allreduce algorithms share (implemented in allreduce_tree.c).
 */
#ifndef WF_ALLREDUCE_TREE_H
#define WF_ALLREDUCE_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"

/*
 * Binary trees in in-order numbering over positions 0..n-1: position 0 is
 * the root with one child (the largest power of two below n); a position x
 * with lowest set bit b has children x - b/2 and x + s, s the largest
 * power of two below b with x + s < n.  Odd positions are leaves, so the
 * second tree of a double binary tree (variant 1: positions mirrored for
 * even n, shifted by one for odd n) has the first one's leaves inside.
 * A node's reduction order is child[0], own data, child[1].
 */
typedef struct {
    int parent;   /* real rank, -1 at the root */
    int child[2]; /* real ranks, -1 when absent */
} wf_artree_node_t;

void wf_artree_node(int n, int rank, int variant, wf_artree_node_t *node);
/* Edges from the root to the deepest leaf. */
int wf_artree_depth(int n);

/* Chunks a receiving node can hold per child (the pipeline's depth). */
#define WF_ARTREE_SLOTS 8

/*
 * One pipelined tree carrying elements [start, start + count): every chunk
 * is reduced up to the root, divided there for WEFT_AVG, and broadcast
 * down; chunk c+1 climbs while chunk c descends.  Tags are 4 * chunk +
 * 2 * id + (0 up, 1 down), so two trees (id 0 and 1) never collide.
 */
typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    wf_artree_node_t node;
    size_t start, count, chunk, nchunks;
    size_t nslots;      /* receive slots per child */
    uint32_t id;
    uint64_t scratch_off, slot_bytes;
    int32_t *slot_user; /* [child][slot]: the reduce that last read it */
} wf_artree_t;

/* Sets up a tree using scratch from scratch_off; returns the scratch
 * bytes it needs, or UINT64_MAX when out of memory. */
uint64_t wf_artree_init(wf_artree_t *t, const wf_coll_args_t *a,
                        wf_plan_t *plan, const wf_artree_node_t *node,
                        size_t start, size_t count, uint32_t id,
                        uint64_t scratch_off);
/* Emits every step of chunk c (c < t->nchunks). */
void wf_artree_chunk(wf_artree_t *t, size_t c);
void wf_artree_fini(wf_artree_t *t);

#endif /* WF_ALLREDUCE_TREE_H */
