/*
 * ib_xfer.c - moving messages over a peer's QP: isend/irecv/test, cutting
 * messages into fragments, reassembly, tag matching, unexpected messages
 * and credits (the protocol is described in ib.h).
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

static uint64_t credit_limit(const wf_ib_peer_t *p)
{
    uint64_t granted = *p->b.credit_in; /* the peer's posted receives */

    return granted > WF_IB_RECV_SLOTS ? granted : WF_IB_RECV_SLOTS;
}

/* Copies the next fragment of the first queued send into slot `slot`;
 * returns its length. */
static size_t stage(wf_ib_peer_t *p, wf_treq_t *r, unsigned slot)
{
    uint8_t *dst = (uint8_t *)p->b.send + (size_t)slot * WF_IB_SLOT_LEN;
    size_t n = 0, chunk;

    if (!r->started) {
        wf_ib_put64(dst, WF_IB_FRAME_MAGIC);
        wf_ib_put64(dst + 8, r->tag);
        wf_ib_put64(dst + 16, r->sig[0]);
        wf_ib_put64(dst + 24, r->sig[1]);
        wf_ib_put64(dst + 32, r->len);
        n = WF_IB_HDR_LEN;
        r->started = true;
    }
    chunk = WF_MIN(r->len - r->staged, WF_IB_SLOT_LEN - n);
    if (chunk)
        memcpy(dst + n, r->buf + r->staged, chunk);
    r->staged += chunk;
    return n + chunk;
}

static weft_status_t post_send(wf_tctx_t *ctx, wf_ib_peer_t *p, unsigned slot,
                               size_t len)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(p->b.send + (size_t)slot * WF_IB_SLOT_LEN),
        .length = (uint32_t)len,
        .lkey = p->b.mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wf_ib_wrid(p->rank, WF_IB_WR_SEND, slot),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad = NULL;
    int err = ibv_post_send(p->qp, &wr, &bad);

    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_send (SEND of %zu bytes) on QP 0x%x "
                        "failed: %s",
                        len, p->qp->qp_num, wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    p->sends_posted++;
    return WEFT_OK;
}

/* Out of staging slots, a SEND completion calls this again; out of
 * credits, the peer stalls and the timer calls it again.  The peer's credit
 * write lands in credit_in at any moment, so one read decides both whether
 * to send and whether to stall: deciding to stop on one read and not to
 * stall on a later, larger one left a send with nothing in flight and no
 * timer, and nothing ever posted it (the allreduce_procs_n3 hang;
 * test/transport/ib_credit.c). */
void wf_ib_pump(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    while (p->state == WF_IB_UP && p->sendq &&
           p->sends_posted - p->sends_done < WF_IB_SEND_SLOTS) {
        wf_treq_t *r = p->sendq;
        unsigned slot = (unsigned)(p->sends_posted % WF_IB_SEND_SLOTS);
        size_t n;

        if (p->sends_posted >= credit_limit(p)) {
            wf_ib_stall(ctx, p);
            return;
        }
        n = stage(p, r, slot);
        if (post_send(ctx, p, slot, n) < 0)
            return;
        if (r->staged < r->len)
            continue;
        /* Last fragment: the request completes with its completion. */
        p->sendq = r->next;
        if (!p->sendq)
            p->sendq_tail = NULL;
        r->next = NULL;
        p->slot_req[slot] = r;
    }
}

void wf_ib_on_send_done(wf_tctx_t *ctx, wf_ib_peer_t *p, unsigned slot)
{
    wf_treq_t *r = p->slot_req[slot];

    p->sends_done++;
    if (r) {
        p->slot_req[slot] = NULL;
        r->info.len = r->len;
        req_finish(r, WEFT_OK);
    }
    wf_ib_pump(ctx, p);
}

/* ---- credits ----------------------------------------------------------- */

void wf_ib_credit_flush(wf_tctx_t *ctx, wf_ib_peer_t *p, bool force)
{
    uint64_t due = p->recvs_posted - p->credit_sent;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad = NULL;
    int err;

    if (p->state == WF_IB_FAILED || !p->qp || due == 0 ||
        (!force && due < WF_IB_CREDIT_BATCH) ||
        p->credit_writes >= WF_IB_CREDIT_WRITES)
        return;
    /* Later writes carry larger values, so one overtaking another's read
     * of this word is harmless. */
    *p->b.credit_out = p->recvs_posted;
    sge = (struct ibv_sge){.addr = (uintptr_t)p->b.credit_out,
                           .length = sizeof(uint64_t),
                           .lkey = p->b.mr->lkey};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wf_ib_wrid(p->rank, WF_IB_WR_CREDIT, 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = p->rcredit_addr;
    wr.wr.rdma.rkey = p->rcredit_rkey;
    err = ibv_post_send(p->qp, &wr, &bad);
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_send (credit write) on QP 0x%x failed: %s",
                        p->qp->qp_num, wf_errno_str(err));
        return;
    }
    p->credit_sent = p->recvs_posted;
    p->credit_writes++;
}

/* ---- receiving --------------------------------------------------------- */

static void rx_done(wf_ib_rx_t *rx)
{
    if (rx->req) {
        recv_finish(rx->req, rx->len, rx->sig);
    } else if (rx->umsg) {
        rx->umsg->complete = true;
        if (rx->umsg->waiter)
            unexp_deliver(rx->umsg->waiter, rx->umsg);
    }
    memset(rx, 0, sizeof(*rx));
}

/* A header fragment: choose where the payload goes. */
static bool rx_begin(wf_tctx_t *ctx, wf_ib_peer_t *p, const uint8_t *h)
{
    wf_ib_rx_t *rx = &p->rx;
    uint64_t magic = wf_ib_get64(h), len = wf_ib_get64(h + 32);

    if (magic != WF_IB_FRAME_MAGIC || len > (uint64_t)PTRDIFF_MAX) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: bad fragment header (magic 0x%llx, "
                        "length %llu)",
                        (unsigned long long)magic, (unsigned long long)len);
        return false;
    }
    *rx = (wf_ib_rx_t){.in_msg = true, .tag = wf_ib_get64(h + 8),
                       .sig = {wf_ib_get64(h + 16), wf_ib_get64(h + 24)},
                       .len = (size_t)len};
    rx->req = posted_take(p, rx->tag);
    if (rx->req) {
        rx->dst = rx->req->buf;
        rx->dst_len = WF_MIN(rx->len, rx->req->len);
        return true;
    }
    rx->umsg = malloc(sizeof(*rx->umsg) + rx->len);
    if (!rx->umsg) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                        "out of memory for an unexpected message of %zu "
                        "bytes",
                        rx->len);
        return false;
    }
    *rx->umsg = (wf_ib_umsg_t){.tag = rx->tag, .sig = {rx->sig[0], rx->sig[1]},
                               .len = rx->len};
    *(p->unexp_tail ? &p->unexp_tail->next : &p->unexp) = rx->umsg;
    p->unexp_tail = rx->umsg;
    ctx->unexp_arrivals++;
    rx->dst = rx->umsg->data;
    rx->dst_len = rx->len;
    return true;
}

/* Consumes one fragment of `len` bytes. */
static bool rx_fragment(wf_tctx_t *ctx, wf_ib_peer_t *p, const uint8_t *data,
                        size_t len)
{
    wf_ib_rx_t *rx = &p->rx;
    size_t chunk;

    if (!rx->in_msg) {
        if (len < WF_IB_HDR_LEN) {
            wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                            "protocol error: a %zu-byte fragment where a "
                            "header was due",
                            len);
            return false;
        }
        if (!rx_begin(ctx, p, data))
            return false;
        data += WF_IB_HDR_LEN;
        len -= WF_IB_HDR_LEN;
    }
    if (len > rx->len - rx->got) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol error: fragment of %zu bytes overruns a "
                        "message of %zu (%zu received)",
                        len, rx->len, rx->got);
        return false;
    }
    /* Bytes past the receive buffer of a truncated message are dropped. */
    chunk = rx->got < rx->dst_len ? WF_MIN(len, rx->dst_len - rx->got) : 0;
    if (chunk)
        memcpy(rx->dst + rx->got, data, chunk);
    rx->got += len;
    if (rx->got == rx->len)
        rx_done(rx);
    return true;
}

void wf_ib_on_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, unsigned slot, size_t len)
{
    const uint8_t *data =
        (const uint8_t *)p->b.recv + (size_t)slot * WF_IB_SLOT_LEN;

    p->recvs_done++;
    if (!rx_fragment(ctx, p, data, len))
        return;
    if (wf_ib_post_recv(ctx, p, slot) < 0)
        return;
    wf_ib_credit_flush(ctx, p, false);
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

void wf_ib_xfer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    weft_status_t st = p->fail_status;
    wf_ib_rx_t *rx = &p->rx;

    (void)ctx;
    fail_list(p->sendq, st);
    p->sendq = p->sendq_tail = NULL;
    for (unsigned s = 0; s < WF_IB_SEND_SLOTS; s++) {
        if (p->slot_req[s])
            req_finish(p->slot_req[s], st);
        p->slot_req[s] = NULL;
    }
    fail_list(p->posted, st);
    p->posted = p->posted_tail = NULL;
    if (rx->req)
        req_finish(rx->req, st);
    /* A half-received message is lost; complete ones stay deliverable. */
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

void wf_ib_xfer_free_all(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_ib_peer_t *p = &ctx->peers[i];
        if (p->rx.umsg && p->rx.umsg->waiter)
            free(p->rx.umsg);
        while (p->unexp) {
            wf_ib_umsg_t *m = p->unexp;
            p->unexp = m->next;
            free(m);
        }
        p->unexp_tail = NULL;
        memset(&p->rx, 0, sizeof(p->rx));
    }
    while (ctx->all)
        req_release(ctx, ctx->all);
}
