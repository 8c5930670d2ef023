/*
 * allreduce_util.c - see allreduce_util.h.
 */
#include "algo/allreduce_util.h"

#include <stdlib.h>

#include "common.h"

size_t wf_arutil_chunk_elems(const wf_coll_args_t *a)
{
    return WF_MAX((size_t)1, a->chunk_bytes / a->elem_size);
}

/* ------------------------------------------------------------------ */
/* Fold                                                               */
/* ------------------------------------------------------------------ */

void wf_arfold_init(wf_arfold_t *f, int rank, int size)
{
    f->p = 1;
    while (f->p * 2 <= size)
        f->p *= 2;
    f->rem = size - f->p;
    f->partner = -1;
    if (rank < 2 * f->rem) {
        f->vrank = rank % 2 ? rank / 2 : -1;
        f->partner = rank % 2 ? rank - 1 : rank + 1;
    } else {
        f->vrank = rank - f->rem;
    }
}

int wf_arfold_real(const wf_arfold_t *f, int vrank)
{
    return vrank < f->rem ? 2 * vrank + 1 : vrank + f->rem;
}

/* ------------------------------------------------------------------ */
/* Per-unit exchange steps                                            */
/* ------------------------------------------------------------------ */

bool wf_arx_init(wf_arx_t *x, const wf_coll_args_t *a, wf_plan_t *plan,
                 size_t nunits)
{
    x->a = a;
    x->plan = plan;
    x->nunits = nunits;
    x->sc_base = 0;
    x->slot_elems = 0;
    for (int i = 0; i < WF_ARX_SLOTS; i++)
        x->slot_user[i] = WF_NO_DEP;
    x->units = malloc(WF_MAX(nunits, (size_t)1) * sizeof(*x->units));
    if (!x->units) {
        plan->failed = true;
        return false;
    }
    for (size_t u = 0; u < nunits; u++)
        x->units[u] = (wf_arunit_t){WF_NO_DEP, WF_NO_DEP, WF_NO_DEP};
    return true;
}

void wf_arx_fini(wf_arx_t *x)
{
    free(x->units);
    x->units = NULL;
}

uint64_t wf_arx_use_slots(wf_arx_t *x, size_t unit_elems,
                          uint64_t unslotted)
{
    if (x->nunits <= WF_ARX_SLOTS)
        return unslotted;
    x->slot_elems = unit_elems;
    return (uint64_t)WF_ARX_SLOTS * unit_elems * x->a->elem_size;
}

int32_t wf_arx_send(wf_arx_t *x, size_t u, size_t off, size_t len, int peer,
                    uint32_t tag)
{
    wf_arunit_t *s = &x->units[u];
    size_t es = x->a->elem_size;
    bool in_recv = s->writer != WF_NO_DEP;
    int32_t i = wf_plan_send(x->plan, peer, tag,
                             wf_bref(in_recv ? WF_BUF_RECV : WF_BUF_SEND,
                                     off * es),
                             len * es, s->writer, WF_NO_DEP, WF_NO_DEP);
    /* Reading SEND out of place leaves RECV free to be written. */
    if (in_recv || x->a->in_place)
        s->reader = i;
    return i;
}

int32_t wf_arx_recv_reduce(wf_arx_t *x, size_t u, size_t off, size_t len,
                           int peer, uint32_t tag, bool peer_first)
{
    wf_arunit_t *s = &x->units[u];
    uint64_t boff = off * x->a->elem_size;
    wf_bref_t sc = wf_bref(WF_BUF_SCRATCH, (off - x->sc_base) *
                                               x->a->elem_size);
    int32_t *sc_user = &s->sc_user;
    if (x->slot_elems) {
        size_t slot = u % WF_ARX_SLOTS;
        sc = wf_bref(WF_BUF_SCRATCH, slot * x->slot_elems * x->a->elem_size);
        sc_user = &x->slot_user[slot];
    }
    wf_bref_t own = wf_bref(s->writer != WF_NO_DEP ? WF_BUF_RECV
                                                   : WF_BUF_SEND, boff);
    int32_t rv = wf_plan_recv(x->plan, peer, tag, sc, len * x->a->elem_size,
                              *sc_user, WF_NO_DEP, WF_NO_DEP);
    int32_t red = wf_plan_reduce(x->plan, wf_bref(WF_BUF_RECV, boff),
                                 peer_first ? sc : own, peer_first ? own : sc,
                                 len, rv, s->writer, s->reader);
    s->writer = *sc_user = red;
    s->reader = WF_NO_DEP;
    return red;
}

int32_t wf_arx_recv(wf_arx_t *x, size_t u, size_t off, size_t len, int peer,
                    uint32_t tag)
{
    wf_arunit_t *s = &x->units[u];
    size_t es = x->a->elem_size;
    s->writer = wf_plan_recv(x->plan, peer, tag,
                             wf_bref(WF_BUF_RECV, off * es), len * es,
                             s->reader, s->writer, WF_NO_DEP);
    s->reader = WF_NO_DEP;
    return s->writer;
}

void wf_arx_avg(wf_arx_t *x, size_t u, size_t off, size_t len)
{
    wf_arunit_t *s = &x->units[u];
    s->writer = wf_plan_avg(x->plan,
                            wf_bref(WF_BUF_RECV, off * x->a->elem_size), len,
                            s->writer, s->reader, WF_NO_DEP);
    s->reader = WF_NO_DEP;
}
