/*
 * shm_send.c - the producer's side of a pair's ring.
 *
 * A message of at most one slot's payload is one EAGER slot; a longer one
 * is a FIRST slot and MORE slots, written in order while the ring has
 * room, so that a send completes once its last byte is in the ring.  A
 * message of WEFT_SHM_CMA_MIN bytes or more, to a peer that proved it can
 * read this process's memory, is one RTS slot instead: the receiver
 * copies the payload straight from the sender's buffer and answers with
 * a FIN, which completes the send (until then the buffer is the
 * receiver's to read).  Sends to one peer fill the ring in post order,
 * which is what keeps messages of one tag in order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm.h"

void wf_shm_wake(int efd)
{
    uint64_t one = 1;
    ssize_t n = write(efd, &one, sizeof(one));
    (void)n; /* EAGAIN: the counter is full, so the peer wakes anyway */
}

void wf_shm_tx_wake(wf_shm_peer_t *p)
{
    wf_shm_ring_ctl_t *c = p->tx.ctl;

    /* Orders our published slots before the look at the flag, against
     * the consumer's store of the flag before its last look at the ring
     * (shm_wire.h): one of the two sees the other. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&c->rx_sleeping, memory_order_relaxed) &&
        atomic_exchange_explicit(&c->rx_sleeping, 0, memory_order_acq_rel))
        wf_shm_wake(p->efd);
}

static bool tx_room(wf_shm_peer_t *p)
{
    wf_shm_ring_t *t = &p->tx;

    if (t->pos - t->tail < p->slots)
        return true;
    t->tail = atomic_load_explicit(&t->ctl->tail, memory_order_acquire);
    return t->pos - t->tail < p->slots;
}

static wf_shm_slot_t *tx_slot(wf_shm_peer_t *p)
{
    return wf_shm_slot(&p->tx, p->slots, p->tx.pos);
}

static void tx_publish(wf_shm_peer_t *p, wf_shm_slot_t *s)
{
    atomic_store_explicit(&s->seq, ++p->tx.pos, memory_order_release);
}

static void put_fin(wf_shm_peer_t *p, uint64_t v)
{
    wf_shm_slot_t *s = tx_slot(p);

    s->kind = WF_SHM_FIN;
    s->id = v >> 32;
    s->len = (uint32_t)(v & 0xffffffffu);
    tx_publish(p, s);
}

/* Writes what of r fits; true when all of it went. */
static bool put_data(wf_tctx_t *ctx, wf_shm_peer_t *p, struct wf_treq *r)
{
    size_t len = r->m.len;

    if (!r->started && p->pull_ok && ctx->cma_min && len >= ctx->cma_min) {
        wf_shm_slot_t *s = tx_slot(p);
        r->rts_id = ++p->rts_next;
        s->kind = WF_SHM_RTS;
        s->len = 0;
        s->tag = r->m.tag;
        s->sig[0] = r->sig[0];
        s->sig[1] = r->sig[1];
        s->total = len;
        s->addr = (uint64_t)(uintptr_t)r->m.buf;
        s->id = r->rts_id;
        r->started = true;
        tx_publish(p, s);
        return true;
    }
    while (!r->started || r->off < len) {
        if (!tx_room(p))
            return false;
        wf_shm_slot_t *s = tx_slot(p);
        size_t n = WF_MIN(len - r->off, (size_t)WF_SHM_SLOT_PAYLOAD);
        if (!r->started) {
            s->kind = len <= WF_SHM_SLOT_PAYLOAD ? WF_SHM_EAGER : WF_SHM_FIRST;
            s->tag = r->m.tag;
            s->sig[0] = r->sig[0];
            s->sig[1] = r->sig[1];
            s->total = len;
            r->started = true;
        } else {
            s->kind = WF_SHM_MORE;
        }
        s->len = (uint32_t)n;
        if (n)
            memcpy(wf_shm_payload(s), r->m.buf + r->off, n);
        r->off += n;
        tx_publish(p, s);
    }
    return true;
}

int wf_shm_tx_pump(wf_tctx_t *ctx, wf_shm_peer_t *p)
{
    uint64_t before = p->tx.pos;
    size_t f = 0;

    if (p->state != WF_SHM_UP)
        return 0;
    while (f < p->nfins && tx_room(p))
        put_fin(p, p->fins[f++]);
    if (f) {
        memmove(p->fins, p->fins + f, (p->nfins - f) * sizeof(*p->fins));
        p->nfins -= f;
    }
    while (!p->nfins && p->sq && tx_room(p)) {
        struct wf_treq *r = p->sq;
        if (!put_data(ctx, p, r))
            break;
        p->sq = r->next_q;
        if (!p->sq)
            p->sq_tail = NULL;
        r->next_q = NULL;
        if (r->rts_id) {
            r->next_q = p->rts; /* until its FIN */
            p->rts = r;
        } else {
            wf_match_sent(&r->m);
        }
    }
    int n = (int)(p->tx.pos - before);
    if (n)
        wf_shm_tx_wake(p);
    return n;
}

weft_status_t wf_shm_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                           const uint64_t sig[2], const void *buf, size_t len,
                           void *mh, wf_treq_t **req)
{
    (void)mh;
    if (!ctx || !req || (!buf && len))
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_match_peer_check(&ctx->m, peer));
    wf_shm_peer_t *p = &ctx->peers[peer];
    if (p->state == WF_SHM_FAILED)
        return wf_match_peer_failed(&ctx->m, &p->m);
    struct wf_treq *r = (struct wf_treq *)(void *)wf_match_req_new(
        &ctx->m, sizeof(struct wf_treq), peer, tag, buf, len);
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    if (sig) {
        r->sig[0] = sig[0];
        r->sig[1] = sig[1];
    }
    if (p->sq_tail)
        p->sq_tail->next_q = r;
    else
        p->sq = r;
    p->sq_tail = r;
    if (p->sq == r)
        wf_shm_tx_pump(ctx, p);
    *req = (wf_treq_t *)r;
    return WEFT_OK;
}

bool wf_shm_send_pulled(wf_tctx_t *ctx, int peer, size_t len)
{
    if (!ctx || peer < 0 || peer >= ctx->size || peer == ctx->rank)
        return false;
    const wf_shm_peer_t *p = &ctx->peers[peer];
    return p->state == WF_SHM_UP && p->pull_ok && ctx->cma_min &&
           len >= ctx->cma_min;
}

void wf_shm_fin_queue(wf_tctx_t *ctx, wf_shm_peer_t *p, uint64_t id, int err)
{
    uint64_t v = id << 32 | (uint32_t)err;

    if (p->state != WF_SHM_UP)
        return;
    if (!p->nfins && tx_room(p)) {
        put_fin(p, v);
        wf_shm_tx_wake(p);
        return;
    }
    if (p->nfins == p->fins_cap) {
        size_t cap = p->fins_cap ? 2 * p->fins_cap : 16;
        uint64_t *f = realloc(p->fins, cap * sizeof(*f));
        if (!f) {
            wf_shm_peer_fail(ctx, p, WEFT_ERR_NO_MEMORY,
                             "out of memory for the answers to the peer");
            return;
        }
        p->fins = f;
        p->fins_cap = cap;
    }
    p->fins[p->nfins++] = v;
}

void wf_shm_fin_arrived(wf_tctx_t *ctx, wf_shm_peer_t *p, uint64_t id,
                        int err)
{
    struct wf_treq **link = &p->rts, *r;

    while ((r = *link) != NULL && r->rts_id != id)
        link = &r->next_q;
    if (!r) {
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "the peer answered a message that was never sent "
                         "(id %llu)", (unsigned long long)id);
        return;
    }
    *link = r->next_q;
    r->next_q = NULL;
    if (err) {
        wf_match_done(&r->m, WEFT_ERR_TRANSPORT);
        wf_shm_peer_fail(ctx, p, WEFT_ERR_TRANSPORT,
                         "the peer could not read this process's memory: %s",
                         strerror(err));
        return;
    }
    wf_match_sent(&r->m);
}

void wf_shm_send_fail(wf_tctx_t *ctx, wf_shm_peer_t *p, weft_status_t st)
{
    (void)ctx;
    for (struct wf_treq *lists[2] = {p->sq, p->rts}, **l = lists;
         l < lists + 2; l++)
        for (struct wf_treq *r = *l, *next; r; r = next) {
            next = r->next_q;
            r->next_q = NULL;
            wf_match_done(&r->m, st);
        }
    p->sq = p->sq_tail = p->rts = NULL;
    p->nfins = 0;
}
