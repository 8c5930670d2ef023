/*
 * req.c - requests: creation, reference counting and completion.  The
 * public weft_test / weft_wait / weft_request_free are in wait.c; the lock
 * both use is described in req_impl.h.  req->engine is set without it when
 * a request is queued, as long as only its submitter can see it
 * (wf_engine_submit).
 */
#include <stdlib.h>

#include "common.h"
#include "sched/engine.h"
#include "sched/req_impl.h"

pthread_mutex_t wf_req_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t wf_req_cond = PTHREAD_COND_INITIALIZER;

struct weft_request *wf_req_create(void)
{
    /* malloc, then zeroed: glibc's calloc skips the per-thread cache that
     * malloc and free share, so one request per call cost a trip through
     * the arena's bins each way (callgrind: ~400 instructions, 29 lines of
     * code per call). */
    struct weft_request *req = malloc(sizeof(*req));
    if (!req) {
        WEFT_WARN(COLL, "out of memory for a request");
        return NULL;
    }
    *req = (struct weft_request){0};
    req->magic = WF_REQ_MAGIC;
    req->refs = 1;
    req->status = WEFT_INPROGRESS;
    req->waited_on = -1;
    return req;
}

void wf_req_retain(struct weft_request *req)
{
    __atomic_add_fetch(&req->refs, 1, __ATOMIC_RELAXED);
}

void wf_req_release(struct weft_request *req)
{
    if (__atomic_sub_fetch(&req->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    wf_built_plan_release(req->built);
    if (req->dev_after) /* never reached the engine's stream */
        req->dev_ops->event_destroy(req->dev_after);
    req->magic = 0;
    free(req);
}

void wf_req_complete(struct weft_request *req, weft_status_t status)
{
    pthread_mutex_lock(&wf_req_lock);
    if (!req->done) {
        req->status = status;
        req->engine = NULL;
        __atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
        /* A stream waiting for this operation goes on, also after an
         * error (stream_order.c). */
        if (req->done_flag)
            __atomic_store_n(req->done_flag, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&wf_req_cond);
    }
    pthread_mutex_unlock(&wf_req_lock);
}

void wf_req_attach(struct weft_request *req, wf_engine_t *engine)
{
    pthread_mutex_lock(&wf_req_lock);
    req->engine = engine;
    pthread_mutex_unlock(&wf_req_lock);
}
