/*
 * linear_util.c - what the linear algorithms share (see linear_util.h).
 */
#include <math.h>
#include <stdlib.h>

#include "algo/linear_util.h"
#include "algo/rtree.h"
#include "common.h"

double wf_linear_cost(const wf_coll_args_t *a, wf_cost_terms_fn terms)
{
    if (!wf_cost_ranks_outnumber_cores(a))
        return INFINITY;
    return wf_cost_of_terms(a, terms);
}

void wf_linear_rooted_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    double nc = wf_rtree_cost_chunks(a);
    *t = (wf_cost_terms_t){.rounds = nc, .path_sent = (n - 1) * bytes,
                           .messages = (n - 1) * nc,
                           .bytes = (n - 1) * bytes,
                           .own_messages = (n - 1) * nc,
                           .own_bytes = (n - 1) * bytes};
}

void wf_linear_root(const wf_coll_args_t *a, wf_plan_t *plan, size_t chunk,
                    size_t nchunks, bool send_back)
{
    size_t es = a->elem_size, slots = WF_MIN(nchunks, WF_LINEAR_SLOTS);
    int root = a->rank, peers = a->size - 1;
    int32_t *slot_user = malloc(sizeof(int32_t) * (size_t)peers * slots);
    if (!slot_user) {
        plan->failed = true;
        return;
    }
    for (size_t i = 0; i < (size_t)peers * slots; i++)
        slot_user[i] = WF_NO_DEP;
    uint64_t slot_bytes = (uint64_t)WF_MIN(chunk, a->count) * es;
    uint32_t up_stride = send_back ? 2 : 1;
    for (size_t c = 0; c < nchunks; c++) {
        size_t len = WF_MIN(chunk, a->count - c * chunk);
        uint64_t off = (uint64_t)c * chunk * es;
        wf_bref_t acc = wf_bref(WF_BUF_SEND, off);
        int32_t last = WF_NO_DEP;
        /* Peer k (0-based among the others) is rank k, or k + 1 from the
         * root on. */
        for (int k = 0; k < peers; k++) {
            int r = k < root ? k : k + 1;
            size_t slot = (size_t)k * slots + c % slots;
            int32_t *user = &slot_user[slot];
            wf_bref_t sb = wf_bref(WF_BUF_SCRATCH, slot * slot_bytes);
            int32_t rv = wf_plan_recv(plan, r, (uint32_t)(up_stride * c), sb,
                                      len * es, *user, WF_NO_DEP, WF_NO_DEP);
            last = wf_plan_reduce(plan, wf_bref(WF_BUF_RECV, off), acc, sb,
                                  len, rv, last, WF_NO_DEP);
            *user = last;
            acc = wf_bref(WF_BUF_RECV, off);
        }
        if (a->op == WEFT_AVG)
            last = wf_plan_avg(plan, wf_bref(WF_BUF_RECV, off), len, last,
                               WF_NO_DEP, WF_NO_DEP);
        for (int k = 0; send_back && k < peers; k++)
            wf_plan_send(plan, k < root ? k : k + 1, (uint32_t)(2 * c + 1),
                         wf_bref(WF_BUF_RECV, off), len * es, last,
                         WF_NO_DEP, WF_NO_DEP);
    }
    plan->scratch_bytes = (uint64_t)peers * slots * slot_bytes;
    free(slot_user);
}
