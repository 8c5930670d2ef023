/*
 * coll.c - names and buffer sizes of the collectives (plan/coll.h).
 */
#include "plan/coll.h"

static const char *const coll_names[WF_COLL_MAX] = {
    [WF_COLL_ALLREDUCE] = "allreduce",
    [WF_COLL_SEND] = "send",
    [WF_COLL_RECV] = "recv",
    [WF_COLL_BROADCAST] = "broadcast",
    [WF_COLL_REDUCE] = "reduce",
    [WF_COLL_ALLGATHER] = "allgather",
    [WF_COLL_REDUCE_SCATTER] = "reducescatter",
    [WF_COLL_ALLTOALL] = "alltoall",
    [WF_COLL_BARRIER] = "barrier",
    [WF_COLL_GATHER] = "gather",
    [WF_COLL_SCATTER] = "scatter",
    [WF_COLL_ALLGATHERV] = "allgatherv",
    [WF_COLL_GATHERV] = "gatherv",
    [WF_COLL_SCATTERV] = "scatterv",
    [WF_COLL_ALLTOALLV] = "alltoallv",
    [WF_COLL_REDUCE_SCATTERV] = "reducescatterv",
};

const char *wf_coll_name(wf_coll_t coll)
{
    return coll > 0 && coll < WF_COLL_MAX ? coll_names[coll] : "?";
}

bool wf_coll_reduces(wf_coll_t coll)
{
    return coll == WF_COLL_ALLREDUCE || coll == WF_COLL_REDUCE ||
           coll == WF_COLL_REDUCE_SCATTER || coll == WF_COLL_REDUCE_SCATTERV;
}

void wf_coll_buffer_bytes(const wf_coll_args_t *a, uint64_t *send_bytes,
                          uint64_t *recv_bytes)
{
    uint64_t one = (uint64_t)a->count * a->elem_size;
    uint64_t all = one * (uint64_t)a->size;
    bool root = a->rank == a->root;
    uint64_t s = one, r = one;
    switch (a->coll) {
    case WF_COLL_SEND: r = 0; break;
    case WF_COLL_RECV: s = 0; break;
    case WF_COLL_BROADCAST: s = root ? one : 0; break;
    case WF_COLL_REDUCE: r = root ? one : 0; break;
    case WF_COLL_ALLGATHER: r = all; break;
    case WF_COLL_REDUCE_SCATTER: s = all; break;
    case WF_COLL_ALLTOALL: s = r = all; break;
    case WF_COLL_BARRIER: s = r = 0; break;
    case WF_COLL_GATHER: r = root ? all : 0; break;
    case WF_COLL_SCATTER: s = root ? all : 0; break;
    default:
        if (wf_coll_is_vector(a->coll)) {
            s = a->vsend_bytes;
            r = a->vrecv_bytes;
        }
        break;
    }
    *send_bytes = s;
    *recv_bytes = r;
}
