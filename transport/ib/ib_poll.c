/*
 * ib_poll.c - progress(): the completion channel, the completion queue and
 * the bootstrap context; and the verbs ops table.
 *
 * Each rail's CQ is re-armed before it is drained, so a completion that
 * lands after the last poll always makes its channel fd (and so get_fd())
 * readable: the engine may sleep on it without losing a wake-up.
 */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ib.h"

#define WF_IB_POLL_BATCH 32

static const char *wr_kind_str(int kind)
{
    switch (kind) {
    case WF_IB_WR_RECV: return "receive";
    case WF_IB_WR_SEND: return "send";
    case WF_IB_WR_CREDIT: return "credit write";
    case WF_IB_WR_READ: return "rendezvous RDMA READ";
    default: return "work request";
    }
}

static void wc_error(wf_tctx_t *ctx, wf_ib_peer_t *p, const struct ibv_wc *wc,
                     int qi, int kind)
{
    struct ibv_qp *qp = qi < p->nqp ? p->qp[qi].qp : NULL;
    /* The peer's QP vanished or never answered: the peer is gone. */
    bool remote = wc->status == IBV_WC_RETRY_EXC_ERR ||
                  wc->status == IBV_WC_RNR_RETRY_EXC_ERR ||
                  wc->status == IBV_WC_REM_ACCESS_ERR ||
                  wc->status == IBV_WC_REM_OP_ERR ||
                  wc->status == IBV_WC_REM_INV_REQ_ERR;

    wf_ib_peer_fail(ctx, p, remote ? WEFT_ERR_REMOTE : WEFT_ERR_TRANSPORT,
                    "%s on QP 0x%x (%d of %d) failed: %s (status %d, "
                    "vendor error 0x%x)",
                    wr_kind_str(kind), qp ? qp->qp_num : 0, qi + 1, p->nqp,
                    ctx->v->wc_status_str(wc->status), (int)wc->status,
                    wc->vendor_err);
}

static void handle_wc(wf_tctx_t *ctx, const struct ibv_wc *wc)
{
    int peer = (int)(wc->wr_id >> 32);
    int qi = (int)((wc->wr_id >> 16) & 0xff);
    int kind = (int)((wc->wr_id >> 8) & 0xff);
    unsigned slot = (unsigned)(wc->wr_id & 0xff);
    wf_ib_peer_t *p;

    if (peer < 0 || peer >= ctx->cfg.size)
        return;
    p = &ctx->peers[peer];
    if (qi >= p->nqp)
        return;
    if (p->state == WF_IB_FAILED)
        return; /* flushed work of a pair that already failed */
    if (wc->status != IBV_WC_SUCCESS) {
        wc_error(ctx, p, wc, qi, kind);
        return;
    }
    switch (kind) {
    case WF_IB_WR_RECV:
        wf_ib_on_recv(ctx, p, qi, slot, wc->byte_len);
        break;
    case WF_IB_WR_SEND:
        wf_ib_on_send_done(ctx, p, qi, slot);
        break;
    case WF_IB_WR_CREDIT:
        p->qp[qi].credit_writes--;
        wf_ib_credit_flush(ctx, p, qi);
        break;
    case WF_IB_WR_READ:
        wf_ib_rndv_on_read(ctx, p, qi, slot);
        break;
    }
}

static int poll_rail(wf_tctx_t *ctx, wf_ib_rail_t *rl)
{
    struct ibv_wc wc[WF_IB_POLL_BATCH];
    int total = 0, n;

    while ((n = ibv_poll_cq(rl->cq, WF_IB_POLL_BATCH, wc)) > 0) {
        for (int i = 0; i < n; i++)
            handle_wc(ctx, &wc[i]);
        total += n;
    }
    if (n < 0) {
        WEFT_WARN(NET, "ib: %s: ibv_poll_cq failed (%d)", rl->port.dev_name,
                  n);
        return WEFT_ERR_TRANSPORT;
    }
    return total;
}

int wf_ib_poll_cq(wf_tctx_t *ctx)
{
    int total = 0;

    for (int i = 0; i < ctx->nrails; i++) {
        int n = poll_rail(ctx, &ctx->rail[i]);
        if (n < 0)
            return n;
        total += n;
    }
    return total;
}

/* Takes the pending channel events of a rail and re-arms its CQ. */
static weft_status_t drain_channel(wf_tctx_t *ctx, wf_ib_rail_t *rl)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    unsigned got = 0;

    while (ctx->v->get_cq_event(rl->channel, &cq, &cq_ctx) == 0)
        got++;
    if (!got)
        return WEFT_OK;
    ctx->v->ack_cq_events(rl->cq, got);
    if (ibv_req_notify_cq(rl->cq, 0) != 0) {
        WEFT_WARN(NET, "ib: %s: ibv_req_notify_cq failed",
                  rl->port.dev_name);
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

static void timer_set(wf_tctx_t *ctx, long interval_ns)
{
    struct itimerspec its = {.it_interval = {0, interval_ns},
                             .it_value = {0, interval_ns}};

    timerfd_settime(ctx->timer_fd, 0, &its, NULL);
}

void wf_ib_stall(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    if (p->stalled)
        return;
    p->stalled = true;
    if (ctx->stalled++ == 0)
        timer_set(ctx, WF_IB_STALL_POLL_NS);
}

/* Gives every peer that waited for credits another try. */
static int retry_stalled(wf_tctx_t *ctx)
{
    uint64_t ticks;
    int n = 0;

    if (read(ctx->timer_fd, &ticks, sizeof(ticks)) < 0)
        ticks = 0;
    for (int i = 0; i < ctx->cfg.size && ctx->stalled > 0; i++) {
        wf_ib_peer_t *p = &ctx->peers[i];
        if (!p->stalled)
            continue;
        p->stalled = false;
        ctx->stalled--;
        n++;
        wf_ib_pump(ctx, p); /* stalls it again if still short */
    }
    if (ctx->stalled == 0)
        timer_set(ctx, 0);
    return n;
}

int wf_ib_progress(wf_tctx_t *ctx)
{
    int n, m;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    for (int i = 0; i < ctx->nrails; i++)
        WEFT_CHECK(drain_channel(ctx, &ctx->rail[i]));
    n = wf_ib_poll_cq(ctx);
    if (n < 0)
        return n;
    if (ctx->stalled > 0)
        n += retry_stalled(ctx);
    m = wf_ib_conn_progress(ctx);
    if (m < 0)
        return m;
    return n + m;
}

/* A peer that has started connecting reaches us over the bootstrap
 * context first: linked as soon as that one is. */
static bool ib_peer_linked(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size)
        return false;
    wf_ib_state_t st = ctx->peers[peer].state;
    if (st == WF_IB_FAILED)
        return false;
    return st != WF_IB_IDLE || ctx->boot_ops->peer_linked(ctx->boot, peer);
}

/* The matching layer's test() and scan_unexpected() take the context as
 * they find it: the layer's state comes first. */
_Static_assert(offsetof(struct wf_tctx, m) == 0, "match state first");
_Static_assert(offsetof(struct wf_treq, m) == 0, "request head first");

const wf_transport_ops_t wf_ib_transport = {
    .size = sizeof(wf_transport_ops_t),
    .name = "ib",
    .caps = WF_TCAP_HOST_MEM | WF_TCAP_RDMA,
    .init = wf_ib_init,
    .fini = wf_ib_fini,
    .query = wf_ib_query,
    .get_address = wf_ib_get_address,
    .connect = wf_ib_connect,
    .mem_reg = wf_ib_mem_reg,
    .mem_dereg = wf_ib_mem_dereg,
    .isend = wf_ib_isend,
    .irecv = wf_ib_irecv,
    .test = wf_match_test,
    .progress = wf_ib_progress,
    .get_fd = wf_ib_get_fd,
    .peer_describe = wf_ib_peer_describe,
    .peer_linked = ib_peer_linked,
    .scan_unexpected = wf_match_scan_unexpected,
};
