/*
 * allreduce_tree.c - pipelined binary-tree allreduce: reduce up to rank 0,
 * broadcast back down, chunk by chunk so the tree streams.
 *
 * The tree is the in-order binary tree of allreduce_tree.h with ranks as
 * positions (rank 0 is the root with a single child; odd ranks are
 * leaves); its depth is D = floor(log2(size - 1)) + 1.  The vector is cut
 * into chunks of WEFT_CHUNK_SIZE.  For each chunk a node receives its
 * children's partial sums, reduces them with its own data in the order
 * child[0], own, child[1] (so with ranks as positions the whole reduction
 * runs in rank order), sends the partial to its parent and later receives
 * the final chunk from it, which it forwards to its children.  The root
 * divides each chunk once for WEFT_AVG before sending it down.  While chunk
 * c is on its way down, chunk c+1 climbs: after a fill of 2D chunk times a
 * node streams one chunk per step.
 *
 * Dependencies (wf_artree_chunk below): a child's chunk is received into
 * one of WF_ARTREE_SLOTS scratch slots per child, and the receive waits
 * for the reduce that last read that slot (chunk c - slots);
 * the two reduces of a chunk form a chain; the send up waits for the last
 * reduce; the receive of the final chunk into RECV waits for the send up
 * (which read that memory, in place or after a reduce); sends down wait for
 * that receive (or the root's last reduce or AVG).
 *
 * Tags: 4 * chunk + 0 up, 4 * chunk + 1 down (tree id 0).
 *
 * Cost: an interior node sends one chunk up and two down and reduces two
 * per chunk; with C = min(bytes, chunk size) the pipeline needs D - 1
 * extra chunk times to fill:
 *   wf_cost(2D, 3 * (bytes + (D-1) * C), 2 * (bytes + (D-1) * C)).
 * Fewer rounds than the ring but more bytes per rank than ring, rhd or
 * dbtree, and more rounds than rd: with the model's constants the cost
 * model never picks it on a flat network.  It is there for WEFT_ALGO (a
 * hierarchical network may favour it), for comparison, and as the base of
 * dbtree.
 */
#include <stdlib.h>

#include "algo/allreduce_tree.h"
#include "algo/allreduce_util.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

/* ------------------------------------------------------------------ */
/* In-order binary trees                                              */
/* ------------------------------------------------------------------ */

/* Children of position x among n (see the header). */
static void btree_children(int n, int x, int *lo, int *hi)
{
    int b = x & -x, s;
    *lo = *hi = -1;
    if (x == 0) {
        /* The root covers everything: one child, the top power of two. */
        for (s = 1; s * 2 <= n - 1; s *= 2)
            ;
        *hi = n > 1 ? s : -1;
        return;
    }
    if (b >= 2)
        *lo = x - b / 2;
    for (s = b / 2; s >= 1 && x + s > n - 1; s /= 2)
        ;
    if (s >= 1)
        *hi = x + s;
}

/* Parent of position x: walk down from the root; a node's left subtree
 * holds the smaller positions, its right one the larger. */
static int btree_parent(int n, int x)
{
    int y = 0;
    while (y != x) {
        int lo, hi;
        btree_children(n, y, &lo, &hi);
        int next = x < y ? lo : hi;
        if (next == x)
            return y;
        y = next;
    }
    return -1;
}

static int tree_pos(int n, int rank, int variant)
{
    if (variant == 0)
        return rank;
    return n % 2 == 0 ? n - 1 - rank : (rank + n - 1) % n;
}

static int tree_rank(int n, int pos, int variant)
{
    if (variant == 0 || pos < 0)
        return pos;
    return n % 2 == 0 ? n - 1 - pos : (pos + 1) % n;
}

void wf_artree_node(int n, int rank, int variant, wf_artree_node_t *node)
{
    int x = tree_pos(n, rank, variant), lo, hi;
    btree_children(n, x, &lo, &hi);
    node->parent = tree_rank(n, x ? btree_parent(n, x) : -1, variant);
    node->child[0] = tree_rank(n, lo, variant);
    node->child[1] = tree_rank(n, hi, variant);
}

int wf_artree_depth(int n)
{
    int d = 0;
    for (int s = 1; s <= n - 1; s *= 2)
        d++;
    return d;
}

/* ------------------------------------------------------------------ */
/* Pipelined tree                                                     */
/* ------------------------------------------------------------------ */

uint64_t wf_artree_init(wf_artree_t *t, const wf_coll_args_t *a,
                        wf_plan_t *plan, const wf_artree_node_t *node,
                        size_t start, size_t count, uint32_t id,
                        uint64_t scratch_off)
{
    *t = (wf_artree_t){.a = a, .plan = plan, .node = *node, .start = start,
                       .count = count, .id = id, .scratch_off = scratch_off};
    t->chunk = wf_arutil_chunk_elems(a);
    t->nchunks = (count + t->chunk - 1) / t->chunk;
    t->slot_bytes = (uint64_t)WF_MIN(t->chunk, count) * a->elem_size;
    t->slot_user = malloc(2 * WF_ARTREE_SLOTS * sizeof(*t->slot_user));
    if (!t->slot_user) {
        plan->failed = true;
        return UINT64_MAX;
    }
    for (int i = 0; i < 2 * WF_ARTREE_SLOTS; i++)
        t->slot_user[i] = WF_NO_DEP;
    t->nslots = WF_MIN(t->nchunks, (size_t)WF_ARTREE_SLOTS);
    return 2 * t->nslots * t->slot_bytes;
}

void wf_artree_fini(wf_artree_t *t)
{
    free(t->slot_user);
    t->slot_user = NULL;
}

/* Receives chunk c from both children and reduces child[0], own, child[1]
 * in that order into RECV.  Returns the last reduce (WF_NO_DEP at a leaf,
 * whose value is still in SEND). */
static int32_t tree_up(wf_artree_t *t, size_t c, uint64_t off, size_t len)
{
    size_t slot = c % t->nslots, es = t->a->elem_size;
    wf_bref_t acc = wf_bref(WF_BUF_SEND, off);
    int32_t last = WF_NO_DEP;
    for (int i = 0; i < 2; i++) {
        if (t->node.child[i] < 0)
            continue;
        int32_t *user = &t->slot_user[i * WF_ARTREE_SLOTS + slot];
        wf_bref_t sb = wf_bref(WF_BUF_SCRATCH,
                               t->scratch_off +
                                   (i * t->nslots + slot) * t->slot_bytes);
        int32_t rv = wf_plan_recv(t->plan, t->node.child[i],
                                  (uint32_t)(4 * c + 2 * t->id), sb, len * es,
                                  *user, WF_NO_DEP, WF_NO_DEP);
        last = wf_plan_reduce(t->plan, wf_bref(WF_BUF_RECV, off),
                              i == 0 ? sb : acc, i == 0 ? acc : sb, len, rv,
                              last, WF_NO_DEP);
        *user = last;
        acc = wf_bref(WF_BUF_RECV, off);
    }
    return last;
}

void wf_artree_chunk(wf_artree_t *t, size_t c)
{
    size_t es = t->a->elem_size;
    size_t len = WF_MIN(t->chunk, t->count - c * t->chunk);
    uint64_t off = (t->start + c * t->chunk) * es;
    uint32_t up_tag = (uint32_t)(4 * c + 2 * t->id), down_tag = up_tag + 1;
    int32_t fin = tree_up(t, c, off, len);
    if (t->node.parent >= 0) {
        /* A leaf sends straight from SEND; the result comes back into RECV
         * once the send has read it (the same memory in place). */
        wf_bref_t src = wf_bref(fin == WF_NO_DEP ? WF_BUF_SEND : WF_BUF_RECV,
                                off);
        int32_t up = wf_plan_send(t->plan, t->node.parent, up_tag, src,
                                  len * es, fin, WF_NO_DEP, WF_NO_DEP);
        fin = wf_plan_recv(t->plan, t->node.parent, down_tag,
                           wf_bref(WF_BUF_RECV, off), len * es, up, fin,
                           WF_NO_DEP);
    } else if (t->a->op == WEFT_AVG) {
        fin = wf_plan_avg(t->plan, wf_bref(WF_BUF_RECV, off), len, fin,
                          WF_NO_DEP, WF_NO_DEP);
    }
    for (int i = 0; i < 2; i++)
        if (t->node.child[i] >= 0)
            wf_plan_send(t->plan, t->node.child[i], down_tag,
                         wf_bref(WF_BUF_RECV, off), len * es, fin, WF_NO_DEP,
                         WF_NO_DEP);
}

/* ------------------------------------------------------------------ */
/* The algorithm                                                      */
/* ------------------------------------------------------------------ */

static weft_status_t tree_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    wf_artree_node_t node;
    wf_artree_t t;
    wf_artree_node(a->size, a->rank, 0, &node);
    uint64_t scratch = wf_artree_init(&t, a, plan, &node, 0, a->count, 0, 0);
    if (scratch != UINT64_MAX) {
        for (size_t c = 0; c < t.nchunks; c++)
            wf_artree_chunk(&t, c);
        plan->scratch_bytes = scratch;
    }
    wf_artree_fini(&t);
    return wf_algo_build_status(&wf_algo_allreduce_tree, a, plan->failed);
}

static bool tree_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLREDUCE;
}

static void tree_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double bytes = (double)a->count * (double)a->elem_size;
    double chunk = WF_MIN(bytes, (double)a->chunk_bytes);
    double d = wf_artree_depth(a->size);
    double flow = bytes + (d - 1) * chunk;
    double msgs = 2 * (a->size - 1) * wf_msgs(bytes, chunk);
    *t = (wf_cost_terms_t){.rounds = 2 * d, .path_sent = 3 * flow,
                           .path_reduced = 2 * flow, .messages = msgs,
                           .bytes = 2 * (a->size - 1) * bytes,
                           .reduced = (a->size - 1) * bytes};
}

static double tree_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, tree_terms);
}

const wf_algo_t wf_algo_allreduce_tree = {
    .name = "tree",
    .coll = WF_COLL_ALLREDUCE,
    .id = 12,
    .supports = tree_supports,
    .cost = tree_cost,
    .cost_terms = tree_terms,
    .build = tree_build,
};
