/*
 * api.c - the public collective and point-to-point entry points: argument
 * checks (each failure logged once with its cause), algorithm choice, plan
 * building and hand-off to the engine.  Every entry point describes its
 * call in a call_t and goes through wf_api_start(); the blocking ones
 * wait on the non-blocking twin (the stream-ordered ones: api_stream.c).
 */
#include <stdint.h>
#include <string.h>

#include "algo/algo.h"
#include "api_call.h"
#include "comm.h"
#include "config.h"
#include "common.h"
#include "dev/dev_call.h"
#include "dev/devbuf.h"
#include "diag.h"
#include "node/node_coll.h"
#include "reduce/reduce.h"
#include "stall.h"


static bool is_rooted(wf_coll_t coll)
{
    return coll == WF_COLL_BROADCAST || coll == WF_COLL_REDUCE ||
           coll == WF_COLL_GATHER || coll == WF_COLL_SCATTER ||
           coll == WF_COLL_GATHERV || coll == WF_COLL_SCATTERV;
}

static bool is_blocked(wf_coll_t coll) /* buffers of size * count */
{
    return coll == WF_COLL_ALLGATHER || coll == WF_COLL_REDUCE_SCATTER ||
           coll == WF_COLL_ALLTOALL || coll == WF_COLL_GATHER ||
           coll == WF_COLL_SCATTER;
}

static weft_status_t check_kinds(const call_t *k, const wf_comm_impl_t *c)
{
    if (!wf_dtype_valid(k->dtype)) {
        WEFT_WARN(COLL, "%s: unknown dtype %d", k->fn, k->dtype);
        return WEFT_ERR_INVALID_ARG;
    }
    if (wf_coll_reduces(k->coll) && !wf_op_valid(k->op)) {
        WEFT_WARN(COLL, "%s: unknown reduction op %d", k->fn, k->op);
        return WEFT_ERR_INVALID_ARG;
    }
    if (wf_coll_reduces(k->coll) &&
        !wf_op_defined((weft_dtype_t)k->dtype, (weft_op_t)k->op)) {
        WEFT_WARN(COLL, "%s: op %s is not defined for %s (bitwise and "
                  "logical ops take integer dtypes)", k->fn,
                  wf_op_name((weft_op_t)k->op),
                  wf_dtype_name((weft_dtype_t)k->dtype));
        return WEFT_ERR_INVALID_ARG;
    }
    if (is_rooted(k->coll) && (k->root < 0 || k->root >= c->size)) {
        WEFT_WARN(COLL, "%s: root %d is outside [0, %d)", k->fn, k->root,
                  c->size);
        return WEFT_ERR_INVALID_ARG;
    }
    if (k->tag < 0) {
        WEFT_WARN(COLL, "%s: tag %d is negative (tags are 0 to %d)", k->fn,
                  k->tag, WEFT_TAG_MAX);
        return WEFT_ERR_INVALID_ARG;
    }
    if (k->peer == WEFT_ANY_SOURCE && k->coll == WF_COLL_RECV) {
        if (k->stream) {
            WEFT_WARN(COLL, "%s: a stream-ordered receive needs its sender; "
                      "WEFT_ANY_SOURCE is for host receives", k->fn);
            return WEFT_ERR_UNSUPPORTED;
        }
        if (c->size < 2) {
            WEFT_WARN(COLL, "%s: no other rank to receive from (a "
                      "communicator of one)", k->fn);
            return WEFT_ERR_INVALID_ARG;
        }
    } else if (k->peer != -1 || k->coll == WF_COLL_SEND ||
               k->coll == WF_COLL_RECV) {
        if (k->peer < 0 || k->peer >= c->size) {
            WEFT_WARN(COLL, "%s: peer %d is outside [0, %d)", k->fn, k->peer,
                      c->size);
            return WEFT_ERR_INVALID_ARG;
        }
        if (k->peer == c->rank) {
            WEFT_WARN(COLL, "%s: rank %d cannot send to or receive from "
                      "itself", k->fn, k->peer);
            return WEFT_ERR_UNSUPPORTED;
        }
    }
    size_t es = wf_dtype_size((weft_dtype_t)k->dtype);
    size_t blocks = is_blocked(k->coll) ? (size_t)c->size : 1;
    if (k->count > SIZE_MAX / es / blocks) {
        WEFT_WARN(COLL, "%s: count %zu of %s%s overflows the address space",
                  k->fn, k->count, wf_dtype_name((weft_dtype_t)k->dtype),
                  blocks > 1 ? " per rank" : "");
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

/* NULL only when the rank does not use the buffer; natural alignment. */
static weft_status_t check_buffer(const call_t *k, const char *what,
                                  const void *buf, uint64_t bytes)
{
    size_t es = wf_dtype_size((weft_dtype_t)k->dtype);
    if (!buf && bytes) {
        WEFT_WARN(COLL, "%s: %s is NULL with count %zu", k->fn, what,
                  k->count);
        return WEFT_ERR_INVALID_ARG;
    }
    if (bytes && (uintptr_t)buf % es) {
        WEFT_WARN(COLL, "%s: %s %p is not aligned to %zu bytes (%s)", k->fn,
                  what, buf, es, wf_dtype_name((weft_dtype_t)k->dtype));
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

/* In place as weft.h defines it for this collective. */
static bool in_place(const call_t *k, const wf_coll_args_t *a)
{
    const char *s = k->sendbuf, *r = k->recvbuf;
    uint64_t own = (uint64_t)a->rank * a->count * a->elem_size;
    uint64_t at_root = (uint64_t)a->root * a->count * a->elem_size;
    switch (k->coll) {
    case WF_COLL_ALLGATHER: return r && s == r + own;
    case WF_COLL_REDUCE_SCATTER: return s && r == s + own;
    case WF_COLL_GATHER: return a->rank == a->root && r && s == r + at_root;
    case WF_COLL_SCATTER: return a->rank == a->root && s && r == s + at_root;
    default: return s && s == r;
    }
}

static weft_status_t check_overlap(const call_t *k, uint64_t sb, uint64_t rb,
                                   bool inplace)
{
    uintptr_t x = (uintptr_t)k->sendbuf, y = (uintptr_t)k->recvbuf;
    if (inplace || !sb || !rb || x + sb <= y || y + rb <= x)
        return WEFT_OK;
    WEFT_WARN(COLL, "%s: sendbuf and recvbuf overlap other than in the "
              "in-place layout", k->fn);
    return WEFT_ERR_INVALID_ARG;
}

/* weft_wait's hook for a request that failed.  After a timeout it asks
 * the other ranks where they are (diag.c), so the error says who is stuck;
 * after another data-path failure it posts the failure for ranks no notice
 * reaches (stall.c).  The handle is checked again: the communicator may
 * have been destroyed meanwhile. */
static void report_failure(wf_comm_impl_t *c, weft_status_t status,
                           const char *where)
{
    if (status == WEFT_ERR_TIMEOUT)
        wf_diag_gather(c, where);
    else if (status == WEFT_ERR_REMOTE || status == WEFT_ERR_MISMATCH ||
             status == WEFT_ERR_TRANSPORT)
        wf_stall_post_failure(c);
}

static void request_failed(struct weft_request *req, void *owner,
                           weft_status_t status)
{
    wf_comm_impl_t *c;
    if (wf_comm_get((weft_comm_t)owner, "failure report", &c) != WEFT_OK)
        return;
    char where[96];
    wf_diag_position(req, where, sizeof(where));
    report_failure(c, status, where);
    wf_comm_put(c);
}

/* weft_wait's hook for a request that has waited another interval. */
static void request_stalled(struct weft_request *req, void *owner)
{
    wf_comm_impl_t *c;
    if (wf_comm_get((weft_comm_t)owner, "stall check", &c) == WEFT_OK) {
        wf_stall_check_async(c, req);
        wf_comm_put(c);
    }
}

/* Builds the plan and submits it; *out gets the request on success. */
static weft_status_t launch(wf_comm_impl_t *c, const call_t *k,
                            const wf_coll_args_t *a, const wf_dev_ops_t *dev,
                            int ordinal, bool node, weft_request_t *out)
{
    weft_status_t st;
    struct weft_request *req = wf_req_create();
    if (!req)
        return WEFT_ERR_NO_MEMORY;
    req->args = *a;
    req->p2p_tag = (uint32_t)k->tag;
    /* A receive from any source runs the plan of a receive from one rank,
     * retargeted once its sender is known (sched/p2p_seq.c). */
    wf_coll_args_t lookup = *a;
    if (a->peer == WEFT_ANY_SOURCE)
        lookup.peer = (a->rank + 1) % a->size;
    req->sendbuf = k->sendbuf;
    req->recvbuf = k->recvbuf;
    req->dev_ops = dev;
    req->dev_ordinal = ordinal;
    req->on_error = request_failed;
    req->on_stall = request_stalled;
    req->stall_every_ms = wf_stall_every_ms(c->cfg.timeout_ms);
    req->owner = k->comm;
    if (node) {
        wf_node_coll_attach(c->node_coll, req);
    } else {
        WEFT_CHECK_GOTO(wf_plan_cache_get(&c->plans, &lookup, c->cfg.algo,
                                          &req->built), st, err);
        /* The vector collectives' counts were the caller's, read only
         * while the plan was built. */
        req->args.vcounts = req->args.vdispls = NULL;
        req->args.vscounts = req->args.vsdispls = NULL;
        req->algo_name = req->built->algo_name;
        req->algo_id = req->built->algo_id;
        req->plan = &req->built->plan;
    }
    if (dev || k->stream)
        WEFT_CHECK_GOTO(wf_dev_call_prepare(c, k, req), st, err);
    st = wf_engine_submit(c->engine, req, !k->blocking);
    if (st != WEFT_OK) {
        wf_dev_call_cancel(c, req);
        goto err;
    }
    *out = req;
    return WEFT_OK;
err:
    wf_req_release(req);
    return st;
}

static weft_status_t start_on(wf_comm_impl_t *c, const call_t *k,
                              weft_request_t *req)
{
    uint64_t sb, rb;
    if (!req) {
        WEFT_WARN(COLL, "%s: req is NULL", k->fn);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(check_kinds(k, c));
    /* Zeroed whole, padding included: the plan cache compares the bytes. */
    wf_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.coll = k->coll;
    a.count = k->count;
    a.dtype = (weft_dtype_t)k->dtype;
    a.op = wf_coll_reduces(k->coll) ? (weft_op_t)k->op : WEFT_SUM;
    a.elem_size = wf_dtype_size((weft_dtype_t)k->dtype);
    a.peer = k->peer;
    a.root = k->root;
    a.rank = c->rank;
    a.size = c->size;
    a.chunk_bytes = (size_t)c->cfg.chunk_size;
    a.local_size = c->local_size;
    a.host_cores = c->host_cores;
    a.link_mbps = (int)c->cfg.link_mbps;
    a.single_copy_min = c->single_copy_min;
    a.nodes = c->nodes > 1 ? &c->nodemap : NULL;
    bool vector = wf_coll_is_vector(k->coll);
    if (vector)
        WEFT_CHECK(wf_api_vector_args(k, &a));
    wf_coll_buffer_bytes(&a, &sb, &rb);
    WEFT_CHECK(check_buffer(k, "sendbuf", k->sendbuf, sb));
    WEFT_CHECK(check_buffer(k, "recvbuf", k->recvbuf, rb));
    if (!vector)
        a.in_place = in_place(k, &a);
    WEFT_CHECK(check_overlap(k, sb, rb, a.in_place));
    const wf_dev_ops_t *dev = NULL;
    int ordinal = -1;
    WEFT_CHECK(wf_devbuf_classify(&c->memcache, k->fn, k->sendbuf, sb,
                                  k->recvbuf, rb, &dev, &ordinal));
    if (dev && k->peer == WEFT_ANY_SOURCE) { /* streams: check_kinds */
        WEFT_WARN(COLL, "%s: a receive from any source needs host memory; "
                  "this buffer is device memory", k->fn);
        return WEFT_ERR_UNSUPPORTED;
    }
    /* Small host collectives among the ranks of one machine go through
     * the shared segment; a blocking one with nothing queued before it
     * runs in this thread, without a request (*req stays NULL). */
    bool node = !dev && !k->stream && strcmp(c->cfg.algo, "auto") == 0 &&
                wf_node_coll_fits(c->node_coll, &a);
    if (node && k->blocking && wf_engine_quiet(c->engine)) {
        uint64_t seq = 0;
        weft_status_t st = wf_node_coll_run(c->node_coll, &a, k->sendbuf,
                                            k->recvbuf, &seq);
        if (st < 0) { /* as request_failed says it */
            char where[96];
            wf_diag_coll_position(a.coll, seq, where, sizeof(where));
            report_failure(c, st, where);
        }
        *req = NULL;
        return st;
    }
    return launch(c, k, &a, dev, ordinal, node, req);
}

/* The communicator is referenced only until the operation is handed to the
 * engine: waiting needs the engine, not the communicator, so a destroy or
 * abort from another thread is never held up by a waiter. */
weft_status_t wf_api_start(weft_comm_t comm, const call_t *k,
                           weft_request_t *req)
{
    if (wf_group_active())
        return wf_group_record(comm, k, req);
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, k->fn, &c));
    call_t call = *k;
    call.comm = comm; /* for the timeout hook (launch) */
    weft_status_t st = start_on(c, &call, req);
    wf_comm_put(c);
    return st;
}

/* Completes a started request (blocking forms). */
static weft_status_t wait_free(weft_status_t st, weft_request_t req)
{
    if (st < 0)
        return st;
    st = weft_wait(req);
    weft_request_free(req);
    return st;
}

weft_status_t wf_api_run(weft_comm_t comm, const call_t *k)
{
    weft_request_t req = NULL;
    call_t blocking = *k;
    blocking.blocking = true;
    /* Started before req is read; none when it ran already. */
    weft_status_t st = wf_api_start(comm, &blocking, &req);
    return st < 0 || req ? wait_free(st, req) : st;
}


WEFT_API weft_status_t weft_iallreduce(const void *sendbuf, void *recvbuf,
                                       size_t count, weft_dtype_t dtype,
                                       weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req)
{
    call_t k = CALL("weft_iallreduce", WF_COLL_ALLREDUCE, sendbuf, recvbuf,
                    count, dtype, op, -1, -1);
    return wf_api_start(comm, &k, req);
}

WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype,
                                      weft_op_t op, weft_comm_t comm)
{
    call_t k = CALL("weft_allreduce", WF_COLL_ALLREDUCE, sendbuf, recvbuf,
                    count, dtype, op, -1, -1);
    return wf_api_run(comm, &k);
}

/* Every point-to-point entry point: the untagged forms use tag 0.  A
 * blocking call drives the engine in weft_wait and, when asked, stores
 * the sender of what it received in *source. */
static weft_status_t p2p(const char *fn, wf_coll_t coll, const void *sbuf,
                         void *rbuf, size_t count, weft_dtype_t dtype,
                         int peer, int tag, weft_comm_t comm, bool blocking,
                         weft_request_t *req, int *source)
{
    call_t k = CALL(fn, coll, sbuf, rbuf, count, dtype, 0, -1, peer);
    k.tag = tag;
    if (!blocking)
        return wf_api_start(comm, &k, req);
    k.blocking = true;
    weft_request_t own = NULL;
    weft_status_t st = wf_api_start(comm, &k, &own);
    if (st < 0 || !own) /* !own: recorded in a group (group.c) */
        return st;
    st = weft_wait(own);
    if (st == WEFT_OK && source)
        weft_request_source(own, source);
    weft_request_free(own);
    return st;
}

WEFT_API weft_status_t weft_isend(const void *buf, size_t count,
                                  weft_dtype_t dtype, int peer,
                                  weft_comm_t comm, weft_request_t *req)
{
    return p2p("weft_isend", WF_COLL_SEND, buf, NULL, count, dtype, peer, 0,
               comm, false, req, NULL);
}

WEFT_API weft_status_t weft_irecv(void *buf, size_t count, weft_dtype_t dtype,
                                  int peer, weft_comm_t comm,
                                  weft_request_t *req)
{
    return p2p("weft_irecv", WF_COLL_RECV, NULL, buf, count, dtype, peer, 0,
               comm, false, req, NULL);
}

WEFT_API weft_status_t weft_isend_tag(const void *buf, size_t count,
                                      weft_dtype_t dtype, int peer, int tag,
                                      weft_comm_t comm, weft_request_t *req)
{
    return p2p("weft_isend_tag", WF_COLL_SEND, buf, NULL, count, dtype, peer,
               tag, comm, false, req, NULL);
}

WEFT_API weft_status_t weft_irecv_tag(void *buf, size_t count,
                                      weft_dtype_t dtype, int peer, int tag,
                                      weft_comm_t comm, weft_request_t *req)
{
    return p2p("weft_irecv_tag", WF_COLL_RECV, NULL, buf, count, dtype, peer,
               tag, comm, false, req, NULL);
}

WEFT_API weft_status_t weft_send_tag(const void *buf, size_t count,
                                     weft_dtype_t dtype, int peer, int tag,
                                     weft_comm_t comm)
{
    return p2p("weft_send_tag", WF_COLL_SEND, buf, NULL, count, dtype, peer,
               tag, comm, true, NULL, NULL);
}

WEFT_API weft_status_t weft_recv_tag(void *buf, size_t count,
                                     weft_dtype_t dtype, int peer, int tag,
                                     weft_comm_t comm, int *source)
{
    return p2p("weft_recv_tag", WF_COLL_RECV, NULL, buf, count, dtype, peer,
               tag, comm, true, NULL, source);
}

WEFT_API weft_status_t weft_send(const void *buf, size_t count,
                                 weft_dtype_t dtype, int peer,
                                 weft_comm_t comm)
{
    return p2p("weft_send", WF_COLL_SEND, buf, NULL, count, dtype, peer, 0,
               comm, true, NULL, NULL);
}

WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype,
                                 int peer, weft_comm_t comm)
{
    return p2p("weft_recv", WF_COLL_RECV, NULL, buf, count, dtype, peer, 0,
               comm, true, NULL, NULL);
}

/* The other collectives: each a non-blocking call and its blocking twin,
 * from one parameter list (without the request).  The blocking form starts
 * its request as blocking, as weft_allreduce does: the caller drives the
 * engine in weft_wait, so waking the progress thread for it would only
 * put a third thread on the cores (every call, when these forms went
 * through their non-blocking twins). */
#define WF_PARAMS(...) __VA_ARGS__
#define COLL_PAIR(name, coll_, params, sb_, rb_, count_, dtype_, op_, root_)   \
    WEFT_API weft_status_t weft_i##name(WF_PARAMS params,                      \
                                        weft_request_t *req)                   \
    {                                                                          \
        call_t k = CALL("weft_i" #name, coll_, sb_, rb_, count_, dtype_, op_,  \
                        root_, -1);                                            \
        return wf_api_start(comm, &k, req);                                    \
    }                                                                          \
    WEFT_API weft_status_t weft_##name(WF_PARAMS params)                       \
    {                                                                          \
        call_t k = CALL("weft_" #name, coll_, sb_, rb_, count_, dtype_, op_,   \
                        root_, -1);                                            \
        return wf_api_run(comm, &k);                                                  \
    }

COLL_PAIR(broadcast, WF_COLL_BROADCAST,
          (const void *sendbuf, void *recvbuf, size_t count,
           weft_dtype_t dtype, int root, weft_comm_t comm),
          sendbuf, recvbuf, count, dtype, 0, root)
COLL_PAIR(reduce, WF_COLL_REDUCE,
          (const void *sendbuf, void *recvbuf, size_t count,
           weft_dtype_t dtype, weft_op_t op, int root, weft_comm_t comm),
          sendbuf, recvbuf, count, dtype, op, root)
COLL_PAIR(allgather, WF_COLL_ALLGATHER,
          (const void *sendbuf, void *recvbuf, size_t sendcount,
           weft_dtype_t dtype, weft_comm_t comm),
          sendbuf, recvbuf, sendcount, dtype, 0, -1)
COLL_PAIR(reduce_scatter, WF_COLL_REDUCE_SCATTER,
          (const void *sendbuf, void *recvbuf, size_t recvcount,
           weft_dtype_t dtype, weft_op_t op, weft_comm_t comm),
          sendbuf, recvbuf, recvcount, dtype, op, -1)
COLL_PAIR(alltoall, WF_COLL_ALLTOALL,
          (const void *sendbuf, void *recvbuf, size_t count,
           weft_dtype_t dtype, weft_comm_t comm),
          sendbuf, recvbuf, count, dtype, 0, -1)
COLL_PAIR(barrier, WF_COLL_BARRIER, (weft_comm_t comm), NULL, NULL, 0,
          WEFT_UINT8, 0, -1)
COLL_PAIR(gather, WF_COLL_GATHER,
          (const void *sendbuf, void *recvbuf, size_t sendcount,
           weft_dtype_t dtype, int root, weft_comm_t comm),
          sendbuf, recvbuf, sendcount, dtype, 0, root)
COLL_PAIR(scatter, WF_COLL_SCATTER,
          (const void *sendbuf, void *recvbuf, size_t recvcount,
           weft_dtype_t dtype, int root, weft_comm_t comm),
          sendbuf, recvbuf, recvcount, dtype, 0, root)
