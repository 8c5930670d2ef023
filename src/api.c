/*
 * api.c - the public collective and point-to-point entry points: argument
 * checks (each failure logged once with its cause), algorithm choice, plan
 * building and hand-off to the engine.
 */
#include <stdint.h>
#include <string.h>

#include "algo/algo.h"
#include "comm.h"
#include "common.h"
#include "reduce/reduce.h"

typedef struct {
    const char *fn;
    const void *sendbuf;
    void *recvbuf;
    wf_coll_args_t args;
} call_t;

static weft_status_t check_dtype_op(const char *fn, int dtype, int op,
                                    bool need_op)
{
    if (!wf_dtype_valid(dtype)) {
        WEFT_WARN(COLL, "%s: unknown dtype %d", fn, dtype);
        return WEFT_ERR_INVALID_ARG;
    }
    if (need_op && !wf_op_valid(op)) {
        WEFT_WARN(COLL, "%s: unknown reduction op %d", fn, op);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

/* NULL only with count 0; natural alignment of the element type. */
static weft_status_t check_buffer(const char *fn, const char *what,
                                  const void *buf, size_t count,
                                  weft_dtype_t dtype)
{
    size_t es = wf_dtype_size(dtype);
    if (count > SIZE_MAX / es) {
        WEFT_WARN(COLL, "%s: count %zu of %s overflows the address space",
                  fn, count, wf_dtype_name(dtype));
        return WEFT_ERR_INVALID_ARG;
    }
    if (!buf && count) {
        WEFT_WARN(COLL, "%s: %s is NULL with count %zu", fn, what, count);
        return WEFT_ERR_INVALID_ARG;
    }
    if ((uintptr_t)buf % es) {
        WEFT_WARN(COLL, "%s: %s %p is not aligned to %zu bytes (%s)", fn,
                  what, buf, es, wf_dtype_name(dtype));
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

static weft_status_t check_peer(const char *fn, const wf_comm_impl_t *c,
                                int peer)
{
    if (peer < 0 || peer >= c->size) {
        WEFT_WARN(COLL, "%s: peer %d is outside [0, %d)", fn, peer, c->size);
        return WEFT_ERR_INVALID_ARG;
    }
    if (peer == c->rank) {
        WEFT_WARN(COLL, "%s: rank %d cannot send to or receive from itself",
                  fn, peer);
        return WEFT_ERR_UNSUPPORTED;
    }
    return WEFT_OK;
}

/* Builds the plan and submits it; *out gets the request on success. */
static weft_status_t launch(wf_comm_impl_t *c, call_t *call,
                            weft_request_t *out)
{
    weft_status_t st;
    wf_coll_args_t *a = &call->args;
    a->rank = c->rank;
    a->size = c->size;
    a->elem_size = wf_dtype_size(a->dtype);
    a->chunk_bytes = (size_t)c->cfg.chunk_size;
    a->in_place = call->sendbuf == call->recvbuf;
    struct weft_request *req = wf_req_create();
    if (!req)
        return WEFT_ERR_NO_MEMORY;
    req->args = *a;
    req->sendbuf = call->sendbuf;
    req->recvbuf = call->recvbuf;
    wf_plan_init(&req->plan, a->dtype, a->op, a->elem_size, a->size);
    WEFT_CHECK_GOTO(wf_algo_select(a, c->cfg.algo, &req->algo), st, err);
    WEFT_CHECK_GOTO(req->algo->build(a, &req->plan), st, err);
    st = wf_engine_submit(c->engine, req);
    if (st < 0)
        goto err;
    *out = req;
    return WEFT_OK;
err:
    wf_req_release(req);
    return st;
}

/* Runs a non-blocking call to completion. */
static weft_status_t wait_and_free(weft_status_t st, weft_request_t req)
{
    if (st < 0)
        return st;
    st = weft_wait(req);
    weft_request_free(req);
    return st;
}

static weft_status_t buffers_overlap(const char *fn, const void *a,
                                     const void *b, size_t bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (x != y && bytes && x < y + bytes && y < x + bytes) {
        WEFT_WARN(COLL, "%s: sendbuf and recvbuf overlap without being equal",
                  fn);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

WEFT_API weft_status_t weft_iallreduce(const void *sendbuf, void *recvbuf,
                                       size_t count, weft_dtype_t dtype,
                                       weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req)
{
    static const char fn[] = "weft_iallreduce";
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, fn, &c));
    if (!req) {
        WEFT_WARN(COLL, "%s: req is NULL", fn);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(check_dtype_op(fn, dtype, op, true));
    WEFT_CHECK(check_buffer(fn, "sendbuf", sendbuf, count, dtype));
    WEFT_CHECK(check_buffer(fn, "recvbuf", recvbuf, count, dtype));
    WEFT_CHECK(buffers_overlap(fn, sendbuf, recvbuf,
                               count * wf_dtype_size(dtype)));
    call_t call = {.fn = fn, .sendbuf = sendbuf, .recvbuf = recvbuf,
                   .args = {.coll = WF_COLL_ALLREDUCE, .count = count,
                            .dtype = dtype, .op = op, .peer = -1}};
    return launch(c, &call, req);
}

WEFT_API weft_status_t weft_allreduce(const void *sendbuf, void *recvbuf,
                                      size_t count, weft_dtype_t dtype,
                                      weft_op_t op, weft_comm_t comm)
{
    weft_request_t req = NULL;
    weft_status_t st =
        weft_iallreduce(sendbuf, recvbuf, count, dtype, op, comm, &req);
    return wait_and_free(st, req);
}

static weft_status_t p2p(const char *fn, wf_coll_t coll, void *buf,
                         size_t count, weft_dtype_t dtype, int peer,
                         weft_comm_t comm, weft_request_t *req)
{
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, fn, &c));
    if (!req) {
        WEFT_WARN(P2P, "%s: req is NULL", fn);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(check_dtype_op(fn, dtype, 0, false));
    WEFT_CHECK(check_buffer(fn, "buf", buf, count, dtype));
    WEFT_CHECK(check_peer(fn, c, peer));
    call_t call = {.fn = fn, .sendbuf = buf, .recvbuf = buf,
                   .args = {.coll = coll, .count = count, .dtype = dtype,
                            .op = WEFT_SUM, .peer = peer}};
    return launch(c, &call, req);
}

WEFT_API weft_status_t weft_isend(const void *buf, size_t count,
                                  weft_dtype_t dtype, int peer,
                                  weft_comm_t comm, weft_request_t *req)
{
    return p2p("weft_isend", WF_COLL_SEND, (void *)buf, count, dtype, peer,
               comm, req);
}

WEFT_API weft_status_t weft_irecv(void *buf, size_t count, weft_dtype_t dtype,
                                  int peer, weft_comm_t comm,
                                  weft_request_t *req)
{
    return p2p("weft_irecv", WF_COLL_RECV, buf, count, dtype, peer, comm,
               req);
}

WEFT_API weft_status_t weft_send(const void *buf, size_t count,
                                 weft_dtype_t dtype, int peer,
                                 weft_comm_t comm)
{
    weft_request_t req = NULL;
    weft_status_t st = weft_isend(buf, count, dtype, peer, comm, &req);
    return wait_and_free(st, req);
}

WEFT_API weft_status_t weft_recv(void *buf, size_t count, weft_dtype_t dtype,
                                 int peer, weft_comm_t comm)
{
    weft_request_t req = NULL;
    weft_status_t st = weft_irecv(buf, count, dtype, peer, comm, &req);
    return wait_and_free(st, req);
}
