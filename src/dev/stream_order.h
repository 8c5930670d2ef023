/*
 * stream_order.h - operations enqueued on a device stream (stream_order.c):
 * the weft_*_stream entry points.
 */
#ifndef WF_STREAM_ORDER_H
#define WF_STREAM_ORDER_H

#include "sched/engine.h"
#include "weft_cuda.h"

/* Before `req` is submitted: it is held back until the work enqueued on
 * `stream` so far is done, and the stream's later work waits until it
 * ends (successfully or not). */
weft_status_t wf_stream_attach(const wf_dev_ops_t *dev,
                               struct weft_request *req, void *stream);

#endif /* WF_STREAM_ORDER_H */
