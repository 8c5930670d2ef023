/*
 * stray.c - messages no operation will ever take.
 *
 * A mismatched signature is found when a receive completes (exec.c), but
 * ranks that disagree on a root can send messages nobody receives: in a
 * broadcast where two ranks each believe they are the root, both only
 * send, both finish, and the data are wrong with nobody the wiser.  Such a
 * message stays in the transport as an unexpected one.  After each round
 * in which an unexpected message arrived or a collective started or
 * finished, the engine looks at the unexpected collective messages: one
 * for an operation in progress here that carries another signature, or
 * one for an operation already finished here, can never be received, and
 * the communicator fails with WEFT_ERR_MISMATCH naming both sides.  A
 * message for an operation this rank has not started yet is fine: that
 * peer is ahead.
 *
 * The check costs one counter read per round while nothing new arrives,
 * and a walk over the unexpected messages held when something did.
 */
#include <stdio.h>

#include "common.h"
#include "sched/engine_impl.h"

/* Whether collective `seq` (as a tag carries it) was started here. */
static bool started(const wf_engine_t *e, uint64_t seq)
{
    if (e->coll_started == 0)
        return false;
    uint64_t last = (e->coll_started - 1) & WF_TAG_SEQ_MASK;
    return ((last - seq) & WF_TAG_SEQ_MASK) <= WF_TAG_SEQ_MASK / 2;
}

static struct weft_request *active_coll(wf_engine_t *e, uint64_t seq)
{
    for (struct weft_request *r = e->active_head; r; r = r->next)
        if (!wf_req_is_p2p(r) && (r->seq & WF_TAG_SEQ_MASK) == seq)
            return r;
    return NULL;
}

static void report(wf_engine_t *e, uint64_t seq, const uint64_t *mine,
                   bool finished, int peer, const uint64_t theirs[2])
{
    char a[160] = "an operation that took no message from it", b[160];
    if (mine)
        wf_sig_describe(mine, a, sizeof(a));
    wf_sig_describe(theirs, b, sizeof(b));
    wf_engine_fail(e, WEFT_ERR_MISMATCH,
                   "operation #%llu mismatch: rank %d called %s%s but %s "
                   "called %s", (unsigned long long)seq, e->rank, a,
                   finished ? " and finished it without that peer's message"
                            : "",
                   e->tops->peer_describe(e->tctx, peer), b);
}

static bool visit(void *arg, int peer, uint64_t tag, const uint64_t sig[2])
{
    wf_engine_t *e = arg;
    if (tag >> 62 != WF_TAG_KIND_COLL)
        return false;
    uint64_t seq = wf_tag_seq(tag);
    struct weft_request *req = active_coll(e, seq);
    if (req) {
        const uint64_t *mine = wf_exec_sig(req);
        if (!mine || (mine[0] == sig[0] && mine[1] == sig[1]))
            return false; /* it arrived early; its receive comes */
        report(e, req->seq, mine, false, peer, sig);
        return true;
    }
    if (!started(e, seq))
        return false; /* the peer is ahead of this rank */
    uint64_t mine[2], full_seq = seq;
    bool known = wf_history_coll_sig(e, seq, WF_TAG_SEQ_MASK, &full_seq, mine);
    report(e, full_seq, known ? mine : NULL, true, peer, sig);
    return true;
}

void wf_stray_check(wf_engine_t *e)
{
    if (!e->tops->scan_unexpected)
        return;
    uint64_t arrivals = e->tops->scan_unexpected(e->tctx, NULL, NULL);
    if (arrivals == e->stray_arrivals &&
        !__atomic_load_n(&e->stray_due, __ATOMIC_ACQUIRE))
        return;
    e->stray_arrivals = arrivals;
    __atomic_store_n(&e->stray_due, false, __ATOMIC_RELEASE);
    if (arrivals)
        e->tops->scan_unexpected(e->tctx, visit, e);
}
