/*
 * devbuf.h - where a call's buffers live (devbuf.c): host or device
 * memory, through the device layer (cuda/weft_cuda.h), with a small
 * per-communicator cache.
 */
#ifndef WF_DEVBUF_H
#define WF_DEVBUF_H

#include <pthread.h>
#include <stdint.h>

#include "weft.h"
#include "weft_cuda.h"

#define WF_MEMCACHE_SLOTS 16

/* The memory types of recently seen buffers (exact pointers). */
typedef struct wf_memcache {
    pthread_mutex_t lock;
    struct {
        const void *ptr;
        wf_memtype_t type;
        int device;
    } slot[WF_MEMCACHE_SLOTS];
    unsigned next;
} wf_memcache_t;

void wf_memcache_init(wf_memcache_t *mc);
void wf_memcache_fini(wf_memcache_t *mc);

/* Classifies the buffers of a call (`bytes` 0: a buffer the rank does not
 * use).  Host, pinned and managed memory take the host path (*ops NULL);
 * device memory needs every used buffer on one GPU and the device layer,
 * returned in *ops with the GPU in *ordinal.  Fails with
 * WEFT_ERR_INVALID_ARG for mixed buffers and WEFT_ERR_CUDA when the layer
 * cannot be loaded, with a message naming `fn` and the cause. */
weft_status_t wf_devbuf_classify(wf_memcache_t *mc, const char *fn,
                                 const void *sendbuf, uint64_t send_bytes,
                                 const void *recvbuf, uint64_t recv_bytes,
                                 const wf_dev_ops_t **ops, int *ordinal);

#endif /* WF_DEVBUF_H */
