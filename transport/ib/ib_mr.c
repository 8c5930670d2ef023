/*
 * ib_mr.c - the registration cache behind mem_reg/mem_dereg.
 *
 * Registrations are kept sorted by start address.  mem_reg of a range that
 * an existing registration covers takes a reference to it instead of
 * pinning the pages again (collectives register the same buffers over and
 * over); mem_dereg drops the reference and the last one deregisters, so a
 * freed buffer never stays pinned behind the caller's back.  The handle is
 * the cache entry.  No registration outlives its last reference: the
 * transport cannot see free(), and a registration kept for a freed range
 * that malloc hands out again would point the HCA at the old pages (see
 * "Registration cache" in docs/design.md).  Device memory goes through
 * GPUDirect (ib_gdr.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib.h"
#include "weft_cuda.h"

/* Index of the first entry whose start is above `addr`. */
static size_t upper_bound(const wf_ib_mrcache_t *c, const char *addr)
{
    size_t lo = 0, hi = c->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->regs[mid]->addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* An entry that covers [addr, addr+len), or NULL.  Entries may nest, so
 * the search walks back over every start at or below addr. */
static wf_ib_reg_t *find_cover(const wf_ib_mrcache_t *c, const char *addr,
                               size_t len)
{
    for (size_t i = upper_bound(c, addr); i-- > 0;) {
        wf_ib_reg_t *r = c->regs[i];
        if (r->addr + r->len >= addr + len)
            return r;
    }
    return NULL;
}

static weft_status_t insert(wf_ib_mrcache_t *c, wf_ib_reg_t *r)
{
    size_t at;

    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        wf_ib_reg_t **regs = realloc(c->regs, cap * sizeof(*regs));
        if (!regs)
            return WEFT_ERR_NO_MEMORY;
        c->regs = regs;
        c->cap = cap;
    }
    at = upper_bound(c, r->addr);
    memmove(c->regs + at + 1, c->regs + at, (c->n - at) * sizeof(*c->regs));
    c->regs[at] = r;
    c->n++;
    return WEFT_OK;
}

static void remove_entry(wf_ib_mrcache_t *c, const wf_ib_reg_t *r)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->regs[i] == r) {
            memmove(c->regs + i, c->regs + i + 1,
                    (c->n - i - 1) * sizeof(*c->regs));
            c->n--;
            return;
        }
    }
}

struct ibv_mr *wf_ib_pin(wf_tctx_t *ctx, int rail, void *addr, size_t len,
                         int access, const char *what)
{
    struct ibv_mr *mr = ctx->v->reg_mr(ctx->rail[rail].pd, addr, len, access);
    int err = errno;

    if (!mr)
        WEFT_WARN(NET, "ib: %s: ibv_reg_mr of %zu bytes %s failed: %s%s",
                  ctx->rail[rail].port.dev_name, len, what, wf_errno_str(err),
                  err == ENOMEM || err == EPERM || err == EAGAIN
                      ? " (memlock limit too low? see `ulimit -l`)"
                      : "");
    return mr;
}

/* Pins host memory on rail `rail`, or registers device memory through
 * GPUDirect (ib_gdr.c); logs why not. */
static weft_status_t reg_rail(wf_tctx_t *ctx, wf_ib_reg_t *r, int memtype,
                              int rail)
{
    const char *kind;
    char what[40];

    if (memtype == WF_MEM_DEVICE)
        return wf_ib_gdr_reg(ctx, rail, r->addr, r->len, &r->mr[rail],
                             &kind);
    snprintf(what, sizeof(what), "at %p", (void *)r->addr);
    r->mr[rail] = wf_ib_pin(ctx, rail, r->addr, r->len,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ,
                            what);
    return r->mr[rail] ? WEFT_OK : WEFT_ERR_TRANSPORT;
}

static void reg_drop(wf_tctx_t *ctx, wf_ib_reg_t *r)
{
    for (int i = 0; i < WF_IB_RAILS_MAX; i++)
        if (r->mr[i])
            ctx->v->dereg_mr(r->mr[i]);
}

/* The range on every rail, or on none. */
static weft_status_t reg_new(wf_tctx_t *ctx, wf_ib_reg_t *r, int memtype)
{
    for (int i = 0; i < WF_MAX(ctx->nrails, 1); i++) {
        weft_status_t st = reg_rail(ctx, r, memtype, i);
        if (st < 0) {
            reg_drop(ctx, r);
            return st;
        }
    }
    return WEFT_OK;
}

weft_status_t wf_ib_mem_reg(wf_tctx_t *ctx, void *buf, size_t len,
                            int memtype, void **mh)
{
    wf_ib_mrcache_t *c;
    wf_ib_reg_t *r;
    weft_status_t st;

    if (!ctx || !mh || (!buf && len))
        return WEFT_ERR_INVALID_ARG;
    c = &ctx->mrc;
    /* Host and device ranges never overlap (unified addressing), so one
     * cache serves both. */
    r = find_cover(c, buf, WF_MAX(len, (size_t)1));
    if (r) {
        r->refs++;
        *mh = r;
        return WEFT_OK;
    }
    r = calloc(1, sizeof(*r));
    if (!r)
        return WEFT_ERR_NO_MEMORY;
    r->addr = buf;
    r->len = WF_MAX(len, (size_t)1);
    r->refs = 1;
    st = reg_new(ctx, r, memtype);
    if (st < 0) {
        free(r);
        return st;
    }
    c->made++;
    if (insert(c, r) < 0) {
        reg_drop(ctx, r);
        free(r);
        return WEFT_ERR_NO_MEMORY;
    }
    *mh = r;
    return WEFT_OK;
}

void wf_ib_mem_dereg(wf_tctx_t *ctx, void *mh)
{
    wf_ib_reg_t *r = mh;

    if (!ctx || !r || --r->refs > 0)
        return;
    remove_entry(&ctx->mrc, r);
    reg_drop(ctx, r);
    free(r);
}

void wf_ib_mrcache_free(wf_tctx_t *ctx)
{
    wf_ib_mrcache_t *c = &ctx->mrc;

    for (size_t i = 0; i < c->n; i++) {
        reg_drop(ctx, c->regs[i]);
        free(c->regs[i]);
    }
    free(c->regs);
    memset(c, 0, sizeof(*c));
}
