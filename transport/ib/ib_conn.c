/*
 * ib_conn.c - connecting a peer pair and noticing when it breaks.
 *
 * connect() decodes the peer's blob, starts the private TCP context's
 * connection, creates the QPs with their receives posted and sends INFO
 * (QP count, slots, and per QP its number, PSN and credit word).  When the
 * peer's INFO arrives every QP goes to RTR and RTS and READY is sent; the
 * pair is UP when the peer's READY arrives, so no SEND can reach a QP that
 * is not yet ready to receive.
 * A receive on the LIVE tag stays posted for the life of the pair: it
 * completes with BYE when the peer closes its context, and fails when the
 * peer's process dies and its kernel closes the socket.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ib.h"

static const uint8_t wf_ib_ready_msg[1] = {'R'};
static const uint8_t wf_ib_bye_msg[1] = {'B'};

static bool decode_blob(wf_ib_peer_t *p, const uint8_t *b, size_t len,
                        size_t *tcp_at, size_t *tcp_len)
{
    size_t at;

    if (b && len > 0 && b[0] != WF_IB_VERSION) {
        WEFT_WARN(NET, "ib: peer %d speaks verbs protocol version %u, "
                  "this rank %u (different weft versions?)",
                  p->rank, b[0], WF_IB_VERSION);
        return false;
    }
    if (!b || len < WF_IB_BLOB_LEN(1) || b[1] < 1 ||
        b[1] > WF_IB_RAILS_MAX)
        return false;
    at = WF_IB_BLOB_LEN(b[1]);
    if (len < at || at + (size_t)b[at - 1] != len)
        return false;
    p->nrrails = b[1];
    for (int i = 0; i < p->nrrails; i++) {
        const uint8_t *r = b + 2 + (size_t)i * WF_IB_BLOB_RAIL;
        wf_ib_rrail_t *rr = &p->rrail[i];
        rr->link_layer = r[0];
        rr->port = r[1];
        rr->mtu = r[2];
        rr->lid = (uint16_t)(r[3] | (r[4] << 8));
        memcpy(rr->gid.raw, r + 5, 16);
    }
    *tcp_at = at;
    *tcp_len = b[at - 1];
    return true;
}

void wf_ib_peer_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st,
                     const char *fmt, ...)
{
    va_list ap;

    if (p->state == WF_IB_FAILED)
        return;
    va_start(ap, fmt);
    wf_match_fail_note(&ctx->m, &p->m, st, fmt, ap);
    va_end(ap);
    if (p->state == WF_IB_EXCHANGE || p->state == WF_IB_WAIT_READY)
        ctx->connecting--;
    p->state = WF_IB_FAILED;
    /* Sends waiting for a FIN first: finishing a request clears its next
     * link, and one whose RTS is still in a staging slot would cut the
     * list of those waiting (transport_ib_rndv_fail_while_awaiting). */
    wf_ib_rndv_fail(ctx, p, st);
    wf_ib_send_fail(p, st);
    wf_ib_recv_fail(ctx, p, st);
}

/* Final status of a bootstrap request, or INPROGRESS; clears *req when
 * final. */
static weft_status_t boot_test(wf_tctx_t *ctx, wf_treq_t **req)
{
    wf_treq_info_t info;
    weft_status_t st;

    if (!*req)
        return WEFT_OK;
    st = ctx->boot_ops->test(ctx->boot, *req, &info);
    if (st != WEFT_INPROGRESS)
        *req = NULL;
    return st;
}

static void boot_fail(wf_tctx_t *ctx, wf_ib_peer_t *p, weft_status_t st,
                      const char *step)
{
    wf_ib_peer_fail(ctx, p, st == WEFT_ERR_REMOTE ? WEFT_ERR_REMOTE : st,
                    "%s over the bootstrap connection failed: %s", step,
                    weft_status_name(st));
}

/* Posts INFO and the receives of INFO, READY and LIVE. */
static weft_status_t boot_start(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    const wf_transport_ops_t *o = ctx->boot_ops;
    int r = p->rank;

    WEFT_CHECK(o->irecv(ctx->boot, r, WF_IB_TAG_INFO, p->info_in,
                        sizeof(p->info_in), NULL, &p->boot_info_recv));
    WEFT_CHECK(o->irecv(ctx->boot, r, WF_IB_TAG_READY, p->ready_in,
                        sizeof(p->ready_in), NULL, &p->boot_ready_recv));
    WEFT_CHECK(o->irecv(ctx->boot, r, WF_IB_TAG_LIVE, p->live_in,
                        sizeof(p->live_in), NULL, &p->boot_live));
    return o->isend(ctx->boot, r, WF_IB_TAG_INFO, NULL, p->info_out,
                    sizeof(p->info_out), NULL, &p->boot_info_send);
}

static void set_desc(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    char gid[64], rails[24] = "";

    if (p->nrails > 1)
        snprintf(rails, sizeof(rails), ", %d rails", p->nrails);
    if (ctx->rail[0].port.gid_index >= 0) {
        wf_ib_gid_str(&p->rrail[0].gid, gid, sizeof(gid));
        snprintf(p->desc, sizeof(p->desc), "%s [gid %s%s]",
                 ctx->boot_ops->peer_describe(ctx->boot, p->rank), gid,
                 rails);
    } else {
        snprintf(p->desc, sizeof(p->desc), "%s [lid %u%s]",
                 ctx->boot_ops->peer_describe(ctx->boot, p->rank),
                 p->rrail[0].lid, rails);
    }
}

/* Rail i of the pair joins this rank's rail i and the peer's: their link
 * layers must agree. */
static bool rails_match(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    for (int i = 0; i < p->nrails; i++) {
        const wf_ib_port_t *lp = &ctx->rail[i].port;
        uint8_t rl = p->rrail[i].link_layer;
        if (rl == lp->link_layer)
            continue;
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "link layers differ on rail %d: the peer's port is "
                        "%s, this rank's %s:%d is %s",
                        i, rl == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB",
                        lp->dev_name, lp->port,
                        lp->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE"
                                                                  : "IB");
        return false;
    }
    return true;
}

static weft_status_t connect_start(wf_tctx_t *ctx, wf_ib_peer_t *p,
                                   const void *addr, size_t len)
{
    const uint8_t *b = addr;
    size_t tcp_at = 0, tcp_len = 0;
    weft_status_t st;

    if (!decode_blob(p, b, len, &tcp_at, &tcp_len)) {
        WEFT_WARN(NET, "ib: malformed address of peer %d (%zu bytes)",
                  p->rank, len);
        return WEFT_ERR_INVALID_ARG;
    }
    p->nrails = WF_MIN(ctx->nrails, p->nrrails);
    st = ctx->boot_ops->connect(ctx->boot, p->rank, b + tcp_at, tcp_len);
    set_desc(ctx, p);
    ctx->connecting++;
    p->state = WF_IB_EXCHANGE;
    if (st < 0) {
        boot_fail(ctx, p, st, "connecting");
        return st;
    }
    if (!rails_match(ctx, p))
        return WEFT_ERR_TRANSPORT;
    st = wf_ib_qp_create(ctx, p, wf_ib_pair_qps(ctx->nqp, p->nrails));
    if (st < 0) {
        wf_ib_peer_fail(ctx, p, st, "QP setup failed (see above)");
        return st;
    }
    st = boot_start(ctx, p);
    if (st < 0) {
        boot_fail(ctx, p, st, "posting the QP exchange");
        return st;
    }
    return WEFT_INPROGRESS;
}

weft_status_t wf_ib_connect(wf_tctx_t *ctx, int peer, const void *addr,
                            size_t len)
{
    wf_ib_peer_t *p;

    if (!ctx || peer < 0 || peer >= ctx->cfg.size || peer == ctx->cfg.rank) {
        WEFT_WARN(NET, "ib: connect to invalid peer %d (rank %d of %d)", peer,
                  ctx ? ctx->cfg.rank : -1, ctx ? ctx->cfg.size : 0);
        return WEFT_ERR_INVALID_ARG;
    }
    p = &ctx->peers[peer];
    if (p->state == WF_IB_IDLE)
        return connect_start(ctx, p, addr, len);
    if (p->state == WF_IB_FAILED)
        return wf_match_peer_failed(&ctx->m, &p->m);
    return p->state == WF_IB_UP ? WEFT_OK : WEFT_INPROGRESS;
}

/* EXCHANGE -> WAIT_READY -> UP. */
static void advance(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    const wf_transport_ops_t *o = ctx->boot_ops;
    weft_status_t st;

    if ((st = boot_test(ctx, &p->boot_info_send)) < 0)
        return boot_fail(ctx, p, st, "sending the QP number");
    if (p->state == WF_IB_EXCHANGE) {
        st = boot_test(ctx, &p->boot_info_recv);
        if (st < 0)
            return boot_fail(ctx, p, st, "receiving the peer's QP number");
        if (st == WEFT_INPROGRESS || wf_ib_qp_connect(ctx, p) < 0)
            return;
        st = o->isend(ctx->boot, p->rank, WF_IB_TAG_READY, NULL,
                      wf_ib_ready_msg, 1, NULL, &p->boot_ready_send);
        if (st < 0)
            return boot_fail(ctx, p, st, "sending READY");
        p->state = WF_IB_WAIT_READY;
    }
    if ((st = boot_test(ctx, &p->boot_ready_send)) < 0)
        return boot_fail(ctx, p, st, "sending READY");
    if (p->state != WF_IB_WAIT_READY)
        return;
    st = boot_test(ctx, &p->boot_ready_recv);
    if (st < 0)
        return boot_fail(ctx, p, st, "receiving the peer's READY");
    if (st == WEFT_INPROGRESS)
        return;
    p->state = WF_IB_UP;
    ctx->connecting--;
    WEFT_DEBUG(NET, "ib: %s: %d QP%s up (first 0x%x)", p->desc, p->nqp,
               p->nqp == 1 ? "" : "s", p->qp[0].qp->qp_num);
    wf_ib_pump(ctx, p);
}

static bool peer_idle(const wf_ib_peer_t *p)
{
    if (p->sendq || p->m.posted || p->rx_busy || p->nheld ||
        !wf_ib_rndv_idle(p))
        return false;
    for (int i = 0; i < p->nqp; i++)
        if (p->qp[i].sends_done != p->qp[i].sends_posted)
            return false;
    return true;
}

/* The LIVE receive finished: the peer closed its context or died. */
static void watch_live(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    weft_status_t st = boot_test(ctx, &p->boot_live);

    if (st == WEFT_INPROGRESS)
        return;
    /* Fragments the peer sent before it left are already in the CQ. */
    wf_ib_poll_cq(ctx);
    if (p->state == WF_IB_FAILED)
        return;
    if (st == WEFT_OK) {
        /* Leaving on purpose is news only if this side still waits. */
        p->m.fail_unreported = peer_idle(p);
        wf_ib_peer_fail(ctx, p, WEFT_ERR_REMOTE, "the peer closed its "
                                                 "context");
    } else {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                        "the peer's bootstrap connection broke (%s): its "
                        "process exited or was killed",
                        weft_status_name(st));
    }
}

int wf_ib_conn_progress(wf_tctx_t *ctx)
{
    int n = ctx->boot_ops->progress(ctx->boot);

    if (n < 0)
        return n;
    if (n == 0 && ctx->connecting == 0)
        return 0;
    for (int i = 0; i < ctx->cfg.size; i++) {
        wf_ib_peer_t *p = &ctx->peers[i];
        if (p->state == WF_IB_EXCHANGE || p->state == WF_IB_WAIT_READY ||
            p->boot_ready_send)
            advance(ctx, p);
        if (p->state != WF_IB_IDLE && p->state != WF_IB_FAILED)
            watch_live(ctx, p);
    }
    return n;
}

void wf_ib_conn_bye(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        wf_ib_peer_t *p = &ctx->peers[i];
        wf_treq_t *r = NULL;
        if (p->state == WF_IB_IDLE || p->state == WF_IB_FAILED)
            continue;
        /* Written at once when the socket is up; the TCP context frees
         * what is left at its fini. */
        ctx->boot_ops->isend(ctx->boot, i, WF_IB_TAG_LIVE, NULL, wf_ib_bye_msg,
                             1, NULL, &r);
    }
    ctx->boot_ops->progress(ctx->boot);
}
