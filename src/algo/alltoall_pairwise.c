/*
 * alltoall_pairwise.c - pairwise-exchange alltoall: in round k (1 <= k <
 * size) rank r sends block r+k to rank r+k and receives block r-k from
 * rank r-k; its own block is a local copy.  Blocks are cut into chunks
 * (WEFT_CHUNK_SIZE).
 *
 * Pacing: the classic algorithm does one exchange at a time so that a
 * rank never floods many peers at once (incast).  Here the sends of round
 * k wait for the receive of the same chunk in round k - WINDOW, which
 * keeps WINDOW exchanges in flight: the same protection against incast,
 * without paying a full round trip per peer on small messages.  The base
 * rounds wait for nothing, so the chain cannot deadlock.
 *
 * In place (sendbuf == recvbuf): the block received in round k (from
 * r-k) lands where block r-k of the input sits, which is sent in round
 * size-k.  Receiving straight into place would need that receive to wait
 * for that send, and with pacing the two chains can wait on each other.
 * So in place every block is received into scratch ((size-1) blocks) and
 * copied into place once both its receive and the send that read the
 * input block there are done.
 *
 * Dependencies otherwise: out of place, sends read only the caller's
 * input and receives write disjoint blocks, so apart from pacing nothing
 * waits.  Tags: the pair (r, r+k) is unique to round k, so tags are the
 * chunk numbers.
 *
 * Cost: size-1 rounds (one message per peer), (size-1) blocks sent.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

#define WINDOW 4

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    uint64_t block, grid, nchunks;
    int32_t *rv, *sd; /* [round * nchunks + chunk]: receives, sends */
} a2a_t;

static void a2a_round(a2a_t *g, int k)
{
    const wf_coll_args_t *a = g->a;
    int to = wf_unr_mod(a->rank + k, a->size);
    int from = wf_unr_mod(a->rank - k, a->size);
    size_t row = (size_t)k * g->nchunks, paced = (size_t)(k - WINDOW) *
                                                 g->nchunks;
    for (uint64_t c = 0; c < g->nchunks; c++) {
        uint64_t off = c * g->grid, len = WF_MIN(g->grid, g->block - off);
        g->sd[row + c] = wf_plan_send(
            g->plan, to, (uint32_t)c,
            wf_bref(WF_BUF_SEND, (uint64_t)to * g->block + off), len,
            k > WINDOW ? g->rv[paced + c] : WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    }
    for (uint64_t c = 0; c < g->nchunks; c++) {
        uint64_t off = c * g->grid, len = WF_MIN(g->grid, g->block - off);
        wf_bref_t dst =
            a->in_place
                ? wf_bref(WF_BUF_SCRATCH, (uint64_t)(k - 1) * g->block + off)
                : wf_bref(WF_BUF_RECV, (uint64_t)from * g->block + off);
        g->rv[row + c] = wf_plan_recv(g->plan, from, (uint32_t)c, dst, len,
                                      WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    }
}

/* In place: move each received block into place after the send that
 * read the input there (round size-k) is done. */
static void a2a_settle(a2a_t *g)
{
    const wf_coll_args_t *a = g->a;
    for (int k = 1; k < a->size; k++) {
        uint64_t at = (uint64_t)wf_unr_mod(a->rank - k, a->size) * g->block;
        size_t row = (size_t)k * g->nchunks;
        size_t reader = (size_t)(a->size - k) * g->nchunks;
        for (uint64_t c = 0; c < g->nchunks; c++) {
            uint64_t off = c * g->grid, len = WF_MIN(g->grid, g->block - off);
            wf_plan_copy(g->plan, wf_bref(WF_BUF_RECV, at + off),
                         wf_bref(WF_BUF_SCRATCH,
                                 (uint64_t)(k - 1) * g->block + off),
                         len, g->rv[row + c], g->sd[reader + c], WF_NO_DEP);
        }
    }
}

static weft_status_t a2a_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    a2a_t g = {.a = a, .plan = plan};
    g.nchunks = wf_unr_block_chunks(a, &g.block, &g.grid);
    size_t cells = (size_t)a->size * g.nchunks;
    g.rv = malloc(2 * cells * sizeof(*g.rv));
    if (!g.rv) {
        WEFT_WARN(COLL, "out of memory building a pairwise alltoall of %zu "
                  "elements", a->count);
        return WEFT_ERR_NO_MEMORY;
    }
    g.sd = g.rv + cells;
    uint64_t own = (uint64_t)a->rank * g.block;
    if (a->in_place)
        plan->scratch_bytes = (uint64_t)(a->size - 1) * g.block;
    for (int k = 1; k < a->size; k++)
        a2a_round(&g, k);
    /* The own block's copy waits for nothing, and steps that are ready
     * together run in plan order: last, it runs after the first round's
     * transfers are posted, not before them. */
    if (a->in_place)
        a2a_settle(&g);
    else
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, own),
                     wf_bref(WF_BUF_SEND, own), g.block, WF_NO_DEP,
                     WF_NO_DEP, WF_NO_DEP);
    free(g.rv);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool a2a_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLTOALL;
}

static double a2a_cost(const wf_coll_args_t *a)
{
    double n = a->size, block = (double)a->count * (double)a->elem_size;
    return wf_cost(a, n - 1, (n - 1) * block, 0);
}

const wf_algo_t wf_algo_alltoall_pairwise = {
    .name = "pairwise",
    .coll = WF_COLL_ALLTOALL,
    .id = 50,
    .supports = a2a_supports,
    .cost = a2a_cost,
    .build = a2a_build,
};
