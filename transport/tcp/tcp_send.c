/*
 * tcp_send.c - the sending direction: isend, and writing the queued frames
 * of a stream.
 *
 * A frame is a 40-byte header {magic, tag, sig[0], sig[1], len} followed by
 * `len` payload bytes (tcp_wire.h).  Frames of a stream go out in posting
 * order, several per sendmsg (or per send() of one flat copy when they are
 * small).  Every message header travels on stream 0, so matching follows
 * the post order whatever the number of streams; large messages with
 * several streams are striped (tcp_stripe.c), and between ranks on one
 * machine large ones go as an RTS the receiver reads from this process's
 * memory (tcp_cma.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

#define WF_TCP_IOV_MAX 64

void wf_tcp_req_release(wf_match_t *m, wf_mreq_t *r)
{
    wf_treq_t *t = (wf_treq_t *)r;

    (void)m;
    free(t->pieces);
    t->pieces = NULL;
}

weft_status_t wf_tcp_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req)
{
    wf_tcp_peer_t *p;
    wf_treq_t *r;

    (void)mh;
    if (!ctx || !req || (!buf && len))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_tcp_peer_get(ctx, peer, &p));
    /* A peer that closed one of its streams has left: its other streams
     * only drain what it sent before. */
    for (int k = 0; p->neof && p->state != WF_TCP_FAILED; k++)
        if (p->streams[k].state == WF_TCP_IDLE)
            wf_tcp_stream_fail(ctx, &p->streams[k], WEFT_ERR_REMOTE,
                               "connection closed by the peer");
    if (p->state == WF_TCP_FAILED)
        return wf_match_peer_failed(&ctx->m, &p->m);
    r = (wf_treq_t *)wf_match_req_new(&ctx->m, sizeof(*r), peer, tag, buf,
                                      len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    if (!wf_tcp_cma_queue(ctx, p, r, sig) &&
        !wf_tcp_stripe_queue(ctx, p, r, sig)) {
        wf_match_req_free(&ctx->m, &r->m);
        return WEFT_ERR_NO_MEMORY;
    }
    /* Try at once where the frame is first in line: most sends fit in the
     * socket buffer and complete here without a trip through epoll. */
    for (int k = 0; k < p->nstreams && p->state == WF_TCP_UP; k++)
        if (p->streams[k].sendq && p->streams[k].sendq->req == r)
            wf_tcp_flush(ctx, &p->streams[k]);
    *req = r;
    return WEFT_OK;
}

/* Accounts `n` written bytes to the queued frames, completing whole ones
 * and the requests whose last frame that was. */
static void send_advance(wf_tcp_stream_t *s, size_t n)
{
    s->bytes_out += n;
    while (n > 0 && s->sendq) {
        wf_tcp_sunit_t *u = s->sendq;
        size_t left = WF_TCP_HDR_LEN + u->len - u->done;
        size_t take = WF_MIN(n, left);

        u->done += take;
        n -= take;
        if (u->done < WF_TCP_HDR_LEN + u->len)
            return;
        s->sendq = u->next;
        if (!s->sendq)
            s->sendq_tail = NULL;
        if (!u->req) {
            free(u); /* a control frame */
            continue;
        }
        /* An RTS is done when the reader says so (its FIN), not here. */
        if (--u->req->units_left == 0 && !u->req->cma_wait)
            wf_match_sent(&u->req->m);
    }
}

/* Gathers the unsent bytes of the first queued frames; returns the count of
 * iovecs and their total length in *total. */
static int send_iov(wf_tcp_stream_t *s, struct iovec *iov, size_t *total)
{
    int n = 0;

    *total = 0;
    for (wf_tcp_sunit_t *u = s->sendq; u && n + 2 <= WF_TCP_IOV_MAX;
         u = u->next) {
        size_t off = u->done;
        if (off < WF_TCP_HDR_LEN) {
            iov[n].iov_base = u->hdr + off;
            iov[n++].iov_len = WF_TCP_HDR_LEN - off;
            off = 0;
        } else {
            off -= WF_TCP_HDR_LEN;
        }
        if (u->len > off) {
            iov[n].iov_base = (char *)u->buf + off;
            iov[n++].iov_len = u->len - off;
        }
        *total += WF_TCP_HDR_LEN + u->len - u->done;
    }
    return n;
}

/* Sends what send_iov gathered: frames of up to WF_TCP_SMALL_SEND bytes
 * in all are copied together and go with send(), which costs less than a
 * sendmsg() of the pieces (no iovec to import). */
static ssize_t send_gathered(wf_tcp_stream_t *s, struct iovec *iov, int niov,
                             size_t total)
{
    /* MSG_NOSIGNAL: a vanished peer is an EPIPE, never a SIGPIPE. */
    const int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    if (total <= WF_TCP_SMALL_SEND) {
        char flat[WF_TCP_SMALL_SEND];
        size_t at = 0;
        for (int i = 0; i < niov; i++) {
            memcpy(flat + at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        return send(s->fd, flat, at, flags);
    }
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    return sendmsg(s->fd, &msg, flags);
}

void wf_tcp_flush(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    struct iovec iov[WF_TCP_IOV_MAX];
    size_t total;
    ssize_t n;

    while (s->peer->state == WF_TCP_UP && s->sendq) {
        int niov = send_iov(s, iov, &total);
        n = send_gathered(s, iov, niov, total);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            /* The peer left.  What it sent before, maybe the failure
             * notice that says why, may still wait in its sockets: read
             * that first, so that it is delivered rather than dropped
             * with the connection. */
            int err = errno;
            for (int k = 0; k < s->peer->nstreams; k++)
                if (s->peer->state != WF_TCP_FAILED)
                    wf_tcp_read(ctx, &s->peer->streams[k]);
            if (s->peer->state != WF_TCP_FAILED)
                wf_tcp_stream_fail(ctx, s, WEFT_ERR_REMOTE,
                                   "connection lost while sending: %s",
                                   wf_errno_str(err));
            return;
        }
        send_advance(s, (size_t)n);
        if ((size_t)n < total)
            break;
    }
    if (s->peer->state == WF_TCP_UP)
        wf_tcp_stream_watch(ctx, s, s->sendq != NULL);
}

/* ---- failure and teardown ---------------------------------------------- */

void wf_tcp_send_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    /* First: the sends waiting for a FIN are chained through r->next,
     * which completing them below would cut. */
    wf_tcp_cma_fail(p, p->m.fail_status);
    for (int k = 0; k < ctx->max_streams; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        for (wf_tcp_sunit_t *u = s->sendq, *next; u; u = next) {
            next = u->next;
            u->next = NULL;
            if (u->req)
                wf_match_done(&u->req->m, p->m.fail_status);
            else
                free(u); /* a control frame */
        }
        s->sendq = s->sendq_tail = NULL;
    }
}

void wf_tcp_send_free(wf_tcp_peer_t *p, int nstreams)
{
    /* Control frames are the queue's own; the rest belong to requests,
     * which the matching layer frees. */
    for (int k = 0; k < nstreams; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        for (wf_tcp_sunit_t *u = s->sendq, *next; u; u = next) {
            next = u->next;
            if (!u->req)
                free(u);
        }
        s->sendq = s->sendq_tail = NULL;
    }
}
