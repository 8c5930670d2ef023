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
#include "topo/topo.h"

void wf_ib_qp_slots(int nqp, unsigned *nrecv, unsigned *nsend)
{
    unsigned r = WF_IB_RECV_SLOTS / (unsigned)(nqp > 0 ? nqp : 1);

    *nrecv = r > WF_IB_QP_MIN_RECV ? r : WF_IB_QP_MIN_RECV;
    *nsend = *nrecv / 2;
}

int wf_ib_pair_qps(int qps, int rails)
{
    int n = WF_MAX(qps, 1);

    rails = WF_MAX(rails, 1);
    n = (n + rails - 1) / rails * rails;
    return WF_MIN(n, WF_IB_QPS_MAX / rails * rails);
}

size_t wf_ib_peer_mem(int nqp)
{
    unsigned nrecv, nsend;

    wf_ib_qp_slots(nqp, &nrecv, &nsend);
    return (size_t)nqp * ((size_t)(nrecv + nsend) * WF_IB_SLOT_LEN +
                          WF_IB_CTRL_LEN);
}

/* One block holds, per QP: receive slots, staging slots, control words;
 * it is registered on every rail of the pair.  It lives on the NUMA node
 * the topology chose for this rank (its NIC's or GPU's), where the HCA
 * and the progress thread reach it without crossing sockets. */
static weft_status_t bufs_open(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    wf_ib_bufs_t *b = &p->b;
    size_t per_qp = (size_t)(p->nrecv + p->nsend) * WF_IB_SLOT_LEN +
                    WF_IB_CTRL_LEN;
    char what[sizeof(p->desc) + 8];

    b->len = wf_ib_peer_mem(p->nqp);
    b->mem = wf_topo_mem_alloc(b->len, ctx->cfg.topo_numa);
    if (!b->mem) {
        WEFT_WARN(NET, "ib: out of memory for the buffers of %s (%zu bytes)",
                  p->desc, b->len);
        return WEFT_ERR_NO_MEMORY;
    }
    snprintf(what, sizeof(what), "for %s", p->desc);
    for (int r = 0; r < p->nrails; r++) {
        b->mr[r] = wf_ib_pin(ctx, r, b->mem, b->len,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                             what);
        if (!b->mr[r])
            return WEFT_ERR_TRANSPORT;
    }
    for (int i = 0; i < p->nqp; i++) {
        wf_ib_qp_t *q = &p->qp[i];
        q->rail = i % p->nrails;
        q->recv = b->mem + (size_t)i * per_qp;
        q->send = q->recv + (size_t)p->nrecv * WF_IB_SLOT_LEN;
        q->credit_in = (volatile uint64_t *)(q->send + (size_t)p->nsend *
                                                           WF_IB_SLOT_LEN);
        q->credit_out = (uint64_t *)(q->credit_in + 1);
    }
    return WEFT_OK;
}

weft_status_t wf_ib_post_recv(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                              unsigned slot)
{
    wf_ib_qp_t *q = &p->qp[qi];
    struct ibv_sge sge = {
        .addr = (uintptr_t)(q->recv + (size_t)slot * WF_IB_SLOT_LEN),
        .length = WF_IB_SLOT_LEN,
        .lkey = p->b.mr[q->rail]->lkey};
    struct ibv_recv_wr wr = {
        .wr_id = wf_ib_wrid(p->rank, qi, WF_IB_WR_RECV, slot),
        .sg_list = &sge,
        .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int err = ibv_post_recv(q->qp, &wr, &bad);

    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "ibv_post_recv on QP 0x%x (%d of %d) failed: %s",
                        q->qp->qp_num, qi + 1, p->nqp, wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    q->recvs_posted++;
    return WEFT_OK;
}

static weft_status_t qp_init(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi)
{
    struct ibv_qp *qp = p->qp[qi].qp;
    const wf_ib_port_t *port = &ctx->rail[p->qp[qi].rail].port;
    struct ibv_qp_attr a;
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port->port;
    /* READ: the peer pulls rendezvous payloads from our buffers. */
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    err = ctx->v->modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                IBV_QP_ACCESS_FLAGS);
    if (err) {
        WEFT_WARN(NET, "ib: %s: moving QP 0x%x (%d of %d) to INIT failed: %s",
                  p->desc, qp->qp_num, qi + 1, p->nqp, wf_errno_str(err));
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

/* Creates QP `qi` in INIT with its receives posted and writes its part
 * of INFO. */
static weft_status_t qp_open(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi)
{
    wf_ib_qp_t *q = &p->qp[qi];
    wf_ib_rail_t *rl = &ctx->rail[q->rail];
    uint8_t *o = p->info_out + WF_IB_INFO_FIXED + qi * WF_IB_INFO_QP;
    struct ibv_qp_init_attr ia;

    memset(&ia, 0, sizeof(ia));
    ia.send_cq = rl->cq;
    ia.recv_cq = rl->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = p->nsend + WF_IB_CREDIT_WRITES + WF_IB_READS_PER_QP;
    ia.cap.max_recv_wr = p->nrecv;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    q->qp = ctx->v->create_qp(rl->pd, &ia);
    if (!q->qp) {
        WEFT_WARN(NET, "ib: %s: ibv_create_qp (RC, %d of %d) for %s failed: %s",
                  rl->port.dev_name, qi + 1, p->nqp, p->desc,
                  wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    WEFT_CHECK(qp_init(ctx, p, qi));
    /* Receives first: the peer may send as soon as it sees our READY. */
    for (unsigned s = 0; s < p->nrecv; s++)
        WEFT_CHECK(wf_ib_post_recv(ctx, p, qi, s));
    q->credit_sent = q->recvs_posted;
    q->psn = random_psn();
    wf_ib_put32(o, q->qp->qp_num);
    wf_ib_put32(o + 4, q->psn);
    wf_ib_put64(o + 8, (uint64_t)(uintptr_t)q->credit_in);
    wf_ib_put32(o + 16, p->b.mr[q->rail]->rkey);
    return WEFT_OK;
}

weft_status_t wf_ib_qp_create(wf_tctx_t *ctx, wf_ib_peer_t *p, int nqp)
{
    uint8_t *o = p->info_out;

    p->nqp = nqp;
    wf_ib_qp_slots(nqp, &p->nrecv, &p->nsend);
    p->credit_batch = WF_MAX(1u, p->nrecv / WF_IB_CREDIT_DIV);
    WEFT_CHECK(bufs_open(ctx, p));
    WEFT_CHECK(wf_ib_xfer_open(ctx, p));
    memset(p->info_out, 0, sizeof(p->info_out));
    for (int i = 0; i < nqp; i++)
        WEFT_CHECK(qp_open(ctx, p, i));
    wf_ib_put32(o, (uint32_t)nqp);
    wf_ib_put32(o + 4, p->nrecv);
    wf_ib_put32(o + 8, WF_IB_SLOT_LEN);
    wf_ib_put32(o + 12, (uint32_t)p->nrails);
    return WEFT_OK;
}

static weft_status_t qp_rtr(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi,
                            uint32_t rqpn, uint32_t rpsn)
{
    struct ibv_qp *qp = p->qp[qi].qp;
    const wf_ib_port_t *port = &ctx->rail[p->qp[qi].rail].port;
    const wf_ib_rrail_t *rr = &p->rrail[p->qp[qi].rail];
    struct ibv_qp_attr a;
    char gid[64];
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu)WF_MIN(port->mtu, rr->mtu);
    a.dest_qp_num = rqpn;
    a.rq_psn = rpsn;
    a.max_dest_rd_atomic = ctx->rd_atom ? ctx->rd_atom : 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = port->port;
    a.ah_attr.dlid = rr->lid;
    if (port->gid_index >= 0) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = rr->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)port->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    err = ctx->v->modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC |
                                IBV_QP_MIN_RNR_TIMER);
    if (err) {
        wf_ib_gid_str(&rr->gid, gid, sizeof(gid));
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "moving QP 0x%x (%d of %d, on %s:%d) to RTR (remote "
                        "QP 0x%x, gid %s, lid %u, sgid index %d, mtu %s) "
                        "failed: %s",
                        qp->qp_num, qi + 1, p->nqp, port->dev_name,
                        port->port, rqpn, gid, rr->lid,
                        port->gid_index, wf_ib_mtu_str(a.path_mtu),
                        wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

static weft_status_t qp_rts(wf_tctx_t *ctx, wf_ib_peer_t *p, int qi)
{
    wf_ib_qp_t *q = &p->qp[qi];
    struct ibv_qp_attr a;
    int err;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = WF_IB_QP_TIMEOUT;
    a.retry_cnt = WF_IB_QP_RETRY;
    a.rnr_retry = 7; /* credits make RNR impossible; never give up on it */
    a.sq_psn = q->psn;
    a.max_rd_atomic = ctx->rd_atom ? ctx->rd_atom : 1;
    err = ctx->v->modify_qp(q->qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC);
    if (err) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "moving QP 0x%x (%d of %d) to RTS failed: %s",
                        q->qp->qp_num, qi + 1, p->nqp, wf_errno_str(err));
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

weft_status_t wf_ib_qp_connect(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    const uint8_t *in = p->info_in;
    uint32_t nqp = wf_ib_get32(in), slots = wf_ib_get32(in + 4);
    uint32_t slot_len = wf_ib_get32(in + 8), rails = wf_ib_get32(in + 12);

    if (nqp != (uint32_t)p->nqp || rails != (uint32_t)p->nrails) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "the peer opens %u QP(s) over %u rail(s) for this "
                        "pair, this rank %d over %d: set the same "
                        "WEFT_IB_QPS on every rank",
                        nqp, rails, p->nqp, p->nrails);
        return WEFT_ERR_TRANSPORT;
    }
    if (slots != p->nrecv || slot_len != WF_IB_SLOT_LEN) {
        wf_ib_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                        "protocol mismatch: the peer uses %u slots of %u "
                        "bytes per QP, this side %u of %d (different weft "
                        "versions?)",
                        slots, slot_len, p->nrecv, WF_IB_SLOT_LEN);
        return WEFT_ERR_TRANSPORT;
    }
    for (int i = 0; i < p->nqp; i++) {
        const uint8_t *qin = in + WF_IB_INFO_FIXED + i * WF_IB_INFO_QP;
        p->qp[i].rcredit_addr = wf_ib_get64(qin + 8);
        p->qp[i].rcredit_rkey = wf_ib_get32(qin + 16);
        WEFT_CHECK(qp_rtr(ctx, p, i, wf_ib_get32(qin),
                          wf_ib_get32(qin + 4) & 0xffffff));
        WEFT_CHECK(qp_rts(ctx, p, i));
    }
    return WEFT_OK;
}

/* At debug: what each rail of the pair carried (SEND bytes this side
 * posted, READ bytes it pulled), so a user can see the rails share. */
static void rails_report(wf_tctx_t *ctx, const wf_ib_peer_t *p)
{
    char text[256] = "";

    if (!p->qp[0].qp || !WF_LOG_ENABLED_(WEFT_LOG_DEBUG, WF_SUBSYS_NET))
        return;
    for (int r = 0; r < p->nrails; r++) {
        uint64_t sent = 0, read = 0;
        size_t used = strlen(text);
        for (int i = r; i < p->nqp; i += p->nrails) {
            sent += p->qp[i].bytes_sent;
            read += p->qp[i].bytes_read;
        }
        snprintf(text + used, sizeof(text) - used,
                 "%s%s:%d sent %llu, read %llu", r ? "; " : "",
                 ctx->rail[r].port.dev_name, ctx->rail[r].port.port,
                 (unsigned long long)sent, (unsigned long long)read);
    }
    WEFT_DEBUG(NET, "ib: %s: bytes per rail: %s", p->desc, text);
}

void wf_ib_qp_destroy(wf_tctx_t *ctx, wf_ib_peer_t *p)
{
    rails_report(ctx, p);
    for (int i = 0; i < WF_IB_QPS_MAX; i++) {
        if (p->qp[i].qp)
            ctx->v->destroy_qp(p->qp[i].qp);
        p->qp[i].qp = NULL;
    }
    for (int r = 0; r < WF_IB_RAILS_MAX; r++) {
        if (p->b.mr[r])
            ctx->v->dereg_mr(p->b.mr[r]);
        p->b.mr[r] = NULL;
    }
    wf_topo_mem_free(p->b.mem, p->b.len);
    p->b.mem = NULL;
}
