/*
 * group.c - grouped operations (weft_group_start/end), as NCCL's group
 * calls: between the two, a thread's collective and point-to-point calls
 * are only recorded; weft_group_end starts them all, in the order they
 * were made, as non-blocking operations that progress together, and
 * waits for every one.  So a halo exchange with its sends and receives
 * in any order is one step that cannot deadlock, where the same blocking
 * calls one after another would wait on each other.
 *
 * The record is per thread, like NCCL's: calls from other threads, and on
 * any communicator, go on as usual.  A vector collective's count arrays
 * are copied when recorded, so the caller's may be temporaries; buffers
 * must stay valid until weft_group_end returns, as for a non-blocking
 * call.
 */
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "common.h"

typedef struct {
    call_t call;
    size_t *arrays; /* the copied count and displacement arrays, or NULL */
} recorded_t;

static __thread int depth;
static __thread recorded_t *calls;
static __thread size_t ncalls, cap;
static __thread weft_status_t record_error; /* the first, or WEFT_OK */

bool wf_group_active(void) { return depth > 0; }

/* Copies the non-NULL arrays of a vector call (n entries each) into one
 * block the record owns. */
static weft_status_t copy_arrays(recorded_t *r, int n)
{
    const size_t **arr[4] = {&r->call.counts, &r->call.displs,
                             &r->call.scounts, &r->call.sdispls};
    size_t have = 0;
    for (int i = 0; i < 4; i++)
        have += *arr[i] != NULL;
    if (!have || n <= 0)
        return WEFT_OK;
    r->arrays = malloc(have * (size_t)n * sizeof(size_t));
    if (!r->arrays)
        return WEFT_ERR_NO_MEMORY;
    size_t *at = r->arrays;
    for (int i = 0; i < 4; i++) {
        if (!*arr[i])
            continue;
        memcpy(at, *arr[i], (size_t)n * sizeof(size_t));
        *arr[i] = at;
        at += n;
    }
    return WEFT_OK;
}

weft_status_t wf_group_record(weft_comm_t comm, const call_t *k,
                              weft_request_t *req)
{
    if (!k->blocking || k->stream) {
        WEFT_WARN(COLL, "%s inside a group: a group starts its calls at "
                  "weft_group_end and waits for them there; use the "
                  "blocking form", k->fn);
        return WEFT_ERR_INVALID_USAGE;
    }
    if (ncalls == cap) {
        size_t grown = cap ? 2 * cap : 16;
        recorded_t *more = realloc(calls, grown * sizeof(*calls));
        if (!more) {
            WEFT_WARN(COLL, "%s: out of memory recording a grouped call",
                      k->fn);
            return record_error = WEFT_ERR_NO_MEMORY;
        }
        calls = more;
        cap = grown;
    }
    recorded_t *r = &calls[ncalls];
    *r = (recorded_t){.call = *k};
    r->call.comm = comm;
    r->call.blocking = false; /* run_group decides */
    int n = 0;
    if (wf_coll_is_vector(k->coll) && weft_comm_size(comm, &n) != WEFT_OK)
        n = 0; /* a bad handle: weft_group_end's start says so */
    if (copy_arrays(r, n) != WEFT_OK) {
        WEFT_WARN(COLL, "%s: out of memory recording a grouped call", k->fn);
        return record_error = WEFT_ERR_NO_MEMORY;
    }
    ncalls++;
    *req = NULL; /* nothing for the caller to wait on */
    return WEFT_OK;
}

static void forget_calls(void)
{
    for (size_t i = 0; i < ncalls; i++)
        free(calls[i].arrays);
    free(calls);
    calls = NULL;
    ncalls = cap = 0;
    record_error = WEFT_OK;
}

WEFT_API weft_status_t weft_group_start(void)
{
    depth++;
    return WEFT_OK;
}

/* Starts the recorded calls in order and waits for every one started;
 * the first failure is the group's.  After a call fails to start, the
 * later ones are not started: on the other ranks they would pair with
 * the wrong operations. */
static weft_status_t run_group(void)
{
    weft_status_t first = record_error;
    weft_request_t *reqs = calloc(ncalls ? ncalls : 1, sizeof(*reqs));
    if (!reqs) {
        WEFT_WARN(COLL, "weft_group_end: out of memory for %zu requests",
                  ncalls);
        return WEFT_ERR_NO_MEMORY;
    }
    /* On one communicator the calls start as blocking ones: waiting for
     * any of them drives that communicator's engine, which progresses
     * them all, so no progress thread needs waking (on a machine with
     * fewer cores than ranks, a third thread per rank costs more than it
     * overlaps).  Across communicators a wait drives only its own
     * engine, so the others' progress threads must run theirs. */
    bool one_comm = true;
    for (size_t i = 1; i < ncalls; i++)
        one_comm &= calls[i].call.comm == calls[0].call.comm;
    size_t started = 0;
    for (; first == WEFT_OK && started < ncalls; started++) {
        call_t *k = &calls[started].call;
        k->blocking = one_comm;
        weft_status_t st = wf_api_start(k->comm, k, &reqs[started]);
        if (st < 0)
            first = st;
    }
    for (size_t i = 0; i < started; i++) {
        if (!reqs[i])
            continue;
        weft_status_t st = weft_wait(reqs[i]);
        weft_request_free(reqs[i]);
        if (first == WEFT_OK && st < 0)
            first = st;
    }
    free(reqs);
    return first;
}

WEFT_API weft_status_t weft_group_end(void)
{
    if (depth == 0) {
        WEFT_WARN(COLL, "weft_group_end without weft_group_start");
        return WEFT_ERR_INVALID_USAGE;
    }
    if (--depth > 0)
        return WEFT_OK;
    weft_status_t st = run_group();
    forget_calls();
    return st;
}
