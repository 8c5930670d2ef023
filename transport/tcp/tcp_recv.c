/*
 * tcp_recv.c - the receiving direction: irecv, and reading a stream's
 * frames into posted receives or unexpected messages (which are the
 * matching layer's, transport/match.h).
 *
 * A payload whose receive is already posted is read straight into the
 * user buffer; the reader asks for the next header in the same read so
 * that a stream of small messages costs one system call each.  Striped
 * headers and pieces go to tcp_stripe.c, single-copy frames to tcp_cma.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

/* Bytes read from one peer per progress call, so one busy peer does not
 * starve the others. */
#define WF_TCP_READ_BUDGET (16u << 20)
/* First buffer of an unexpected message; it doubles as the payload comes. */
#define WF_TCP_UNEXP_INITIAL (64u << 10)

weft_status_t wf_tcp_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req)
{
    wf_tcp_peer_t *p;
    wf_mreq_t *r = NULL;

    (void)mh;
    if (!ctx || !req || (!buf && cap))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_tcp_peer_get(ctx, peer, &p));
    weft_status_t st = wf_match_irecv(&ctx->m, &p->m,
                                      p->state == WF_TCP_FAILED,
                                      sizeof(wf_treq_t), peer, tag, buf, cap,
                                      &r);
    if (st < 0)
        return st;
    if (st == WEFT_INPROGRESS)
        wf_tcp_hot_add(ctx, peer);
    *req = (wf_treq_t *)r;
    return WEFT_OK;
}

static void rx_reset(wf_tcp_rx_t *rx)
{
    rx->in_payload = false;
    rx->waiting = false;
    rx->hdr_got = 0;
    rx->req = NULL;
    rx->umsg = NULL;
    rx->smsg = NULL;
    rx->cma = false;
    rx->dst = NULL;
    rx->got = rx->dst_len = rx->len = 0;
}

static bool rx_msg_done(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_rx_t *rx = &s->rx;

    if (rx->cma) {
        bool ok = wf_tcp_cma_trailer_done(ctx, s);
        rx_reset(rx);
        return ok;
    }
    if (rx->smsg) {
        wf_tcp_piece_done(ctx, s);
    } else {
        wf_match_arrived(&ctx->m, rx->req, rx->umsg, rx->len, rx->sig);
        ctx->msgs_read++;
    }
    rx_reset(rx);
    return true;
}

/* A complete header is in rx->hdr: a frame, a striped header (stream 0
 * only) or a piece; pick the payload's destination. */
static bool rx_start(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    wf_tcp_rx_t *rx = &s->rx;
    uint64_t magic = wf_tcp_get64(rx->hdr);
    uint64_t len = wf_tcp_get64(rx->hdr + 32);
    bool header = magic == WF_TCP_FRAME_MAGIC ||
                  (magic == WF_TCP_STRIPE_MAGIC && p->nstreams > 1);

    rx->hdr_got = 0;
    if (magic == WF_TCP_PIECE_MAGIC && p->nstreams > 1)
        return wf_tcp_piece_start(ctx, s);
    int cma = s->idx == 0 ? wf_tcp_cma_header(ctx, s) : -1;
    if (cma >= 0)
        return cma > 0;
    if (!header || s->idx != 0 || len > (uint64_t)PTRDIFF_MAX) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "protocol error: bad frame header (magic 0x%llx, "
                           "length %llu)",
                           (unsigned long long)magic, (unsigned long long)len);
        return false;
    }
    rx->tag = wf_tcp_get64(rx->hdr + 8);
    rx->sig[0] = wf_tcp_get64(rx->hdr + 16);
    rx->sig[1] = wf_tcp_get64(rx->hdr + 24);
    rx->len = (size_t)len;
    rx->got = 0;
    if (magic == WF_TCP_STRIPE_MAGIC)
        return wf_tcp_stripe_header(ctx, s);
    rx->in_payload = true;
    rx->req = wf_match_take_posted(&p->m, rx->tag);
    if (rx->req) {
        rx->dst = rx->req->buf;
        rx->dst_len = WF_MIN(rx->len, rx->req->len);
    } else {
        /* The buffer starts small and grows as bytes arrive (rx_grow):
         * the length is the peer's claim, and memory must follow what it
         * really sends, not what it claims (found by fuzz_tcp_wire). */
        size_t cap = WF_MIN(rx->len, (size_t)WF_TCP_UNEXP_INITIAL);
        wf_mmsg_t *m = wf_match_unexp_new(&ctx->m, &p->m, rx->tag, rx->sig,
                                          rx->len, cap);
        if (!m) {
            wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                             "out of memory for an unexpected message of "
                             "%zu bytes",
                             rx->len);
            return false;
        }
        rx->umsg = m;
        rx->dst = m->data;
        rx->dst_len = WF_MIN(rx->len, m->cap);
    }
    if (rx->len == 0)
        return rx_msg_done(ctx, s);
    return true;
}

/* An unexpected message whose buffer is full but whose payload is not:
 * doubles the buffer (up to the message length).  False, with the peer
 * failed, when there is no memory for it. */
static bool rx_grow(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_rx_t *rx = &s->rx;
    wf_mmsg_t *m = rx->umsg;

    if (!rx->in_payload || !m || rx->smsg || rx->got < rx->dst_len || rx->got >= rx->len)
        return true;
    size_t cap = rx->dst_len > (rx->len - rx->dst_len)
                     ? rx->len
                     : WF_MAX(2 * rx->dst_len, (size_t)1);
    char *data = realloc(m->data, cap);
    if (!data) {
        wf_tcp_peer_fail(ctx, s->peer, WEFT_ERR_NO_MEMORY,
                         "out of memory for an unexpected message of %zu "
                         "bytes (%zu received)", rx->len, rx->got);
        return false;
    }
    m->data = rx->dst = data;
    m->cap = rx->dst_len = cap;
    return true;
}

/* Where the next readv goes: the rest of the header, or the rest of the
 * payload (user buffer, unexpected buffer or the discard sink) followed by
 * the next header when the payload ends within this read. */
static int rx_iov(wf_tctx_t *ctx, wf_tcp_rx_t *rx, struct iovec *iov)
{
    size_t rest;

    if (!rx->in_payload) {
        iov[0].iov_base = rx->hdr + rx->hdr_got;
        iov[0].iov_len = WF_TCP_HDR_LEN - rx->hdr_got;
        return 1;
    }
    rest = rx->len - rx->got;
    if (rx->got < rx->dst_len) {
        iov[0].iov_base = rx->dst + rx->got;
        iov[0].iov_len = rx->dst_len - rx->got;
    } else {
        iov[0].iov_base = ctx->scratch;
        iov[0].iov_len = WF_MIN(rest, ctx->scratch_len);
    }
    if (iov[0].iov_len < rest)
        return 1;
    iov[1].iov_base = rx->hdr;
    iov[1].iov_len = WF_TCP_HDR_LEN;
    return 2;
}

/* Accounts `n` bytes read with the iovecs of rx_iov. */
static bool rx_consume(wf_tctx_t *ctx, wf_tcp_stream_t *s, size_t n)
{
    wf_tcp_rx_t *rx = &s->rx;

    s->bytes_in += n;
    if (rx->in_payload) {
        size_t take = WF_MIN(n, rx->len - rx->got);
        rx->got += take;
        n -= take;
        if (rx->got < rx->len)
            return true;
        if (!rx_msg_done(ctx, s))
            return false;
    }
    rx->hdr_got += n;
    if (rx->hdr_got < WF_TCP_HDR_LEN)
        return true;
    return rx_start(ctx, s);
}

/* Nothing in flight with the peer: a close now is a normal goodbye. */
static bool peer_quiet(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    if (p->m.posted || p->smsgs || p->cma_sends)
        return false;
    for (int k = 0; k < ctx->max_streams; k++) {
        const wf_tcp_stream_t *s = &p->streams[k];
        if (s->sendq || s->rx.in_payload || s->rx.waiting || s->rx.hdr_got)
            return false;
    }
    return true;
}

/* The peer closed stream s between frames.  With several streams the
 * others may still hold bytes of messages it sent before it left (the
 * order in which EOFs are seen is arbitrary), so the peer fails only when
 * its last stream closes - or at once when this one still had frames to
 * send, or when it is stream 0 and a piece still waits for a header that
 * can no longer come.  True when the peer was failed. */
static bool stream_eof(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    bool stranded = false;

    for (int k = 0; s->idx == 0 && k < p->nstreams; k++)
        stranded |= p->streams[k].rx.waiting;
    /* Before every stream is up a close is no goodbye: the dialer gave
     * up (an unreachable interface), and the acceptor would wait for
     * streams that never come. */
    if (p->nstreams > 1 && p->state == WF_TCP_UP && !s->sendq &&
        !stranded && !s->rx.in_payload &&
        s->rx.hdr_got == 0 && p->neof + 1 < p->nstreams) {
        p->neof++;
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->events = 0;
        s->state = WF_TCP_IDLE; /* fd kept until the peer fails or fini */
        return false;
    }
    /* A close between messages with nothing pending is how a peer that
     * finished normally leaves: only worth a warning if this side still
     * wants to talk to it. */
    p->m.fail_unreported = peer_quiet(ctx, p);
    wf_tcp_stream_fail(ctx, s, WEFT_ERR_REMOTE,
                       "connection closed by the peer");
    return true;
}

/* Copies read-ahead bytes where rx_iov points; returns how many. */
static size_t ahead_take(wf_tcp_stream_t *s, const struct iovec *iov,
                         int niov)
{
    size_t n = 0;
    for (int i = 0; i < niov && s->ahead_len; i++) {
        size_t k = WF_MIN(iov[i].iov_len, s->ahead_len);
        memcpy(iov[i].iov_base, s->ahead + s->ahead_off, k);
        s->ahead_off += k;
        s->ahead_len -= k;
        n += k;
        if (k < iov[i].iov_len)
            break;
    }
    return n;
}

/* One read into `iov` and, on stream 0, the read-ahead buffer after it.
 * Returns the bytes that went to `iov` (the rest wait in s->ahead), 0 at
 * EOF, -1 with errno set; *drained when the socket had less than asked.
 *
 * What stream 0 asks for is mostly a header or a small payload: then it
 * reads into the read-ahead buffer alone with recv() and copies out what
 * iov wanted.  A recv() costs less than a readv() of the same bytes (no
 * iovec to import, no trip through the VFS read path), and the read that
 * returns the frame is on every small call's critical path
 * (bench/results/2026-11-29-small-messages-second-pass.md). */
static ssize_t read_frames(wf_tcp_stream_t *s, struct iovec *iov, int niov,
                           bool *drained)
{
    size_t want = 0;
    for (int i = 0; i < niov; i++)
        want += iov[i].iov_len;
    if (s->idx == 0 && !s->ahead)
        s->ahead = malloc(WF_TCP_AHEAD_LEN); /* without it: no read-ahead */
    if (s->ahead && want < WF_TCP_AHEAD_RECV_MAX) {
        ssize_t got = recv(s->fd, s->ahead, WF_TCP_AHEAD_LEN, 0);
        if (got <= 0)
            return got;
        s->reads++;
        *drained = (size_t)got < WF_TCP_AHEAD_LEN;
        s->ahead_off = 0;
        s->ahead_len = (size_t)got;
        return (ssize_t)ahead_take(s, iov, niov);
    }
    if (s->ahead) {
        iov[niov].iov_base = s->ahead;
        iov[niov++].iov_len = WF_TCP_AHEAD_LEN;
    }
    ssize_t n = readv(s->fd, iov, niov);
    if (n <= 0)
        return n;
    s->reads++;
    *drained = (size_t)n < want + (s->ahead ? WF_TCP_AHEAD_LEN : 0);
    if ((size_t)n <= want)
        return n;
    s->ahead_off = 0;
    s->ahead_len = (size_t)n - want;
    return (ssize_t)want;
}

void wf_tcp_read(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    size_t budget = WF_TCP_READ_BUDGET;
    struct iovec iov[3];
    bool drained = false;
    ssize_t n;

    /* A stream of an acceptor may be up before its siblings: it reads.
     * Bytes read ahead are consumed whatever the budget: the socket may
     * hold nothing more to wake the next progress() for them. */
    while (s->state == WF_TCP_UP && p->state != WF_TCP_FAILED &&
           !s->rx.waiting &&
           (s->ahead_len || (!drained && budget > 0))) {
        if (!rx_grow(ctx, s))
            return;
        int niov = rx_iov(ctx, &s->rx, iov);
        if (s->ahead_len) {
            if (!rx_consume(ctx, s, ahead_take(s, iov, niov)))
                return;
            continue;
        }
        n = read_frames(s, iov, niov, &drained);
        if (n == 0) {
            stream_eof(ctx, s);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            wf_tcp_stream_fail(ctx, s, WEFT_ERR_REMOTE,
                               "connection lost: %s", wf_errno_str(errno));
            return;
        }
        budget -= WF_MIN(budget, (size_t)n + s->ahead_len);
        /* A short read drained the socket (*drained): the next read would
         * only fail with EAGAIN, a syscall per small message for nothing.
         * Bytes that arrive meanwhile keep the fd readable (the epoll set
         * is level-triggered), so the next progress() reads them. */
        if (!rx_consume(ctx, s, (size_t)n))
            return;
    }
}

/* ---- failure and teardown ---------------------------------------------- */

void wf_tcp_recv_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    weft_status_t st = p->m.fail_status;

    /* What each stream was reading is lost (a striped message goes with
     * p->smsgs); complete unexpected messages stay deliverable. */
    for (int k = 0; k < ctx->max_streams; k++) {
        wf_tcp_rx_t *rx = &p->streams[k].rx;
        if (!rx->smsg)
            wf_match_drop(&ctx->m, &p->m, rx->req, rx->umsg, st);
        rx_reset(rx);
    }
    wf_match_fail_posted(&p->m, st);
    wf_tcp_stripe_fail(ctx, p, st);
}

void wf_tcp_recv_free(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    for (int k = 0; k < ctx->max_streams; k++) {
        wf_tcp_rx_t *rx = &p->streams[k].rx;
        /* A claimed, half-read message is in no list. */
        if (!rx->smsg && rx->umsg && rx->umsg->waiter)
            wf_match_msg_free(&ctx->m, rx->umsg);
        rx_reset(rx);
    }
    wf_tcp_stripe_fail(ctx, p, WEFT_ERR_ABORTED);
}
