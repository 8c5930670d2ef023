/*
 * stall.c - what a caller blocked for long looks at in the rendezvous.
 *
 * Two failures cannot travel over the data connections:
 *
 *  - A rank connected to nobody who knows.  Failure notices go to the
 *    peers a rank is connected to (sched/notice.c); a rank whose only
 *    pending connections were to be dialled by ranks that failed before
 *    dialling hears nothing.  So the first rank whose call fails posts the
 *    failure under "failed" in the communicator's store namespace, and a
 *    caller blocked for another interval looks there and adopts it.
 *
 *  - Ranks that wait for each other in the same operation with different
 *    arguments but exchange no message: two ranks of a reduce that each
 *    believe they are the root both only receive.  So a caller blocked in
 *    a collective posts its signature under "sig/<seq>" (set once: the
 *    first one stays); whoever finds another signature there fails the
 *    communicator with WEFT_ERR_MISMATCH naming both, and the notices and
 *    the post above take it to everyone.
 *
 * Only callers that wait longer than an interval (an eighth of the
 * timeout) touch the store, so operations that complete pay nothing; each
 * look is one or two round trips.  They run on a short-lived worker
 * thread, never the caller's or the progress thread: with the link to the
 * rendezvous cut a store call lasts as long as the store's timeout, and a
 * caller stuck in it would miss its own deadline (netns link-cut test).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_worker.h"
#include "common.h"
#include "stall.h"

#define FAILED_KEY "failed"

int64_t wf_stall_every_ms(int64_t timeout_ms)
{
    int64_t every = timeout_ms / 8;
    return every < 250 ? 250 : every > 30000 ? 30000 : every;
}

/* Splits a failure record "status origin message"; false (with a warning)
 * for a malformed one. */
static bool parse_failure(wf_comm_impl_t *c, const char *value, int *status,
                          int *origin, const char **text)
{
    int at = 0;
    *status = 0, *origin = -1;
    if (sscanf(value, "%d %d %n", status, origin, &at) < 2 || at <= 0 ||
        *status >= 0 || *origin < 0 || *origin >= c->size) {
        WEFT_WARN(COLL, "store %s: ignoring a malformed failure record",
                  wf_store_describe(c->store));
        return false;
    }
    *text = value + at;
    return true;
}

/* The failure another rank posted, adopted as a notice would be. */
static void adopt_posted_failure(wf_comm_impl_t *c)
{
    char value[WF_ERRMSG_MAX + 32];
    size_t len = 0;
    if (wf_store_get(c->store, FAILED_KEY, value, sizeof(value) - 1, &len,
                     0) != WEFT_OK)
        return;
    value[len] = '\0';
    int status, origin;
    const char *text;
    if (!parse_failure(c, value, &status, &origin, &text))
        return;
    if (status == WEFT_ERR_ABORTED)
        status = WEFT_ERR_REMOTE; /* as a notice would say it */
    wf_engine_adopt(c->engine, (weft_status_t)status, origin, text);
}

/* Posts this rank's signature of collective `req`; fails the communicator
 * when a rank posted another one first. */
static void compare_signature(wf_comm_impl_t *c, struct weft_request *req)
{
    /* From the request's arguments, which stay as they were submitted
     * (its execution state belongs to whoever drives the engine). */
    char key[48], mine[64], theirs[64];
    uint64_t sig_now[2];
    wf_sig_make(req, sig_now);
    snprintf(key, sizeof(key), "sig/%" PRIu64, req->seq);
    snprintf(mine, sizeof(mine), "%d %" PRIx64 " %" PRIx64, c->rank,
             sig_now[0], sig_now[1]);
    bool created = false;
    size_t len = 0;
    if (wf_store_set_once(c->store, key, mine, strlen(mine), &created, theirs,
                          sizeof(theirs) - 1, &len) != WEFT_OK || created)
        return;
    theirs[len] = '\0';
    int rank = -1;
    uint64_t other[2];
    if (sscanf(theirs, "%d %" SCNx64 " %" SCNx64, &rank, &other[0],
               &other[1]) != 3 || rank < 0 || rank >= c->size) {
        WEFT_WARN(COLL, "store %s: ignoring a malformed signature record "
                  "for %s", wf_store_describe(c->store), key);
        return;
    }
    if (other[0] == sig_now[0] && other[1] == sig_now[1])
        return;
    char a[160], b[160];
    wf_sig_describe(sig_now, a, sizeof(a));
    wf_sig_describe(other, b, sizeof(b));
    wf_engine_fail(c->engine, WEFT_ERR_MISMATCH,
                   "operation #%" PRIu64 " mismatch: rank %d called %s but "
                   "rank %d called %s (both waited; found through the "
                   "rendezvous)", req->seq, c->rank, a, rank, b);
}

static void stall_check(wf_comm_impl_t *c, struct weft_request *req)
{
    if (wf_engine_error(c->engine, NULL) != WEFT_OK)
        return;
    adopt_posted_failure(c);
    if (!wf_req_is_p2p(req) && !req->sig_posted &&
        wf_engine_error(c->engine, NULL) == WEFT_OK) {
        req->sig_posted = true;
        compare_signature(c, req);
    }
}

/* A peer lost here may have left because of an earlier failure elsewhere
 * that no notice brought: a rank that failed before it ever connected to
 * this one refuses the connection once it has gone, and this rank's own
 * message then names the messenger.  The job's first posted failure names
 * the cause, so it is added to the message the caller reads. */
static void name_first_failure(wf_comm_impl_t *c, weft_status_t st,
                               int origin, const char *first)
{
    int first_status, first_origin;
    const char *text;
    if (origin >= 0 || (st != WEFT_ERR_REMOTE && st != WEFT_ERR_TRANSPORT) ||
        !parse_failure(c, first, &first_status, &first_origin, &text) ||
        first_origin == c->rank)
        return;
    char note[WF_ERRMSG_MAX];
    snprintf(note, sizeof(note), "; the job's first failure, posted to the "
             "rendezvous by rank %d: %s", first_origin, text);
    wf_engine_append_error(c->engine, note);
}

static void post_failure(wf_comm_impl_t *c)
{
    char msg[WF_ERRMSG_MAX];
    int origin;
    weft_status_t st = wf_engine_error_copy(c->engine, msg, sizeof(msg),
                                            &origin);
    if (st == WEFT_OK)
        return;
    char *value = malloc(WF_ERRMSG_MAX + 64);
    if (!value)
        return;
    /* Prefixed with the rank it arose on, as notices carry it. */
    char text[WF_ERRMSG_MAX + 32];
    int from = wf_failure_text(c->rank, origin, st, msg, text, sizeof(text));
    snprintf(value, WF_ERRMSG_MAX + 64, "%d %d %s", (int)st, from, text);
    /* The first post stays; a later one only reads it back. */
    bool created = true;
    size_t len = 0;
    if (wf_store_set_once(c->store, FAILED_KEY, value, strlen(value),
                          &created, value, WF_ERRMSG_MAX + 63,
                          &len) == WEFT_OK && !created) {
        value[len] = '\0';
        name_first_failure(c, st, origin, value);
    }
    free(value);
}

/* ---- on workers (comm_worker.c) ---------------------------------------- */

static void check_job(wf_comm_impl_t *c, void *arg)
{
    struct weft_request *req = arg;
    stall_check(c, req);
    wf_req_release(req);
    __atomic_store_n(&c->stall_busy, false, __ATOMIC_RELEASE);
}

void wf_stall_check_async(wf_comm_impl_t *c, struct weft_request *req)
{
    if (__atomic_exchange_n(&c->stall_busy, true, __ATOMIC_ACQ_REL))
        return; /* the last look is still waiting for the store */
    wf_req_retain(req);
    if (!wf_comm_worker(c, check_job, req, 0)) {
        wf_req_release(req);
        __atomic_store_n(&c->stall_busy, false, __ATOMIC_RELEASE);
    }
}

static void post_job(wf_comm_impl_t *c, void *arg)
{
    (void)arg;
    post_failure(c);
}

/* The caller waits for the post a little: a process that exits right
 * after its failed call (as survivors often do) would otherwise take the
 * post with it, and the ranks that only the store can reach would wait
 * out their timeouts.  A reachable store answers in a millisecond; an
 * unreachable one costs the caller this bound, not the store's timeout. */
void wf_stall_post_failure(wf_comm_impl_t *c)
{
    if (__atomic_exchange_n(&c->failure_posted, true, __ATOMIC_ACQ_REL))
        return;
    int64_t wait = c->cfg.timeout_ms / 4;
    wf_comm_worker(c, post_job, NULL, wait < 1000 ? wait : 1000);
}
