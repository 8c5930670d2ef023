/*
 * dev_call.c - what a call on device buffers or on a stream needs before
 * the engine sees it (dev_call.h): the device layer's checks, its kernels
 * loaded, the engine kept from allocating device memory while a stream
 * may wait for it, and the call's place in its stream.
 */
#include <string.h>

#include "common.h"
#include "config.h"
#include "dev/dev_call.h"
#include "dev/dev_exec.h"
#include "dev/stream_order.h"

/* The device layer for an operation enqueued on a stream
 * (stream_order.c), which it needs even when its buffers are host memory;
 * NULL after a warning. */
static const wf_dev_ops_t *stream_layer(const call_t *k,
                                        const struct weft_request *req)
{
    char why[512] = "";
    const wf_dev_ops_t *dev = req->dev_ops ? req->dev_ops
                                           : wf_dev_layer(why, sizeof(why));
    if (!dev)
        WEFT_WARN(COLL, "%s: a stream was given but the device layer is "
                  "unavailable: %s", k->fn, why);
    return dev;
}

/* Once per process, at its first call on a stream: one hardware queue
 * may serialise the engine's stream behind the application's, which waits
 * for the engine (docs/cuda.md). */
static void warn_one_hardware_queue(const call_t *k)
{
    static int looked;
    if (__atomic_exchange_n(&looked, 1, __ATOMIC_RELAXED))
        return;
    const char *conns = wf_env_get("CUDA_DEVICE_MAX_CONNECTIONS");
    if (conns && strcmp(conns, "1") == 0)
        WEFT_WARN(COLL, "%s: CUDA_DEVICE_MAX_CONNECTIONS=1 lets CUDA run the "
                  "engine's stream behind this stream, which waits for the "
                  "engine: a stream-ordered call may then wait until "
                  "WEFT_TIMEOUT (docs/cuda.md); the calls without a stream "
                  "are not affected", k->fn);
}

/* Before anything is allocated or enqueued for a call on a stream, with
 * its layer `dev`: refuses a stream being captured into a CUDA graph (a
 * replay would run the operation's host function and flag wait again, for
 * a request long ended). */
static weft_status_t check_stream(const call_t *k, const wf_dev_ops_t *dev)
{
    int capturing = 0;
    warn_one_hardware_queue(k);
    if (dev->stream_capturing(k->stream, &capturing) != WEFT_OK) {
        WEFT_WARN(COLL, "%s: asking whether the stream is being captured "
                  "failed: %s", k->fn, dev->last_error());
        return WEFT_ERR_CUDA;
    }
    if (capturing) {
        WEFT_WARN(COLL, "%s: the stream is being captured into a CUDA "
                  "graph; weft's stream-ordered calls cannot be captured "
                  "(each is one operation, which a replay would repeat)",
                  k->fn);
        return WEFT_ERR_UNSUPPORTED;
    }
    return WEFT_OK;
}

/* A call on device buffers without a stream starts after the work the
 * application enqueued on the default stream before it (weft_cuda.h). */
static weft_status_t mark_default_stream(const call_t *k,
                                         struct weft_request *req)
{
    weft_status_t st = req->dev_ops->mark_default_stream(req->dev_ordinal,
                                                         &req->dev_after);
    if (st != WEFT_OK) {
        req->dev_after = NULL;
        WEFT_WARN(COLL, "%s: ordering after the default stream of GPU %d "
                  "failed: %s", k->fn, req->dev_ordinal,
                  req->dev_ops->last_error());
        return st == WEFT_ERR_NO_MEMORY ? st : WEFT_ERR_CUDA;
    }
    return WEFT_OK;
}

/* Loads the device layer's kernels from this thread before the engine's
 * thread launches any (weft_cuda.h, prepare_device): the first time per
 * device, then nothing. */
static weft_status_t prepare_device(const call_t *k,
                                    const struct weft_request *req)
{
    weft_status_t st = req->dev_ops->prepare_device(req->dev_ordinal);
    if (st != WEFT_OK)
        WEFT_WARN(COLL, "%s: loading the reduction kernels on GPU %d "
                  "failed: %s", k->fn, req->dev_ordinal,
                  req->dev_ops->last_error());
    return st;
}

/* A stream-ordered call on device buffers: its staging and scratch are
 * allocated here, before its stream waits for it (engine.h). */
static weft_status_t reserve_device_memory(wf_comm_impl_t *c, const call_t *k,
                                           struct weft_request *req)
{
    weft_status_t st = wf_engine_dev_reserve(c->engine, req);
    if (st != WEFT_OK)
        WEFT_WARN(COLL, "%s: reserving staging and scratch memory on GPU %d "
                  "failed: %s", k->fn, req->dev_ordinal,
                  st == WEFT_ERR_INVALID_ARG
                      ? "the communicator works on another GPU"
                      : req->dev_ops->last_error());
    return st;
}

/* The engine's thread must not allocate device memory while a stream
 * waits for one of its requests (engine.h): a stream-ordered call waits
 * for the ordinary device calls in flight without a reservation, and is
 * reserved for; an ordinary call beside a stream-ordered one is reserved
 * for too. */
static weft_status_t keep_engine_from_allocating(wf_comm_impl_t *c,
                                                 const call_t *k,
                                                 struct weft_request *req)
{
    wf_engine_t *e = c->engine;
    wf_engine_dev_count(e, req, k->stream != NULL);
    if (k->stream) {
        if (wf_engine_dev_wait_plain(e, c->cfg.timeout_ms) != WEFT_OK) {
            WEFT_WARN(COLL, "%s: device operations without a stream on "
                      "this communicator did not end within the timeout; "
                      "a stream-ordered call waits for them", k->fn);
            return WEFT_ERR_TIMEOUT;
        }
        return reserve_device_memory(c, k, req);
    }
    if (!wf_engine_dev_streams_pending(e))
        return WEFT_OK;
    WEFT_CHECK(reserve_device_memory(c, k, req));
    wf_engine_dev_uncount(e, req);
    return WEFT_OK;
}

weft_status_t wf_dev_call_prepare(wf_comm_impl_t *c, const call_t *k,
                                  struct weft_request *req)
{
    const wf_dev_ops_t *stream_dev = NULL;
    if (k->stream) {
        stream_dev = stream_layer(k, req);
        WEFT_CHECK(stream_dev ? check_stream(k, stream_dev) : WEFT_ERR_CUDA);
    }
    weft_status_t st = WEFT_OK;
    if (req->dev_ops) {
        req->stage = &wf_dev_stage_ops;
        WEFT_CHECK(prepare_device(k, req));
        st = keep_engine_from_allocating(c, k, req);
    }
    if (st == WEFT_OK && k->stream)
        st = wf_stream_attach(stream_dev, req, k->stream);
    else if (st == WEFT_OK && req->dev_ops)
        st = mark_default_stream(k, req);
    if (st != WEFT_OK)
        wf_dev_call_cancel(c, req);
    return st;
}

void wf_dev_call_cancel(wf_comm_impl_t *c, struct weft_request *req)
{
    if (req->dev_ops)
        wf_engine_dev_reserve_cancel(c->engine, req);
}
