/*
 * stall.h - what a caller blocked for long looks at in the rendezvous
 * store (stall.c): failures no data connection reported, and ranks that
 * wait in the same operation with other arguments.
 */
#ifndef WF_STALL_H
#define WF_STALL_H

#include "comm.h"

/* How often a blocked caller looks: an eighth of the timeout, within
 * [250 ms, 30 s]. */
int64_t wf_stall_every_ms(int64_t timeout_ms);

/* Called by weft_wait each time `req` has been waiting another interval:
 * looks at the store for a posted failure and compares signatures.
 * Store calls can take as long as the store's own timeout when the
 * rendezvous is out of reach (a cut link), so they run on a worker
 * thread and the caller goes on waiting; one look at a time per
 * communicator.  Takes its own references on `c` and `req`. */
void wf_stall_check_async(wf_comm_impl_t *c, struct weft_request *req);

/* After a call on `c` failed with a data-path error: posts the failure
 * for the ranks no notice can reach (once per communicator), on the same
 * kind of worker, waiting for it at most a quarter of the timeout (1 s at
 * most) so an unreachable store cannot hold the error back. */
void wf_stall_post_failure(wf_comm_impl_t *c);

#endif /* WF_STALL_H */
