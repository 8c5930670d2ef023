/*
 * embed.c - plans made of other algorithms' plans (embed.h).
 */
#include "algo/embed.h"

#include <stdlib.h>
#include <string.h>

#include "algo/cost.h"
#include "common.h"

void wf_embed_init(wf_embed_t *e, wf_plan_t *plan)
{
    e->plan = plan;
    e->scratch_top = plan->scratch_bytes;
    e->join = WF_NO_DEP;
    e->phase_from = plan->nsteps;
}

wf_coll_args_t wf_embed_args(const wf_coll_args_t *a, wf_coll_t coll,
                             size_t count, int rank, int size, int root,
                             bool intra)
{
    wf_coll_args_t s = *a;
    s.coll = coll;
    s.count = count;
    s.rank = rank;
    s.size = size;
    s.root = root;
    s.nodes = NULL;
    s.in_place = false; /* where the call's buffers alias: its caller */
    /* The phases sum; an average is divided once, over every rank, by
     * the whole plan (hier_*.c). */
    if (s.op == WEFT_AVG)
        s.op = WEFT_SUM;
    if (intra) {
        /* One machine: a link is a memory copy, whatever the network's
         * speed (WEFT_LINK_MBPS) is. */
        s.local_size = size;
        s.link_mbps = 0;
    } else {
        s.local_size = 1;
        s.single_copy_min = 0;
    }
    return s;
}

double wf_embed_cost(const wf_coll_args_t *args)
{
    double c = 0;
    if (args->size < 2)
        return 0;
    return wf_algo_cheapest(args, &c) ? c : 1e30;
}

double wf_embed_cost_shared(const wf_coll_args_t *args, int sharing)
{
    if (sharing <= 1 || args->size < 2)
        return wf_embed_cost(args);
    const wf_algo_t *algo = wf_algo_cheapest(args, NULL);
    if (!algo)
        return 1e30;
    if (!algo->cost_terms) /* no terms to scale: the whole call, that many
                            * times over */
        return algo->cost(args) * sharing;
    wf_cost_terms_t t;
    algo->cost_terms(args, &t);
    t.path_sent *= sharing;
    t.bytes *= sharing;
    return wf_cost_terms_eval(args, &t);
}

static wf_bref_t moved(const wf_embed_t *e, const wf_subcall_t *s,
                       wf_bref_t r)
{
    switch (r.buf) {
    case WF_BUF_SEND: return wf_bref((wf_buf_id_t)s->send.buf,
                                     s->send.off + r.off);
    case WF_BUF_RECV: return wf_bref((wf_buf_id_t)s->recv.buf,
                                     s->recv.off + r.off);
    default: return wf_bref(WF_BUF_SCRATCH, e->scratch_top + r.off);
    }
}

/* A call's tags are renumbered densely per peer and direction: the
 * algorithms spread theirs over the 32 bits (a high bit per stage), while
 * each embedded call gets WF_EMBED_TAG_SPAN of them.  Both ends of a pair
 * number the same set of tags in the same order, so they still match. */
typedef struct {
    int32_t peer;
    uint32_t send; /* 1 for a send, 0 for a receive */
    uint32_t tag;
    uint32_t index; /* its rank among the pair's and direction's tags */
} tag_key_t;

static int key_cmp(const void *x, const void *y)
{
    const tag_key_t *a = x, *b = y;
    if (a->peer != b->peer)
        return a->peer < b->peer ? -1 : 1;
    if (a->send != b->send)
        return a->send < b->send ? -1 : 1;
    return a->tag < b->tag ? -1 : a->tag > b->tag;
}

typedef struct {
    tag_key_t *keys; /* sorted, unique */
    size_t n;
} tag_map_t;

static bool tag_map_build(tag_map_t *m, const wf_plan_t *sub)
{
    m->n = 0;
    m->keys = malloc((sub->nsteps + 1) * sizeof(*m->keys));
    if (!m->keys)
        return false;
    for (uint32_t i = 0; i < sub->nsteps; i++) {
        const wf_step_t *st = &sub->steps[i];
        if (st->kind == WF_STEP_SEND || st->kind == WF_STEP_RECV)
            m->keys[m->n++] = (tag_key_t){st->peer,
                                          st->kind == WF_STEP_SEND, st->tag,
                                          0};
    }
    qsort(m->keys, m->n, sizeof(*m->keys), key_cmp);
    size_t u = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (u > 0 && key_cmp(&m->keys[i], &m->keys[u - 1]) == 0)
            continue;
        tag_key_t k = m->keys[i];
        bool same_pair = u > 0 && m->keys[u - 1].peer == k.peer &&
                         m->keys[u - 1].send == k.send;
        k.index = same_pair ? m->keys[u - 1].index + 1 : 0;
        m->keys[u++] = k;
    }
    m->n = u;
    return true;
}

/* The tag's rank among the pair's and direction's tags. */
static uint32_t tag_map_get(const tag_map_t *m, const wf_step_t *st)
{
    tag_key_t k = {st->peer, st->kind == WF_STEP_SEND, st->tag, 0};
    const tag_key_t *hit = bsearch(&k, m->keys, m->n, sizeof(k), key_cmp);
    return hit->index;
}

weft_status_t wf_embed_call(wf_embed_t *e, const wf_subcall_t *s)
{
    const wf_coll_args_t *a = &s->args;
    const wf_algo_t *algo = wf_algo_cheapest(a, NULL);
    if (!algo) {
        WEFT_WARN(COLL, "no algorithm for a %s of %zu elements among %d "
                  "ranks inside a node-aware plan", wf_coll_name(a->coll),
                  a->count, a->size);
        return WEFT_ERR_INTERNAL;
    }
    wf_plan_t sub;
    wf_plan_init(&sub, a->dtype, a->op, a->elem_size, a->size);
    weft_status_t st = algo->build(a, &sub);
    if (st == WEFT_OK && sub.failed)
        st = WEFT_ERR_NO_MEMORY;
    tag_map_t tags = {0};
    if (st == WEFT_OK && !tag_map_build(&tags, &sub))
        st = WEFT_ERR_NO_MEMORY;
    int32_t base = (int32_t)e->plan->nsteps;
    for (uint32_t i = 0; st == WEFT_OK && i < sub.nsteps; i++) {
        wf_step_t step = sub.steps[i];
        bool waits = false;
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
            if (step.deps[d] != WF_NO_DEP) {
                step.deps[d] += base;
                waits = true;
            }
        /* What waits for nothing in the call waits for the phase before;
         * the rest waits for it through those. */
        if (!waits)
            step.deps[0] = e->join;
        if (step.kind == WF_STEP_SEND || step.kind == WF_STEP_RECV) {
            uint32_t tag = tag_map_get(&tags, &step);
            if (tag >= WF_EMBED_TAG_SPAN) {
                WEFT_WARN(COLL, "the %s plan of a %s inside a node-aware "
                          "plan sends %u messages to one peer, more than "
                          "the %u it may", algo->name, wf_coll_name(a->coll),
                          tag + 1, WF_EMBED_TAG_SPAN);
                st = WEFT_ERR_INTERNAL;
                break;
            }
            step.peer = s->group[step.peer];
            step.tag = s->tag_base + tag;
        }
        step.src = moved(e, s, step.src);
        step.src2 = moved(e, s, step.src2);
        step.dst = moved(e, s, step.dst);
        if (wf_plan_add(e->plan, &step) == WF_NO_DEP)
            st = WEFT_ERR_NO_MEMORY;
    }
    free(tags.keys);
    e->scratch_top += sub.scratch_bytes;
    e->plan->scratch_bytes = WF_MAX(e->plan->scratch_bytes, e->scratch_top);
    wf_plan_free(&sub);
    return st;
}

uint64_t wf_embed_reserve(wf_embed_t *e, uint64_t bytes)
{
    uint64_t off = (e->scratch_top + 63) / 64 * 64;
    e->scratch_top = off + bytes;
    e->plan->scratch_bytes = WF_MAX(e->plan->scratch_bytes, e->scratch_top);
    return off;
}

/* A step that does nothing but wait: a copy of no bytes. */
static int32_t wait_for(wf_plan_t *plan, int32_t d0, int32_t d1, int32_t d2)
{
    return wf_plan_copy(plan, wf_bref(WF_BUF_SCRATCH, 0),
                        wf_bref(WF_BUF_SCRATCH, 0), 0, d0, d1, d2);
}

void wf_embed_phase_end(wf_embed_t *e)
{
    wf_plan_t *p = e->plan;
    uint32_t from = e->phase_from, end = p->nsteps;
    if (end == from || p->failed) /* an empty phase: the join stands */
        return;
    /* The phase's last steps: those nothing later in it waits for. */
    bool *waited = calloc(end - from, sizeof(bool));
    if (!waited) {
        p->failed = true;
        return;
    }
    for (uint32_t i = from; i < end; i++)
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++) {
            int32_t dep = p->steps[i].deps[d];
            if (dep >= (int32_t)from)
                waited[dep - (int32_t)from] = true;
        }
    /* Joined three at a time: join = wait(join, sink, sink). */
    int32_t join = WF_NO_DEP, pending[2];
    int npending = 0;
    for (uint32_t i = from; i < end; i++) {
        if (waited[i - from])
            continue;
        pending[npending++] = (int32_t)i;
        if (npending == 2) {
            join = wait_for(p, join, pending[0], pending[1]);
            npending = 0;
        }
    }
    if (npending)
        join = wait_for(p, join, pending[0], WF_NO_DEP);
    free(waited);
    e->join = join;
    e->phase_from = p->nsteps;
}
