/*
 * diag.h - hang diagnosis gathered through the rendezvous (diag.c).
 */
#ifndef WF_DIAG_H
#define WF_DIAG_H

#include <stddef.h>

#include "comm.h"

/* "allreduce #1843" or "recv from rank 2": where a request's caller is. */
void wf_diag_position(const struct weft_request *req, char *buf, size_t len);
/* "allreduce #1843": where the caller of collective number seq is. */
void wf_diag_coll_position(wf_coll_t coll, uint64_t seq, char *buf,
                           size_t len);

/* After a blocking call on `c` timed out at `where`: publishes this rank's
 * position; on the rank where the timeout arose, also collects the other
 * ranks' for a short window and appends the summary to the error message
 * and the log.  Once per communicator; called without engine locks. */
void wf_diag_gather(wf_comm_impl_t *c, const char *where);

#endif /* WF_DIAG_H */
