/*
 * node_impl.h - the shared segment of node_coll.h and the state of one
 * rank's view of it (node_seg.c, node_run.c).
 *
 *   head    magic, keys, sizes, the failure board        (64-byte aligned)
 *   pids    every rank's process id, for its pidfd
 *   headers [rank][depth]: a 64-byte line per operation (number,
 *           signature, small data); one rank's lines are consecutive, so
 *           a reader running through them streams, as through a ring
 *   data    [depth][rank]: the payloads, each a whole number of lines
 */
#ifndef WF_NODE_IMPL_H
#define WF_NODE_IMPL_H

#include <stdint.h>

#include "node/node_coll.h"

#define WF_NODE_MAGIC 0x776674736567ull /* "weftseg" */
/* Operations a rank's slots hold (a power of two): how far a broadcast's
 * root or a reduce's senders, which wait for nobody, may run ahead. */
#define WF_NODE_DEPTH 8

typedef struct {
    uint64_t magic;
    uint64_t comm_key;
    uint64_t nonce;    /* random, from rank 0's store record: attaching to
                        * a stale or foreign segment fails the check */
    uint32_t size;
    uint32_t payload;
    /* The failure board: the first rank to claim it (rank + 1) writes
     * status, origin and text, then sets posted. */
    uint32_t claim;    /* atomic */
    uint32_t posted;   /* atomic */
    int32_t status;
    int32_t origin;
    char text[WF_ERRMSG_MAX];
} __attribute__((aligned(64))) wf_node_head_t;

typedef struct {
    uint64_t seq;      /* atomic: the operation last published here */
    uint64_t sig[2];   /* its signature (wf_sig_describe's format) */
    /* A hash of the signatures of every operation this rank published
     * through the segment, up to this one: two ranks whose histories agree
     * at one operation agreed at all before it (node_run.c). */
    uint64_t history;
    /* Data this small rides in the header's cache line: a reader then
     * takes one line from the writer's cache, not two. */
    char inline_data[32];
} __attribute__((aligned(64))) wf_node_slot_t;

/* What a rank keeps of the operations it published, for the last
 * WF_NODE_DEPTH of them: enough to name the call in which another rank's
 * history first differs. */
typedef struct {
    uint64_t seq;      /* the communicator's collective number */
    uint64_t sig[2];
    uint64_t history;
} wf_node_past_t;

/* What a rank knows of another, from the slots it has read (atomic). */
typedef struct {
    uint64_t known;    /* the last operation it is known to have published */
    uint64_t verified; /* the last one whose history was compared */
} wf_node_peer_t;

struct wf_node_coll {
    wf_node_head_t *head;
    int32_t *pids;
    wf_node_slot_t *headers;
    char *data;
    size_t data_stride;    /* payload, rounded to cache lines */
    size_t map_bytes;
    int rank, size;
    uint32_t payload;
    int64_t timeout_ms;
    uint32_t spin_polls;   /* polls before yielding: 0 when the ranks
                            * outnumber the cores */
    wf_engine_t *engine;
    uint64_t next;         /* atomic: number of the last operation taken */
    uint64_t done;         /* atomic: number of the last one finished */
    wf_node_past_t past[WF_NODE_DEPTH]; /* by operation number */
    int *pidfds;           /* of the other ranks' processes, -1: none */
    wf_node_peer_t *peers; /* by rank (node_run.c) */
    uint64_t verified_all; /* atomic: the least of peers[].verified */
};

/* Adopts a failure another rank posted on the board into e; whether
 * there was one (node_seg.c). */
bool wf_node_board_adopt(wf_node_coll_t *n, wf_engine_t *e);

static inline wf_node_slot_t *wf_node_slot(const wf_node_coll_t *n,
                                           uint64_t seq, int rank)
{
    return &n->headers[(size_t)rank * WF_NODE_DEPTH +
                       (size_t)(seq & (WF_NODE_DEPTH - 1))];
}

/* Where rank's `bytes` of data for operation seq are: every rank of one
 * operation has the same size per rank, so writer and readers agree. */
static inline char *wf_node_data(const wf_node_coll_t *n, uint64_t seq,
                                 int rank, size_t bytes)
{
    if (bytes <= sizeof(n->headers[0].inline_data))
        return wf_node_slot(n, seq, rank)->inline_data;
    size_t i = (size_t)(seq & (WF_NODE_DEPTH - 1)) * (size_t)n->size +
               (size_t)rank;
    return n->data + i * n->data_stride;
}

#endif /* WF_NODE_IMPL_H */
