/*
 * coll.h - what one collective call is: its kind and its arguments.
 * Below the algorithms (which turn a call into a plan) and the engine
 * (which runs plans and puts the kind in message signatures), so that
 * neither includes the other for it.
 */
#ifndef WF_PLAN_COLL_H
#define WF_PLAN_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* Collective kinds; the values travel in message signatures. */
typedef enum {
    WF_COLL_ALLREDUCE = 1,
    WF_COLL_SEND = 2,
    WF_COLL_RECV = 3,
    WF_COLL_BROADCAST = 4,
    WF_COLL_REDUCE = 5,
    WF_COLL_ALLGATHER = 6,
    WF_COLL_REDUCE_SCATTER = 7,
    WF_COLL_ALLTOALL = 8,
    WF_COLL_BARRIER = 9,
    WF_COLL_GATHER = 10,
    WF_COLL_SCATTER = 11,
    WF_COLL_ALLGATHERV = 12,
    WF_COLL_GATHERV = 13,
    WF_COLL_SCATTERV = 14,
    WF_COLL_ALLTOALLV = 15,
    WF_COLL_REDUCE_SCATTERV = 16,
    WF_COLL_MAX
} wf_coll_t;

/*
 * Everything an algorithm may look at.  `count` is the count the caller
 * passed, whose meaning depends on the collective (see weft.h): elements of
 * the whole buffer for allreduce, broadcast and reduce, of one rank's block
 * for allgather, reduce-scatter, alltoall (per peer), gather and scatter.
 * Buffer layouts in the plan (WF_BUF_SEND, WF_BUF_RECV) follow weft.h;
 * wf_coll_buffer_bytes gives their sizes.
 *
 * in_place is set when the caller's buffers alias the way weft.h defines
 * in-place for that collective (allgather: sendbuf == recvbuf + rank *
 * block; reduce-scatter: recvbuf == sendbuf + rank * block; gather and
 * scatter: the same on the root; the others: sendbuf == recvbuf).  The
 * plan must then be correct for that aliasing, and may skip the copy of
 * the rank's own block.
 */
typedef struct wf_coll_args {
    wf_coll_t coll;
    size_t count;
    weft_dtype_t dtype;
    weft_op_t op;       /* reducing collectives only */
    size_t elem_size;
    int peer;           /* send/recv */
    int root;           /* broadcast, reduce, gather, scatter */
    int rank;
    int size;
    size_t chunk_bytes; /* WEFT_CHUNK_SIZE */
    bool in_place;
    int local_size;     /* ranks sharing this machine (0: unknown, 1) */
    int host_cores;     /* its CPUs (0: unknown, enough) */
    int link_mbps;      /* WEFT_LINK_MBPS (0: the cost model's own) */
    size_t single_copy_min; /* the transport copies messages of this many
                             * bytes or more once between ranks on one
                             * machine (WEFT_TCP_CMA_MIN); 0: never */
    /* Which ranks share a machine, when they are on more than one (the
     * node-aware algorithms, src/algo/hier_*.c); NULL otherwise.  Owned by
     * the communicator. */
    const struct wf_node_map *nodes;
    /* The vector collectives (wf_coll_is_vector): per-rank counts and
     * displacements in elements, as weft.h takes them.  vcounts/vdispls
     * describe the buffer with one block per rank (the receive buffer of
     * allgatherv, gatherv and alltoallv, the send buffer of scatterv and
     * reduce_scatterv, whose blocks are contiguous: vdispls NULL);
     * vscounts/vsdispls alltoallv's send buffer.  They point into the
     * caller's arrays and are read only while the plan is built (such
     * plans are never cached, and the request's copy has them NULL).
     * vdigest sums up vcounts where every rank passes the same array
     * (allgatherv, reduce_scatterv) and goes into the message signature,
     * so ranks that disagree fail with WEFT_ERR_MISMATCH; elsewhere each
     * message's length is checked against what its receiver expects.
     * vsend_bytes/vrecv_bytes are the buffers' extents. */
    const size_t *vcounts, *vdispls;
    const size_t *vscounts, *vsdispls;
    uint64_t vdigest;
    uint64_t vsend_bytes, vrecv_bytes;
} wf_coll_args_t;

/* Sizes in bytes of the send and receive buffers the plan may touch on
 * this rank (0 for a buffer the rank does not use). */
void wf_coll_buffer_bytes(const wf_coll_args_t *args, uint64_t *send_bytes,
                          uint64_t *recv_bytes);

/* Whether the collective takes per-rank counts (allgatherv ...). */
static inline bool wf_coll_is_vector(wf_coll_t coll)
{
    return coll >= WF_COLL_ALLGATHERV && coll <= WF_COLL_REDUCE_SCATTERV;
}

/* Whether the collective combines values with args->op. */
bool wf_coll_reduces(wf_coll_t coll);

/* "allreduce", ...; "?" for a value out of range. */
const char *wf_coll_name(wf_coll_t coll);

#endif /* WF_PLAN_COLL_H */
