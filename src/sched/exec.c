/*
 * exec.c - executing one request's plan: dependency counting, a FIFO of
 * ready steps, per-peer flow control, posting transfers, running local
 * steps, checking signatures of what arrives.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "reduce/reduce.h"
#include "sched/exec_impl.h"
#include "timeline.h"
#include "topo/topo.h"

/* Whether a finished request's execution state is kept for the next one
 * (exec_new); under AddressSanitizer not, so that a use after free still
 * shows. */
#if defined(__SANITIZE_ADDRESS__)
#define WF_EXEC_KEEP_SPARE false
#else
#define WF_EXEC_KEEP_SPARE true
#endif

static void push_ready(wf_exec_t *x, uint32_t nsteps, uint32_t i)
{
    x->state[i] = ST_READY;
    x->queue[(x->q_head + x->q_len++) % nsteps] = i;
}

/*
 * The execution state and its per-step arrays in one allocation: the
 * dependency counts start from the built plan's, and the steps without
 * dependencies are ready.
 *
 * The state of a finished request is kept for the next one (one per
 * engine, the one with the most step slots; under progress_lock), with its
 * list of posted transfers: an 8-byte allreduce otherwise paid a calloc, a
 * realloc of that list and three frees per call, 600 of its 7,700
 * instructions.
 */
static wf_exec_t *exec_new(wf_engine_t *e, const wf_built_plan_t *built)
{
    uint32_t n = built->plan.nsteps;
    size_t slots = (size_t)n + 1;
    wf_exec_t *x = e->spare_exec;
    if (x && x->slots >= slots) {
        e->spare_exec = NULL;
        wf_exec_t kept = *x;
        memset(x, 0, sizeof(*x));
        x->slots = kept.slots;
        x->posted = kept.posted;
        x->posted_cap = kept.posted_cap;
        x->dw = kept.dw;
        x->dw_cap = kept.dw_cap;
    } else {
        x = calloc(1, sizeof(*x) + slots * (3 * sizeof(uint32_t) + 1));
        if (!x)
            return NULL;
        x->slots = slots;
    }
    x->queue = (uint32_t *)(x + 1);
    x->blocked = x->queue + x->slots;
    x->pending = x->blocked + x->slots;
    x->state = (uint8_t *)(x->pending + x->slots);
    memset(x->state, 0, slots);
    memcpy(x->pending, built->deps.pending, slots * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        if (x->pending[i] == 0)
            push_ready(x, n, i);
    return x;
}

/*
 * Scratch memory is kept for the next operation instead of freed: a
 * 64 MiB allreduce needs 32-64 MiB of it, which malloc serves from fresh
 * mmap()ed pages, and faulting them in again for every operation cost
 * 12,700 page faults per operation and a third of the time at that size.
 * One block, the largest recently returned, is kept per engine (freed with
 * the engine).  Under progress_lock.
 *
 * Blocks of WF_SCRATCH_BIND_MIN bytes or more are staging memory on the
 * rank's NUMA node (wf_topo_mem_alloc: a mapping of their own, bound
 * before first touch, so pages land there even when a calling thread on
 * another node faults them in).  Smaller ones come from malloc: a mapping
 * and a bind cost more than such an operation moves, and with several
 * requests in flight only one of them gets the kept block.
 * The size alone says which allocator a block came from.
 */
#define WF_SCRATCH_BIND_MIN (64 * 1024)

static void *scratch_alloc(wf_engine_t *e, uint64_t bytes)
{
    if (bytes < WF_SCRATCH_BIND_MIN)
        return malloc(bytes);
    return wf_topo_mem_alloc((size_t)bytes, e->numa);
}

void wf_exec_scratch_free(void *p, uint64_t bytes)
{
    if (bytes < WF_SCRATCH_BIND_MIN)
        free(p);
    else
        wf_topo_mem_free(p, (size_t)bytes);
}

static void *scratch_take(wf_engine_t *e, uint64_t bytes, uint64_t *cap)
{
    if (e->spare_scratch && e->spare_bytes >= bytes) {
        void *p = e->spare_scratch;
        *cap = e->spare_bytes;
        e->spare_scratch = NULL;
        return p;
    }
    *cap = bytes;
    return scratch_alloc(e, bytes);
}

static void scratch_give(wf_engine_t *e, void *p, uint64_t bytes)
{
    if (!p)
        return;
    if (e->spare_scratch && e->spare_bytes >= bytes) {
        wf_exec_scratch_free(p, bytes);
        return;
    }
    wf_exec_scratch_free(e->spare_scratch, e->spare_bytes);
    e->spare_scratch = p;
    e->spare_bytes = bytes;
}

weft_status_t wf_exec_start(wf_engine_t *e, struct weft_request *req)
{
    if (req->runner)
        return WEFT_OK;
    uint32_t n = req->plan->nsteps;
    wf_exec_t *x = exec_new(e, req->built);
    if (!x)
        goto err_nomem;
    req->exec = x;
    if (req->plan->scratch_bytes && req->stage) {
        /* Staged operations keep their scratch where their data is. */
        WEFT_CHECK(req->stage->scratch(e, req, req->plan->scratch_bytes,
                                       &x->scratch, &x->scratch_cap));
    } else if (req->plan->scratch_bytes) {
        x->scratch = scratch_take(e, req->plan->scratch_bytes,
                                  &x->scratch_cap);
        if (!x->scratch)
            goto err_nomem;
    }
    if (e->reg_min && !req->stage)
        wf_exec_register(e, req);
    wf_sig_make(req, x->sig);
    return WEFT_OK;
err_nomem:
    WEFT_WARN(SCHED, "out of memory starting %s #%llu (%u steps, %llu "
              "scratch bytes)", wf_coll_name(req->args.coll),
              (unsigned long long)req->seq, n,
              (unsigned long long)req->plan->scratch_bytes);
    return WEFT_ERR_NO_MEMORY;
}

/* Gives back the flow slot of a transfer that ended or is dropped: the
 * one post_transfer counted, if it counted one. */
static void release_flow_slot(wf_engine_t *e, const struct weft_request *req,
                              const posted_t *p)
{
    const wf_step_t *s = &req->plan->steps[p->step];
    if (p->counted)
        (s->kind == WF_STEP_SEND ? e->inflight_send
                                 : e->inflight_recv)[s->peer]--;
}

static void staging_give(wf_engine_t *e, const struct weft_request *req,
                         void *staging)
{
    if (staging)
        req->stage->staging_give(e, staging);
}

static void exec_destroy(wf_exec_t *x)
{
    if (!x)
        return;
    free(x->posted);
    free(x->dw);
    free(x);
}

void wf_exec_free(wf_engine_t *e, struct weft_request *req)
{
    wf_exec_t *x = req->exec;
    if (req->stage)
        req->stage->forget(e, req);
    if (!x)
        return;
    /* Transfers still posted (the request failed): the transport drops
     * them at fini; give back their flow slots now. */
    for (uint32_t i = 0; i < x->nposted; i++) {
        release_flow_slot(e, req, &x->posted[i]);
        staging_give(e, req, x->posted[i].staging);
    }
    wf_exec_deregister(e, req);
    if (req->stage) {
        req->stage->release(e, req);
        req->stage->scratch_give(e, x->scratch, x->scratch_cap);
    } else
        scratch_give(e, x->scratch, x->scratch_cap);
    req->exec = NULL;
    if (!WF_EXEC_KEEP_SPARE ||
        (e->spare_exec && e->spare_exec->slots >= x->slots)) {
        exec_destroy(x);
        return;
    }
    exec_destroy(e->spare_exec);
    e->spare_exec = x;
}

void wf_exec_spare_free(wf_engine_t *e)
{
    exec_destroy(e->spare_exec);
    e->spare_exec = NULL;
}

char *wf_exec_buf(struct weft_request *req, wf_bref_t r)
{
    char *base = r.buf == WF_BUF_SEND   ? (char *)req->sendbuf
                 : r.buf == WF_BUF_RECV ? (char *)req->recvbuf
                                        : (char *)req->exec->scratch;
    return base + r.off;
}

void wf_exec_mark_done(struct weft_request *req, uint32_t i)
{
    wf_exec_t *x = req->exec;
    x->state[i] = ST_DONE;
    x->ndone++;
    const wf_plan_index_t *deps = &req->built->deps;
    for (uint32_t k = deps->off[i]; k < deps->off[i + 1]; k++) {
        uint32_t j = deps->list[k];
        if (--x->pending[j] == 0)
            push_ready(x, req->plan->nsteps, j);
    }
}

static void run_local(struct weft_request *req, const wf_step_t *s)
{
    const wf_plan_t *p = req->plan;
    switch (s->kind) {
    case WF_STEP_REDUCE:
        wf_reduce(wf_exec_buf(req, s->dst), wf_exec_buf(req, s->src),
                  wf_exec_buf(req, s->src2), s->count, p->dtype, p->op);
        break;
    case WF_STEP_COPY:
        /* A copy of nothing only waits (algo/embed.c joins phases so);
         * its buffer may be a scratch that was never allocated. */
        if (s->count)
            memmove(wf_exec_buf(req, s->dst), wf_exec_buf(req, s->src),
                    s->count);
        break;
    case WF_STEP_AVG:
        wf_reduce_avg_finish(wf_exec_buf(req, s->dst), s->count, p->dtype,
                             p->nranks);
        break;
    default:
        break;
    }
}

uint64_t wf_exec_step_tag(const struct weft_request *req, const wf_step_t *s)
{
    if (wf_req_is_p2p(req)) /* one step: the caller's tag in its place */
        return wf_tag_make(WF_TAG_KIND_P2P, req->seq, req->p2p_tag);
    return wf_tag_make(WF_TAG_KIND_COLL, req->seq, s->tag);
}

/* Whether the transport sends `len` bytes to `peer` as a notice the
 * receiver answers by reading the payload itself (single copy on one
 * machine).  Such a send holds no transport buffer while it waits, so
 * WEFT_MAX_INFLIGHT does not hold it back: behind the window, a ring's
 * allgather chunks waited for reduce-scatter chunks that the peer could
 * not take yet (its scratch slots were busy), and large allreduces on one
 * machine slowed down (docs/design.md, "Pulled sends are outside the send
 * window"; bench/results/2026-11-25-pulled-sends-outside-the-window.md). */
static bool send_pulled(wf_engine_t *e, int peer, uint64_t len)
{
    return e->tops->send_pulled && e->tops->send_pulled(e->tctx, peer, len);
}

/* Posts a transfer; returns 1 when posted, 0 when it must wait for a flow
 * slot, negative on failure. */
static int post_transfer(wf_engine_t *e, struct weft_request *req,
                         uint32_t i)
{
    wf_exec_t *x = req->exec;
    const wf_step_t *s = &req->plan->steps[i];
    bool is_send = s->kind == WF_STEP_SEND;
    int *inflight = is_send ? e->inflight_send : e->inflight_recv;
    /* Only sends are throttled.  A posted receive only lends a buffer, and
     * limiting receives can deadlock: receives of a later phase that become
     * ready early would hold every slot while the earlier phase's receives,
     * which they depend on through the peers, wait for one. */
    if (is_send && req->stage)
        return req->stage->send(e, req, i); /* staged out first */
    bool counted = !is_send || !send_pulled(e, s->peer, s->count);
    if (is_send && counted && inflight[s->peer] >= e->max_inflight)
        return 0;
    weft_status_t st = wf_engine_connect(e, s->peer);
    if (st < 0)
        return st;
    /* A staged receive lands in a staging buffer first. */
    void *staging = NULL;
    if (!is_send && req->stage &&
        (st = req->stage->recv_staging(e, req, s->count, &staging)) < 0)
        return st;
    char *buf = is_send ? wf_exec_buf(req, s->src)
                        : staging ? staging : wf_exec_buf(req, s->dst);
    uint64_t tag = wf_exec_step_tag(req, s);
    wf_treq_t *treq = NULL;
    void *mh = staging ? NULL : x->mh[is_send ? s->src.buf : s->dst.buf];
    st = is_send ? e->tops->isend(e->tctx, s->peer, tag, x->sig, buf,
                                  s->count, mh, &treq)
                 : e->tops->irecv(e->tctx, s->peer, tag, buf, s->count, mh,
                                  &treq);
    if (st == WEFT_OK)
        st = wf_exec_add_posted(x, (posted_t){i, treq, staging, counted});
    if (st < 0 || st == WEFT_ERR_AGAIN)
        staging_give(e, req, staging);
    if (st == WEFT_ERR_AGAIN)
        return 0;
    if (st < 0)
        return st;
    if (counted)
        inflight[s->peer]++;
    x->state[i] = ST_POSTED;
    return 1;
}

weft_status_t wf_exec_add_posted(wf_exec_t *x, posted_t p)
{
    if (!wf_array_room((void **)&x->posted, &x->posted_cap, x->nposted,
                       sizeof(*x->posted)))
        return WEFT_ERR_NO_MEMORY;
    x->posted[x->nposted++] = p;
    return WEFT_OK;
}

static void fail_req(wf_engine_t *e, struct weft_request *req,
                     weft_status_t st, const wf_step_t *s)
{
    /* A peer that failed first tells why in a notice, which may be waiting
     * behind the data this transfer missed: that cause wins over "the
     * connection closed". */
    if (st == WEFT_ERR_REMOTE) {
        wf_notice_poll(e);
        wf_notice_mark_lost(e, s->peer);
    }
    wf_engine_fail(e, st, "%s #%llu: %s %s %s failed: %s",
                   wf_coll_name(req->args.coll),
                   (unsigned long long)req->seq,
                   wf_step_kind_name((wf_step_kind_t)s->kind),
                   s->kind == WF_STEP_SEND ? "to" : "from",
                   e->tops->peer_describe(e->tctx, s->peer),
                   weft_strerror(st));
}

/* Starts blocked transfers that now have a slot, then ready steps. */
static int start_steps(wf_engine_t *e, struct weft_request *req,
                       weft_status_t *status)
{
    wf_exec_t *x = req->exec;
    uint32_t n = req->plan->nsteps, keep = 0;
    int work = 0;
    for (uint32_t k = 0; k < x->nblocked; k++) {
        int r = post_transfer(e, req, x->blocked[k]);
        if (r < 0)
            return fail_req(e, req, *status = r,
                            &req->plan->steps[x->blocked[k]]), work;
        if (r == 0)
            x->blocked[keep++] = x->blocked[k];
        work += r;
    }
    x->nblocked = keep;
    while (x->q_len) {
        uint32_t i = x->queue[x->q_head];
        x->q_head = (x->q_head + 1) % n;
        x->q_len--;
        const wf_step_t *s = &req->plan->steps[i];
        if (s->kind == WF_STEP_SEND || s->kind == WF_STEP_RECV) {
            int r = post_transfer(e, req, i);
            if (r < 0)
                return fail_req(e, req, *status = r, s), work;
            if (r == 0)
                x->blocked[x->nblocked++] = i;
        } else if (req->stage) {
            weft_status_t st = req->stage->local(e, req, i);
            if (st < 0)
                return *status = st, work;
        } else {
            run_local(req, s);
            wf_exec_mark_done(req, i);
        }
        work++;
    }
    return work;
}

static weft_status_t check_arrival(wf_engine_t *e, struct weft_request *req,
                                   const wf_step_t *s,
                                   const wf_treq_info_t *info)
{
    wf_exec_t *x = req->exec;
    if (info->sig[0] == x->sig[0] && info->sig[1] == x->sig[1] &&
        !info->truncated && info->len == s->count)
        return WEFT_OK;
    char mine[160], theirs[160];
    wf_sig_describe(x->sig, mine, sizeof(mine));
    wf_sig_describe(info->sig, theirs, sizeof(theirs));
    if (strcmp(mine, theirs) == 0)
        snprintf(theirs + strlen(theirs), sizeof(theirs) - strlen(theirs),
                 " with a %zu-byte message where %llu bytes were expected",
                 info->len, (unsigned long long)s->count);
    wf_engine_fail(e, WEFT_ERR_MISMATCH,
                   "operation #%llu mismatch: rank %d called %s but %s called "
                   "%s", (unsigned long long)req->seq, e->rank, mine,
                   e->tops->peer_describe(e->tctx, s->peer), theirs);
    return WEFT_ERR_MISMATCH;
}

/* Tests posted transfers; completes the steps that finished. */
static int poll_posted(wf_engine_t *e, struct weft_request *req,
                       weft_status_t *status)
{
    wf_exec_t *x = req->exec;
    int work = 0;
    for (uint32_t k = 0; k < x->nposted;) {
        posted_t p = x->posted[k];
        const wf_step_t *s = &req->plan->steps[p.step];
        wf_treq_info_t info = {0};
        weft_status_t st = e->tops->test(e->tctx, p.treq, &info);
        if (st == WEFT_INPROGRESS) {
            k++;
            continue;
        }
        x->posted[k] = x->posted[--x->nposted];
        release_flow_slot(e, req, &p);
        req->waited_on = s->peer;
        if (wf_timeline_active())
            req->waited_ns = wf_time_ns();
        if (st < 0) {
            staging_give(e, req, p.staging);
            fail_req(e, req, *status = st, s);
            return work;
        }
        if (s->kind == WF_STEP_RECV &&
            (*status = check_arrival(e, req, s, &info)) < 0) {
            staging_give(e, req, p.staging);
            return work;
        }
        if (s->kind == WF_STEP_RECV && !wf_req_is_p2p(req) &&
            e->peer_seen[s->peer] < req->seq + 1)
            e->peer_seen[s->peer] = req->seq + 1;
        if (s->kind == WF_STEP_RECV && p.staging) {
            /* Done once the copy in is (the stage's poll). */
            if ((*status = req->stage->stage_in(e, req, p.step,
                                                p.staging)) < 0) {
                staging_give(e, req, p.staging);
                return work;
            }
        } else {
            staging_give(e, req, p.staging);
            wf_exec_mark_done(req, p.step);
        }
        work++;
    }
    return work;
}

int wf_exec_advance(wf_engine_t *e, struct weft_request *req, bool *finished,
                    weft_status_t *status)
{
    weft_status_t st = WEFT_OK;
    if (req->runner) {
        st = req->runner->advance(req);
        *finished = st != WEFT_INPROGRESS;
        *status = st;
        return *finished;
    }
    int work = req->stage ? req->stage->poll(e, req, &st) : 0;
    if (st >= 0)
        work += poll_posted(e, req, &st);
    if (st >= 0)
        work += start_steps(e, req, &st);
    if (st < 0) {
        *finished = true;
        *status = st;
    } else if (req->exec->ndone == req->plan->nsteps) {
        *finished = true;
        *status = WEFT_OK;
    }
    return work;
}

const uint64_t *wf_exec_sig(const struct weft_request *req)
{
    return req->exec ? req->exec->sig : NULL;
}

/* Where the awaited peer stands, from the collectives it sent data for:
 * the usual answer to "who is holding everyone up". */
static void describe_peer_progress(wf_engine_t *e,
                                   const struct weft_request *req, int peer,
                                   char *buf, size_t len)
{
    uint64_t seen = e->peer_seen[peer];
    if (seen == 0)
        snprintf(buf, len, "; rank %d has sent nothing on this communicator "
                 "yet", peer);
    else if (seen - 1 < req->seq)
        snprintf(buf, len, "; rank %d's last message belonged to operation "
                 "#%llu: it has not reached #%llu, or waits in it for "
                 "another rank", peer, (unsigned long long)(seen - 1),
                 (unsigned long long)req->seq);
}

void wf_exec_describe_wait(wf_engine_t *e, struct weft_request *req,
                           char *buf, size_t len)
{
    wf_exec_t *x = req->exec;
    if (req->runner) {
        req->runner->describe(req, buf, len);
        return;
    }
    if (req->seq_deferred) {
        snprintf(buf, len, req->args.peer == WEFT_ANY_SOURCE
                 ? "waiting for a message of tag %u from any rank"
                 : "waiting behind an earlier receive of tag %u from any "
                   "rank", req->p2p_tag);
        return;
    }
    for (uint32_t k = 0; x && k < x->nposted; k++) {
        const wf_step_t *s = &req->plan->steps[x->posted[k].step];
        if (s->kind == WF_STEP_RECV) {
            int k = snprintf(buf, len, "waiting to receive from %s",
                             e->tops->peer_describe(e->tctx, s->peer));
            if (k > 0 && (size_t)k < len && !wf_req_is_p2p(req))
                describe_peer_progress(e, req, s->peer, buf + k,
                                       len - (size_t)k);
            return;
        }
    }
    if (x && x->nposted) {
        const wf_step_t *s = &req->plan->steps[x->posted[0].step];
        snprintf(buf, len, "waiting to send to %s",
                 e->tops->peer_describe(e->tctx, s->peer));
        return;
    }
    snprintf(buf, len, "%u of %u steps done", x ? x->ndone : 0,
             req->plan->nsteps);
}

/* sig[0]: collective | dtype << 8 | op << 16 | algorithm << 24 |
 * root << 32; sig[1]: element count (the vector collectives: the digest
 * of the counts every rank passes alike, or 0).  Send and receive share one
 * collective code so that the two sides of a point-to-point message compare
 * equal; op and root are zero where they do not apply. */
void wf_sig_make(const struct weft_request *req, uint64_t sig[2])
{
    wf_sig_of(&req->args, req->algo_id, sig);
}

void wf_sig_of(const wf_coll_args_t *a, unsigned algo_id, uint64_t sig[2])
{
    bool p2p = a->coll == WF_COLL_SEND || a->coll == WF_COLL_RECV;
    uint64_t coll = p2p ? WF_COLL_SEND : a->coll;
    uint64_t op = wf_coll_reduces(a->coll) ? (uint64_t)a->op : 0;
    uint64_t root = a->root >= 0 && !p2p ? (uint64_t)(uint32_t)a->root : 0;
    sig[0] = coll | (uint64_t)a->dtype << 8 | op << 16 |
             (uint64_t)algo_id << 24 | root << 32;
    sig[1] = wf_coll_is_vector(a->coll) ? a->vdigest : a->count;
}

void wf_sig_describe(const uint64_t sig[2], char *buf, size_t len)
{
    unsigned coll = sig[0] & 0xff, dtype = (sig[0] >> 8) & 0xff;
    unsigned op = (sig[0] >> 16) & 0xff, algo = (sig[0] >> 24) & 0xff;
    unsigned root = (unsigned)(sig[0] >> 32);
    const char *dt = wf_dtype_valid((int)dtype)
                         ? wf_dtype_name((weft_dtype_t)dtype) : "?";
    char extra[64] = "";
    if (wf_coll_reduces((wf_coll_t)coll))
        snprintf(extra, sizeof(extra), ", %s",
                 wf_op_valid((int)op) ? wf_op_name((weft_op_t)op) : "?");
    if (coll == WF_COLL_BROADCAST || coll == WF_COLL_REDUCE ||
        coll == WF_COLL_GATHER || coll == WF_COLL_SCATTER ||
        coll == WF_COLL_GATHERV || coll == WF_COLL_SCATTERV)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                 ", root %u", root);
    if (coll == WF_COLL_ALLGATHERV || coll == WF_COLL_REDUCE_SCATTERV)
        snprintf(buf, len, "%s(counts digest %016llx, %s%s, algorithm %u)",
                 wf_coll_name((wf_coll_t)coll), (unsigned long long)sig[1],
                 dt, extra, algo);
    else if (wf_coll_is_vector((wf_coll_t)coll))
        snprintf(buf, len, "%s(%s%s, algorithm %u)",
                 wf_coll_name((wf_coll_t)coll), dt, extra, algo);
    else if (coll == WF_COLL_SEND)
        snprintf(buf, len, "send/recv(count %llu, %s)",
                 (unsigned long long)sig[1], dt);
    else
        snprintf(buf, len, "%s(count %llu, %s%s, algorithm %u)",
                 wf_coll_name((wf_coll_t)coll), (unsigned long long)sig[1], dt,
                 extra, algo);
}
