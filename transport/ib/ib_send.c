/*
 * ib_send.c - the sending direction over a peer's QPs: isend, cutting
 * messages into fragments striped over the QPs, and the credits that
 * let a sender post (the protocol is described in ib_wire.h; the receive
 * side is in ib_recv.c, matching in transport/match.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ib.h"

void wf_ib_req_release(wf_match_t *m, wf_mreq_t *r)
{
    wf_treq_t *t = (wf_treq_t *)r;

    /* A rendezvous send's registration lives as long as its request. */
    wf_ib_mem_dereg((wf_tctx_t *)(void *)m, t->mh);
    t->mh = NULL;
}

weft_status_t wf_ib_peer_get(wf_tctx_t *ctx, int peer, wf_ib_peer_t **out)
{
    WEFT_CHECK(wf_match_peer_check(&ctx->m, peer));
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

    if (!ctx || !req || (!buf && len))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_ib_peer_get(ctx, peer, &p));
    if (p->state == WF_IB_FAILED)
        return wf_match_peer_failed(&ctx->m, &p->m);
    r = (wf_treq_t *)wf_match_req_new(&ctx->m, sizeof(*r), peer, tag, buf,
                                      len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    r->sig[0] = sig ? sig[0] : 0;
    r->sig[1] = sig ? sig[1] : 0;
    wf_ib_rndv_send_prepare(ctx, p, r, mh);
    *(p->sendq_tail ? &p->sendq_tail->next : &p->sendq) = r;
    p->sendq_tail = r;
    if (p->state == WF_IB_UP)
        wf_ib_pump(ctx, p);
    *req = r;
    return WEFT_OK;
}

/* ---- sending ----------------------------------------------------------- */

static uint64_t credit_limit(const wf_ib_peer_t *p, const wf_ib_qp_t *q)
{
    uint64_t granted = *q->credit_in; /* the peer's posted receives */

    return granted > p->nrecv ? granted : p->nrecv;
}

static void frag_header(uint8_t *dst, uint32_t seq, uint16_t flags,
                        uint64_t off)
{
    wf_ib_put32(dst, seq);
    dst[4] = (uint8_t)(WF_IB_FRAG_MAGIC & 0xff);
    dst[5] = (uint8_t)(WF_IB_FRAG_MAGIC >> 8);
    dst[6] = (uint8_t)flags;
    dst[7] = 0;
    wf_ib_put64(dst + 8, off);
}

static uint8_t *slot_addr(wf_ib_qp_t *q, unsigned slot)
{
    return (uint8_t *)q->send + (size_t)slot * WF_IB_SLOT_LEN;
}

/* Copies the next fragment of `r` into slot `slot` of `q`: the fragment
 * header, on the first fragment the message header, then payload (or, for
 * a rendezvous send, the RTS body in place of all of it); returns its
 * length. */
static size_t stage(wf_ib_peer_t *p, wf_ib_qp_t *q, wf_treq_t *r,
                    unsigned slot)
{
    uint8_t *dst = slot_addr(q, slot);
    size_t n = WF_IB_FRAG_LEN, chunk;
    uint16_t flags = 0;
    uint64_t off = r->staged;

    if (!r->started) {
        r->seq = p->tx_seq++;
        flags = WF_IB_FRAG_FIRST;
        wf_ib_put64(dst + n, WF_IB_FRAME_MAGIC);
        wf_ib_put64(dst + n + 8, r->m.tag);
        wf_ib_put64(dst + n + 16, r->sig[0]);
        wf_ib_put64(dst + n + 24, r->sig[1]);
        wf_ib_put64(dst + n + 32, r->m.len);
        n += WF_IB_HDR_LEN;
        r->started = true;
    }
    if (r->rndv) {
        flags |= WF_IB_FRAG_RNDV;
        wf_ib_rndv_rts_put(r, dst + n);
        n += WF_IB_RTS_LEN;
        r->staged = r->m.len; /* the peer reads the payload */
    } else {
        chunk = WF_MIN(r->m.len - r->staged, WF_IB_SLOT_LEN - n);
        if (chunk)
            memcpy(dst + n, r->m.buf + r->staged, chunk);
        r->staged += chunk;
        n += chunk;
    }
    frag_header(dst, r->seq, flags, off);
    return n;
}

static weft_status_t post_send(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                               unsigned slot, size_t len)
{
    wf_ib_qp_t *q = &p->qp[qi];
    struct ibv_sge sge = {
        .addr = (uintptr_t)slot_addr(q, slot),
        .length = (uint32_t)len,
        .lkey = p->b.mr[q->rail]->lkey};
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
    q->bytes_sent += len;
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
 * flight and no timer, and nothing ever posted it (the coll_allreduce_procs_n3
 * hang; test/transport/ib_credit.c).  With several QPs the pump stops only
 * when every QP it may use is either waiting for a completion or was
 * refused on its one read, and it stalls when any was refused. */
void wf_ib_pump(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    /* FINs go first: each one lets the peer complete a send. */
    while (p->state == WF_IB_UP && (p->nfins || p->sendq)) {
        wf_treq_t *r = p->nfins ? NULL : p->sendq;
        bool short_credit;
        int qi = pick_qp(p, r && !r->started, &short_credit);
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
        if (!r) {
            frag_header(slot_addr(q, slot), p->fins[0], WF_IB_FRAG_FIN, 0);
            if (post_send(ctx, p, qi, slot, WF_IB_FRAG_LEN) < 0)
                return;
            q->slot_req[slot] = NULL;
            memmove(p->fins, p->fins + 1, --p->nfins * sizeof(*p->fins));
            p->tx_next = (qi + 1) % p->nqp;
            continue;
        }
        n = stage(p, q, r, slot);
        if (post_send(ctx, p, qi, slot, n) < 0)
            return;
        p->tx_next = (qi + 1) % p->nqp;
        q->slot_req[slot] = r;
        r->frags_out++;
        if (r->staged < r->m.len)
            continue;
        /* Staged in full: it completes when its last fragment does (and a
         * rendezvous send when the peer's FIN came too). */
        p->sendq = r->next;
        if (!p->sendq)
            p->sendq_tail = NULL;
        r->next = NULL;
        if (r->rndv)
            wf_ib_rndv_await(p, r);
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
    if (r) {
        r->frags_out--;
        wf_ib_send_maybe_done(r);
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
                           .lkey = p->b.mr[q->rail]->lkey};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wf_ib_wrid(p->rank, qi, WF_IB_WR_CREDIT, 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = q->rcredit_addr;
    wr.wr.rdma.rkey = q->rcredit_rkey;
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

/* ---- failure ----------------------------------------------------------- */

static void fail_list(wf_treq_t *r, weft_status_t st)
{
    while (r) {
        wf_treq_t *next = r->next;
        wf_ib_req_finish(r, st);
        r = next;
    }
}

void wf_ib_send_fail(wf_ib_peer_t *p, weft_status_t st)
{
    fail_list(p->sendq, st);
    p->sendq = p->sendq_tail = NULL;
    for (int i = 0; i < p->nqp; i++) {
        wf_ib_qp_t *q = &p->qp[i];
        for (unsigned s = 0; s < WF_IB_SEND_SLOTS; s++) {
            /* A striped send owns several slots: finish it once. */
            if (q->slot_req[s] &&
                q->slot_req[s]->m.status == WEFT_INPROGRESS)
                wf_ib_req_finish(q->slot_req[s], st);
            q->slot_req[s] = NULL;
        }
    }
}
