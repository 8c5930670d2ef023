/*
 * reducescatterv_ring.c - ring reduce-scatter with a block of its own
 * length per rank (the blocks lie one after another in the send buffer,
 * as MPI_Reduce_scatter's do).  In step s (0 <= s < size-1) rank r sends
 * its partial sum of block r-s-1 to its right neighbour and receives the
 * left one's partial of block r-s-2, which it adds to its own input; the
 * partial received in the last step is block r, whose sum goes to the
 * receive buffer.  Blocks are cut into chunks (WEFT_CHUNK_SIZE) so
 * receiving, reducing and forwarding pipeline; an empty block is one
 * empty message (vector_util.h: the counts' digest rides on every step).
 *
 * Buffers: the send buffer is only read (in place, recvbuf == sendbuf +
 * the blocks before r, the final reduction reads and writes the same
 * bytes).  Partial sums live in two scratch slots as long as the largest
 * block, alternating by step parity: step s receives into slot s%2,
 * reduces there and sends from there in step s+1.
 *
 * Dependencies per chunk: a send waits for the previous step's reduce of
 * the same block (step 0 sends input: no wait); a receive into slot s%2
 * waits for the last send that read the same chunk of that slot (step
 * s-1's, or an earlier one's where a longer block passed through); the
 * reduce waits for its receive; AVG
 * divides the own block after its final reduce.  Tags: one running
 * number per direction.
 *
 * Cost: size-1 rounds, every block but one sent and reduced per rank.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "algo/vector_util.h"
#include "common.h"

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    uint64_t grid, slot;  /* chunk size; bytes of one scratch slot */
    uint64_t *off;        /* per rank: its block's offset in the input */
    int32_t *red;         /* per chunk: the previous step's reduce */
    int32_t *reader[2];   /* per slot and chunk: the last send that read
                           * it (a longer block's chunk stays recorded
                           * while shorter blocks pass through the slot) */
    uint32_t send_tag, recv_tag;
} rsv_t;

static uint64_t rsv_bytes(const rsv_t *g, int r)
{
    return (uint64_t)g->a->vcounts[r] * g->a->elem_size;
}

static void rsv_send(rsv_t *g, int s)
{
    const wf_coll_args_t *a = g->a;
    int right = wf_unr_mod(a->rank + 1, a->size);
    int blk = wf_unr_mod(a->rank - s - 1, a->size);
    uint64_t bytes = rsv_bytes(g, blk), n = wf_v_chunks(bytes, g->grid);
    uint64_t slot = (uint64_t)((s + 1) % 2) * g->slot; /* step s-1's */
    for (uint64_t c = 0; c < n; c++) {
        uint64_t at = c * g->grid, len = bytes ? WF_MIN(g->grid, bytes - at) : 0;
        wf_bref_t src = s == 0 ? wf_bref(WF_BUF_SEND, g->off[blk] + at)
                               : wf_bref(WF_BUF_SCRATCH, slot + at);
        int32_t sent = wf_plan_send(g->plan, right, g->send_tag++, src, len,
                                    s == 0 ? WF_NO_DEP : g->red[c], WF_NO_DEP,
                                    WF_NO_DEP);
        if (s > 0)
            g->reader[(s + 1) % 2][c] = sent;
    }
}

static void rsv_recv(rsv_t *g, int s)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size;
    int left = wf_unr_mod(a->rank - 1, a->size);
    bool last = s == a->size - 2;
    int blk = wf_unr_mod(a->rank - s - 2, a->size);
    uint64_t bytes = rsv_bytes(g, blk), n = wf_v_chunks(bytes, g->grid);
    uint64_t slot = (uint64_t)(s % 2) * g->slot;
    for (uint64_t c = 0; c < n; c++) {
        uint64_t at = c * g->grid, len = bytes ? WF_MIN(g->grid, bytes - at) : 0;
        wf_bref_t tmp = wf_bref(WF_BUF_SCRATCH, slot + at);
        int32_t rv = wf_plan_recv(g->plan, left, g->recv_tag++, tmp, len,
                                  g->reader[s % 2][c],
                                  WF_NO_DEP, WF_NO_DEP);
        if (!len) {
            g->red[c] = rv;
            continue;
        }
        wf_bref_t dst = last ? wf_bref(WF_BUF_RECV, at) : tmp;
        g->red[c] = wf_plan_reduce(g->plan, dst,
                                   wf_bref(WF_BUF_SEND, g->off[blk] + at), tmp,
                                   len / es, rv, WF_NO_DEP, WF_NO_DEP);
        if (last && a->op == WEFT_AVG)
            wf_plan_avg(g->plan, dst, len / es, g->red[c], WF_NO_DEP,
                        WF_NO_DEP);
    }
}

static weft_status_t rsv_single(const wf_coll_args_t *a, wf_plan_t *plan)
{
    uint64_t bytes = (uint64_t)a->vcounts[0] * a->elem_size;
    if (!a->in_place && bytes)
        wf_plan_copy(plan, wf_bref(WF_BUF_RECV, 0), wf_bref(WF_BUF_SEND, 0),
                     bytes, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static weft_status_t rsv_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    if (a->size == 1)
        return rsv_single(a, plan);
    rsv_t g = {.a = a, .plan = plan, .grid = wf_unr_grid(a)};
    uint64_t most = 1, at = 0;
    g.off = malloc((size_t)a->size * sizeof(*g.off));
    for (int r = 0; g.off && r < a->size; r++) {
        g.off[r] = at;
        at += rsv_bytes(&g, r);
        g.slot = WF_MAX(g.slot, rsv_bytes(&g, r));
        most = WF_MAX(most, wf_v_chunks(rsv_bytes(&g, r), g.grid));
    }
    g.red = g.off ? malloc(3 * most * sizeof(*g.red)) : NULL;
    if (!g.red) {
        free(g.off);
        WEFT_WARN(COLL, "out of memory building a ring reduce-scatterv on "
                  "%d ranks", a->size);
        return WEFT_ERR_NO_MEMORY;
    }
    g.reader[0] = g.red + most;
    g.reader[1] = g.reader[0] + most;
    for (uint64_t c = 0; c < 2 * most; c++)
        g.reader[0][c] = WF_NO_DEP;
    plan->scratch_bytes = 2 * g.slot;
    for (int s = 0; s < a->size - 1; s++) {
        rsv_send(&g, s);
        rsv_recv(&g, s);
    }
    free(g.red);
    free(g.off);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool rsv_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE_SCATTERV && a->vcounts;
}

static double rsv_cost(const wf_coll_args_t *a)
{
    double n = a->size, block = wf_v_mean_block(a);
    return wf_cost(a, n - 1, (n - 1) * block, (n - 1) * block);
}

const wf_algo_t wf_algo_reducescatterv_ring = {
    .name = "ring",
    .coll = WF_COLL_REDUCE_SCATTERV,
    .id = 74,
    .supports = rsv_supports,
    .cost = rsv_cost,
    .build = rsv_build,
};
