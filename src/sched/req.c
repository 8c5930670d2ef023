/*
 * req.c - requests: creation, reference counting, completion, and the
 * public weft_test / weft_wait / weft_request_free.
 *
 * Completion uses one process-wide lock and condition variable rather than
 * per-request ones: a waiter must be able to wake safely even when the
 * communicator (and its engine) is torn down by weft_comm_abort in another
 * thread, and a request may outlive its engine.  The same lock guards
 * req->engine (set without it when a request is queued, as long as only
 * its submitter can see it: wf_engine_submit) and the engine's count of
 * driving callers, so a waiter that drives an engine keeps it alive:
 * wf_engine_destroy waits for it.
 * Lock order: the engine's progress lock and state lock before req_lock
 * (completions happen inside progress rounds), never the other way.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "sched/engine.h"

static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t req_cond = PTHREAD_COND_INITIALIZER;

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
    pthread_mutex_lock(&req_lock);
    if (!req->done) {
        req->status = status;
        req->engine = NULL;
        __atomic_store_n(&req->done, true, __ATOMIC_RELEASE);
        /* A stream waiting for this operation goes on, also after an
         * error (stream_order.c). */
        if (req->done_flag)
            __atomic_store_n(req->done_flag, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&req_cond);
    }
    pthread_mutex_unlock(&req_lock);
}

void wf_req_attach(struct weft_request *req, wf_engine_t *engine)
{
    pthread_mutex_lock(&req_lock);
    req->engine = engine;
    pthread_mutex_unlock(&req_lock);
}

/* The engine stays alive while a request it has not completed points to
 * it, and completion clears the pointer under this lock. */
void wf_req_open_gate(struct weft_request *req)
{
    pthread_mutex_lock(&req_lock);
    __atomic_store_n(&req->gate_open, true, __ATOMIC_RELEASE);
    if (!req->done && req->engine)
        wf_engine_kick(req->engine);
    pthread_mutex_unlock(&req_lock);
}

void wf_req_wait_for_drivers(wf_engine_t *engine)
{
    pthread_mutex_lock(&req_lock);
    while (wf_engine_driver_count(engine) > 0)
        pthread_cond_wait(&req_cond, &req_lock);
    pthread_mutex_unlock(&req_lock);
}

/* Runs the request's engine in this thread until the request is done, the
 * engine stops or the clock passes until_ms (see wf_engine_drive); with
 * `once`, one round only. */
static void drive(struct weft_request *req, bool once, uint64_t until_ms)
{
    pthread_mutex_lock(&req_lock);
    wf_engine_t *e = req->done ? NULL : req->engine;
    if (e)
        wf_engine_driver_enter(e);
    pthread_mutex_unlock(&req_lock);
    if (!e)
        return;
    bool wake_thread;
    if (once) {
        wf_engine_poke(e);
        wake_thread = wf_engine_driver_hands_over(e);
    } else {
        bool left;
        uint64_t round;
        wf_engine_drive(e, &req->done, until_ms, &left, &round);
        wake_thread = wf_engine_driver_hands_over_after(e, left, round);
    }
    pthread_mutex_lock(&req_lock);
    wf_engine_driver_leave(e, wake_thread);
    pthread_cond_broadcast(&req_cond); /* wf_req_wait_for_drivers */
    pthread_mutex_unlock(&req_lock);
}

static weft_status_t check_req(weft_request_t req)
{
    if (!req) {
        WEFT_WARN(COLL, "request is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    if (req->magic != WF_REQ_MAGIC) {
        WEFT_WARN(COLL, "%p is not a live weft request (freed twice?)",
                  (void *)req);
        return WEFT_ERR_INVALID_USAGE;
    }
    return WEFT_OK;
}

WEFT_API weft_status_t weft_test(weft_request_t req)
{
    WEFT_CHECK(check_req(req));
    /* Like MPI_Test: a caller that polls also makes progress. */
    drive(req, true, 0);
    pthread_mutex_lock(&req_lock);
    weft_status_t st = req->done ? req->status : WEFT_INPROGRESS;
    pthread_mutex_unlock(&req_lock);
    return st;
}

/* When a waiting caller next looks at what the store knows (stall.c);
 * 0: never.  On the coarse clock: the interval is at least 250 ms, and
 * the check may come a tick early. */
static uint64_t next_stall_check(const struct weft_request *req)
{
    return req->on_stall && req->stall_every_ms > 0
               ? wf_time_ms_coarse() + (uint64_t)req->stall_every_ms : 0;
}

/* The rest of a wait whose first drive did not see the request done:
 * stall checks, and sleeping while another thread drives. */
static weft_status_t wait_longer(struct weft_request *req, uint64_t stall_at)
{
    pthread_mutex_lock(&req_lock);
    while (!req->done) {
        if (stall_at && wf_time_ms() >= stall_at) {
            /* Waited another interval: ask the store, outside the lock,
             * then drive again (the engine may have stopped meanwhile:
             * drive then returns at once and the wait below paces us). */
            pthread_mutex_unlock(&req_lock);
            req->on_stall(req, req->owner);
            stall_at = next_stall_check(req);
            drive(req, false, stall_at);
            pthread_mutex_lock(&req_lock);
            continue;
        }
        /* The engine enforces deadlines; the timed wait is only a guard
         * against a lost wake-up. */
        uint64_t wake_ms = wf_time_ms() + 1000;
        if (stall_at && stall_at < wake_ms)
            wake_ms = stall_at;
        struct timespec ts =
            wf_realtime_after_ms((int64_t)(wake_ms - wf_time_ms() + 1));
        pthread_cond_timedwait(&req_cond, &req_lock, &ts);
    }
    weft_status_t st = req->status;
    pthread_mutex_unlock(&req_lock);
    return st;
}

WEFT_API weft_status_t weft_wait(weft_request_t req)
{
    WEFT_CHECK(check_req(req));
    uint64_t stall_at = next_stall_check(req);
    drive(req, false, stall_at);
    /* Nearly always done by now.  The status is written before `done` is
     * set (wf_req_complete), so reading it then needs no lock. */
    weft_status_t st = __atomic_load_n(&req->done, __ATOMIC_ACQUIRE)
                           ? req->status
                           : wait_longer(req, stall_at);
    if (st < 0 && req->on_error)
        req->on_error(req, req->owner, st);
    return st;
}

WEFT_API weft_status_t weft_request_free(weft_request_t req)
{
    if (!req)
        return WEFT_OK;
    WEFT_CHECK(check_req(req));
    wf_req_release(req);
    return WEFT_OK;
}
