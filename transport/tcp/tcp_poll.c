/*
 * tcp_poll.c - the epoll loop (progress, get_fd) and the TCP ops table.
 *
 * The epoll set is level-triggered: a handler that stops early (read budget,
 * a full socket buffer) is simply called again by the next progress().
 * EPOLLOUT is registered only while a connection has queued output or a
 * connect is in flight, so the epoll fd the engine polls is readable only
 * when there is work.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp.h"
#include "weft_cuda.h"

#define WF_TCP_EVENTS 64

static void stream_event(wf_tctx_t *ctx, wf_tcp_stream_t *s, uint32_t events)
{
    if (s->fd < 0)
        return; /* closed by an earlier event of this batch */
    if (s->state == WF_TCP_DIALING || s->state == WF_TCP_HELLO ||
        s->state == WF_TCP_PROOF) {
        wf_tcp_dial_event(ctx, s, events);
        return;
    }
    if (s->state != WF_TCP_UP)
        return;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        wf_tcp_read(ctx, s);
    /* Also after a read that queued a control frame (a FIN): the reader
     * does not write, and the FIN is what the sender waits for. */
    if (s->peer->state == WF_TCP_UP && ((events & EPOLLOUT) || s->sendq))
        wf_tcp_flush(ctx, s);
}

static void dispatch(wf_tctx_t *ctx, const struct epoll_event *e)
{
    wf_tcp_ev_t *ev = e->data.ptr;
    uint64_t expirations;

    switch (ev->kind) {
    case WF_TCP_EV_LISTEN:
        wf_tcp_accept_event(ctx, (wf_tcp_listener_t *)ev);
        break;
    case WF_TCP_EV_TIMER:
        /* Drain it; progress() runs the timers after this batch. */
        if (read(ctx->timer_fd, &expirations, sizeof(expirations)) < 0)
            expirations = 0;
        ctx->timer_armed = 0;
        ctx->timer_fired = true;
        break;
    case WF_TCP_EV_PENDING:
        wf_tcp_pending_event(ctx, (wf_tcp_pending_t *)ev);
        break;
    case WF_TCP_EV_STREAM:
        stream_event(ctx, (wf_tcp_stream_t *)ev, e->events);
        break;
    }
}

/*
 * The hot peer: the one peer a posted receive (or a message half read)
 * waits on.  A waiting caller polls in a loop, and asking epoll_wait
 * whether a socket is readable and then reading it costs two system calls
 * where one read attempt does (make bench-tcp-floor measures both ways;
 * bench/results/2026-11-26-small-messages-first-pass.md).  So while
 * receives wait on
 * exactly one peer, progress() reads that peer's stream 0 first and calls
 * epoll_wait only every WF_TCP_EPOLL_EVERY-th time: everything else (other
 * peers, streams 1.., accepts, EPOLLOUT, the timer) waits at most that
 * many calls.  A call whose read finished a message is not counted: that
 * message usually ends its caller's wait, and an epoll_wait on its way out
 * only delayed the return (an 8-byte allreduce on 2 ranks paid one call in
 * four).  Calls whose read brings part of a large payload count as before,
 * so queued output to other peers (EPOLLOUT) still goes every few calls; a
 * hot peer that finishes a message on every call holds the others back at
 * most WF_TCP_EPOLL_MAX_SKIP calls.  With receives on several peers one
 * epoll_wait is cheaper than a read attempt on each (the same record), so
 * every call polls; likewise for a peer with several
 * streams, whose pieces come on streams 1 and up.  The epoll set is
 * level-triggered: an event it still reports for bytes read here only
 * costs an EAGAIN.  Up to WF_TCP_HOT awaited peers are tracked, so that
 * the last one left is known when the others are done.
 */
void wf_tcp_hot_add(wf_tctx_t *ctx, int peer)
{
    for (int i = 0; i < ctx->nhot; i++)
        if (ctx->hot[i] == peer)
            return;
    if (ctx->nhot < WF_TCP_HOT)
        ctx->hot[ctx->nhot++] = peer;
    else
        ctx->hot_overflow = true; /* more than are tracked: epoll only */
}

static bool awaited(const wf_tcp_peer_t *p)
{
    const wf_tcp_rx_t *rx = &p->streams[0].rx;
    return p->state == WF_TCP_UP && p->streams[0].state == WF_TCP_UP &&
           (p->m.posted || rx->in_payload || rx->hdr_got);
}

/* Drops the peers nothing waits on any more; true when one is left. */
static bool one_hot_peer(wf_tctx_t *ctx)
{
    for (int i = 0; i < ctx->nhot;) {
        if (awaited(&ctx->peers[ctx->hot[i]]))
            i++;
        else
            ctx->hot[i] = ctx->hot[--ctx->nhot];
    }
    if (ctx->nhot == 0)
        ctx->hot_overflow = false; /* whatever overflowed is done too */
    /* A peer with several streams sends its large messages' pieces on
     * streams 1.., which only epoll watches. */
    return ctx->nhot == 1 && !ctx->hot_overflow &&
           ctx->peers[ctx->hot[0]].nstreams <= 1;
}

/* Reads the hot peer's stream 0 as if epoll had reported it readable
 * (stream_event also sends the control frames a read queues, such as a
 * single copy's FIN); 1 when bytes arrived. */
static int read_hot(wf_tctx_t *ctx)
{
    wf_tcp_stream_t *s = &ctx->peers[ctx->hot[0]].streams[0];
    uint64_t before = s->bytes_in;
    stream_event(ctx, s, EPOLLIN);
    return s->bytes_in != before;
}

int wf_tcp_progress(wf_tctx_t *ctx)
{
    struct epoll_event evs[WF_TCP_EVENTS];
    int n = 0;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    bool direct = ctx->nhot && one_hot_peer(ctx);
    uint64_t msgs = ctx->msgs_read;
    int hot = direct ? read_hot(ctx) : 0;
    /* While single-copy messages are pending, every call polls: their
     * flush counts calls without events (below). */
    bool poll_now = !direct || ctx->cma_pending;
    if (!poll_now) {
        /* The awaited peer stays hot after its message (the notice
         * receive the engine keeps posted with every peer), so a finished
         * message is told by the count of messages read. */
        ctx->calls_unpolled++;
        ctx->polls_skipped += ctx->msgs_read == msgs;
        poll_now = ctx->polls_skipped >= WF_TCP_EPOLL_EVERY ||
                   ctx->calls_unpolled >= WF_TCP_EPOLL_MAX_SKIP;
    }
    if (poll_now) {
        ctx->polls_skipped = 0;
        ctx->calls_unpolled = 0;
        n = epoll_wait(ctx->epfd, evs, WF_TCP_EVENTS, 0);
    }
    if (n < 0) {
        if (errno != EINTR) {
            WEFT_WARN(NET, "tcp: epoll_wait failed: %s", wf_errno_str(errno));
            return WEFT_ERR_SYSTEM;
        }
        n = 0;
    }
    for (int i = 0; i < n; i++)
        dispatch(ctx, &evs[i]);
    n += hot;
    /* Checked on every call, not only on timer events, so an engine that
     * polls without get_fd() still sees retries and deadlines. */
    if (ctx->timer_fired ||
        wf_deadline_passed_cheap(ctx->timer_due)) {
        ctx->timer_fired = false;
        wf_tcp_timers(ctx);
        n++;
    }
    if (ctx->cma_pending) {
        bool idle = n == 0 && ctx->m.posts == ctx->posts_seen;
        ctx->idle_calls = idle ? ctx->idle_calls + 1 : 0;
        if (ctx->idle_calls >= WF_TCP_CMA_IDLE_CALLS) {
            wf_tcp_cma_flush(ctx);
            ctx->idle_calls = 0;
            n++;
        }
    }
    ctx->posts_seen = ctx->m.posts;
    /* Work left for the next call: the caller must not sleep in poll()
     * while unclaimed single-copy messages wait to be read. */
    return ctx->cma_pending && !n ? 1 : n;
}

int wf_tcp_get_fd(wf_tctx_t *ctx)
{
    return ctx ? ctx->epfd : -1;
}

static weft_status_t tcp_mem_reg(wf_tctx_t *ctx, void *buf, size_t len,
                                 int memtype, void **mh)
{
    (void)ctx;
    (void)buf;
    (void)len;
    if (!mh)
        return WEFT_ERR_INVALID_ARG;
    if (memtype == WF_MEM_DEVICE)
        return WEFT_ERR_UNSUPPORTED; /* sockets read host memory only */
    *mh = NULL; /* plain sockets need no registration */
    return WEFT_OK;
}

static void tcp_mem_dereg(wf_tctx_t *ctx, void *mh)
{
    (void)ctx;
    (void)mh;
}

static const char *tcp_peer_describe(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size)
        return "peer ? (invalid)";
    return ctx->peers[peer].desc;
}

static bool tcp_peer_linked(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size)
        return false;
    wf_tcp_state_t st = ctx->peers[peer].state;
    return st != WF_TCP_IDLE && st != WF_TCP_FAILED;
}

/* The matching layer's test() and scan_unexpected() take the context as
 * they find it: the layer's state comes first. */
_Static_assert(offsetof(struct wf_tctx, m) == 0, "match state first");
_Static_assert(offsetof(struct wf_treq, m) == 0, "request head first");

const wf_transport_ops_t wf_tcp_transport = {
    .size = sizeof(wf_transport_ops_t),
    .name = "tcp",
    .caps = WF_TCAP_HOST_MEM,
    .init = wf_tcp_init,
    .fini = wf_tcp_fini,
    .query = wf_tcp_query,
    .get_address = wf_tcp_get_address,
    .connect = wf_tcp_connect,
    .mem_reg = tcp_mem_reg,
    .mem_dereg = tcp_mem_dereg,
    .isend = wf_tcp_isend,
    .irecv = wf_tcp_irecv,
    .test = wf_match_test,
    .progress = wf_tcp_progress,
    .get_fd = wf_tcp_get_fd,
    .peer_describe = tcp_peer_describe,
    .peer_linked = tcp_peer_linked,
    .scan_unexpected = wf_match_scan_unexpected,
    .send_pulled = wf_tcp_send_pulled,
};
