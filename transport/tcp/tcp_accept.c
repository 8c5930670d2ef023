/*
 * tcp_accept.c - the acceptor's side of connection establishment: accepting
 * sockets, the handshake (tcp.h: hello, challenge, proof, reply) and
 * handing the authenticated socket to its peer.
 *
 * Until the dialer has proven the job secret, a connection is only a
 * wf_tcp_pending_t: it owns no peer state, cannot deliver a byte of data,
 * and is dropped after WF_TCP_HELLO_TIMEOUT_MS.  At most WF_TCP_PENDING_MAX
 * are kept, so port scans and half-open floods cost bounded resources.
 * Every rejection is logged with the remote address, the rank it claimed
 * and the reason; the job's own connections are not affected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "auth.h"
#include "tcp.h"

/* How long accepting pauses when the process is out of fds. */
#define WF_TCP_ACCEPT_PAUSE_MS 200

void wf_tcp_pending_close(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    wf_tcp_pending_t **pp = &ctx->pending;

    while (*pp && *pp != pc)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = pc->next;
        ctx->npending--;
    }
    if (pc->fd >= 0) {
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, pc->fd, NULL);
        close(pc->fd);
    }
    free(pc);
}

uint64_t wf_tcp_pending_expire(wf_tctx_t *ctx, uint64_t now)
{
    uint64_t due = 0;

    for (wf_tcp_pending_t *pc = ctx->pending, *next; pc; pc = next) {
        next = pc->next;
        if (now >= pc->deadline) {
            WEFT_WARN(NET,
                      "tcp: dropped connection from %s: incomplete "
                      "handshake after %d ms (%s: %zu of %d bytes)",
                      pc->remote, WF_TCP_HELLO_TIMEOUT_MS,
                      pc->challenged ? "proof" : "hello",
                      pc->challenged ? pc->proof_got : pc->got,
                      pc->challenged ? WF_TCP_PROOF_LEN : WF_TCP_HELLO_LEN);
            wf_tcp_pending_close(ctx, pc);
        } else if (!due || pc->deadline < due) {
            due = pc->deadline;
        }
    }
    return due;
}

static void accept_one(wf_tctx_t *ctx, int fd, struct sockaddr_storage *ss)
{
    struct epoll_event e = {.events = EPOLLIN};
    wf_tcp_pending_t *pc;
    char remote[80];

    if (ctx->npending >= WF_TCP_PENDING_MAX) {
        wf_tcp_format_addr((struct sockaddr *)ss, remote, sizeof(remote));
        WEFT_WARN(NET, "tcp: refused connection from %s: %d connections are "
                       "already in their handshake", remote,
                  WF_TCP_PENDING_MAX);
        close(fd);
        return;
    }
    pc = calloc(1, sizeof(*pc));
    if (!pc) {
        WEFT_WARN(NET, "tcp: out of memory accepting a connection");
        close(fd);
        return;
    }
    pc->ev.kind = WF_TCP_EV_PENDING;
    pc->fd = fd;
    pc->src = -1;
    pc->deadline = wf_time_ms() + WF_TCP_HELLO_TIMEOUT_MS;
    wf_tcp_format_addr((struct sockaddr *)ss, pc->remote, sizeof(pc->remote));
    wf_tcp_socket_options(ctx, fd);
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
    ctx->npending++;
    wf_tcp_timer_schedule(ctx, pc->deadline);
}

void wf_tcp_listen_resume(wf_tctx_t *ctx, uint64_t now)
{
    ctx->listen_resume = 0;
    for (int i = 0; i < ctx->nlisten; i++) {
        wf_tcp_listener_t *l = &ctx->listen[i];
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = &l->ev};
        if (!l->paused)
            continue;
        if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, l->fd, &e) == 0)
            l->paused = false;
        else
            ctx->listen_resume = now + WF_TCP_ACCEPT_PAUSE_MS;
    }
}

/* accept() failed for lack of fds or memory: the connection stays in the
 * backlog and the level-triggered listen fd would stay readable, so stop
 * watching it for a while instead of spinning. */
static void accept_pause(wf_tctx_t *ctx, wf_tcp_listener_t *l, int err)
{
    if (!ctx->listen_warned)
        WEFT_WARN(NET, "tcp: accept on %s failed: %s; pausing accepts",
                  ctx->local_str, wf_errno_str(err));
    ctx->listen_warned = true;
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, l->fd, NULL);
    l->paused = true;
    ctx->listen_resume = wf_time_ms() + WF_TCP_ACCEPT_PAUSE_MS;
    wf_tcp_timer_schedule(ctx, ctx->listen_resume);
}

void wf_tcp_accept_event(wf_tctx_t *ctx, wf_tcp_listener_t *l)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            accept_one(ctx, fd, &ss);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            accept_pause(ctx, l, errno);
        return;
    }
}

/* Checks a complete hello; returns WF_TCP_ACCEPT or a rejection reason and
 * the claimed source rank.  The source rank is range-checked before it
 * indexes ctx->peers. */
static uint32_t hello_verdict(wf_tctx_t *ctx, const uint8_t *h, int *src)
{
    const wf_tconfig_t *cfg = &ctx->cfg;
    uint32_t s = wf_tcp_get32(h + 32), d = wf_tcp_get32(h + 36);
    uint32_t flags = wf_tcp_get32(h + 12);
    int idx = (int)(flags & 0xff), n = (int)((flags >> 8) & 0xff) + 1;
    wf_tcp_state_t state;

    *src = s <= (uint32_t)INT32_MAX ? (int)s : -1;
    if (wf_tcp_get32(h + 8) != WF_TCP_VERSION)
        return WF_TCP_REJ_VERSION;
    if (n > ctx->max_streams || idx >= n || (flags >> 16) != 0)
        return WF_TCP_REJ_STREAMS;
    if (wf_tcp_get64(h + 16) != cfg->job_key)
        return WF_TCP_REJ_JOB_KEY;
    if (wf_tcp_get64(h + 24) != cfg->comm_key)
        return WF_TCP_REJ_COMM_KEY;
    if (d != (uint32_t)cfg->rank)
        return WF_TCP_REJ_DST_RANK;
    if (s >= (uint32_t)cfg->rank)
        return WF_TCP_REJ_SRC_RANK;
    /* A pair agrees on its streams (wf_tcp_pair_streams); an acceptor
     * that does not know the number yet takes it when the stream is
     * adopted, after the proof. */
    if (ctx->peers[s].nstreams && n != ctx->peers[s].nstreams)
        return WF_TCP_REJ_STREAMS;
    state = ctx->peers[s].state;
    if ((state != WF_TCP_IDLE && state != WF_TCP_WAIT_ACCEPT) ||
        ctx->peers[s].streams[idx].state == WF_TCP_UP)
        return WF_TCP_REJ_DUPLICATE;
    return WF_TCP_ACCEPT;
}

/* Hands the authenticated socket over to its peer's stream. */
static void adopt(wf_tctx_t *ctx, wf_tcp_pending_t *pc, int src)
{
    wf_tcp_peer_t *p = &ctx->peers[src];
    uint32_t flags = wf_tcp_get32(pc->hello + 12);
    int n = (int)((flags >> 8) & 0xff) + 1;
    wf_tcp_stream_t *s = &p->streams[flags & 0xff];
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &s->ev};

    if (p->nstreams && n != p->nstreams) {
        /* Another stream's hello, proved meanwhile, said otherwise. */
        WEFT_WARN(NET, "tcp: connection from %s (rank %d) wants %d streams, "
                  "its earlier ones %d", pc->remote, src, n, p->nstreams);
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, pc->fd, &e) != 0) {
        WEFT_WARN(NET, "tcp: epoll_ctl for connection from %s failed: %s",
                  pc->remote, wf_errno_str(errno));
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    p->nstreams = n;
    s->fd = pc->fd;
    s->events = EPOLLIN;
    wf_strlcpy(s->where, pc->remote, sizeof(s->where));
    /* Until connect() tells us the peer's listening address, name it by the
     * address it came from. */
    if (!p->have_addr && s->idx == 0)
        wf_tcp_peer_set_desc(p, pc->remote);
    /* A peer with some streams adopted is linked (tcp_peer_linked). */
    if (p->state == WF_TCP_IDLE)
        p->state = WF_TCP_WAIT_ACCEPT;
    pc->fd = -1;
    wf_tcp_pending_close(ctx, pc);
    wf_tcp_stream_up(ctx, s);
}

/* Sends a handshake message whole or not at all: a fresh socket's buffer
 * holds it, so a short write means the connection broke. */
static bool send_small(wf_tcp_pending_t *pc, const void *p, size_t n)
{
    ssize_t w = send(pc->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

    if (w == (ssize_t)n)
        return true;
    WEFT_WARN(NET, "tcp: handshake with %s (claims rank %d) failed: %s",
              pc->remote, pc->src, w < 0 ? wf_errno_str(errno) : "short write");
    return false;
}

static void reject(wf_tctx_t *ctx, wf_tcp_pending_t *pc, uint32_t verdict)
{
    WEFT_WARN(NET, "tcp: rejected connection from %s (claims rank %d): %s",
              pc->remote, pc->src, wf_tcp_verdict_str(verdict));
    wf_tcp_pending_close(ctx, pc);
}

/* The hello is in: answer with a challenge (or a rejection). */
static void hello_check(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    uint8_t chall[WF_TCP_CHALL_LEN], mac[WF_TCP_MAC_LEN];
    uint32_t verdict = hello_verdict(ctx, pc->hello, &pc->src);

    if (verdict == WF_TCP_ACCEPT &&
        (wf_auth_random(pc->nonce, sizeof(pc->nonce)) != WEFT_OK ||
         wf_tcp_hs_mac(ctx->cfg.secret, WF_TCP_ROLE_ACCEPTOR, pc->hello,
                       pc->nonce, mac) != WEFT_OK))
        verdict = WF_TCP_REJ_BUSY; /* logged by auth.c */
    if (verdict != WF_TCP_ACCEPT) {
        wf_tcp_chall_encode(chall, verdict, NULL, NULL, NULL);
        send_small(pc, chall, sizeof(chall));
        reject(ctx, pc, verdict);
        return;
    }
    uint8_t offer[WF_TCP_OFFER_LEN];
    wf_tcp_cma_offer(ctx, (int)(wf_tcp_get32(pc->hello + 12) & 0xff), offer);
    wf_tcp_chall_encode(chall, verdict, pc->nonce, mac, offer);
    if (!send_small(pc, chall, sizeof(chall))) {
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    pc->challenged = true;
}

/* The proof is in: check it, then re-check the hello (another connection
 * may have taken the rank meanwhile) and adopt. */
static void proof_check(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    uint8_t want[WF_TCP_MAC_LEN], reply[WF_TCP_REPLY_LEN];
    uint32_t verdict = WF_TCP_ACCEPT;

    if (wf_tcp_get64(pc->proof) != WF_TCP_PROOF_MAGIC ||
        wf_tcp_hs_mac(ctx->cfg.secret, WF_TCP_ROLE_DIALER, pc->hello,
                      pc->nonce, want) != WEFT_OK ||
        !wf_auth_equal(want, pc->proof + 8, WF_TCP_MAC_LEN))
        verdict = WF_TCP_REJ_AUTH;
    if (verdict == WF_TCP_ACCEPT)
        verdict = hello_verdict(ctx, pc->hello, &pc->src);
    int idx = (int)(wf_tcp_get32(pc->hello + 12) & 0xff);
    bool reads = false;
    if (verdict == WF_TCP_ACCEPT) {
        wf_tcp_peer_t *p = &ctx->peers[pc->src];
        reads = wf_tcp_cma_take_offer(ctx, p, idx,
                                      pc->hello + 40 + WF_TCP_NONCE_LEN);
        wf_tcp_cma_peer_reads(ctx, p, idx,
                              wf_tcp_get64(pc->proof + 8 + WF_TCP_MAC_LEN));
    }
    wf_tcp_reply_encode(reply, verdict, reads);
    bool sent = send_small(pc, reply, sizeof(reply));
    if (verdict != WF_TCP_ACCEPT) {
        reject(ctx, pc, verdict);
        return;
    }
    if (!sent) {
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    adopt(ctx, pc, pc->src);
}

void wf_tcp_pending_event(wf_tctx_t *ctx, wf_tcp_pending_t *pc)
{
    uint8_t *buf = pc->challenged ? pc->proof : pc->hello;
    size_t *got = pc->challenged ? &pc->proof_got : &pc->got;
    size_t want = pc->challenged ? WF_TCP_PROOF_LEN : WF_TCP_HELLO_LEN;
    /* Never read past this message: the dialer's first frames may follow
     * its proof and belong to the peer's frame reader. */
    ssize_t n = recv(pc->fd, buf + *got, want - *got, 0);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        WEFT_WARN(NET, "tcp: connection from %s lost during its handshake: "
                       "%s", pc->remote,
                  n == 0 ? "closed by the remote end" : wf_errno_str(errno));
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    *got += (size_t)n;
    /* Reject garbage as soon as the magic is wrong rather than waiting for
     * bytes that may never come. */
    uint64_t magic = pc->challenged ? WF_TCP_PROOF_MAGIC : WF_TCP_HELLO_MAGIC;
    if (*got >= 8 && wf_tcp_get64(buf) != magic) {
        WEFT_WARN(NET,
                  "tcp: rejected connection from %s: not a weft %s (bad "
                  "magic)", pc->remote, pc->challenged ? "proof" : "hello");
        wf_tcp_pending_close(ctx, pc);
        return;
    }
    if (*got < want)
        return;
    if (pc->challenged)
        proof_check(ctx, pc);
    else
        hello_check(ctx, pc);
}
