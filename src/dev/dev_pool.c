/*
 * dev_pool.c - an engine's pinned staging buffers and device scratch
 * (dev_pool.h: why the caller reserves for stream-ordered operations and
 * the engine's thread never frees).
 *
 * Staging buffers are carved from pinned slabs: one allocation per
 * reservation, or one per buffer the engine adds for an operation that
 * has no reservation.  A buffer is reserved for one request (its owner,
 * with a role) until that request ends, then serves anyone; slabs are
 * freed with the pool.
 */
#include <stdlib.h>

#include "common.h"
#include "dev/dev_pool.h"

/* The smallest staging buffer: small messages share a few of these
 * instead of one allocation each. */
#define WF_STAGING_MIN (64 * 1024)
/* Offsets of buffers carved from one slab. */
#define WF_STAGING_ALIGN 256

typedef struct {
    char *ptr;
    size_t cap;
    bool busy;
    uint8_t role;       /* wf_stage_role_t, with owner */
    const void *owner;  /* reserved for this request, or NULL */
} stage_t;

struct wf_dev_pool {
    const wf_dev_ops_t *ops;
    int device;
    stage_t *stages;
    uint32_t nstages, stages_cap;
    void **slabs;
    uint32_t nslabs, slabs_cap;
    /* Device scratch: the spare, the ones reserved, the retired. */
    void *spare;
    uint64_t spare_bytes;
    struct scratch {
        void *ptr;
        uint64_t cap;
        const void *owner; /* NULL: retired, to be freed */
    } *scratch;
    uint32_t nscratch, scratch_cap;
};

static size_t staging_size(size_t bytes)
{
    size_t cap = bytes > WF_STAGING_MIN ? bytes : WF_STAGING_MIN;
    return (cap + WF_STAGING_ALIGN - 1) / WF_STAGING_ALIGN * WF_STAGING_ALIGN;
}

wf_dev_pool_t *wf_dev_pool_new(const wf_dev_ops_t *ops, int device)
{
    wf_dev_pool_t *p = calloc(1, sizeof(*p));
    if (p) {
        p->ops = ops;
        p->device = device;
    }
    return p;
}

void wf_dev_pool_free(wf_dev_pool_t *p)
{
    if (!p)
        return;
    for (uint32_t k = 0; k < p->nslabs; k++)
        p->ops->free_pinned(p->slabs[k]);
    for (uint32_t k = 0; k < p->nscratch; k++)
        p->ops->free(p->scratch[k].ptr);
    if (p->spare)
        p->ops->free(p->spare);
    free(p->slabs);
    free(p->stages);
    free(p->scratch);
    free(p);
}

static stage_t *best_idle(wf_dev_pool_t *p, const void *owner, uint8_t role,
                          size_t bytes)
{
    stage_t *best = NULL;
    for (uint32_t k = 0; k < p->nstages; k++) {
        stage_t *s = &p->stages[k];
        if (!s->busy && s->owner == owner && (!owner || s->role == role) &&
            s->cap >= bytes && (!best || s->cap < best->cap))
            best = s;
    }
    return best;
}

static bool has_reserved(const wf_dev_pool_t *p, const void *owner)
{
    for (uint32_t k = 0; k < p->nstages; k++)
        if (p->stages[k].owner == owner)
            return true;
    return false;
}

/* Records a pinned allocation and carves `n` buffers of `sizes` from it. */
static weft_status_t add_slab(wf_dev_pool_t *p, char *slab,
                              const size_t *sizes, const uint8_t *roles,
                              uint32_t n, const void *owner)
{
    if (!wf_array_room((void **)&p->slabs, &p->slabs_cap, p->nslabs,
                       sizeof(*p->slabs)))
        return WEFT_ERR_NO_MEMORY;
    p->slabs[p->nslabs++] = slab;
    size_t off = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!wf_array_room((void **)&p->stages, &p->stages_cap, p->nstages,
                           sizeof(*p->stages)))
            return WEFT_ERR_NO_MEMORY; /* the slab stays, freed later */
        p->stages[p->nstages++] = (stage_t){.ptr = slab + off,
                                            .cap = sizes[k],
                                            .role = roles ? roles[k] : 0,
                                            .owner = owner};
        off += sizes[k];
    }
    return WEFT_OK;
}

weft_status_t wf_dev_pool_staging_take(wf_dev_pool_t *p, const void *owner,
                                       wf_stage_role_t role, size_t bytes,
                                       void **ptr, const char **why)
{
    stage_t *s = NULL;
    bool reserved = has_reserved(p, owner);
    if (reserved)
        s = best_idle(p, owner, (uint8_t)role, bytes);
    else if (!(s = best_idle(p, NULL, 0, bytes))) {
        size_t cap = staging_size(bytes);
        void *slab = NULL;
        WEFT_CHECK(p->ops->alloc_pinned(cap, &slab));
        WEFT_CHECK(add_slab(p, slab, &cap, NULL, 1, NULL));
        s = &p->stages[p->nstages - 1];
    }
    if (!s) {
        /* The reservation covers every receive and the sends' window: a
         * miss is a bug, reported rather than allocated (a hang). */
        *why = "no reserved staging buffer left for a stream-ordered "
               "operation";
        return WEFT_ERR_INTERNAL;
    }
    s->busy = true;
    *ptr = s->ptr;
    return WEFT_OK;
}

void wf_dev_pool_staging_give(wf_dev_pool_t *p, void *staging)
{
    for (uint32_t k = 0; p && staging && k < p->nstages; k++)
        if (p->stages[k].ptr == staging)
            p->stages[k].busy = false;
}

weft_status_t wf_dev_pool_scratch_take(wf_dev_pool_t *p, const void *owner,
                                       uint64_t bytes, void **ptr,
                                       uint64_t *cap, const char **why)
{
    for (uint32_t k = 0; k < p->nscratch; k++) {
        struct scratch *s = &p->scratch[k];
        if (s->owner == owner && s->cap >= bytes) {
            *ptr = s->ptr;
            *cap = s->cap;
            p->scratch[k] = p->scratch[--p->nscratch];
            return WEFT_OK;
        }
    }
    if (p->spare && p->spare_bytes >= bytes) {
        *ptr = p->spare;
        *cap = p->spare_bytes;
        p->spare = NULL;
        return WEFT_OK;
    }
    if (has_reserved(p, owner)) {
        *why = "no reserved device scratch for a stream-ordered operation";
        return WEFT_ERR_INTERNAL;
    }
    *cap = bytes;
    return p->ops->alloc(bytes, ptr);
}

/* Appends a scratch entry (owner NULL: retired); false when the list
 * cannot grow. */
static bool scratch_add(wf_dev_pool_t *p, void *ptr, uint64_t cap,
                        const void *owner)
{
    if (!wf_array_room((void **)&p->scratch, &p->scratch_cap, p->nscratch,
                       sizeof(*p->scratch)))
        return false;
    p->scratch[p->nscratch++] = (struct scratch){ptr, cap, owner};
    return true;
}

static void retire(wf_dev_pool_t *p, void *ptr, uint64_t cap)
{
    if (!scratch_add(p, ptr, cap, NULL))
        p->ops->free(ptr); /* out of host memory: better than a leak */
}

void wf_dev_pool_scratch_give(wf_dev_pool_t *p, void *ptr, uint64_t cap)
{
    if (!ptr)
        return;
    if (p->spare && p->spare_bytes >= cap) {
        retire(p, ptr, cap);
        return;
    }
    if (p->spare)
        retire(p, p->spare, p->spare_bytes);
    p->spare = ptr;
    p->spare_bytes = cap;
}

void wf_dev_pool_release(wf_dev_pool_t *p, const void *owner)
{
    for (uint32_t k = 0; p && k < p->nstages; k++)
        if (p->stages[k].owner == owner) {
            p->stages[k].owner = NULL;
            p->stages[k].role = 0;
        }
    for (uint32_t k = 0; p && k < p->nscratch; k++)
        if (p->scratch[k].owner == owner)
            p->scratch[k].owner = NULL; /* unused: retired */
}

/* ---- reservation (the caller's thread) --------------------------------- */

/* The staging buffers `plan` can hold at once: one per receive, and per
 * peer as many sends as the flow window lets out.  Every send buffer
 * fits the plan's largest send: a send takes any idle one of its owner's,
 * so with buffers sized per peer a small send to one peer could take
 * another peer's large buffer and leave that peer's large send none. */
typedef struct {
    size_t *sizes;
    uint8_t *roles;
    uint32_t n;
} needs_t;

static weft_status_t plan_needs(const wf_plan_t *plan, int max_inflight,
                                needs_t *nd)
{
    uint32_t nranks = 0; /* peers are ranks below this */
    for (uint32_t i = 0; i < plan->nsteps; i++)
        if (plan->steps[i].peer >= 0 &&
            (uint32_t)plan->steps[i].peer >= nranks)
            nranks = (uint32_t)plan->steps[i].peer + 1;
    uint32_t *sends = calloc(nranks ? nranks : 1, sizeof(*sends));
    nd->sizes = malloc((plan->nsteps + 1) * sizeof(*nd->sizes));
    nd->roles = malloc((plan->nsteps + 1) * sizeof(*nd->roles));
    nd->n = 0;
    if (!sends || !nd->sizes || !nd->roles) {
        free(sends);
        return WEFT_ERR_NO_MEMORY;
    }
    size_t largest = 0;
    for (uint32_t i = 0; i < plan->nsteps; i++) {
        const wf_step_t *s = &plan->steps[i];
        if (s->kind == WF_STEP_RECV) {
            nd->sizes[nd->n] = staging_size(s->count);
            nd->roles[nd->n++] = WF_STAGE_RECV;
        } else if (s->kind == WF_STEP_SEND && s->peer >= 0) {
            sends[s->peer]++;
            if (s->count > largest)
                largest = s->count;
        }
    }
    for (uint32_t r = 0; r < nranks; r++) {
        uint32_t window = sends[r] < (uint32_t)max_inflight
                              ? sends[r] : (uint32_t)max_inflight;
        for (uint32_t k = 0; k < window; k++) {
            nd->sizes[nd->n] = staging_size(largest);
            nd->roles[nd->n++] = WF_STAGE_SEND;
        }
    }
    free(sends);
    return WEFT_OK;
}

/* Marks idle unreserved buffers as the owner's where they fit; what is
 * left in `nd` (compacted) must be allocated. */
static void reserve_idle(wf_dev_pool_t *p, const void *owner, needs_t *nd)
{
    uint32_t left = 0;
    for (uint32_t k = 0; k < nd->n; k++) {
        stage_t *s = best_idle(p, NULL, 0, nd->sizes[k]);
        if (s) {
            s->owner = owner;
            s->role = nd->roles[k];
        } else {
            nd->sizes[left] = nd->sizes[k];
            nd->roles[left++] = nd->roles[k];
        }
    }
    nd->n = left;
}

/* Takes the retired scratch out of the pool, for freeing outside the
 * lock. */
static uint32_t take_retired(wf_dev_pool_t *p, void ***out)
{
    uint32_t n = 0;
    *out = malloc((p->nscratch + 1) * sizeof(**out));
    for (uint32_t k = 0; *out && k < p->nscratch;) {
        if (p->scratch[k].owner) {
            k++;
            continue;
        }
        (*out)[n++] = p->scratch[k].ptr;
        p->scratch[k] = p->scratch[--p->nscratch];
    }
    return n;
}

weft_status_t wf_dev_pool_reserve(wf_dev_pool_t *p, pthread_mutex_t *lock,
                                  const void *owner, const wf_plan_t *plan,
                                  int max_inflight)
{
    needs_t nd;
    weft_status_t st = plan_needs(plan, max_inflight, &nd);
    if (st != WEFT_OK)
        return st;
    void **retired = NULL;
    bool scratch_ok = !plan->scratch_bytes;
    pthread_mutex_lock(lock);
    reserve_idle(p, owner, &nd);
    if (!scratch_ok && p->spare && p->spare_bytes >= plan->scratch_bytes &&
        scratch_add(p, p->spare, p->spare_bytes, owner)) {
        p->spare = NULL;
        scratch_ok = true;
    }
    uint32_t nretired = take_retired(p, &retired);
    pthread_mutex_unlock(lock);

    /* Allocations (and frees) may wait for the device: outside the lock,
     * on the pool's device, in the caller's thread. */
    int current = -1;
    bool switched = p->ops->get_device(&current) == WEFT_OK &&
                    current != p->device;
    if (switched)
        st = p->ops->set_device(p->device);
    for (uint32_t k = 0; k < nretired; k++)
        p->ops->free(retired[k]);
    free(retired);
    size_t total = 0;
    for (uint32_t k = 0; k < nd.n; k++)
        total += nd.sizes[k];
    char *slab = NULL;
    if (st == WEFT_OK && total)
        st = p->ops->alloc_pinned(total, (void **)&slab);
    void *scratch = NULL;
    if (st == WEFT_OK && !scratch_ok)
        st = p->ops->alloc(plan->scratch_bytes, &scratch);
    if (switched)
        (void)p->ops->set_device(current);

    void *drop = NULL;
    pthread_mutex_lock(lock);
    if (slab) {
        weft_status_t added = add_slab(p, slab, nd.sizes, nd.roles, nd.n,
                                       owner);
        st = st == WEFT_OK ? added : st;
    }
    if (scratch && !scratch_add(p, scratch, plan->scratch_bytes, owner))
        drop = scratch, st = WEFT_ERR_NO_MEMORY;
    if (st != WEFT_OK)
        wf_dev_pool_release(p, owner);
    pthread_mutex_unlock(lock);
    if (drop) /* outside the lock: a free may wait for the device */
        p->ops->free(drop);
    free(nd.sizes);
    free(nd.roles);
    return st;
}
