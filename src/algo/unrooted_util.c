/*
 * unrooted_util.c - see unrooted_util.h.
 */
#include "algo/unrooted_util.h"

#include <stdlib.h>

#include "common.h"

bool wf_unr_trivial(const wf_coll_args_t *a, wf_plan_t *plan,
                    weft_status_t *st)
{
    uint64_t bytes = (uint64_t)a->count * a->elem_size;
    if (a->size == 1) {
        /* Rank 0's block sits at offset 0 of both buffers. */
        if (!a->in_place && bytes)
            wf_plan_copy(plan, wf_bref(WF_BUF_RECV, 0),
                         wf_bref(WF_BUF_SEND, 0), bytes, WF_NO_DEP,
                         WF_NO_DEP, WF_NO_DEP);
    } else if (bytes == 0) {
        wf_plan_send(plan, wf_unr_mod(a->rank + 1, a->size), 0,
                     wf_bref(WF_BUF_SEND, 0), 0, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
        wf_plan_recv(plan, wf_unr_mod(a->rank - 1, a->size), 0,
                     wf_bref(WF_BUF_RECV, 0), 0, WF_NO_DEP, WF_NO_DEP,
                     WF_NO_DEP);
    } else {
        return false;
    }
    *st = plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
    return true;
}

void wf_unr_ring_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, block = (double)a->count * (double)a->elem_size;
    double per_block = wf_msgs(block, (double)wf_unr_grid(a));
    *t = (wf_cost_terms_t){.rounds = n - 1, .path_sent = (n - 1) * block,
                           .messages = n * (n - 1) * per_block,
                           .bytes = n * (n - 1) * block,
                           .waits = n * (n - 2) * per_block};
}

/* The first break point after x, or UINT64_MAX. */
static uint64_t next_break(const wf_unr_cuts_t *c, uint64_t x)
{
    if (c->nbreaks == 0)
        return UINT64_MAX;
    if (x < c->b0)
        return c->b0;
    uint64_t i = (x - c->b0) / c->step + 1;
    return i < c->nbreaks ? c->b0 + i * c->step : UINT64_MAX;
}

bool wf_unr_next(wf_unr_iter_t *it, uint64_t *start, uint64_t *len)
{
    if (it->pos >= it->hi)
        return false;
    uint64_t grid = it->cuts->grid;
    uint64_t end = (it->pos / grid + 1) * grid;
    end = WF_MIN(end, next_break(it->cuts, it->pos));
    end = WF_MIN(end, it->hi);
    *start = it->pos;
    *len = end - it->pos;
    it->pos = end;
    return true;
}

void wf_unr_trace_init(wf_unr_trace_t *t)
{
    t->p = NULL;
    t->n = t->cap = 0;
    t->nbatch = 0;
    t->failed = false;
}

void wf_unr_trace_free(wf_unr_trace_t *t)
{
    free(t->p);
    wf_unr_trace_init(t);
}

void wf_unr_trace_clear(wf_unr_trace_t *t)
{
    t->n = 0;
    t->nbatch = 0;
}

void wf_unr_trace_batch(wf_unr_trace_t *t)
{
    if (t->nbatch == WF_UNR_MAX_BATCHES) {
        t->failed = true; /* cannot happen below 2^64 ranks; be safe */
        return;
    }
    t->start[t->nbatch++] = t->n;
}

void wf_unr_trace_add(wf_unr_trace_t *t, uint64_t lo, uint64_t len,
                      int32_t step)
{
    if (t->failed || step == WF_NO_DEP)
        return;
    if (t->nbatch == 0)
        wf_unr_trace_batch(t);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        wf_unr_piece_t *p = realloc(t->p, cap * sizeof(*p));
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    t->p[t->n++] = (wf_unr_piece_t){lo, lo + len, step};
}

/* The first piece of [first, last) whose end lies after x. */
static size_t first_after(const wf_unr_piece_t *p, size_t first, size_t last,
                          uint64_t x)
{
    while (first < last) {
        size_t mid = first + (last - first) / 2;
        if (p[mid].hi <= x)
            first = mid + 1;
        else
            last = mid;
    }
    return first;
}

void wf_unr_trace_deps(const wf_unr_trace_t *t, uint64_t lo, uint64_t len,
                       wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor)
{
    uint64_t hi = lo + len;
    for (int b = 0; b < t->nbatch; b++) {
        size_t first = t->start[b];
        size_t last = b + 1 < t->nbatch ? t->start[b + 1] : t->n;
        if (first == last || t->p[first].lo >= hi || t->p[last - 1].hi <= lo)
            continue;
        for (size_t i = first_after(t->p, first, last, lo);
             i < last && t->p[i].lo < hi; i++)
            wf_deps_add(d, plan, anchor, t->p[i].step);
    }
}

wf_unr_fold_t wf_unr_fold(const wf_coll_args_t *a)
{
    wf_unr_fold_t f;
    f.n = a->size;
    f.p = 1;
    while (f.p * 2 <= f.n)
        f.p *= 2;
    f.e = f.n - f.p;
    f.block = (uint64_t)a->count * a->elem_size;
    return f;
}

uint64_t wf_unr_vreal(const wf_unr_fold_t *f, uint64_t x)
{
    uint64_t u = x / f->block, in = x % f->block, real;
    uint64_t paired = 2 * (uint64_t)f->e;
    if (u < paired)
        real = u / 2 + (u % 2 ? (uint64_t)f->p : 0);
    else
        real = u - (uint64_t)f->e;
    return real * f->block + in;
}

wf_unr_cuts_t wf_unr_vcuts(const wf_unr_fold_t *f, uint64_t grid)
{
    wf_unr_cuts_t c = {.grid = grid, .b0 = f->block, .step = f->block,
                       .nbreaks = 2 * (uint64_t)f->e};
    return c;
}
