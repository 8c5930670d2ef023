/*
 * reduce_pipe.c - a reduction pipelined in chunks up a tree to the root
 * (reduce_pipe.h): every rank combines its own contribution with its
 * children's partial results and sends the sum of its subtree to its
 * parent.  The buffer is cut into chunks that move independently, so a
 * rank reduces and forwards chunk c while chunk c+1 is still arriving.
 * WEFT_AVG sums up the tree and the root divides each chunk once at the
 * end.
 *
 * Buffers: the root accumulates straight into its receive buffer (the
 * first reduce reads its send buffer, which in place is the same memory);
 * other ranks have no receive buffer, so an inner rank accumulates in
 * scratch; a leaf sends its send buffer as it is.  Children's chunks land
 * in scratch slots, D = min(8, chunks) per child (the default number of
 * sends the engine keeps in flight per peer, so a child's chunks rarely
 * arrive before their receive is posted), reused round robin, and
 * an inner rank's accumulator is a ring of D chunk slots as well, so the
 * scratch stays (children + 1) * D chunks whatever the message size.
 *
 * Dependencies per chunk c: the receive from child j into its slot waits
 * for the reduce that last read that slot (chunk c-D); the reduce of
 * child j waits for that receive and for the reduce of child j-1 (the
 * accumulator's previous value); the first reduce of an inner rank also
 * waits for the send of chunk c-D, which read the same accumulator slot;
 * the send to the parent (or the root's AVG) waits for the last reduce.
 * Chunk c travels with tag c (one tree edge per pair of ranks).
 */
#include <stdlib.h>

#include "algo/reduce_pipe.h"
#include "common.h"

#define PIPE_SLOTS 8

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int root, parent, nk; /* root: this rank is the root */
    const int *peers;
    size_t ce, nc, depth;
    uint64_t slot_bytes, kid_base;
    int32_t *slot_user; /* [nk * depth]: last reduce reading a child slot */
    int32_t *acc_user;  /* [depth]: the send reading an accumulator slot */
} rred_t;

static wf_bref_t acc_ref(const rred_t *g, size_t c)
{
    if (g->root)
        return wf_bref(WF_BUF_RECV, c * g->ce * g->a->elem_size);
    return wf_bref(WF_BUF_SCRATCH, (c % g->depth) * g->slot_bytes);
}

/* Receives and reduces chunk c from every child; returns the last reduce
 * (the step that completes the chunk on this rank). */
static int32_t reduce_chunk(rred_t *g, size_t c, size_t elems)
{
    const wf_coll_args_t *a = g->a;
    size_t d = c % g->depth;
    wf_bref_t acc = acc_ref(g, c);
    wf_bref_t own = wf_bref(WF_BUF_SEND, c * g->ce * a->elem_size);
    int32_t prev = WF_NO_DEP;
    for (int j = 0; j < g->nk; j++) {
        int32_t *user = &g->slot_user[(size_t)j * g->depth + d];
        wf_bref_t slot = wf_bref(WF_BUF_SCRATCH,
                                 g->kid_base + ((size_t)j * g->depth + d) *
                                                   g->slot_bytes);
        int32_t rv = wf_plan_recv(g->plan, g->peers[j], (uint32_t)c, slot,
                                  elems * a->elem_size, *user, WF_NO_DEP,
                                  WF_NO_DEP);
        int32_t war = j == 0 && !g->root ? g->acc_user[d] : WF_NO_DEP;
        prev = *user = wf_plan_reduce(g->plan, acc, j == 0 ? own : acc, slot,
                                      elems, rv, prev, war);
    }
    return prev;
}

static void build_chunks(rred_t *g)
{
    const wf_coll_args_t *a = g->a;
    for (size_t c = 0; c < g->nc; c++) {
        size_t elems = WF_MIN(g->ce, a->count - c * g->ce);
        if (g->nk == 0) { /* a leaf sends its own data */
            wf_plan_send(g->plan, g->parent, (uint32_t)c,
                         wf_bref(WF_BUF_SEND, c * g->ce * a->elem_size),
                         elems * a->elem_size, WF_NO_DEP, WF_NO_DEP,
                         WF_NO_DEP);
            continue;
        }
        int32_t done = reduce_chunk(g, c, elems);
        if (!g->root)
            g->acc_user[c % g->depth] = wf_plan_send(
                g->plan, g->parent, (uint32_t)c, acc_ref(g, c),
                elems * a->elem_size, done, WF_NO_DEP, WF_NO_DEP);
        else if (a->op == WEFT_AVG)
            wf_plan_avg(g->plan, acc_ref(g, c), elems, done, WF_NO_DEP,
                        WF_NO_DEP);
    }
}

weft_status_t wf_reduce_pipe_build(const wf_algo_t *algo,
                                   const wf_coll_args_t *a, wf_plan_t *plan,
                                   const wf_reduce_pipe_t *shape)
{
    weft_status_t st;
    if (wf_rtree_trivial(a, plan, false, &st))
        return st;
    rred_t g = {.a = a, .plan = plan, .root = shape->parent < 0,
                .parent = shape->parent, .nk = shape->nkids,
                .peers = shape->kids, .ce = shape->chunk_elems};
    g.nc = wf_rtree_nchunks(a->count, g.ce);
    g.depth = WF_MIN(g.nc, (size_t)PIPE_SLOTS);
    g.slot_bytes = WF_MIN(g.ce, a->count) * a->elem_size;
    if (g.nk) {
        /* Inner non-root ranks keep their accumulator ring first. */
        g.kid_base = g.root ? 0 : g.depth * g.slot_bytes;
        plan->scratch_bytes = g.kid_base + (uint64_t)g.nk * g.depth *
                                               g.slot_bytes;
    }
    g.slot_user = malloc(((size_t)g.nk + 1) * g.depth * sizeof(int32_t));
    if (!g.slot_user) {
        plan->failed = true;
    } else {
        g.acc_user = g.slot_user + (size_t)g.nk * g.depth;
        for (size_t i = 0; i < ((size_t)g.nk + 1) * g.depth; i++)
            g.slot_user[i] = WF_NO_DEP;
        build_chunks(&g);
    }
    free(g.slot_user);
    return wf_algo_build_status(algo, a, plan->failed);
}
