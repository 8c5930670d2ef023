/*
 * devbuf.c - where a call's buffers live.
 *
 * Every collective asks about its buffers, so the answer must be cheap:
 * without the CUDA driver in the process it is "host" after a check that
 * costs nanoseconds (cuda/dev_load.c); with it, the device layer's
 * pointer query (cudaPointerGetAttributes) costs around a microsecond, so
 * each communicator keeps the last WF_MEMCACHE_SLOTS answers by exact
 * pointer: training loops hand the same gradient buffers over and over.
 * A cached answer stays right while the memory stays allocated; with
 * unified addressing a freed device range is not handed out as host memory,
 * which is what makes caching safe (documented in docs/cuda.md).
 */
#include <stdio.h>

#include "common.h"
#include "dev/devbuf.h"

void wf_memcache_init(wf_memcache_t *mc)
{
    *mc = (wf_memcache_t){0};
    pthread_mutex_init(&mc->lock, NULL);
}

void wf_memcache_fini(wf_memcache_t *mc) { pthread_mutex_destroy(&mc->lock); }

static wf_memtype_t lookup(wf_memcache_t *mc, const void *ptr, int *device)
{
    pthread_mutex_lock(&mc->lock);
    for (unsigned k = 0; k < WF_MEMCACHE_SLOTS; k++)
        if (mc->slot[k].ptr == ptr) {
            wf_memtype_t t = mc->slot[k].type;
            *device = mc->slot[k].device;
            pthread_mutex_unlock(&mc->lock);
            return t;
        }
    pthread_mutex_unlock(&mc->lock);
    wf_memtype_t t = wf_dev_memtype(ptr, device);
    if (!wf_dev_answers_cacheable())
        return t; /* cheap without a real layer, and it may change */
    pthread_mutex_lock(&mc->lock);
    unsigned k = mc->next++ % WF_MEMCACHE_SLOTS;
    mc->slot[k].ptr = ptr;
    mc->slot[k].type = t;
    mc->slot[k].device = *device;
    pthread_mutex_unlock(&mc->lock);
    return t;
}

static const char *type_name(wf_memtype_t t)
{
    switch (t) {
    case WF_MEM_HOST_PINNED: return "pinned host memory";
    case WF_MEM_DEVICE: return "device memory";
    case WF_MEM_MANAGED: return "managed memory";
    default: return "host memory";
    }
}

weft_status_t wf_devbuf_classify(wf_memcache_t *mc, const char *fn,
                                 const void *sendbuf, uint64_t send_bytes,
                                 const void *recvbuf, uint64_t recv_bytes,
                                 const wf_dev_ops_t **ops, int *ordinal)
{
    int sdev = -1, rdev = -1;
    *ops = NULL;
    *ordinal = -1;
    /* Before CUDA is in the process every buffer is host memory: one check
     * for both, without the cache's lock. */
    if (!wf_dev_possible())
        return WEFT_OK;
    wf_memtype_t st = send_bytes ? lookup(mc, sendbuf, &sdev) : WF_MEM_HOST;
    wf_memtype_t rt = recv_bytes ? lookup(mc, recvbuf, &rdev) : WF_MEM_HOST;
    bool sd = st == WF_MEM_DEVICE, rd = rt == WF_MEM_DEVICE;
    if (!sd && !rd)
        return WEFT_OK; /* host, pinned or managed: the host path */
    if (send_bytes && recv_bytes && (sd != rd || sdev != rdev)) {
        WEFT_WARN(COLL, "%s: sendbuf is %s%s and recvbuf is %s%s: both must "
                  "be device memory of one GPU, or both host memory", fn,
                  type_name(st), sd ? " (GPU)" : "", type_name(rt),
                  rd ? " (GPU)" : "");
        return WEFT_ERR_INVALID_ARG;
    }
    char why[512] = "";
    *ops = wf_dev_layer(why, sizeof(why));
    if (!*ops) {
        WEFT_WARN(COLL, "%s: the buffers are device memory but the device "
                  "layer is unavailable: %s", fn, why);
        return WEFT_ERR_CUDA;
    }
    *ordinal = sd ? sdev : rdev;
    return WEFT_OK;
}
