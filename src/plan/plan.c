/*
 * plan.c - building and checking plans.
 */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

void wf_plan_init(wf_plan_t *plan, weft_dtype_t dtype, weft_op_t op,
                  size_t elem_size, int nranks)
{
    memset(plan, 0, sizeof(*plan));
    plan->dtype = dtype;
    plan->op = op;
    plan->elem_size = elem_size;
    plan->nranks = nranks;
}

void wf_plan_free(wf_plan_t *plan)
{
    free(plan->steps);
    plan->steps = NULL;
    plan->nsteps = plan->cap = 0;
}

int32_t wf_plan_add(wf_plan_t *plan, const wf_step_t *step)
{
    if (plan->failed)
        return WF_NO_DEP;
    if (plan->nsteps == plan->cap) {
        uint32_t cap = plan->cap ? plan->cap * 2 : 64;
        wf_step_t *s = realloc(plan->steps, cap * sizeof(*s));
        if (!s || cap > INT32_MAX / 2) {
            WEFT_WARN(SCHED, "out of memory for a plan of %u steps", cap);
            plan->failed = true;
            return WF_NO_DEP;
        }
        plan->steps = s;
        plan->cap = cap;
    }
    plan->steps[plan->nsteps] = *step;
    return (int32_t)plan->nsteps++;
}

static wf_step_t make_step(wf_step_kind_t kind, int32_t d0, int32_t d1,
                           int32_t d2)
{
    wf_step_t s;
    memset(&s, 0, sizeof(s));
    s.kind = (uint8_t)kind;
    s.peer = -1;
    s.deps[0] = d0;
    s.deps[1] = d1;
    s.deps[2] = d2;
    return s;
}

int32_t wf_plan_send(wf_plan_t *plan, int peer, uint32_t tag, wf_bref_t src,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2)
{
    wf_step_t s = make_step(WF_STEP_SEND, d0, d1, d2);
    s.peer = peer;
    s.tag = tag;
    s.src = src;
    s.count = bytes;
    return wf_plan_add(plan, &s);
}

int32_t wf_plan_recv(wf_plan_t *plan, int peer, uint32_t tag, wf_bref_t dst,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2)
{
    wf_step_t s = make_step(WF_STEP_RECV, d0, d1, d2);
    s.peer = peer;
    s.tag = tag;
    s.dst = dst;
    s.count = bytes;
    return wf_plan_add(plan, &s);
}

int32_t wf_plan_reduce(wf_plan_t *plan, wf_bref_t dst, wf_bref_t a,
                       wf_bref_t b, uint64_t count, int32_t d0, int32_t d1,
                       int32_t d2)
{
    wf_step_t s = make_step(WF_STEP_REDUCE, d0, d1, d2);
    s.dst = dst;
    s.src = a;
    s.src2 = b;
    s.count = count;
    return wf_plan_add(plan, &s);
}

int32_t wf_plan_copy(wf_plan_t *plan, wf_bref_t dst, wf_bref_t src,
                     uint64_t bytes, int32_t d0, int32_t d1, int32_t d2)
{
    wf_step_t s = make_step(WF_STEP_COPY, d0, d1, d2);
    s.dst = dst;
    s.src = src;
    s.count = bytes;
    return wf_plan_add(plan, &s);
}

int32_t wf_plan_avg(wf_plan_t *plan, wf_bref_t dst, uint64_t count,
                    int32_t d0, int32_t d1, int32_t d2)
{
    wf_step_t s = make_step(WF_STEP_AVG, d0, d1, d2);
    s.dst = dst;
    s.count = count;
    return wf_plan_add(plan, &s);
}

const char *wf_step_kind_name(wf_step_kind_t kind)
{
    static const char *const names[] = {"send", "recv", "reduce", "copy",
                                        "avg"};
    return kind <= WF_STEP_AVG ? names[kind] : "?";
}

static bool bref_ok(const wf_plan_t *plan, wf_bref_t r, uint64_t bytes,
                    uint64_t send_bytes, uint64_t recv_bytes)
{
    uint64_t limit = r.buf == WF_BUF_SEND   ? send_bytes
                     : r.buf == WF_BUF_RECV ? recv_bytes
                                            : plan->scratch_bytes;
    return r.buf <= WF_BUF_SCRATCH && r.off <= limit && bytes <= limit - r.off;
}

weft_status_t wf_plan_validate(const wf_plan_t *plan, int nranks,
                               uint64_t send_bytes, uint64_t recv_bytes)
{
    if (plan->failed)
        return WEFT_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < plan->nsteps; i++) {
        const wf_step_t *s = &plan->steps[i];
        bool is_xfer = s->kind == WF_STEP_SEND || s->kind == WF_STEP_RECV;
        uint64_t bytes = is_xfer || s->kind == WF_STEP_COPY
                             ? s->count
                             : s->count * plan->elem_size;
        const char *why = NULL;
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
            if (s->deps[d] != WF_NO_DEP &&
                (s->deps[d] < 0 || (uint32_t)s->deps[d] >= i))
                why = "dependency does not point to an earlier step";
        if (is_xfer && (s->peer < 0 || s->peer >= nranks))
            why = "peer out of range";
        if (s->kind != WF_STEP_SEND &&
            !bref_ok(plan, s->dst, bytes, send_bytes, recv_bytes))
            why = "destination outside its buffer";
        if ((s->kind == WF_STEP_SEND || s->kind == WF_STEP_REDUCE ||
             s->kind == WF_STEP_COPY) &&
            !bref_ok(plan, s->src, bytes, send_bytes, recv_bytes))
            why = "source outside its buffer";
        if (s->kind == WF_STEP_REDUCE &&
            !bref_ok(plan, s->src2, bytes, send_bytes, recv_bytes))
            why = "second source outside its buffer";
        if (why) {
            WEFT_ERROR(SCHED, "invalid plan: step %u (%s): %s", i,
                       wf_step_kind_name((wf_step_kind_t)s->kind), why);
            return WEFT_ERR_INTERNAL;
        }
    }
    return WEFT_OK;
}

void wf_plan_index_free(wf_plan_index_t *ix)
{
    free(ix->pending);
    free(ix->off);
    free(ix->list);
    ix->pending = ix->off = ix->list = NULL;
}

weft_status_t wf_plan_index(const wf_plan_t *plan, wf_plan_index_t *ix)
{
    uint32_t n = plan->nsteps, total = 0;
    ix->pending = calloc((size_t)n + 1, sizeof(uint32_t));
    ix->off = calloc((size_t)n + 2, sizeof(uint32_t));
    ix->list = NULL;
    uint32_t *fill = calloc((size_t)n + 1, sizeof(uint32_t));
    if (!ix->pending || !ix->off || !fill)
        goto err;
    for (uint32_t i = 0; i < n; i++)
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
            if (plan->steps[i].deps[d] != WF_NO_DEP) {
                ix->off[plan->steps[i].deps[d] + 1]++;
                ix->pending[i]++;
                total++;
            }
    for (uint32_t i = 0; i < n; i++)
        ix->off[i + 1] += ix->off[i];
    ix->list = malloc(((size_t)total + 1) * sizeof(uint32_t));
    if (!ix->list)
        goto err;
    for (uint32_t i = 0; i < n; i++)
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++) {
            int32_t p = plan->steps[i].deps[d];
            if (p != WF_NO_DEP)
                ix->list[ix->off[p] + fill[p]++] = i;
        }
    free(fill);
    return WEFT_OK;
err:
    free(fill);
    wf_plan_index_free(ix);
    return WEFT_ERR_NO_MEMORY;
}
