/*
 * tcp_xfer.c - moving messages: isend/irecv/test, framing, tag matching and
 * unexpected messages.
 *
 * A frame is a 40-byte header {magic, tag, sig[0], sig[1], len} followed by
 * `len` payload bytes.  Frames of a stream go out in posting order, several
 * per sendmsg (or per send() of one flat copy when they are small).  Every
 * message header travels on stream 0, so matching follows the post order
 * whatever the number of streams; large messages with several streams are
 * striped (tcp_stripe.c).  On the receive side each peer keeps posted
 * receives and unexpected messages in FIFO lists; for a given tag at most
 * one of the two is non-empty, so the first match in either list is the
 * oldest.  A payload whose receive is already posted is read straight into
 * the user buffer; the reader asks for the next header in the same read so
 * that a stream of small messages costs one system call each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

#define WF_TCP_IOV_MAX 64
/* Bytes read from one peer per progress call, so one busy peer does not
 * starve the others. */
#define WF_TCP_READ_BUDGET (16u << 20)
/* First buffer of an unexpected message; it doubles as the payload comes. */
#define WF_TCP_UNEXP_INITIAL (64u << 10)

/* ---- requests ---------------------------------------------------------- */

static wf_treq_t *req_new(wf_tctx_t *ctx, wf_tcp_req_kind_t kind, int peer,
                          uint64_t tag, const void *buf, size_t len)
{
    wf_treq_t *r = ctx->spare_reqs;

    if (r) {
        ctx->spare_reqs = r->next;
        ctx->nspare_reqs--;
        memset(r, 0, sizeof(*r));
    } else {
        r = calloc(1, sizeof(*r));
    }
    if (!r) {
        WEFT_WARN(NET, "tcp: out of memory for a request to %s",
                  ctx->peers[peer].desc);
        return NULL;
    }
    r->kind = kind;
    r->peer = peer;
    r->tag = tag;
    r->buf = (char *)buf;
    r->len = len;
    r->status = WEFT_INPROGRESS;
    ctx->posts++;
    r->all_next = ctx->all;
    if (ctx->all)
        ctx->all->all_prev = r;
    ctx->all = r;
    return r;
}

static void req_free(wf_tctx_t *ctx, wf_treq_t *r)
{
    if (r->all_prev)
        r->all_prev->all_next = r->all_next;
    else
        ctx->all = r->all_next;
    if (r->all_next)
        r->all_next->all_prev = r->all_prev;
    free(r->pieces);
    if (ctx->nspare_reqs < WF_TCP_SPARE_REQS) {
        r->next = ctx->spare_reqs;
        ctx->spare_reqs = r;
        ctx->nspare_reqs++;
    } else {
        free(r);
    }
}

void wf_tcp_req_done(wf_treq_t *r, weft_status_t st)
{
    r->next = NULL;
    r->status = st;
}

/* A buffer of the context's pool of at least `want` bytes (the largest
 * kept), or NULL; its size in *cap. */
static char *spare_take(wf_tctx_t *ctx, size_t want, size_t *cap)
{
    int best = -1;

    for (int i = 0; i < ctx->nspare; i++)
        if (ctx->spare_cap[i] >= want &&
            (best < 0 || ctx->spare_cap[i] > ctx->spare_cap[best]))
            best = i;
    if (best < 0)
        return NULL;
    char *data = ctx->spare[best];
    *cap = ctx->spare_cap[best];
    ctx->spare_bytes -= *cap;
    ctx->nspare--;
    ctx->spare[best] = ctx->spare[ctx->nspare];
    ctx->spare_cap[best] = ctx->spare_cap[ctx->nspare];
    return data;
}

void wf_tcp_umsg_free(wf_tcp_umsg_t *m)
{
    wf_tctx_t *ctx = m->ctx;

    if (ctx && m->data && m->cap >= WF_TCP_SPARE_MIN &&
        m->cap <= WF_TCP_SPARE_MAX && ctx->nspare < WF_TCP_SPARES &&
        ctx->spare_bytes + m->cap <= WF_TCP_SPARE_BYTES) {
        ctx->spare[ctx->nspare] = m->data;
        ctx->spare_cap[ctx->nspare++] = m->cap;
        ctx->spare_bytes += m->cap;
    } else {
        free(m->data);
    }
    free(m);
}

void wf_tcp_spares_free(wf_tctx_t *ctx)
{
    while (ctx->nspare > 0)
        free(ctx->spare[--ctx->nspare]);
    ctx->spare_bytes = 0;
}

void wf_tcp_deliver(wf_treq_t *r, const wf_tcp_umsg_t *m)
{
    size_t n = WF_MIN(m->len, r->len);

    if (n)
        memcpy(r->buf, m->data, n);
    r->info.len = m->len;
    r->info.sig[0] = m->sig[0];
    r->info.sig[1] = m->sig[1];
    r->info.truncated = m->len > r->len;
    wf_tcp_req_done(r, WEFT_OK);
}

/* Unlinks and returns the first posted receive with `tag`. */
wf_treq_t *wf_tcp_take_posted(wf_tcp_peer_t *p, uint64_t tag)
{
    wf_treq_t *prev = NULL;

    for (wf_treq_t *r = p->posted; r; prev = r, r = r->next) {
        if (r->tag != tag)
            continue;
        if (prev)
            prev->next = r->next;
        else
            p->posted = r->next;
        if (p->posted_tail == r)
            p->posted_tail = prev;
        r->next = NULL;
        return r;
    }
    return NULL;
}

/* The first unexpected message with `tag`, and the one before it. */
static wf_tcp_umsg_t *find_unexp(wf_tcp_peer_t *p, uint64_t tag,
                                 wf_tcp_umsg_t **prev_out)
{
    wf_tcp_umsg_t *prev = NULL;

    for (wf_tcp_umsg_t *m = p->unexp; m; prev = m, m = m->next) {
        if (m->tag == tag) {
            *prev_out = prev;
            return m;
        }
    }
    return NULL;
}

void wf_tcp_unlink_unexp(wf_tcp_peer_t *p, wf_tcp_umsg_t *m,
                         wf_tcp_umsg_t *prev)
{
    if (prev)
        prev->next = m->next;
    else
        p->unexp = m->next;
    if (p->unexp_tail == m)
        p->unexp_tail = prev;
    m->next = NULL;
}

/* Peer checks shared by isend and irecv. */
static weft_status_t peer_get(wf_tctx_t *ctx, int peer, wf_tcp_peer_t **out)
{
    wf_tcp_peer_t *p;

    if (peer < 0 || peer >= ctx->cfg.size || peer == ctx->cfg.rank) {
        WEFT_WARN(NET, "tcp: invalid peer %d (rank %d of %d)", peer,
                  ctx->cfg.rank, ctx->cfg.size);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    if (!p->connect_called && p->state == WF_TCP_IDLE) {
        WEFT_WARN(NET, "tcp: %s used before connect()", p->desc);
        return WEFT_ERR_INVALID_USAGE;
    }
    *out = p;
    return WEFT_OK;
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
    WEFT_CHECK(peer_get(ctx, peer, &p));
    /* A peer that closed one of its streams has left: its other streams
     * only drain what it sent before. */
    for (int k = 0; p->neof && p->state != WF_TCP_FAILED; k++)
        if (p->streams[k].state == WF_TCP_IDLE)
            wf_tcp_stream_fail(ctx, &p->streams[k], WEFT_ERR_REMOTE,
                               "connection closed by the peer");
    if (p->state == WF_TCP_FAILED)
        return wf_tcp_peer_failed(p);
    r = req_new(ctx, WF_TCP_REQ_SEND, peer, tag, buf, len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    if (!wf_tcp_cma_queue(ctx, p, r, sig) &&
        !wf_tcp_stripe_queue(ctx, p, r, sig)) {
        req_free(ctx, r);
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

weft_status_t wf_tcp_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req)
{
    wf_tcp_peer_t *p;
    wf_tcp_umsg_t *m, *prev = NULL;
    wf_treq_t *r;

    (void)mh;
    if (!ctx || !req || (!buf && cap))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(peer_get(ctx, peer, &p));
    m = find_unexp(p, tag, &prev);
    /* Messages that arrived before the peer failed are still delivered. */
    if (!m && p->state == WF_TCP_FAILED)
        return wf_tcp_peer_failed(p);
    r = req_new(ctx, WF_TCP_REQ_RECV, peer, tag, buf, cap);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    if (m) {
        wf_tcp_unlink_unexp(p, m, prev);
        if (m->cma_pending) {
            wf_tcp_cma_claim(ctx, p, m, r);
        } else if (m->complete) {
            wf_tcp_deliver(r, m);
            wf_tcp_umsg_free(m);
        } else {
            m->waiter = r; /* the reader delivers when the rest arrives */
            wf_tcp_hot_add(ctx, peer);
        }
    } else {
        if (p->posted_tail)
            p->posted_tail->next = r;
        else
            p->posted = r;
        p->posted_tail = r;
        wf_tcp_hot_add(ctx, peer);
    }
    *req = r;
    return WEFT_OK;
}

weft_status_t wf_tcp_test(wf_tctx_t *ctx, wf_treq_t *req, wf_treq_info_t *info)
{
    weft_status_t st;

    if (!ctx || !req)
        return WEFT_ERR_INVALID_ARG;
    st = req->status;
    if (st == WEFT_INPROGRESS)
        return st;
    if (st == WEFT_OK && info)
        *info = req->info;
    req_free(ctx, req);
    return st;
}

/* ---- sending ----------------------------------------------------------- */

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
        if (--u->req->units_left == 0 && !u->req->cma_wait) {
            u->req->info.len = u->req->len;
            wf_tcp_req_done(u->req, WEFT_OK);
        }
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

/* ---- receiving --------------------------------------------------------- */

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

void wf_tcp_msg_done(wf_treq_t *r, wf_tcp_umsg_t *m, size_t len,
                     const uint64_t sig[2])
{
    if (r) {
        r->info.len = len;
        r->info.sig[0] = sig[0];
        r->info.sig[1] = sig[1];
        r->info.truncated = len > r->len;
        wf_tcp_req_done(r, WEFT_OK);
    } else if (m) {
        m->complete = true;
        if (m->waiter) {
            wf_tcp_deliver(m->waiter, m);
            wf_tcp_umsg_free(m);
        }
    }
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
        wf_tcp_piece_done(s);
    } else {
        wf_tcp_msg_done(rx->req, rx->umsg, rx->len, rx->sig);
        ctx->msgs_read++;
    }
    rx_reset(rx);
    return true;
}

char *wf_tcp_unexp_buffer(wf_tctx_t *ctx, size_t cap, size_t *have)
{
    /* A kept buffer may be larger than asked: it holds what an earlier
     * message really sent, so memory still follows real bytes. */
    char *data = cap >= WF_TCP_UNEXP_INITIAL ? spare_take(ctx, cap, have)
                                             : NULL;
    if (!data) {
        *have = cap ? cap : 1;
        data = malloc(*have);
    }
    return data;
}

wf_tcp_umsg_t *wf_tcp_umsg_new(wf_tctx_t *ctx, wf_tcp_peer_t *p,
                               const wf_tcp_rx_t *rx, size_t cap)
{
    size_t have;
    char *data = wf_tcp_unexp_buffer(ctx, cap, &have);
    wf_tcp_umsg_t *m = data ? wf_tcp_umsg_new_empty(ctx, p, rx) : NULL;

    if (!m) {
        free(data);
        return NULL;
    }
    m->data = data;
    m->cap = have;
    return m;
}

wf_tcp_umsg_t *wf_tcp_umsg_new_empty(wf_tctx_t *ctx, wf_tcp_peer_t *p,
                                     const wf_tcp_rx_t *rx)
{
    wf_tcp_umsg_t *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->ctx = ctx;
    m->tag = rx->tag;
    m->sig[0] = rx->sig[0];
    m->sig[1] = rx->sig[1];
    m->len = rx->len;
    if (p->unexp_tail)
        p->unexp_tail->next = m;
    else
        p->unexp = m;
    p->unexp_tail = m;
    ctx->unexp_arrivals++;
    return m;
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
    rx->req = wf_tcp_take_posted(p, rx->tag);
    if (rx->req) {
        rx->dst = rx->req->buf;
        rx->dst_len = WF_MIN(rx->len, rx->req->len);
    } else {
        /* The buffer starts small and grows as bytes arrive (rx_grow):
         * the length is the peer's claim, and memory must follow what it
         * really sends, not what it claims (found by fuzz_tcp_wire). */
        size_t cap = WF_MIN(rx->len, (size_t)WF_TCP_UNEXP_INITIAL);
        wf_tcp_umsg_t *m = wf_tcp_umsg_new(ctx, p, rx, cap);
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
    wf_tcp_umsg_t *m = rx->umsg;

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
    if (p->posted || p->smsgs || p->cma_sends)
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
    p->fail_unreported = peer_quiet(ctx, p);
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
 * iovec to import, no trip through the VFS read path): in an 8-byte
 * allreduce on 2 ranks a read that returned the frame took 1.5-2.5 us as
 * readv, 0.8-1.1 us as recv (docs/performance.md, "Small messages, second
 * pass"). */
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

static void fail_units(wf_tcp_sunit_t *u, weft_status_t st)
{
    while (u) {
        wf_tcp_sunit_t *next = u->next;
        u->next = NULL;
        if (u->req)
            wf_tcp_req_done(u->req, st);
        else
            free(u); /* a control frame */
        u = next;
    }
}

static void fail_list(wf_treq_t *r, weft_status_t st)
{
    while (r) {
        wf_treq_t *next = r->next;
        wf_tcp_req_done(r, st);
        r = next;
    }
}

/* Drops what stream s was reading: a half-read message is lost, complete
 * unexpected ones stay deliverable. */
static void rx_fail(wf_tcp_peer_t *p, wf_tcp_rx_t *rx, weft_status_t st)
{
    if (rx->smsg) {
        rx_reset(rx); /* the striped message goes with p->smsgs */
        return;
    }
    if (rx->req)
        wf_tcp_req_done(rx->req, st);
    if (rx->umsg) {
        wf_tcp_umsg_t *m = rx->umsg, *prev = NULL;
        if (m->waiter) {
            wf_tcp_req_done(m->waiter, st); /* claimed: in no list */
        } else {
            for (wf_tcp_umsg_t *u = p->unexp; u && u != m; u = u->next)
                prev = u;
            wf_tcp_unlink_unexp(p, m, prev);
        }
        wf_tcp_umsg_free(m);
    }
    rx_reset(rx);
}

void wf_tcp_xfer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    weft_status_t st = p->fail_status;

    /* First: the sends waiting for a FIN are chained through r->next,
     * which completing them below would cut. */
    wf_tcp_cma_fail(p, st);
    for (int k = 0; k < ctx->max_streams; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        fail_units(s->sendq, st);
        s->sendq = s->sendq_tail = NULL;
        rx_fail(p, &s->rx, st);
    }
    fail_list(p->posted, st);
    p->posted = p->posted_tail = NULL;
    wf_tcp_stripe_fail(p, st);
}

void wf_tcp_xfer_free_all(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_tcp_peer_t *p = &ctx->peers[i];
        for (int k = 0; k < ctx->max_streams; k++) {
            wf_tcp_rx_t *rx = &p->streams[k].rx;
            /* Control frames are the queue's own; the rest belong to
             * requests, freed below. */
            for (wf_tcp_sunit_t *u = p->streams[k].sendq, *next; u; u = next) {
                next = u->next;
                if (!u->req)
                    free(u);
            }
            p->streams[k].sendq = p->streams[k].sendq_tail = NULL;
            /* A claimed, half-read message is in no list. */
            if (!rx->smsg && rx->umsg && rx->umsg->waiter)
                wf_tcp_umsg_free(rx->umsg);
            rx_reset(rx);
        }
        wf_tcp_stripe_fail(p, WEFT_ERR_ABORTED);
        while (p->unexp) {
            wf_tcp_umsg_t *m = p->unexp;
            p->unexp = m->next;
            wf_tcp_umsg_free(m);
        }
        p->unexp_tail = NULL;
    }
    while (ctx->all)
        req_free(ctx, ctx->all);
    while (ctx->spare_reqs) {
        wf_treq_t *r = ctx->spare_reqs;
        ctx->spare_reqs = r->next;
        free(r);
    }
    ctx->nspare_reqs = 0;
}
