/*
 * shm_poll.c - progress and sleeping for the shared-memory transport.
 *
 * progress() reads every live pair's ring and fills the rings it has
 * queued sends for; it looks at the sockets (accepts, handshakes, peers
 * hanging up) only while handshakes are under way, after a sleep, and
 * every few calls, because a system call on every call would cost more
 * than a small message does.
 *
 * Sleeping: the engine calls wait_prepare() under its lock before it
 * sleeps in poll() on the epoll fd.  We then ask every peer to wake us
 * (rx_sleeping, tx_waiting in the rings, shm_wire.h) and look at the
 * rings one last time; peers write our eventfd, which is in the epoll
 * set, only while asked.
 */
#include <sys/epoll.h>
#include <unistd.h>

#include "shm.h"

static int poll_events(wf_tctx_t *ctx)
{
    struct epoll_event ev[32];
    int work = 0;
    int n = epoll_wait(ctx->epfd, ev, (int)WF_ARRAY_LEN(ev), 0);

    for (int i = 0; i < n; i++) {
        uint64_t key = ev[i].data.u64;
        int idx = (int)(key & 0xffffffffu);
        switch (key & ~0xffffffffull) {
        case WF_SHM_KEY_LISTEN:
            wf_shm_accept(ctx);
            work++;
            break;
        case WF_SHM_KEY_WAKE: {
            uint64_t v;
            ssize_t r = read(ctx->efd, &v, sizeof(v));
            (void)r; /* only resets the counter */
            break;
        }
        case WF_SHM_KEY_PEER:
            wf_shm_sock_event(ctx, &ctx->peers[idx], ev[i].events);
            work++;
            break;
        default:
            if (idx < ctx->npend && ctx->pend[idx].fd >= 0)
                wf_shm_pending_event(ctx, idx);
            work++;
            break;
        }
    }
    return work;
}

/* Unclaimed RTS messages are read into buffers once the rank is idle;
 * while they wait, progress() reports work, so the engine does not sleep
 * on them.  Returns what to add to the call's count of work. */
static int pull_when_idle(wf_tctx_t *ctx, int work)
{
    bool waiting = false;
    for (int i = 0; i < ctx->nup && !waiting; i++)
        waiting = ctx->peers[ctx->up[i]].remote_unexp > 0;
    bool idle = work == 0 && ctx->m.posts == ctx->posts_seen;
    ctx->posts_seen = ctx->m.posts;
    if (!waiting) {
        ctx->idle_calls = 0;
        return 0;
    }
    ctx->idle_calls = idle ? ctx->idle_calls + 1 : 0;
    if (ctx->idle_calls < WF_SHM_IDLE_CALLS)
        return work ? 0 : 1;
    ctx->idle_calls = 0;
    for (int i = ctx->nup - 1; i >= 0; i--) {
        wf_shm_peer_t *p = &ctx->peers[ctx->up[i]];
        if (p->state == WF_SHM_UP && p->remote_unexp)
            wf_shm_pull_unclaimed(ctx, p);
    }
    return 1;
}

int wf_shm_progress(wf_tctx_t *ctx)
{
    int work = 0;

    if (!ctx)
        return WEFT_ERR_INVALID_ARG;
    ctx->round++;
    bool look = (++ctx->tick & 63) == 0;
    if (ctx->armed || ctx->handshakes || look) {
        ctx->armed = false;
        work += poll_events(ctx);
        if (look)
            wf_shm_check_deadlines(ctx);
    }
    /* Backwards: a peer that fails leaves the list by a swap with the
     * last, which has been visited already. */
    for (int i = ctx->nup - 1; i >= 0; i--) {
        wf_shm_peer_t *p = &ctx->peers[ctx->up[i]];
        if (atomic_load_explicit(&p->rx.ctl->rx_sleeping,
                                 memory_order_relaxed))
            atomic_store_explicit(&p->rx.ctl->rx_sleeping, 0,
                                  memory_order_relaxed);
        work += wf_shm_rx_drain(ctx, p);
        if (p->state == WF_SHM_UP && (p->sq || p->nfins))
            work += wf_shm_tx_pump(ctx, p);
    }
    return work + pull_when_idle(ctx, work);
}

static bool tx_blocked(const wf_shm_peer_t *p)
{
    return p->sq || p->nfins;
}

bool wf_shm_wait_prepare(wf_tctx_t *ctx)
{
    bool pending = ctx->handshakes > 0;

    ctx->armed = true;
    for (int i = 0; i < ctx->nup; i++) {
        wf_shm_peer_t *p = &ctx->peers[ctx->up[i]];
        atomic_store_explicit(&p->rx.ctl->rx_sleeping, 1,
                              memory_order_seq_cst);
        if (tx_blocked(p))
            atomic_store_explicit(&p->tx.ctl->tx_waiting, 1,
                                  memory_order_seq_cst);
    }
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < ctx->nup && !pending; i++) {
        wf_shm_peer_t *p = &ctx->peers[ctx->up[i]];
        uint64_t tail = atomic_load_explicit(&p->tx.ctl->tail,
                                             memory_order_acquire);
        /* An unexpected RTS is read at the next call: not worth a sleep. */
        pending = wf_shm_rx_pending(p) || p->remote_unexp || p->gone ||
                  (tx_blocked(p) && p->tx.pos - tail < p->slots);
    }
    return pending;
}
