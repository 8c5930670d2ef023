/*
 * diag.c - hang diagnosis gathered through the rendezvous.
 *
 * When a blocking call times out, each rank's own message says only what
 * it waited for.  The question a user has is "who is stuck where", across
 * all ranks.  So every rank whose blocking call ends in a timeout (its own,
 * or one adopted from a failure notice) publishes where it was under
 * "diag/r<rank>" in the communicator's store namespace, and the rank where
 * the timeout arose collects those records for a short window and appends
 * the summary to its error message and log:
 *
 *   ranks 0-2,4-7 were in allreduce #1843; rank 3 was in broadcast #1842
 *   no answer from rank 5 within 2000 ms (not inside a weft call: busy in
 *   application code, or gone)
 *
 * A rank that never calls into weft again cannot answer; that silence is
 * itself the diagnosis.  The store is used from a worker thread the caller
 * waits for at most the window (plus half a second), never from the
 * progress thread, so a slow or dead rendezvous server delays the error by
 * that much at most and cannot block an abort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "comm.h"
#include "comm_worker.h"
#include "common.h"
#include "diag.h"

/* Longest the originating rank waits for the others' records. */
#define WF_DIAG_WINDOW_MS 2000
#define WF_DIAG_POLL_MS 20
#define WF_DIAG_POS_MAX 96

void wf_diag_position(const struct weft_request *req, char *buf, size_t len)
{
    const char *name = wf_coll_name(req->args.coll);
    if (req->args.peer == WEFT_ANY_SOURCE)
        snprintf(buf, len, "%s from any rank", name);
    else if (req->args.coll == WF_COLL_SEND || req->args.coll == WF_COLL_RECV)
        snprintf(buf, len, "%s %s rank %d", name,
                 req->args.coll == WF_COLL_SEND ? "to" : "from",
                 req->args.peer);
    else
        wf_diag_coll_position(req->args.coll, req->seq, buf, len);
}

void wf_diag_coll_position(wf_coll_t coll, uint64_t seq, char *buf,
                           size_t len)
{
    snprintf(buf, len, "%s #%llu", wf_coll_name(coll),
             (unsigned long long)seq);
}

/* Appends "0-2,4" style ranges of the ranks r with pick[r] set. */
static void append_ranges(char *buf, size_t len, const bool *pick, int n)
{
    size_t used = strlen(buf);
    bool first = true;
    for (int r = 0; r < n; r++) {
        if (!pick[r])
            continue;
        int end = r;
        while (end + 1 < n && pick[end + 1])
            end++;
        int k = end > r ? snprintf(buf + used, len - used, "%s%d-%d",
                                   first ? "" : ",", r, end)
                        : snprintf(buf + used, len - used, "%s%d",
                                   first ? "" : ",", r);
        if (k < 0 || (size_t)k >= len - used)
            return;
        used += (size_t)k;
        first = false;
        r = end;
    }
}

static int count(const bool *pick, int n)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        k += pick[r];
    return k;
}

/* Collects the records of all ranks for up to the window; pos[r][0] is
 * '\0' for a rank that did not answer. */
static void collect(wf_comm_impl_t *c, char (*pos)[WF_DIAG_POS_MAX],
                    int64_t window_ms)
{
    uint64_t deadline = wf_deadline_after(window_ms);
    for (;;) {
        int missing = 0;
        for (int r = 0; r < c->size; r++) {
            if (pos[r][0])
                continue;
            char key[32];
            size_t len = 0;
            snprintf(key, sizeof(key), "diag/r%d", r);
            if (wf_store_get(c->store, key, pos[r], WF_DIAG_POS_MAX - 1, &len,
                             0) == WEFT_OK && len > 0)
                pos[r][len] = '\0';
            else
                missing++;
        }
        if (!missing || wf_deadline_passed(deadline))
            return;
        wf_sleep_ms(WF_DIAG_POLL_MS);
    }
}

static int64_t window_ms(const wf_comm_impl_t *c)
{
    return c->cfg.timeout_ms < WF_DIAG_WINDOW_MS ? c->cfg.timeout_ms
                                                 : WF_DIAG_WINDOW_MS;
}

/* "; ranks 0-2 were in allreduce #4; rank 3 was in recv from rank 1; no
 * answer from rank 5 within 2000 ms (...)" */
static void summarize(wf_comm_impl_t *c, char (*pos)[WF_DIAG_POS_MAX],
                      int64_t window_ms, char *out, size_t len)
{
    size_t n_ranks = c->size > 0 ? (size_t)c->size : 1;
    bool *pick = calloc(n_ranks, sizeof(bool));
    bool *done = calloc(n_ranks, sizeof(bool));
    out[0] = '\0';
    if (!pick || !done)
        goto out;
    for (int r = 0; r < c->size; r++) {
        if (done[r] || !pos[r][0])
            continue;
        for (int q = 0; q < c->size; q++)
            pick[q] = q >= r && !done[q] && strcmp(pos[q], pos[r]) == 0;
        int n = count(pick, c->size);
        wf_strlcpy(out + strlen(out), n > 1 ? "; ranks " : "; rank ",
                   len - strlen(out));
        append_ranges(out, len, pick, c->size);
        size_t used = strlen(out);
        snprintf(out + used, len - used, " %s in %s", n > 1 ? "were" : "was",
                 pos[r]);
        for (int q = r; q < c->size; q++)
            done[q] = done[q] || pick[q];
    }
    for (int r = 0; r < c->size; r++)
        pick[r] = !pos[r][0];
    int silent = count(pick, c->size);
    if (silent) {
        wf_strlcpy(out + strlen(out),
                   silent > 1 ? "; no answer from ranks " : "; no answer from "
                                                            "rank ",
                   len - strlen(out));
        append_ranges(out, len, pick, c->size);
        size_t used = strlen(out);
        snprintf(out + used, len - used, " within %lld ms (not inside a weft "
                 "call: busy in application code, or gone)",
                 (long long)window_ms);
    }
out:
    free(pick);
    free(done);
}

static void gather(wf_comm_impl_t *c, void *arg)
{
    char *where = arg;
    char key[32];
    snprintf(key, sizeof(key), "diag/r%d", c->rank);
    weft_status_t st = wf_store_set(c->store, key, where, strlen(where));
    free(where);
    if (st != WEFT_OK)
        return; /* the store logged why; the error stands as it is */
    if (wf_engine_error_origin(c->engine) >= 0)
        return; /* the rank where the timeout arose gathers */
    char (*pos)[WF_DIAG_POS_MAX] = calloc((size_t)c->size, sizeof(*pos));
    char *summary = malloc(WF_ERRMSG_MAX);
    if (pos && summary) {
        collect(c, pos, window_ms(c));
        summarize(c, pos, window_ms(c), summary, WF_ERRMSG_MAX);
        WEFT_WARN(COLL, "hang diagnosis of rank %d, gathered through the "
                  "rendezvous%s", c->rank, summary);
        wf_engine_append_error(c->engine, summary);
    }
    free(pos);
    free(summary);
}

void wf_diag_gather(wf_comm_impl_t *c, const char *where)
{
    /* Once per communicator: its failure is sticky, later calls fail at
     * once and have nothing new to say. */
    if (__atomic_exchange_n(&c->diag_done, true, __ATOMIC_ACQ_REL))
        return;
    char *copy = strdup(where);
    if (!copy)
        return;
    /* On a worker: with the rendezvous out of reach (a cut link, or the
     * rank that hosted it gone) each store call lasts the store's timeout,
     * and the caller must not miss its own bound by a multiple of it.  It
     * waits for the window and a little more, then returns; a late
     * summary still reaches the log and the communicator's message. */
    if (!wf_comm_worker(c, gather, copy, window_ms(c) + 500))
        free(copy);
}
