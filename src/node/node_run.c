/*
 * node_run.c - one operation through the shared segment (node_coll.h):
 * publish this rank's slot, wait for the slots it needs, combine.  The
 * blocking calls run it in the caller's thread with no engine round
 * between; non-blocking ones (and blocking ones queued behind them) are
 * requests the engine advances with the same steps.
 */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "node/node_impl.h"
#include "reduce/reduce.h"

/* Polls of an arrived-yet? look between two looks at the board, the
 * engine's error, the clock and the peers' pidfds. */
#define WF_NODE_CHECK_EVERY 64
/* Yields before a waiting rank sleeps in poll() on the pidfds. */
#define WF_NODE_YIELDS 2000
#define WF_NODE_SLEEP_MS 1
/* A reduction or allgather goes through the segment while each rank
 * reads at most this many payloads' worth of slots. */
#define WF_NODE_READS_MAX 4

typedef struct {
    const wf_coll_args_t *a;
    const void *sendbuf;
    void *recvbuf;
    uint64_t k;      /* the segment's operation number */
    uint64_t seq;    /* the communicator's collective number, for messages */
    uint64_t sig[2];
} node_op_t;

static size_t data_bytes(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BARRIER ? 0 : a->count * a->elem_size;
}

static bool writes_data(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_BROADCAST ? a->rank == a->root
                                        : a->coll != WF_COLL_BARRIER;
}

/* Whether this rank waits for rank j's slot of this operation: what it
 * reads, and everyone for a barrier.  A broadcast's root and a reduce's
 * other ranks wait for nobody, so a loop of them runs up to
 * WF_NODE_DEPTH operations ahead; their calls are compared with the
 * others' through the histories (check_histories). */
static bool waits_for(const wf_coll_args_t *a, int j)
{
    switch (a->coll) {
    case WF_COLL_BROADCAST: return a->rank != a->root && j == a->root;
    case WF_COLL_REDUCE: return a->rank == a->root;
    default: return true;
    }
}

bool wf_node_coll_fits(const wf_node_coll_t *n, const wf_coll_args_t *a)
{
    if (!n)
        return false;
    size_t bytes = data_bytes(a);
    switch (a->coll) {
    case WF_COLL_BROADCAST:
    case WF_COLL_BARRIER:
        return bytes <= n->payload;
    case WF_COLL_ALLREDUCE:
    case WF_COLL_REDUCE:
    case WF_COLL_ALLGATHER:
        /* These read every rank's slot, a cost that grows with the ranks
         * where the engine's ring or halving read about twice the
         * message: the bound keeps the segment to the sizes where reading
         * everything is the cheaper of the two. */
        return bytes <= n->payload &&
               bytes * (size_t)n->size <= WF_NODE_READS_MAX * n->payload;
    default:
        return false;
    }
}

/* Rank r has published operation k: what this rank knows of the others
 * grows as it reads their slots, so it reads a slot only when what it
 * knows does not let it on. */
static void note_published(wf_node_coll_t *n, int r, uint64_t k)
{
    if (__atomic_load_n(&n->peers[r].known, __ATOMIC_RELAXED) < k)
        __atomic_store_n(&n->peers[r].known, k, __ATOMIC_RELEASE);
}

/* Whether rank r has published at least operation `want`, k's reused
 * slot.  Where what this rank knows does not tell, it looks whether r has
 * published k - 1 (enough for WF_NODE_DEPTH - 1 more operations) or
 * k - WF_NODE_DEPTH / 2 (for half as many), not at `want` itself: a
 * rank running ahead of a slower one (a broadcast's root) then reads the
 * other's lines once every few operations, not on every one, and
 * each read moves a line between the two caches.  The slowest rank never
 * waits for this (the others have published more than it has). */
static bool has_published(wf_node_coll_t *n, int r, uint64_t want,
                          uint64_t k)
{
    if (__atomic_load_n(&n->peers[r].known, __ATOMIC_ACQUIRE) >= want)
        return true;
    uint64_t probe[2] = {k - 1, k - WF_NODE_DEPTH / 2};
    for (int i = 0; i < 2; i++)
        if (__atomic_load_n(&wf_node_slot(n, probe[i], r)->seq,
                            __ATOMIC_ACQUIRE) >= probe[i]) {
            note_published(n, r, probe[i]);
            return true;
        }
    return false;
}

/* This rank finished k - 1, and every rank has published
 * k - WF_NODE_DEPTH + 1, so each has finished k - WF_NODE_DEPTH, whose
 * slots k now takes. */
static bool can_publish(wf_node_coll_t *n, uint64_t k)
{
    if (__atomic_load_n(&n->done, __ATOMIC_ACQUIRE) != k - 1)
        return false;
    if (k < WF_NODE_DEPTH)
        return true;
    uint64_t reused = k - WF_NODE_DEPTH + 1;
    for (int r = 0; r < n->size; r++)
        if (r != n->rank && !has_published(n, r, reused, k))
            return false;
    return true;
}

static weft_status_t mismatch(wf_node_coll_t *n, uint64_t seq,
                              const uint64_t mine[2], int j,
                              const uint64_t theirs[2])
{
    char a[160], b[160];
    wf_sig_describe(mine, a, sizeof(a));
    wf_sig_describe(theirs, b, sizeof(b));
    wf_engine_fail(n->engine, WEFT_ERR_MISMATCH, "operation #%llu mismatch: "
                   "rank %d called %s but rank %d called %s (seen in the "
                   "shared segment)", (unsigned long long)seq, n->rank, a, j,
                   b);
    return WEFT_ERR_MISMATCH;
}

/* ---- histories ------------------------------------------------------------
 * Every slot carries a hash of its rank's signatures so far.  Where a rank
 * waits for another's slot it compares both the call and the history; a
 * rank that waits for nobody (a broadcast's root) compares the others'
 * histories only every WF_NODE_DEPTH operations, when it must look at
 * their progress anyway: reading another rank's line on every call would
 * cost a transfer between caches that the data itself does not need.  A
 * disagreement is seen at most WF_NODE_DEPTH operations late by such a
 * rank, at once by any rank that waits for the other. */

/* Reads the signature and history of operation m from slot s, which its
 * rank may be reusing for a later one meanwhile: false when s does not
 * hold m throughout.  A sequence lock without fences (ThreadSanitizer has
 * none): publish marks a slot it rewrites with 0 and writes the fields
 * with release stores, so a read of a new field (acquire) makes the 0, or
 * the next number, the least the second look at seq can see.  On x86 the
 * orders cost nothing. */
static bool read_stable(const wf_node_slot_t *s, uint64_t m, uint64_t sig[2],
                        uint64_t *history)
{
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != m)
        return false;
    if (sig) {
        sig[0] = __atomic_load_n(&s->sig[0], __ATOMIC_ACQUIRE);
        sig[1] = __atomic_load_n(&s->sig[1], __ATOMIC_ACQUIRE);
    }
    if (history)
        *history = __atomic_load_n(&s->history, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == m;
}

static uint64_t history_next(uint64_t h, const uint64_t sig[2])
{
    h = (h ^ sig[0]) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    h = (h ^ sig[1]) * 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

static const wf_node_past_t *past(const wf_node_coll_t *n, uint64_t k)
{
    return &n->past[k & (WF_NODE_DEPTH - 1)];
}

static void note_verified(wf_node_coll_t *n, int j, uint64_t k)
{
    if (__atomic_load_n(&n->peers[j].verified, __ATOMIC_RELAXED) < k)
        __atomic_store_n(&n->peers[j].verified, k, __ATOMIC_RELAXED);
}

/* Rank j's history disagrees with this rank's at operation `to`: names
 * the first call after `from` whose signatures differ, where j's slot of
 * it still holds it. */
static weft_status_t history_mismatch(wf_node_coll_t *n, int j, uint64_t from,
                                      uint64_t to)
{
    for (uint64_t m = from + 1; m <= to; m++) {
        wf_node_slot_t *s = wf_node_slot(n, m, j);
        uint64_t theirs[2];
        if (!read_stable(s, m, theirs, NULL))
            continue;
        const wf_node_past_t *mine = past(n, m);
        if (theirs[0] != mine->sig[0] || theirs[1] != mine->sig[1])
            return mismatch(n, mine->seq, mine->sig, j, theirs);
    }
    char a[160];
    wf_sig_describe(past(n, to)->sig, a, sizeof(a));
    wf_engine_fail(n->engine, WEFT_ERR_MISMATCH, "operations #%llu to #%llu "
                   "mismatch: rank %d and rank %d called different "
                   "collectives in between (their histories in the shared "
                   "segment differ; rank %d's last was %s)",
                   (unsigned long long)past(n, from + 1)->seq,
                   (unsigned long long)past(n, to)->seq, n->rank, j, n->rank,
                   a);
    return WEFT_ERR_MISMATCH;
}

/* Compares j's history at operation m, read from its slot as `theirs`. */
static weft_status_t compare_history(wf_node_coll_t *n, int j, uint64_t m,
                                     uint64_t theirs)
{
    uint64_t from = __atomic_load_n(&n->peers[j].verified, __ATOMIC_RELAXED);
    if (m <= from)
        return WEFT_OK;
    if (theirs != past(n, m)->history)
        return history_mismatch(n, j, from, m);
    note_verified(n, j, m);
    return WEFT_OK;
}

/* j's history at an operation this rank still keeps, before it publishes
 * k: at k - 1 where j has published that (its slot cannot be reused
 * before this rank publishes k), otherwise at k - WF_NODE_DEPTH + 1,
 * which j has published (can_publish) but may be reusing for k + 1 right
 * now; then k - 1 holds k - 1 at the next look. */
static uint64_t read_history(const wf_node_coll_t *n, int j, uint64_t k,
                             uint64_t *m)
{
    uint64_t h = 0;
    for (;;) {
        *m = k - 1;
        if (read_stable(wf_node_slot(n, *m, j), *m, NULL, &h))
            return h;
        *m = k - WF_NODE_DEPTH + 1;
        if (read_stable(wf_node_slot(n, *m, j), *m, NULL, &h))
            return h;
    }
}

/* Before publishing k: every other rank's history is compared up to
 * k - WF_NODE_DEPTH at least, so a disagreement is found while this rank
 * still keeps the calls to name it by. */
static weft_status_t check_histories(wf_node_coll_t *n, uint64_t k)
{
    if (k <= __atomic_load_n(&n->verified_all, __ATOMIC_RELAXED) +
                 WF_NODE_DEPTH)
        return WEFT_OK;
    uint64_t all = UINT64_MAX;
    for (int j = 0; j < n->size; j++) {
        if (j == n->rank)
            continue;
        if (__atomic_load_n(&n->peers[j].verified, __ATOMIC_RELAXED) +
                WF_NODE_DEPTH < k) {
            uint64_t m;
            uint64_t theirs = read_history(n, j, k, &m);
            note_published(n, j, m);
            weft_status_t st = compare_history(n, j, m, theirs);
            if (st != WEFT_OK)
                return st;
        }
        all = WF_MIN(all, __atomic_load_n(&n->peers[j].verified,
                                          __ATOMIC_RELAXED));
    }
    __atomic_store_n(&n->verified_all, all, __ATOMIC_RELAXED);
    return WEFT_OK;
}

static void publish(wf_node_coll_t *n, const node_op_t *op)
{
    wf_node_slot_t *s = wf_node_slot(n, op->k, n->rank);
    wf_node_past_t *mine = &n->past[op->k & (WF_NODE_DEPTH - 1)];
    if (writes_data(op->a) && data_bytes(op->a))
        memcpy(wf_node_data(n, op->k, n->rank, data_bytes(op->a)), op->sendbuf,
               data_bytes(op->a));
    mine->seq = op->seq;
    mine->sig[0] = op->sig[0];
    mine->sig[1] = op->sig[1];
    mine->history = history_next(past(n, op->k - 1)->history, op->sig);
    /* Another rank may read a reused slot's history and signature while
     * they change (read_stable): the slot holds no operation meanwhile. */
    if (op->k > WF_NODE_DEPTH)
        __atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->sig[0], op->sig[0], __ATOMIC_RELEASE);
    __atomic_store_n(&s->sig[1], op->sig[1], __ATOMIC_RELEASE);
    __atomic_store_n(&s->history, mine->history, __ATOMIC_RELEASE);
    __atomic_store_n(&s->seq, op->k, __ATOMIC_RELEASE);
}

/* Publishes op once it may: 1 when it did, 0 while it may not yet,
 * WEFT_ERR_MISMATCH (failing the engine) when the previous operation's
 * slots disagree with this rank's. */
static int try_publish(wf_node_coll_t *n, const node_op_t *op)
{
    if (!can_publish(n, op->k))
        return 0;
    weft_status_t st = check_histories(n, op->k);
    if (st != WEFT_OK)
        return st;
    publish(n, op);
    return 1;
}

/* 1 when every slot this rank waits for holds operation k, 0 while one
 * does not, WEFT_ERR_MISMATCH (failing the engine) when one holds another
 * call. */
static int arrived(wf_node_coll_t *n, const node_op_t *op, int *waiting)
{
    for (int j = 0; j < n->size; j++) {
        if (j == n->rank || !waits_for(op->a, j))
            continue;
        wf_node_slot_t *s = wf_node_slot(n, op->k, j);
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < op->k) {
            if (waiting)
                *waiting = j;
            return 0;
        }
        note_published(n, j, op->k);
        uint64_t theirs[2] = {__atomic_load_n(&s->sig[0], __ATOMIC_ACQUIRE),
                              __atomic_load_n(&s->sig[1], __ATOMIC_ACQUIRE)};
        if (theirs[0] != op->sig[0] || theirs[1] != op->sig[1])
            return mismatch(n, op->seq, op->sig, j, theirs);
        if (compare_history(n, j, op->k,
                            __atomic_load_n(&s->history, __ATOMIC_ACQUIRE)))
            return WEFT_ERR_MISMATCH;
    }
    return 1;
}

/* Combines what arrived into recvbuf, in rank order on every rank. */
static void combine(wf_node_coll_t *n, const node_op_t *op)
{
    const wf_coll_args_t *a = op->a;
    size_t bytes = data_bytes(a);
    char *out = op->recvbuf;
    /* Nothing to move (barrier, count 0, where buffers may be NULL). */
    switch (bytes ? a->coll : WF_COLL_BARRIER) {
    case WF_COLL_ALLREDUCE:
    case WF_COLL_REDUCE:
        if (a->coll == WF_COLL_REDUCE && a->rank != a->root)
            break;
        wf_reduce(out, wf_node_data(n, op->k, 0, bytes),
                  wf_node_data(n, op->k, 1, bytes), a->count,
                  a->dtype, a->op);
        for (int j = 2; j < n->size; j++)
            wf_reduce(out, out,
                      wf_node_data(n, op->k, j, bytes),
                      a->count, a->dtype, a->op);
        if (a->op == WEFT_AVG)
            wf_reduce_avg_finish(out, a->count, a->dtype, n->size);
        break;
    case WF_COLL_BROADCAST:
        if (a->rank != a->root)
            memcpy(out, wf_node_data(n, op->k, a->root, bytes),
                   bytes);
        else if (out && out != op->sendbuf)
            memcpy(out, op->sendbuf, bytes);
        break;
    case WF_COLL_ALLGATHER:
        for (int j = 0; j < n->size; j++) {
            char *dst = out + (size_t)j * bytes;
            const char *src = j == n->rank
                                  ? op->sendbuf
                                  : wf_node_data(n, op->k, j, bytes);
            if (dst != src)
                memcpy(dst, src, bytes);
        }
        break;
    default:
        break;
    }
    __atomic_store_n(&n->done, op->k, __ATOMIC_RELEASE);
}

/* The ranks this one still waits for, as "1, 3". */
static void describe_wait(const wf_node_coll_t *n, const node_op_t *op,
                          bool published, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "%s in the shared segment, "
                                   "waiting for rank(s) ",
                                   published ? "published" : "not published");
    const char *sep = "";
    uint64_t want = published ? op->k
                    : op->k >= WF_NODE_DEPTH ? op->k - WF_NODE_DEPTH + 1 : 0;
    for (int j = 0; j < n->size && used < len; j++) {
        if (j == n->rank || (published && !waits_for(op->a, j)))
            continue;
        if (__atomic_load_n(&wf_node_slot(n, want, j)->seq,
                            __ATOMIC_ACQUIRE) >= want)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%d", sep, j);
        sep = ", ";
    }
    if (!*sep && used < len)
        snprintf(buf + used, len - used, "none (this rank is behind)");
}

/* A peer whose process has ended, or -1; waits up to sleep_ms for one. */
static int dead_peer(wf_node_coll_t *n, int sleep_ms)
{
    struct pollfd pfd[256];
    int map[256], m = 0;
    for (int r = 0; n->pidfds && r < n->size && m < 256; r++)
        if (n->pidfds[r] >= 0) {
            pfd[m] = (struct pollfd){.fd = n->pidfds[r], .events = POLLIN};
            map[m++] = r;
        }
    if (m == 0) {
        if (sleep_ms)
            wf_sleep_ms((uint64_t)sleep_ms);
        return -1;
    }
    if (poll(pfd, (nfds_t)m, sleep_ms) <= 0)
        return -1;
    for (int i = 0; i < m; i++)
        if (pfd[i].revents & (POLLIN | POLLHUP))
            return map[i];
    return -1;
}

/* The checks of a waiting rank: the board, the engine's error (another
 * thread's abort, a notice), the deadline, dead peers.  Returns the
 * engine's error once there is one. */
static weft_status_t check(wf_node_coll_t *n, const node_op_t *op,
                           bool published, uint64_t deadline, int sleep_ms)
{
    weft_status_t st = wf_engine_error(n->engine, NULL);
    if (st != WEFT_OK)
        return st;
    if (wf_node_board_adopt(n, n->engine))
        return wf_engine_error(n->engine, NULL);
    int dead = dead_peer(n, sleep_ms);
    /* A peer may finish the operation and exit while this rank looks
     * away: it only failed this rank if something of it is missing. */
    if (dead >= 0 && !(published ? arrived(n, op, NULL) > 0
                                 : can_publish(n, op->k))) {
        wf_engine_mark_lost(n->engine, dead);
        wf_engine_fail(n->engine, WEFT_ERR_REMOTE, "%s #%llu: rank %d lost "
                       "peer %d (pid %d, shared segment) (remote peer "
                       "failed): the process died",
                       wf_coll_name(op->a->coll), (unsigned long long)op->seq,
                       n->rank, dead, (int)n->pids[dead]);
        return wf_engine_error(n->engine, NULL);
    }
    if (wf_deadline_passed(deadline)) {
        char what[256];
        describe_wait(n, op, published, what, sizeof(what));
        wf_engine_fail(n->engine, WEFT_ERR_TIMEOUT, "%s #%llu timed out "
                       "after %lld ms on rank %d (%s)",
                       wf_coll_name(op->a->coll), (unsigned long long)op->seq,
                       (long long)n->timeout_ms, n->rank, what);
        return wf_engine_error(n->engine, NULL);
    }
    return WEFT_OK;
}

/* Logs the choice once per collective and size bucket, as the cost
 * model's choices are (src/algo/select.c). */
static void log_choice(const wf_node_coll_t *n, const wf_coll_args_t *a)
{
    static uint64_t logged[WF_COLL_MAX];
    uint64_t bytes = data_bytes(a);
    uint64_t bit = 1ull << (bytes ? 64 - __builtin_clzll(bytes) : 0);
    if (__atomic_load_n(&logged[a->coll], __ATOMIC_RELAXED) & bit ||
        __atomic_fetch_or(&logged[a->coll], bit, __ATOMIC_RELAXED) & bit)
        return;
    WEFT_INFO(COLL, "%s of %llu bytes (%s) on %d ranks: algorithm node "
              "(shared segment, every rank on this machine, up to %u bytes "
              "per rank)", wf_coll_name(a->coll), (unsigned long long)bytes,
              wf_dtype_name(a->dtype), n->size, n->payload);
}

/* Publishes, waits and combines in the calling thread; *waited_on is
 * the rank it waited for last, if any. */
static weft_status_t run_here(wf_node_coll_t *n, node_op_t *op_,
                              int *waited_on)
{
    node_op_t op = *op_;
    op.k = __atomic_add_fetch(&n->next, 1, __ATOMIC_ACQ_REL);
    wf_sig_of(op.a, 0, op.sig);
    /* Started at the first look at the clock: most operations end before
     * it, and reading the clock is a good part of a small one's time. */
    uint64_t deadline = 0;
    bool published = false;
    for (uint32_t i = 1;; i++) {
        if (!published) {
            int p = try_publish(n, &op);
            if (p < 0)
                return wf_engine_error(n->engine, NULL);
            published = p > 0;
        }
        if (published) {
            int r = arrived(n, &op, waited_on);
            if (r < 0)
                return wf_engine_error(n->engine, NULL);
            if (r > 0)
                break;
        }
        if (i <= n->spin_polls) {
            wf_cpu_relax();
            continue;
        }
        bool sleep = i > n->spin_polls + WF_NODE_YIELDS;
        if (sleep || i % WF_NODE_CHECK_EVERY == 0) {
            if (!deadline)
                deadline = wf_deadline_after(n->timeout_ms);
            weft_status_t st = check(n, &op, published, deadline,
                                     sleep ? WF_NODE_SLEEP_MS : 0);
            if (st != WEFT_OK)
                return st;
        }
        if (!sleep)
            sched_yield();
    }
    combine(n, &op);
    return WEFT_OK;
}

weft_status_t wf_node_coll_run(wf_node_coll_t *n, const wf_coll_args_t *a,
                               const void *sendbuf, void *recvbuf,
                               uint64_t *seq)
{
    node_op_t op = {.a = a, .sendbuf = sendbuf, .recvbuf = recvbuf};
    log_choice(n, a);
    WEFT_CHECK(wf_engine_take_coll_seq(n->engine, a, "node", &op.seq));
    *seq = op.seq;
    int waited_on = -1;
    weft_status_t st = run_here(n, &op, &waited_on);
    wf_engine_end_outside(n->engine, op.seq, a->coll, st, waited_on);
    return st;
}

/* ---- as an engine request ------------------------------------------------ */

static node_op_t req_op(struct weft_request *req)
{
    node_op_t op = {.a = &req->args, .sendbuf = req->sendbuf,
                    .recvbuf = req->recvbuf, .k = req->runner_seq,
                    .seq = req->seq};
    wf_sig_of(&req->args, 0, op.sig);
    return op;
}

/* A round in which the request still waits.  The engine's own deadline
 * check covers the clock and its board_poll the board each round; the
 * pidfds cost a system call, so they are looked at every so many rounds. */
static weft_status_t req_waiting(struct weft_request *req,
                                 const node_op_t *op)
{
    wf_node_coll_t *n = req->runner_ctx;
    bool pids = ++req->runner_looks % WF_NODE_CHECK_EVERY == 0;
    weft_status_t st = pids ? check(n, op, req->runner_phase == 1, 0, 0)
                            : wf_engine_error(n->engine, NULL);
    return st != WEFT_OK ? st : WEFT_INPROGRESS;
}

static weft_status_t req_advance(struct weft_request *req)
{
    wf_node_coll_t *n = req->runner_ctx;
    node_op_t op = req_op(req);
    if (req->runner_phase == 0) {
        int p = try_publish(n, &op);
        if (p < 0)
            return wf_engine_error(n->engine, NULL);
        if (p == 0)
            return req_waiting(req, &op);
        req->runner_phase = 1;
    }
    int r = arrived(n, &op, &req->waited_on);
    if (r < 0)
        return wf_engine_error(n->engine, NULL);
    if (r == 0)
        return req_waiting(req, &op);
    combine(n, &op);
    return WEFT_OK;
}

static void req_describe(struct weft_request *req, char *buf, size_t len)
{
    node_op_t op = req_op(req);
    describe_wait(req->runner_ctx, &op, req->runner_phase == 1, buf, len);
}

static const wf_req_runner_t node_runner = {
    .advance = req_advance,
    .describe = req_describe,
};

void wf_node_coll_attach(wf_node_coll_t *n, struct weft_request *req)
{
    req->runner = &node_runner;
    req->runner_ctx = n;
    req->runner_phase = 0;
    req->algo_name = "node";
    log_choice(n, &req->args);
    req->runner_seq = __atomic_add_fetch(&n->next, 1, __ATOMIC_ACQ_REL);
}
