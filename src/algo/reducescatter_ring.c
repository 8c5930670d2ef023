/*
 * reducescatter_ring.c - ring reduce-scatter, the first half of the ring
 * allreduce with whole blocks as segments.  In step s (0 <= s < size-1)
 * rank r sends its partial sum of block r-s-1 to its right neighbour and
 * receives the left neighbour's partial of block r-s-2, which it adds to
 * its own contribution; the partial received in the last step is block r,
 * whose sum goes to the receive buffer.  Blocks are cut into chunks
 * (WEFT_CHUNK_SIZE) so receiving, reducing and forwarding pipeline.
 *
 * Buffers: the caller's send buffer is only read (in place, recvbuf ==
 * sendbuf + r * block, block r of the input is read just once, by the
 * final reduction that writes the same bytes).  Partial sums live in two
 * scratch slots of one block each, alternating by step parity: the
 * receive of step s lands in slot s%2, is reduced there in place, and is
 * sent from there in step s+1.  The last step's chunks, which are reduced
 * into the receive buffer and never forwarded, land in RSRING_SLOTS slots
 * of one chunk taken in turn, after the two block slots (which 2 ranks,
 * whose only step is the last, do without), when the block has more
 * chunks than that: a chunk is then reduced while it is still in
 * the core's cache, where a receive into a whole block has gone out to
 * memory by the time it is reduced (as in the rhd allreduce,
 * allreduce_util.h; the runs without and with them are in
 * bench/results/2026-11-28-reducescatter-chunk-slots.md).
 *
 * Dependencies per chunk:
 *  - the send of step s waits for the reduce of step s-1 (step 0 sends the
 *    own contribution from the send buffer: no wait);
 *  - the receive of step s overwrites slot s%2, last read by the send of
 *    step s-1, so it waits for that send (which itself waited for the
 *    reduce that wrote the slot); in the last step with chunk slots, the
 *    receive of chunk c waits for the reduce of chunk c - RSRING_SLOTS,
 *    which read its slot;
 *  - the reduce waits for its receive;
 *  - WEFT_AVG: each rank divides its own result block once, after the
 *    final reduce.
 * Tags: one running number per direction, both sides enumerate (step,
 * chunk) alike.
 *
 * Cost: size-1 rounds, (size-1) blocks sent and reduced per rank.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "common.h"

#define RSRING_SLOTS 16

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    uint64_t block, grid, nchunks;
    bool chunk_slots;      /* whether the last step uses chunk slots */
    uint64_t chunk_slot0;  /* scratch offset of the first chunk slot */
    int32_t *red;      /* per chunk: the reduce of the previous step */
    int32_t *sent[2];  /* per chunk: the sends of this and the last step */
} rsring_t;

static void rsring_send(rsring_t *g, int s, uint32_t *tag)
{
    const wf_coll_args_t *a = g->a;
    int right = wf_unr_mod(a->rank + 1, a->size);
    uint64_t blk = (uint64_t)wf_unr_mod(a->rank - s - 1, a->size) * g->block;
    uint64_t slot = (uint64_t)((s + 1) % 2) * g->block; /* step s-1's */
    int32_t *sent = g->sent[s % 2];
    for (uint64_t c = 0; c < g->nchunks; c++) {
        uint64_t off = c * g->grid, len = WF_MIN(g->grid, g->block - off);
        wf_bref_t src = s == 0 ? wf_bref(WF_BUF_SEND, blk + off)
                               : wf_bref(WF_BUF_SCRATCH, slot + off);
        sent[c] = wf_plan_send(g->plan, right, (*tag)++, src, len,
                               s == 0 ? WF_NO_DEP : g->red[c], WF_NO_DEP,
                               WF_NO_DEP);
    }
}

static void rsring_recv(rsring_t *g, int s, uint32_t *tag)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size;
    int left = wf_unr_mod(a->rank - 1, a->size);
    bool last = s == a->size - 2;
    uint64_t blk = (uint64_t)wf_unr_mod(a->rank - s - 2, a->size) * g->block;
    uint64_t slot = (uint64_t)(s % 2) * g->block;
    const int32_t *reader = g->sent[(s + 1) % 2]; /* step s-1's sends */
    bool chunk_slots = last && g->chunk_slots;
    for (uint64_t c = 0; c < g->nchunks; c++) {
        uint64_t off = c * g->grid, len = WF_MIN(g->grid, g->block - off);
        wf_bref_t tmp = wf_bref(WF_BUF_SCRATCH, slot + off);
        int32_t war = s == 0 ? WF_NO_DEP : reader[c];
        if (chunk_slots) {
            tmp = wf_bref(WF_BUF_SCRATCH, g->chunk_slot0 +
                                              c % RSRING_SLOTS * g->grid);
            /* This step's reduce of chunk c - RSRING_SLOTS. */
            war = c < RSRING_SLOTS ? WF_NO_DEP : g->red[c - RSRING_SLOTS];
        }
        int32_t rv = wf_plan_recv(g->plan, left, (*tag)++, tmp, len, war,
                                  WF_NO_DEP, WF_NO_DEP);
        wf_bref_t dst = last ? wf_bref(WF_BUF_RECV, off) : tmp;
        g->red[c] = wf_plan_reduce(g->plan, dst,
                                   wf_bref(WF_BUF_SEND, blk + off), tmp,
                                   len / es, rv, WF_NO_DEP, WF_NO_DEP);
        if (last && a->op == WEFT_AVG)
            wf_plan_avg(g->plan, dst, len / es, g->red[c], WF_NO_DEP,
                        WF_NO_DEP);
    }
}

static weft_status_t rsring_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    weft_status_t st;
    if (wf_unr_trivial(a, plan, &st))
        return st;
    rsring_t g = {.a = a, .plan = plan};
    g.nchunks = wf_unr_block_chunks(a, &g.block, &g.grid);
    g.red = malloc(3 * g.nchunks * sizeof(*g.red));
    if (!g.red) {
        WEFT_WARN(COLL, "out of memory building a ring reduce-scatter of "
                  "%zu elements", a->count);
        return WEFT_ERR_NO_MEMORY;
    }
    g.sent[0] = g.red + g.nchunks;
    g.sent[1] = g.sent[0] + g.nchunks;
    /* The block slots hold what later steps forward: none on 2 ranks
     * when the last (only) step has chunk slots. */
    g.chunk_slots = g.nchunks > RSRING_SLOTS;
    g.chunk_slot0 = g.chunk_slots && a->size == 2 ? 0 : 2 * g.block;
    plan->scratch_bytes =
        g.chunk_slot0 + (g.chunk_slots ? RSRING_SLOTS * g.grid : 0);
    uint32_t send_tag = 0, recv_tag = 0;
    for (int s = 0; s < a->size - 1; s++) {
        rsring_send(&g, s, &send_tag);
        rsring_recv(&g, s, &recv_tag);
    }
    free(g.red);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool rsring_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE_SCATTER;
}

/* The ring allgather's terms (wf_unr_ring_terms), with every block
 * received reduced: step 0 sends input, every later step what the step
 * before received and reduced. */
static void rsring_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    wf_unr_ring_terms(a, t);
    wf_cost_terms_reduce_sent(t);
}

static double rsring_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, rsring_terms);
}

const wf_algo_t wf_algo_reducescatter_ring = {
    .name = "ring",
    .coll = WF_COLL_REDUCE_SCATTER,
    .id = 45,
    .supports = rsring_supports,
    .cost = rsring_cost,
    .cost_terms = rsring_terms,
    .build = rsring_build,
};
