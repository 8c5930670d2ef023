/*
 * engine.h - the progress engine: runs plans over a transport.
 *
 * One engine per communicator.  Progress rounds take submitted requests in
 * order, start the steps whose dependencies are done (at most max_inflight
 * transfers per peer and direction), run reductions as receives land, and
 * complete requests.  A caller blocked in weft_wait runs the rounds itself
 * (no hand-off between threads on the critical path); otherwise the
 * engine's progress thread does, so non-blocking operations progress while
 * the application computes.
 *
 * Every message carries a tag (kind, operation sequence number, step tag)
 * and a signature (collective, dtype, op, algorithm, count, root/peer); a
 * receive whose signature differs from the local one fails the operation
 * with WEFT_ERR_MISMATCH naming both sides.
 *
 * Data-path errors (mismatch, peer failure, timeout, abort) are sticky: the
 * first one is recorded with its message, fails every pending request and
 * every later submission.
 */
#ifndef WF_ENGINE_H
#define WF_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan/built.h"
#include "plan/coll.h"
#include "plan/plan.h"
#include "transport.h"
#include "weft.h"
#include "weft_cuda.h"

typedef struct wf_engine wf_engine_t;
typedef struct wf_exec wf_exec_t; /* per-request execution state */
struct weft_request;

/* An operation the engine runs by asking its runner instead of executing
 * a plan (the shared-segment collectives, src/node/node_coll.h).  Called
 * under the progress lock. */
typedef struct wf_req_runner {
    /* One look: WEFT_INPROGRESS, WEFT_OK when done, or its failure. */
    weft_status_t (*advance)(struct weft_request *req);
    /* What it waits for, for timeout messages. */
    void (*describe)(struct weft_request *req, char *buf, size_t len);
} wf_req_runner_t;

#define WF_REQ_MAGIC 0x77667271u /* "wfrq" */
#define WF_ERRMSG_MAX 1024

/* The public request: shared by the caller and the engine (refcounted). */
struct weft_request {
    uint32_t magic;
    int refs;                 /* atomic: caller + engine */
    bool done;                /* under the global request lock */
    weft_status_t status;
    wf_engine_t *engine;      /* valid while the engine holds a reference */
    /* What was asked, for signatures and messages. */
    wf_coll_args_t args;
    const char *algo_name;    /* the algorithm of the plan, or NULL */
    uint8_t algo_id;
    const void *sendbuf;
    void *recvbuf;
    /* The device layer when the buffers are device memory (on GPU
     * dev_ordinal), else NULL; `stage` is then how the engine reaches
     * them (exec_impl.h; src/dev/dev_exec.c), NULL for host buffers. */
    const wf_dev_ops_t *dev_ops;
    const struct wf_stage_ops *stage;
    int dev_ordinal;
    /* A call without a stream: the application's default stream at the
     * call (mark_default_stream), which the engine's stream waits for
     * before its first device work for this request; NULL once it does. */
    wf_dev_event_t dev_after;
    /* Counted in the engine's device requests in flight
     * (wf_engine_dev_count): 0 not, 1 ordinary, 2 stream-ordered. */
    uint8_t dev_counted;
    uint64_t seq;             /* operation number: collectives or p2p pair */
    /* Point-to-point: the caller's tag, and whether the sequence number
     * is still to come from the progress side, which assigns it in
     * submission order: a receive from any source gets it (and its
     * sender, args.peer, until then WEFT_ANY_SOURCE) from the first
     * message that matches, and receives submitted after one wait for
     * it (p2p_seq.c). */
    uint32_t p2p_tag;
    bool seq_deferred;
    uint64_t wild_mark;       /* p2p_seq.c: when it last looked in vain */
    uint64_t deadline_ms;
    wf_built_plan_t *built;   /* the plan and its index, shared with other
                               * calls of the same arguments (a reference) */
    const wf_plan_t *plan;    /* &built->plan */
    wf_exec_t *exec;
    /* Run by a runner instead of a plan when set (plan NULL); its state. */
    const wf_req_runner_t *runner;
    void *runner_ctx;
    uint64_t runner_seq;
    int runner_phase;
    uint32_t runner_looks;
    /* The peer whose part of it came last (-1: none yet), and when
     * (wf_time_ns, while a timeline is written; else 0): the timeline's
     * "waited on". */
    int waited_on;
    uint64_t waited_ns;
    struct weft_request *next; /* engine queues */
    /* Called by weft_wait, with `owner`: the communicator's handle, which
     * stays recognisable after a destroy; NULL: nothing to call.
     * on_error when the request failed (hang diagnosis, diag.c; failure
     * posts, stall.c), on_stall each time it has waited another
     * stall_every_ms (stall.c). */
    void (*on_error)(struct weft_request *req, void *owner,
                     weft_status_t status);
    void (*on_stall)(struct weft_request *req, void *owner);
    int64_t stall_every_ms;
    bool sig_posted;          /* stall.c posted its signature */
    /* Stream-ordered operations (stream_order.c): a gated request starts
     * only once its gate opens (with the requests submitted after it);
     * done_flag, when set, is written 1 as the request completes. */
    bool gated;
    bool gate_open;           /* atomic */
    volatile uint32_t *done_flag;
    void *owner;
};

/* Point-to-point requests have their own sequence numbers per peer. */
static inline bool wf_req_is_p2p(const struct weft_request *req)
{
    return req->args.coll == WF_COLL_SEND || req->args.coll == WF_COLL_RECV;
}

typedef struct wf_engine_params {
    int rank;
    int size;
    const wf_transport_ops_t *tops;
    wf_tctx_t *tctx;            /* ownership passes to the engine */
    const uint8_t *peer_addrs;  /* size * WF_TADDR_MAX bytes */
    const size_t *peer_addr_lens;
    int max_inflight;
    size_t reg_min;             /* the transport's wf_tdev_attr_t.reg_min */
    int64_t timeout_ms;
    bool debug_dump;            /* WEFT_DEBUG_DUMP: log the history on failure */
    bool busy_poll;             /* a driver may poll without yielding the
                                 * core: this machine's ranks do not
                                 * outnumber its cores */
    bool pin;                   /* pin the progress thread to progress_cpu */
    int progress_cpu;           /* chosen by the topology (comm_topo.c) */
    int numa;                   /* OS index of the NUMA node for scratch
                                 * (wf_topo_mem_alloc); -1: unbound */
    /* A failure board shared with the other ranks outside the data
     * connections (src/node/), or NULL: board_post gets the engine's
     * first failure (origin -1: it arose here), board_poll is called
     * each round while the engine has no error and adopts what another
     * rank posted. */
    void (*board_post)(void *arg, weft_status_t status, int origin,
                       const char *msg);
    void (*board_poll)(void *arg, wf_engine_t *engine);
    void *board_arg;
} wf_engine_params_t;

/* Creates the engine and starts its progress thread.  On success the
 * engine owns tctx (released by wf_engine_destroy). */
weft_status_t wf_engine_create(const wf_engine_params_t *params,
                               wf_engine_t **engine);

/* Stops the thread and releases everything.  With `abort` the pending
 * requests fail with WEFT_ERR_ABORTED at once; otherwise they get until
 * their deadlines. */
void wf_engine_destroy(wf_engine_t *engine, bool abort);

/* Hands a prepared request (args, algo, buffers, plan built) to the engine:
 * assigns its sequence number and deadline and, with `wake_thread`, wakes
 * the progress thread (a caller that waits right away drives the request
 * itself; waking the thread would only make the two compete).  Takes a
 * reference.  Fails at once (request completed with the sticky error) when
 * the engine has failed. */
weft_status_t wf_engine_submit(wf_engine_t *engine, struct weft_request *req,
                               bool wake_thread);

/* For a stream-ordered request on device buffers (and an ordinary one
 * beside it, below), in the caller's thread before the request is enqueued
 * on its stream: reserves the pinned
 * staging and device scratch it will use (dev/dev_pool.h: the engine's
 * thread must not allocate while the stream waits for the request).
 * _cancel undoes it for a request that will not be submitted. */
weft_status_t wf_engine_dev_reserve(wf_engine_t *engine,
                                    struct weft_request *req);
void wf_engine_dev_reserve_cancel(wf_engine_t *engine,
                                  struct weft_request *req);

/* Ordinary and stream-ordered calls on device buffers, side by side.  The
 * engine's thread allocates staging and scratch for an ordinary request
 * when it needs them, and an allocation waits for every stream on the
 * device: with a stream-ordered request of this engine waiting on its
 * stream, it would wait for itself.  So, in the caller's thread before the
 * request is submitted (api.c):
 *  - wf_engine_dev_count counts the request in flight until it ends
 *    (wf_engine_dev_forget);
 *  - an ordinary request is reserved for (wf_engine_dev_reserve) when a
 *    stream-ordered one is in flight (wf_engine_dev_streams_pending), and
 *    then no longer counted: the engine allocates nothing for it;
 *  - a stream-ordered request waits until no ordinary one that has no
 *    reservation is in flight: wf_engine_dev_wait_plain (at most
 *    timeout_ms; WEFT_ERR_TIMEOUT after).
 * Both count themselves before they look at the other kind, so one of
 * two racing calls always sees the other. */
void wf_engine_dev_count(wf_engine_t *engine, struct weft_request *req,
                         bool stream_ordered);
/* Takes a request out of the count: an ordinary one once reserved for. */
void wf_engine_dev_uncount(wf_engine_t *engine, struct weft_request *req);
bool wf_engine_dev_streams_pending(wf_engine_t *engine);
weft_status_t wf_engine_dev_wait_plain(wf_engine_t *engine,
                                       int64_t timeout_ms);

/* The next collective number for an operation run outside the engine
 * (the shared segment's, src/node/), recorded in the history as running
 * `algo`: the engine's sticky error, or WEFT_ERR_INVALID_USAGE once it
 * stops, instead. */
weft_status_t wf_engine_take_coll_seq(wf_engine_t *engine,
                                      const wf_coll_args_t *args,
                                      const char *algo, uint64_t *seq);

/* Wakes the progress thread (a gate opened). */
void wf_engine_kick(wf_engine_t *engine);

/* Records a sticky error (first one wins) and fails every pending request.
 * Thread-safe. */
void wf_engine_fail(wf_engine_t *engine, weft_status_t status,
                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records a failure another rank reported (first one wins, as with
 * wf_engine_fail): `origin` is the rank it started on, `text` its message. */
void wf_engine_adopt(wf_engine_t *engine, weft_status_t status, int origin,
                     const char *text);

/* The sticky error and its message (NULL when none). */
weft_status_t wf_engine_error(wf_engine_t *engine, const char **message);
/* The sticky error, its message copied into buf ("" when none), and the
 * rank it came from (wf_engine_error_origin's answer), read at one time:
 * for readers on threads that wf_engine_append_error may race with. */
weft_status_t wf_engine_error_copy(wf_engine_t *engine, char *buf,
                                   size_t len, int *origin);

/* A failure as the other ranks are told it (notices, the rendezvous,
 * the shared segment's board): the text prefixed with "rank R: " when it
 * arose on this rank (origin < 0), weft_strerror(status) standing in for
 * an empty one; returns the rank it arose on. */
int wf_failure_text(int rank, int origin, weft_status_t status,
                    const char *msg, char *buf, size_t len);

/* Where the sticky error came from: -1 when it arose here (or there is
 * none), else the rank whose notice reported it. */
int wf_engine_error_origin(wf_engine_t *engine);
/* Appends text to the sticky error's message (hang diagnosis). */
void wf_engine_append_error(wf_engine_t *engine, const char *text);

/* Sets bit `peer` of `lost` (a bitmap of (size + 7) / 8 bytes, not cleared
 * here) for each peer whose connection this engine saw break: the peer
 * died, or its host or network went away.  weft_comm_shrink leaves them
 * out.  Thread-safe. */
void wf_engine_lost_peers(wf_engine_t *engine, uint8_t *lost);

/* Marks `peer` lost as a broken connection would (weft_comm_shrink
 * leaves it out): for failures found outside the transport.  Thread-safe
 * without the progress lock. */
void wf_engine_mark_lost(wf_engine_t *engine, int peer);

/* Whether an operation may run outside the engine now: no request in
 * flight and no check for stray messages due (an earlier collective may
 * have left some, which only an engine round looks for).  Lock-free. */
bool wf_engine_quiet(wf_engine_t *engine);

/* Records the end of an operation that wf_engine_take_coll_seq numbered,
 * in the history (and the timeline: waited_on is the peer it waited for
 * last, or -1). */
void wf_engine_end_outside(wf_engine_t *engine, uint64_t seq, wf_coll_t coll,
                           weft_status_t status, int waited_on);

/* Runs progress rounds in the calling thread until *done is set (returns
 * true), until the engine stops (the progress thread completes what is
 * left) or until the clock passes until_ms (0: no limit).  *left tells
 * whether requests or notices were left for someone to progress after
 * round number *round, its last (true unless it looked): what
 * wf_engine_driver_hands_over_after needs.  Call between
 * wf_engine_driver_enter/leave. */
bool wf_engine_drive(wf_engine_t *engine, const volatile bool *done,
                     uint64_t until_ms, bool *left, uint64_t *round);
/* Runs one progress round in the calling thread unless another thread is
 * running one (weft_test).  Same registration as wf_engine_drive. */
void wf_engine_poke(wf_engine_t *engine);
/* Registers a driving caller; the engine is not freed until it leaves.
 * enter/leave are called under the request lock (req.c), which orders them
 * against wf_req_wait_for_drivers.  Before leaving, outside that lock
 * (it takes the engine's locks, which rank before the request lock),
 * wf_engine_driver_hands_over tells whether the progress thread must be
 * woken to take over requests nobody drives any more. */
void wf_engine_driver_enter(wf_engine_t *engine);
bool wf_engine_driver_hands_over(wf_engine_t *engine);
/* wf_engine_driver_hands_over from what wf_engine_drive saw in its last
 * round, without a lock, when no round ran since (another driver's). */
bool wf_engine_driver_hands_over_after(wf_engine_t *engine, bool left,
                                       uint64_t round);
void wf_engine_driver_leave(wf_engine_t *engine, bool wake_thread);
int wf_engine_driver_count(wf_engine_t *engine);

/* ---- requests (req.c) ---------------------------------------------------- */
struct weft_request *wf_req_create(void);
void wf_req_retain(struct weft_request *req);
void wf_req_release(struct weft_request *req);
/* Sets the final status, detaches the request from its engine and wakes
 * waiters (first completion wins). */
void wf_req_complete(struct weft_request *req, weft_status_t status);
/* Sets req->engine under the request lock (wf_engine_submit, for a gated
 * request: the only kind another thread can see before it is queued). */
void wf_req_attach(struct weft_request *req, wf_engine_t *engine);
/* Opens a gated request's gate and wakes its engine (any thread; makes no
 * device-layer call, so a device callback may call it). */
void wf_req_open_gate(struct weft_request *req);
/* Blocks until no caller drives `engine` any more (before it is freed). */
void wf_req_wait_for_drivers(wf_engine_t *engine);

/* ---- execution of one plan (exec.c), called under progress_lock --------- */
weft_status_t wf_exec_start(wf_engine_t *engine, struct weft_request *req);
/* Advances the request; returns the amount of work done, and sets *finished
 * with the final status in *status when it ended. */
int wf_exec_advance(wf_engine_t *engine, struct weft_request *req,
                    bool *finished, weft_status_t *status);
void wf_exec_free(wf_engine_t *engine, struct weft_request *req);
/* Frees a scratch block of `bytes` (the engine's kept one, at teardown). */
void wf_exec_scratch_free(void *p, uint64_t bytes);
/* Frees the execution state kept for the next request (at teardown). */
void wf_exec_spare_free(wf_engine_t *engine);
/* The signature the request's messages carry; NULL before it started. */
const uint64_t *wf_exec_sig(const struct weft_request *req);
/* Describes what the request is waiting for, for timeout messages. */
void wf_exec_describe_wait(wf_engine_t *engine, struct weft_request *req,
                           char *buf, size_t len);

/* Signature and tag encoding shared by exec.c and messages. */
void wf_sig_make(const struct weft_request *req, uint64_t sig[2]);
/* The same for a call's arguments and an algorithm id (the shared
 * segment's calls, which run no registered algorithm, use 0). */
void wf_sig_of(const wf_coll_args_t *args, unsigned algo_id, uint64_t sig[2]);
void wf_sig_describe(const uint64_t sig[2], char *buf, size_t len);

#endif /* WF_ENGINE_H */
