/*
 * ib_rndv.c - zero-copy rendezvous for large messages.
 *
 * A send of WEFT_IB_ZCOPY_MIN bytes or more registers the user buffer
 * (through the registration cache) and sends, instead of its payload, a
 * "ready to send" (RTS): the first fragment of the message, with the
 * message header as always and then the buffer's address and its rkey
 * on every rail (READs on a QP use the key of that QP's rail).  The
 * RTS takes the message's number and travels on QP 0 like every header,
 * so matching stays in send order and a tag's messages, eager or not,
 * match in posting order.
 *
 * The receiver matches the RTS like any header.  Matched to a posted
 * receive, it registers that buffer and pulls min(length, capacity)
 * bytes straight into it with RDMA READs, striped over the pair's QPs;
 * unmatched, it pulls into an unexpected buffer at once, so the sender
 * completes without waiting for a receive (the engine's plans and the
 * conformance suite rely on that; docs/design.md), unless a receive
 * claims the message before its reads begin, which then get it directly.
 * When the last READ completes the receiver sends FIN (a fragment that
 * takes no message number) and the sender's request completes; the
 * registration goes when the request is released.
 *
 * Why READ and not CTS + RDMA WRITE: the receiver knows when its buffer
 * is ready, so pulling needs one control message each way (RTS, FIN)
 * where CTS + WRITE needs three (RTS, CTS, then a FIN or WRITE with
 * immediate), and the side that waits for data is the side that drives.
 */
#include <stdlib.h>
#include <string.h>

#include "ib.h"
#include "weft_cuda.h"

/* ---- sending ----------------------------------------------------------- */

void wf_ib_rndv_send_prepare(wf_tctx_t *ctx, wf_ib_peer_t *p, wf_treq_t *r,
                             void *mh)
{
    if (!ctx->zcopy_min || r->m.len < ctx->zcopy_min)
        return;
    if (mh) {
        ((wf_ib_reg_t *)mh)->refs++; /* the caller's registration */
        r->mh = mh;
    } else if (wf_ib_mem_reg(ctx, r->m.buf, r->m.len, WF_MEM_HOST,
                             &r->mh) < 0) {
        /* Logged by mem_reg; the copy path still works. */
        WEFT_DEBUG(NET, "ib: %s: a %zu-byte send goes through the staging "
                        "slots: its buffer could not be registered",
                   p->desc, r->m.len);
        r->mh = NULL;
        return;
    }
    r->m.holds = true; /* the registration goes with the request */
    r->rndv = true;
}

void wf_ib_rndv_rts_put(const wf_treq_t *r, uint8_t *dst)
{
    const wf_ib_reg_t *reg = r->mh;

    wf_ib_put64(dst, (uint64_t)(uintptr_t)r->m.buf);
    for (int i = 0; i < WF_IB_RAILS_MAX; i++)
        wf_ib_put32(dst + 8 + 4 * i, reg->mr[i] ? reg->mr[i]->rkey : 0);
}

void wf_ib_rndv_await(wf_ib_peer_t *p, wf_treq_t *r)
{
    r->next = p->await;
    p->await = r;
}

void wf_ib_send_maybe_done(wf_treq_t *r)
{
    if (r->m.status != WEFT_INPROGRESS || r->frags_out ||
        r->staged != r->m.len || (r->rndv && !r->fin))
        return;
    r->next = NULL;
    wf_match_sent(&r->m);
}

void wf_ib_rndv_on_fin(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq)
{
    for (wf_treq_t **link = &p->await; *link; link = &(*link)->next) {
        wf_treq_t *r = *link;
        if (r->seq != seq)
            continue;
        *link = r->next;
        r->next = NULL;
        r->fin = true;
        wf_ib_send_maybe_done(r);
        return;
    }
    wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                    "protocol error: FIN of message %u, which waits for "
                    "none",
                    seq);
}

/* ---- pulling ----------------------------------------------------------- */

static void pull_unlink(wf_ib_peer_t *p, wf_ib_pull_t *pl)
{
    wf_ib_pull_t **link = &p->pulls, *prev = NULL;

    while (*link != pl) {
        prev = *link;
        link = &(*link)->next;
    }
    *link = pl->next;
    if (p->pulls_tail == pl)
        p->pulls_tail = prev;
}

static weft_status_t fin_queue(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t seq)
{
    if (p->nfins == p->fins_cap) {
        unsigned cap = p->fins_cap ? 2 * p->fins_cap : 8;
        uint32_t *f = realloc(p->fins, cap * sizeof(*f));
        if (!f) {
            wf_ib_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                            "out of memory for a rendezvous FIN");
            return WEFT_ERR_NO_MEMORY;
        }
        p->fins = f;
        p->fins_cap = cap;
    }
    p->fins[p->nfins++] = seq;
    return WEFT_OK;
}

/* Every byte is in: complete the receive (or the unexpected message) and
 * tell the sender. */
static void pull_finish(wf_tctx_t *ctx, wf_ib_peer_t *p, wf_ib_pull_t *pl)
{
    pull_unlink(p, pl);
    if (pl->mh)
        wf_ib_mem_dereg(ctx, pl->mh);
    wf_match_arrived(&ctx->m, pl->req, pl->umsg, pl->len, pl->sig);
    fin_queue(ctx, p, pl->seq);
    free(pl);
}

/* Registers the next window of the destination, once the previous one
 * was read in full. */
static weft_status_t window_next(wf_tctx_t *ctx, wf_ib_peer_t *p,
                                 wf_ib_pull_t *pl)
{
    size_t from = pl->win_end;
    weft_status_t st;

    if (pl->mh)
        wf_ib_mem_dereg(ctx, pl->mh);
    pl->mh = NULL;
    pl->win_end = from + WF_MIN((size_t)WF_IB_PULL_WINDOW, pl->dst_len - from);
    st = wf_ib_mem_reg(ctx, pl->dst + from, pl->win_end - from, WF_MEM_HOST,
                       &pl->mh);
    if (st < 0) {
        pl->mh = NULL;
        wf_ib_peer_fail(ctx, p, st,
                        "registering bytes %zu-%zu of the %zu-byte "
                        "destination of rendezvous message %u failed (see "
                        "above)",
                        from, pl->win_end, pl->dst_len, pl->seq);
    }
    return st;
}

/* Chooses where the bytes go. */
static void pull_start(wf_tctx_t *ctx, wf_ib_pull_t *pl)
{
    if (!pl->req && pl->umsg->waiter) {
        /* Claimed before its reads began: straight into the receive. */
        pl->req = pl->umsg->waiter;
        wf_match_msg_free(&ctx->m, pl->umsg);
        pl->umsg = NULL;
    }
    pl->dst = pl->req ? pl->req->buf : pl->umsg->data;
    pl->dst_len = pl->req ? WF_MIN(pl->len, pl->req->len) : pl->len;
    pl->started = true;
}

/* A QP with a free read slot, round-robin from rd_next, or -1. */
static int read_qp(wf_ib_peer_t *p)
{
    for (int k = 0; k < p->nqp; k++) {
        int qi = (p->rd_next + k) % p->nqp;
        if (p->qp[qi].reads_out < WF_IB_READS_PER_QP)
            return qi;
    }
    return -1;
}

static weft_status_t post_read(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                               wf_ib_pull_t *pl)
{
    wf_ib_qp_t *q = &p->qp[qi];
    size_t n = WF_MIN((size_t)WF_IB_READ_CHUNK, pl->win_end - pl->posted);
    unsigned slot = 0;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad = NULL;
    int err;

    while (q->read_pull[slot])
        slot++; /* reads_out < WF_IB_READS_PER_QP: one is free */
    sge = (struct ibv_sge){.addr = (uintptr_t)(pl->dst + pl->posted),
                           .length = (uint32_t)n,
                           .lkey = ((wf_ib_reg_t *)pl->mh)->mr[q->rail]->lkey};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = wf_ib_wrid(p->rank, qi, WF_IB_WR_READ, slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = pl->raddr + pl->posted;
    wr.wr.rdma.rkey = pl->rkey[q->rail];
    err = ibv_post_send(q->qp, &wr, &bad);
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_send (RDMA READ of %zu bytes at offset %zu "
                        "of message %u) on QP 0x%x (%d of %d) failed: %s",
                        n, pl->posted, pl->seq, q->qp->qp_num, qi + 1, p->nqp,
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    q->read_pull[slot] = pl;
    q->read_len[slot] = (uint32_t)n;
    q->reads_out++;
    pl->posted += n;
    q->bytes_read += n;
    p->rd_next = (qi + 1) % p->nqp;
    return WEFT_OK;
}

/* Pulls start in arrival order, and a pull's reads are all posted before
 * the next one's begin: the oldest message, which the engine most likely
 * waits for, gets the read slots first. */
void wf_ib_rndv_progress(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    wf_ib_pull_t *pl = p->pulls;

    while (pl && p->state != WF_IB_FAILED) {
        wf_ib_pull_t *next = pl->next;
        if (!pl->started) {
            pull_start(ctx, pl);
            if (!pl->dst_len) {
                pull_finish(ctx, p, pl);
                pl = next;
                continue;
            }
        }
        while (pl->posted < pl->dst_len) {
            int qi;
            if (pl->posted == pl->win_end) {
                if (pl->done < pl->win_end)
                    goto out; /* the window's reads are still landing */
                if (window_next(ctx, p, pl) < 0)
                    return;
            }
            qi = read_qp(p);
            if (qi < 0 || post_read(ctx, p, qi, pl) < 0)
                goto out;
        }
        pl = next;
    }
out:
    if (p->nfins && p->state != WF_IB_FAILED)
        wf_ib_pump(ctx, p);
}

weft_status_t wf_ib_rndv_pull_add(wf_tctx_t *ctx, wf_ib_peer_t *p,
                                  wf_ib_pull_t *pl)
{
    *(p->pulls_tail ? &p->pulls_tail->next : &p->pulls) = pl;
    p->pulls_tail = pl;
    wf_ib_rndv_progress(ctx, p);
    return p->state == WF_IB_FAILED ? p->m.fail_status : WEFT_OK;
}

void wf_ib_rndv_on_read(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                        unsigned slot)
{
    wf_ib_qp_t *q = &p->qp[qi];
    wf_ib_pull_t *pl = slot < WF_IB_READS_PER_QP ? q->read_pull[slot] : NULL;

    if (!pl)
        return;
    q->read_pull[slot] = NULL;
    q->reads_out--;
    pl->done += q->read_len[slot];
    if (pl->done == pl->dst_len && pl->posted == pl->dst_len)
        pull_finish(ctx, p, pl);
    wf_ib_rndv_progress(ctx, p);
}

/* ---- failure and teardown ---------------------------------------------- */

void wf_ib_rndv_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st)
{
    while (p->pulls) {
        wf_ib_pull_t *pl = p->pulls;
        p->pulls = pl->next;
        /* Incomplete: never deliverable. */
        wf_match_drop(&ctx->m, &p->m, pl->req, pl->umsg, st);
        if (pl->mh)
            wf_ib_mem_dereg(ctx, pl->mh);
        free(pl);
    }
    p->pulls_tail = NULL;
    for (int i = 0; i < p->nqp; i++) {
        memset(p->qp[i].read_pull, 0, sizeof(p->qp[i].read_pull));
        p->qp[i].reads_out = 0;
    }
    while (p->await) {
        wf_treq_t *r = p->await;
        p->await = r->next;
        wf_ib_req_finish(r, st);
    }
    p->nfins = 0;
}

void wf_ib_rndv_free(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    while (p->pulls) {
        wf_ib_pull_t *pl = p->pulls;
        p->pulls = pl->next;
        /* An unclaimed one is in the unexpected list, freed with it. */
        if (pl->umsg && pl->umsg->waiter)
            wf_match_msg_free(&ctx->m, pl->umsg);
        if (pl->mh)
            wf_ib_mem_dereg(ctx, pl->mh);
        free(pl);
    }
    p->pulls_tail = NULL;
    p->await = NULL;
    free(p->fins);
    p->fins = NULL;
    p->nfins = p->fins_cap = 0;
}

bool wf_ib_rndv_idle(const wf_ib_peer_t *p)
{
    return !p->pulls && !p->await && !p->nfins;
}
