/*
 * req_impl.h - the process-wide lock and condition variable of request
 * completion (req.c), shared with the waiters (wait.c) and the engine's
 * teardown (progress.c).  One lock for all rather than one per request: a
 * waiter must be able to wake safely even when the communicator (and its
 * engine) is torn down by weft_comm_abort in another thread, and a
 * request may outlive its engine.  It also guards req->engine and the
 * engine's count of driving callers.  Lock order: the engine's progress
 * lock and state lock before this one, never the other way.
 */
#ifndef WF_REQ_IMPL_H
#define WF_REQ_IMPL_H

#include <pthread.h>

extern pthread_mutex_t wf_req_lock;
extern pthread_cond_t wf_req_cond;

#endif /* WF_REQ_IMPL_H */
