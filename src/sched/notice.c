/*
 * notice.c - failure notices between the engines of one communicator.
 *
 * A rank whose communicator fails (a peer died, a mismatch, a timeout, an
 * abort) must not leave the others waiting for data it will never send.
 * So every engine keeps one receive posted per peer it has connected to,
 * on a control tag no operation uses, and on failure sends each of those
 * peers a notice: the status and the message.  A rank that gets a notice
 * fails with the same status (an abort becomes WEFT_ERR_REMOTE) and the
 * originator's message, and passes it on to its own peers, so the failure
 * reaches every rank that is connected to the job through anyone.  When
 * that control receive fails instead (the transport lost the connection:
 * the peer was killed, its host went away), the peer is lost, and that is
 * itself a failure of the communicator, named after the peer.
 *
 * A rank that destroys its communicator cleanly sends a "bye" notice
 * first, so its peers know that the connection closing next is not a
 * failure (their own later operations with it still fail if they need it).
 *
 * Notices ride on the data connections: the transport keeps a complete
 * message deliverable even after the connection that brought it closed, so
 * a notice followed by the sender's exit is still read.
 *
 * Everything here runs under the engine's progress lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "sched/engine_impl.h"

/* sig[0] of a notice: its kind, and the status for a failure. */
#define WF_NOTICE_FAIL 1u
#define WF_NOTICE_BYE 2u

typedef enum {
    NP_IDLE = 0,  /* never connected: nothing to watch or tell */
    NP_WATCHED,   /* control receive posted */
    NP_LEFT,      /* said bye, or was reported lost: no longer watched */
} notice_peer_state_t;

struct wf_notice_peer {
    notice_peer_state_t state;
    bool lost;    /* its connection broke: it died or became unreachable */
    wf_treq_t *recv;
    wf_treq_t *send;
    char *text; /* what arrives (receive buffer of WF_ERRMSG_MAX bytes,
                 * allocated when watching starts: most peers never are) */
};

static uint64_t notice_tag(void)
{
    return wf_tag_make(WF_TAG_KIND_CTRL, 0, 0);
}

weft_status_t wf_notice_init(wf_engine_t *e)
{
    e->notice = calloc((size_t)e->size, sizeof(*e->notice));
    e->notice_peers = calloc((size_t)e->size, sizeof(int));
    return e->notice && e->notice_peers ? WEFT_OK : WEFT_ERR_NO_MEMORY;
}

void wf_notice_free(wf_engine_t *e)
{
    /* Called after the transport's fini, which drops posted requests. */
    for (int peer = 0; e->notice && peer < e->size; peer++)
        free(e->notice[peer].text);
    free(e->notice);
    free(e->notice_peers);
    e->notice = NULL;
    e->notice_peers = NULL;
}

/* The watch on `peer` ended without a notice: it is gone. */
static void notice_lost(wf_engine_t *e, int peer, weft_status_t st)
{
    wf_notice_peer_t *np = &e->notice[peer];
    np->state = NP_LEFT;
    __atomic_store_n(&np->lost, true, __ATOMIC_RELAXED);
    wf_engine_fail(e, st, "rank %d lost %s (%s): the process died, its host "
                   "or network went away, or it left without "
                   "weft_comm_destroy", e->rank,
                   e->tops->peer_describe(e->tctx, peer), weft_strerror(st));
}

void wf_notice_watch(wf_engine_t *e, int peer)
{
    wf_notice_peer_t *np = &e->notice[peer];
    if (np->state != NP_IDLE || peer == e->rank)
        return;
    if (!np->text && !(np->text = malloc(WF_ERRMSG_MAX))) {
        wf_engine_fail(e, WEFT_ERR_NO_MEMORY, "rank %d cannot watch %s for "
                       "failures: out of memory", e->rank,
                       e->tops->peer_describe(e->tctx, peer));
        return;
    }
    weft_status_t st = e->tops->irecv(e->tctx, peer, notice_tag(), np->text,
                                      WF_ERRMSG_MAX - 1, NULL, &np->recv);
    if (st == WEFT_ERR_AGAIN)
        return; /* back-pressure: the next operation's connect retries */
    /* A peer that left before this rank first used the connection (its
     * connect succeeds while its messages wait here): a goodbye among
     * them matched above; without one it did not leave on purpose.  Its
     * failure is REMOTE, or TRANSPORT when this side failed with it first
     * (reading a single-copy message from its memory after it died). */
    if (st == WEFT_ERR_REMOTE || st == WEFT_ERR_TRANSPORT) {
        notice_lost(e, peer, st);
        return;
    }
    if (st < 0) {
        wf_engine_fail(e, st, "rank %d cannot watch %s for failures: %s",
                       e->rank, e->tops->peer_describe(e->tctx, peer),
                       weft_strerror(st));
        return;
    }
    np->state = NP_WATCHED;
    e->notice_peers[e->notice_npeers++] = peer;
}

/* A notice arrived from `peer`: a bye, or a failure to adopt. */
static void notice_arrived(wf_engine_t *e, wf_notice_peer_t *np,
                           const wf_treq_info_t *info)
{
    np->state = NP_LEFT;
    unsigned kind = (unsigned)(info->sig[0] & 0xff);
    if (kind == WF_NOTICE_BYE)
        return;
    size_t len = info->len < WF_ERRMSG_MAX ? info->len : WF_ERRMSG_MAX - 1;
    np->text[len] = '\0';
    weft_status_t st = (weft_status_t)(int32_t)(uint32_t)(info->sig[0] >> 32);
    /* A peer's abort is a remote failure here; statuses that are not
     * failures would be a garbled notice. */
    if (st == WEFT_ERR_ABORTED || st >= 0 || kind != WF_NOTICE_FAIL)
        st = WEFT_ERR_REMOTE;
    int origin = (int)(uint32_t)info->sig[1];
    wf_engine_adopt(e, st, origin, np->text);
}

int wf_notice_poll(wf_engine_t *e)
{
    int work = 0;
    for (int k = 0; k < e->notice_npeers; k++) {
        int peer = e->notice_peers[k];
        wf_notice_peer_t *np = &e->notice[peer];
        if (np->state != NP_WATCHED)
            continue;
        wf_treq_info_t info = {0};
        weft_status_t st = e->tops->test(e->tctx, np->recv, &info);
        if (st == WEFT_INPROGRESS)
            continue;
        np->recv = NULL;
        work++;
        if (st == WEFT_OK) {
            notice_arrived(e, np, &info);
            continue;
        }
        notice_lost(e, peer, st);
    }
    return work;
}

/* A peer may have connected to this rank and be waiting on that connection
 * although no operation of this rank has used it yet (the peer got further
 * ahead).  Watching it too makes sure it hears why the connection closes,
 * instead of calling this rank lost. */
static void notice_watch_linked(wf_engine_t *e)
{
    if (!e->tops->peer_linked)
        return;
    for (int peer = 0; peer < e->size; peer++)
        if (peer != e->rank && e->notice[peer].state == NP_IDLE &&
            e->tops->peer_linked(e->tctx, peer))
            (void)wf_engine_connect(e, peer); /* a failure: nobody to tell */
}

/* Posts one notice to every peer this rank is connected to. */
static void notice_send_all(wf_engine_t *e, uint64_t sig0, int origin,
                            const char *text)
{
    notice_watch_linked(e);
    uint64_t sig[2] = {sig0, (uint64_t)(uint32_t)origin};
    size_t len = strlen(text);
    for (int k = 0; k < e->notice_npeers; k++) {
        int peer = e->notice_peers[k];
        wf_notice_peer_t *np = &e->notice[peer];
        if (np->state != NP_WATCHED || np->send)
            continue;
        if (e->tops->isend(e->tctx, peer, notice_tag(), sig, text, len, NULL,
                           &np->send) < 0)
            np->send = NULL; /* that peer is gone already */
    }
}

void wf_notice_fail_all(wf_engine_t *e)
{
    /* Copied: the text outlives the sends, and another thread may be
     * appending to the engine's message (wf_engine_append_error). */
    char msg[WF_ERRMSG_MAX];
    int origin;
    weft_status_t st = wf_engine_error_copy(e, msg, sizeof(msg), &origin);
    origin = wf_failure_text(e->rank, origin, st, msg, e->notice_text,
                             sizeof(e->notice_text));
    notice_send_all(e, WF_NOTICE_FAIL | (uint64_t)(uint32_t)st << 32, origin,
                    e->notice_text);
}

void wf_notice_bye_all(wf_engine_t *e)
{
    e->notice_text[0] = '\0';
    notice_send_all(e, WF_NOTICE_BYE, e->rank, e->notice_text);
}

bool wf_notice_flushed(wf_engine_t *e)
{
    bool flushed = true;
    for (int k = 0; k < e->notice_npeers; k++) {
        wf_notice_peer_t *np = &e->notice[e->notice_peers[k]];
        if (!np->send)
            continue;
        wf_treq_info_t info;
        if (e->tops->test(e->tctx, np->send, &info) == WEFT_INPROGRESS)
            flushed = false;
        else
            np->send = NULL;
    }
    return flushed;
}

void wf_notice_mark_lost(wf_engine_t *e, int peer)
{
    /* Atomic: the shared segment's waiters mark peers too, without the
     * progress lock (wf_engine_mark_lost). */
    __atomic_store_n(&e->notice[peer].lost, true, __ATOMIC_RELAXED);
}

void wf_engine_mark_lost(wf_engine_t *e, int peer)
{
    wf_notice_mark_lost(e, peer);
}

void wf_engine_lost_peers(wf_engine_t *e, uint8_t *lost)
{
    pthread_mutex_lock(&e->progress_lock);
    for (int peer = 0; peer < e->size; peer++)
        if (__atomic_load_n(&e->notice[peer].lost, __ATOMIC_RELAXED))
            lost[peer / 8] |= (uint8_t)(1u << (peer % 8));
    pthread_mutex_unlock(&e->progress_lock);
}

/* Connecting to a peer is also where it starts being watched for
 * notices, so the two stay together. */
weft_status_t wf_engine_connect(wf_engine_t *e, int peer)
{
    if (!e->peer_connect_called[peer]) {
        weft_status_t st = e->tops->connect(
            e->tctx, peer, e->peer_addrs + (size_t)peer * WF_TADDR_MAX,
            e->peer_addr_lens[peer]);
        if (st < 0)
            return st;
        e->peer_connect_called[peer] = true;
    }
    wf_notice_watch(e, peer); /* once; retried after back-pressure */
    return WEFT_OK;
}
