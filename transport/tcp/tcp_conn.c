/*
 * tcp_conn.c - establishing connections: dialing with retries, accepting,
 * the handshake, timers and peer failure.
 *
 * One connection per pair of ranks, made on first use.  The lower rank
 * dials, the higher rank accepts, so both sides calling connect() at the
 * same time never produce two sockets.  The dialer retries refused
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

#include "tcp.h"

static const char *const verdict_text[WF_TCP_REJ_COUNT] = {
    [WF_TCP_ACCEPT] = "accepted",
    [WF_TCP_REJ_VERSION] = "protocol version mismatch",
    [WF_TCP_REJ_JOB_KEY] = "job key mismatch (different job id or token)",
    [WF_TCP_REJ_COMM_KEY] = "communicator key mismatch",
    [WF_TCP_REJ_DST_RANK] = "addressed to another rank",
    [WF_TCP_REJ_SRC_RANK] = "source rank out of range or not lower",
    [WF_TCP_REJ_DUPLICATE] = "that rank is already connected or failed",
};

static const char *verdict_str(uint32_t v)
{
    return v < WF_TCP_REJ_COUNT ? verdict_text[v] : "unknown reason";
}

void wf_tcp_hello_encode(uint8_t out[WF_TCP_HELLO_LEN], uint64_t job_key,
                         uint64_t comm_key, int src_rank, int dst_rank)
{
    wf_tcp_put64(out, WF_TCP_HELLO_MAGIC);
    wf_tcp_put32(out + 8, WF_TCP_VERSION);
    wf_tcp_put32(out + 12, 0);
    wf_tcp_put64(out + 16, job_key);
    wf_tcp_put64(out + 24, comm_key);
    wf_tcp_put32(out + 32, (uint32_t)src_rank);
    wf_tcp_put32(out + 36, (uint32_t)dst_rank);
}

static void set_nodelay(int fd)
{
    int one = 1;
    /* Frames are written whole by writev; Nagle would only add latency. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void close_peer_fd(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    if (p->fd < 0)
        return;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    close(p->fd);
    p->fd = -1;
    p->want_out = false;
}

void wf_tcp_peer_watch(wf_tctx_t *ctx, wf_tcp_peer_t *p, bool out)
{
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &p->ev};

    if (p->fd < 0 || p->want_out == out)
        return;
    if (out)
        e.events |= EPOLLOUT;
    /* Cannot fail for a registered fd short of a bug; the next write
     * attempt would surface a broken socket anyway. */
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, p->fd, &e) == 0)
        p->want_out = out;
}

void wf_tcp_peer_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st,
                      const char *fmt, ...)
{
    va_list ap;

    if (p->state == WF_TCP_FAILED)
        return;
    va_start(ap, fmt);
    vsnprintf(p->fail_msg, sizeof(p->fail_msg), fmt, ap);
    va_end(ap);
    if (p->fail_unreported)
        WEFT_DEBUG(NET, "tcp: %s: %s", p->desc, p->fail_msg);
    else
        WEFT_WARN(NET, "tcp: %s: %s", p->desc, p->fail_msg);
    close_peer_fd(ctx, p);
    p->state = WF_TCP_FAILED;
    p->fail_status = st;
    wf_tcp_xfer_fail(ctx, p);
}

weft_status_t wf_tcp_peer_failed(wf_tcp_peer_t *p)
{
    if (p->fail_unreported) {
        WEFT_WARN(NET, "tcp: %s: %s", p->desc, p->fail_msg);
        p->fail_unreported = false;
    }
    return p->fail_status;
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

static void dial_start(wf_tctx_t *ctx, wf_tcp_peer_t *p);

/* Runs one peer's due retry or deadline; returns its next due time. */
static uint64_t peer_timer(wf_tctx_t *ctx, wf_tcp_peer_t *p, uint64_t now)
{
    bool dialing = p->state == WF_TCP_RETRY || p->state == WF_TCP_DIALING ||
                   p->state == WF_TCP_HELLO;

    if (!dialing)
        return 0;
    if (wf_deadline_passed(p->deadline)) {
        wf_tcp_peer_fail(
            ctx, p, WEFT_ERR_REMOTE, "cannot connect within %lld ms: %s",
            (long long)ctx->cfg.timeout_ms,
            p->last_errno ? wf_errno_str(p->last_errno) : "no answer");
        return 0;
    }
    if (p->state == WF_TCP_RETRY && now >= p->retry_at)
        dial_start(ctx, p);
    if (p->state == WF_TCP_RETRY)
        return WF_MIN(p->retry_at, p->deadline ? p->deadline : UINT64_MAX);
    return p->state == WF_TCP_FAILED ? 0 : p->deadline;
}

/* Watches the listening socket again after accept_pause(). */
static void listen_resume(wf_tctx_t *ctx, uint64_t now)
{
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &ctx->listen_ev};

    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->listen_fd, &e) == 0)
        ctx->listen_resume = 0;
    else
        ctx->listen_resume = now + WF_TCP_ACCEPT_PAUSE_MS;
}

void wf_tcp_timers(wf_tctx_t *ctx)
{
    uint64_t now = wf_time_ms(), due = 0;
    wf_tcp_pending_t *pc, *next;

    ctx->timer_due = 0;
    if (ctx->listen_resume && now >= ctx->listen_resume)
        listen_resume(ctx, now);
    due_min(&due, ctx->listen_resume);
    for (pc = ctx->pending; pc; pc = next) {
        next = pc->next;
        if (now >= pc->deadline) {
            WEFT_WARN(NET,
                      "tcp: dropped connection from %s: incomplete "
                      "handshake after %d ms (%zu of %d bytes)",
                      pc->remote, WF_TCP_HELLO_TIMEOUT_MS, pc->got,
                      WF_TCP_HELLO_LEN);
            wf_tcp_pending_close(ctx, pc);
        } else {
            due_min(&due, pc->deadline);
        }
    }
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
static void dial_error(wf_tctx_t *ctx, wf_tcp_peer_t *p, int err)
{
    close_peer_fd(ctx, p);
    p->last_errno = err;
    if (wf_deadline_passed(p->deadline)) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "cannot connect within %lld ms: %s",
                         (long long)ctx->cfg.timeout_ms, wf_errno_str(err));
        return;
    }
    WEFT_TRACE(NET, "tcp: %s: connect failed (%s), retrying in %d ms", p->desc,
               wf_errno_str(err), p->retry_ms);
    p->state = WF_TCP_RETRY;
    p->retry_at = wf_time_ms() + (uint64_t)p->retry_ms;
    p->retry_ms = WF_MIN(2 * p->retry_ms, WF_TCP_RETRY_MAX_MS);
    wf_tcp_timer_schedule(ctx, p->retry_at);
}

static void send_hello(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    uint8_t hello[WF_TCP_HELLO_LEN];
    ssize_t n;

    p->last_errno = 0; /* connected: older refusals are history */
    wf_tcp_hello_encode(hello, ctx->cfg.job_key, ctx->cfg.comm_key,
                        ctx->cfg.rank, p->rank);
    /* A fresh socket's send buffer always holds 40 bytes, so a short write
     * means the connection is already broken. */
    n = send(p->fd, hello, sizeof(hello), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != (ssize_t)sizeof(hello)) {
        dial_error(ctx, p, n < 0 ? errno : EIO);
        return;
    }
    p->state = WF_TCP_HELLO;
    p->reply_got = 0;
    wf_tcp_peer_watch(ctx, p, false);
}

static void dial_start(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    struct epoll_event e = {.events = EPOLLOUT, .data.ptr = &p->ev};
    int fd = socket(p->addr.ss_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_TRANSPORT, "socket failed: %s",
                         wf_errno_str(errno));
        return;
    }
    set_nodelay(fd);
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        int err = errno;
        close(fd);
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_TRANSPORT, "epoll_ctl failed: %s",
                         wf_errno_str(err));
        return;
    }
    p->fd = fd;
    p->want_out = true;
    p->state = WF_TCP_DIALING;
    wf_tcp_timer_schedule(ctx, p->deadline);
    if (connect(fd, (struct sockaddr *)&p->addr, p->addr_len) == 0)
        send_hello(ctx, p);
    else if (errno != EINPROGRESS)
        dial_error(ctx, p, errno);
}

static void peer_up(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    p->state = WF_TCP_UP;
    p->deadline = 0;
    WEFT_DEBUG(NET, "tcp: %s: connected", p->desc);
    /* Sends posted while connecting go out now; flush also sets the epoll
     * interest to match the queue. */
    wf_tcp_flush(ctx, p);
}

static void reply_check(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    uint64_t magic = wf_tcp_get64(p->reply);
    uint32_t version = wf_tcp_get32(p->reply + 8);
    uint32_t verdict = wf_tcp_get32(p->reply + 12);

    if (magic != WF_TCP_REPLY_MAGIC || version != WF_TCP_VERSION) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "invalid handshake reply (magic 0x%llx, version "
                         "%u): not a weft tcp endpoint of this version",
                         (unsigned long long)magic, version);
        return;
    }
    if (verdict != WF_TCP_ACCEPT) {
        wf_tcp_peer_fail(
            ctx, p,
            verdict == WF_TCP_REJ_JOB_KEY ? WEFT_ERR_AUTH : WEFT_ERR_TRANSPORT,
            "connection rejected by the peer: %s", verdict_str(verdict));
        return;
    }
    peer_up(ctx, p);
}

void wf_tcp_dial_event(wf_tctx_t *ctx, wf_tcp_peer_t *p, uint32_t events)
{
    int err = 0;
    socklen_t len = sizeof(err);
    ssize_t n;

    (void)events;
    if (p->state == WF_TCP_DIALING) {
        if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err)
            dial_error(ctx, p, err);
        else
            send_hello(ctx, p);
        return;
    }
    if (p->state != WF_TCP_HELLO)
        return;
    /* Read the reply alone: frames the acceptor sends right after it must
     * stay in the socket for the frame reader. */
    n = recv(p->fd, p->reply + p->reply_got, WF_TCP_REPLY_LEN - p->reply_got,
             0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        /* The acceptor went away mid-handshake (e.g. it was restarting);
         * treat it like a refused connection. */
        dial_error(ctx, p, n < 0 ? errno : ECONNRESET);
        return;
    }
    p->reply_got += (size_t)n;
    if (p->reply_got == WF_TCP_REPLY_LEN)
        reply_check(ctx, p);
}

static void set_desc(wf_tcp_peer_t *p, const char *where)
{
    snprintf(p->desc, sizeof(p->desc), "peer %d (%s)", p->rank, where);
}

weft_status_t wf_tcp_connect(wf_tctx_t *ctx, int peer, const void *addr,
                             size_t len)
{
    wf_tcp_peer_t *p;
    char where[80];

    if (!ctx || peer < 0 || peer >= ctx->cfg.size || peer == ctx->cfg.rank) {
        WEFT_WARN(NET, "tcp: connect to invalid peer %d (rank %d of %d)", peer,
                  ctx ? ctx->cfg.rank : -1, ctx ? ctx->cfg.size : 0);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    if (!p->have_addr) {
        if (!wf_tcp_blob_decode(addr, len, &p->addr, &p->addr_len)) {
            WEFT_WARN(NET, "tcp: malformed address of peer %d (%zu bytes)",
                      peer, len);
            return WEFT_ERR_INVALID_ARG;
        }
        p->have_addr = true;
        wf_tcp_format_addr((struct sockaddr *)&p->addr, where, sizeof(where));
        set_desc(p, where);
    }
    p->connect_called = true;
    if (p->state == WF_TCP_IDLE) {
        if (ctx->cfg.rank < peer) {
            p->deadline = wf_deadline_after(ctx->cfg.timeout_ms);
            p->retry_ms = WF_TCP_RETRY_MIN_MS;
            dial_start(ctx, p);
        } else {
            p->state = WF_TCP_WAIT_ACCEPT;
        }
    }
    if (p->state == WF_TCP_FAILED)
        return wf_tcp_peer_failed(p);
    return p->state == WF_TCP_UP ? WEFT_OK : WEFT_INPROGRESS;
}

/* ---- accepting --------------------------------------------------------- */

void wf_tcp_pending_close(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    wf_tcp_pending_t **pp = &ctx->pending;

    while (*pp && *pp != pc)
        pp = &(*pp)->next;
    if (*pp)
        *pp = pc->next;
    if (pc->fd >= 0) {
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, pc->fd, NULL);
        close(pc->fd);
    }
    free(pc);
}

static void accept_one(wf_tctx_t *ctx, int fd, struct sockaddr_storage *ss)
{
    struct epoll_event e = {.events = EPOLLIN};
    wf_tcp_pending_t *pc = calloc(1, sizeof(*pc));

    if (!pc) {
        WEFT_WARN(NET, "tcp: out of memory accepting a connection");
        close(fd);
        return;
    }
    pc->ev.kind = WF_TCP_EV_PENDING;
    pc->fd = fd;
    pc->deadline = wf_time_ms() + WF_TCP_HELLO_TIMEOUT_MS;
    wf_tcp_format_addr((struct sockaddr *)ss, pc->remote, sizeof(pc->remote));
    set_nodelay(fd);
    e.data.ptr = &pc->ev;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        WEFT_WARN(NET, "tcp: epoll_ctl for connection from %s failed: %s",
                  pc->remote, wf_errno_str(errno));
        close(fd);
        free(pc);
        return;
    }
    pc->next = ctx->pending;
    ctx->pending = pc;
    wf_tcp_timer_schedule(ctx, pc->deadline);
}

/* accept() failed for lack of fds or memory: the connection stays in the
 * backlog and the level-triggered listen fd would stay readable, so stop
 * watching it for a while instead of spinning. */
static void accept_pause(wf_tctx_t *ctx, int err)
{
    if (!ctx->listen_warned)
        WEFT_WARN(NET, "tcp: accept on %s failed: %s; pausing accepts",
                  ctx->local_str, wf_errno_str(err));
    ctx->listen_warned = true;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, ctx->listen_fd, NULL);
    ctx->listen_resume = wf_time_ms() + WF_TCP_ACCEPT_PAUSE_MS;
    wf_tcp_timer_schedule(ctx, ctx->listen_resume);
}

void wf_tcp_accept_event(wf_tctx_t *ctx)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(ctx->listen_fd, (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            accept_one(ctx, fd, &ss);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            accept_pause(ctx, errno);
        return;
    }
}

/* Checks a complete hello; returns WF_TCP_ACCEPT or a rejection reason and
 * the claimed source rank. */
static uint32_t hello_verdict(wf_tctx_t *ctx, const uint8_t *h, int *src)
{
    const wf_tconfig_t *cfg = &ctx->cfg;
    uint32_t s = wf_tcp_get32(h + 32), d = wf_tcp_get32(h + 36);
    wf_tcp_state_t state;

    *src = (int)s;
    if (wf_tcp_get32(h + 8) != WF_TCP_VERSION)
        return WF_TCP_REJ_VERSION;
    if (wf_tcp_get64(h + 16) != cfg->job_key)
        return WF_TCP_REJ_JOB_KEY;
    if (wf_tcp_get64(h + 24) != cfg->comm_key)
        return WF_TCP_REJ_COMM_KEY;
    if (d != (uint32_t)cfg->rank)
        return WF_TCP_REJ_DST_RANK;
    if (s >= (uint32_t)cfg->rank)
        return WF_TCP_REJ_SRC_RANK;
    state = ctx->peers[s].state;
    if (state != WF_TCP_IDLE && state != WF_TCP_WAIT_ACCEPT)
        return WF_TCP_REJ_DUPLICATE;
    return WF_TCP_ACCEPT;
}

/* Hands the accepted socket over to its peer. */
static void adopt(wf_tctx_t *ctx, wf_tcp_pending_t *pc, int src)
{
    wf_tcp_peer_t *p = &ctx->peers[src];
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &p->ev};

    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, pc->fd, &e) != 0) {
        WEFT_WARN(NET, "tcp: epoll_ctl for connection from %s failed: %s",
                  pc->remote, wf_errno_str(errno));
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    p->fd = pc->fd;
    p->want_out = false;
    /* Until connect() tells us the peer's listening address, name it by the
     * address it came from. */
    if (!p->have_addr)
        set_desc(p, pc->remote);
    pc->fd = -1;
    wf_tcp_pending_close(ctx, pc);
    peer_up(ctx, p);
}

static void hello_check(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    uint8_t reply[WF_TCP_REPLY_LEN];
    int src;
    uint32_t verdict = hello_verdict(ctx, pc->hello, &src);
    ssize_t n;

    wf_tcp_put64(reply, WF_TCP_REPLY_MAGIC);
    wf_tcp_put32(reply + 8, WF_TCP_VERSION);
    wf_tcp_put32(reply + 12, verdict);
    n = send(pc->fd, reply, sizeof(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (verdict != WF_TCP_ACCEPT) {
        WEFT_WARN(NET, "tcp: rejected connection from %s (claims rank %d): %s",
                  pc->remote, src, verdict_str(verdict));
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    if (n != (ssize_t)sizeof(reply)) {
        WEFT_WARN(NET, "tcp: handshake reply to %s (rank %d) failed: %s",
                  pc->remote, src, n < 0 ? wf_errno_str(errno) : "short");
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    adopt(ctx, pc, src);
}

void wf_tcp_pending_event(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    ssize_t n =
        recv(pc->fd, pc->hello + pc->got, WF_TCP_HELLO_LEN - pc->got, 0);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        WEFT_WARN(NET, "tcp: connection from %s lost before its handshake: %s",
                  pc->remote,
                  n == 0 ? "closed by the remote end" : wf_errno_str(errno));
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    pc->got += (size_t)n;
    /* Reject garbage as soon as the magic is wrong rather than waiting for
     * 40 bytes that may never come. */
    if (pc->got >= 8 && wf_tcp_get64(pc->hello) != WF_TCP_HELLO_MAGIC) {
        WEFT_WARN(NET,
                  "tcp: rejected connection from %s: not a weft hello "
                  "(bad magic)",
                  pc->remote);
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    if (pc->got == WF_TCP_HELLO_LEN)
        hello_check(ctx, pc);
}
