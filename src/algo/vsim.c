/*
 * vsim.c - virtual-time execution of plans (see vsim.h): an event queue
 * ordered by time, one entry per step completion.
 */
#include "algo/vsim.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "plan/nodemap.h"
#include "plan/plan.h"

#define DEFAULT_MAX_STEPS (6u * 1000 * 1000)

typedef struct {
    double t;
    uint32_t rank, step;
} event_t;

typedef struct {
    int32_t src, dst; /* src -1: empty slot */
    uint32_t tag;
    bool sent;
    int32_t recv_step; /* waiting receive, -1 none */
    double arrival, recv_ready;
    uint64_t len;
} msg_t;

typedef struct {
    wf_plan_t plan;
    wf_plan_index_t ix;
    uint32_t ndone;
    double link_free, cpu_free, finish;
    uint64_t msgs, bytes;
    uint64_t upfront; /* sends that wait for no receive of this plan */
} vrank_t;

typedef struct {
    const wf_vsim_params_t *p;
    const wf_node_map_t *nodes; /* NULL: a machine per rank */
    double *nic_free;           /* per machine, with nodes */
    vrank_t *ranks;
    int size;
    event_t *heap;
    size_t nheap, heap_cap;
    msg_t *msgs;
    size_t msg_cap; /* power of two */
    bool failed;
} vsim_t;

static void heap_push(vsim_t *v, double t, uint32_t r, uint32_t i)
{
    if (v->nheap == v->heap_cap) {
        v->heap_cap = v->heap_cap ? 2 * v->heap_cap : 1024;
        v->heap = realloc(v->heap, v->heap_cap * sizeof(event_t));
    }
    size_t k = v->nheap++;
    while (k && v->heap[(k - 1) / 2].t > t) {
        v->heap[k] = v->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    v->heap[k] = (event_t){t, r, i};
}

static event_t heap_pop(vsim_t *v)
{
    event_t top = v->heap[0], last = v->heap[--v->nheap];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= v->nheap)
            break;
        if (c + 1 < v->nheap && v->heap[c + 1].t < v->heap[c].t)
            c++;
        if (v->heap[c].t >= last.t)
            break;
        v->heap[k] = v->heap[c];
        k = c;
    }
    if (v->nheap)
        v->heap[k] = last;
    return top;
}

static msg_t *msg_get(vsim_t *v, int src, int dst, uint32_t tag)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xC2B2AE3D27D4EB4Full) ^ tag;
    for (size_t i = h & (v->msg_cap - 1);; i = (i + 1) & (v->msg_cap - 1)) {
        msg_t *m = &v->msgs[i];
        if (m->src == src && m->dst == dst && m->tag == tag)
            return m;
        if (m->src == -1) {
            *m = (msg_t){src, dst, tag, false, -1, 0, 0, 0};
            return m;
        }
    }
}

static double local_cost(const vsim_t *v, const wf_plan_t *plan,
                         const wf_step_t *s)
{
    double bytes = s->kind == WF_STEP_COPY
                       ? (double)s->count
                       : (double)s->count * (double)plan->elem_size;
    return bytes * v->p->gamma_us_per_byte;
}

/* A step whose dependencies finished at time t. */
static void make_ready(vsim_t *v, uint32_t r, uint32_t i, double t)
{
    vrank_t *k = &v->ranks[r];
    const wf_step_t *s = &k->plan.steps[i];
    if (s->kind == WF_STEP_SEND) {
        bool intra = v->nodes &&
                     v->nodes->node_of[r] == v->nodes->node_of[s->peer];
        double *link = !v->nodes || intra
                           ? &k->link_free
                           : &v->nic_free[v->nodes->node_of[r]];
        double alpha = intra ? v->p->intra_alpha_us : v->p->alpha_us;
        double beta = intra ? v->p->intra_beta_us_per_byte
                            : v->p->beta_us_per_byte;
        double start = WF_MAX(t, *link);
        double wire = (double)s->count * beta;
        *link = start + wire;
        k->msgs++;
        k->bytes += s->count;
        heap_push(v, *link, r, i);
        msg_t *m = msg_get(v, (int)r, s->peer, s->tag);
        m->sent = true;
        m->len = s->count;
        m->arrival = start + alpha + wire;
        if (m->recv_step >= 0)
            heap_push(v, WF_MAX(m->arrival, m->recv_ready), (uint32_t)s->peer,
                      (uint32_t)m->recv_step);
    } else if (s->kind == WF_STEP_RECV) {
        msg_t *m = msg_get(v, s->peer, (int)r, s->tag);
        if (m->sent) {
            heap_push(v, WF_MAX(t, m->arrival), r, i);
        } else {
            m->recv_step = (int32_t)i;
            m->recv_ready = t;
        }
    } else {
        double start = WF_MAX(t, k->cpu_free);
        k->cpu_free = start + local_cost(v, &k->plan, s);
        heap_push(v, k->cpu_free, r, i);
    }
}

static void vsim_free(vsim_t *v)
{
    for (int r = 0; v->ranks && r < v->size; r++) {
        wf_plan_free(&v->ranks[r].plan);
        wf_plan_index_free(&v->ranks[r].ix);
    }
    free(v->ranks);
    free(v->heap);
    free(v->msgs);
    free(v->nic_free);
}

/* Whether reduce `w` writes bytes that send `snd` reads; in place the
 * send and receive buffers are one memory. */
static bool reduce_feeds(const wf_plan_t *plan, bool in_place,
                         const wf_step_t *w, const wf_step_t *snd)
{
    bool user_w = w->dst.buf == WF_BUF_SEND || w->dst.buf == WF_BUF_RECV;
    bool user_s = snd->src.buf == WF_BUF_SEND || snd->src.buf == WF_BUF_RECV;
    bool same = w->dst.buf == snd->src.buf || (in_place && user_w && user_s);
    uint64_t w_end = w->dst.off + w->count * plan->elem_size;
    return same && w->dst.off < snd->src.off + snd->count &&
           snd->src.off < w_end;
}

/* Sends of a plan that wait for none of its receives, directly or
 * through other steps (deps point to earlier steps): a rank posts them at
 * once, where every other send waits for a message to arrive first.  A
 * send's dependency on a reduce that does not write what it sends only
 * paces it (reducescatter_rhd.c): its data is there, not forwarded, and
 * that dependency is not followed. */
static weft_status_t count_upfront(const wf_plan_t *plan, bool in_place,
                                   uint64_t *n)
{
    bool *after_recv = calloc(plan->nsteps ? plan->nsteps : 1, sizeof(bool));
    if (!after_recv)
        return WEFT_ERR_NO_MEMORY;
    *n = 0;
    for (uint32_t i = 0; i < plan->nsteps; i++) {
        const wf_step_t *st = &plan->steps[i];
        after_recv[i] = st->kind == WF_STEP_RECV;
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++) {
            if (st->deps[d] < 0 || (uint32_t)st->deps[d] >= i)
                continue;
            const wf_step_t *dep = &plan->steps[st->deps[d]];
            if (st->kind == WF_STEP_SEND && dep->kind == WF_STEP_REDUCE &&
                !reduce_feeds(plan, in_place, dep, st))
                continue;
            after_recv[i] |= after_recv[st->deps[d]];
        }
        *n += st->kind == WF_STEP_SEND && !after_recv[i];
    }
    free(after_recv);
    return WEFT_OK;
}

/* Builds every rank's plan; counts sends to size the message table. */
static weft_status_t build_all(vsim_t *v, const wf_algo_t *algo,
                               const wf_coll_args_t *tmpl)
{
    uint64_t sends = 0;
    for (int r = 0; r < v->size; r++) {
        vrank_t *k = &v->ranks[r];
        wf_coll_args_t a = *tmpl;
        a.rank = r;
        wf_plan_init(&k->plan, a.dtype, a.op, a.elem_size, a.size);
        WEFT_CHECK(algo->build(&a, &k->plan));
        WEFT_CHECK(wf_plan_index(&k->plan, &k->ix));
        WEFT_CHECK(count_upfront(&k->plan, a.in_place, &k->upfront));
        for (uint32_t i = 0; i < k->plan.nsteps; i++)
            sends += k->plan.steps[i].kind == WF_STEP_SEND;
    }
    v->msg_cap = 16;
    while (v->msg_cap < 2 * sends + 16)
        v->msg_cap *= 2;
    v->msgs = malloc(v->msg_cap * sizeof(msg_t));
    if (!v->msgs)
        return WEFT_ERR_NO_MEMORY;
    for (size_t i = 0; i < v->msg_cap; i++)
        v->msgs[i].src = -1;
    return WEFT_OK;
}

static weft_status_t simulate(vsim_t *v, const wf_algo_t *algo,
                              wf_vsim_result_t *res)
{
    for (int r = 0; r < v->size; r++)
        for (uint32_t i = 0; i < v->ranks[r].plan.nsteps; i++)
            if (!v->ranks[r].ix.pending[i])
                make_ready(v, (uint32_t)r, i, 0);
    while (v->nheap) {
        event_t e = heap_pop(v);
        vrank_t *k = &v->ranks[e.rank];
        k->ndone++;
        k->finish = WF_MAX(k->finish, e.t);
        for (uint32_t d = k->ix.off[e.step]; d < k->ix.off[e.step + 1]; d++)
            if (--k->ix.pending[k->ix.list[d]] == 0)
                make_ready(v, e.rank, k->ix.list[d], e.t);
    }
    for (int r = 0; r < v->size; r++) {
        vrank_t *k = &v->ranks[r];
        if (k->ndone != k->plan.nsteps) {
            WEFT_WARN(SCHED, "simulation of %s/%s deadlocked: rank %d did %u "
                      "of %u steps", wf_coll_name(algo->coll), algo->name, r,
                      k->ndone, k->plan.nsteps);
            return WEFT_ERR_INTERNAL;
        }
        res->time_us = WF_MAX(res->time_us, k->finish);
        res->max_msgs = WF_MAX(res->max_msgs, k->msgs);
        res->max_bytes = WF_MAX(res->max_bytes, k->bytes);
        res->total_msgs += k->msgs;
        res->upfront_msgs += k->upfront;
        res->total_bytes += k->bytes;
    }
    return WEFT_OK;
}

/* Steps of the first and last ranks' plans, times the size. */
static weft_status_t estimate_steps(const wf_algo_t *algo,
                                    const wf_coll_args_t *tmpl,
                                    uint64_t *total)
{
    uint64_t most = 0;
    int probe[2] = {0, tmpl->size - 1};
    for (int j = 0; j < 2; j++) {
        wf_coll_args_t a = *tmpl;
        wf_plan_t p;
        a.rank = probe[j];
        wf_plan_init(&p, a.dtype, a.op, a.elem_size, a.size);
        weft_status_t st = algo->build(&a, &p);
        most = WF_MAX(most, p.nsteps);
        wf_plan_free(&p);
        WEFT_CHECK(st);
    }
    *total = most * (uint64_t)tmpl->size;
    return WEFT_OK;
}

weft_status_t wf_vsim_run(const wf_algo_t *algo, const wf_coll_args_t *tmpl,
                          const wf_vsim_params_t *params,
                          wf_vsim_result_t *result)
{
    vsim_t v;
    wf_vsim_result_t res;
    memset(&v, 0, sizeof(v));
    memset(&res, 0, sizeof(res));
    uint64_t budget = params->max_steps ? params->max_steps
                                        : DEFAULT_MAX_STEPS;
    WEFT_CHECK(estimate_steps(algo, tmpl, &res.total_steps));
    if (res.total_steps > budget) {
        res.skipped = true;
        *result = res;
        return WEFT_OK;
    }
    v.p = params;
    v.size = tmpl->size;
    v.nodes = tmpl->nodes;
    v.ranks = calloc((size_t)v.size, sizeof(vrank_t));
    if (v.nodes)
        v.nic_free = calloc((size_t)v.nodes->nodes, sizeof(double));
    weft_status_t st = v.ranks && (!v.nodes || v.nic_free)
                           ? build_all(&v, algo, tmpl)
                           : WEFT_ERR_NO_MEMORY;
    if (st == WEFT_OK)
        st = simulate(&v, algo, &res);
    vsim_free(&v);
    if (st == WEFT_ERR_NO_MEMORY)
        WEFT_WARN(SCHED, "out of memory simulating %s/%s on %d ranks",
                  wf_coll_name(algo->coll), algo->name, tmpl->size);
    if (st == WEFT_OK)
        *result = res;
    return st;
}
