/*
 * tcp_conn.c - establishing connections: dialing with retries, the
 * dialer's side of the handshake (tcp.h; the acceptor's is in
 * tcp_accept.c), timers and peer failure.
 *
 * WEFT_TCP_STREAMS connections (streams) per pair of ranks, made on first
 * use.  The lower rank dials all of them, the higher rank accepts, so both
 * sides calling connect() at the same time never produce extra sockets.
 * Stream k binds to local interface k mod (local count) and dials the
 * peer's interface k mod (its count), so with WEFT_SOCKET_IFNAME=a,b two
 * streams take two paths.  A stream from a topology-chosen address that
 * does not connect falls back (tcp_fallback.c).
 * The peer is up when every stream is.  The dialer retries refused
 * connections (the peer may not listen yet) with a doubling back-off until
 * cfg.timeout_ms; the acceptor waits without a deadline because the peer may
 * legitimately use the connection much later (the engine's operation
 * deadlines cover a peer that never shows up).
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "auth.h"
#include "tcp.h"

void wf_tcp_socket_options(const wf_tctx_t *ctx, int fd)
{
    int one = 1;
    /* Frames are written whole by writev; Nagle would only add latency. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A send buffer sized by autotuning follows the congestion window,
     * which CUBIC grows until the path's queues are full: in a ring each
     * host's acknowledgements for its right neighbour queue behind the
     * data from its left one, so the queues' delay comes back into every
     * flow's round trip, and the ring's lockstep turns that delay into
     * idle links (docs/design.md, "Bounded send buffers";
     * bench/results/2026-12-01-root-copy-and-bounded-send-buffers.md).
     * The cost is a cap on one stream's bytes in flight, about twice this
     * value (Linux caps the request at net.core.wmem_max first): enough
     * for 4-5 GB/s over a 100 us round trip, and WEFT_TCP_STREAMS
     * multiplies it.  Best effort: without it the kernel keeps
     * autotuning. */
    if (ctx->sndbuf) {
        int bytes = (int)WF_MIN(ctx->sndbuf, (size_t)INT32_MAX / 2);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
    }
}

static void close_stream_fd(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    if (s->fd < 0)
        return;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    s->fd = -1;
    s->events = 0;
}

void wf_tcp_stream_watch(wf_tctx_t *ctx, wf_tcp_stream_t *s, bool out)
{
    uint32_t ev = (s->rx.waiting ? 0 : EPOLLIN) | (out ? EPOLLOUT : 0);
    struct epoll_event e = {.events = ev, .data.ptr = &s->ev};

    if (s->fd < 0 || s->events == ev)
        return;
    /* Cannot fail for a registered fd short of a bug; the next write
     * attempt would surface a broken socket anyway. */
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, s->fd, &e) == 0)
        s->events = ev;
}

void wf_tcp_peer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
{
    va_list ap;

    if (p->state == WF_TCP_FAILED)
        return;
    va_start(ap, fmt);
    wf_match_fail_note(&ctx->m, &p->m, st, fmt, ap);
    va_end(ap);
    /* One stream gone fails them all: a message may have pieces on
     * every stream. */
    for (int k = 0; k < ctx->max_streams; k++) {
        close_stream_fd(ctx, &p->streams[k]);
        p->streams[k].state = WF_TCP_FAILED;
    }
    p->state = WF_TCP_FAILED;
    wf_tcp_send_fail(ctx, p);
    wf_tcp_recv_fail(ctx, p);
}

void wf_tcp_stream_fail(wf_tctx_t *ctx, wf_tcp_stream_t *s, weft_status_t st,
                        const char *fmt, ...)
{
    char msg[360];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (wf_tcp_nstreams(s->peer) == 1)
        wf_tcp_peer_fail(ctx, s->peer, st, "%s", msg);
    else
        wf_tcp_peer_fail(ctx, s->peer, st, "stream %d of %d (%s): %s", s->idx,
                         s->peer->nstreams, s->where[0] ? s->where : "?",
                         msg);
}

/* ---- timers ------------------------------------------------------------ */

static void timer_arm(wf_tctx_t *ctx)
{
    struct itimerspec its = {0};

    if (ctx->timer_armed == ctx->timer_due)
        return;
    if (ctx->timer_due) {
        uint64_t now = wf_time_ms();
        uint64_t ms = ctx->timer_due > now ? ctx->timer_due - now : 1;
        its.it_value.tv_sec = (time_t)(ms / 1000);
        its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
    }
    timerfd_settime(ctx->timer_fd, 0, &its, NULL);
    ctx->timer_armed = ctx->timer_due;
}

void wf_tcp_timer_schedule(wf_tctx_t *ctx, uint64_t when)
{
    if (when == 0 || (ctx->timer_due && ctx->timer_due <= when))
        return;
    ctx->timer_due = when;
    timer_arm(ctx);
}

static void due_min(uint64_t *due, uint64_t when)
{
    if (when && (*due == 0 || when < *due))
        *due = when;
}

static void dial_start(wf_tctx_t *ctx, wf_tcp_stream_t *s);
static void fall_back(wf_tctx_t *ctx, wf_tcp_stream_t *s, const char *why);

/* Runs one peer's due retries or deadline; returns its next due time. */
static uint64_t peer_timer(wf_tctx_t *ctx, wf_tcp_peer_t *p, uint64_t now)
{
    uint64_t due = 0;

    if (p->state != WF_TCP_DIALING)
        return 0;
    if (wf_deadline_passed(p->deadline)) {
        /* Name the first stream that is not up: with several interfaces
         * it tells which path does not work. */
        wf_tcp_stream_t *s = p->streams;
        while (s->state == WF_TCP_UP && s + 1 < p->streams + p->nstreams)
            s++;
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_REMOTE,
                           "cannot connect within %lld ms: %s%s",
                           (long long)ctx->cfg.timeout_ms,
                           s->last_errno ? wf_errno_str(s->last_errno)
                                         : "no answer", s->fb_note);
        return 0;
    }
    for (int k = 0; k < p->nstreams && p->state == WF_TCP_DIALING; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        if (s->state == WF_TCP_DIALING && s->probe_at && now >= s->probe_at) {
            char why[48];
            snprintf(why, sizeof(why), "no answer within %d ms",
                     ctx->probe_ms);
            fall_back(ctx, s, why);
        }
        if (s->state == WF_TCP_RETRY && now >= s->retry_at)
            dial_start(ctx, s);
        if (s->state == WF_TCP_RETRY)
            due_min(&due, s->retry_at);
        if (s->state == WF_TCP_DIALING)
            due_min(&due, s->probe_at);
    }
    if (p->state != WF_TCP_DIALING)
        return 0;
    due_min(&due, p->deadline);
    return due;
}

void wf_tcp_timers(wf_tctx_t *ctx)
{
    uint64_t now = wf_time_ms(), due = 0;

    ctx->timer_due = 0;
    if (ctx->listen_resume && now >= ctx->listen_resume)
        wf_tcp_listen_resume(ctx, now);
    due_min(&due, ctx->listen_resume);
    due_min(&due, wf_tcp_pending_expire(ctx, now));
    for (int i = 0; i < ctx->cfg.size; i++)
        due_min(&due, peer_timer(ctx, &ctx->peers[i], now));
    /* Dialing above may have scheduled something itself. */
    due_min(&due, ctx->timer_due);
    ctx->timer_due = due;
    timer_arm(ctx);
}

/* ---- dialing ----------------------------------------------------------- */

/* A connect attempt failed: try again after a back-off unless the deadline
 * has passed. */
static void dial_error(wf_tctx_t *ctx, wf_tcp_stream_t *s, int err)
{
    wf_tcp_peer_t *p = s->peer;

    if (s->probe_at) {
        fall_back(ctx, s, wf_errno_str(err));
        return;
    }
    close_stream_fd(ctx, s);
    s->last_errno = err;
    if (wf_deadline_passed(p->deadline)) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_REMOTE,
                           "cannot connect within %lld ms: %s%s",
                           (long long)ctx->cfg.timeout_ms, wf_errno_str(err),
                           s->fb_note);
        return;
    }
    WEFT_TRACE(NET, "tcp: %s stream %d: connect failed (%s), retrying in "
               "%d ms", p->desc, s->idx, wf_errno_str(err), s->retry_ms);
    s->state = WF_TCP_RETRY;
    s->retry_at = wf_time_ms() + (uint64_t)s->retry_ms;
    s->retry_ms = WF_MIN(2 * s->retry_ms, WF_TCP_RETRY_MAX_MS);
    wf_tcp_timer_schedule(ctx, s->retry_at);
}

static void send_hello(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    uint8_t nonce[WF_TCP_NONCE_LEN];
    ssize_t n;

    s->last_errno = 0; /* connected: older refusals are history */
    s->probe_at = 0;   /* the path works: no falling back from here */
    if (wf_auth_random(nonce, sizeof(nonce)) != WEFT_OK) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_SYSTEM,
                           "no random handshake nonce");
        return;
    }
    uint8_t offer[WF_TCP_OFFER_LEN];
    wf_tcp_cma_offer(ctx, s->idx, offer);
    wf_tcp_hello_encode_stream(s->hello, ctx->cfg.job_key, ctx->cfg.comm_key,
                               ctx->cfg.rank, s->peer->rank, s->idx,
                               s->peer->nstreams, nonce, offer);
    /* A fresh socket's send buffer always holds a hello, so a short write
     * means the connection is already broken. */
    n = send(s->fd, s->hello, sizeof(s->hello), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != (ssize_t)sizeof(s->hello)) {
        dial_error(ctx, s, n < 0 ? errno : EIO);
        return;
    }
    s->state = WF_TCP_HELLO;
    s->reply_got = 0;
    wf_tcp_stream_watch(ctx, s, false);
}

/* Binds a dialing socket to its local address (wf_tcp_local_index), so the
 * stream leaves through that interface's address. */
static int bind_local(wf_tctx_t *ctx, wf_tcp_stream_t *s, int fd)
{
    struct sockaddr_storage ss;
    int i = wf_tcp_local_index(ctx, s);

    if (i < 0)
        return 0;
    ss = ctx->local[i];
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&ss)->sin6_port = 0;
    return bind(fd, (struct sockaddr *)&ss, ctx->local_len[i]);
}

/* The topology's address did not connect (`why`): redial stream s from
 * our fallback to the peer's (tcp_fallback.c). */
static void fall_back(wf_tctx_t *ctx, wf_tcp_stream_t *s, const char *why)
{
    close_stream_fd(ctx, s);
    wf_tcp_fallback_switch(ctx, s, why);
    dial_start(ctx, s);
}

static void dial_start(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    int a = wf_tcp_remote_index(s);
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = &s->ev};
    int fd = socket(p->addr[a].ss_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    wf_tcp_format_addr((struct sockaddr *)&p->addr[a], s->where,
                       sizeof(s->where));
    if (fd < 0) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT, "socket failed: %s",
                           wf_errno_str(errno));
        return;
    }
    wf_tcp_socket_options(ctx, fd);
    wf_tcp_unpace_early(fd, ctx->cc_default, sizeof(ctx->cc_default));
    if (bind_local(ctx, s, fd) != 0 ||
        epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        int err = errno;
        close(fd);
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "cannot bind or watch a socket: %s",
                           wf_errno_str(err));
        return;
    }
    s->fd = fd;
    s->events = EPOLLOUT;
    s->state = WF_TCP_DIALING;
    if (wf_tcp_can_fall_back(ctx, s)) {
        s->probe_at = wf_time_ms() + (uint64_t)ctx->probe_ms;
        wf_tcp_timer_schedule(ctx, s->probe_at);
    }
    wf_tcp_timer_schedule(ctx, p->deadline);
    if (connect(fd, (struct sockaddr *)&p->addr[a], p->addr_len[a]) == 0)
        send_hello(ctx, s);
    else if (errno != EINPROGRESS)
        dial_error(ctx, s, errno);
}

void wf_tcp_stream_up(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;

    s->state = WF_TCP_UP;
    bool late;
    const char *cc = wf_tcp_pacing_settle(s->fd, ctx->cc_default, &late);
    if (cc && late) {
        ctx->cc_late++;
        WEFT_DEBUG(NET, "tcp: %s: stream %d: same host, %s instead of BBR "
                   "only once connected: the kernel may still pace it",
                   p->desc, s->idx, cc);
    } else if (cc) {
        WEFT_DEBUG(NET, "tcp: %s: stream %d: another host, back to %s",
                   p->desc, s->idx, cc);
    }
    wf_tcp_stream_watch(ctx, s, false);
    if (++p->nup < p->nstreams)
        return;
    p->state = WF_TCP_UP;
    p->deadline = 0;
    WEFT_DEBUG(NET, "tcp: %s: connected (%d stream%s)", p->desc,
               p->nstreams, p->nstreams > 1 ? "s" : "");
    /* Sends posted while connecting go out now; flush also sets the epoll
     * interest to match the queue. */
    for (int k = 0; k < p->nstreams && p->state == WF_TCP_UP; k++)
        wf_tcp_flush(ctx, &p->streams[k]);
}

/* A rejection in the challenge or the final reply: an auth failure is
 * WEFT_ERR_AUTH, the rest a transport error. */
static void rejected(wf_tctx_t *ctx, wf_tcp_stream_t *s, uint32_t verdict)
{
    wf_tcp_stream_fail(
        ctx, s,
        verdict == WF_TCP_REJ_AUTH || verdict == WF_TCP_REJ_JOB_KEY
            ? WEFT_ERR_AUTH
            : WEFT_ERR_TRANSPORT,
        "connection rejected by the peer: %s", wf_tcp_verdict_str(verdict));
}

/* The challenge is in: check the acceptor's proof, send ours. */
static void challenge_check(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    const uint8_t *c = s->reply;
    uint8_t want[WF_TCP_MAC_LEN], proof[WF_TCP_PROOF_LEN];
    uint32_t verdict = wf_tcp_get32(c + 12);

    if (wf_tcp_get64(c) != WF_TCP_CHALL_MAGIC ||
        wf_tcp_get32(c + 8) != WF_TCP_VERSION) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "invalid handshake challenge (magic 0x%llx, "
                           "version %u): not a weft tcp endpoint of this "
                           "version",
                           (unsigned long long)wf_tcp_get64(c),
                           wf_tcp_get32(c + 8));
        return;
    }
    if (verdict != WF_TCP_ACCEPT) {
        rejected(ctx, s, verdict);
        return;
    }
    if (wf_tcp_hs_mac(ctx->cfg.secret, WF_TCP_ROLE_ACCEPTOR, s->hello, c + 16,
                      want) != WEFT_OK ||
        !wf_auth_equal(want, c + 16 + WF_TCP_NONCE_LEN, WF_TCP_MAC_LEN)) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_AUTH,
                           "authentication failed: the endpoint does not "
                           "know the job secret (another job's rank, a stale "
                           "process or an impostor on that port)");
        return;
    }
    if (wf_tcp_hs_mac(ctx->cfg.secret, WF_TCP_ROLE_DIALER, s->hello, c + 16,
                      want) != WEFT_OK) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_INTERNAL, "handshake MAC failed");
        return;
    }
    bool reads = wf_tcp_cma_take_offer(
        ctx, s->peer, s->idx, c + 16 + WF_TCP_NONCE_LEN + WF_TCP_MAC_LEN);
    wf_tcp_proof_encode(proof, want, reads);
    /* 48 bytes into a socket that has sent only the hello: a short write
     * means it broke. */
    ssize_t n = send(s->fd, proof, sizeof(proof), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != (ssize_t)sizeof(proof)) {
        dial_error(ctx, s, n < 0 ? errno : EIO);
        return;
    }
    s->state = WF_TCP_PROOF;
    s->reply_got = 0;
}

static void reply_check(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    uint64_t magic = wf_tcp_get64(s->reply);
    uint32_t version = wf_tcp_get32(s->reply + 8);
    uint32_t verdict = wf_tcp_get32(s->reply + 12);

    if (magic != WF_TCP_REPLY_MAGIC || version != WF_TCP_VERSION) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "invalid handshake reply (magic 0x%llx, version "
                           "%u): not a weft tcp endpoint of this version",
                           (unsigned long long)magic, version);
        return;
    }
    if (verdict != WF_TCP_ACCEPT) {
        rejected(ctx, s, verdict);
        return;
    }
    wf_tcp_cma_peer_reads(ctx, s->peer, s->idx, wf_tcp_get64(s->reply + 16));
    wf_tcp_stream_up(ctx, s);
}

void wf_tcp_dial_event(wf_tctx_t *ctx, wf_tcp_stream_t *s, uint32_t events)
{
    int err = 0;
    socklen_t len = sizeof(err);
    ssize_t n;

    (void)events;
    if (s->state == WF_TCP_DIALING) {
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err)
            dial_error(ctx, s, err);
        else
            send_hello(ctx, s);
        return;
    }
    if (s->state != WF_TCP_HELLO && s->state != WF_TCP_PROOF)
        return;
    /* Read exactly the challenge, then exactly the reply: frames the
     * acceptor sends right after must stay in the socket for the frame
     * reader. */
    size_t want = s->state == WF_TCP_HELLO ? WF_TCP_CHALL_LEN
                                           : WF_TCP_REPLY_LEN;
    n = recv(s->fd, s->reply + s->reply_got, want - s->reply_got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        /* The acceptor went away mid-handshake (e.g. it was restarting);
         * treat it like a refused connection. */
        dial_error(ctx, s, n < 0 ? errno : ECONNRESET);
        return;
    }
    s->reply_got += (size_t)n;
    if (s->reply_got < want)
        return;
    if (s->state == WF_TCP_HELLO)
        challenge_check(ctx, s);
    else
        reply_check(ctx, s);
}

int wf_tcp_pair_streams(const wf_tctx_t *ctx, const wf_tcp_peer_t *p)
{
    if (ctx->streams_fixed)
        return ctx->max_streams;
    return WF_MAX(1, WF_MIN(ctx->max_streams, p->naddr));
}

void wf_tcp_peer_set_desc(wf_tcp_peer_t *p, const char *where)
{
    snprintf(p->desc, sizeof(p->desc), "peer %d (%s)", p->rank, where);
}

static weft_status_t peer_addr(wf_tcp_peer_t *p, const void *addr, size_t len)
{
    char where[80];

    if (p->have_addr)
        return WEFT_OK;
    if (!wf_tcp_blob_decode(addr, len, p->addr, p->addr_len, &p->naddr,
                            &p->has_fallback)) {
        WEFT_WARN(NET, "tcp: malformed address of peer %d (%zu bytes; a "
                  "rank of another weft version?)", p->rank, len);
        return WEFT_ERR_INVALID_ARG;
    }
    p->have_addr = true;
    wf_tcp_format_addr((struct sockaddr *)&p->addr[0], where, sizeof(where));
    if (p->naddr > 1) {
        size_t n = strlen(where);
        snprintf(where + n, sizeof(where) - n, " +%d", p->naddr - 1);
    }
    wf_tcp_peer_set_desc(p, where);
    return WEFT_OK;
}

/* Whether a failed peer left complete messages to receive.  A message
 * still waiting for a single-copy read does not count: its payload lives
 * in the sender's memory, and a sender that left normally waited for every
 * such read first. */
static bool left_messages(const wf_tcp_peer_t *p)
{
    for (const wf_mmsg_t *m = p->m.unexp; m; m = m->next)
        if (m->complete && !m->remote)
            return true;
    return false;
}

weft_status_t wf_tcp_connect(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len)
{
    wf_tcp_peer_t *p;

    if (!ctx || peer < 0 || peer >= ctx->cfg.size || peer == ctx->cfg.rank) {
        WEFT_WARN(NET, "tcp: connect to invalid peer %d (rank %d of %d)", peer,
                  ctx ? ctx->cfg.rank : -1, ctx ? ctx->cfg.size : 0);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    WEFT_CHECK(peer_addr(p, addr, len));
    p->connect_called = true;
    if (!p->nstreams)
        p->nstreams = wf_tcp_pair_streams(ctx, p);
    if (p->state == WF_TCP_IDLE) {
        if (ctx->cfg.rank < peer) {
            p->state = WF_TCP_DIALING;
            p->deadline = wf_deadline_after(ctx->cfg.timeout_ms);
            for (int k = 0; k < p->nstreams && p->state == WF_TCP_DIALING;
                 k++) {
                p->streams[k].retry_ms = WF_TCP_RETRY_MIN_MS;
                dial_start(ctx, &p->streams[k]);
            }
        } else {
            p->state = WF_TCP_WAIT_ACCEPT;
        }
    }
    /* A peer that sent its part and left before this side first used the
     * connection: its messages (its goodbye among them) are still here. */
    if (p->state == WF_TCP_FAILED)
        return left_messages(p) ? WEFT_OK
                                : wf_match_peer_failed(&ctx->m, &p->m);
    return p->state == WF_TCP_UP ? WEFT_OK : WEFT_INPROGRESS;
}
