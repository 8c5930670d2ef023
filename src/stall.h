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

/* Called by weft_wait each time `req` has been waiting another interval,
 * without engine locks. */
void wf_stall_check(wf_comm_impl_t *c, struct weft_request *req);

/* After a call on `c` failed with a data-path error: posts the failure
 * for the ranks no notice can reach (once per communicator). */
void wf_stall_post_failure(wf_comm_impl_t *c);

#endif /* WF_STALL_H */
