/*
 * reduce_rsg.c - Rabenseifner's reduce: a ring reduce-scatter, then a
 * gather of the reduced segments to the root.
 *
 * The buffer is split into n segments (wf_algo_segment).  Reduce-scatter:
 * in step s (0 <= s < n-1) rank r sends segment r-1-s to its right
 * neighbour and receives segment r-2-s from its left one, which it
 * combines with its own contribution; after n-1 steps rank r holds the
 * full reduction of segment r.  Gather: every rank sends its segment to
 * the root (the root's own is already in place), and with WEFT_AVG the
 * root divides each segment once as it lands.  Every rank sends and
 * reduces about (n-1)/n of the buffer in the first phase, and the root
 * receives (n-1)/n in the second: about twice the buffer per link in all,
 * independent of n, where the binomial tree moves log2(n) times it.
 * Segments are cut into chunks of WEFT_CHUNK_SIZE so transfers and
 * reductions pipeline.  Works for every n and for counts below n (empty
 * segments send nothing).
 *
 * Buffers: the root, when not in place, receives and reduces straight in
 * its receive buffer at the segment's offset.  Every other rank (and the
 * root in place, whose receive buffer is its input) receives into one of
 * two scratch slots by step parity and reduces there; the root in place
 * writes its final step into its receive buffer, over its own input of
 * that segment, which that reduce is the last to read.  When a segment
 * has more than RSG_SLOTS chunks, the last step receives into RSG_SLOTS
 * slots of one chunk taken in turn and reduces from there into its
 * segment slot (or the root's buffer): a chunk is reduced while it is
 * still in the core's cache, as in the reduce-scatters (a receive into a
 * whole segment has gone out to memory by then).
 *
 * Dependencies per chunk: a send of step s waits for the reduce of step
 * s-1; a receive into a slot waits for the last send that read that slot
 * (step s-1, which forwarded what step s-2 reduced there); a reduce waits
 * for its receive.  With chunk slots, the last step's receive waits for
 * the reduce of chunk c - RSG_SLOTS, which read its slot, and its reduce
 * for the last send that read the segment slot it writes.  On the root a
 * gather receive into segment q waits for the last step of the first
 * phase that touched segment q of the user's buffers (its forwarding
 * send, or in place the reduce or step-0 send that read its input there;
 * the data flow implies it too, since segment q reaches rank q only after
 * passing the root, but the hazard is stated where it is), and the other
 * ranks' gather sends wait for their final reduce.  Tags: first-phase
 * messages are numbered in order on both sides of each link (as in the
 * ring allreduce); gather messages use 2^31 + chunk.
 *
 * Cost: wf_cost(n, 2 (n-1)/n * bytes, (n-1)/n * bytes).
 */
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/rtree.h"
#include "common.h"

#define RSG_GATHER_TAG (1u << 31)
#define RSG_SLOTS 16

typedef struct {
    const wf_coll_args_t *a;
    wf_plan_t *plan;
    int n, right, left;
    bool root, direct;   /* direct: accumulate in the root's recv buffer */
    size_t ce, mc;       /* chunk elements, most chunks of a segment */
    uint64_t slot_bytes;
    uint64_t chunk_slot0; /* the last step's chunk slots; 0: none */
    uint32_t send_tag, recv_tag;
    int32_t *prev_red;   /* [mc]: the previous step's reduce per chunk */
    int32_t *slot_reader;/* [2 * mc]: last send reading a slot's chunk */
    int32_t *touch;      /* root: [n * mc] last step on segment q, chunk c */
} rsg_t;

static int mod(int x, int n) { return ((x % n) + n) % n; }

static size_t seg_chunks(const rsg_t *g, int q, size_t *start, size_t *len)
{
    wf_algo_segment(g->a->count, g->n, q, start, len);
    return wf_rtree_nchunks(*len, g->ce);
}

static wf_bref_t user_ref(const rsg_t *g, wf_buf_id_t b, size_t start,
                          size_t c)
{
    return wf_bref(b, (start + c * g->ce) * g->a->elem_size);
}

static wf_bref_t slot_ref(const rsg_t *g, int s, size_t c)
{
    return wf_bref(WF_BUF_SCRATCH, (uint64_t)(s % 2) * g->slot_bytes +
                                       c * g->ce * g->a->elem_size);
}

/* Where step s leaves its reduction of chunk c of segment start. */
static wf_bref_t red_ref(const rsg_t *g, int s, size_t start, size_t c)
{
    if (g->root && (g->direct || s == g->n - 2))
        return user_ref(g, WF_BUF_RECV, start, c);
    return slot_ref(g, s, c);
}

static void touch(rsg_t *g, int q, size_t c, int32_t step)
{
    if (g->root)
        g->touch[(size_t)q * g->mc + c] = step;
}

static void rs_step(rsg_t *g, int s, int rank, int32_t *owned)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size, start, len;
    int q = mod(rank - 1 - s, g->n);
    size_t nc = seg_chunks(g, q, &start, &len);
    for (size_t c = 0; c < nc; c++) {
        uint64_t bytes = WF_MIN(g->ce, len - c * g->ce) * es;
        wf_bref_t src = s == 0 ? user_ref(g, WF_BUF_SEND, start, c)
                               : red_ref(g, s - 1, start, c);
        int32_t st = wf_plan_send(g->plan, g->right, g->send_tag++, src,
                                  bytes, s == 0 ? WF_NO_DEP : g->prev_red[c],
                                  WF_NO_DEP, WF_NO_DEP);
        touch(g, q, c, st);
        if (src.buf == WF_BUF_SCRATCH)
            g->slot_reader[(size_t)((s - 1) % 2) * g->mc + c] = st;
    }
    q = mod(rank - 2 - s, g->n);
    nc = seg_chunks(g, q, &start, &len);
    bool chunk_slots = s == g->n - 2 && g->chunk_slot0;
    for (size_t c = 0; c < nc; c++) {
        size_t elems = WF_MIN(g->ce, len - c * g->ce);
        int32_t reader = g->direct ? WF_NO_DEP
                         : g->slot_reader[(size_t)(s % 2) * g->mc + c];
        wf_bref_t in = g->direct ? user_ref(g, WF_BUF_RECV, start, c)
                                 : slot_ref(g, s, c);
        int32_t war = reader, red_war = WF_NO_DEP;
        if (chunk_slots) {
            /* The receive's slot was last read by this step's reduce of
             * chunk c - RSG_SLOTS, already in prev_red; the reduce's
             * block slot by a send. */
            in = wf_bref(WF_BUF_SCRATCH, g->chunk_slot0 +
                                             c % RSG_SLOTS * g->ce * es);
            war = c < RSG_SLOTS ? WF_NO_DEP : g->prev_red[c - RSG_SLOTS];
            red_war = reader;
        }
        int32_t rv = wf_plan_recv(g->plan, g->left, g->recv_tag++, in,
                                  elems * es, war, WF_NO_DEP, WF_NO_DEP);
        int32_t red = wf_plan_reduce(g->plan, red_ref(g, s, start, c),
                                     user_ref(g, WF_BUF_SEND, start, c), in,
                                     elems, rv, red_war, WF_NO_DEP);
        touch(g, q, c, red);
        g->prev_red[c] = red;
        if (s == g->n - 2)
            owned[c] = red;
    }
}

static void gather(rsg_t *g, const int32_t *owned)
{
    const wf_coll_args_t *a = g->a;
    size_t es = a->elem_size, start, len;
    if (!g->root) {
        size_t nc = seg_chunks(g, a->rank, &start, &len);
        for (size_t c = 0; c < nc; c++)
            wf_plan_send(g->plan, a->root, RSG_GATHER_TAG + (uint32_t)c,
                         red_ref(g, g->n - 2, start, c),
                         WF_MIN(g->ce, len - c * g->ce) * es, owned[c],
                         WF_NO_DEP, WF_NO_DEP);
        return;
    }
    for (int q = 0; q < g->n; q++) {
        size_t nc = seg_chunks(g, q, &start, &len);
        for (size_t c = 0; c < nc; c++) {
            size_t elems = WF_MIN(g->ce, len - c * g->ce);
            wf_bref_t dst = user_ref(g, WF_BUF_RECV, start, c);
            int32_t done = owned[c];
            if (q != a->rank)
                done = wf_plan_recv(g->plan, q, RSG_GATHER_TAG + (uint32_t)c,
                                    dst, elems * es,
                                    g->touch[(size_t)q * g->mc + c],
                                    WF_NO_DEP, WF_NO_DEP);
            if (a->op == WEFT_AVG)
                wf_plan_avg(g->plan, dst, elems, done, WF_NO_DEP, WF_NO_DEP);
        }
    }
}

/* Zero elements: every rank tells the root with one empty message. */
static weft_status_t build_empty(const wf_coll_args_t *a, wf_plan_t *plan)
{
    for (int q = 0; q < a->size; q++) {
        if (a->rank != a->root && q == a->rank)
            wf_plan_send(plan, a->root, RSG_GATHER_TAG, wf_bref(WF_BUF_SEND, 0),
                         0, WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
        else if (a->rank == a->root && q != a->root)
            wf_plan_recv(plan, q, RSG_GATHER_TAG, wf_bref(WF_BUF_RECV, 0), 0,
                         WF_NO_DEP, WF_NO_DEP, WF_NO_DEP);
    }
    return plan->failed ? WEFT_ERR_NO_MEMORY : WEFT_OK;
}

static weft_status_t rsg_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    int n = a->size;
    if (n == 1)
        return wf_rtree_build_single(a, plan, wf_bref(WF_BUF_RECV, 0),
                                     wf_bref(WF_BUF_SEND, 0),
                                     (uint64_t)a->count * a->elem_size);
    if (a->count == 0)
        return build_empty(a, plan);
    rsg_t g = {.a = a, .plan = plan, .n = n, .right = mod(a->rank + 1, n),
               .left = mod(a->rank - 1, n), .root = a->rank == a->root,
               .ce = wf_rtree_chunk_elems(a)};
    g.direct = g.root && !a->in_place;
    size_t max_seg = (a->count + (size_t)n - 1) / (size_t)n;
    g.mc = wf_rtree_nchunks(max_seg, g.ce);
    g.slot_bytes = max_seg * a->elem_size;
    plan->scratch_bytes = g.direct ? 0 : 2 * g.slot_bytes;
    if (!g.direct && g.mc > RSG_SLOTS) {
        g.chunk_slot0 = plan->scratch_bytes;
        plan->scratch_bytes += RSG_SLOTS * g.ce * a->elem_size;
    }
    size_t ntouch = g.root ? (size_t)n * g.mc : 0;
    int32_t *mem = malloc((4 * g.mc + ntouch) * sizeof(int32_t));
    if (mem) {
        for (size_t i = 0; i < 4 * g.mc + ntouch; i++)
            mem[i] = WF_NO_DEP;
        g.prev_red = mem;
        g.slot_reader = mem + g.mc;
        g.touch = mem + 4 * g.mc;
        for (int s = 0; s < n - 1; s++)
            rs_step(&g, s, a->rank, mem + 3 * g.mc);
        gather(&g, mem + 3 * g.mc);
    } else {
        plan->failed = true;
    }
    free(mem);
    return wf_algo_build_status(&wf_algo_reduce_rsg, a, plan->failed);
}

static bool rsg_supports(const wf_coll_args_t *a)
{
    return a->coll == WF_COLL_REDUCE;
}

static void rsg_terms(const wf_coll_args_t *a, wf_cost_terms_t *t)
{
    double n = a->size, bytes = (double)a->count * (double)a->elem_size;
    /* The ring sends every segment but one from every rank; the gather
     * one segment from every rank but the root. */
    double pieces = wf_msgs_pieces(a->count, a->elem_size, a->size,
                                   a->chunk_bytes);
    size_t start, len; /* the root's own segment, not gathered */
    wf_algo_segment(a->count, a->size, a->root, &start, &len);
    double own = (double)(len * a->elem_size);
    /* Only the ring's first step, one segment from every rank, is input
     * sent at once; every later send was reduced from a receive. */
    double messages = (n - 1) * pieces + pieces -
                      (own > 0 ? wf_msgs(own, (double)a->chunk_bytes) : 0);
    *t = (wf_cost_terms_t){
        .rounds = n, .path_sent = 2 * (n - 1) / n * bytes,
        .path_reduced = (n - 1) / n * bytes,
        .messages = messages, .bytes = (n - 1) * bytes + bytes - own,
        .reduced = (n - 1) * bytes, .waits = messages - pieces};
}

static double rsg_cost(const wf_coll_args_t *a)
{
    return wf_cost_of_terms(a, rsg_terms);
}

const wf_algo_t wf_algo_reduce_rsg = {
    .name = "rsg",
    .coll = WF_COLL_REDUCE,
    .id = 24,
    .supports = rsg_supports,
    .cost = rsg_cost,
    .cost_terms = rsg_terms,
    .build = rsg_build,
};
