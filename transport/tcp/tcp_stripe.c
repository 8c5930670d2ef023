/*
 * tcp_stripe.c - several streams per peer (WEFT_TCP_STREAMS): cutting
 * large messages into pieces on the sending side, placing pieces on the
 * receiving side, and per-stream counters.
 *
 * Every message header goes on stream 0, in post order, so tag matching
 * is exactly what it is with one stream.  A message of at least
 * ctx->stripe_min bytes is sent as a striped header (stream 0, no payload)
 * followed by up to nstreams pieces, piece i on stream i, each with its
 * message's sequence number and offset.  The receiver matches the striped
 * header like any frame (posted receive or unexpected buffer) and then
 * places pieces at their offsets, whatever the order in which the streams
 * deliver them.
 *
 * A piece can arrive before its header (stream 0 may be busy with earlier
 * frames).  Its stream then waits: it stops reading (EPOLLIN is dropped so
 * level-triggered epoll does not spin) until stream 0 delivers the header.
 * Stream 0 never waits - its own pieces come after their headers - so the
 * wait always ends, and the bytes stay in the kernel meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp.h"

/* Pieces are cut at multiples of this (cache lines), so the copies of
 * reductions that follow stay aligned. */
#define WF_TCP_PIECE_ALIGN 64u

void wf_tcp_unit_init(wf_tcp_sunit_t *u, wf_treq_t *r, uint64_t magic,
                      uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4,
                      const char *buf, size_t len)
{
    u->next = NULL;
    u->req = r;
    u->buf = buf;
    u->len = len;
    u->done = 0;
    wf_tcp_put64(u->hdr, magic);
    wf_tcp_put64(u->hdr + 8, w1);
    wf_tcp_put64(u->hdr + 16, w2);
    wf_tcp_put64(u->hdr + 24, w3);
    wf_tcp_put64(u->hdr + 32, w4);
}

void wf_tcp_unit_queue(wf_tcp_stream_t *s, wf_tcp_sunit_t *u)
{
    if (s->sendq_tail)
        s->sendq_tail->next = u;
    else
        s->sendq = u;
    s->sendq_tail = u;
}

bool wf_tcp_stripe_queue(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_treq_t *r,
                         const uint64_t sig[2])
{
    uint64_t s0 = sig ? sig[0] : 0, s1 = sig ? sig[1] : 0;
    uint64_t rates[WF_TCP_STREAMS_MAX];
    size_t len = r->m.len, piece[WF_TCP_STREAMS_MAX];
    int n = wf_tcp_nstreams(p);

    if (n == 1 || len < ctx->stripe_min) {
        wf_tcp_unit_init(&r->unit0, r, WF_TCP_FRAME_MAGIC, r->m.tag, s0, s1,
                         len, r->m.buf, len);
        r->units_left = 1;
        wf_tcp_unit_queue(&p->streams[0], &r->unit0);
        return true;
    }
    /* A piece per stream, as large as its share of what the streams
     * deliver (tcp_rate.c). */
    wf_tcp_rates_refresh(p);
    for (int k = 0; k < n; k++)
        rates[k] = p->streams[k].rate;
    n = wf_tcp_stripe_cut(len, n, rates, WF_TCP_PIECE_ALIGN, piece);
    r->pieces = calloc((size_t)n, sizeof(*r->pieces));
    if (!r->pieces) {
        WEFT_WARN(NET, "tcp: out of memory for a striped send to %s",
                  p->desc);
        return false;
    }
    r->m.holds = true; /* the pieces go with the request */
    uint64_t seq = p->send_seq++;
    wf_tcp_unit_init(&r->unit0, r, WF_TCP_STRIPE_MAGIC, r->m.tag, s0, s1, len,
                     NULL, 0);
    wf_tcp_unit_queue(&p->streams[0], &r->unit0);
    int units = 1;
    size_t off = 0;
    for (int i = 0; i < n; off += piece[i++]) {
        if (!piece[i])
            continue; /* this stream's share rounded to nothing */
        wf_tcp_unit_init(&r->pieces[i], r, WF_TCP_PIECE_MAGIC, seq, off,
                         piece[i], 0, r->m.buf + off, piece[i]);
        wf_tcp_unit_queue(&p->streams[i], &r->pieces[i]);
        units++;
    }
    r->units_left = units;
    return true;
}

static void smsg_complete(wf_tctx_t *ctx, wf_tcp_peer_t *p, wf_tcp_smsg_t *m)
{
    wf_tcp_smsg_t **pp = &p->smsgs;

    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (*pp)
        *pp = m->next;
    wf_match_arrived(&ctx->m, m->req, m->umsg, m->len, m->sig);
    free(m);
}

/* Binds the piece in s->rx to its striped message: 1 when bound, 0 while
 * its header has not come, -1 (peer failed) when the piece is garbage: a
 * piece of a message already whole, or past the end of its message, must
 * fail rather than write out of bounds. */
static int piece_bind(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_rx_t *rx = &s->rx;
    uint64_t seq = wf_tcp_get64(rx->hdr + 8);
    uint64_t off = wf_tcp_get64(rx->hdr + 16), len = wf_tcp_get64(rx->hdr + 24);
    wf_tcp_smsg_t *m = s->peer->smsgs;

    while (m && m->seq != seq)
        m = m->next;
    if ((!m && seq < s->peer->recv_seq) || len == 0 ||
        (m && (off > m->len || len > m->len - off || len > m->left))) {
        wf_tcp_stream_fail(ctx, s, WEFT_ERR_TRANSPORT,
                           "protocol error: bad piece (message %llu, offset "
                           "%llu, length %llu)",
                           (unsigned long long)seq, (unsigned long long)off,
                           (unsigned long long)len);
        return -1;
    }
    if (!m)
        return 0;
    rx->waiting = false;
    rx->smsg = m;
    rx->in_payload = true;
    rx->got = 0;
    rx->len = (size_t)len;
    rx->dst = m->dst + WF_MIN((size_t)off, m->cap);
    rx->dst_len = off < m->cap ? WF_MIN(rx->len, m->cap - (size_t)off) : 0;
    return 1;
}

bool wf_tcp_piece_start(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    int bound = piece_bind(ctx, s);

    if (bound == 0) {
        s->rx.waiting = true;
        wf_tcp_stream_watch(ctx, s, s->sendq != NULL);
    }
    return bound >= 0;
}

void wf_tcp_piece_done(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_smsg_t *m = s->rx.smsg;

    m->left -= s->rx.len;
    if (m->left == 0)
        smsg_complete(ctx, s->peer, m);
}

/* Streams whose piece waited for this header read on. */
static void wake_waiting(wf_tctx_t *ctx, wf_tcp_peer_t *p)
{
    for (int k = 1; k < p->nstreams; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        if (s->rx.waiting && piece_bind(ctx, s) > 0)
            wf_tcp_stream_watch(ctx, s, s->sendq != NULL);
    }
}

bool wf_tcp_stripe_header(wf_tctx_t *ctx, wf_tcp_stream_t *s)
{
    wf_tcp_peer_t *p = s->peer;
    wf_tcp_rx_t *rx = &s->rx;
    wf_tcp_smsg_t *m = calloc(1, sizeof(*m));

    if (!m)
        goto err_nomem;
    m->seq = p->recv_seq++;
    m->len = m->left = rx->len;
    m->sig[0] = rx->sig[0];
    m->sig[1] = rx->sig[1];
    m->req = wf_match_take_posted(&p->m, rx->tag);
    if (m->req) {
        m->dst = m->req->buf;
        m->cap = WF_MIN(m->len, m->req->len);
    } else {
        /* Pieces land anywhere, so the whole buffer is needed now; the
         * peer proved the job secret, and striping needs several streams
         * (a single-stream fuzzer never gets here). */
        m->umsg = wf_match_unexp_new(&ctx->m, &p->m, rx->tag, rx->sig,
                                     m->len, m->len);
        if (!m->umsg) {
            free(m);
            goto err_nomem;
        }
        m->dst = m->umsg->data;
        m->cap = m->len;
    }
    m->next = p->smsgs;
    p->smsgs = m;
    if (m->left == 0)
        smsg_complete(ctx, p, m);
    else
        wake_waiting(ctx, p);
    return true;
err_nomem:
    wf_tcp_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                     "out of memory for a striped message of %zu bytes",
                     rx->len);
    return false;
}

void wf_tcp_stripe_fail(wf_tctx_t *ctx, wf_tcp_peer_t *p, weft_status_t st)
{
    while (p->smsgs) {
        wf_tcp_smsg_t *m = p->smsgs;
        p->smsgs = m->next;
        wf_match_drop(&ctx->m, &p->m, m->req, m->umsg, st);
        free(m);
    }
}

static void sock_name(int fd, bool peer, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
                  : getsockname(fd, (struct sockaddr *)&ss, &len);

    if (fd < 0 || rc != 0) {
        out[0] = '\0';
        return;
    }
    wf_tcp_format_addr((struct sockaddr *)&ss, out, size);
}

weft_status_t wf_tcp_stream_stats(wf_tctx_t *ctx, int peer, int idx,
                                  uint64_t *out, uint64_t *in, char *local,
                                  char *remote, size_t size)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size || idx < 0 ||
        idx >= ctx->max_streams)
        return WEFT_ERR_INVALID_ARG;
    const wf_tcp_stream_t *s = &ctx->peers[peer].streams[idx];
    *out = s->bytes_out;
    *in = s->bytes_in;
    if (local)
        sock_name(s->fd, false, local, size);
    if (remote)
        sock_name(s->fd, true, remote, size);
    return WEFT_OK;
}

void wf_tcp_stream_log(wf_tctx_t *ctx)
{
    char local[80], remote[80];
    uint64_t out = 0, in = 0;

    wf_log_setup();
    if (!WF_LOG_ENABLED_(WEFT_LOG_DEBUG, WF_SUBSYS_NET))
        return;
    for (int i = 0; i < ctx->cfg.size; i++) {
        for (int k = 0; k < ctx->max_streams; k++) {
            wf_tcp_stream_stats(ctx, i, k, &out, &in, local, remote,
                                sizeof(local));
            if (!out && !in)
                continue;
            WEFT_DEBUG(NET, "tcp: %s stream %d %s -> %s: %llu bytes sent, "
                       "%llu received", ctx->peers[i].desc, k,
                       local[0] ? local : "-", remote[0] ? remote : "-",
                       (unsigned long long)out, (unsigned long long)in);
        }
        const wf_tcp_peer_t *p = &ctx->peers[i];
        if (p->cma_bytes_read)
            WEFT_DEBUG(NET, "tcp: %s: %llu bytes read from its memory, "
                       "%llu messages of them before a receive claimed "
                       "them", p->desc, (unsigned long long)p->cma_bytes_read,
                       (unsigned long long)p->cma_buffered);
    }
}
