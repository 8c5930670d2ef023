/*
 * ib_init.c - verbs context creation and release, the address blob,
 * query(), get_fd() and peer_describe().
 *
 * One context owns, per rail (ib.h), a device context, protection domain,
 * completion channel and completion queue shared by all its peers, and a
 * private TCP context for the bootstrap.  The fd given to the engine is an
 * epoll set holding every completion channel and the TCP context's own
 * epoll fd, so the engine sleeps until any has work.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "config.h"
#include "ib.h"

/* Completions one progress() call takes from the CQ at a time. */
#define WF_IB_CQ_MIN 64

static weft_status_t check_config(const wf_tconfig_t *cfg)
{
    const wf_config_t *k = cfg->knobs;

    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size) {
        WEFT_WARN(NET, "ib: invalid rank %d for size %d", cfg->rank,
                  cfg->size);
        return WEFT_ERR_INVALID_ARG;
    }
    /* 0 (a caller that left it unset) means one QP. */
    if (k && (k->ib_qps < 0 || k->ib_qps > WF_IB_QPS_MAX)) {
        WEFT_WARN(NET, "ib: WEFT_IB_QPS=%lld is outside 1-%d",
                  (long long)k->ib_qps, WF_IB_QPS_MAX);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

/* The verbs knobs (ib_params.def) from the snapshot; without one, one
 * QP, no zero copy, automatic device and GID. */
static void knobs_read(wf_tctx_t *ctx, const wf_config_t *k)
{
    ctx->gid_index = -1;
    ctx->nqp = 1;
    if (!k)
        return;
    wf_strlcpy(ctx->hca, k->ib_hca, sizeof(ctx->hca));
    if (k->ib_gid_index >= 0)
        ctx->gid_index = (int)k->ib_gid_index;
    if (k->ib_qps > 0)
        ctx->nqp = (int)k->ib_qps;
    ctx->zcopy_min = (size_t)k->ib_zcopy_min;
}

void wf_ib_match_open(wf_tctx_t *ctx)
{
    wf_match_init(&ctx->m, "ib", ctx->cfg.rank, ctx->cfg.size,
                  sizeof(wf_mmsg_t));
    ctx->m.release = wf_ib_req_release;
    WF_MATCH_PEERS(&ctx->m, ctx->peers, m);
    for (int i = 0; i < ctx->cfg.size; i++)
        ctx->peers[i].m.desc = ctx->peers[i].desc;
}

void wf_ib_xfer_free_all(wf_tctx_t *ctx)
{
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++) {
        /* Before the unexpected list its pulls point into. */
        wf_ib_rndv_free(ctx, &ctx->peers[i]);
        wf_ib_recv_free(ctx, &ctx->peers[i]);
    }
    wf_match_fini(&ctx->m);
}

static weft_status_t epoll_add(wf_tctx_t *ctx, int fd)
{
    struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};

    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0) {
        WEFT_WARN(NET, "ib: epoll_ctl failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

/* The bootstrap TCP context; its address family decides the GID family. */
static weft_status_t open_boot(wf_tctx_t *ctx, int *family)
{
    wf_tdev_attr_t attr;

    ctx->boot_ops = &wf_tcp_transport;
    WEFT_CHECK(ctx->boot_ops->init(&ctx->cfg, &ctx->boot));
    WEFT_CHECK(ctx->boot_ops->query(ctx->boot, &attr));
    *family = attr.address[0] == '[' ? 6 : 4;
    wf_strlcpy(ctx->local_str, attr.address, sizeof(ctx->local_str));
    return WEFT_OK;
}

/* The TCP context's address goes after the rails' part of the blob. */
static weft_status_t boot_address(wf_tctx_t *ctx)
{
    size_t at = WF_IB_BLOB_LEN(ctx->nrails);

    ctx->blob_len = WF_TADDR_MAX - at;
    WEFT_CHECK(ctx->boot_ops->get_address(ctx->boot, ctx->blob + at,
                                          &ctx->blob_len));
    if (ctx->blob_len > 255) {
        WEFT_WARN(NET, "ib: the bootstrap address takes %zu bytes, more "
                  "than the blob's length byte holds", ctx->blob_len);
        return WEFT_ERR_INTERNAL;
    }
    return WEFT_OK;
}

static void blob_encode(wf_tctx_t *ctx)
{
    uint8_t *b = ctx->blob;
    size_t at = WF_IB_BLOB_LEN(ctx->nrails);

    b[0] = (uint8_t)WF_IB_VERSION;
    b[1] = (uint8_t)ctx->nrails;
    for (int i = 0; i < ctx->nrails; i++) {
        const wf_ib_port_t *port = &ctx->rail[i].port;
        uint8_t *r = b + 2 + (size_t)i * WF_IB_BLOB_RAIL;
        r[0] = port->link_layer;
        r[1] = port->port;
        r[2] = port->mtu;
        r[3] = (uint8_t)(port->lid & 0xff);
        r[4] = (uint8_t)(port->lid >> 8);
        memcpy(r + 5, port->gid.raw, 16);
    }
    b[at - 1] = (uint8_t)ctx->blob_len; /* the TCP part follows */
    ctx->blob_len += at;
}

/* A CQ deep enough for every work request of every peer's QPs on a rail
 * (each rail carries nqp / rails of them; the depth covers all of them,
 * which a pair with fewer rails than this context puts on rail 0). */
static int cq_depth(const wf_tctx_t *ctx)
{
    unsigned nrecv, nsend;
    int nqp = wf_ib_pair_qps(ctx->nqp, ctx->nrails);

    wf_ib_qp_slots(nqp, &nrecv, &nsend);
    return WF_MAX(WF_IB_CQ_MIN,
                  (ctx->cfg.size - 1) * nqp *
                          (int)(nrecv + nsend + WF_IB_CREDIT_WRITES +
                                WF_IB_READS_PER_QP) +
                      16);
}

/* Protection domain, completion channel and CQ of one rail; lowers
 * ctx->rd_atom and ctx->cq_depth to what its device takes. */
static weft_status_t open_rail(wf_tctx_t *ctx, wf_ib_rail_t *rl)
{
    const wf_ibv_t *v = ctx->v;
    struct ibv_device_attr da;
    int flags;

    rl->pd = v->alloc_pd(rl->dev);
    if (!rl->pd) {
        WEFT_WARN(NET, "ib: %s: ibv_alloc_pd failed: %s", rl->port.dev_name,
                  wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    rl->channel = v->create_comp_channel(rl->dev);
    if (!rl->channel) {
        WEFT_WARN(NET, "ib: %s: ibv_create_comp_channel failed: %s",
                  rl->port.dev_name, wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    /* progress() must never block on the channel. */
    flags = fcntl(rl->channel->fd, F_GETFL);
    fcntl(rl->channel->fd, F_SETFL, flags | O_NONBLOCK);
    memset(&da, 0, sizeof(da));
    v->query_device(rl->dev, &da);
    /* READs in flight per QP, as initiator and as responder: more than
     * the device takes would fail the move to RTR/RTS.  Peers on other
     * devices may take fewer; the HCA then holds the surplus back. */
    if (da.max_qp_rd_atom > 0 && da.max_qp_rd_atom < ctx->rd_atom)
        ctx->rd_atom = (uint8_t)da.max_qp_rd_atom;
    if (da.max_qp_init_rd_atom > 0 && da.max_qp_init_rd_atom < ctx->rd_atom)
        ctx->rd_atom = (uint8_t)da.max_qp_init_rd_atom;
    if (da.max_cqe > 0 && ctx->cq_depth > da.max_cqe)
        ctx->cq_depth = da.max_cqe;
    rl->cq = v->create_cq(rl->dev, ctx->cq_depth, NULL, rl->channel, 0);
    if (!rl->cq) {
        WEFT_WARN(NET, "ib: %s: ibv_create_cq with %d entries failed: %s",
                  rl->port.dev_name, ctx->cq_depth, wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    if (ibv_req_notify_cq(rl->cq, 0) != 0) {
        WEFT_WARN(NET, "ib: %s: ibv_req_notify_cq failed",
                  rl->port.dev_name);
        return WEFT_ERR_TRANSPORT;
    }
    return WEFT_OK;
}

/* Opens the rails' ports, then their verbs objects. */
static weft_status_t open_rails(wf_tctx_t *ctx, int family)
{
    struct ibv_context *dev[WF_IB_RAILS_MAX];
    wf_ib_port_t port[WF_IB_RAILS_MAX];

    WEFT_CHECK(wf_ib_dev_open(ctx->v, ctx->hca, ctx->cfg.topo_hca,
                              ctx->cfg.topo_why, ctx->gid_index, family,
                              WF_IB_RAILS_MAX, dev, port, &ctx->nrails));
    for (int i = 0; i < ctx->nrails; i++) {
        size_t used = strlen(ctx->rails_str);
        ctx->rail[i].dev = dev[i];
        ctx->rail[i].port = port[i];
        snprintf(ctx->rails_str + used, sizeof(ctx->rails_str) - used,
                 "%s%s:%d", i ? "+" : "", port[i].dev_name, port[i].port);
    }
    ctx->rd_atom = WF_IB_READS_PER_QP;
    ctx->cq_depth = cq_depth(ctx);
    for (int i = 0; i < ctx->nrails; i++)
        WEFT_CHECK(open_rail(ctx, &ctx->rail[i]));
    return WEFT_OK;
}

static weft_status_t open_context(wf_tctx_t *ctx)
{
    const char *why = NULL;
    int family = 4;
    char gid[64];

    ctx->v = wf_ibv_load(&why);
    if (!ctx->v) {
        WEFT_WARN(NET, "ib: verbs unavailable: %s", why);
        return WEFT_ERR_UNSUPPORTED;
    }
    ctx->peers = calloc((size_t)ctx->cfg.size, sizeof(*ctx->peers));
    if (!ctx->peers) {
        WEFT_WARN(NET, "ib: out of memory for %d peers", ctx->cfg.size);
        return WEFT_ERR_NO_MEMORY;
    }
    for (int i = 0; i < ctx->cfg.size; i++) {
        ctx->peers[i].rank = i;
        snprintf(ctx->peers[i].desc, sizeof(ctx->peers[i].desc), "peer %d",
                 i);
    }
    wf_ib_match_open(ctx);
    WEFT_CHECK(open_boot(ctx, &family));
    WEFT_CHECK(open_rails(ctx, family));
    WEFT_CHECK(boot_address(ctx));
    /* Each rail pins the peers' buffers once more. */
    WEFT_CHECK(wf_ib_check_memlock(
        wf_ib_peer_mem(wf_ib_pair_qps(ctx->nqp, ctx->nrails)) *
        (size_t)ctx->nrails * (size_t)(ctx->cfg.size - 1)));
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        WEFT_WARN(NET, "ib: epoll_create1 failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    for (int i = 0; i < ctx->nrails; i++)
        WEFT_CHECK(epoll_add(ctx, ctx->rail[i].channel->fd));
    WEFT_CHECK(epoll_add(ctx, ctx->boot_ops->get_fd(ctx->boot)));
    ctx->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ctx->timer_fd < 0) {
        WEFT_WARN(NET, "ib: timerfd_create failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    WEFT_CHECK(epoll_add(ctx, ctx->timer_fd));
    blob_encode(ctx);
    if (ctx->rail[0].port.gid_index >= 0) {
        size_t used = strlen(ctx->local_str);
        wf_ib_gid_str(&ctx->rail[0].port.gid, gid, sizeof(gid));
        snprintf(ctx->local_str + used, sizeof(ctx->local_str) - used,
                 " gid %s%s", gid, ctx->nrails > 1 ? " (rail 0)" : "");
    }
    return WEFT_OK;
}

weft_status_t wf_ib_init(const wf_tconfig_t *cfg, wf_tctx_t **out)
{
    weft_status_t st;
    wf_tctx_t *ctx;
    int pair_qps;

    if (!cfg || !out)
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(check_config(cfg));
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        WEFT_WARN(NET, "ib: out of memory for a context");
        return WEFT_ERR_NO_MEMORY;
    }
    /* The snapshot stays in ctx->cfg for the bootstrap context's init,
     * which reads the TCP knobs from it; never after. */
    ctx->cfg = *cfg;
    ctx->epfd = ctx->timer_fd = -1;
    knobs_read(ctx, cfg->knobs);
    WEFT_CHECK_GOTO(open_context(ctx), st, err_fini);
    ctx->cfg.knobs = NULL;
    pair_qps = wf_ib_pair_qps(ctx->nqp, ctx->nrails);
    WEFT_DEBUG(NET, "ib: rank %d on %s (%d rail%s; rail 0: %s, mtu %s, gid "
               "index %d; %d QP%s per peer, zero-copy from %zu bytes), "
               "bootstrap %s",
               cfg->rank, ctx->rails_str, ctx->nrails,
               ctx->nrails == 1 ? "" : "s",
               ctx->rail[0].port.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE"
                                                                       : "IB",
               wf_ib_mtu_str(ctx->rail[0].port.mtu),
               ctx->rail[0].port.gid_index,
               pair_qps, pair_qps == 1 ? "" : "s",
               ctx->zcopy_min, ctx->local_str);
    *out = ctx;
    return WEFT_OK;
err_fini:
    wf_ib_fini(ctx);
    return st;
}

void wf_ib_fini(wf_tctx_t *ctx)
{
    const wf_ibv_t *v;

    if (!ctx)
        return;
    v = ctx->v;
    if (ctx->boot)
        wf_ib_conn_bye(ctx);
    /* QPs go before the memory they point into. */
    for (int i = 0; ctx->peers && i < ctx->cfg.size; i++)
        wf_ib_qp_destroy(ctx, &ctx->peers[i]);
    wf_ib_xfer_free_all(ctx);
    if (ctx->boot)
        ctx->boot_ops->fini(ctx->boot);
    for (int i = 0; i < WF_IB_RAILS_MAX; i++) {
        wf_ib_rail_t *rl = &ctx->rail[i];
        if (rl->cq) {
            if (rl->cq_events)
                v->ack_cq_events(rl->cq, rl->cq_events);
            v->destroy_cq(rl->cq);
        }
        if (rl->channel)
            v->destroy_comp_channel(rl->channel);
    }
    wf_ib_mrcache_free(ctx);
    for (int i = 0; i < WF_IB_RAILS_MAX; i++) {
        wf_ib_rail_t *rl = &ctx->rail[i];
        if (rl->pd)
            v->dealloc_pd(rl->pd);
        if (rl->dev)
            v->close_device(rl->dev);
    }
    if (ctx->epfd >= 0)
        close(ctx->epfd);
    if (ctx->timer_fd >= 0)
        close(ctx->timer_fd);
    free(ctx->peers);
    free(ctx);
}

weft_status_t wf_ib_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr)
{
    if (!ctx || !attr)
        return WEFT_ERR_INVALID_ARG;
    memset(attr, 0, sizeof(*attr));
    wf_strlcpy(attr->name, ctx->rails_str, sizeof(attr->name));
    wf_strlcpy(attr->address, ctx->local_str, sizeof(attr->address));
    attr->caps = WF_TCAP_HOST_MEM | WF_TCAP_RDMA;
    /* Zero-copy messages are read from and into registered memory: with
     * the operation's buffers registered once, each message's own
     * registration is a reference to theirs (ib_mr.c). */
    attr->reg_min = ctx->zcopy_min;
    for (int i = 0; i < ctx->nrails; i++)
        attr->speed_mbps += ctx->rail[i].port.speed_mbps;
    return WEFT_OK;
}

weft_status_t wf_ib_get_address(wf_tctx_t *ctx, void *addr, size_t *len)
{
    if (!ctx || !addr || !len)
        return WEFT_ERR_INVALID_ARG;
    if (*len < ctx->blob_len) {
        WEFT_WARN(NET, "ib: address buffer of %zu bytes, need %zu", *len,
                  ctx->blob_len);
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, ctx->blob, ctx->blob_len);
    *len = ctx->blob_len;
    return WEFT_OK;
}

int wf_ib_get_fd(wf_tctx_t *ctx)
{
    return ctx ? ctx->epfd : -1;
}

const char *wf_ib_peer_describe(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->cfg.size)
        return "peer ? (invalid)";
    return ctx->peers[peer].desc;
}
