/*
 * bcast_pipe.c - a broadcast pipelined in chunks down a tree
 * (bcast_pipe.h).
 *
 * A rank forwards chunk c to its children as soon as chunk c has arrived,
 * so the deeper ranks work on early chunks while the root still sends
 * later ones.  A forwarding send of chunk c waits for the receive of
 * chunk c and nothing else: every region of the receive buffer is written
 * exactly once (by that receive, or on the root by the copy out of the
 * send buffer, which the root's sends do not read: they read the send
 * buffer itself).
 */
#include "algo/bcast_pipe.h"

#include "algo/rtree.h"
#include "common.h"

void wf_bcast_pipe_build(const wf_coll_args_t *a, wf_plan_t *plan,
                         const wf_bcast_pipe_t *shape)
{
    size_t es = a->elem_size, ce = shape->chunk_elems;
    bool root = shape->parent < 0;
    size_t nc = WF_MAX((size_t)1, wf_rtree_nchunks(a->count, ce));
    for (size_t c = 0; c < nc; c++) {
        uint64_t off = c * ce * es;
        uint64_t len = WF_MIN(ce, a->count - c * ce) * es;
        int32_t got = WF_NO_DEP;
        if (!root)
            got = wf_plan_recv(plan, shape->parent, (uint32_t)c,
                               wf_bref(WF_BUF_RECV, off), len, WF_NO_DEP,
                               WF_NO_DEP, WF_NO_DEP);
        wf_bref_t src = wf_bref(root ? WF_BUF_SEND : WF_BUF_RECV, off);
        int32_t first = WF_NO_DEP;
        for (int i = 0; i < shape->nkids; i++) {
            int32_t sent = wf_plan_send(plan, shape->kids[i], (uint32_t)c,
                                        src, len, got, WF_NO_DEP, WF_NO_DEP);
            if (i == 0)
                first = sent;
        }
        wf_rtree_bcast_root_copy(a, plan, first, off, len);
    }
}
