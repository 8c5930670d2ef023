/*
 * shm_recv.c - the consumer's side of a pair's ring, and the single copy.
 *
 * Slots are taken in order and matched through the shared layer
 * (match.h): a message goes straight into the posted receive it matches,
 * else into an unexpected buffer.  An RTS that finds its receive is read
 * with process_vm_readv into it at once; one that does not waits for a
 * receive until the next progress() call and is then read into a buffer
 * of its own, so the sender's send always completes whether or not this
 * side ever posts the receive (transport.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "cma.h"
#include "shm.h"

weft_status_t wf_shm_irecv(wf_tctx_t *ctx, int peer, uint64_t tag, void *buf,
                           size_t cap, void *mh, wf_treq_t **req)
{
    wf_mreq_t *r = NULL;

    (void)mh;
    if (!ctx || !req || (!buf && cap))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_match_peer_check(&ctx->m, peer));
    wf_shm_peer_t *p = &ctx->peers[peer];
    weft_status_t st = wf_match_irecv(&ctx->m, &p->m,
                                      p->state == WF_SHM_FAILED,
                                      sizeof(struct wf_treq), peer, tag, buf,
                                      cap, &r);
    if (st < 0)
        return st;
    *req = (wf_treq_t *)r;
    return WEFT_OK;
}

static void garbage(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_slot_t *s)
{
    wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                     "garbage in the ring (slot kind %u, %u bytes of %llu)",
                     s->kind, s->len,
                     (unsigned long long)s->total);
}

/* Whether process `pid` is gone or on its way out (PF_EXITING in the
 * flags of /proc/PID/stat, or a zombie): the kernel tears down a dying
 * process's memory before it closes its files, so a read of it can fail
 * with EFAULT while its socket still looks open. */
static bool process_exiting(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *c = strrchr(buf, ')'); /* the name may hold spaces */
    char state = 0;
    unsigned long flags = 0;
    if (!c || sscanf(c + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return false;
    return state == 'Z' || state == 'X' || (flags & 0x4u); /* PF_EXITING */
}

/* Whether the peer has closed the pair's socket: it left (its memory may
 * already be freed, so a read of a message it offered can fail). */
static bool peer_hung_up(const wf_shm_peer_t *p)
{
    struct pollfd pf = {.fd = p->fd, .events = POLLRDHUP};
    return p->fd >= 0 && poll(&pf, 1, 0) == 1 &&
           (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Reads an RTS's payload into dst (`n` bytes of it) and answers. */
static int pull(wf_tctx_t *ctx, wf_shm_peer_t *p, void *dst, size_t n,
                uint64_t addr, uint64_t id)
{
    int err = n ? wf_cma_read(p->pid, dst, addr, n) : 0;

    /* The process is gone, dying or has left (ESRCH, or EFAULT on the way
     * out or after it closed the pair and freed the buffer),
     * which is the peer's failure; what it published before it died (its
     * failure notice, often) is still in the ring, so the peer fails once
     * that is taken (wf_shm_rx_drain). */
    if (err == ESRCH ||
        (err && (peer_hung_up(p) || process_exiting(p->pid)))) {
        err = ESRCH;
        if (!p->gone)
            WEFT_DEBUG(NET, "shm: %s is gone (reading its memory: %s)",
                       p->desc, strerror(err));
        p->gone = true;
        return err;
    }
    wf_shm_fin_queue(ctx, p, id, err);
    if (err)
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "reading %zu bytes from the peer's memory: %s", n,
                         strerror(err));
    return err;
}

static void pull_into(wf_tctx_t *ctx, wf_shm_peer_t *p, wf_mreq_t *r,
                      size_t total, const uint64_t sig[2], uint64_t addr,
                      uint64_t id)
{
    int err = pull(ctx, p, r->buf, WF_MIN(total, r->len), addr, id);
    if (err)
        wf_match_done(r, err == ESRCH ? WEFT_ERR_REMOTE : p->m.fail_status);
    else
        wf_match_complete(r, total, sig);
}

void wf_shm_claim_remote(wf_match_t *m, wf_mmsg_t *msg, wf_mreq_t *r)
{
    wf_tctx_t *ctx = (wf_tctx_t *)(void *)m;
    wf_shm_peer_t *p = &ctx->peers[r->peer];
    wf_shm_msg_t *sm = (wf_shm_msg_t *)(void *)msg;

    p->remote_unexp--;
    if (p->state != WF_SHM_UP)
        wf_match_done(r, wf_match_peer_failed(m, &p->m));
    else
        pull_into(ctx, p, r, msg->len, msg->sig, sm->addr, sm->id);
    wf_match_msg_free(m, msg);
}

void wf_shm_pull_unclaimed(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    for (wf_mmsg_t *msg = p->m.unexp; msg && p->state == WF_SHM_UP;
         msg = msg->next) {
        wf_shm_msg_t *sm = (wf_shm_msg_t *)(void *)msg;
        if (!msg->remote || sm->round >= ctx->round)
            continue;
        size_t have = 0;
        char *data = wf_match_buffer(&ctx->m, msg->len, &have);
        if (!data) {
            wf_shm_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                             "out of memory for a message of %zu bytes",
                             msg->len);
            return;
        }
        msg->data = data;
        msg->cap = have;
        msg->remote = false;
        p->remote_unexp--;
        if (pull(ctx, p, data, msg->len, sm->addr, sm->id)) {
            /* Kept as it was: its receive fails with the peer. */
            msg->remote = true;
            msg->data = NULL;
            wf_match_buf_put(&ctx->m, data, have);
            p->remote_unexp++;
            return;
        }
        msg->complete = true;
    }
}

/* The next piece of the message in p->in. */
static bool rx_append(wf_tctx_t *ctx, wf_shm_peer_t *p, const char *src,
                      size_t n)
{
    wf_shm_rx_t *in = &p->in;

    if (n > in->total - in->got)
        return false;
    if (in->req) {
        size_t cap = in->req->len;
        size_t k = in->got < cap ? WF_MIN(n, cap - in->got) : 0;
        if (k)
            memcpy(in->req->buf + in->got, src, k);
    } else if (n) {
        memcpy(in->umsg->data + in->got, src, n);
    }
    in->got += n;
    if (in->got == in->total) {
        wf_match_arrived(&ctx->m, in->req, in->umsg, in->total, in->sig);
        memset(in, 0, sizeof(*in));
    }
    return true;
}

/* A new message's first slot: into its receive, or kept. */
static bool rx_begin(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_slot_t *s)
{
    wf_shm_rx_t *in = &p->in;

    in->active = true;
    in->got = 0;
    in->total = s->total;
    in->sig[0] = s->sig[0];
    in->sig[1] = s->sig[1];
    in->req = wf_match_take_posted(&p->m, s->tag);
    in->umsg = NULL;
    if (!in->req) {
        in->umsg = wf_match_unexp_new(&ctx->m, &p->m, s->tag, s->sig,
                                      s->total, s->total);
        if (!in->umsg) {
            in->active = false;
            wf_shm_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                             "out of memory for a message of %llu bytes",
                             (unsigned long long)s->total);
            return false;
        }
    }
    return true;
}

static bool rx_rts(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_slot_t *s)
{
    wf_mreq_t *r = wf_match_take_posted(&p->m, s->tag);

    if (r) {
        pull_into(ctx, p, r, s->total, s->sig, s->addr, s->id);
        return true;
    }
    wf_mmsg_t *msg = wf_match_unexp_new_remote(&ctx->m, &p->m, s->tag, s->sig,
                                               s->total);
    if (!msg) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                         "out of memory for a message header");
        return false;
    }
    wf_shm_msg_t *sm = (wf_shm_msg_t *)(void *)msg;
    msg->remote = true;
    sm->addr = s->addr;
    sm->id = s->id;
    sm->round = ctx->round;
    p->remote_unexp++;
    return true;
}

/* Takes one slot; false when the peer failed over it. */
static bool rx_take(wf_tctx_t *ctx, wf_shm_peer_t *p, const wf_shm_slot_t *s)
{
    const char *payload = (const char *)s + WF_SHM_LINE;

    if (s->len > WF_SHM_SLOT_PAYLOAD && s->kind != WF_SHM_FIN)
        goto bad;
    switch (s->kind) {
    case WF_SHM_EAGER:
    case WF_SHM_FIRST:
        if (p->in.active || (s->kind == WF_SHM_EAGER) != (s->total == s->len))
            goto bad;
        return rx_begin(ctx, p, s) && (rx_append(ctx, p, payload, s->len) ||
                                      (garbage(ctx, p, s), false));
    case WF_SHM_MORE:
        if (!p->in.active || !rx_append(ctx, p, payload, s->len))
            goto bad;
        return true;
    case WF_SHM_RTS:
        if (p->in.active || !p->i_read)
            goto bad;
        return rx_rts(ctx, p, s);
    case WF_SHM_FIN:
        wf_shm_fin_arrived(ctx, p, s->id, (int)s->len);
        return p->state == WF_SHM_UP;
    default:
        break;
    }
bad:
    garbage(ctx, p, s);
    return false;
}

static void rx_publish(wf_shm_peer_t *p)
{
    wf_shm_ring_ctl_t *c = p->rx.ctl;

    atomic_store_explicit(&c->tail, p->rx.pos, memory_order_release);
    p->rx.taken = 0;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&c->tx_waiting, memory_order_relaxed) &&
        atomic_exchange_explicit(&c->tx_waiting, 0, memory_order_acq_rel))
        wf_shm_wake(p->efd);
}

bool wf_shm_rx_pending(const wf_shm_peer_t *p)
{
    const wf_shm_slot_t *s = wf_shm_slot(&p->rx, p->slots, p->rx.pos);
    return atomic_load_explicit(&s->seq, memory_order_acquire) == p->rx.pos + 1;
}

int wf_shm_rx_drain(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    int n = 0;

    /* Bounded, so that one busy peer cannot keep the others waiting; the
     * tail is published every few slots so a producer waiting for room
     * (a long message) goes on while we copy. */
    while (p->state == WF_SHM_UP && n < 4 * (int)p->slots) {
        wf_shm_slot_t *s = wf_shm_slot(&p->rx, p->slots, p->rx.pos);
        if (atomic_load_explicit(&s->seq, memory_order_acquire) !=
            p->rx.pos + 1)
            break;
        bool ok = rx_take(ctx, p, s);
        if (!ok)
            break;
        p->rx.pos++;
        n++;
        if (++p->rx.taken >= p->slots / 4)
            rx_publish(p);
    }
    if (p->rx.taken && p->state == WF_SHM_UP)
        rx_publish(p);
    if (p->gone && p->state == WF_SHM_UP && !wf_shm_rx_pending(p))
        wf_shm_peer_fail(ctx, p, WEFT_ERR_REMOTE,
                         "the process is gone (its memory could not be "
                         "read: %s)", strerror(ESRCH));
    return n;
}

void wf_shm_recv_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st)
{
    if (p->in.active)
        wf_match_drop(&ctx->m, &p->m, p->in.req, p->in.umsg, st);
    memset(&p->in, 0, sizeof(p->in));
    wf_match_fail_posted(&p->m, st);
}
