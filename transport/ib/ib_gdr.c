/*
 * ib_gdr.c - registering device (GPU) memory with the HCA: GPUDirect RDMA.
 *
 * Two ways exist, tried in this order:
 *
 *  1. dma-buf: the CUDA driver exports the allocation as a dma-buf fd
 *     (cuMemGetHandleForAddressRange, through the device layer, so
 *     libweft links no CUDA library) and rdma-core registers it
 *     (ibv_reg_dmabuf_mr, rdma-core v34 and later, found with dlsym as an
 *     optional symbol).  Upstream kernel interfaces only; no out-of-tree
 *     module.
 *  2. peer memory: ibv_reg_mr on the device pointer itself, which works
 *     when the nvidia-peermem module (or the older nv_peer_mem) lets the
 *     HCA driver pin GPU pages.
 *
 * When neither works the answer is WEFT_ERR_UNSUPPORTED and the engine
 * stages device buffers through host memory, as it does on every
 * transport.  Which way a context uses is logged once at info level; why
 * both failed is logged once too, so a job on a host without GPUDirect
 * says so without a line per buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "ib.h"
#include "weft_cuda.h"

#define WF_IB_GDR_ACCESS                                                       \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

enum { WF_GDR_LOG_DMABUF = 1, WF_GDR_LOG_PEERMEM = 2, WF_GDR_LOG_NONE = 4 };

static bool first_time(wf_tctx_t *ctx, unsigned bit)
{
    bool first = !(ctx->gdr_logged & bit);

    ctx->gdr_logged |= bit;
    return first;
}

static struct ibv_mr *try_dmabuf(wf_tctx_t *ctx, struct ibv_pd *pd,
                                 void *buf, size_t len, char *why,
                                 size_t why_len)
{
    char dev_why[256] = "";
    const wf_dev_ops_t *dev = wf_dev_layer(dev_why, sizeof(dev_why));
    struct ibv_mr *mr;
    uint64_t off = 0;
    int fd = -1, err;

    if (!ctx->v->reg_dmabuf_mr) {
        snprintf(why, why_len, "libibverbs has no ibv_reg_dmabuf_mr "
                               "(rdma-core older than v34)");
        return NULL;
    }
    if (!dev || !dev->dmabuf_fd) {
        snprintf(why, why_len, "no device layer: %s", dev_why);
        return NULL;
    }
    if (dev->dmabuf_fd(buf, len, &fd, &off) != WEFT_OK) {
        snprintf(why, why_len, "%s", dev->last_error());
        return NULL;
    }
    mr = ctx->v->reg_dmabuf_mr(pd, off, len, (uint64_t)(uintptr_t)buf,
                               fd, WF_IB_GDR_ACCESS);
    err = errno;
    close(fd); /* the registration holds its own reference */
    if (!mr)
        snprintf(why, why_len, "ibv_reg_dmabuf_mr failed: %s",
                 wf_errno_str(err));
    return mr;
}

static struct ibv_mr *try_peermem(wf_tctx_t *ctx, struct ibv_pd *pd,
                                  void *buf, size_t len, char *why,
                                  size_t why_len)
{
    struct ibv_mr *mr = ctx->v->reg_mr(pd, buf, len, WF_IB_GDR_ACCESS);

    if (!mr)
        snprintf(why, why_len, "ibv_reg_mr on the device pointer failed: "
                               "%s (nvidia-peermem not loaded?)",
                 wf_errno_str(errno));
    return mr;
}

weft_status_t wf_ib_gdr_reg(wf_tctx_t *ctx, int rail, void *buf, size_t len,
                            struct ibv_mr **mr, const char **kind)
{
    char why_dmabuf[256], why_peer[256];
    const char *dev_name = ctx->rail[rail].port.dev_name;
    struct ibv_pd *pd = ctx->rail[rail].pd;

    /* ibv_reg_mr would pin a host range it is wrongly told is device
     * memory and call it peer memory: only the device layer's word
     * counts. */
    if (wf_dev_memtype(buf, NULL) != WF_MEM_DEVICE) {
        WEFT_DEBUG(NET, "ib: %s: %p is not device memory (no CUDA driver "
                        "in the process, or a host pointer)",
                   dev_name, buf);
        *mr = NULL;
        *kind = "none";
        return WEFT_ERR_UNSUPPORTED;
    }
    *mr = try_dmabuf(ctx, pd, buf, len, why_dmabuf, sizeof(why_dmabuf));
    if (*mr) {
        *kind = "dma-buf";
        if (first_time(ctx, WF_GDR_LOG_DMABUF))
            WEFT_INFO(NET, "ib: %s: GPUDirect RDMA: device memory registered "
                           "as dma-buf (ibv_reg_dmabuf_mr)",
                      dev_name);
        return WEFT_OK;
    }
    *mr = try_peermem(ctx, pd, buf, len, why_peer, sizeof(why_peer));
    if (*mr) {
        *kind = "peer memory";
        if (first_time(ctx, WF_GDR_LOG_PEERMEM))
            WEFT_INFO(NET, "ib: %s: GPUDirect RDMA: device memory registered "
                           "through peer memory (ibv_reg_mr; dma-buf: %s)",
                      dev_name, why_dmabuf);
        return WEFT_OK;
    }
    *kind = "none";
    if (first_time(ctx, WF_GDR_LOG_NONE))
        WEFT_INFO(NET, "ib: %s: no GPUDirect RDMA (dma-buf: %s; peer memory: "
                       "%s): device buffers are staged through host memory",
                  dev_name, why_dmabuf, why_peer);
    return WEFT_ERR_UNSUPPORTED;
}

void wf_ib_gdr_describe(char *out, size_t len)
{
    const char *why = NULL;
    const wf_ibv_t *v = wf_ibv_load(&why);
    const wf_dev_ops_t *dev = wf_dev_layer(NULL, 0);
    bool peermem = access("/sys/module/nvidia_peermem", F_OK) == 0 ||
                   access("/sys/module/nv_peer_mem", F_OK) == 0;
    char dmabuf_why[256] = "no device layer";
    bool dmabuf = false;
    void *probe = NULL;
    uint64_t off;
    int fd;

    if (!v) {
        snprintf(out, len, "none: verbs unavailable (%s)", why);
        return;
    }
    /* Whether the driver exports dma-bufs: ask for one of a small
     * allocation. */
    if (!v->reg_dmabuf_mr) {
        snprintf(dmabuf_why, sizeof(dmabuf_why),
                 "rdma-core has no ibv_reg_dmabuf_mr (older than v34)");
    } else if (dev && dev->dmabuf_fd && dev->alloc(1 << 21, &probe) == 0) {
        dmabuf = dev->dmabuf_fd(probe, 1 << 21, &fd, &off) == WEFT_OK;
        if (dmabuf)
            close(fd);
        else
            snprintf(dmabuf_why, sizeof(dmabuf_why), "%s",
                     dev->last_error());
        dev->free(probe);
    }
    if (dmabuf)
        snprintf(out, len, "dma-buf (ibv_reg_dmabuf_mr with "
                           "cuMemGetHandleForAddressRange)%s",
                 peermem ? "; peer memory also available" : "");
    else if (peermem)
        snprintf(out, len, "peer memory (nvidia-peermem loaded; no dma-buf: "
                           "%s)",
                 dmabuf_why);
    else
        snprintf(out, len, "none (no dma-buf: %s; nvidia-peermem not "
                           "loaded): verbs stages GPU buffers through host "
                           "memory",
                 dmabuf_why);
}
