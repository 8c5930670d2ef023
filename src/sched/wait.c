/*
 * wait.c - the public weft_test, weft_wait and weft_request_free: a caller
 * waiting for a request drives its engine (progress.c) itself, and sleeps
 * on the request lock (req.c, req_impl.h) while another thread drives.
 */
#include <stdlib.h>
#include <time.h>

#include "common.h"
#include "sched/engine.h"
#include "sched/req_impl.h"

/* The engine stays alive while a request it has not completed points to
 * it, and completion clears the pointer under this lock. */
void wf_req_open_gate(struct weft_request *req)
{
    pthread_mutex_lock(&wf_req_lock);
    __atomic_store_n(&req->gate_open, true, __ATOMIC_RELEASE);
    if (!req->done && req->engine)
        wf_engine_kick(req->engine);
    pthread_mutex_unlock(&wf_req_lock);
}

/* Runs the request's engine in this thread until the request is done, the
 * engine stops or the clock passes until_ms (see wf_engine_drive); with
 * `once`, one round only. */
static void drive(struct weft_request *req, bool once, uint64_t until_ms)
{
    pthread_mutex_lock(&wf_req_lock);
    wf_engine_t *e = req->done ? NULL : req->engine;
    if (e)
        wf_engine_driver_enter(e);
    pthread_mutex_unlock(&wf_req_lock);
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
    pthread_mutex_lock(&wf_req_lock);
    wf_engine_driver_leave(e, wake_thread);
    pthread_cond_broadcast(&wf_req_cond); /* wf_req_wait_for_drivers */
    pthread_mutex_unlock(&wf_req_lock);
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
    pthread_mutex_lock(&wf_req_lock);
    weft_status_t st = req->done ? req->status : WEFT_INPROGRESS;
    pthread_mutex_unlock(&wf_req_lock);
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
    pthread_mutex_lock(&wf_req_lock);
    while (!req->done) {
        if (stall_at && wf_time_ms() >= stall_at) {
            /* Waited another interval: ask the store, outside the lock,
             * then drive again (the engine may have stopped meanwhile:
             * drive then returns at once and the wait below paces us). */
            pthread_mutex_unlock(&wf_req_lock);
            req->on_stall(req, req->owner);
            stall_at = next_stall_check(req);
            drive(req, false, stall_at);
            pthread_mutex_lock(&wf_req_lock);
            continue;
        }
        /* The engine enforces deadlines; the timed wait is only a guard
         * against a lost wake-up. */
        uint64_t wake_ms = wf_time_ms() + 1000;
        if (stall_at && stall_at < wake_ms)
            wake_ms = stall_at;
        struct timespec ts =
            wf_realtime_after_ms((int64_t)(wake_ms - wf_time_ms() + 1));
        pthread_cond_timedwait(&wf_req_cond, &wf_req_lock, &ts);
    }
    weft_status_t st = req->status;
    pthread_mutex_unlock(&wf_req_lock);
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

WEFT_API weft_status_t weft_request_source(weft_request_t req, int *source)
{
    WEFT_CHECK(check_req(req));
    if (!source || req->args.coll != WF_COLL_RECV) {
        WEFT_WARN(COLL, "weft_request_source: %s", !source
                  ? "source is NULL" : "the request is not a receive");
        return WEFT_ERR_INVALID_ARG;
    }
    /* The sender is written (p2p_seq.c) before the request completes. */
    if (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE) ||
        req->args.peer == WEFT_ANY_SOURCE)
        return WEFT_INPROGRESS;
    *source = req->args.peer;
    return WEFT_OK;
}
