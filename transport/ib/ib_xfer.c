/*
 * ib_xfer.c - moving messages over a peer's QPs: isend/irecv/test, cutting
 * messages into fragments striped over the QPs, reassembly by offset, tag
 * matching, unexpected messages and credits (the protocol is described in
 * ib.h).
 *
 * Matching follows the TCP transport's rules: per peer, posted receives and
 * unexpected messages are FIFO lists, and for a given tag at most one of
 * the two is non-empty, so the first match in either is the oldest.
 */
#include <stdlib.h>
#include <string.h>

#include "ib.h"

/* ---- requests ---------------------------------------------------------- */

static wf_treq_t *req_new(wf_tctx_t *ctx, wf_ib_req_kind_t kind, int peer,
                          uint64_t tag, const void *buf, size_t len)
{
    wf_treq_t *r = calloc(1, sizeof(*r));

    if (!r) {
        WEFT_WARN(NET, "ib: out of memory for a request to %s",
                  ctx->peers[peer].desc);
        return NULL;
    }
    *r = (wf_treq_t){.kind = kind, .peer = peer, .tag = tag,
                     .buf = (char *)buf, .len = len,
                     .status = WEFT_INPROGRESS, .all_next = ctx->all};
    if (ctx->all)
        ctx->all->all_prev = r;
    ctx->all = r;
    return r;
}

static void req_release(wf_tctx_t *ctx, wf_treq_t *r)
{
    *(r->all_prev ? &r->all_prev->all_next : &ctx->all) = r->all_next;
    if (r->all_next)
        r->all_next->all_prev = r->all_prev;
    free(r);
}

static void req_finish(wf_treq_t *r, weft_status_t st)
{
    r->next = NULL;
    r->status = st;
}

/* Completes a receive with a message of `len` bytes. */
static void recv_finish(wf_treq_t *r, size_t len, const uint64_t sig[2])
{
    r->info.len = len;
    r->info.sig[0] = sig[0];
    r->info.sig[1] = sig[1];
    r->info.truncated = len > r->len;
    req_finish(r, WEFT_OK);
}

static void unexp_deliver(wf_treq_t *r, wf_ib_umsg_t *m)
{
    if (m->len && r->len)
        memcpy(r->buf, m->data, WF_MIN(m->len, r->len));
    recv_finish(r, m->len, m->sig);
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
static wf_ib_umsg_t *unexp_take(wf_ib_peer_t *p, uint64_t tag)
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

static weft_status_t peer_get(wf_tctx_t *ctx, int peer, wf_ib_peer_t **out)
{
    if (peer < 0 || peer >= ctx->cfg.size || peer == ctx->cfg.rank) {
        WEFT_WARN(NET, "ib: invalid peer %d (rank %d of %d)", peer,
                  ctx->cfg.rank, ctx->cfg.size);
        return WEFT_ERR_INVALID_ARG;
    }
    *out = &ctx->peers[peer];
    if ((*out)->state == WF_IB_IDLE) {
        WEFT_WARN(NET, "ib: %s used before connect()", (*out)->desc);
        return WEFT_ERR_INVALID_USAGE;
    }
    return WEFT_OK;
}

weft_status_t wf_ib_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                          const uint64_t sig[2], const void *buf, size_t len,
                          void *mh, wf_treq_t **req)
{
    wf_ib_peer_t *p;
    wf_treq_t *r;

    (void)mh; /* payloads go through the staging slots */
    if (!ctx || !req || (!buf && len))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(peer_get(ctx, peer, &p));
    if (p->state == WF_IB_FAILED)
        return wf_ib_peer_failed(p);
    r = req_new(ctx, WF_IB_REQ_SEND, peer, tag, buf, len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    r->sig[0] = sig ? sig[0] : 0;
    r->sig[1] = sig ? sig[1] : 0;
    *(p->sendq_tail ? &p->sendq_tail->next : &p->sendq) = r;
    p->sendq_tail = r;
    if (p->state == WF_IB_UP)
        wf_ib_pump(ctx, p);
    *req = r;
    return WEFT_OK;
}

weft_status_t wf_ib_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                          size_t cap, void *mh, wf_treq_t **req)
{
    wf_ib_peer_t *p;
    wf_ib_umsg_t *m;
    wf_treq_t *r;

    (void)mh;
    if (!ctx || !req || (!buf && cap))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(peer_get(ctx, peer, &p));
    /* Messages that arrived before the peer failed are still delivered. */
    m = unexp_take(p, tag);
    if (!m && p->state == WF_IB_FAILED)
        return wf_ib_peer_failed(p);
    r = req_new(ctx, WF_IB_REQ_RECV, peer, tag, buf, cap);
    if (!r) {
        free(m);
        return WEFT_ERR_NO_MEMORY;
    }
    if (m && m->complete) {
        unexp_deliver(r, m);
    } else if (m) {
        m->waiter = r; /* the rest of it is still arriving */
    } else {
        *(p->posted_tail ? &p->posted_tail->next : &p->posted) = r;
        p->posted_tail = r;
    }
    *req = r;
    return WEFT_OK;
}

weft_status_t wf_ib_test(wf_tctx_t *ctx, wf_treq_t *req, wf_treq_info_t *info)
{
    weft_status_t st;

    if (!ctx || !req)
        return WEFT_ERR_INVALID_ARG;
    st = req->status;
    if (st == WEFT_INPROGRESS)
        return st;
    if (st == WEFT_OK && info)
        *info = req->info;
    req_release(ctx, req);
    return st;
}

/* ---- sending ----------------------------------------------------------- */

static uint64_t credit_limit(const wf_ib_peer_t *p, const wf_ib_qp_t *q)
{
    uint64_t granted = *q->credit_in; /* the peer's posted receives */

    return granted > p->nrecv ? granted : p->nrecv;
}

/* Copies the next fragment of `r` into slot `slot` of `q`: the fragment
 * header, on the first fragment the message header, then payload; returns
 * its length. */
static size_t stage(wf_ib_peer_t *p, wf_ib_qp_t *q, wf_treq_t *r,
                    unsigned slot)
{
    uint8_t *dst = (uint8_t *)q->send + (size_t)slot * WF_IB_SLOT_LEN;
    size_t n = WF_IB_FRAG_LEN, chunk;
    uint16_t flags = 0;

    if (!r->started) {
        r->seq = p->tx_seq++;
        flags = WF_IB_FRAG_FIRST;
        wf_ib_put64(dst + n, WF_IB_FRAME_MAGIC);
        wf_ib_put64(dst + n + 8, r->tag);
        wf_ib_put64(dst + n + 16, r->sig[0]);
        wf_ib_put64(dst + n + 24, r->sig[1]);
        wf_ib_put64(dst + n + 32, r->len);
        n += WF_IB_HDR_LEN;
        r->started = true;
    }
    wf_ib_put32(dst, r->seq);
    dst[4] = (uint8_t)(WF_IB_FRAG_MAGIC & 0xff);
    dst[5] = (uint8_t)(WF_IB_FRAG_MAGIC >> 8);
    dst[6] = (uint8_t)flags;
    dst[7] = 0;
    wf_ib_put64(dst + 8, r->staged);
    chunk = WF_MIN(r->len - r->staged, WF_IB_SLOT_LEN - n);
    if (chunk)
        memcpy(dst + n, r->buf + r->staged, chunk);
    r->staged += chunk;
    return n + chunk;
}

static weft_status_t post_send(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                               unsigned slot, size_t len)
{
    wf_ib_qp_t *q = &p->qp[qi];
    struct ibv_sge sge = {
        .addr = (uintptr_t)(q->send + (size_t)slot * WF_IB_SLOT_LEN),
        .length = (uint32_t)len,
        .lkey = p->b.mr->lkey};
    struct ibv_send_wr wr = {
        .wr_id = wf_ib_wrid(p->rank, qi, WF_IB_WR_SEND, slot),
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = IBV_WR_SEND,
        .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad = NULL;
    int err = ibv_post_send(q->qp, &wr, &bad);

    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_send (SEND of %zu bytes) on QP 0x%x (%d of "
                        "%d) failed: %s",
                        len, q->qp->qp_num, qi + 1, p->nqp,
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    q->sends_posted++;
    return WEFT_OK;
}

/* The QP for the next fragment, or -1.  A message's first fragment goes
 * on QP 0 (headers arrive in send order), the others on the first QP from
 * tx_next with a free staging slot and a credit.  Each QP's credit word is
 * read once here, and *short_credit says whether some QP was refused on
 * that read: the caller stalls on exactly the reads that refused. */
static int pick_qp(wf_ib_peer_t *p, bool first, bool *short_credit)
{
    int n = first ? 1 : p->nqp;

    *short_credit = false;
    for (int k = 0; k < n; k++) {
        int qi = first ? 0 : (p->tx_next + k) % p->nqp;
        wf_ib_qp_t *q = &p->qp[qi];
        if (q->sends_posted - q->sends_done >= p->nsend)
            continue; /* a completion will call the pump */
        if (q->sends_posted >= credit_limit(p, q)) {
            *short_credit = true;
            continue;
        }
        return qi;
    }
    return -1;
}

/* Out of staging slots, a SEND completion calls this again; out of
 * credits, the peer stalls and the timer calls it again.  The peer's credit
 * write lands in a QP's credit_in at any moment, so one read decides both
 * whether to send on that QP and whether to stall: deciding to stop on one
 * read and not to stall on a later, larger one left a send with nothing in
 * flight and no timer, and nothing ever posted it (the allreduce_procs_n3
 * hang; test/transport/ib_credit.c).  With several QPs the pump stops only
 * when every QP it may use is either waiting for a completion or was
 * refused on its one read, and it stalls when any was refused. */
void wf_ib_pump(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    while (p->state == WF_IB_UP && p->sendq) {
        wf_treq_t *r = p->sendq;
        bool short_credit;
        int qi = pick_qp(p, !r->started, &short_credit);
        wf_ib_qp_t *q;
        unsigned slot;
        size_t n;

        if (qi < 0) {
            if (short_credit)
                wf_ib_stall(ctx, p);
            return;
        }
        q = &p->qp[qi];
        slot = (unsigned)(q->sends_posted % p->nsend);
        n = stage(p, q, r, slot);
        if (post_send(ctx, p, qi, slot, n) < 0)
            return;
        p->tx_next = (qi + 1) % p->nqp;
        q->slot_req[slot] = r;
        r->frags_out++;
        if (r->staged < r->len)
            continue;
        /* Staged in full: it completes when its last fragment does. */
        p->sendq = r->next;
        if (!p->sendq)
            p->sendq_tail = NULL;
        r->next = NULL;
    }
}

void wf_ib_on_send_done(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                        unsigned slot)
{
    wf_ib_qp_t *q = &p->qp[qi];
    wf_treq_t *r = q->slot_req[slot];

    q->sends_done++;
    q->slot_req[slot] = NULL;
    /* A send leaves the queue once staged in full, and only then may its
     * last completion finish it. */
    if (r && --r->frags_out == 0 && r->staged == r->len) {
        r->info.len = r->len;
        req_finish(r, WEFT_OK);
    }
    wf_ib_pump(ctx, p);
}

/* ---- credits ----------------------------------------------------------- */

void wf_ib_credit_flush(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi)
{
    wf_ib_qp_t *q = &p->qp[qi];
    uint64_t due = q->recvs_posted - q->credit_sent;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad = NULL;
    int err;

    if (p->state == WF_IB_FAILED || !q->qp || due < p->credit_batch ||
        q->credit_writes >= WF_IB_CREDIT_WRITES)
        return;
    /* Later writes carry larger values, so one overtaking another's read
     * of this word is harmless. */
    *q->credit_out = q->recvs_posted;
    sge = (struct ibv_sge){.addr = (uintptr_t)q->credit_out,
                           .length = sizeof(uint64_t),
                           .lkey = p->b.mr->lkey};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wf_ib_wrid(p->rank, qi, WF_IB_WR_CREDIT, 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = q->rcredit_addr;
    wr.wr.rdma.rkey = p->rcredit_rkey;
    err = ibv_post_send(q->qp, &wr, &bad);
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_send (credit write) on QP 0x%x (%d of %d) "
                        "failed: %s",
                        q->qp->qp_num, qi + 1, p->nqp, wf_errno_str(err));
        return;
    }
    q->credit_sent = q->recvs_posted;
    q->credit_writes++;
}

/* ---- receiving --------------------------------------------------------- */

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
        recv_finish(rx->req, rx->len, rx->sig);
    } else if (rx->umsg) {
        rx->umsg->complete = true;
        if (rx->umsg->waiter)
            unexp_deliver(rx->umsg->waiter, rx->umsg);
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
    rx->umsg = malloc(sizeof(*rx->umsg) + rx->len);
    if (!rx->umsg) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                        "out of memory for an unexpected message of %zu "
                        "bytes",
                        rx->len);
        return NULL;
    }
    *rx->umsg = (wf_ib_umsg_t){.tag = rx->tag, .sig = {rx->sig[0], rx->sig[1]},
                               .len = rx->len};
    *(p->unexp_tail ? &p->unexp_tail->next : &p->unexp) = rx->umsg;
    p->unexp_tail = rx->umsg;
    ctx->unexp_arrivals++;
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
    if (first) {
        if (qi != 0 || seq != p->rx_next || off != 0 ||
            len < WF_IB_FRAG_LEN + WF_IB_HDR_LEN) {
            wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                            "protocol error: header of message %u on QP %d "
                            "where message %u was due on QP 1",
                            seq, qi + 1, p->rx_next);
            return WF_IB_RX_ERR;
        }
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

static void fail_list(wf_treq_t *r, weft_status_t st)
{
    while (r) {
        wf_treq_t *next = r->next;
        req_finish(r, st);
        r = next;
    }
}

/* A message in progress is lost; its receive fails, its unexpected
 * buffer goes (complete ones stay deliverable). */
static void rx_fail(wf_ib_peer_t *p, wf_ib_rx_t *rx, weft_status_t st)
{
    if (rx->req)
        req_finish(rx->req, st);
    if (rx->umsg) {
        wf_ib_umsg_t *m = rx->umsg;
        if (m->waiter) {
            req_finish(m->waiter, st); /* claimed: in no list */
        } else {
            wf_ib_umsg_t **link = &p->unexp, *prev = NULL;
            while (*link != m) {
                prev = *link;
                link = &(*link)->next;
            }
            *link = m->next;
            if (p->unexp_tail == m)
                p->unexp_tail = prev;
        }
        free(m);
    }
    memset(rx, 0, sizeof(*rx));
}

void wf_ib_xfer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    weft_status_t st = p->fail_status;

    (void)ctx;
    fail_list(p->sendq, st);
    p->sendq = p->sendq_tail = NULL;
    for (int i = 0; i < p->nqp; i++) {
        wf_ib_qp_t *q = &p->qp[i];
        for (unsigned s = 0; s < WF_IB_SEND_SLOTS; s++) {
            /* A striped send owns several slots: finish it once. */
            if (q->slot_req[s] && q->slot_req[s]->status == WEFT_INPROGRESS)
                req_finish(q->slot_req[s], st);
            q->slot_req[s] = NULL;
        }
    }
    fail_list(p->posted, st);
    p->posted = p->posted_tail = NULL;
    for (unsigned i = 0; p->rx && i < p->rx_cap; i++)
        if (p->rx[i].in_msg)
            rx_fail(p, &p->rx[i], st);
    p->rx_busy = 0;
    p->nheld = 0;
}

void wf_ib_xfer_free_all(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_ib_peer_t *p = &ctx->peers[i];
        for (unsigned k = 0; p->rx && k < p->rx_cap; k++)
            if (p->rx[k].umsg && p->rx[k].umsg->waiter)
                free(p->rx[k].umsg);
        while (p->unexp) {
            wf_ib_umsg_t *m = p->unexp;
            p->unexp = m->next;
            free(m);
        }
        p->unexp_tail = NULL;
        free(p->rx);
        free(p->held);
        p->rx = NULL;
        p->held = NULL;
        p->rx_busy = p->nheld = 0;
    }
    while (ctx->all)
        req_release(ctx, ctx->all);
}
