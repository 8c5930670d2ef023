/*
 * ib_recv.c - the receive side of a verbs peer: tag matching, unexpected
 * messages, and fragments that arrive on any of the peer's QPs, placed by
 * their offset (the protocol is described in ib.h).
 *
 * Matching follows the TCP transport's rules: per peer, posted receives and
 * unexpected messages are FIFO lists, and for a given tag at most one of
 * the two is non-empty, so the first match in either is the oldest.
 * Headers all arrive on QP 0, in send order, so matching is decided in
 * send order whatever the QP count.
 */
#include <stdlib.h>
#include <string.h>

#include "ib.h"

/* ---- matching ---------------------------------------------------------- */

void wf_ib_recv_finish(wf_treq_t *r, size_t len, const uint64_t sig[2])
{
    r->info.len = len;
    r->info.sig[0] = sig[0];
    r->info.sig[1] = sig[1];
    r->info.truncated = len > r->len;
    wf_ib_req_finish(r, WEFT_OK);
}

void wf_ib_unexp_deliver(wf_treq_t *r, wf_ib_umsg_t *m)
{
    if (m->len && r->len)
        memcpy(r->buf, m->data, WF_MIN(m->len, r->len));
    wf_ib_recv_finish(r, m->len, m->sig);
    free(m);
}

/* Removes and returns the oldest posted receive for `tag`. */
static wf_treq_t *posted_take(wf_ib_peer_t *p, uint64_t tag)
{
    wf_treq_t **link = &p->posted, *prev = NULL;

    for (; *link; prev = *link, link = &(*link)->next) {
        wf_treq_t *r = *link;
        if (r->tag != tag)
            continue;
        *link = r->next;
        if (p->posted_tail == r)
            p->posted_tail = prev;
        r->next = NULL;
        return r;
    }
    return NULL;
}

/* Removes and returns the oldest unexpected message for `tag`. */
wf_ib_umsg_t *wf_ib_unexp_take(wf_ib_peer_t *p, uint64_t tag)
{
    wf_ib_umsg_t **link = &p->unexp, *prev = NULL;

    for (; *link; prev = *link, link = &(*link)->next) {
        wf_ib_umsg_t *m = *link;
        if (m->tag != tag)
            continue;
        *link = m->next;
        if (p->unexp_tail == m)
            p->unexp_tail = prev;
        m->next = NULL;
        return m;
    }
    return NULL;
}

void wf_ib_unexp_unlink(wf_ib_peer_t *p, wf_ib_umsg_t *m)
{
    wf_ib_umsg_t **link = &p->unexp, *prev = NULL;

    while (*link && *link != m) {
        prev = *link;
        link = &(*link)->next;
    }
    if (!*link)
        return;
    *link = m->next;
    if (p->unexp_tail == m)
        p->unexp_tail = prev;
    m->next = NULL;
}

/* Keeps a message that no receive wants yet; NULL (peer failed) when out
 * of memory. */
static wf_ib_umsg_t *unexp_new(wf_tctx_t *ctx, wf_ib_peer_t *p, uint64_t tag,
                               const uint64_t sig[2], size_t len)
{
    wf_ib_umsg_t *m = malloc(sizeof(*m) + len);

    if (!m) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                        "out of memory for an unexpected message of %zu "
                        "bytes",
                        len);
        return NULL;
    }
    *m = (wf_ib_umsg_t){.tag = tag, .sig = {sig[0], sig[1]}, .len = len};
    *(p->unexp_tail ? &p->unexp_tail->next : &p->unexp) = m;
    p->unexp_tail = m;
    ctx->unexp_arrivals++;
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

static void rx_done(wf_ib_peer_t *p, wf_ib_rx_t *rx)
{
    if (rx->req) {
        wf_ib_recv_finish(rx->req, rx->len, rx->sig);
    } else if (rx->umsg) {
        rx->umsg->complete = true;
        if (rx->umsg->waiter)
            wf_ib_unexp_deliver(rx->umsg->waiter, rx->umsg);
    }
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
    rx->req = posted_take(p, rx->tag);
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
        rx_done(p, rx);
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
    pl->req = posted_take(p, pl->tag);
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

/* ---- failure ----------------------------------------------------------- */

/* A message in progress is lost; its receive fails, its unexpected
 * buffer goes (complete ones stay deliverable). */
static void rx_fail(wf_ib_peer_t *p, wf_ib_rx_t *rx, weft_status_t st)
{
    if (rx->req)
        wf_ib_req_finish(rx->req, st);
    if (rx->umsg) {
        wf_ib_umsg_t *m = rx->umsg;
        if (m->waiter)
            wf_ib_req_finish(m->waiter, st); /* claimed: in no list */
        else
            wf_ib_unexp_unlink(p, m);
        free(m);
    }
    memset(rx, 0, sizeof(*rx));
}

void wf_ib_rx_fail_all(wf_ib_peer_t *p, weft_status_t st)
{
    for (unsigned i = 0; p->rx && i < p->rx_cap; i++)
        if (p->rx[i].in_msg)
            rx_fail(p, &p->rx[i], st);
    p->rx_busy = 0;
    p->nheld = 0;
}
