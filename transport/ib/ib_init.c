/*
 * ib_init.c - verbs context creation and release, the address blob,
 * query(), get_fd() and peer_describe().
 *
 * One context owns one device context, protection domain, completion
 * channel and completion queue shared by all its peers, and a private TCP
 * context for the bootstrap (ib.h).  The fd given to the engine is an
 * epoll set holding the completion channel and the TCP context's own
 * epoll fd, so the engine sleeps until either has work.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ib.h"

/* Completions one progress() call takes from the CQ at a time. */
#define WF_IB_CQ_MIN 64

static weft_status_t check_config(const wf_tconfig_t *cfg)
{
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size) {
        WEFT_WARN(NET, "ib: invalid rank %d for size %d", cfg->rank,
                  cfg->size);
        return WEFT_ERR_INVALID_ARG;
    }
    /* 0 (a caller that left it unset) means one QP. */
    if (cfg->ib_qps < 0 || cfg->ib_qps > WF_IB_QPS_MAX) {
        WEFT_WARN(NET, "ib: WEFT_IB_QPS=%d is outside 1-%d", cfg->ib_qps,
                  WF_IB_QPS_MAX);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
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
    ctx->blob_len = WF_TADDR_MAX - WF_IB_BLOB_FIXED;
    WEFT_CHECK(ctx->boot_ops->get_address(
        ctx->boot, ctx->blob + WF_IB_BLOB_FIXED, &ctx->blob_len));
    WEFT_CHECK(ctx->boot_ops->query(ctx->boot, &attr));
    *family = attr.address[0] == '[' ? 6 : 4;
    wf_strlcpy(ctx->local_str, attr.address, sizeof(ctx->local_str));
    return WEFT_OK;
}

static void blob_encode(wf_tctx_t *ctx)
{
    uint8_t *b = ctx->blob;

    b[0] = (uint8_t)WF_IB_VERSION;
    b[1] = ctx->port.link_layer;
    b[2] = ctx->port.port;
    b[3] = ctx->port.mtu;
    b[4] = (uint8_t)(ctx->port.lid & 0xff);
    b[5] = (uint8_t)(ctx->port.lid >> 8);
    memcpy(b + 6, ctx->port.gid.raw, 16);
    b[22] = (uint8_t)ctx->blob_len; /* the TCP part follows */
    ctx->blob_len += WF_IB_BLOB_FIXED;
}

static weft_status_t open_verbs(wf_tctx_t *ctx)
{
    const wf_ibv_t *v = ctx->v;
    struct ibv_device_attr da;
    int peers = ctx->cfg.size - 1;
    unsigned nrecv, nsend;
    int flags;

    ctx->pd = v->alloc_pd(ctx->dev);
    if (!ctx->pd) {
        WEFT_WARN(NET, "ib: %s: ibv_alloc_pd failed: %s", ctx->port.dev_name,
                  wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    ctx->channel = v->create_comp_channel(ctx->dev);
    if (!ctx->channel) {
        WEFT_WARN(NET, "ib: %s: ibv_create_comp_channel failed: %s",
                  ctx->port.dev_name, wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    /* progress() must never block on the channel. */
    flags = fcntl(ctx->channel->fd, F_GETFL);
    fcntl(ctx->channel->fd, F_SETFL, flags | O_NONBLOCK);
    memset(&da, 0, sizeof(da));
    v->query_device(ctx->dev, &da);
    wf_ib_qp_slots(ctx->nqp, &nrecv, &nsend);
    ctx->cq_depth = WF_MAX(WF_IB_CQ_MIN,
                           peers * ctx->nqp *
                                   (int)(nrecv + nsend + WF_IB_CREDIT_WRITES +
                                         WF_IB_READS_PER_QP) +
                               16);
    /* READs in flight per QP, as initiator and as responder: more than
     * the device takes would fail the move to RTR/RTS.  Peers on other
     * devices may take fewer; the HCA then holds the surplus back. */
    ctx->rd_atom = WF_IB_READS_PER_QP;
    if (da.max_qp_rd_atom > 0 && da.max_qp_rd_atom < ctx->rd_atom)
        ctx->rd_atom = (uint8_t)da.max_qp_rd_atom;
    if (da.max_qp_init_rd_atom > 0 && da.max_qp_init_rd_atom < ctx->rd_atom)
        ctx->rd_atom = (uint8_t)da.max_qp_init_rd_atom;
    if (da.max_cqe > 0 && ctx->cq_depth > da.max_cqe)
        ctx->cq_depth = da.max_cqe;
    ctx->cq = v->create_cq(ctx->dev, ctx->cq_depth, NULL, ctx->channel, 0);
    if (!ctx->cq) {
        WEFT_WARN(NET, "ib: %s: ibv_create_cq with %d entries failed: %s",
                  ctx->port.dev_name, ctx->cq_depth, wf_errno_str(errno));
        return WEFT_ERR_TRANSPORT;
    }
    if (ibv_req_notify_cq(ctx->cq, 0) != 0) {
        WEFT_WARN(NET, "ib: %s: ibv_req_notify_cq failed",
                  ctx->port.dev_name);
        return WEFT_ERR_TRANSPORT;
    }
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
    WEFT_CHECK(open_boot(ctx, &family));
    WEFT_CHECK(wf_ib_dev_open(ctx->v, ctx->cfg.ib_hca, ctx->cfg.topo_hca,
                              ctx->cfg.topo_why,
                              ctx->cfg.ib_gid_set ? ctx->cfg.ib_gid_index : -1,
                              family, &ctx->dev, &ctx->port));
    WEFT_CHECK(wf_ib_check_memlock(wf_ib_peer_mem(ctx->nqp) *
                                   (size_t)(ctx->cfg.size - 1)));
    WEFT_CHECK(open_verbs(ctx));
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        WEFT_WARN(NET, "ib: epoll_create1 failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    WEFT_CHECK(epoll_add(ctx, ctx->channel->fd));
    WEFT_CHECK(epoll_add(ctx, ctx->boot_ops->get_fd(ctx->boot)));
    ctx->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ctx->timer_fd < 0) {
        WEFT_WARN(NET, "ib: timerfd_create failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    WEFT_CHECK(epoll_add(ctx, ctx->timer_fd));
    blob_encode(ctx);
    if (ctx->port.gid_index >= 0) {
        size_t used = strlen(ctx->local_str);
        wf_ib_gid_str(&ctx->port.gid, gid, sizeof(gid));
        snprintf(ctx->local_str + used, sizeof(ctx->local_str) - used,
                 " gid %s", gid);
    }
    return WEFT_OK;
}

weft_status_t wf_ib_init(const wf_tconfig_t *cfg, wf_tctx_t **out)
{
    weft_status_t st;
    wf_tctx_t *ctx;

    if (!cfg || !out)
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(check_config(cfg));
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        WEFT_WARN(NET, "ib: out of memory for a context");
        return WEFT_ERR_NO_MEMORY;
    }
    ctx->cfg = *cfg;
    ctx->cfg.ib_hca[sizeof(ctx->cfg.ib_hca) - 1] = '\0';
    ctx->epfd = ctx->timer_fd = -1;
    ctx->nqp = cfg->ib_qps > 0 ? cfg->ib_qps : 1;
    ctx->zcopy_min = cfg->ib_zcopy_min;
    WEFT_CHECK_GOTO(open_context(ctx), st, err_fini);
    WEFT_DEBUG(NET, "ib: rank %d on %s:%d (%s, mtu %s, gid index %d, %d QP%s "
               "per peer, zero-copy from %zu bytes), bootstrap %s",
               cfg->rank, ctx->port.dev_name, ctx->port.port,
               ctx->port.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "IB",
               wf_ib_mtu_str(ctx->port.mtu), ctx->port.gid_index, ctx->nqp,
               ctx->nqp == 1 ? "" : "s", ctx->zcopy_min, ctx->local_str);
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
    if (ctx->cq) {
        if (ctx->cq_events)
            v->ack_cq_events(ctx->cq, ctx->cq_events);
        v->destroy_cq(ctx->cq);
    }
    if (ctx->channel)
        v->destroy_comp_channel(ctx->channel);
    wf_ib_mrcache_free(ctx);
    if (ctx->pd)
        v->dealloc_pd(ctx->pd);
    if (ctx->dev)
        v->close_device(ctx->dev);
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
    snprintf(attr->name, sizeof(attr->name), "%.56s:%d", ctx->port.dev_name,
             ctx->port.port);
    wf_strlcpy(attr->address, ctx->local_str, sizeof(attr->address));
    attr->caps = WF_TCAP_HOST_MEM | WF_TCAP_RDMA;
    attr->speed_mbps = ctx->port.speed_mbps;
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
