/*
 * ib_qp.c - the per-peer registered buffers and the reliable-connected QP:
 * creation in INIT with every receive posted, then RTR and RTS once the
 * peer's QP number is known.  Every failure names the step, the peer and
 * the verbs error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ib.h"

#define WF_IB_CTRL_LEN 64 /* the two credit words, padded */

size_t wf_ib_peer_mem(void)
{
    return 2 * (size_t)WF_IB_SLOTS * WF_IB_SLOT_LEN + WF_IB_CTRL_LEN;
}

static weft_status_t bufs_open(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    wf_ib_bufs_t *b = &p->b;
    void *mem = NULL;
    int err;

    b->len = wf_ib_peer_mem();
    err = posix_memalign(&mem, (size_t)sysconf(_SC_PAGESIZE), b->len);
    if (err) {
        WEFT_WARN(NET, "ib: out of memory for the buffers of %s (%zu bytes)",
                  p->desc, b->len);
        return WEFT_ERR_NO_MEMORY;
    }
    memset(mem, 0, b->len);
    b->mem = mem;
    b->mr = ctx->v->reg_mr(ctx->pd, b->mem, b->len,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!b->mr) {
        err = errno;
        WEFT_WARN(NET,
                  "ib: %s: ibv_reg_mr of %zu bytes for %s failed: %s%s",
                  ctx->port.dev_name, b->len, p->desc, wf_errno_str(err),
                  err == ENOMEM || err == EPERM || err == EAGAIN
                      ? " (memlock limit too low? see `ulimit -l`)"
                      : "");
        return WEFT_ERR_TRANSPORT;
    }
    b->recv = b->mem;
    b->send = b->mem + (size_t)WF_IB_SLOTS * WF_IB_SLOT_LEN;
    b->credit_in = (volatile uint64_t *)(b->send +
                                         (size_t)WF_IB_SLOTS * WF_IB_SLOT_LEN);
    b->credit_out = (uint64_t *)(b->send + (size_t)WF_IB_SLOTS *
                                               WF_IB_SLOT_LEN + 8);
    return WEFT_OK;
}

weft_status_t wf_ib_post_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, unsigned slot)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(p->b.recv + (size_t)slot * WF_IB_SLOT_LEN),
        .length = WF_IB_SLOT_LEN,
        .lkey = p->b.mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wf_ib_wrid(p->rank, WF_IB_WR_RECV, slot),
                             .sg_list = &sge,
                             .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int err = ibv_post_recv(p->qp, &wr, &bad);

    (void)ctx;
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_recv on QP 0x%x failed: %s", p->qp->qp_num,
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    p->recvs_posted++;
    return WEFT_OK;
}

static weft_status_t qp_init(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    struct ibv_qp_attr a;
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = ctx->port.port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    err = ctx->v->modify_qp(p->qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                IBV_QP_ACCESS_FLAGS);
    if (err) {
        WEFT_WARN(NET, "ib: %s: moving QP 0x%x to INIT failed: %s", p->desc,
                  p->qp->qp_num, wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

static uint32_t random_psn(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)(ts.tv_nsec ^ (getpid() << 8)) & 0xffffff;
}

weft_status_t wf_ib_qp_create(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    struct ibv_qp_init_attr ia;
    uint8_t *o = p->info_out;

    WEFT_CHECK(bufs_open(ctx, p));
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ctx->cq;
    ia.recv_cq = ctx->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = WF_IB_SQ_DEPTH;
    ia.cap.max_recv_wr = WF_IB_SLOTS;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    p->qp = ctx->v->create_qp(ctx->pd, &ia);
    if (!p->qp) {
        WEFT_WARN(NET, "ib: %s: ibv_create_qp (RC) for %s failed: %s",
                  ctx->port.dev_name, p->desc, wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    WEFT_CHECK(qp_init(ctx, p));
    /* Receives first: the peer may send as soon as it sees our READY. */
    for (unsigned s = 0; s < WF_IB_SLOTS; s++)
        WEFT_CHECK(wf_ib_post_recv(ctx, p, s));
    p->credit_sent = p->recvs_posted;
    p->psn = random_psn();
    wf_ib_put32(o, p->qp->qp_num);
    wf_ib_put32(o + 4, p->psn);
    wf_ib_put64(o + 8, (uint64_t)(uintptr_t)p->b.credit_in);
    wf_ib_put32(o + 16, p->b.mr->rkey);
    wf_ib_put32(o + 20, WF_IB_SLOTS);
    wf_ib_put32(o + 24, WF_IB_SLOT_LEN);
    return WEFT_OK;
}

static weft_status_t qp_rtr(wf_tctx_t *ctx, wf_ib_peer_t *p, uint32_t rqpn,
                            uint32_t rpsn)
{
    struct ibv_qp_attr a;
    char gid[64];
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu)WF_MIN(ctx->port.mtu, p->rmtu);
    a.dest_qp_num = rqpn;
    a.rq_psn = rpsn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = ctx->port.port;
    a.ah_attr.dlid = p->rlid;
    if (ctx->port.gid_index >= 0) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = p->rgid;
        a.ah_attr.grh.sgid_index = (uint8_t)ctx->port.gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    err = ctx->v->modify_qp(p->qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC |
                                IBV_QP_MIN_RNR_TIMER);
    if (err) {
        wf_ib_gid_str(&p->rgid, gid, sizeof(gid));
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "moving QP 0x%x to RTR (remote QP 0x%x, gid %s, lid "
                        "%u, sgid index %d, mtu %s) failed: %s",
                        p->qp->qp_num, rqpn, gid, p->rlid,
                        ctx->port.gid_index, wf_ib_mtu_str(a.path_mtu),
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

static weft_status_t qp_rts(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    struct ibv_qp_attr a;
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = WF_IB_QP_TIMEOUT;
    a.retry_cnt = WF_IB_QP_RETRY;
    a.rnr_retry = 7; /* credits make RNR impossible; never give up on it */
    a.sq_psn = p->psn;
    a.max_rd_atomic = 1;
    err = ctx->v->modify_qp(p->qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC);
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "moving QP 0x%x to RTS failed: %s", p->qp->qp_num,
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

weft_status_t wf_ib_qp_connect(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    const uint8_t *in = p->info_in;
    uint32_t rqpn = wf_ib_get32(in), rpsn = wf_ib_get32(in + 4);
    uint32_t slots = wf_ib_get32(in + 20), slot_len = wf_ib_get32(in + 24);

    if (slots != WF_IB_SLOTS || slot_len != WF_IB_SLOT_LEN) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol mismatch: the peer uses %u slots of %u "
                        "bytes, this side %d of %d (different weft versions?)",
                        slots, slot_len, WF_IB_SLOTS, WF_IB_SLOT_LEN);
        return WEFT_ERR_TRANSPORT;
    }
    p->rcredit_addr = wf_ib_get64(in + 8);
    p->rcredit_rkey = wf_ib_get32(in + 16);
    WEFT_CHECK(qp_rtr(ctx, p, rqpn, rpsn & 0xffffff));
    WEFT_CHECK(qp_rts(ctx, p));
    return WEFT_OK;
}

void wf_ib_qp_destroy(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    if (p->qp)
        ctx->v->destroy_qp(p->qp);
    p->qp = NULL;
    if (p->b.mr)
        ctx->v->dereg_mr(p->b.mr);
    p->b.mr = NULL;
    free(p->b.mem);
    p->b.mem = NULL;
}
