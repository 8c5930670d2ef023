/*
 * dev_call.h - the device side of starting a call (dev_call.c), the one
 * step api.c takes for a call whose buffers are device memory or that
 * comes with a stream.
 */
#ifndef WF_DEV_CALL_H
#define WF_DEV_CALL_H

#include "api_call.h"
#include "comm.h"
#include "sched/engine.h"

/* Readies `req` (its plan built, req->dev_ops set when its buffers are
 * device memory) for the engine: checks the stream, loads the kernels,
 * reserves what a stream-ordered call needs, orders the call after the
 * stream's earlier work (or the default stream's).  On failure nothing
 * stays reserved. */
weft_status_t wf_dev_call_prepare(wf_comm_impl_t *c, const call_t *k,
                                  struct weft_request *req);

/* Gives back what wf_dev_call_prepare reserved, when the submit fails. */
void wf_dev_call_cancel(wf_comm_impl_t *c, struct weft_request *req);

#endif /* WF_DEV_CALL_H */
