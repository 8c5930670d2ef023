/*
 * engine_impl.h - the engine's private state, shared by the files of
 * src/sched/.  Which file calls which runs one way (docs/design.md,
 * "The engine's files"): progress.c drives exec.c, which posts through
 * notice.c; history.c, stray.c and dump_signal.c only observe; every
 * file reports failures through engine_error.c.
 */
#ifndef WF_ENGINE_IMPL_H
#define WF_ENGINE_IMPL_H

#include <unistd.h>

#include "sched/engine.h"

typedef struct wf_notice_peer wf_notice_peer_t;
typedef struct wf_engine_dev wf_engine_dev_t; /* src/dev/dev_exec.c */

/* The last WF_HISTORY operations of a communicator, for hang diagnosis. */
#define WF_HISTORY 16
typedef struct {
    uint64_t seq;
    int coll;                 /* wf_coll_t */
    uint64_t count;
    int dtype;
    const char *algo;
    uint64_t sig[2];          /* its message signature (wf_sig_make) */
    uint64_t start_ms, end_ms; /* end 0: not finished */
    uint64_t start_ns;        /* for the timeline: 0 when it is off */
    weft_status_t status;
} wf_history_entry_t;
typedef struct {
    wf_history_entry_t e[WF_HISTORY];
    uint64_t n;               /* entries ever recorded */
} wf_history_t;

struct wf_engine {
    int rank, size;
    int idle_polls; /* idle rounds a driver polls before it yields */
    const wf_transport_ops_t *tops;
    wf_tctx_t *tctx;
    uint8_t *peer_addrs;
    size_t *peer_addr_lens;
    bool *peer_connect_called;
    int *inflight_send, *inflight_recv; /* per peer */
    int max_inflight;
    size_t reg_min;               /* register buffers with transfers this
                                   * large (reg.c); 0: never */
    int64_t timeout_ms;

    pthread_t thread;
    bool thread_started;
    int wake_fd;
    uint64_t wakes; /* writes to wake_fd (atomic): the tests count them */

    /* Whoever holds progress_lock runs progress rounds: the progress
     * thread, or a caller waiting in weft_wait/weft_test.  Letting the
     * waiting caller drive saves a thread hand-off per message round. */
    pthread_mutex_t progress_lock;
    int drivers;  /* callers driving: changed under the request lock,
                   * read atomically; destroy waits for it to reach 0 */

    pthread_mutex_t lock;          /* guards everything below */
    struct weft_request *submitted_head, *submitted_tail;
    /* Whether submitted_head is set, and stop and error below: written
     * under the lock with atomic stores, so that a progress round can look
     * without taking it (progress.c). */
    bool has_submitted;
    bool stop;
    bool drain;                    /* stop once idle */
    uint64_t coll_seq;
    /* Point-to-point sequence numbers per peer, for tag 0; other tags'
     * are in p2p_tags (p2p_seq.c). */
    uint64_t *p2p_send_seq, *p2p_recv_seq;
    struct wf_p2p_tags *p2p_tags;
    int recv_deferred;             /* receives with seq_deferred not yet
                                    * assigned: while any is, every new
                                    * receive waits its turn */
    weft_status_t error;
    char error_msg[WF_ERRMSG_MAX];

    int error_origin;              /* rank the failure came from; -1: here */
    bool debug_dump;
    void (*board_post)(void *arg, weft_status_t status, int origin,
                       const char *msg);
    void (*board_poll)(void *arg, wf_engine_t *engine);
    void *board_arg;
    wf_history_t history;          /* recent operations (history.c) */
    uint32_t timeline_id;          /* its track in the timeline */
    /* Per peer: 1 + the collective sequence number of the last message
     * received from it (0: none yet), for "who has not arrived" in
     * timeout messages.  Under progress_lock. */
    uint64_t *peer_seen;

    /* Owned by the holder of progress_lock. */
    struct weft_request *active_head, *active_tail;
    void *spare_scratch;           /* kept for the next plan (exec.c) */
    wf_exec_t *spare_exec;         /* kept for the next request (exec.c) */
    uint64_t spare_bytes;
    int numa;                      /* scratch's NUMA node, -1: unbound */
    wf_engine_dev_t *dev;          /* device state, from the first device
                                    * operation on (src/dev/dev_exec.c) */
    /* Device requests submitted and not yet ended, stream-ordered and
     * ordinary (atomic; wf_engine_dev_count). */
    int dev_stream_reqs, dev_plain_reqs;
    /* Stray-message checks (stray.c): 1 + the sequence number of the last
     * collective started, the transport's unexpected-arrival count at the
     * last check, and whether a collective started or finished since. */
    uint64_t coll_started;
    uint64_t stray_arrivals;
    bool stray_due;     /* atomic: read by wf_engine_quiet */
    int reqs_live;      /* atomic: submitted and not yet finished */

    /* Receives from any source (p2p_seq.c), under progress_lock: how
     * many deferred receives got their numbers (a receive from any
     * source looks again after each), and the tags that an unmatched one
     * holds back in the current round. */
    uint64_t wild_gen;
    bool wild_connected;           /* connect() called for every peer */
    uint32_t *wild_tags;
    uint32_t wild_ntags, wild_tags_cap;

    /* Failure notices (notice.c), also under progress_lock. */
    wf_notice_peer_t *notice;      /* [size] */
    int *notice_peers;             /* the peers watched, in order */
    int notice_npeers;
    enum { WF_NOTICE_NONE, WF_NOTICE_FLUSHING, WF_NOTICE_DONE } notice_phase;
    /* The last round ended when its driver's request did, before the
     * notice, stray and deadline checks: the next round runs them. */
    bool checks_skipped;
    /* Progress rounds run, written under progress_lock, read atomically:
     * tells a leaving driver whether its last round's view is still
     * current (wf_engine_driver_hands_over_after). */
    uint64_t rounds;
    uint64_t notice_deadline;      /* flushing gives up then */
    char notice_text[WF_ERRMSG_MAX];
};

/* Tags: bits 63..62 kind, 61..32 sequence number, 31..0 plan tag. */
#define WF_TAG_KIND_COLL 0ull
#define WF_TAG_KIND_P2P 1ull
#define WF_TAG_KIND_CTRL 2ull /* failure notices (notice.c) */
#define WF_TAG_SEQ_MASK 0x3fffffffull /* the sequence bits a tag carries */
static inline uint64_t wf_tag_make(uint64_t kind, uint64_t seq, uint32_t step)
{
    return kind << 62 | (seq & WF_TAG_SEQ_MASK) << 32 | step;
}
/* The sequence number a tag carries (masked to WF_TAG_SEQ_MASK). */
static inline uint64_t wf_tag_seq(uint64_t tag)
{
    return (tag >> 32) & WF_TAG_SEQ_MASK;
}

/* Wakes whoever sleeps in the engine's poll() (the progress thread, or
 * a driving caller); a full counter already means "wake up". */
static inline void wf_engine_wake(wf_engine_t *e)
{
    uint64_t one = 1;
    __atomic_add_fetch(&e->wakes, 1, __ATOMIC_RELAXED);
    ssize_t r = write(e->wake_fd, &one, sizeof(one));
    (void)r;
}

/* Calls the transport's connect() for `peer` once and starts watching it
 * for failure notices (exec.c); under progress_lock. */
weft_status_t wf_engine_connect(wf_engine_t *e, int peer);


/* ---- point-to-point order (p2p_seq.c) ------------------------------------ */
/* Gives a send, or a receive whose turn it is, its sequence number, or
 * marks the receive seq_deferred.  Under the engine's state lock. */
weft_status_t wf_p2p_seq_assign(wf_engine_t *e, struct weft_request *req);
/* Starts a new progress round's pass over deferred receives. */
void wf_p2p_round_begin(wf_engine_t *e);
/* Tries to give a deferred receive its sequence number (and its sender),
 * in the order of the active list: 1 when it got them (start it), 0 when
 * it must wait, negative on failure.  Under progress_lock. */
int wf_p2p_assign_deferred(wf_engine_t *e, struct weft_request *req);
/* A request ends: a deferred receive no longer holds later ones back.
 * Under progress_lock. */
void wf_p2p_forget(wf_engine_t *e, struct weft_request *req);
void wf_p2p_free(wf_engine_t *e);

/* ---- history (history.c), under the engine's state lock ------------------ */
void wf_history_start(wf_engine_t *e, const struct weft_request *req,
                      uint64_t start_ms);
void wf_history_start_args(wf_engine_t *e, uint64_t seq,
                           const wf_coll_args_t *args, const char *algo,
                           uint64_t start_ms);
/* These two take the state lock themselves. */
void wf_history_end(wf_engine_t *e, const struct weft_request *req,
                    weft_status_t status);
/* An operation the engine did not run (wf_engine_end_outside); waited_on
 * is the peer it waited for last, or -1. */
void wf_history_end_of(wf_engine_t *e, uint64_t seq, wf_coll_t coll,
                       weft_status_t status, int waited_on);
/* The signature of the last collective whose sequence number, masked
 * with `mask`, is `seq`; its whole sequence number goes to *full.  False
 * when it is no longer recorded. */
bool wf_history_coll_sig(wf_engine_t *e, uint64_t seq, uint64_t mask,
                         uint64_t *full, uint64_t sig[2]);
/* Logs the history and what the active requests wait for (WARN). */
void wf_history_dump(wf_engine_t *e, const char *why);

/* ---- device state (src/dev/dev_exec.c) ---------------------------------- */
/* Waits for the device work to end and frees the device state. */
void wf_engine_dev_free(wf_engine_t *e);
/* Whether device work is enqueued and not yet seen done, under
 * progress_lock.  Its end wakes no file descriptor, so the runners poll
 * (yield) rather than sleep in poll() while it is: a nap of even 1 ms per
 * pipelined chunk would cap a device collective's bandwidth. */
bool wf_engine_dev_busy(const wf_engine_t *e);
/* A request ended: what was reserved for it (wf_engine_dev_reserve) goes
 * back to the pool.  Under progress_lock, for every request that ends,
 * started or not (its address may be a later request's). */
void wf_engine_dev_forget(wf_engine_t *e, struct weft_request *req);

/* ---- stray messages (stray.c), under progress_lock -------------------- */
/* Fails the communicator with WEFT_ERR_MISMATCH when the transport holds
 * a collective message no operation here will take. */
void wf_stray_check(wf_engine_t *e);

/* ---- SIGUSR1 dumps with WEFT_DEBUG_DUMP=1 (dump_signal.c) ---------------- */
void wf_dump_signal_register(wf_engine_t *e);
void wf_dump_signal_unregister(wf_engine_t *e);

/* ---- failure notices (notice.c) ---------------------------------------- */
weft_status_t wf_notice_init(wf_engine_t *e);
void wf_notice_free(wf_engine_t *e);
/* Starts watching `peer` (called when the engine first connects to it). */
void wf_notice_watch(wf_engine_t *e, int peer);
/* Tests the control receives: adopts reported failures, fails the
 * communicator for lost peers.  Returns the work done. */
int wf_notice_poll(wf_engine_t *e);
/* Sends the communicator's failure, or a bye, to every watched peer and to
 * every peer whose connection the transport reports linked, even if this
 * rank never used it (the peer is waiting on it). */
void wf_notice_fail_all(wf_engine_t *e);
void wf_notice_bye_all(wf_engine_t *e);
/* Records that the connection to `peer` broke (wf_engine_lost_peers). */
void wf_notice_mark_lost(wf_engine_t *e, int peer);
/* True once every notice sent has left (or failed). */
bool wf_notice_flushed(wf_engine_t *e);

#endif /* WF_ENGINE_IMPL_H */
