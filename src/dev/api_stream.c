/*
 * api_stream.c - the stream-ordered entry points, weft_*_stream: like
 * NCCL's, each enqueues its operation on a device stream and returns at
 * once (stream_order.c says how).  They take the same arguments as the
 * non-blocking twins, with the stream (a cudaStream_t) in place of the
 * request; errors found later are the communicator's (weft_comm_get_error).
 */
#include "api_call.h"
#include "common.h"

/* Starts the call on `stream` and drops the caller's reference: the engine
 * and the stream's host function hold their own. */
static weft_status_t on_stream(weft_comm_t comm, call_t k, void *stream)
{
    if (!stream) {
        WEFT_WARN(COLL, "%s: stream is NULL (use the blocking or "
                  "non-blocking call for host-ordered operations)", k.fn);
        return WEFT_ERR_INVALID_ARG;
    }
    k.stream = stream;
    weft_request_t req = NULL;
    weft_status_t st = wf_api_start(comm, &k, &req);
    if (st == WEFT_OK)
        weft_request_free(req);
    return st;
}

#define STREAM_CALL(name, coll_, params, sb_, rb_, count_, dtype_, op_,      \
                    root_, peer_)                                            \
    WEFT_API weft_status_t weft_##name##_stream params                       \
    {                                                                        \
        return on_stream(comm,                                               \
                         CALL("weft_" #name "_stream", coll_, sb_, rb_,      \
                              count_, dtype_, op_, root_, peer_),            \
                         stream);                                            \
    }

STREAM_CALL(allreduce, WF_COLL_ALLREDUCE,
            (const void *sendbuf, void *recvbuf, size_t count,
             weft_dtype_t dtype, weft_op_t op, weft_comm_t comm,
             void *stream),
            sendbuf, recvbuf, count, dtype, op, -1, -1)
STREAM_CALL(broadcast, WF_COLL_BROADCAST,
            (const void *sendbuf, void *recvbuf, size_t count,
             weft_dtype_t dtype, int root, weft_comm_t comm, void *stream),
            sendbuf, recvbuf, count, dtype, 0, root, -1)
STREAM_CALL(reduce, WF_COLL_REDUCE,
            (const void *sendbuf, void *recvbuf, size_t count,
             weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t comm,
             void *stream),
            sendbuf, recvbuf, count, dtype, op, root, -1)
STREAM_CALL(allgather, WF_COLL_ALLGATHER,
            (const void *sendbuf, void *recvbuf, size_t sendcount,
             weft_dtype_t dtype, weft_comm_t comm, void *stream),
            sendbuf, recvbuf, sendcount, dtype, 0, -1, -1)
STREAM_CALL(reduce_scatter, WF_COLL_REDUCE_SCATTER,
            (const void *sendbuf, void *recvbuf, size_t recvcount,
             weft_dtype_t dtype, weft_op_t op, weft_comm_t comm,
             void *stream),
            sendbuf, recvbuf, recvcount, dtype, op, -1, -1)
STREAM_CALL(alltoall, WF_COLL_ALLTOALL,
            (const void *sendbuf, void *recvbuf, size_t count,
             weft_dtype_t dtype, weft_comm_t comm, void *stream),
            sendbuf, recvbuf, count, dtype, 0, -1, -1)
STREAM_CALL(gather, WF_COLL_GATHER,
            (const void *sendbuf, void *recvbuf, size_t sendcount,
             weft_dtype_t dtype, int root, weft_comm_t comm, void *stream),
            sendbuf, recvbuf, sendcount, dtype, 0, root, -1)
STREAM_CALL(scatter, WF_COLL_SCATTER,
            (const void *sendbuf, void *recvbuf, size_t recvcount,
             weft_dtype_t dtype, int root, weft_comm_t comm, void *stream),
            sendbuf, recvbuf, recvcount, dtype, 0, root, -1)
STREAM_CALL(send, WF_COLL_SEND,
            (const void *buf, size_t count, weft_dtype_t dtype, int peer,
             weft_comm_t comm, void *stream),
            buf, NULL, count, dtype, 0, -1, peer)
STREAM_CALL(recv, WF_COLL_RECV,
            (void *buf, size_t count, weft_dtype_t dtype, int peer,
             weft_comm_t comm, void *stream),
            NULL, buf, count, dtype, 0, -1, peer)
