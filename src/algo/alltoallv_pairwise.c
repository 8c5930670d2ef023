/*
 * alltoallv_pairwise.c - pairwise-exchange alltoallv: in round k
 * (1 <= k < size) rank r sends its block for r+k and receives the block
 * from r-k, each block one message (an empty one when its count is 0:
 * vector_util.h), from and into the buffers at the caller's
 * displacements; its own block is a local copy.  Pacing as in the
 * pairwise alltoall (alltoall_pairwise.c): the send of round k waits for
 * the receive of round k - WINDOW, so WINDOW exchanges are in flight.
 *
 * In place (sendbuf == recvbuf: the data to send is read with the receive
 * counts and displacements, as MPI_IN_PLACE does), every block is received
 * into scratch and copied into place once both its receive and the send
 * that read the same place are done.  The block from r-k lands where the
 * block for r-k sits, which is sent in round size-k.
 *
 * Cost: size-1 rounds, one message per peer.
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/unrooted_util.h"
#include "algo/vector_util.h"
#include "common.h"

#define WINDOW 4

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int32_t *rv, *sd;    /* per round: its receive, its send */
    uint64_t *scratch;   /* per round (in place): its scratch offset */
} a2av_t;

static void a2av_round(a2av_t *g, int k)
{
    const wf_coll_args_t *a = g->a;
    int to = wf_unr_mod(a->rank + k, a->size);
    int from = wf_unr_mod(a->rank - k, a->size);
    uint64_t soff, roff;
    uint64_t sbytes = wf_v_block(a, a->vscounts, a->vsdispls, to, &soff);
    uint64_t rbytes = wf_v_block(a, a->vcounts, a->vdispls, from, &roff);
    g->sd[k] = wf_plan_send(g->plan, to, 0, wf_bref(WF_BUF_SEND, soff),
                            sbytes, k > WINDOW ? g->rv[k - WINDOW] : WF_NO_DEP,
                            WF_NO_DEP, WF_NO_DEP);
    wf_bref_t dst = a->in_place ? wf_bref(WF_BUF_SCRATCH, g->scratch[k])
                                : wf_bref(WF_BUF_RECV, roff);
    g->rv[k] = wf_plan_recv(g->plan, from, 0, dst, rbytes, WF_NO_DEP,
                            WF_NO_DEP, WF_NO_DEP);
}

/* In place: each received block into place once the send that read it
 * (round size-k) is done. */
static void a2av_settle(a2av_t *g)
{
    const wf_coll_args_t *a = g->a;
    for (int k = 1; k < a->size; k++) {
        uint64_t roff;
        uint64_t bytes = wf_v_block(a, a->vcounts, a->vdispls,
                                    wf_unr_mod(a->rank - k, a->size), &roff);
        if (bytes)
            wf_plan_copy(g->plan, wf_bref(WF_BUF_RECV, roff),
                         wf_bref(WF_BUF_SCRATCH, g->scratch[k]), bytes,
                         g->rv[k], g->sd[a->size - k], WF_NO_DEP);
    }
}

static weft_status_t a2av_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    a2av_t g = {.a = a, .plan = plan};
    size_t n = (size_t)a->size;
    g.rv = malloc(2 * n * sizeof(*g.rv) + n * sizeof(*g.scratch));
    if (!g.rv) {
        WEFT_WARN(COLL, "out of memory building a pairwise alltoallv on %d "
                  "ranks", a->size);
        return WEFT_ERR_NO_MEMORY;
    }
    g.sd = g.rv + n;
    g.scratch = (uint64_t *)(g.sd + n);
    if (a->in_place) {
        uint64_t at = 0, off;
        for (int k = 1; k < a->size; k++) {
            g.scratch[k] = at;
            at += wf_v_block(a, a->vcounts, a->vdispls,
                             wf_unr_mod(a->rank - k, a->size), &off);
        }
        plan->scratch_bytes = at;
    }
    for (int k = 1; k < a->size; k++)
        a2av_round(&g, k);
    if (a->in_place) {
        a2av_settle(&g);
    } else {
        /* Last: it runs after the first rounds' transfers are posted. */
        uint64_t soff, roff;
        uint64_t bytes = wf_v_block(a, a->vscounts, a->vsdispls, a->rank,
                                    &soff);
        wf_v_block(a, a->vcounts, a->vdispls, a->rank, &roff);
        if (bytes)
            wf_plan_copy(plan, wf_bref(WF_BUF_RECV, roff),
                         wf_bref(WF_BUF_SEND, soff), bytes, WF_NO_DEP,
                         WF_NO_DEP, WF_NO_DEP);
    }
    free(g.rv);
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static bool a2av_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_ALLTOALLV && a->vcounts && a->vscounts;
}

static double a2av_cost(const wf_coll_args_t *a)
{
    double n = a->size;
    return wf_cost(a, n - 1, (double)a->count * (double)a->elem_size, 0);
}

const wf_algo_t wf_algo_alltoallv_pairwise = {
    .name = "pairwise",
    .coll = WF_COLL_ALLTOALLV,
    .id = 73,
    .supports = a2av_supports,
    .cost = a2av_cost,
    .build = a2av_build,
};
