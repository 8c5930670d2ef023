/*
 * tcp_xfer.c - moving messages: isend/irecv/test, framing, tag matching and
 * unexpected messages.
 *
 * A frame is a 40-byte header {magic, tag, sig[0], sig[1], len} followed by
 * `len` payload bytes.  Sends of a peer go out in posting order, several
 * frames per sendmsg.  On the receive side each peer keeps posted receives
 * and unexpected messages in FIFO lists; for a given tag at most one of the
 * two is non-empty, so the first match in either list is the oldest.  A
 * payload whose receive is already posted is read straight into the user
 * buffer; the reader asks for the next header in the same readv so that a
 * stream of small messages costs one system call each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
    wf_treq_t *r = calloc(1, sizeof(*r));

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
    free(r);
}

static void req_done(wf_treq_t *r, weft_status_t st)
{
    r->next = NULL;
    r->status = st;
}

/* Copies a complete unexpected message into a receive and completes it. */
static void umsg_free(wf_tcp_umsg_t *m)
{
    free(m->data);
    free(m);
}

static void deliver(wf_treq_t *r, const wf_tcp_umsg_t *m)
{
    size_t n = WF_MIN(m->len, r->len);

    if (n)
        memcpy(r->buf, m->data, n);
    r->info.len = m->len;
    r->info.sig[0] = m->sig[0];
    r->info.sig[1] = m->sig[1];
    r->info.truncated = m->len > r->len;
    req_done(r, WEFT_OK);
}

/* Unlinks and returns the first posted receive with `tag`. */
static wf_treq_t *take_posted(wf_tcp_peer_t *p, uint64_t tag)
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

static void unlink_unexp(wf_tcp_peer_t *p, wf_tcp_umsg_t *m,
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
    if (p->state == WF_TCP_FAILED)
        return wf_tcp_peer_failed(p);
    r = req_new(ctx, WF_TCP_REQ_SEND, peer, tag, buf, len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    wf_tcp_put64(r->hdr, WF_TCP_FRAME_MAGIC);
    wf_tcp_put64(r->hdr + 8, tag);
    wf_tcp_put64(r->hdr + 16, sig ? sig[0] : 0);
    wf_tcp_put64(r->hdr + 24, sig ? sig[1] : 0);
    wf_tcp_put64(r->hdr + 32, len);
    if (p->sendq_tail)
        p->sendq_tail->next = r;
    else
        p->sendq = r;
    p->sendq_tail = r;
    /* Try at once: most sends fit in the socket buffer and complete here
     * without a trip through epoll. */
    if (p->state == WF_TCP_UP && p->sendq == r)
        wf_tcp_flush(ctx, p);
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
        unlink_unexp(p, m, prev);
        if (m->complete) {
            deliver(r, m);
            umsg_free(m);
        } else {
            m->waiter = r; /* the reader delivers when the rest arrives */
        }
    } else {
        if (p->posted_tail)
            p->posted_tail->next = r;
        else
            p->posted = r;
        p->posted_tail = r;
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

/* Accounts `n` written bytes to the queued sends, completing whole ones. */
static void send_advance(wf_tcp_peer_t *p, size_t n)
{
    while (n > 0 && p->sendq) {
        wf_treq_t *r = p->sendq;
        size_t left = WF_TCP_HDR_LEN + r->len - r->done;
        size_t take = WF_MIN(n, left);

        r->done += take;
        n -= take;
        if (r->done < WF_TCP_HDR_LEN + r->len)
            return;
        p->sendq = r->next;
        if (!p->sendq)
            p->sendq_tail = NULL;
        r->info.len = r->len;
        req_done(r, WEFT_OK);
    }
}

/* Gathers the unsent bytes of the first queued sends; returns the count of
 * iovecs and their total length in *total. */
static int send_iov(wf_tcp_peer_t *p, struct iovec *iov, size_t *total)
{
    int n = 0;

    *total = 0;
    for (wf_treq_t *r = p->sendq; r && n + 2 <= WF_TCP_IOV_MAX; r = r->next) {
        size_t off = r->done;
        if (off < WF_TCP_HDR_LEN) {
            iov[n].iov_base = r->hdr + off;
            iov[n++].iov_len = WF_TCP_HDR_LEN - off;
            off = 0;
        } else {
            off -= WF_TCP_HDR_LEN;
        }
        if (r->len > off) {
            iov[n].iov_base = r->buf + off;
            iov[n++].iov_len = r->len - off;
        }
        *total += WF_TCP_HDR_LEN + r->len - r->done;
    }
    return n;
}

void wf_tcp_flush(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    struct iovec iov[WF_TCP_IOV_MAX];
    struct msghdr msg = {.msg_iov = iov};
    size_t total;
    ssize_t n;

    while (p->state == WF_TCP_UP && p->sendq) {
        msg.msg_iovlen = (size_t)send_iov(p, iov, &total);
        /* MSG_NOSIGNAL: a vanished peer is an EPIPE, never a SIGPIPE. */
        n = sendmsg(p->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            wf_tcp_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                             "connection lost while sending: %s",
                             wf_errno_str(errno));
            return;
        }
        send_advance(p, (size_t)n);
        if ((size_t)n < total)
            break;
    }
    if (p->state == WF_TCP_UP)
        wf_tcp_peer_watch(ctx, p, p->sendq != NULL);
}

/* ---- receiving --------------------------------------------------------- */

static void rx_reset(wf_tcp_rx_t *rx)
{
    rx->in_payload = false;
    rx->hdr_got = 0;
    rx->req = NULL;
    rx->umsg = NULL;
    rx->dst = NULL;
    rx->got = rx->dst_len = rx->len = 0;
}

static void rx_msg_done(wf_tcp_rx_t *rx)
{
    if (rx->req) {
        wf_treq_t *r = rx->req;
        r->info.len = rx->len;
        r->info.sig[0] = rx->sig[0];
        r->info.sig[1] = rx->sig[1];
        r->info.truncated = rx->len > r->len;
        req_done(r, WEFT_OK);
    } else if (rx->umsg) {
        wf_tcp_umsg_t *m = rx->umsg;
        m->complete = true;
        if (m->waiter) {
            deliver(m->waiter, m);
            umsg_free(m);
        }
    }
    rx_reset(rx);
}

/* A complete header is in rx->hdr: pick the payload's destination. */
static bool rx_start(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    wf_tcp_rx_t *rx = &p->rx;
    uint64_t magic = wf_tcp_get64(rx->hdr);
    uint64_t len = wf_tcp_get64(rx->hdr + 32);

    if (magic != WF_TCP_FRAME_MAGIC || len > (uint64_t)PTRDIFF_MAX) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
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
    rx->hdr_got = 0;
    rx->in_payload = true;
    rx->req = take_posted(p, rx->tag);
    if (rx->req) {
        rx->dst = rx->req->buf;
        rx->dst_len = WF_MIN(rx->len, rx->req->len);
    } else {
        /* The buffer starts small and grows as bytes arrive (rx_grow):
         * the length is the peer's claim, and memory must follow what it
         * really sends, not what it claims (found by fuzz_tcp_wire). */
        size_t cap = WF_MIN(rx->len, (size_t)WF_TCP_UNEXP_INITIAL);
        wf_tcp_umsg_t *m = calloc(1, sizeof(*m));
        char *data = m ? malloc(cap ? cap : 1) : NULL;
        if (!data) {
            free(m);
            wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                             "out of memory for an unexpected message of "
                             "%zu bytes",
                             rx->len);
            return false;
        }
        m->data = data;
        m->next = NULL;
        m->tag = rx->tag;
        m->sig[0] = rx->sig[0];
        m->sig[1] = rx->sig[1];
        m->len = rx->len;
        m->complete = false;
        m->waiter = NULL;
        if (p->unexp_tail)
            p->unexp_tail->next = m;
        else
            p->unexp = m;
        p->unexp_tail = m;
        ctx->unexp_arrivals++;
        rx->umsg = m;
        rx->dst = m->data;
        rx->dst_len = cap;
    }
    if (rx->len == 0)
        rx_msg_done(rx);
    return true;
}

/* An unexpected message whose buffer is full but whose payload is not:
 * doubles the buffer (up to the message length).  False, with the peer
 * failed, when there is no memory for it. */
static bool rx_grow(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    wf_tcp_rx_t *rx = &p->rx;
    wf_tcp_umsg_t *m = rx->umsg;

    if (!rx->in_payload || !m || rx->got < rx->dst_len || rx->got >= rx->len)
        return true;
    size_t cap = rx->dst_len > (rx->len - rx->dst_len)
                     ? rx->len
                     : WF_MAX(2 * rx->dst_len, (size_t)1);
    char *data = realloc(m->data, cap);
    if (!data) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                         "out of memory for an unexpected message of %zu "
                         "bytes (%zu received)", rx->len, rx->got);
        return false;
    }
    m->data = rx->dst = data;
    rx->dst_len = cap;
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
static bool rx_consume(wf_tctx_t *ctx, wf_tcp_peer_t *p, size_t n)
{
    wf_tcp_rx_t *rx = &p->rx;

    if (rx->in_payload) {
        size_t take = WF_MIN(n, rx->len - rx->got);
        rx->got += take;
        n -= take;
        if (rx->got < rx->len)
            return true;
        rx_msg_done(rx);
    }
    rx->hdr_got += n;
    if (rx->hdr_got < WF_TCP_HDR_LEN)
        return true;
    return rx_start(ctx, p);
}

void wf_tcp_read(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    size_t budget = WF_TCP_READ_BUDGET;
    struct iovec iov[2];
    ssize_t n;

    while (p->state == WF_TCP_UP && budget > 0) {
        if (!rx_grow(ctx, p))
            return;
        n = readv(p->fd, iov, rx_iov(ctx, &p->rx, iov));
        if (n == 0) {
            /* A close between messages with nothing pending is how a peer
             * that finished normally leaves: only worth a warning if this
             * side still wants to talk to it. */
            p->fail_unreported = !p->sendq && !p->posted && !p->rx.in_payload &&
                                 p->rx.hdr_got == 0;
            wf_tcp_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                             "connection closed by the peer");
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            wf_tcp_peer_fail(ctx, p, WEFT_ERR_REMOTE, "connection lost: %s",
                             wf_errno_str(errno));
            return;
        }
        budget -= WF_MIN(budget, (size_t)n);
        if (!rx_consume(ctx, p, (size_t)n))
            return;
    }
}

/* ---- failure and teardown ---------------------------------------------- */

static void fail_list(wf_treq_t *r, weft_status_t st)
{
    while (r) {
        wf_treq_t *next = r->next;
        req_done(r, st);
        r = next;
    }
}

void wf_tcp_xfer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    weft_status_t st = p->fail_status;
    wf_tcp_rx_t *rx = &p->rx;

    (void)ctx;
    fail_list(p->sendq, st);
    p->sendq = p->sendq_tail = NULL;
    fail_list(p->posted, st);
    p->posted = p->posted_tail = NULL;
    if (rx->req)
        req_done(rx->req, st);
    /* A half-read message is lost; complete ones stay deliverable. */
    if (rx->umsg) {
        wf_tcp_umsg_t *m = rx->umsg, *prev = NULL;
        if (m->waiter) {
            req_done(m->waiter, st); /* claimed: already in no list */
        } else {
            for (wf_tcp_umsg_t *u = p->unexp; u && u != m; u = u->next)
                prev = u;
            unlink_unexp(p, m, prev);
        }
        umsg_free(m);
    }
    rx_reset(rx);
}

void wf_tcp_xfer_free_all(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_tcp_peer_t *p = &ctx->peers[i];
        /* A claimed, half-read message is in no list. */
        if (p->rx.umsg && p->rx.umsg->waiter)
            umsg_free(p->rx.umsg);
        while (p->unexp) {
            wf_tcp_umsg_t *m = p->unexp;
            p->unexp = m->next;
            umsg_free(m);
        }
        p->unexp_tail = NULL;
        rx_reset(&p->rx);
    }
    while (ctx->all)
        req_free(ctx, ctx->all);
}
