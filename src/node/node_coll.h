/*
 * node_coll.h - small collectives among the ranks of one machine through
 * one shared segment, without messages (node_seg.c sets it up,
 * node_run.c runs the operations).
 *
 * When every rank of a communicator is on this machine, each rank has
 * WF_NODE_DEPTH slots in the segment, used by operations in turn: it
 * writes its contribution and the call's signature, then publishes the
 * operation's number with a release store; the others read the slots
 * they need once the number is there, and every rank reduces in rank
 * order, so all get the same bits.  The slot of operation k is written
 * again by operation k + WF_NODE_DEPTH, which a rank starts only after
 * every rank has published k + 1, i.e. has finished k: that is all the
 * flow control, and it lets a broadcast's root run ahead.  This is Open
 * MPI's coll/sm and UCC's shared-memory team in spirit; the point-to-point
 * path costs an engine round and a matched message per peer, which is
 * what small messages cannot afford.
 *
 * Failures: the segment has a board where the first rank to fail writes
 * its status and message, which every waiting rank reads (and the engine
 * polls each round), and a waiting rank watches its peers' pidfds, so a
 * rank killed before it connected to anyone is still noticed.
 */
#ifndef WF_NODE_COLL_H
#define WF_NODE_COLL_H

#include <stdbool.h>

#include "comm.h"
#include "plan/coll.h"
#include "sched/engine.h"

typedef struct wf_node_coll wf_node_coll_t;

/* After the rank records are exchanged, before the engine is created:
 * sets c->node_coll to a segment every rank of c attached, or leaves it NULL
 * (not every rank on this machine, WEFT_NODE_COLL_MAX 0, a transport
 * other than shared memory asked for, or a rank that could not attach:
 * the ranks agree through the store, so all use it or none does).  Fails
 * only when the store does. */
weft_status_t wf_node_coll_open(wf_comm_impl_t *c);

/* The engine's failure board hooks for c->node_coll (engine params). */
void wf_node_coll_hooks(wf_node_coll_t *n, wf_engine_params_t *ep);
/* The engine whose error the operations share, once it exists. */
void wf_node_coll_set_engine(wf_node_coll_t *n, wf_engine_t *e);
void wf_node_coll_close(wf_node_coll_t *n);

/* Whether a call with these arguments goes through the segment: the same
 * answer on every rank for the same call (host memory is the caller's
 * part: device buffers and streams take the engine's plans). */
bool wf_node_coll_fits(const wf_node_coll_t *n, const wf_coll_args_t *a);

/* Runs one operation in the calling thread (blocking calls, while the
 * engine is quiet: wf_engine_quiet); *seq gets its collective number.
 * Failures fail the engine (its sticky error) and go on the board. */
weft_status_t wf_node_coll_run(wf_node_coll_t *n, const wf_coll_args_t *a,
                               const void *sendbuf, void *recvbuf,
                               uint64_t *seq);

/* Prepares `req` (args and buffers set) to be run by the engine instead
 * of a plan (non-blocking calls, and blocking ones behind them). */
void wf_node_coll_attach(wf_node_coll_t *n, struct weft_request *req);

#endif /* WF_NODE_COLL_H */
