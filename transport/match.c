/*
 * match.c - the matching layer's cold half (match.h has the rules and
 * the hot half): setup and teardown, test() and scan_unexpected() for the
 * ops tables, unexpected-message buffers and their pool, and failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

void wf_match_init(wf_match_t *m, const char *name, int rank, int npeers,
                   size_t msg_size)
{
    m->name = name;
    m->rank = rank;
    m->npeers = npeers;
    /* Rounded up, so that data kept in the message's own allocation is
     * aligned like malloc's. */
    m->msg_size = (WF_MAX(msg_size, sizeof(wf_mmsg_t)) + 15) & ~(size_t)15;
}

void wf_match_peers(wf_match_t *m, void *peers, size_t size, size_t off)
{
    m->peers = peers;
    m->peer_size = size;
    m->mpeer_off = off;
}

/* ---- requests ---------------------------------------------------------- */

void wf_match_req_oom(wf_match_t *m, int peer)
{
    WEFT_WARN(NET, "%s: out of memory for a request to %s", m->name,
              wf_match_peer(m, peer)->desc);
}

weft_status_t wf_match_bad_peer(const wf_match_t *m, int peer)
{
    WEFT_WARN(NET, "%s: invalid peer %d (rank %d of %d)", m->name, peer,
              m->rank, m->npeers);
    return WEFT_ERR_INVALID_ARG;
}

void wf_match_req_free(wf_match_t *m, wf_mreq_t *r)
{
    if (r->holds)
        m->release(m, r);
    if (r->all_prev)
        r->all_prev->all_next = r->all_next;
    else
        m->all = r->all_next;
    if (r->all_next)
        r->all_next->all_prev = r->all_prev;
    if (m->nspare_reqs < WF_MATCH_SPARE_REQS) {
        r->next = m->spare_reqs;
        m->spare_reqs = r;
        m->nspare_reqs++;
    } else {
        free(r);
    }
}

/* The context and request of every transport begin with the matching
 * state and the request head (match.h). */
weft_status_t wf_match_test(wf_tctx_t *ctx, wf_treq_t *req,
                            wf_treq_info_t *info)
{
    wf_match_t *m = (wf_match_t *)(void *)ctx;
    wf_mreq_t *r = (wf_mreq_t *)(void *)req;
    weft_status_t st;

    if (!ctx || !req)
        return WEFT_ERR_INVALID_ARG;
    st = r->status;
    if (st == WEFT_INPROGRESS)
        return st;
    if (st == WEFT_OK && info)
        *info = r->info;
    wf_match_req_free(m, r);
    return st;
}

uint64_t wf_match_scan_unexpected(wf_tctx_t *ctx,
                                  bool (*visit)(void *arg, int peer,
                                                uint64_t tag,
                                                const uint64_t sig[2]),
                                  void *arg)
{
    wf_match_t *m = (wf_match_t *)(void *)ctx;

    if (!ctx)
        return 0;
    for (int i = 0; visit && i < m->npeers; i++)
        for (wf_mmsg_t *msg = wf_match_peer(m, i)->unexp; msg;
             msg = msg->next)
            if (!msg->waiter && visit(arg, i, msg->tag, msg->sig))
                return m->unexp_arrivals;
    return m->unexp_arrivals;
}

/* ---- unexpected messages ----------------------------------------------- */

/* A buffer of the pool of at least `want` bytes (the largest kept), or
 * NULL; its size in *cap. */
static char *spare_take(wf_match_t *m, size_t want, size_t *cap)
{
    int best = -1;

    for (int i = 0; i < m->nspare; i++)
        if (m->spare_cap[i] >= want &&
            (best < 0 || m->spare_cap[i] > m->spare_cap[best]))
            best = i;
    if (best < 0)
        return NULL;
    char *data = m->spare[best];
    *cap = m->spare_cap[best];
    m->spare_bytes -= *cap;
    m->nspare--;
    m->spare[best] = m->spare[m->nspare];
    m->spare_cap[best] = m->spare_cap[m->nspare];
    return data;
}

void wf_match_buf_put(wf_match_t *m, char *data, size_t cap)
{
    if (cap >= WF_MATCH_SPARE_MIN && cap <= WF_MATCH_SPARE_MAX &&
        m->nspare < WF_MATCH_SPARES &&
        m->spare_bytes + cap <= WF_MATCH_SPARE_BYTES) {
        m->spare[m->nspare] = data;
        m->spare_cap[m->nspare++] = cap;
        m->spare_bytes += cap;
    } else {
        free(data);
    }
}

char *wf_match_buffer(wf_match_t *m, size_t cap, size_t *have)
{
    /* A kept buffer may be larger than asked: it holds what an earlier
     * message really sent, so memory still follows real bytes. */
    char *data = cap >= WF_MATCH_BLOCK_MAX ? spare_take(m, cap, have) : NULL;

    if (!data) {
        *have = cap ? cap : 1;
        data = malloc(*have);
    }
    return data;
}

static wf_mmsg_t *unexp_link(wf_match_t *m, wf_mpeer_t *q, wf_mmsg_t *msg,
                             uint64_t tag, const uint64_t sig[2], size_t len)
{
    msg->tag = tag;
    msg->sig[0] = sig[0];
    msg->sig[1] = sig[1];
    msg->len = len;
    if (q->unexp_tail)
        q->unexp_tail->next = msg;
    else
        q->unexp = msg;
    q->unexp_tail = msg;
    m->unexp_arrivals++;
    return msg;
}

wf_mmsg_t *wf_match_unexp_new(wf_match_t *m, wf_mpeer_t *q, uint64_t tag,
                              const uint64_t sig[2], size_t len, size_t cap)
{
    /* A small message whose length is known in full lives in one
     * allocation with its header. */
    bool block = cap == len && cap < WF_MATCH_BLOCK_MAX;
    wf_mmsg_t *msg = malloc(m->msg_size + (block ? cap : 0));

    if (!msg)
        return NULL;
    memset(msg, 0, m->msg_size);
    if (block) {
        msg->data = (char *)msg + m->msg_size;
        msg->cap = cap;
        msg->in_block = true;
    } else {
        msg->data = wf_match_buffer(m, cap, &msg->cap);
        if (!msg->data) {
            free(msg);
            return NULL;
        }
    }
    return unexp_link(m, q, msg, tag, sig, len);
}

wf_mmsg_t *wf_match_unexp_new_remote(wf_match_t *m, wf_mpeer_t *q,
                                     uint64_t tag, const uint64_t sig[2],
                                     size_t len)
{
    wf_mmsg_t *msg = calloc(1, m->msg_size);

    if (!msg)
        return NULL;
    msg->remote = true;
    return unexp_link(m, q, msg, tag, sig, len);
}

void wf_match_unexp_unlink(wf_mpeer_t *q, wf_mmsg_t *msg)
{
    wf_mmsg_t *prev = NULL, **link = &q->unexp;

    while (*link && *link != msg) {
        prev = *link;
        link = &(*link)->next;
    }
    if (!*link)
        return;
    *link = msg->next;
    if (q->unexp_tail == msg)
        q->unexp_tail = prev;
    msg->next = NULL;
}

/* ---- failure and teardown ---------------------------------------------- */

void wf_match_drop(wf_match_t *m, wf_mpeer_t *q, wf_mreq_t *r,
                   wf_mmsg_t *msg, weft_status_t st)
{
    if (r)
        wf_match_done(r, st);
    if (!msg)
        return;
    if (msg->waiter)
        wf_match_done(msg->waiter, st); /* claimed: in no list */
    else
        wf_match_unexp_unlink(q, msg);
    wf_match_msg_free(m, msg);
}

void wf_match_fail_posted(wf_mpeer_t *q, weft_status_t st)
{
    wf_mreq_t *r = q->posted;

    while (r) {
        wf_mreq_t *next = r->next;
        wf_match_done(r, st);
        r = next;
    }
    q->posted = q->posted_tail = NULL;
}

void wf_match_fail_note(wf_match_t *m, wf_mpeer_t *q, weft_status_t st,
                        const char *fmt, va_list ap)
{
    vsnprintf(q->fail_msg, sizeof(q->fail_msg), fmt, ap);
    if (q->fail_unreported)
        WEFT_DEBUG(NET, "%s: %s: %s", m->name, q->desc, q->fail_msg);
    else
        WEFT_WARN(NET, "%s: %s: %s", m->name, q->desc, q->fail_msg);
    q->fail_status = st;
}

weft_status_t wf_match_peer_failed(wf_match_t *m, wf_mpeer_t *q)
{
    if (q->fail_unreported) {
        WEFT_WARN(NET, "%s: %s: %s", m->name, q->desc, q->fail_msg);
        q->fail_unreported = false;
    }
    return q->fail_status;
}

void wf_match_fini(wf_match_t *m)
{
    for (int i = 0; m->peers && i < m->npeers; i++) {
        wf_mpeer_t *q = wf_match_peer(m, i);
        while (q->unexp) {
            wf_mmsg_t *msg = q->unexp;
            q->unexp = msg->next;
            wf_match_msg_free(m, msg);
        }
        q->unexp_tail = NULL;
        q->posted = q->posted_tail = NULL;
    }
    while (m->all)
        wf_match_req_free(m, m->all);
    while (m->spare_reqs) {
        wf_mreq_t *r = m->spare_reqs;
        m->spare_reqs = r->next;
        free(r);
    }
    m->nspare_reqs = 0;
    while (m->nspare > 0)
        free(m->spare[--m->nspare]);
    m->spare_bytes = 0;
}
