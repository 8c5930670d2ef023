/*
 * progress.c - the engine's lifecycle and its progress thread.
 *
 * Progress happens in rounds (progress_round) run by whoever holds
 * progress_lock: the progress thread, or a caller blocked in weft_wait that
 * drives the engine itself (wf_engine_drive).  While a caller drives, the
 * thread sleeps on the wake-up fd, so the two never compete for a core; it
 * takes over again for non-blocking operations nobody waits on.  An idle
 * runner sleeps in poll() on the transport's fd and the wake-up eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common.h"
#include "sched/engine_impl.h"
#include "sched/req_impl.h"
#include "timeline.h"
#include "topo/topo.h"

/* Idle rounds a runner (the thread or a driving caller) yields, with
 * operations in flight, before it sleeps in poll(). */
#define WF_IDLE_SPINS 100
/* Idle rounds a driving caller polls first without yielding, where every
 * rank of the machine has a core: a message over shared memory arrives
 * in less time than a sched_yield() call takes, which it would then wait
 * out (bench/results/2026-12-02-shm-transport.md). */
#define WF_IDLE_POLLS 200
/* How long a failing engine keeps trying to deliver its notices
 * (notice.c) before it gives up on a peer.  A departing one waits for its
 * goodbyes as long as for any operation (the communicator's timeout): a
 * peer that is alive but slow to read (descheduled, its ring full) would
 * otherwise see the connection close with the goodbye still queued behind
 * it, and count a clean departure as a lost peer.  A dead peer ends the
 * wait sooner, by failing the send. */
#define WF_NOTICE_GRACE_MS 250
/* Longest sleep of a driving caller between rounds.  Rounds that complete
 * a sleeping driver's request wake it; the cap only bounds a lost wake-up. */
#define WF_DRIVER_SLEEP_MS 10

static void append(struct weft_request **head, struct weft_request **tail,
                   struct weft_request *req)
{
    req->next = NULL;
    if (*tail)
        (*tail)->next = req;
    else
        *head = req;
    *tail = req;
}

/* Whether a new operation may start (under e->lock): the sticky error,
 * or WEFT_ERR_INVALID_USAGE once the engine stops. */
static weft_status_t admit(const wf_engine_t *e)
{
    if (e->error != WEFT_OK)
        return e->error;
    return e->stop ? WEFT_ERR_INVALID_USAGE : WEFT_OK;
}

weft_status_t wf_engine_submit(wf_engine_t *e, struct weft_request *req,
                               bool wake_thread)
{
    pthread_mutex_lock(&e->lock);
    weft_status_t err = admit(e);
    if (err != WEFT_OK) {
        pthread_mutex_unlock(&e->lock);
        wf_req_complete(req, err);
        return err;
    }
    if (wf_req_is_p2p(req))
        err = wf_p2p_seq_assign(e, req);
    else
        req->seq = e->coll_seq++;
    if (err != WEFT_OK) {
        pthread_mutex_unlock(&e->lock);
        wf_req_complete(req, err);
        return err;
    }
    uint64_t now_ms = wf_time_ms(); /* for the deadline and the history */
    req->deadline_ms = wf_deadline_from(now_ms, e->timeout_ms);
    /* Only a gated request is seen by another thread before it is queued
     * below: its stream's callback reads the engine under the request
     * lock (wf_req_open_gate).  The others skip that lock. */
    if (req->gated)
        wf_req_attach(req, e); /* engine lock before request lock */
    else
        req->engine = e;
    wf_history_start(e, req, now_ms);
    __atomic_add_fetch(&e->reqs_live, 1, __ATOMIC_ACQ_REL);
    wf_req_retain(req);
    append(&e->submitted_head, &e->submitted_tail, req);
    __atomic_store_n(&e->has_submitted, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&e->lock);
    if (wake_thread)
        wf_engine_wake(e);
    return WEFT_OK;
}

weft_status_t wf_engine_take_coll_seq(wf_engine_t *e,
                                      const wf_coll_args_t *args,
                                      const char *algo, uint64_t *seq)
{
    pthread_mutex_lock(&e->lock);
    weft_status_t err = admit(e);
    if (err == WEFT_OK) {
        *seq = e->coll_seq++;
        wf_history_start_args(e, *seq, args, algo, wf_time_ms_coarse());
    }
    pthread_mutex_unlock(&e->lock);
    return err;
}

void wf_engine_end_outside(wf_engine_t *e, uint64_t seq, wf_coll_t coll,
                           weft_status_t status, int waited_on)
{
    wf_history_end_of(e, seq, coll, status, waited_on);
}

bool wf_engine_quiet(wf_engine_t *e)
{
    return __atomic_load_n(&e->reqs_live, __ATOMIC_ACQUIRE) == 0 &&
           !__atomic_load_n(&e->stray_due, __ATOMIC_ACQUIRE);
}

/* Ends a request the thread holds: completion, state, reference. */
static void finish(wf_engine_t *e, struct weft_request *req,
                   weft_status_t status)
{
    /* What it left unreceived is stray now (a runner sends nothing). */
    if (!wf_req_is_p2p(req) && !req->runner)
        __atomic_store_n(&e->stray_due, true, __ATOMIC_RELEASE);
    wf_p2p_forget(e, req);
    if (status == WEFT_OK)
        WEFT_TRACE(SCHED, "%s #%llu done", wf_coll_name(req->args.coll),
                   (unsigned long long)req->seq);
    wf_history_end(e, req, status);
    wf_exec_free(e, req);
    wf_req_complete(req, status); /* clears req->engine */
    wf_req_release(req);
    __atomic_sub_fetch(&e->reqs_live, 1, __ATOMIC_ACQ_REL);
}

void wf_engine_kick(wf_engine_t *e) { wf_engine_wake(e); }

static bool gate_closed(const struct weft_request *req)
{
    return req->gated && !__atomic_load_n(&req->gate_open, __ATOMIC_ACQUIRE);
}

/* Detaches the submissions up to the first closed gate (all of them with
 * `all`); operations start in the order they were submitted. */
static struct weft_request *detach_submitted(wf_engine_t *e, bool all)
{
    struct weft_request *head = e->submitted_head, *last = NULL;
    for (struct weft_request *r = head; r && (all || !gate_closed(r));
         r = r->next)
        last = r;
    if (!last)
        return NULL;
    e->submitted_head = last->next;
    if (!e->submitted_head)
        e->submitted_tail = NULL;
    __atomic_store_n(&e->has_submitted, e->submitted_head != NULL,
                     __ATOMIC_RELAXED);
    last->next = NULL;
    return head;
}

/* A request that could not start fails the communicator; returns st. */
static weft_status_t start_failed(wf_engine_t *e,
                                  const struct weft_request *req,
                                  weft_status_t st)
{
    wf_engine_fail(e, st, "%s #%llu: cannot start: %s",
                   wf_coll_name(req->args.coll),
                   (unsigned long long)req->seq, weft_strerror(st));
    return st;
}

/* Moves new submissions to the active list and starts their execution;
 * returns whether it started any. */
static bool take_submitted(wf_engine_t *e, bool *stop)
{
    /* Without the lock when nothing was submitted, as in most rounds: a
     * submission that comes just after the look is taken next round (its
     * submitter wakes whoever runs the rounds). */
    if (!__atomic_load_n(&e->has_submitted, __ATOMIC_ACQUIRE)) {
        *stop = __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE);
        return false;
    }
    pthread_mutex_lock(&e->lock);
    struct weft_request *req = detach_submitted(e, false);
    *stop = e->stop;
    pthread_mutex_unlock(&e->lock);
    bool started = false;
    while (req) {
        struct weft_request *next = req->next;
        if (req->gated) /* its time runs from its place in the stream */
            req->deadline_ms = wf_deadline_after(e->timeout_ms);
        /* A deferred receive starts once it has its number (advance_all). */
        weft_status_t st = req->seq_deferred ? WEFT_OK : wf_exec_start(e, req);
        if (st < 0) {
            start_failed(e, req, st);
            finish(e, req, st);
        } else {
            started = true;
            append(&e->active_head, &e->active_tail, req);
            if (!wf_req_is_p2p(req)) {
                e->coll_started = req->seq + 1;
                /* Held messages may be for it. */
                __atomic_store_n(&e->stray_due, true, __ATOMIC_RELEASE);
            }
        }
        req = next;
    }
    return started;
}

/* A deferred receive (p2p_seq.c) whose number has come is started:
 * WEFT_OK, or WEFT_INPROGRESS while it waits, or its failure. */
static weft_status_t start_deferred(wf_engine_t *e, struct weft_request *req)
{
    int r = wf_p2p_assign_deferred(e, req);
    if (r == 0)
        return WEFT_INPROGRESS;
    weft_status_t st = r < 0 ? (weft_status_t)r : wf_exec_start(e, req);
    return st < 0 ? start_failed(e, req, st) : st;
}

/* Advances every active request; returns the work done. */
static int advance_all(wf_engine_t *e, weft_status_t sticky)
{
    int work = 0;
    struct weft_request *prev = NULL, *req = e->active_head;
    wf_p2p_round_begin(e);
    while (req) {
        struct weft_request *next = req->next;
        bool finished = false;
        weft_status_t st = sticky;
        if (sticky == WEFT_OK && req->seq_deferred) {
            st = start_deferred(e, req);
            if (st == WEFT_INPROGRESS) { /* still waiting for its turn */
                prev = req;
                req = next;
                continue;
            }
            finished = st < 0;
        }
        if (sticky == WEFT_OK && !finished)
            work += wf_exec_advance(e, req, &finished, &st);
        /* A failure found while advancing may have let a peer's notice
         * in first (fail_req): the request reports the communicator's
         * error, so that every call after it reports the same one. */
        if (finished && st < 0) {
            weft_status_t now = wf_engine_error(e, NULL);
            st = now != WEFT_OK ? now : st;
        }
        if (sticky != WEFT_OK || finished) {
            if (prev)
                prev->next = next;
            else
                e->active_head = next;
            if (e->active_tail == req)
                e->active_tail = prev;
            finish(e, req, st);
            work++;
        } else {
            prev = req;
        }
        req = next;
    }
    return work;
}

/* Fails the comm when a request passed its deadline; returns the poll
 * timeout until the next deadline. */
static int check_deadlines(wf_engine_t *e)
{
    int timeout = 100;
    for (struct weft_request *req = e->active_head; req; req = req->next) {
        if (wf_deadline_passed_cheap(req->deadline_ms)) {
            char what[256];
            wf_exec_describe_wait(e, req, what, sizeof(what));
            wf_engine_fail(e, WEFT_ERR_TIMEOUT,
                           "%s #%llu timed out after %lld ms on rank %d (%s)",
                           wf_coll_name(req->args.coll),
                           (unsigned long long)req->seq,
                           (long long)e->timeout_ms, e->rank, what);
            return 0;
        }
        timeout = wf_deadline_remaining_ms_cheap(req->deadline_ms, timeout);
        /* A runner's peers write shared memory, which wakes no fd. */
        if (req->runner && timeout > 1)
            timeout = 1;
    }
    return timeout;
}

/* Sleeps in poll() until the transport or the wake-up fd has something,
 * or timeout_ms passes.  `transport` false: only the wake-up fd (the
 * progress thread while a caller drives). */
static void sleep_until_work(wf_engine_t *e, int timeout_ms, bool transport)
{
    struct pollfd fds[2] = {{.fd = e->wake_fd, .events = POLLIN},
                            {.fd = -1, .events = POLLIN}};
    if (transport && e->tops->wait_prepare) {
        /* Under the lock, as every other call into the transport. */
        pthread_mutex_lock(&e->progress_lock);
        bool pending = e->tops->wait_prepare(e->tctx);
        pthread_mutex_unlock(&e->progress_lock);
        if (pending)
            return;
    }
    if (transport)
        fds[1].fd = e->tops->get_fd(e->tctx);
    int nfds = transport && fds[1].fd >= 0 ? 2 : 1;
    if (transport && nfds == 1 && timeout_ms > 1)
        timeout_ms = 1; /* a transport without an fd must be polled */
    if (poll(fds, (nfds_t)nfds, timeout_ms) > 0 && (fds[0].revents & POLLIN)) {
        uint64_t v;
        ssize_t r = read(e->wake_fd, &v, sizeof(v));
        (void)r;
    }
}

/* One progress round: takes submissions, drives the transport, advances
 * every active request and checks deadlines.  The caller holds
 * progress_lock; `done` is the completion flag of a driver's request, or
 * NULL.  Returns the work done; *timeout is the poll timeout until the
 * next deadline; *exit is set when the engine is stopping and nothing is
 * left to do. */
static int progress_round(wf_engine_t *e, int *timeout, bool *exit,
                          const volatile bool *done)
{
    bool stop;
    __atomic_store_n(&e->rounds, e->rounds + 1, __ATOMIC_RELEASE);
    bool started = take_submitted(e, &stop);
    weft_status_t sticky = wf_engine_error(e, NULL);
    /* Tell the peers before anything else: on failure so that they stop
     * waiting for this rank, on a clean stop so that the connection
     * closing next does not look like one. */
    if (e->notice_phase == WF_NOTICE_NONE &&
        (sticky != WEFT_OK || (stop && !e->active_head))) {
        if (sticky != WEFT_OK && e->debug_dump && sticky != WEFT_ERR_ABORTED)
            wf_history_dump(e, weft_status_name(sticky));
        if (sticky != WEFT_OK)
            wf_notice_fail_all(e);
        else
            wf_notice_bye_all(e);
        e->notice_phase = WF_NOTICE_FLUSHING;
        e->notice_deadline = wf_deadline_after(
            sticky != WEFT_OK ? WF_NOTICE_GRACE_MS : e->timeout_ms);
    }
    int work = 0;
    /* A new operation's first sends go out before the transport is read:
     * its peers wait for them, and the read would most often find nothing
     * yet. */
    if (started && sticky == WEFT_OK)
        work += advance_all(e, sticky);
    if (sticky == WEFT_OK || e->notice_phase == WF_NOTICE_FLUSHING) {
        int n = e->tops->progress(e->tctx);
        if (n < 0 && sticky == WEFT_OK)
            wf_engine_fail(e, n, "transport %s failed: %s", e->tops->name,
                           weft_strerror(n));
        work += n > 0 ? n : 0;
    }
    /* Operations first: what a peer sent before its notice arrived in
     * order before it, and its own verdict (a mismatch) comes first. */
    work += advance_all(e, sticky);
    /* A driver whose request has just ended returns now: the checks below
     * wait for the next round, which runs them after its sends (the next
     * call's, usually), so they stay off the path from one call's last
     * message to the next call's first.  Never two rounds in a row. */
    if (done && !e->checks_skipped && sticky == WEFT_OK && !stop &&
        e->notice_phase == WF_NOTICE_NONE &&
        __atomic_load_n(done, __ATOMIC_ACQUIRE) &&
        wf_engine_error(e, NULL) == WEFT_OK) { /* none since the start */
        e->checks_skipped = true;
        *timeout = 0;
        *exit = false;
        return work;
    }
    e->checks_skipped = false;
    if (sticky == WEFT_OK)
        work += wf_notice_poll(e);
    if (sticky == WEFT_OK && e->board_poll)
        e->board_poll(e->board_arg, e);
    if (sticky == WEFT_OK)
        wf_stray_check(e);
    if (e->notice_phase == WF_NOTICE_FLUSHING &&
        (wf_notice_flushed(e) || wf_deadline_passed(e->notice_deadline)))
        e->notice_phase = WF_NOTICE_DONE;
    *timeout = check_deadlines(e);
    if (e->notice_phase == WF_NOTICE_FLUSHING && *timeout > 1)
        *timeout = 1;
    *exit = stop && e->notice_phase == WF_NOTICE_DONE &&
            (sticky != WEFT_OK || !e->active_head);
    return work;
}

static bool has_drivers(wf_engine_t *e)
{
    return __atomic_load_n(&e->drivers, __ATOMIC_ACQUIRE) > 0;
}

static void *progress_main(void *arg)
{
    wf_engine_t *e = arg;
    int idle = 0;
    wf_log_set_rank(e->rank);
    for (;;) {
        if (has_drivers(e)) {
            /* A waiting caller runs the rounds; stay out of its way until
             * it leaves (it wakes us) or the engine stops. */
            pthread_mutex_lock(&e->lock);
            bool stop = e->stop;
            pthread_mutex_unlock(&e->lock);
            if (!stop) {
                sleep_until_work(e, 10, false);
                continue;
            }
        }
        int timeout;
        bool exit;
        pthread_mutex_lock(&e->progress_lock);
        int work = progress_round(e, &timeout, &exit, NULL);
        bool in_flight = e->active_head != NULL; /* read under the lock */
        bool dev_busy = wf_engine_dev_busy(e);
        pthread_mutex_unlock(&e->progress_lock);
        if (exit)
            break;
        /* A caller that started driving during the round may sleep in
         * poll() on a transport fd this round has just drained. */
        if (work && has_drivers(e))
            wf_engine_wake(e);
        /* With operations in flight the next message usually arrives
         * within microseconds: yield a few rounds before paying for a
         * sleep in poll() and the wake-up after it. */
        idle = work ? 0 : idle + 1;
        if (!work && in_flight && (idle <= WF_IDLE_SPINS || dev_busy))
            sched_yield();
        else if (!work)
            sleep_until_work(e, timeout, true);
    }
    /* Anything left fails with the sticky error (abort, failure), also
     * operations still waiting for their place in a stream. */
    weft_status_t st = wf_engine_error(e, NULL);
    st = st != WEFT_OK ? st : WEFT_ERR_ABORTED;
    pthread_mutex_lock(&e->progress_lock);
    advance_all(e, st);
    pthread_mutex_lock(&e->lock);
    struct weft_request *left = detach_submitted(e, true);
    pthread_mutex_unlock(&e->lock);
    while (left) {
        struct weft_request *next = left->next;
        wf_engine_dev_forget(e, left);
        wf_history_end(e, left, st);
        wf_req_complete(left, st);
        wf_req_release(left);
        left = next;
    }
    pthread_mutex_unlock(&e->progress_lock);
    return NULL;
}

void wf_engine_poke(wf_engine_t *e)
{
    int timeout;
    bool exit;
    if (pthread_mutex_trylock(&e->progress_lock) == 0) {
        int work = progress_round(e, &timeout, &exit, NULL);
        pthread_mutex_unlock(&e->progress_lock);
        if (work && wf_engine_driver_count(e) > 1)
            wf_engine_wake(e);
    }
}

/* Whether requests or notices are left that the progress thread must take
 * over when the last driver leaves.  The caller holds progress_lock, under
 * which the active list and the notice phase change. */
static bool work_left(wf_engine_t *e)
{
    return e->active_head != NULL ||
           e->notice_phase == WF_NOTICE_FLUSHING ||
           __atomic_load_n(&e->has_submitted, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE);
}

bool wf_engine_drive(wf_engine_t *e, const volatile bool *done,
                     uint64_t until_ms, bool *left, uint64_t *round)
{
    int idle = 0;
    *left = true; /* unless a round says otherwise */
    *round = 0;
    for (;;) {
        int timeout = 0, work = 0;
        bool exit = false;
        /* Blocking, not trylock: whoever holds the lock runs one short
         * round, and sleeping on the mutex until then is cheaper than
         * spinning on it. */
        pthread_mutex_lock(&e->progress_lock);
        bool finished = __atomic_load_n(done, __ATOMIC_ACQUIRE);
        if (!finished) {
            work = progress_round(e, &timeout, &exit, done);
            /* Looked at before the lock goes, as most calls end in the
             * round that reads their last message. */
            finished = __atomic_load_n(done, __ATOMIC_ACQUIRE);
        }
        if (finished) {
            *left = work_left(e);
            *round = e->rounds;
        }
        bool dev_busy = wf_engine_dev_busy(e);
        pthread_mutex_unlock(&e->progress_lock);
        if (work && wf_engine_driver_count(e) > 1)
            wf_engine_wake(e); /* the round may have completed another's request */
        if (finished)
            return true;
        if (exit)
            return false; /* the progress thread finishes what is left */
        idle = work ? 0 : idle + 1;
        if (work)
            continue;
        /* The clock every few idle rounds: reading it costs a poll. */
        uint64_t now = until_ms && (idle & 15) == 1 ? wf_time_ms() : 0;
        if (now && now >= until_ms)
            return false; /* the caller has something to look at */
        if (idle <= e->idle_polls) {
            wf_cpu_relax();
            continue;
        }
        if (idle <= e->idle_polls + WF_IDLE_SPINS || dev_busy) {
            sched_yield();
            continue;
        }
        int nap = timeout < WF_DRIVER_SLEEP_MS ? timeout : WF_DRIVER_SLEEP_MS;
        if (until_ms && !now)
            now = wf_time_ms();
        if (until_ms && now >= until_ms)
            return false;
        if (until_ms && (int64_t)(until_ms - now) < nap)
            nap = (int)(until_ms - now);
        sleep_until_work(e, nap, true);
    }
}

void wf_engine_driver_enter(wf_engine_t *e)
{
    __atomic_add_fetch(&e->drivers, 1, __ATOMIC_ACQ_REL);
}

bool wf_engine_driver_hands_over(wf_engine_t *e)
{
    if (__atomic_load_n(&e->drivers, __ATOMIC_ACQUIRE) != 1)
        return false;
    pthread_mutex_lock(&e->progress_lock);
    bool left = work_left(e);
    pthread_mutex_unlock(&e->progress_lock);
    return left;
}

bool wf_engine_driver_hands_over_after(wf_engine_t *e, bool left,
                                       uint64_t round)
{
    if (__atomic_load_n(&e->drivers, __ATOMIC_ACQUIRE) != 1)
        return false;
    /* Another driver's rounds since then may have taken in work. */
    if (__atomic_load_n(&e->rounds, __ATOMIC_ACQUIRE) != round)
        return wf_engine_driver_hands_over(e);
    return left;
}

void wf_engine_driver_leave(wf_engine_t *e, bool wake_thread)
{
    __atomic_sub_fetch(&e->drivers, 1, __ATOMIC_ACQ_REL);
    /* The thread sleeps on the wake-up fd only while a caller drives. */
    if (wake_thread)
        wf_engine_wake(e);
}

int wf_engine_driver_count(wf_engine_t *e)
{
    return __atomic_load_n(&e->drivers, __ATOMIC_ACQUIRE);
}

static void engine_free(wf_engine_t *e)
{
    if (e->tctx)
        e->tops->fini(e->tctx);
    wf_engine_dev_free(e);
    wf_notice_free(e);
    wf_p2p_free(e);
    wf_exec_scratch_free(e->spare_scratch, e->spare_bytes);
    wf_exec_spare_free(e);
    if (e->wake_fd >= 0)
        close(e->wake_fd);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->progress_lock);
    free(e->peer_addrs);
    free(e->peer_addr_lens);
    free(e->peer_connect_called);
    free(e->inflight_send);
    free(e->inflight_recv);
    free(e->p2p_send_seq);
    free(e->p2p_recv_seq);
    free(e->peer_seen);
    free(e);
}

weft_status_t wf_engine_create(const wf_engine_params_t *p,
                               wf_engine_t **engine)
{
    size_t n = (size_t)p->size;
    wf_engine_t *e = calloc(1, sizeof(*e));
    if (!e)
        goto err_nomem;
    e->wake_fd = -1;
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->progress_lock, NULL);
    e->rank = p->rank;
    e->size = p->size;
    e->tops = p->tops;
    e->max_inflight = p->max_inflight > 0 ? p->max_inflight : 1;
    e->reg_min = p->reg_min;
    e->timeout_ms = p->timeout_ms;
    e->error_origin = -1;
    e->debug_dump = p->debug_dump;
    e->board_post = p->board_post;
    e->board_poll = p->board_poll;
    e->board_arg = p->board_arg;
    e->idle_polls = p->busy_poll ? WF_IDLE_POLLS : 0;
    e->numa = p->numa;
    e->timeline_id = wf_timeline_comm_id();
    e->peer_addrs = malloc(n * WF_TADDR_MAX);
    e->peer_addr_lens = calloc(n, sizeof(size_t));
    e->peer_connect_called = calloc(n, sizeof(bool));
    e->inflight_send = calloc(n, sizeof(int));
    e->inflight_recv = calloc(n, sizeof(int));
    e->p2p_send_seq = calloc(n, sizeof(uint64_t));
    e->p2p_recv_seq = calloc(n, sizeof(uint64_t));
    e->peer_seen = calloc(n, sizeof(uint64_t));
    if (!e->peer_addrs || !e->peer_addr_lens || !e->peer_connect_called ||
        !e->inflight_send || !e->inflight_recv || !e->p2p_send_seq ||
        !e->p2p_recv_seq || !e->peer_seen || wf_notice_init(e) != WEFT_OK)
        goto err_nomem;
    memcpy(e->peer_addrs, p->peer_addrs, n * WF_TADDR_MAX);
    memcpy(e->peer_addr_lens, p->peer_addr_lens, n * sizeof(size_t));
    e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->wake_fd < 0) {
        WEFT_WARN(SCHED, "eventfd failed: %s", wf_errno_str(errno));
        engine_free(e);
        return WEFT_ERR_SYSTEM;
    }
    e->tctx = p->tctx; /* owned from here on, when creation succeeds */
    int err = pthread_create(&e->thread, NULL, progress_main, e);
    if (err) {
        WEFT_WARN(SCHED, "cannot start the progress thread: %s",
                  wf_errno_str(err));
        e->tctx = NULL;
        engine_free(e);
        return WEFT_ERR_SYSTEM;
    }
    e->thread_started = true;
    if (p->pin)
        wf_topo_pin_thread(e->thread, p->progress_cpu);
    if (e->debug_dump)
        wf_dump_signal_register(e);
    *engine = e;
    return WEFT_OK;
err_nomem:
    WEFT_WARN(SCHED, "out of memory creating the engine for %zu ranks", n);
    if (e)
        engine_free(e);
    return WEFT_ERR_NO_MEMORY;
}

void wf_engine_destroy(wf_engine_t *e, bool abort)
{
    if (!e)
        return;
    if (e->debug_dump)
        wf_dump_signal_unregister(e);
    if (abort)
        wf_engine_fail(e, WEFT_ERR_ABORTED, "communicator aborted");
    pthread_mutex_lock(&e->lock);
    __atomic_store_n(&e->stop, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&e->lock);
    wf_engine_wake(e);
    if (e->thread_started)
        pthread_join(e->thread, NULL);
    wf_req_wait_for_drivers(e);
    engine_free(e);
}

/* Under the request lock, which a leaving driver broadcasts on (wait.c). */
void wf_req_wait_for_drivers(wf_engine_t *engine)
{
    pthread_mutex_lock(&wf_req_lock);
    while (wf_engine_driver_count(engine) > 0)
        pthread_cond_wait(&wf_req_cond, &wf_req_lock);
    pthread_mutex_unlock(&wf_req_lock);
}
