/*
 * allgather_ring.c - ring allgather: in step t (0 <= t < size-1) rank r
 * sends block r-t to its right neighbour and receives block r-t-1 from its
 * left one, straight into the receive buffer.  Every block is cut into
 * chunks (WEFT_CHUNK_SIZE) so a chunk is forwarded as soon as it landed
 * and the size-1 hops pipeline.  Works for every size.
 *
 * Dependencies: the send of chunk c in step t reads what the receive of
 * chunk c in step t-1 wrote; step 0 sends the rank's own block from the
 * send buffer, so it waits for nothing.  Out of place, each chunk of the
 * own block is copied into the receive buffer after its step-0 send: one
 * copy of the whole block first ran before any transfer was posted, as the
 * broadcast root's did
 * (bench/results/2026-12-01-root-copy-and-bounded-send-buffers.md, "The
 * broadcast root's copy").  Every receive writes a block nobody has read
 * yet, so receives wait for nothing.  In place (sendbuf == recvbuf +
 * rank * block) the own block already is where it belongs: no copy, and
 * no step writes it.
 *
 * Tags: one running number per direction; both sides enumerate (step,
 * chunk) in the same order and every block has the same chunk count.
 *
 * Cost: size-1 rounds, each rank sends (size-1) blocks, reduces nothing.
 * It has the most rounds of the allgathers but only neighbour traffic and
 * a pipeline that overlaps the hops, so it is the large-message choice.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

static void agring_steps(const wf_coll_args_t *a, wf_plan_t *plan,
                         int32_t *prev, uint64_t block, uint64_t grid,
                         uint64_t nchunks)
{
    int right = wf_unr_mod(a->rank + 1, a->size);
    int left = wf_unr_mod(a->rank - 1, a->size);
    uint32_t send_tag = 0, recv_tag = 0;
    for (int t = 0; t < a->size - 1; t++) {
        uint64_t sblk = (uint64_t)wf_unr_mod(a->rank - t, a->size) * block;
        uint64_t rblk = (uint64_t)wf_unr_mod(a->rank - t - 1, a->size) * block;
        for (uint64_t c = 0; c < nchunks; c++) {
            uint64_t off = c * grid, len = WF_MIN(grid, block - off);
            wf_bref_t src = t == 0 ? wf_bref(WF_BUF_SEND, off)
                                   : wf_bref(WF_BUF_RECV, sblk + off);
            int32_t sent = wf_plan_send(plan, right, send_tag++, src, len,
                                        t == 0 ? WF_NO_DEP : prev[c],
                                        WF_NO_DEP, WF_NO_DEP);
            if (t == 0 && !a->in_place)
                wf_plan_copy(plan, wf_bref(WF_BUF_RECV, sblk + off), src, len,
                             sent, WF_NO_DEP, WF_NO_DEP);
        }
        for (uint64_t c = 0; c < nchunks; c++) {
            uint64_t off = c * grid, len = WF_MIN(grid, block - off);
            prev[c] = wf_plan_recv(plan, left, recv_tag++,
                                   wf_bref(WF_BUF_RECV, rblk + off), len,
                                   WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        }
    }
}

static weft_status_t agring_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    uint64_t block, grid;
    uint64_t nchunks = wf_unr_block_chunks(a, &block, &grid);
    int32_t *prev = malloc(nchunks * sizeof(*prev));
    if (!prev) {
        WEFT_WARN(COLL, "out of memory building a ring allgather of %zu "
                  "elements", a->count);
        return WEFT_ERR_NO_MEMORY;
    }
    agring_steps(a, plan, prev, block, grid, nchunks);
    free(prev);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool agring_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLGATHER;
}

static double agring_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, wf_unr_ring_terms);
}

const wf_algo_t wf_algo_allgather_ring = {
    .name = "ring",
    .coll = WF_COLL_ALLGATHER,
    .id = 40,
    .supports = agring_supports,
    .cost = agring_cost,
    .cost_terms = wf_unr_ring_terms,
    .build = agring_build,
};
