/*
 * api_call.h - how the public entry points describe a call (api.c,
 * api_stream.c): every one fills a call_t and goes through wf_api_start.
 */
#ifndef WF_API_CALL_H
#define WF_API_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"
#include "weft.h"

typedef struct {
    const char *fn;
    wf_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    int dtype;
    int op;
    int root; /* -1 when not rooted */
    int peer; /* -1 when not point-to-point */
    int tag;  /* point-to-point: the caller's tag (0 unless given) */
    bool blocking; /* the caller waits right away and drives the engine */
    void *stream;  /* a device stream to enqueue on (api_stream.c), or NULL */
    weft_comm_t comm; /* the handle the call came with */
    /* The vector collectives' per-rank counts and displacements
     * (api_vector.c); NULL for the others. */
    const size_t *counts, *displs;   /* the buffer with a block per rank */
    const size_t *scounts, *sdispls; /* alltoallv's send buffer */
} call_t;

#define CALL(name, coll_, sb_, rb_, count_, dtype_, op_, root_, peer_)         \
    (call_t)                                                                   \
    {                                                                          \
        .fn = name, .coll = coll_, .sendbuf = sb_, .recvbuf = rb_,             \
        .count = count_, .dtype = (int)(dtype_), .op = (int)(op_),             \
        .root = root_, .peer = peer_                                           \
    }

/* Checks the call, builds its plan and hands it to the engine; *req gets
 * the request.  With k->stream the request waits for its place in that
 * stream and holds the stream's later work until it ends. */
weft_status_t wf_api_start(weft_comm_t comm, const call_t *k,
                           weft_request_t *req);

/* A blocking call: starts `k` as blocking and waits for it. */
weft_status_t wf_api_run(weft_comm_t comm, const call_t *k);

/* The vector collectives' part of the arguments (api_vector.c): checks
 * the counts and displacements (each failure logged with its cause) and
 * fills a->vcounts ... a->vrecv_bytes, a->count (this rank's own block,
 * or for alltoallv all it sends) and a->in_place.  The rest of `a` is
 * filled already. */
weft_status_t wf_api_vector_args(const call_t *k, wf_coll_args_t *a);

/* Grouped calls (group.c): whether this thread is inside a group, and
 * recording a call there (started at weft_group_end; *req NULL). */
bool wf_group_active(void);
weft_status_t wf_group_record(weft_comm_t comm, const call_t *k,
                              weft_request_t *req);

#endif /* WF_API_CALL_H */
