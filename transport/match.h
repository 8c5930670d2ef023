/*
 * match.h - the matching layer the transports share: per-peer posted
 * receives and unexpected messages, tag matching, the request pool,
 * unexpected-message buffers, test(), scan_unexpected() and the note a
 * failed peer leaves.  A transport moves bytes; this layer decides whose
 * they are (transport.h states the rules it keeps).
 *
 * Matching: per peer, posted receives and unexpected messages are FIFO
 * lists, and for a given tag at most one of the two is non-empty (a
 * receive takes an unexpected message before it queues, a header takes a
 * posted receive before it is kept), so the first match in either list
 * is the oldest: messages of one tag match in post order, different tags
 * independently.  The transport delivers headers in its peer's send
 * order (TCP: every header on stream 0; verbs: every header on QP 0).
 *
 * How a transport uses it:
 *  - struct wf_tctx begins with a wf_match_t, struct wf_treq with a
 *    wf_mreq_t, and each peer embeds a wf_mpeer_t (wf_match_peers says
 *    where), so the ops table takes wf_match_test and
 *    wf_match_scan_unexpected as they are.
 *  - irecv: the transport checks the peer, then wf_match_irecv.  isend:
 *    wf_match_req_new, then the transport queues the bytes.
 *  - A header arrives: wf_match_take_posted, else wf_match_unexp_new for a
 *    buffer of its own; the payload goes to r->buf or msg->data; then
 *    wf_match_arrived.
 *  - The peer fails: wf_match_fail_note logs it once, wf_match_fail_posted
 *    fails the queued receives, wf_match_drop each message in flight.
 *
 * Hot paths (post, match, complete) are inline here: an 8-byte allreduce
 * over TCP pays no call, lock or allocation more than before the layer
 * existed.  The rest is in match.c.
 */
#ifndef WF_MATCH_H
#define WF_MATCH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "transport.h"

/* Finished requests kept for reuse: an 8-byte allreduce posts two, and
 * their calloc and free were a tenth of its user-space instructions.
 * Under AddressSanitizer none, so that a use after free still shows. */
#if defined(__SANITIZE_ADDRESS__)
#define WF_MATCH_SPARE_REQS 0
#else
#define WF_MATCH_SPARE_REQS 64
#endif
/* An unexpected message shorter than this whose buffer holds all of it
 * lives in one allocation with its header; any other buffer is one of
 * its own, from this size taken from the pool when the pool holds one
 * large enough. */
#define WF_MATCH_BLOCK_MAX (64u << 10)
/* Freed unexpected-message buffers of WF_MATCH_SPARE_MIN to
 * WF_MATCH_SPARE_MAX bytes kept per context for the next ones: at most
 * WF_MATCH_SPARES of them and WF_MATCH_SPARE_BYTES in all.  Back-to-back
 * collectives read the next call's chunks early, and fresh 128 KiB+
 * blocks are mapped and faulted in anew every time.  Sized by count
 * alone (8) the pool ran dry on 4 ranks at 64 MiB, where many of a call's
 * chunks arrive before their receive
 * (bench/results/2026-11-25-pulled-sends-outside-the-window.md, "A larger
 * pool of unexpected-message buffers"). */
#define WF_MATCH_SPARES 128
#define WF_MATCH_SPARE_BYTES (32u << 20)
#define WF_MATCH_SPARE_MIN (128u << 10)
#define WF_MATCH_SPARE_MAX (4u << 20)

/* The head of every request (struct wf_treq begins with one). */
typedef struct wf_mreq {
    struct wf_mreq *next;                /* posted list, or the pool */
    struct wf_mreq *all_prev, *all_next; /* every live request of the ctx */
    int peer;
    bool holds; /* the transport's release hook runs when it is freed */
    uint64_t tag;
    char *buf;
    size_t len;           /* send: message length; recv: buffer capacity */
    weft_status_t status; /* WEFT_INPROGRESS until complete */
    wf_treq_info_t info;
} wf_mreq_t;

/* A message that arrived before its receive was posted; a transport may
 * extend it (wf_match_init's msg_size). */
typedef struct wf_mmsg {
    struct wf_mmsg *next;
    uint64_t tag;
    uint64_t sig[2];
    size_t len;
    bool complete; /* every payload byte is in data */
    bool remote;   /* the payload is still in the sender's memory: the
                    * receive that claims it goes to claim_remote */
    bool in_block; /* data is part of this message's allocation */
    wf_mreq_t *waiter; /* a receive claimed it before it was complete */
    char *data;
    size_t cap; /* bytes data holds (it may grow: realloc, unless
                 * in_block) */
} wf_mmsg_t;

/* The matching state of one peer, embedded in the transport's peer. */
typedef struct wf_mpeer {
    wf_mreq_t *posted, *posted_tail;
    wf_mmsg_t *unexp, *unexp_tail;
    const char *desc; /* the transport's "peer 3 (host:port)" */
    /* Set when the peer failed: the status later posts get, and the
     * reason, logged once (now, or at the next post when
     * fail_unreported was set before wf_match_fail_note). */
    weft_status_t fail_status;
    bool fail_unreported;
    char fail_msg[400];
} wf_mpeer_t;

typedef struct wf_match wf_match_t;
struct wf_match {
    wf_mreq_t *spare_reqs; /* the pool, nspare_reqs of them */
    int nspare_reqs;
    wf_mreq_t *all;          /* every live request, for fini */
    uint64_t posts;          /* requests created so far */
    uint64_t unexp_arrivals; /* unexpected messages ever (scan_unexpected) */
    const char *name;        /* the transport's, for log lines */
    int rank, npeers;
    char *peers;      /* the transport's peer table (wf_match_peers) */
    size_t peer_size; /* bytes of one of its entries */
    size_t mpeer_off; /* where the wf_mpeer_t is in one */
    size_t msg_size;  /* bytes of the transport's wf_mmsg_t */
    /* Called when a request with `holds` is freed: what the transport
     * attached to it goes (TCP: a striped send's pieces; verbs: a
     * rendezvous send's registration). */
    void (*release)(wf_match_t *m, wf_mreq_t *r);
    /* A receive r claims unexpected message msg whose payload is still
     * remote (msg->remote): the transport reads it into r, completes r
     * and frees msg (wf_match_msg_free). */
    void (*claim_remote)(wf_match_t *m, wf_mmsg_t *msg, wf_mreq_t *r);
    /* Freed unexpected-message buffers (WF_MATCH_SPARES). */
    char *spare[WF_MATCH_SPARES];
    size_t spare_cap[WF_MATCH_SPARES];
    int nspare;
    size_t spare_bytes; /* the sum of spare_cap */
};

/* ---- match.c ----------------------------------------------------------- */

/* Starts the matching state of a context of `npeers` peers; `msg_size`:
 * sizeof the transport's unexpected message (at least sizeof(wf_mmsg_t)).
 * The hooks may be left NULL by a transport that never needs them. */
void wf_match_init(wf_match_t *m, const char *name, int rank, int npeers,
                   size_t msg_size);
/* The transport's peer table: npeers entries of `size` bytes with the
 * wf_mpeer_t at `off` (whose desc the transport points at its own). */
void wf_match_peers(wf_match_t *m, void *peers, size_t size, size_t off);
#define WF_MATCH_PEERS(m, peers, field)                                        \
    wf_match_peers((m), (peers), sizeof(*(peers)),                             \
                   offsetof(__typeof__(*(peers)), field))
/* Frees every unexpected message, live request and kept buffer; what the
 * transport holds of them (messages in flight) it frees first. */
void wf_match_fini(wf_match_t *m);

/* The ops table's test() and scan_unexpected() (transport.h). */
weft_status_t wf_match_test(wf_tctx_t *ctx, wf_treq_t *req,
                            wf_treq_info_t *info);
uint64_t wf_match_scan_unexpected(wf_tctx_t *ctx,
                                  bool (*visit)(void *arg, int peer,
                                                uint64_t tag,
                                                const uint64_t sig[2]),
                                  void *arg);

/* Releases a request that was never handed out (a post that failed). */
void wf_match_req_free(wf_match_t *m, wf_mreq_t *r);
/* Keeps an unexpected message of `len` bytes with a buffer of `cap`
 * (cap < len: the transport grows it as bytes come, a claimed length
 * being only a claim); NULL when out of memory. */
wf_mmsg_t *wf_match_unexp_new(wf_match_t *m, wf_mpeer_t *q, uint64_t tag,
                              const uint64_t sig[2], size_t len, size_t cap);
/* The same for a message whose payload is still remote (no buffer). */
wf_mmsg_t *wf_match_unexp_new_remote(wf_match_t *m, wf_mpeer_t *q,
                                     uint64_t tag, const uint64_t sig[2],
                                     size_t len);
/* A buffer of at least `cap` bytes, its size in *have: from the pool when
 * it holds one that large and cap >= WF_MATCH_BLOCK_MAX, else fresh;
 * NULL when out of memory. */
char *wf_match_buffer(wf_match_t *m, size_t cap, size_t *have);
/* Takes msg out of the unexpected list (it was found there). */
void wf_match_unexp_unlink(wf_mpeer_t *q, wf_mmsg_t *msg);
/* The message being received into r (a posted receive) or msg (kept
 * unexpected) is lost: r fails with st, msg's claiming receive too, or
 * msg leaves the unexpected list; msg is freed.  Either may be NULL. */
void wf_match_drop(wf_match_t *m, wf_mpeer_t *q, wf_mreq_t *r,
                   wf_mmsg_t *msg, weft_status_t st);
/* Fails every queued receive of the peer with st. */
void wf_match_fail_posted(wf_mpeer_t *q, weft_status_t st);
/* The peer failed with st: keeps and logs the reason (at debug level when
 * q->fail_unreported, to warn at the next post instead). */
void wf_match_fail_note(wf_match_t *m, wf_mpeer_t *q, weft_status_t st,
                        const char *fmt, va_list ap);
/* The status of a post to a failed peer; warns now if its failure was
 * kept quiet. */
weft_status_t wf_match_peer_failed(wf_match_t *m, wf_mpeer_t *q);
/* Logs a post to a peer index that is none (out of range, or this
 * rank); returns WEFT_ERR_INVALID_ARG. */
weft_status_t wf_match_bad_peer(const wf_match_t *m, int peer);
/* Logs the failure of a request's allocation. */
void wf_match_req_oom(wf_match_t *m, int peer);
/* Frees a buffer that is not part of its message's allocation: into the
 * pool when it fits there, else free(). */
void wf_match_buf_put(wf_match_t *m, char *data, size_t cap);

/* ---- inline: the paths every message takes ----------------------------- */

static inline wf_mpeer_t *wf_match_peer(const wf_match_t *m, int i)
{
    return (wf_mpeer_t *)(void *)(m->peers + (size_t)i * m->peer_size +
                                  m->mpeer_off);
}

/* WEFT_OK for a peer a post may name. */
static inline weft_status_t wf_match_peer_check(const wf_match_t *m, int peer)
{
    if (WF_UNLIKELY(peer < 0 || peer >= m->npeers || peer == m->rank))
        return wf_match_bad_peer(m, peer);
    return WEFT_OK;
}

/* A new request of `size` bytes (the transport's sizeof(wf_treq_t): a
 * constant, so the memset of a pooled one stays inline); NULL, logged,
 * when out of memory. */
static inline wf_mreq_t *wf_match_req_new(wf_match_t *m, size_t size,
                                          int peer, uint64_t tag,
                                          const void *buf, size_t len)
{
    wf_mreq_t *r = m->spare_reqs;

    if (r) {
        m->spare_reqs = r->next;
        m->nspare_reqs--;
        memset(r, 0, size);
    } else {
        r = calloc(1, size);
        if (!r) {
            wf_match_req_oom(m, peer);
            return NULL;
        }
    }
    r->peer = peer;
    r->tag = tag;
    r->buf = (char *)buf;
    r->len = len;
    r->status = WEFT_INPROGRESS;
    m->posts++;
    r->all_next = m->all;
    if (m->all)
        m->all->all_prev = r;
    m->all = r;
    return r;
}

/* The request is final with st (its info filled before, on success). */
static inline void wf_match_done(wf_mreq_t *r, weft_status_t st)
{
    r->next = NULL;
    r->status = st;
}

/* A send is done: every byte went (or the peer read them). */
static inline void wf_match_sent(wf_mreq_t *r)
{
    r->info.len = r->len;
    wf_match_done(r, WEFT_OK);
}

/* A receive got a whole message of `len` bytes (what fitted is in its
 * buffer). */
static inline void wf_match_complete(wf_mreq_t *r, size_t len,
                                     const uint64_t sig[2])
{
    r->info.len = len;
    r->info.sig[0] = sig[0];
    r->info.sig[1] = sig[1];
    r->info.truncated = len > r->len;
    wf_match_done(r, WEFT_OK);
}

/* Copies a complete unexpected message into receive r and completes r. */
static inline void wf_match_deliver(wf_mreq_t *r, const wf_mmsg_t *msg)
{
    size_t n = WF_MIN(msg->len, r->len);

    if (n)
        memcpy(r->buf, msg->data, n);
    wf_match_complete(r, msg->len, msg->sig);
}

static inline void wf_match_msg_free(wf_match_t *m, wf_mmsg_t *msg)
{
    if (!msg->in_block && msg->data)
        wf_match_buf_put(m, msg->data, msg->cap);
    free(msg);
}

/* Unlinks and returns the oldest posted receive with `tag`, or NULL. */
static inline wf_mreq_t *wf_match_take_posted(wf_mpeer_t *q, uint64_t tag)
{
    wf_mreq_t **link = &q->posted, *prev = NULL;

    for (wf_mreq_t *r; (r = *link) != NULL; prev = r, link = &r->next) {
        if (r->tag != tag)
            continue;
        *link = r->next;
        if (q->posted_tail == r)
            q->posted_tail = prev;
        r->next = NULL;
        return r;
    }
    return NULL;
}

/* A whole message arrived, into receive r or into unexpected message
 * msg (delivered now, and freed, if a receive claimed it meanwhile). */
static inline void wf_match_arrived(wf_match_t *m, wf_mreq_t *r,
                                    wf_mmsg_t *msg, size_t len,
                                    const uint64_t sig[2])
{
    if (r) {
        wf_match_complete(r, len, sig);
    } else if (msg) {
        msg->complete = true;
        if (msg->waiter) {
            wf_match_deliver(msg->waiter, msg);
            wf_match_msg_free(m, msg);
        }
    }
}

/* irecv, once the transport has checked the peer (`failed`: it has
 * failed; what it sent before stays receivable).  Takes the oldest
 * unexpected message with the tag, else queues the receive.  Returns
 * WEFT_INPROGRESS when the receive waits for bytes (queued, or claimed a
 * message still arriving), WEFT_OK when it completed or went to
 * claim_remote, else an error with nothing posted; *out is the request. */
static inline weft_status_t wf_match_irecv(wf_match_t *m, wf_mpeer_t *q,
                                           bool failed, size_t size,
                                           int peer, uint64_t tag,
                                           void *buf, size_t cap,
                                           wf_mreq_t **out)
{
    wf_mmsg_t **link = &q->unexp, *msg, *prev = NULL;

    while ((msg = *link) != NULL && msg->tag != tag) {
        prev = msg;
        link = &msg->next;
    }
    if (!msg && failed)
        return wf_match_peer_failed(m, q);
    wf_mreq_t *r = wf_match_req_new(m, size, peer, tag, buf, cap);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    *out = r;
    if (!msg) {
        if (q->posted_tail)
            q->posted_tail->next = r;
        else
            q->posted = r;
        q->posted_tail = r;
        return WEFT_INPROGRESS;
    }
    *link = msg->next; /* the oldest of its tag leaves the list */
    if (q->unexp_tail == msg)
        q->unexp_tail = prev;
    msg->next = NULL;
    if (msg->remote) {
        m->claim_remote(m, msg, r);
        return WEFT_OK;
    }
    if (!msg->complete) {
        msg->waiter = r; /* the transport delivers when the rest arrives */
        return WEFT_INPROGRESS;
    }
    wf_match_deliver(r, msg);
    wf_match_msg_free(m, msg);
    return WEFT_OK;
}

#endif /* WF_MATCH_H */
