/*
 * tcp_cma.c - single-copy messages between ranks on one machine
 * (WEFT_TCP_CMA_MIN).
 *
 * Over loopback every byte is copied twice (into the kernel, out of it)
 * and pays the TCP stack besides; with more ranks than cores that CPU
 * work is the bottleneck.  Cross-memory attach (process_vm_readv) lets
 * the receiver copy a message straight out of the sender's buffer: one
 * copy, no socket buffer.  The TCP connection stays the control path, so
 * matching order, failure detection and authentication are unchanged:
 *
 *   1. In the handshake of stream 0 each side offers its memory: its pid,
 *      the address and value of a random 64-bit cookie, and its node key
 *      (hostname and boot id) - in the hello and in the challenge.
 *   2. A side that gets an offer from a peer on its node reads the
 *      cookie from the peer's memory.  Only if that works and the value
 *      matches (the same pid namespace, ptrace permission, a kernel with
 *      CMA) does it say "I can read you" - in the proof and in the reply.
 *      All of it inside the handshake: a frame sent unasked after it
 *      could reach a peer that has already closed, whose kernel answers
 *      with a reset that would look like a failure.
 *   3. A side that was told so sends each message of WEFT_TCP_CMA_MIN
 *      bytes or more as an RTS: the usual header (tag, signature, length)
 *      and a 16-byte trailer {buffer address, sequence number}.  The
 *      receiver matches it like any frame and reads the payload with
 *      process_vm_readv, into the posted receive; into a receive posted
 *      before its next progress() call; or else, in that call, into an
 *      unexpected buffer (sends never wait for receives, transport.h).
 *      Then it answers FIN {sequence number, 0
 *      or the errno of a failed read}.  The send completes with the FIN,
 *      so its buffer stays untouched until the receiver is done, and the
 *      sender reads until then: the FIN is never unasked.
 *
 * A failed read (the sender died, a bad address) fails the peer on both
 * sides with the errno text; the sender's buffer is never written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "auth.h"
#include "cma.h"
#include "tcp.h"

/* A control frame (no request behind it): freed once written. */
static bool control_queue(wf_tctx_t *ctx, wf_tcp_peer_t *p, uint64_t magic,
                          uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4)
{
    wf_tcp_sunit_t *u = calloc(1, sizeof(*u));

    if (!u) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                         "out of memory for a control frame");
        return false;
    }
    wf_tcp_unit_init(u, NULL, magic, w1, w2, w3, w4, NULL, 0);
    wf_tcp_unit_queue(&p->streams[0], u);
    /* Not written here: this runs inside the stream's reader, and a
     * failed write reads the streams.  The poll loop writes it next. */
    if (p->state == WF_TCP_UP)
        wf_tcp_stream_watch(ctx, &p->streams[0], true);
    return true;
}

void wf_tcp_cma_offer(const wf_tctx_t *ctx, int idx,
                      uint8_t out[WF_TCP_OFFER_LEN])
{
    memset(out, 0, WF_TCP_OFFER_LEN);
    if (!ctx->cma_min || idx != 0)
        return;
    wf_tcp_put64(out, (uint64_t)getpid());
    wf_tcp_put64(out + 8, (uint64_t)(uintptr_t)&ctx->cma_cookie);
    wf_tcp_put64(out + 16, ctx->cma_cookie);
    wf_tcp_put64(out + 24, wf_node_key());
}

bool wf_tcp_cma_take_offer(wf_tctx_t *ctx, wf_tcp_peer_t *p, int idx,
                           const uint8_t offer[WF_TCP_OFFER_LEN])
{
    uint64_t pid = wf_tcp_get64(offer), addr = wf_tcp_get64(offer + 8);
    int err;

    if (!ctx->cma_min || idx != 0 || pid == 0 || pid > INT32_MAX)
        return false; /* off here, or nothing offered */
    if (wf_tcp_get64(offer + 24) != wf_node_key()) {
        WEFT_DEBUG(NET, "tcp: peer %d is on another machine: no single-copy "
                   "path", p->rank);
        return false;
    }
    err = wf_cma_probe((pid_t)pid, addr, wf_tcp_get64(offer + 16));
    if (err) {
        /* Info: a user who expects the fast path on one machine must be
         * able to see why it is not taken (a container without
         * CAP_SYS_PTRACE, Yama ptrace_scope, another pid namespace). */
        WEFT_INFO(NET, "tcp: peer %d: no single-copy path (process_vm_readv "
                  "of pid %d: %s); its large messages come through the "
                  "socket", p->rank, (int)pid, wf_errno_str(err));
        return false;
    }
    p->cma_pid = (int)pid;
    p->cma_readable = true;
    WEFT_DEBUG(NET, "tcp: peer %d: single-copy reads from pid %d", p->rank,
               (int)pid);
    return true;
}

void wf_tcp_cma_peer_reads(wf_tctx_t *ctx, wf_tcp_peer_t *p, int idx,
                           uint64_t reads)
{
    if (idx == 0)
        p->cma_ok = ctx->cma_min > 0 && reads == 1;
}

bool wf_tcp_cma_sends(const wf_tctx_t *ctx, const wf_tcp_peer_t *p,
                      size_t len)
{
    return p->cma_ok && ctx->cma_min && len >= ctx->cma_min;
}

bool wf_tcp_send_pulled(wf_tctx_t *ctx, int peer, size_t len)
{
    return ctx && peer >= 0 && peer < ctx->cfg.size &&
           peer != ctx->cfg.rank &&
           wf_tcp_cma_sends(ctx, &ctx->peers[peer], len);
}

bool wf_tcp_cma_queue(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_treq_t *r,
                      const uint64_t sig[2])
{
    if (!wf_tcp_cma_sends(ctx, p, r->m.len))
        return false;
    r->cma_seq = p->cma_send_seq++;
    wf_tcp_put64(r->cma_trailer, (uint64_t)(uintptr_t)r->m.buf);
    wf_tcp_put64(r->cma_trailer + 8, r->cma_seq);
    wf_tcp_unit_init(&r->unit0, r, WF_TCP_CMA_RTS_MAGIC, r->m.tag,
                     sig ? sig[0] : 0, sig ? sig[1] : 0, r->m.len,
                     (const char *)r->cma_trailer, WF_TCP_CMA_TRAILER);
    r->units_left = 1;
    r->cma_wait = true;
    r->next = p->cma_sends;
    p->cma_sends = r;
    wf_tcp_unit_queue(&p->streams[0], &r->unit0);
    return true;
}

/* The FIN of a failed read, written at once when nothing else is queued
 * on stream 0: the peer is failed right after, and without it the sender
 * would only see the connection close, not why. */
static void fin_failed_now(wf_tcp_peer_t *p, uint64_t seq, int err)
{
    wf_tcp_stream_t *s0 = &p->streams[0];
    uint8_t fin[WF_TCP_HDR_LEN] = {0};

    if (s0->sendq || s0->fd < 0)
        return; /* a frame is half written: the FIN cannot cut in */
    wf_tcp_put64(fin, WF_TCP_CMA_FIN_MAGIC);
    wf_tcp_put64(fin + 8, seq);
    wf_tcp_put64(fin + 16, (uint64_t)err);
    /* Best effort, and 40 bytes into an idle socket's buffer fit. */
    if (send(s0->fd, fin, sizeof(fin), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        WEFT_DEBUG(NET, "tcp: %s: FIN not sent: %s", p->desc,
                   wf_errno_str(errno));
}

/* Reads `n` bytes of the RTS's message into dst and queues the FIN; false
 * (the peer failed) when the read fails. */
static bool rts_read(wf_tctx_t *ctx, wf_tcp_peer_t *p, char *dst, size_t n,
                     uint64_t addr, uint64_t seq)
{
    int err = n ? wf_cma_read(p->cma_pid, dst, addr, n) : 0;

    if (err) {
        fin_failed_now(p, seq, err);
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "single-copy read of %zu bytes from pid %d "
                         "failed: %s",
                         n, (int)p->cma_pid, wf_errno_str(err));
        return false;
    }
    p->cma_bytes_read += n;
    return control_queue(ctx, p, WF_TCP_CMA_FIN_MAGIC, seq, 0, 0, 0);
}

/* The trailer of an RTS is in: read the message into a posted receive;
 * else keep the RTS as an unexpected message whose payload is still in
 * the sender's memory.  A receive posted later reads it straight into
 * its buffer (wf_tcp_cma_claim): the common case, a receive the engine
 * posts once earlier work frees its buffer.  Only when the caller has
 * nothing else to do (WF_TCP_CMA_IDLE_CALLS calls of progress() in a row
 * that found no event and followed no post) is it read into an
 * unexpected buffer (wf_tcp_cma_flush), so that the send completes
 * without a receive, as every other send does: two ranks that each wait
 * for their send before posting the receive go on.  Each such read costs
 * a second copy and a fresh buffer, so reading at once slowed the ring
 * allreduce down, and reading on the next call still reads twice the
 * chunks that arrive while all of a ring's scratch slots are busy
 * (docs/transports.md;
 * bench/results/2026-11-24-two-fixes-from-the-sweeps.md). */
static bool rts_received(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    wf_tcp_rx_t *rx = &s->rx;
    uint64_t addr = wf_tcp_get64(rx->cma_trailer);
    uint64_t seq = wf_tcp_get64(rx->cma_trailer + 8);
    size_t len = rx->cma_len;

    if (!p->cma_readable) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "protocol error: single-copy message from a "
                           "peer this side never offered it");
        return false;
    }
    wf_mreq_t *r = wf_match_take_posted(&p->m, rx->tag);
    if (r) {
        if (!rts_read(ctx, p, r->buf, WF_MIN(len, r->len), addr, seq)) {
            wf_match_done(r, p->m.fail_status);
            return false;
        }
        wf_match_complete(r, len, rx->sig);
        return true;
    }
    wf_tcp_umsg_t *m = (wf_tcp_umsg_t *)wf_match_unexp_new_remote(
        &ctx->m, &p->m, rx->tag, rx->sig, len);
    if (!m) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                         "out of memory for an unexpected single-copy "
                         "message of %zu bytes", len);
        return false;
    }
    m->cma_addr = addr;
    m->cma_seq = seq;
    ctx->cma_pending++;
    return true;
}

void wf_tcp_cma_claim(wf_match_t *mt, wf_mmsg_t *msg, wf_mreq_t *r)
{
    wf_tctx_t *ctx = (wf_tctx_t *)(void *)mt;
    wf_tcp_peer_t *p = &ctx->peers[r->peer];
    wf_tcp_umsg_t *m = (wf_tcp_umsg_t *)msg;

    if (p->state == WF_TCP_FAILED) {
        /* Its payload never arrived: the peer is gone or unsafe to read. */
        wf_match_done(r, p->m.fail_status);
    } else if (rts_read(ctx, p, r->buf, WF_MIN(msg->len, r->len),
                        m->cma_addr, m->cma_seq)) {
        wf_match_complete(r, msg->len, msg->sig);
        /* The FIN now, not on the next progress(): the sender waits. */
        wf_tcp_flush(ctx, &p->streams[0]);
    } else {
        wf_match_done(r, p->m.fail_status);
    }
    if (ctx->cma_pending)
        ctx->cma_pending--;
    wf_match_msg_free(mt, msg);
}

/* Reads the pending message m of peer p into an unexpected buffer (one
 * the context keeps when it has one that large); false when the peer
 * failed (m is then unlinked and freed). */
static bool pending_read(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_tcp_umsg_t *m)
{
    m->m.data = wf_match_buffer(&ctx->m, m->m.len, &m->m.cap);
    if (!m->m.data) {
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                         "out of memory for an unexpected single-copy "
                         "message of %zu bytes", m->m.len);
    } else if (rts_read(ctx, p, m->m.data, m->m.len, m->cma_addr,
                        m->cma_seq)) {
        m->m.remote = false;
        m->m.complete = true;
        p->cma_buffered++;
        return true;
    }
    /* Never complete: a receive must not find and wait on it. */
    wf_match_unexp_unlink(&p->m, &m->m);
    wf_match_msg_free(&ctx->m, &m->m);
    return false;
}

void wf_tcp_cma_flush(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->cma_pending && i < ctx->cfg.size; i++) {
        wf_tcp_peer_t *p = &ctx->peers[i];
        wf_mmsg_t *next;
        for (wf_mmsg_t *m = p->m.unexp; m; m = next) {
            next = m->next;
            /* A failed peer's stays: a receive gets its failure. */
            if (m->remote && p->state == WF_TCP_UP &&
                !pending_read(ctx, p, (wf_tcp_umsg_t *)m))
                break; /* the peer failed */
        }
    }
    /* What is left belongs to peers that are not up (failed, or with
     * streams still connecting): its receive reads it when posted
     * (wf_tcp_cma_claim).  Counting it would keep progress() reporting
     * work, and the engine spinning, until then. */
    ctx->cma_pending = 0;
}

/* FIN from the reader: the send with that sequence number is done. */
static bool fin_received(wf_tctx_t *ctx, wf_tcp_stream_t *s, const uint8_t *h)
{
    wf_tcp_peer_t *p = s->peer;
    uint64_t seq = wf_tcp_get64(h + 8), err = wf_tcp_get64(h + 16);
    wf_treq_t **pp = &p->cma_sends;

    while (*pp && (*pp)->cma_seq != seq)
        pp = &(*pp)->next;
    wf_treq_t *r = *pp;
    if (!r || r->units_left) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "protocol error: FIN for unknown single-copy "
                           "message %llu", (unsigned long long)seq);
        return false;
    }
    *pp = r->next;
    r->next = NULL;
    r->cma_wait = false;
    if (err) {
        wf_match_done(&r->m, WEFT_ERR_REMOTE);
        wf_tcp_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "the peer could not read a single-copy message of "
                         "%zu bytes: %s",
                         r->m.len, wf_errno_str((int)err));
        return false;
    }
    wf_match_sent(&r->m);
    return true;
}

int wf_tcp_cma_header(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    const uint8_t *h = s->rx.hdr;
    uint64_t magic = wf_tcp_get64(h);
    wf_tcp_rx_t *rx = &s->rx;

    switch (magic) {
    case WF_TCP_CMA_FIN_MAGIC:
        return fin_received(ctx, s, h);
    case WF_TCP_CMA_RTS_MAGIC:
        /* The 40-byte header's length is the message's; the bytes that
         * follow on the stream are the trailer only. */
        rx->tag = wf_tcp_get64(h + 8);
        rx->sig[0] = wf_tcp_get64(h + 16);
        rx->sig[1] = wf_tcp_get64(h + 24);
        rx->cma_len = (size_t)wf_tcp_get64(h + 32);
        rx->len = rx->dst_len = WF_TCP_CMA_TRAILER;
        rx->dst = (char *)rx->cma_trailer;
        rx->got = 0;
        rx->in_payload = true;
        rx->cma = true;
        return 1;
    default:
        return -1; /* not ours */
    }
}

bool wf_tcp_cma_trailer_done(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    return rts_received(ctx, s);
}

void wf_tcp_cma_fail(wf_tcp_peer_t *p, weft_status_t st)
{
    while (p->cma_sends) {
        wf_treq_t *r = p->cma_sends;
        p->cma_sends = r->next;
        r->cma_wait = false;
        r->next = NULL;
        wf_match_done(&r->m, st);
    }
}

weft_status_t wf_tcp_cma_stats(wf_tctx_t *ctx, int peer, uint64_t *read,
                               uint64_t *buffered, bool *readable, bool *ok)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size)
        return WEFT_ERR_INVALID_ARG;
    *read = ctx->peers[peer].cma_bytes_read;
    if (buffered)
        *buffered = ctx->peers[peer].cma_buffered;
    *readable = ctx->peers[peer].cma_readable;
    *ok = ctx->peers[peer].cma_ok;
    return WEFT_OK;
}

weft_status_t wf_tcp_cma_init(wf_tctx_t *ctx)
{
    if (!ctx->cma_min)
        return WEFT_OK;
    wf_cma_allow_readers();
    /* Random, so that a process that happens to have the peer's pid in
     * another pid namespace (or on another machine) cannot pass. */
    return wf_auth_random(&ctx->cma_cookie, sizeof(ctx->cma_cookie));
}
