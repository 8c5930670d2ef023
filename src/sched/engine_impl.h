/*
 * engine_impl.h - the engine's private state, shared by progress.c and
 * exec.c only.
 */
#ifndef WF_ENGINE_IMPL_H
#define WF_ENGINE_IMPL_H

#include "sched/engine.h"

struct wf_engine {
    int rank, size;
    const wf_transport_ops_t *tops;
    wf_tctx_t *tctx;
    uint8_t *peer_addrs;
    size_t *peer_addr_lens;
    bool *peer_connect_called;
    int *inflight_send, *inflight_recv; /* per peer */
    int max_inflight;
    int64_t timeout_ms;

    pthread_t thread;
    bool thread_started;
    int wake_fd;

    /* Whoever holds progress_lock runs progress rounds: the progress
     * thread, or a caller waiting in weft_wait/weft_test.  Letting the
     * waiting caller drive saves a thread hand-off per message round. */
    pthread_mutex_t progress_lock;
    int drivers;  /* callers driving: changed under the request lock,
                   * read atomically; destroy waits for it to reach 0 */

    pthread_mutex_t lock;          /* guards everything below */
    struct weft_request *submitted_head, *submitted_tail;
    bool stop;
    bool drain;                    /* stop once idle */
    uint64_t coll_seq;
    uint64_t *p2p_send_seq, *p2p_recv_seq;
    weft_status_t error;
    char error_msg[WF_ERRMSG_MAX];

    /* Owned by the holder of progress_lock. */
    struct weft_request *active_head, *active_tail;
};

/* Tags: bits 63..62 kind, 61..32 sequence number, 31..0 plan tag. */
#define WF_TAG_KIND_COLL 0ull
#define WF_TAG_KIND_P2P 1ull
static inline uint64_t wf_tag_make(uint64_t kind, uint64_t seq, uint32_t step)
{
    return kind << 62 | (seq & 0x3fffffffull) << 32 | step;
}

#endif /* WF_ENGINE_IMPL_H */
