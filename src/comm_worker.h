/*
 * comm_worker.h - store work of a communicator on a short-lived thread
 * (comm_worker.c), for callers that must not wait longer than they can
 * afford: with the rendezvous out of reach (a cut link, or rank 0 that
 * hosted it gone) every store call lasts the store's own timeout.
 */
#ifndef WF_COMM_WORKER_H
#define WF_COMM_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "comm.h"

/* Runs fn(c, arg) on a new thread that holds a reference on `c` (its
 * memory outlives a destroy until fn returns).  The caller waits for it
 * at most wait_ms (0: not at all); fn then finishes on its own.  fn owns
 * arg.  False when no thread could be started: fn did not run and arg is
 * the caller's again. */
bool wf_comm_worker(wf_comm_impl_t *c, void (*fn)(wf_comm_impl_t *, void *),
                    void *arg, int64_t wait_ms);

#endif /* WF_COMM_WORKER_H */
