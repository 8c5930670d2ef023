/*
 * dev_exec.h - the engine's staging ops for device buffers (dev_exec.c):
 * what a request on device memory gets as its `stage` (sched/engine.h).
 */
#ifndef WF_DEV_EXEC_H
#define WF_DEV_EXEC_H

#include "sched/exec_impl.h"

extern const struct wf_stage_ops wf_dev_stage_ops;

#endif /* WF_DEV_EXEC_H */
