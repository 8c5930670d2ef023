/*
 * dev_pool.h - an engine's pinned staging buffers and device scratch
 * (dev_pool.c), kept for reuse by the device path (dev_exec.c).
 *
 * A CUDA allocation or free may wait for all work on the device to end
 * (the programming guide's implicit synchronization).  A stream-ordered
 * operation holds its stream until it completes, so an allocation made
 * for it by the engine's thread would wait for itself: a hang.  Such an
 * operation has its memory reserved by the caller's thread before it is
 * enqueued (wf_dev_pool_reserve), and the engine's thread never frees.
 * Every function but reserve and free runs under the engine's
 * progress_lock.
 */
#ifndef WF_DEV_POOL_H
#define WF_DEV_POOL_H

#include <pthread.h>

#include "plan/plan.h"
#include "weft_cuda.h"

typedef struct wf_dev_pool wf_dev_pool_t;

/* What a staging buffer is reserved for: sends and receives keep apart
 * so that neither can take the other's (dev_exec.c's flow rules). */
typedef enum { WF_STAGE_SEND = 1, WF_STAGE_RECV = 2 } wf_stage_role_t;

wf_dev_pool_t *wf_dev_pool_new(const wf_dev_ops_t *ops, int device);
/* Frees everything; the device work that used it must have drained. */
void wf_dev_pool_free(wf_dev_pool_t *p);

/* A pinned buffer of at least `bytes` for `owner`'s step: one reserved
 * for it when it has any, else an idle unreserved one, else (not for a
 * reserved owner: *ptr NULL, WEFT_ERR_UNSUPPORTED with the reason in
 * *why) a new one. */
weft_status_t wf_dev_pool_staging_take(wf_dev_pool_t *p, const void *owner,
                                       wf_stage_role_t role, size_t bytes,
                                       void **ptr, const char **why);
void wf_dev_pool_staging_give(wf_dev_pool_t *p, void *staging);

/* Device scratch of at least `bytes`: the owner's reserved one, or the
 * spare, or a new one (not for a reserved owner). */
weft_status_t wf_dev_pool_scratch_take(wf_dev_pool_t *p, const void *owner,
                                       uint64_t bytes, void **ptr,
                                       uint64_t *cap, const char **why);
/* Kept as the spare, or, when the spare is larger, retired: freed by the
 * next reserve or by wf_dev_pool_free, never by the engine's thread. */
void wf_dev_pool_scratch_give(wf_dev_pool_t *p, void *ptr, uint64_t cap);

/* The owner's request ended: what was reserved for it goes back to the
 * pool, for anyone. */
void wf_dev_pool_release(wf_dev_pool_t *p, const void *owner);

/* The caller's thread, before `owner` (running `plan`) is enqueued on a
 * stream: reserves a staging buffer for every receive, `max_inflight` for
 * the sends to each peer, and the scratch, allocating what the pool lacks
 * outside `lock` (the engine's progress_lock), on `device` (the calling
 * thread's current device is restored).  Also frees retired scratch. */
weft_status_t wf_dev_pool_reserve(wf_dev_pool_t *p, pthread_mutex_t *lock,
                                  const void *owner, const wf_plan_t *plan,
                                  int max_inflight);

#endif /* WF_DEV_POOL_H */
