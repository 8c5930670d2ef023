/*
 * dev_exec.c - the steps of a plan whose buffers are device memory: the
 * engine's staging ops for them (struct wf_stage_ops, sched/exec_impl.h).
 *
 * The transports move host memory, so every message to or from device
 * memory goes through a pinned staging buffer:
 *
 *   SEND    device -> staging copy on the engine's stream, event; when the
 *           event completes the staging buffer is sent; it is reused once
 *           the send is done.
 *   RECV    the message lands in a staging buffer; then a staging ->
 *           device copy, event; the step is done when the event is.
 *   REDUCE, COPY, AVG  run on the device (cuda/reduce.cu's kernels, the
 *           host table's results bit for bit) on the engine's stream.
 *
 * Plans are chunked, so this is a pipeline: while chunk i is on the wire
 * the copy of chunk i+1 runs on the device, and received chunks are
 * reduced on the device, never on the host.  The engine never blocks on
 * the device: it polls the events in its progress rounds like transfers.
 * One stream per engine keeps the device work in issue order; the plan's
 * dependencies decide what may be issued.
 *
 * Staging buffers and device scratch come from the engine's pool
 * (dev_pool.c), which keeps them for the next operation and, for a
 * stream-ordered one, has them reserved by the caller: the engine's thread
 * never allocates while a stream may wait for it.  Events are kept too.
 * The device layer is cuda/weft_cuda.h's ops table (the real one or the
 * tests' fake).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "reduce/reduce.h"
#include "dev/dev_exec.h"
#include "dev/dev_pool.h"
#include "sched/exec_impl.h"

#define WF_DEV_DRAIN_MS 10000
/* Spare events an engine keeps; more in flight at once are made anew. */
#define WF_DEV_SPARE_EVENTS 64

struct wf_engine_dev {
    const wf_dev_ops_t *ops;
    int device;
    wf_dev_stream_t stream;
    wf_dev_event_t *free_events;
    uint32_t nfree_events, events_cap;
    wf_dev_pool_t *pool;
    /* Device work enqueued whose event has not been seen complete. */
    uint32_t busy_works;
};

bool wf_engine_dev_busy(const wf_engine_t *e)
{
    return e->dev && e->dev->busy_works > 0;
}

/* Fails the engine: out of memory and weft's own bugs keep their status,
 * anything else is the device's (WEFT_ERR_CUDA). */
static weft_status_t failed_why(wf_engine_t *e, const struct weft_request *req,
                                const char *what, weft_status_t st,
                                const char *why)
{
    if (st != WEFT_ERR_NO_MEMORY && st != WEFT_ERR_INTERNAL)
        st = WEFT_ERR_CUDA;
    wf_engine_fail(e, st, "%s #%llu on rank %d: %s failed: %s",
                   wf_coll_name(req->args.coll),
                   (unsigned long long)req->seq, e->rank, what, why);
    return st;
}

static weft_status_t dev_failed(wf_engine_t *e, const struct weft_request *req,
                                const char *what, weft_status_t st)
{
    return failed_why(e, req, what, st,
                      e->dev ? e->dev->ops->last_error() : "no device layer");
}

/* A pool failure: its own reason (a missing reservation), or the layer's. */
static weft_status_t pool_failed(wf_engine_t *e, const struct weft_request *req,
                                 const char *what, weft_status_t st,
                                 const char *why)
{
    return why ? failed_why(e, req, what, WEFT_ERR_INTERNAL, why)
               : dev_failed(e, req, what, st);
}

static void event_give(wf_engine_dev_t *d, wf_dev_event_t ev);

/* The engine's stream waits for the application's default stream as the
 * request was called (req->dev_after), before the request's first device
 * work.  The event then joins the engine's spare events, or is destroyed
 * when there are enough: CUDA frees an event that a wait still refers to
 * once the wait is done (the fake layer too), and every blocking call
 * brings one, so keeping them all grew the pool by one event per call. */
static weft_status_t order_after_caller(wf_engine_t *e,
                                        struct weft_request *req)
{
    wf_engine_dev_t *d = e->dev;
    wf_dev_event_t ev = req->dev_after;
    req->dev_after = NULL;
    weft_status_t st = d->ops->stream_wait_event(d->stream, ev);
    event_give(d, ev);
    return st == WEFT_OK ? st : dev_failed(e, req, "waiting for the default "
                                           "stream", st);
}

/* The engine's device state, made by its first device request (in the
 * engine's thread, or in a stream-ordered caller's: wf_engine_dev_reserve),
 * under progress_lock. */
static wf_engine_dev_t *dev_state(wf_engine_t *e, const wf_dev_ops_t *ops,
                                  int device)
{
    wf_engine_dev_t *d = e->dev;
    if (d)
        return d;
    d = calloc(1, sizeof(*d));
    if (!d || !(d->pool = wf_dev_pool_new(ops, device))) {
        free(d);
        return NULL;
    }
    d->ops = ops;
    d->device = device;
    e->dev = d;
    return d;
}

/* The engine's device state for a request: makes the request's GPU
 * current for the calling thread, the engine's stream on first use, and
 * orders that stream after the request's caller. */
static wf_engine_dev_t *dev_of(wf_engine_t *e, struct weft_request *req)
{
    wf_engine_dev_t *d = dev_state(e, req->dev_ops, req->dev_ordinal);
    if (!d || d->ops->set_device(d->device) != WEFT_OK)
        return NULL;
    if (!d->stream && d->ops->stream_create(&d->stream) != WEFT_OK) {
        d->stream = NULL;
        dev_failed(e, req, "creating the engine's stream", WEFT_ERR_CUDA);
        return NULL;
    }
    if (req->dev_after && order_after_caller(e, req) != WEFT_OK)
        return NULL;
    return d;
}

weft_status_t wf_engine_dev_reserve(wf_engine_t *e, struct weft_request *req)
{
    pthread_mutex_lock(&e->progress_lock);
    wf_engine_dev_t *d = dev_state(e, req->dev_ops, req->dev_ordinal);
    pthread_mutex_unlock(&e->progress_lock);
    if (!d)
        return WEFT_ERR_NO_MEMORY;
    if (d->ops != req->dev_ops || d->device != req->dev_ordinal)
        return WEFT_ERR_INVALID_ARG; /* the engine's GPU is another */
    return wf_dev_pool_reserve(d->pool, &e->progress_lock, req, req->plan,
                               e->max_inflight);
}

static weft_status_t event_take(wf_engine_dev_t *d, wf_dev_event_t *ev)
{
    if (d->nfree_events) {
        *ev = d->free_events[--d->nfree_events];
        return WEFT_OK;
    }
    return d->ops->event_create(ev);
}

static void event_give(wf_engine_dev_t *d, wf_dev_event_t ev)
{
    if (d->nfree_events >= WF_DEV_SPARE_EVENTS ||
        !wf_array_room((void **)&d->free_events, &d->events_cap,
                       d->nfree_events, sizeof(*d->free_events))) {
        d->ops->event_destroy(ev);
        return;
    }
    d->free_events[d->nfree_events++] = ev;
}

static void stage_staging_give(wf_engine_t *e, void *staging)
{
    if (e->dev)
        wf_dev_pool_staging_give(e->dev->pool, staging);
}

static weft_status_t stage_recv_staging(wf_engine_t *e,
                                       struct weft_request *req, size_t bytes,
                                       void **staging)
{
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    const char *why = NULL;
    weft_status_t st = wf_dev_pool_staging_take(d->pool, req, WF_STAGE_RECV,
                                                bytes, staging, &why);
    return st == WEFT_OK ? st
                         : pool_failed(e, req, "taking pinned staging "
                                       "memory", st, why);
}

static weft_status_t stage_scratch(wf_engine_t *e, struct weft_request *req,
                                  uint64_t bytes, void **ptr, uint64_t *cap)
{
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    const char *why = NULL;
    weft_status_t st = wf_dev_pool_scratch_take(d->pool, req, bytes, ptr,
                                                cap, &why);
    return st == WEFT_OK ? st
                         : pool_failed(e, req, "taking device scratch", st,
                                       why);
}

static void stage_scratch_give(wf_engine_t *e, void *ptr, uint64_t cap)
{
    if (e->dev)
        wf_dev_pool_scratch_give(e->dev->pool, ptr, cap);
}

/* Records an event after the work just enqueued and tracks it for step i. */
static weft_status_t track(wf_engine_t *e, struct weft_request *req,
                           uint32_t i, wf_devwork_kind_t kind, void *staging)
{
    wf_exec_t *x = req->exec;
    wf_engine_dev_t *d = e->dev;
    if (!wf_array_room((void **)&x->dw, &x->dw_cap, x->ndw, sizeof(*x->dw)))
        return WEFT_ERR_NO_MEMORY;
    wf_dev_event_t ev;
    weft_status_t st = event_take(d, &ev);
    if (st != WEFT_OK)
        return dev_failed(e, req, "creating an event", st);
    st = d->ops->event_record(ev, d->stream);
    if (st != WEFT_OK) {
        event_give(d, ev);
        return dev_failed(e, req, "recording an event", st);
    }
    x->dw[x->ndw++] = (wf_devwork_t){i, (uint8_t)kind, ev, staging};
    d->busy_works++;
    x->state[i] = ST_POSTED;
    return WEFT_OK;
}

static int stage_send(wf_engine_t *e, struct weft_request *req, uint32_t i)
{
    const wf_step_t *s = &req->plan->steps[i];
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    if (e->inflight_send[s->peer] >= e->max_inflight)
        return 0; /* bounds the staging memory too */
    WEFT_CHECK(wf_engine_connect(e, s->peer));
    void *staging;
    const char *why = NULL;
    weft_status_t st = wf_dev_pool_staging_take(d->pool, req, WF_STAGE_SEND,
                                                s->count, &staging, &why);
    if (st != WEFT_OK)
        return pool_failed(e, req, "taking pinned staging memory", st, why);
    st = d->ops->copy(staging, wf_exec_buf(req, s->src), s->count, d->stream);
    if (st == WEFT_OK)
        st = track(e, req, i, DW_STAGE_OUT, staging);
    else
        st = dev_failed(e, req, "copying a chunk off the device", st);
    if (st != WEFT_OK) {
        stage_staging_give(e, staging);
        return st;
    }
    e->inflight_send[s->peer]++;
    return 1;
}

static weft_status_t stage_copy_in(wf_engine_t *e, struct weft_request *req,
                                   uint32_t i, void *staging)
{
    const wf_step_t *s = &req->plan->steps[i];
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    weft_status_t st = d->ops->copy(wf_exec_buf(req, s->dst), staging,
                                    s->count, d->stream);
    if (st != WEFT_OK)
        return dev_failed(e, req, "copying a chunk to the device", st);
    return track(e, req, i, DW_STAGE_IN, staging);
}

static weft_status_t stage_local(wf_engine_t *e, struct weft_request *req,
                                uint32_t i)
{
    const wf_step_t *s = &req->plan->steps[i];
    const wf_plan_t *p = req->plan;
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    weft_status_t st = WEFT_OK;
    const char *what = "a reduction";
    char *dst = wf_exec_buf(req, s->dst);
    if (s->kind == WF_STEP_REDUCE) {
        st = d->ops->reduce(dst, wf_exec_buf(req, s->src),
                            wf_exec_buf(req, s->src2), s->count, p->dtype,
                            p->op, d->stream);
    } else if (s->kind == WF_STEP_COPY) {
        what = "a copy";
        const char *src = wf_exec_buf(req, s->src);
        if (src != dst)
            st = d->ops->copy(dst, src, s->count, d->stream);
    } else if (s->kind == WF_STEP_AVG) {
        what = "the average's division";
        st = d->ops->avg_finish(dst, s->count, p->dtype, p->nranks,
                                d->stream);
    }
    if (st != WEFT_OK)
        return dev_failed(e, req, what, st);
    return track(e, req, i, DW_LOCAL, NULL);
}

/* A staged chunk's event completed: hand it to the transport. */
static weft_status_t send_staged(wf_engine_t *e, struct weft_request *req,
                                 wf_devwork_t *w, bool *posted)
{
    wf_exec_t *x = req->exec;
    const wf_step_t *s = &req->plan->steps[w->step];
    wf_treq_t *treq = NULL;
    *posted = false;
    weft_status_t st = e->tops->isend(e->tctx, s->peer,
                                      wf_exec_step_tag(req, s), x->sig,
                                      w->staging, s->count, NULL, &treq);
    if (st == WEFT_ERR_AGAIN) {
        w->kind = DW_SEND_WAIT;
        return WEFT_OK;
    }
    if (st < 0)
        return st;
    *posted = true;
    return wf_exec_add_posted(x, (posted_t){w->step, treq, w->staging, true});
}

static int stage_poll(wf_engine_t *e, struct weft_request *req,
                     weft_status_t *status)
{
    wf_exec_t *x = req->exec;
    wf_engine_dev_t *d = x->ndw ? dev_of(e, req) : e->dev;
    int work = 0;
    if (!d)
        return x->ndw ? (*status = WEFT_ERR_CUDA, 0) : 0;
    for (uint32_t k = 0; k < x->ndw;) {
        wf_devwork_t *w = &x->dw[k];
        weft_status_t st = w->kind == DW_SEND_WAIT
                               ? WEFT_OK : d->ops->event_query(w->event);
        if (st == WEFT_INPROGRESS) {
            k++;
            continue;
        }
        if (st != WEFT_OK) {
            *status = dev_failed(e, req, "device work", st);
            return work;
        }
        if (w->kind != DW_SEND_WAIT)
            d->busy_works--; /* a SEND_WAIT waits for the transport */
        bool keep = false;
        if (w->kind == DW_STAGE_OUT || w->kind == DW_SEND_WAIT) {
            bool posted;
            st = send_staged(e, req, w, &posted);
            if (st < 0) {
                *status = st;
                return work;
            }
            keep = !posted;
        } else {
            if (w->kind == DW_STAGE_IN)
                stage_staging_give(e, w->staging);
            wf_exec_mark_done(req, w->step);
        }
        if (keep) {
            k++;
            continue;
        }
        event_give(d, w->event);
        x->dw[k] = x->dw[--x->ndw];
        work++;
    }
    return work;
}

/* Waits, at most WF_DEV_DRAIN_MS, until the work enqueued on the engine's
 * stream so far has run; false when it has not by then. */
static bool drain_stream(wf_engine_dev_t *d)
{
    wf_dev_event_t ev;
    bool drained = false;
    if (!d->stream || d->ops->set_device(d->device) != WEFT_OK ||
        event_take(d, &ev) != WEFT_OK)
        return false;
    uint64_t deadline = wf_deadline_after(WF_DEV_DRAIN_MS);
    if (d->ops->event_record(ev, d->stream) == WEFT_OK) {
        weft_status_t st;
        while ((st = d->ops->event_query(ev)) == WEFT_INPROGRESS &&
               !wf_deadline_passed(deadline))
            wf_sleep_ms(1);
        drained = st == WEFT_OK;
    }
    event_give(d, ev);
    return drained;
}

static void stage_release(wf_engine_t *e, struct weft_request *req)
{
    wf_exec_t *x = req->exec;
    wf_engine_dev_t *d = e->dev;
    /* A request that ends with device work still enqueued (it failed):
     * that work may still write its receive buffer and read or write the
     * staging it had.  Let it run before the request completes, so that
     * nothing lands after the caller has its status back, and before the
     * staging serves another request. */
    if (d && x->ndw && !drain_stream(d))
        WEFT_WARN(SCHED, "%s #%llu on rank %d: its device work had not "
                  "ended %d s after the operation failed; its buffers are "
                  "released anyway", wf_coll_name(req->args.coll),
                  (unsigned long long)req->seq, e->rank,
                  WF_DEV_DRAIN_MS / 1000);
    for (uint32_t k = 0; d && k < x->ndw; k++) {
        wf_devwork_t *w = &x->dw[k];
        const wf_step_t *s = &req->plan->steps[w->step];
        if (w->kind == DW_STAGE_OUT || w->kind == DW_SEND_WAIT)
            e->inflight_send[s->peer]--;
        if (w->kind != DW_SEND_WAIT)
            d->busy_works--;
        stage_staging_give(e, w->staging);
        event_give(d, w->event);
    }
    x->ndw = 0;
}

void wf_engine_dev_uncount(wf_engine_t *e, struct weft_request *req)
{
    if (req->dev_counted)
        __atomic_sub_fetch(req->dev_counted == 2 ? &e->dev_stream_reqs
                                                 : &e->dev_plain_reqs,
                           1, __ATOMIC_SEQ_CST);
    req->dev_counted = 0;
}

void wf_engine_dev_forget(wf_engine_t *e, struct weft_request *req)
{
    if (e->dev)
        wf_dev_pool_release(e->dev->pool, req);
    wf_engine_dev_uncount(e, req);
}

void wf_engine_dev_count(wf_engine_t *e, struct weft_request *req,
                         bool stream_ordered)
{
    req->dev_counted = stream_ordered ? 2 : 1;
    __atomic_add_fetch(stream_ordered ? &e->dev_stream_reqs
                                      : &e->dev_plain_reqs,
                       1, __ATOMIC_SEQ_CST);
}

bool wf_engine_dev_streams_pending(wf_engine_t *e)
{
    return __atomic_load_n(&e->dev_stream_reqs, __ATOMIC_SEQ_CST) > 0;
}

weft_status_t wf_engine_dev_wait_plain(wf_engine_t *e, int64_t timeout_ms)
{
    uint64_t deadline = wf_deadline_after(timeout_ms);
    while (__atomic_load_n(&e->dev_plain_reqs, __ATOMIC_SEQ_CST) > 0) {
        if (wf_deadline_passed(deadline))
            return WEFT_ERR_TIMEOUT;
        wf_sleep_ms(1);
    }
    return WEFT_OK;
}

void wf_engine_dev_reserve_cancel(wf_engine_t *e, struct weft_request *req)
{
    pthread_mutex_lock(&e->progress_lock);
    wf_engine_dev_forget(e, req);
    pthread_mutex_unlock(&e->progress_lock);
}

/* Waits (bounded) for the engine's device work to end, then frees it:
 * staging buffers may still be the target of a copy after a failure. */
void wf_engine_dev_free(wf_engine_t *e)
{
    wf_engine_dev_t *d = e->dev;
    if (!d)
        return;
    (void)drain_stream(d);
    for (uint32_t k = 0; k < d->nfree_events; k++)
        d->ops->event_destroy(d->free_events[k]);
    wf_dev_pool_free(d->pool);
    if (d->stream)
        d->ops->stream_destroy(d->stream);
    free(d->free_events);
    free(d);
    e->dev = NULL;
}

const struct wf_stage_ops wf_dev_stage_ops = {
    .scratch = stage_scratch,
    .scratch_give = stage_scratch_give,
    .send = stage_send,
    .recv_staging = stage_recv_staging,
    .stage_in = stage_copy_in,
    .local = stage_local,
    .poll = stage_poll,
    .staging_give = stage_staging_give,
    .forget = wf_engine_dev_forget,
    .release = stage_release,
};
