/*
 * p2p_seq.c - the order of point-to-point messages.
 *
 * Messages between one pair of ranks with the same tag match in the order
 * they were posted (MPI's non-overtaking rule); different tags match
 * independently.  The engine gets that from sequence numbers per (peer,
 * tag), carried in the wire tag: the sender numbers its sends, the
 * receiver its receives, and each receive posts the transport receive for
 * exactly its number.
 *
 * A receive from any source cannot be numbered when it is submitted: its
 * sender is whichever peer's next message for that tag arrives first.  It
 * waits in the active list with no plan running while the progress side
 * looks among the transport's unexpected messages for one that is the
 * next of its (peer, tag); the first found names the sender.  Every
 * receive submitted while such a receive is unmatched is numbered here, in
 * submission order, and one with the tag of an earlier unmatched receive
 * from any source waits behind it: as in MPI, the message it would take
 * may be the earlier receive's.
 */
#include <stdlib.h>

#include "common.h"
#include "sched/engine_impl.h"

/* Sequence numbers of the tags other than 0, by (peer, tag), in an open
 * addressing table: most programs use a handful of tags. */
typedef struct {
    int32_t peer; /* -1: empty */
    uint32_t tag;
    uint64_t send, recv;
} tag_slot_t;

struct wf_p2p_tags {
    uint32_t cap, used; /* cap: a power of two */
    tag_slot_t *slot;
};

static uint32_t slot_hash(int peer, uint32_t tag, uint32_t cap)
{
    uint64_t key = (uint64_t)(uint32_t)peer << 32 | tag;
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & (cap - 1);
}

static tag_slot_t *slot_find(struct wf_p2p_tags *t, int peer, uint32_t tag)
{
    uint32_t mask = t->cap - 1;
    for (uint32_t i = slot_hash(peer, tag, t->cap);; i = (i + 1) & mask) {
        tag_slot_t *s = &t->slot[i];
        if (s->peer < 0 || (s->peer == peer && s->tag == tag))
            return s;
    }
}

static bool table_grow(struct wf_p2p_tags *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 16;
    tag_slot_t *slot = malloc(cap * sizeof(*slot));
    if (!slot || cap > UINT32_MAX / 4) {
        free(slot);
        return false;
    }
    for (uint32_t i = 0; i < cap; i++)
        slot[i].peer = -1;
    struct wf_p2p_tags bigger = {cap, t->used, slot};
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slot[i].peer >= 0)
            *slot_find(&bigger, t->slot[i].peer, t->slot[i].tag) = t->slot[i];
    free(t->slot);
    *t = bigger;
    return true;
}

/* The counter of (peer, tag) in one direction; NULL when out of memory.
 * Under the engine's state lock. */
static uint64_t *counter(wf_engine_t *e, int peer, uint32_t tag, bool send)
{
    if (tag == 0)
        return send ? &e->p2p_send_seq[peer] : &e->p2p_recv_seq[peer];
    if (!e->p2p_tags && !(e->p2p_tags = calloc(1, sizeof(*e->p2p_tags))))
        return NULL;
    struct wf_p2p_tags *t = e->p2p_tags;
    if ((t->used + 1) * 2 > t->cap && !table_grow(t))
        return NULL;
    tag_slot_t *s = slot_find(t, peer, tag);
    if (s->peer < 0) {
        *s = (tag_slot_t){.peer = peer, .tag = tag};
        t->used++;
    }
    return send ? &s->send : &s->recv;
}

/* The next receive number of (peer, tag), without making an entry. */
static uint64_t next_recv(wf_engine_t *e, int peer, uint32_t tag)
{
    if (tag == 0)
        return e->p2p_recv_seq[peer];
    if (!e->p2p_tags || !e->p2p_tags->cap)
        return 0;
    tag_slot_t *s = slot_find(e->p2p_tags, peer, tag);
    return s->peer < 0 ? 0 : s->recv;
}

static weft_status_t out_of_memory(const struct weft_request *req)
{
    WEFT_WARN(SCHED, "out of memory numbering a %s of tag %u",
              wf_coll_name(req->args.coll), req->p2p_tag);
    return WEFT_ERR_NO_MEMORY;
}

weft_status_t wf_p2p_seq_assign(wf_engine_t *e, struct weft_request *req)
{
    const wf_coll_args_t *a = &req->args;
    bool send = a->coll == WF_COLL_SEND;
    if (!send && (a->peer == WEFT_ANY_SOURCE || e->recv_deferred > 0)) {
        req->seq_deferred = true;
        e->recv_deferred++;
        return WEFT_OK;
    }
    uint64_t *c = counter(e, a->peer, req->p2p_tag, send);
    if (!c)
        return out_of_memory(req);
    req->seq = (*c)++;
    return WEFT_OK;
}

void wf_p2p_round_begin(wf_engine_t *e) { e->wild_ntags = 0; }

static bool tag_held(const wf_engine_t *e, uint32_t tag)
{
    for (uint32_t i = 0; i < e->wild_ntags; i++)
        if (e->wild_tags[i] == tag)
            return true;
    return false;
}

static bool hold_tag(wf_engine_t *e, uint32_t tag)
{
    if (tag_held(e, tag))
        return true;
    if (!wf_array_room((void **)&e->wild_tags, &e->wild_tags_cap,
                       e->wild_ntags, sizeof(*e->wild_tags)))
        return false;
    e->wild_tags[e->wild_ntags++] = tag;
    return true;
}

typedef struct {
    wf_engine_t *e;
    uint32_t tag;
    int found;
} search_t;

static bool is_next_message(void *arg, int peer, uint64_t tag,
                            const uint64_t sig[2])
{
    (void)sig;
    search_t *s = arg;
    if (tag >> 62 != WF_TAG_KIND_P2P || (uint32_t)tag != s->tag ||
        peer == s->e->rank)
        return false;
    uint64_t want = next_recv(s->e, peer, s->tag) & WF_TAG_SEQ_MASK;
    if (wf_tag_seq(tag) != want)
        return false;
    s->found = peer;
    return true;
}

/* Connections are made on first use, and a receive from any source uses
 * every peer: without this, a peer whose connection this side must dial
 * (tcp, shm: the lower rank dials) could never deliver its message. */
static weft_status_t connect_all(wf_engine_t *e)
{
    if (e->wild_connected)
        return WEFT_OK;
    for (int p = 0; p < e->size; p++) {
        weft_status_t st = p == e->rank ? WEFT_OK : wf_engine_connect(e, p);
        if (st < 0)
            return st;
    }
    e->wild_connected = true;
    return WEFT_OK;
}

/* The peer whose next message of `tag` is waiting in the transport, or
 * -1.  Looks again only when something arrived or a receive was numbered
 * since this request last looked. */
static int find_sender(wf_engine_t *e, struct weft_request *req)
{
    if (!e->tops->scan_unexpected)
        return -1;
    uint64_t mark = e->tops->scan_unexpected(e->tctx, NULL, NULL) +
                    e->wild_gen + 1;
    if (req->wild_mark == mark)
        return -1;
    search_t s = {e, req->p2p_tag, -1};
    pthread_mutex_lock(&e->lock); /* for the receive counters */
    e->tops->scan_unexpected(e->tctx, is_next_message, &s);
    pthread_mutex_unlock(&e->lock);
    if (s.found < 0)
        req->wild_mark = mark;
    return s.found;
}

int wf_p2p_assign_deferred(wf_engine_t *e, struct weft_request *req)
{
    uint32_t tag = req->p2p_tag;
    if (tag_held(e, tag))
        return 0;
    int peer = req->args.peer;
    if (peer == WEFT_ANY_SOURCE) {
        weft_status_t st = connect_all(e);
        if (st < 0)
            return st;
        peer = find_sender(e, req);
        if (peer < 0)
            return hold_tag(e, tag) ? 0 : out_of_memory(req);
        wf_built_plan_t *b = wf_built_plan_retarget(req->built, peer);
        if (!b)
            return out_of_memory(req);
        wf_built_plan_release(req->built);
        req->built = b;
        req->plan = &b->plan;
    }
    pthread_mutex_lock(&e->lock);
    uint64_t *c = counter(e, peer, tag, false);
    if (c) {
        req->seq = (*c)++;
        req->seq_deferred = false;
        e->recv_deferred--;
    }
    pthread_mutex_unlock(&e->lock);
    if (!c)
        return out_of_memory(req);
    req->args.peer = peer; /* read by the caller once the request is done */
    e->wild_gen++;         /* the others' next numbers may have moved */
    return 1;
}

void wf_p2p_forget(wf_engine_t *e, struct weft_request *req)
{
    if (!req->seq_deferred)
        return;
    pthread_mutex_lock(&e->lock);
    e->recv_deferred--;
    pthread_mutex_unlock(&e->lock);
    req->seq_deferred = false;
}

void wf_p2p_free(wf_engine_t *e)
{
    if (e->p2p_tags)
        free(e->p2p_tags->slot);
    free(e->p2p_tags);
    free(e->wild_tags);
    e->p2p_tags = NULL;
    e->wild_tags = NULL;
}
