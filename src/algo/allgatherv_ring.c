/*
 * allgatherv_ring.c - ring allgatherv: the ring allgather
 * (allgather_ring.c) with a block of its own length per rank.  In step t
 * (0 <= t < size-1) rank r sends block r-t to its right neighbour and
 * receives block r-t-1 from its left one, straight into the receive
 * buffer at that block's displacement.  Blocks are cut into chunks
 * (WEFT_CHUNK_SIZE) so a chunk is forwarded as soon as it landed; an
 * empty block is one empty message (vector_util.h: the counts' digest
 * rides on every step).
 *
 * Dependencies: the send of chunk c in step t reads what the receive of
 * the same block's chunk c wrote in step t-1; step 0 sends from the send
 * buffer and waits for nothing.  Out of place, the own block is copied
 * into the receive buffer after its step-0 sends.  In place (sendbuf ==
 * recvbuf + displs[rank] elements) it is already there.  Receives write
 * blocks nobody has read yet and wait for nothing.
 *
 * Tags: one running number per direction; both sides enumerate (step,
 * chunk) alike from the same counts.
 *
 * Cost: size-1 rounds, each rank sends every block but its right
 * neighbour's.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "algo/vector_util.h"
#include "common.h"

static void agv_step(const wf_coll_args_t *a, wf_plan_t *plan, int t,
                     int32_t *prev, uint32_t *send_tag, uint32_t *recv_tag)
{
    uint64_t grid = wf_unr_grid(a);
    int right = wf_unr_mod(a->rank + 1, a->size);
    int left = wf_unr_mod(a->rank - 1, a->size);
    uint64_t soff, roff;
    uint64_t sbytes = wf_v_block(a, a->vcounts, a->vdispls,
                                 wf_unr_mod(a->rank - t, a->size), &soff);
    uint64_t rbytes = wf_v_block(a, a->vcounts, a->vdispls,
                                 wf_unr_mod(a->rank - t - 1, a->size), &roff);
    uint64_t nsend = wf_v_chunks(sbytes, grid);
    for (uint64_t c = 0; c < nsend; c++) {
        uint64_t off = c * grid, len = sbytes ? WF_MIN(grid, sbytes - off) : 0;
        wf_bref_t src = t == 0 ? wf_bref(WF_BUF_SEND, off)
                               : wf_bref(WF_BUF_RECV, soff + off);
        int32_t sent = wf_plan_send(plan, right, (*send_tag)++, src, len,
                                    t == 0 ? WF_NO_DEP : prev[c], WF_NO_DEP,
                                    WF_NO_DEP);
        if (t == 0 && !a->in_place && len)
            wf_plan_copy(plan, wf_bref(WF_BUF_RECV, soff + off), src, len,
                         sent, WF_NO_DEP, WF_NO_DEP);
    }
    uint64_t nrecv = wf_v_chunks(rbytes, grid);
    for (uint64_t c = 0; c < nrecv; c++) {
        uint64_t off = c * grid, len = rbytes ? WF_MIN(grid, rbytes - off) : 0;
        prev[c] = wf_plan_recv(plan, left, (*recv_tag)++,
                               wf_bref(WF_BUF_RECV, roff + off), len,
                               WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    }
}

static weft_status_t agv_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    uint64_t grid = wf_unr_grid(a), own_off;
    uint64_t own = wf_v_block(a, a->vcounts, a->vdispls, a->rank, &own_off);
    if (a->size == 1) {
        if (!a->in_place && own)
            wf_plan_copy(plan, wf_bref(WF_BUF_RECV, own_off),
                         wf_bref(WF_BUF_SEND, 0), own, WF_NO_DEP, WF_NO_DEP,
                         WF_NO_DEP);
        return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
    }
    uint64_t most = 1;
    for (int r = 0; r < a->size; r++)
        most = WF_MAX(most, wf_v_chunks((uint64_t)a->vcounts[r] *
                                            a->elem_size, grid));
    int32_t *prev = malloc(most * sizeof(*prev));
    if (!prev) {
        WEFT_WARN(COLL, "out of memory building a ring allgatherv on %d "
                  "ranks", a->size);
        return WEFT_ERR_NO_MEMORY;
    }
    uint32_t send_tag = 0, recv_tag = 0;
    for (int t = 0; t < a->size - 1; t++)
        agv_step(a, plan, t, prev, &send_tag, &recv_tag);
    free(prev);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool agv_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLGATHERV && a->vcounts;
}

static double agv_cost(const wf_coll_args_t *a)
{
    double n = a->size;
    return wf_cost(a, n - 1, (n - 1) * wf_v_mean_block(a), 0);
}

const wf_algo_t wf_algo_allgatherv_ring = {
    .name = "ring",
    .coll = WF_COLL_ALLGATHERV,
    .id = 70,
    .supports = agv_supports,
    .cost = agv_cost,
    .build = agv_build,
};
