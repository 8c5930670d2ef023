/*
 * ib_recv.c - the receive side of a verbs peer: irecv, and fragments that
 * arrive on any of the peer's QPs, placed by their offset into posted
 * receives or unexpected messages (the protocol is described in
 * ib_wire.h).
 *
 * Matching is the matching layer's (transport/match.h), with the TCP
 * transport's rules.  Headers all arrive on QP 0, in send order, so
 * matching is decided in send order whatever the QP count.
 */
#include <stdlib.h>
#include <string.h>

#include "ib.h"

weft_status_t wf_ib_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                          size_t cap, void *mh, wf_treq_t **req)
{
    wf_ib_peer_t *p;
    wf_mreq_t *r = NULL;

    (void)mh;
    if (!ctx || !req || (!buf && cap))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_ib_peer_get(ctx, peer, &p));
    weft_status_t st = wf_match_irecv(&ctx->m, &p->m,
                                      p->state == WF_IB_FAILED,
                                      sizeof(wf_treq_t), peer, tag, buf, cap,
                                      &r);
    if (st < 0)
        return st;
    *req = (wf_treq_t *)r;
    return WEFT_OK;
}

/* Keeps a message that no receive wants yet, with a buffer for all of
 * it (fragments land anywhere); NULL (peer failed) when out of memory. */
static wf_mmsg_t *unexp_new(wf_tctx_t *ctx, wf_ib_peer_t *p, uint64_t tag,
                            const uint64_t sig[2], size_t len)
{
    wf_mmsg_t *m = wf_match_unexp_new(&ctx->m, &p->m, tag, sig, len, len);

    if (!m)
        wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                        "out of memory for an unexpected message of %zu "
                        "bytes",
                        len);
    return m;
}

/* ---- fragments --------------------------------------------------------- */

weft_status_t wf_ib_xfer_open(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    (void)ctx;
    /* Every message in progress has a fragment in a receive slot or is the
     * one the sender is still cutting: at most every slot + 1.  That bounds
     * their number, not the span of their numbers (QP 0 may complete any
     * number of short messages while an older one's last fragment is on
     * another QP), so entries are found by seq, not indexed by it. */
    p->rx_cap = (unsigned)p->nqp * p->nrecv + 1;
    p->rx = calloc(p->rx_cap, sizeof(*p->rx));
    p->held = calloc((size_t)p->nqp * p->nrecv, sizeof(*p->held));
    if (!p->rx || !p->held) {
        WEFT_WARN(NET, "ib: out of memory for the receive state of %s",
                  p->desc);
        return WEFT_ERR_NO_MEMORY;
    }
    return WEFT_OK;
}

static void rx_done(wf_tctx_t *ctx, wf_ib_peer_t *p, wf_ib_rx_t *rx)
{
    wf_match_arrived(&ctx->m, rx->req, rx->umsg, rx->len, rx->sig);
    memset(rx, 0, sizeof(*rx));
    p->rx_busy--;
}

/* The entry of message `seq` in progress, or with `free` a free entry. */
static wf_ib_rx_t *rx_find(wf_ib_peer_t *p, uint32_t seq, bool free)
{
    for (unsigned i = 0; i < p->rx_cap; i++) {
        wf_ib_rx_t *rx = &p->rx[i];
        if (free ? !rx->in_msg : rx->in_msg && rx->seq == seq)
            return rx;
    }
    return NULL;
}

/* A message header (first fragment, seq == rx_next): choose where the
 * payload goes. */
static wf_ib_rx_t *rx_begin(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq,
                            const uint8_t *h)
{
    wf_ib_rx_t *rx = rx_find(p, seq, true);
    uint64_t magic = wf_ib_get64(h), len = wf_ib_get64(h + 32);

    if (magic != WF_IB_FRAME_MAGIC || len > (uint64_t)PTRDIFF_MAX || !rx) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: bad message header (magic 0x%llx, "
                        "length %llu, seq %u%s)",
                        (unsigned long long)magic, (unsigned long long)len,
                        seq, rx ? "" : ", too many messages at once");
        return NULL;
    }
    *rx = (wf_ib_rx_t){.in_msg = true, .seq = seq, .tag = wf_ib_get64(h + 8),
                       .sig = {wf_ib_get64(h + 16), wf_ib_get64(h + 24)},
                       .len = (size_t)len};
    p->rx_next++;
    p->rx_busy++;
    rx->req = wf_match_take_posted(&p->m, rx->tag);
    if (rx->req) {
        rx->dst = rx->req->buf;
        rx->dst_len = WF_MIN(rx->len, rx->req->len);
        return rx;
    }
    rx->umsg = unexp_new(ctx, p, rx->tag, rx->sig, rx->len);
    if (!rx->umsg)
        return NULL;
    rx->dst = rx->umsg->data;
    rx->dst_len = rx->len;
    return rx;
}

/* Puts `len` payload bytes at `off` of the message; completes it when every
 * byte arrived.  Bytes past a truncated receive's buffer are dropped. */
static bool rx_place(wf_tctx_t *ctx, wf_ib_peer_t *p, wf_ib_rx_t *rx,
                     uint64_t off, const uint8_t *data, size_t len)
{
    if (off > rx->len || len > rx->len - off || len > rx->len - rx->got) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: fragment of %zu bytes at %llu "
                        "overruns message %u of %zu bytes (%zu received)",
                        len, (unsigned long long)off, rx->seq, rx->len,
                        rx->got);
        return false;
    }
    if (off < rx->dst_len)
        memcpy(rx->dst + off, data, WF_MIN(len, rx->dst_len - (size_t)off));
    rx->got += len;
    if (rx->got == rx->len)
        rx_done(ctx, p, rx);
    return true;
}

/* A rendezvous RTS (message `seq`, header at `h`, `len` bytes from it):
 * matched like any header, then pulled (ib_rndv.c). */
static bool rts_begin(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq,
                      const uint8_t *h, size_t len)
{
    uint64_t magic = wf_ib_get64(h), mlen = wf_ib_get64(h + 32);
    wf_ib_pull_t *pl;

    if (len != WF_IB_HDR_LEN + WF_IB_RTS_LEN || magic != WF_IB_FRAME_MAGIC ||
        mlen > (uint64_t)PTRDIFF_MAX) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: bad rendezvous header (magic "
                        "0x%llx, length %llu, %zu bytes, seq %u)",
                        (unsigned long long)magic, (unsigned long long)mlen,
                        len, seq);
        return false;
    }
    pl = calloc(1, sizeof(*pl));
    if (!pl) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                        "out of memory for a rendezvous message");
        return false;
    }
    *pl = (wf_ib_pull_t){.seq = seq, .tag = wf_ib_get64(h + 8),
                         .sig = {wf_ib_get64(h + 16), wf_ib_get64(h + 24)},
                         .len = (size_t)mlen,
                         .raddr = wf_ib_get64(h + WF_IB_HDR_LEN)};
    for (int i = 0; i < WF_IB_RAILS_MAX; i++)
        pl->rkey[i] = wf_ib_get32(h + WF_IB_HDR_LEN + 8 + 4 * i);
    p->rx_next++;
    pl->req = wf_match_take_posted(&p->m, pl->tag);
    if (!pl->req) {
        /* A receive that claims it before its reads begin gets it
         * directly (ib_rndv.c); this buffer's pages are then never
         * touched. */
        pl->umsg = unexp_new(ctx, p, pl->tag, pl->sig, pl->len);
        if (!pl->umsg) {
            free(pl);
            return false;
        }
    }
    return wf_ib_rndv_pull_add(ctx, p, pl) == WEFT_OK;
}

typedef enum { WF_IB_RX_ERR, WF_IB_RX_DONE, WF_IB_RX_HELD } wf_ib_rx_res_t;

/* Consumes one fragment of `len` bytes that arrived on QP `qi`. */
static wf_ib_rx_res_t rx_fragment(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                                  const uint8_t *data, size_t len)
{
    uint32_t seq;
    uint64_t off;
    bool first;
    wf_ib_rx_t *rx;

    if (len < WF_IB_FRAG_LEN ||
        (data[4] | (data[5] << 8)) != WF_IB_FRAG_MAGIC) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: a %zu-byte fragment on QP %d of %d "
                        "without a fragment header",
                        len, qi + 1, p->nqp);
        return WF_IB_RX_ERR;
    }
    seq = wf_ib_get32(data);
    first = data[6] & WF_IB_FRAG_FIRST;
    off = wf_ib_get64(data + 8);
    if (data[6] & WF_IB_FRAG_FIN) {
        /* Takes no message number: handled at once, on any QP. */
        wf_ib_rndv_on_fin(ctx, p, seq);
        return p->state == WF_IB_FAILED ? WF_IB_RX_ERR : WF_IB_RX_DONE;
    }
    if (first) {
        if (qi != 0 || seq != p->rx_next || off != 0 ||
            len < WF_IB_FRAG_LEN + WF_IB_HDR_LEN) {
            wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                            "protocol error: header of message %u on QP %d "
                            "where message %u was due on QP 1",
                            seq, qi + 1, p->rx_next);
            return WF_IB_RX_ERR;
        }
        if (data[6] & WF_IB_FRAG_RNDV)
            return rts_begin(ctx, p, seq, data + WF_IB_FRAG_LEN,
                             len - WF_IB_FRAG_LEN)
                       ? WF_IB_RX_DONE
                       : WF_IB_RX_ERR;
        rx = rx_begin(ctx, p, seq, data + WF_IB_FRAG_LEN);
        data += WF_IB_FRAG_LEN + WF_IB_HDR_LEN;
        len -= WF_IB_FRAG_LEN + WF_IB_HDR_LEN;
    } else {
        /* Its header, on QP 0, has not arrived yet. */
        if ((int32_t)(seq - p->rx_next) >= 0)
            return WF_IB_RX_HELD;
        rx = rx_find(p, seq, false);
        if (!rx) {
            wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                            "protocol error: fragment of message %u, which "
                            "is not arriving",
                            seq);
            return WF_IB_RX_ERR;
        }
        data += WF_IB_FRAG_LEN;
        len -= WF_IB_FRAG_LEN;
    }
    if (!rx || !rx_place(ctx, p, rx, off, data, len))
        return WF_IB_RX_ERR;
    return WF_IB_RX_DONE;
}

static const uint8_t *slot_data(const wf_ib_peer_t *p, int qi, unsigned slot)
{
    return (const uint8_t *)p->qp[qi].recv + (size_t)slot * WF_IB_SLOT_LEN;
}

/* Message `seq` began: its fragments that came early are placed and their
 * slots re-posted. */
static void release_held(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq)
{
    unsigned i = 0;

    while (i < p->nheld && p->state != WF_IB_FAILED) {
        wf_ib_held_t h = p->held[i];
        if (h.seq != seq) {
            i++;
            continue;
        }
        p->held[i] = p->held[--p->nheld];
        if (rx_fragment(ctx, p, h.qp, slot_data(p, h.qp, h.slot), h.len) !=
                WF_IB_RX_DONE ||
            wf_ib_post_recv(ctx, p, h.qp, h.slot) < 0)
            return;
        wf_ib_credit_flush(ctx, p, h.qp);
    }
}

void wf_ib_on_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi, unsigned slot,
                   size_t len)
{
    const uint8_t *data = slot_data(p, qi, slot);
    uint32_t before = p->rx_next;

    switch (rx_fragment(ctx, p, qi, data, len)) {
    case WF_IB_RX_ERR:
        return;
    case WF_IB_RX_HELD:
        /* Bounded: every held fragment occupies one of the slots. */
        p->held[p->nheld++] = (wf_ib_held_t){
            .seq = wf_ib_get32(data), .qp = (uint8_t)qi,
            .slot = (uint8_t)slot, .len = (uint32_t)len};
        return;
    case WF_IB_RX_DONE:
        break;
    }
    if (wf_ib_post_recv(ctx, p, qi, slot) < 0)
        return;
    wf_ib_credit_flush(ctx, p, qi);
    if (p->rx_next != before && p->nheld)
        release_held(ctx, p, before);
}

/* ---- failure and teardown ---------------------------------------------- */

void wf_ib_recv_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st)
{
    wf_match_fail_posted(&p->m, st);
    /* A message in progress is lost: its receive fails, its unexpected
     * buffer goes (complete ones stay deliverable). */
    for (unsigned i = 0; p->rx && i < p->rx_cap; i++) {
        wf_ib_rx_t *rx = &p->rx[i];
        if (rx->in_msg)
            wf_match_drop(&ctx->m, &p->m, rx->req, rx->umsg, st);
        memset(rx, 0, sizeof(*rx));
    }
    p->rx_busy = 0;
    p->nheld = 0;
}

void wf_ib_recv_free(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    /* A claimed, incomplete message is in no list. */
    for (unsigned k = 0; p->rx && k < p->rx_cap; k++)
        if (p->rx[k].umsg && p->rx[k].umsg->waiter)
            wf_match_msg_free(&ctx->m, p->rx[k].umsg);
    free(p->rx);
    free(p->held);
    p->rx = NULL;
    p->held = NULL;
    p->rx_busy = p->nheld = 0;
}
