/*
 * exec_dev.c - the steps of a plan whose buffers are device memory.
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
 * Staging buffers and events are kept by the engine for the next
 * operation (pinned allocations are expensive); the device layer is
 * cuda/weft_cuda.h's ops table (the real one or the tests' fake).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "reduce/reduce.h"
#include "sched/exec_impl.h"

#define WF_STAGING_MIN (64 * 1024)
#define WF_DEV_DRAIN_MS 10000

typedef struct {
    void *ptr;
    size_t cap;
    bool busy;
} stage_t;

struct wf_engine_dev {
    const wf_dev_ops_t *ops;
    int device;
    wf_dev_stream_t stream;
    wf_dev_event_t *free_events;
    uint32_t nfree_events, events_cap;
    stage_t *stages;
    uint32_t nstages, stages_cap;
    void *spare_scratch;
    uint64_t spare_bytes;
};

static weft_status_t dev_failed(wf_engine_t *e, const struct weft_request *req,
                                const char *what, weft_status_t st)
{
    const char *why = e->dev ? e->dev->ops->last_error() : "no device layer";
    wf_engine_fail(e, st == WEFT_ERR_NO_MEMORY ? st : WEFT_ERR_CUDA,
                   "%s #%llu on rank %d: %s failed: %s",
                   wf_coll_name(req->args.coll),
                   (unsigned long long)req->seq, e->rank, what, why);
    return st == WEFT_ERR_NO_MEMORY ? st : WEFT_ERR_CUDA;
}

/* The engine's device state, made on its first device request; makes
 * the request's GPU current for the calling thread. */
static wf_engine_dev_t *dev_of(wf_engine_t *e, const struct weft_request *req)
{
    wf_engine_dev_t *d = e->dev;
    if (!d) {
        d = calloc(1, sizeof(*d));
        if (!d)
            return NULL;
        d->ops = req->dev_ops;
        d->device = req->dev_ordinal;
        e->dev = d;
        if (d->ops->set_device(d->device) != WEFT_OK ||
            d->ops->stream_create(&d->stream) != WEFT_OK) {
            dev_failed(e, req, "creating the engine's stream", WEFT_ERR_CUDA);
            return NULL;
        }
        return d;
    }
    if (!d->stream || d->ops->set_device(d->device) != WEFT_OK)
        return NULL;
    return d;
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
    if (!wf_array_room((void **)&d->free_events, &d->events_cap,
                       d->nfree_events, sizeof(*d->free_events))) {
        d->ops->event_destroy(ev);
        return;
    }
    d->free_events[d->nfree_events++] = ev;
}

/* The smallest idle staging buffer of at least `bytes`, or a new one. */
static weft_status_t staging_take(wf_engine_dev_t *d, size_t bytes,
                                  void **ptr)
{
    stage_t *best = NULL;
    for (uint32_t k = 0; k < d->nstages; k++) {
        stage_t *s = &d->stages[k];
        if (!s->busy && s->cap >= bytes && (!best || s->cap < best->cap))
            best = s;
    }
    if (!best) {
        if (!wf_array_room((void **)&d->stages, &d->stages_cap, d->nstages,
                           sizeof(*d->stages)))
            return WEFT_ERR_NO_MEMORY;
        size_t cap = bytes > WF_STAGING_MIN ? bytes : WF_STAGING_MIN;
        void *p = NULL;
        WEFT_CHECK(d->ops->alloc_pinned(cap, &p));
        best = &d->stages[d->nstages++];
        *best = (stage_t){.ptr = p, .cap = cap};
    }
    best->busy = true;
    *ptr = best->ptr;
    return WEFT_OK;
}

void wf_exec_dev_staging_give(wf_engine_t *e, void *staging)
{
    wf_engine_dev_t *d = e->dev;
    for (uint32_t k = 0; d && staging && k < d->nstages; k++)
        if (d->stages[k].ptr == staging)
            d->stages[k].busy = false;
}

weft_status_t wf_exec_dev_recv_staging(wf_engine_t *e,
                                       struct weft_request *req, size_t bytes,
                                       void **staging)
{
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    weft_status_t st = staging_take(d, bytes, staging);
    return st == WEFT_OK ? st
                         : dev_failed(e, req, "allocating pinned staging "
                                      "memory", st);
}

weft_status_t wf_exec_dev_scratch(wf_engine_t *e, struct weft_request *req,
                                  uint64_t bytes, void **ptr, uint64_t *cap)
{
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    if (d->spare_scratch && d->spare_bytes >= bytes) {
        *ptr = d->spare_scratch;
        *cap = d->spare_bytes;
        d->spare_scratch = NULL;
        return WEFT_OK;
    }
    *cap = bytes;
    weft_status_t st = d->ops->alloc(bytes, ptr);
    return st == WEFT_OK ? st : dev_failed(e, req, "allocating scratch", st);
}

void wf_exec_dev_scratch_give(wf_engine_t *e, void *ptr, uint64_t cap)
{
    wf_engine_dev_t *d = e->dev;
    if (!ptr || !d)
        return;
    if (d->spare_scratch && d->spare_bytes >= cap) {
        d->ops->free(ptr);
        return;
    }
    if (d->spare_scratch)
        d->ops->free(d->spare_scratch);
    d->spare_scratch = ptr;
    d->spare_bytes = cap;
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
    x->state[i] = ST_POSTED;
    return WEFT_OK;
}

int wf_exec_dev_send(wf_engine_t *e, struct weft_request *req, uint32_t i)
{
    const wf_step_t *s = &req->plan->steps[i];
    wf_engine_dev_t *d = dev_of(e, req);
    if (!d)
        return WEFT_ERR_CUDA;
    if (e->inflight_send[s->peer] >= e->max_inflight)
        return 0; /* bounds the staging memory too */
    WEFT_CHECK(wf_engine_connect(e, s->peer));
    void *staging;
    weft_status_t st = staging_take(d, s->count, &staging);
    if (st != WEFT_OK)
        return dev_failed(e, req, "allocating pinned staging memory", st);
    st = d->ops->copy(staging, wf_exec_buf(req, s->src), s->count, d->stream);
    if (st == WEFT_OK)
        st = track(e, req, i, DW_STAGE_OUT, staging);
    else
        st = dev_failed(e, req, "copying a chunk off the device", st);
    if (st != WEFT_OK) {
        wf_exec_dev_staging_give(e, staging);
        return st;
    }
    e->inflight_send[s->peer]++;
    return 1;
}

weft_status_t wf_exec_dev_stage_in(wf_engine_t *e, struct weft_request *req,
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

weft_status_t wf_exec_dev_local(wf_engine_t *e, struct weft_request *req,
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

int wf_exec_dev_poll(wf_engine_t *e, struct weft_request *req,
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
                wf_exec_dev_staging_give(e, w->staging);
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

void wf_exec_dev_release(wf_engine_t *e, struct weft_request *req)
{
    wf_exec_t *x = req->exec;
    wf_engine_dev_t *d = e->dev;
    for (uint32_t k = 0; d && k < x->ndw; k++) {
        wf_devwork_t *w = &x->dw[k];
        const wf_step_t *s = &req->plan->steps[w->step];
        if (w->kind == DW_STAGE_OUT || w->kind == DW_SEND_WAIT)
            e->inflight_send[s->peer]--;
        wf_exec_dev_staging_give(e, w->staging);
        event_give(d, w->event);
    }
    x->ndw = 0;
}

/* Waits (bounded) for the engine's device work to end, then frees it:
 * staging buffers may still be the target of a copy after a failure. */
void wf_engine_dev_free(wf_engine_t *e)
{
    wf_engine_dev_t *d = e->dev;
    if (!d)
        return;
    if (d->stream && d->ops->set_device(d->device) == WEFT_OK) {
        wf_dev_event_t ev;
        if (event_take(d, &ev) == WEFT_OK) {
            uint64_t deadline = wf_deadline_after(WF_DEV_DRAIN_MS);
            if (d->ops->event_record(ev, d->stream) == WEFT_OK)
                while (d->ops->event_query(ev) == WEFT_INPROGRESS &&
                       !wf_deadline_passed(deadline))
                    wf_sleep_ms(1);
            event_give(d, ev);
        }
    }
    for (uint32_t k = 0; k < d->nfree_events; k++)
        d->ops->event_destroy(d->free_events[k]);
    for (uint32_t k = 0; k < d->nstages; k++)
        d->ops->free_pinned(d->stages[k].ptr);
    if (d->spare_scratch)
        d->ops->free(d->spare_scratch);
    if (d->stream)
        d->ops->stream_destroy(d->stream);
    free(d->free_events);
    free(d->stages);
    free(d);
    e->dev = NULL;
}
