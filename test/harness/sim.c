/*
 * sim.c - see sim.h.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "reduce/reduce.h"
#include "plan/nodemap.h"
#include "plan/plan.h"
#include "test.h"

typedef struct {
    wf_plan_t plan;
    wf_coll_args_t args;
    char *base;        /* the allocation behind send/recv */
    char *buf[3];      /* WF_BUF_SEND, WF_BUF_RECV, WF_BUF_SCRATCH */
    uint64_t sb, rb;
    wf_plan_index_t ix;
    uint32_t ndone;
    size_t *varrays;   /* a vector case's counts and displacements */
} srank_t;

/* A message, or a receive waiting for one, keyed by (src, dst, tag). */
typedef struct slot {
    int src, dst;
    uint32_t tag;
    char *data;        /* sent, not yet received */
    uint64_t len;
    int waiting_step;  /* receive posted, no message yet; -1 none */
    bool sent, received;
    struct slot *next;
} slot_t;

typedef struct {
    srank_t *ranks;
    int size;
    slot_t *slots[4096];
    int *ready_rank;
    uint32_t *ready_step;
    size_t nready, ready_cap;
    int held;          /* rank whose steps are held back, -1 none */
    wf_node_map_t map; /* the case's machines (node-aware algorithms) */
} sim_t;

static slot_t *slot_get(sim_t *s, int src, int dst, uint32_t tag)
{
    unsigned h = ((unsigned)src * 7919u + (unsigned)dst * 104729u + tag) % 4096;
    for (slot_t *p = s->slots[h]; p; p = p->next)
        if (p->src == src && p->dst == dst && p->tag == tag)
            return p;
    slot_t *p = calloc(1, sizeof(*p));
    *p = (slot_t){src, dst, tag, NULL, 0, -1, false, false, s->slots[h]};
    s->slots[h] = p;
    return p;
}

static void push_ready(sim_t *s, int r, uint32_t i)
{
    if (s->nready == s->ready_cap) {
        s->ready_cap = s->ready_cap ? 2 * s->ready_cap : 256;
        s->ready_rank = realloc(s->ready_rank, s->ready_cap * sizeof(int));
        s->ready_step = realloc(s->ready_step, s->ready_cap * 4);
    }
    s->ready_rank[s->nready] = r;
    s->ready_step[s->nready++] = i;
}

/* A step whose dependencies are done: ready, or a receive waiting. */
static void deps_done(sim_t *s, int r, uint32_t i)
{
    const wf_step_t *st = &s->ranks[r].plan.steps[i];
    if (st->kind == WF_STEP_RECV) {
        slot_t *m = slot_get(s, st->peer, r, st->tag);
        if (m->received)
            wf_test_fail(__FILE__, __LINE__, "rank %d posts two receives "
                         "with tag %u from %d", r, st->tag, st->peer);
        m->received = true;
        if (!m->sent) {
            m->waiting_step = (int)i;
            return;
        }
    }
    push_ready(s, r, i);
}

static void index_rank(sim_t *s, int r)
{
    srank_t *k = &s->ranks[r];
    ASSERT_OK(wf_plan_index(&k->plan, &k->ix));
    for (uint32_t i = 0; i < k->plan.nsteps; i++)
        if (!k->ix.pending[i])
            deps_done(s, r, i);
}

static char *at(srank_t *k, wf_bref_t b) { return k->buf[b.buf] + b.off; }

static void exec_step(sim_t *s, int r, uint32_t i)
{
    srank_t *k = &s->ranks[r];
    const wf_step_t *st = &k->plan.steps[i];
    const wf_plan_t *p = &k->plan;
    if (st->kind == WF_STEP_SEND) {
        slot_t *m = slot_get(s, r, st->peer, st->tag);
        if (m->sent)
            wf_test_fail(__FILE__, __LINE__, "rank %d sends tag %u to %d "
                         "twice", r, st->tag, st->peer);
        m->sent = true;
        m->data = malloc(st->count + 1);
        memcpy(m->data, at(k, st->src), st->count);
        m->len = st->count;
        if (m->waiting_step >= 0) {
            push_ready(s, st->peer, (uint32_t)m->waiting_step);
            m->waiting_step = -1;
        }
    } else if (st->kind == WF_STEP_RECV) {
        slot_t *m = slot_get(s, st->peer, r, st->tag);
        if (m->len != st->count)
            wf_test_fail(__FILE__, __LINE__, "rank %d receives %llu bytes "
                         "with tag %u from %d, %llu were sent", r,
                         (unsigned long long)st->count, st->tag, st->peer,
                         (unsigned long long)m->len);
        memcpy(at(k, st->dst), m->data, m->len);
        free(m->data);
        m->data = NULL;
    } else if (st->kind == WF_STEP_REDUCE) {
        wf_reduce(at(k, st->dst), at(k, st->src), at(k, st->src2), st->count,
                  p->dtype, p->op);
    } else if (st->kind == WF_STEP_COPY) {
        memmove(at(k, st->dst), at(k, st->src), st->count);
    } else {
        wf_reduce_avg_finish(at(k, st->dst), st->count, p->dtype, p->nranks);
    }
    k->ndone++;
    for (uint32_t d = k->ix.off[i]; d < k->ix.off[i + 1]; d++)
        if (--k->ix.pending[k->ix.list[d]] == 0)
            deps_done(s, r, k->ix.list[d]);
}

/* Executes random ready steps until none is left (skipping the held
 * rank's).  Returns the number executed. */
static size_t run_ready(sim_t *s)
{
    size_t done = 0;
    while (s->nready) {
        size_t j = (size_t)rand() % s->nready, pick = s->nready;
        for (size_t t = 0; t < s->nready; t++) {
            size_t cand = (j + t) % s->nready;
            if (s->ready_rank[cand] != s->held) {
                pick = cand;
                break;
            }
        }
        if (pick == s->nready)
            break; /* only held steps left */
        int r = s->ready_rank[pick];
        uint32_t i = s->ready_step[pick];
        s->nready--;
        s->ready_rank[pick] = s->ready_rank[s->nready];
        s->ready_step[pick] = s->ready_step[s->nready];
        exec_step(s, r, i);
        done++;
    }
    return done;
}

/* Lays out the rank's buffers (aliased as weft.h's in-place definition
 * says) and fills its input. */
static void setup_rank(srank_t *k, const wf_sim_case_t *c, int r)
{
    wf_coll_args_t *a = &k->args;
    *a = (wf_coll_args_t){.coll = c->coll, .count = c->count,
                          .dtype = c->dtype, .op = c->op,
                          .elem_size = cu_dtype_size(c->dtype), .peer = -1,
                          .root = c->root, .rank = r, .size = c->size,
                          .chunk_bytes = c->chunk_bytes};
    wf_coll_buffer_bytes(a, &k->sb, &k->rb);
    uint64_t block = (uint64_t)c->count * a->elem_size;
    bool rooted_alias = r == c->root && (c->coll == WF_COLL_GATHER ||
                                         c->coll == WF_COLL_SCATTER);
    a->in_place = c->in_place &&
                  (rooted_alias || (c->coll != WF_COLL_GATHER &&
                                    c->coll != WF_COLL_SCATTER));
    uint64_t total = k->sb + k->rb + 64;
    k->base = malloc(total);
    memset(k->base, 0x5a, total);
    k->buf[WF_BUF_SEND] = k->base;
    k->buf[WF_BUF_RECV] = k->base + k->sb + 32;
    if (a->in_place) {
        uint64_t own = (uint64_t)(c->coll == WF_COLL_GATHER ||
                                  c->coll == WF_COLL_SCATTER ? c->root : r) *
                       block;
        if (c->coll == WF_COLL_ALLGATHER || c->coll == WF_COLL_GATHER) {
            k->buf[WF_BUF_RECV] = k->base;
            k->buf[WF_BUF_SEND] = k->base + own;
        } else if (c->coll == WF_COLL_REDUCE_SCATTER ||
                   c->coll == WF_COLL_SCATTER) {
            k->buf[WF_BUF_RECV] = k->base + own;
        } else {
            k->buf[WF_BUF_RECV] = k->base;
        }
    }
    cu_fill(k->buf[WF_BUF_SEND], k->sb / a->elem_size, r,
            cu_pattern_op(c->coll, c->op), c->dtype);
}

static void check_rank(const wf_algo_t *algo, const wf_sim_case_t *c,
                       srank_t *k, int r, unsigned seed)
{
    size_t n = k->rb / k->args.elem_size, wrong = 0;
    for (size_t i = 0; i < n; i++) {
        double want, got = cu_get(k->buf[WF_BUF_RECV], c->dtype, i);
        if (!cu_expected(c->coll, c->size, c->count, c->dtype, c->op,
                         c->root, r, i, &want) || got == want)
            continue;
        if (wrong++ < 3)
            fprintf(stderr, "element %zu is %g, expected %g\n", i, got, want);
    }
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s/%s: rank %d of %d, count %zu, "
                     "dtype %d, op %d, root %d, %s, seed %u: %zu wrong",
                     wf_coll_name(c->coll), algo->name, r, c->size, c->count,
                     (int)c->dtype, (int)c->op, c->root,
                     k->args.in_place ? "in place" : "out of place", seed,
                     wrong);
}

static void sim_free(sim_t *s)
{
    wf_node_map_free(&s->map);
    for (int r = 0; r < s->size; r++) {
        srank_t *k = &s->ranks[r];
        free(k->base);
        free(k->buf[WF_BUF_SCRATCH]);
        free(k->varrays);
        wf_plan_index_free(&k->ix);
        wf_plan_free(&k->plan);
    }
    for (int h = 0; h < 4096; h++)
        while (s->slots[h]) {
            slot_t *p = s->slots[h];
            s->slots[h] = p->next;
            if (p->sent && p->received == false)
                wf_test_fail(__FILE__, __LINE__, "a message from %d to %d "
                             "(tag %u) was never received", p->src, p->dst,
                             p->tag);
            free(p->data);
            free(p);
        }
    free(s->ranks);
    free(s->ready_rank);
    free(s->ready_step);
}

/* Builds every rank's plan; false when the algorithm declines the case. */
/* The case's machines, or none. */
static void setup_map(sim_t *s, const wf_sim_case_t *c)
{
    if (c->ranks_per_node <= 0)
        return;
    int nodes = (c->size + c->ranks_per_node - 1) / c->ranks_per_node;
    int *node_of = malloc((size_t)c->size * sizeof(int));
    for (int r = 0; r < c->size; r++)
        node_of[r] = c->interleave ? r % nodes : r / c->ranks_per_node;
    ASSERT_OK(wf_node_map_from_nodes(&s->map, c->size, node_of));
    free(node_of);
}

/* Builds every rank's plan, each rank laid out by setup(k, arg, r);
 * false when the algorithm declines the case. */
static bool sim_build(sim_t *s, const wf_algo_t *algo, int size,
                      weft_dtype_t dtype, weft_op_t op,
                      void (*setup)(srank_t *k, const void *arg, int r),
                      const void *arg)
{
    for (int r = 0; r < size; r++) {
        srank_t *k = &s->ranks[r];
        setup(k, arg, r);
        if (s->map.nodes > 1)
            k->args.nodes = &s->map;
        if (!algo->supports(&k->args)) {
            s->size = r + 1;
            sim_free(s);
            return false;
        }
        wf_plan_init(&k->plan, dtype, op, k->args.elem_size, size);
        ASSERT_OK(algo->build(&k->args, &k->plan));
        ASSERT_OK(wf_plan_validate(&k->plan, size, k->sb, k->rb));
        k->buf[WF_BUF_SCRATCH] = malloc(k->plan.scratch_bytes + 8);
    }
    for (int r = 0; r < size; r++)
        index_rank(s, r);
    return true;
}

static void setup_plain(srank_t *k, const void *c, int r)
{
    setup_rank(k, c, r);
}

static bool sim_setup(sim_t *s, const wf_algo_t *algo, const wf_sim_case_t *c)
{
    memset(s, 0, sizeof(*s));
    s->size = c->size;
    s->held = -1;
    s->ranks = calloc((size_t)c->size, sizeof(srank_t));
    setup_map(s, c);
    return sim_build(s, algo, c->size, c->dtype, c->op, setup_plain, c);
}

static void expect_all_done(sim_t *s, const wf_algo_t *algo,
                            const wf_sim_case_t *c)
{
    for (int r = 0; r < c->size; r++)
        if (s->ranks[r].ndone != s->ranks[r].plan.nsteps)
            wf_test_fail(__FILE__, __LINE__, "%s/%s on %d ranks, count %zu: "
                         "deadlock, rank %d did %u of %u steps",
                         wf_coll_name(c->coll), algo->name, c->size, c->count,
                         r, s->ranks[r].ndone, s->ranks[r].plan.nsteps);
}

bool wf_sim_check(const wf_algo_t *algo, const wf_sim_case_t *c,
                  unsigned seed)
{
    sim_t s;
    srand(seed);
    if (!sim_setup(&s, algo, c))
        return false;
    run_ready(&s);
    expect_all_done(&s, algo, c);
    for (int r = 0; r < c->size; r++)
        check_rank(algo, c, &s.ranks[r], r, seed);
    sim_free(&s);
    return true;
}

static void check_barrier_on(const wf_algo_t *algo, int size, int per_node,
                             bool interleave)
{
    wf_sim_case_t c = {.coll = WF_COLL_BARRIER, .size = size,
                       .dtype = WEFT_UINT8, .chunk_bytes = 4096,
                       .ranks_per_node = per_node, .interleave = interleave};
    for (int held = 0; held < size && size > 1; held++) {
        sim_t s;
        srand((unsigned)held + 1);
        ASSERT_TRUE(sim_setup(&s, algo, &c));
        s.held = held;
        run_ready(&s);
        for (int r = 0; r < size; r++)
            if (r != held && s.ranks[r].ndone == s.ranks[r].plan.nsteps)
                wf_test_fail(__FILE__, __LINE__, "barrier/%s on %d ranks: "
                             "rank %d passed while rank %d had not entered",
                             algo->name, size, r, held);
        s.held = -1;
        run_ready(&s);
        expect_all_done(&s, algo, &c);
        sim_free(&s);
    }
}

/* The machine layouts a node-aware algorithm is checked on: 2 and 3 ranks
 * per machine (the last with the rest), consecutive and interleaved;
 * none for the others.  Below 3 ranks no machine would have two. */
typedef struct {
    int per_node;
    bool interleave;
} layout_t;

static int layouts_for(const wf_algo_t *algo, int size, layout_t out[3])
{
    if (!algo->node_aware)
        return out[0] = (layout_t){0, false}, 1;
    int n = 0;
    if (size >= 3)
        out[n++] = (layout_t){2, false};
    if (size >= 4) /* on 3 ranks, 3 per machine would be one machine */
        out[n++] = (layout_t){3, false};
    if (size >= 3)
        out[n++] = (layout_t){2, true};
    return n;
}

void wf_sim_check_barrier(const wf_algo_t *algo, int size)
{
    layout_t l[3];
    int n = layouts_for(algo, size, l);
    for (int i = 0; i < n; i++)
        check_barrier_on(algo, size, l[i].per_node, l[i].interleave);
}

/* The ops the matrix runs on dtype d: the arithmetic ones, and of the
 * bitwise and logical ones bxor alone, on integers.  The algorithms treat
 * every op alike but avg, and bxor, unlike the and/or family, shows an
 * input reduced twice. */
static bool matrix_op(weft_dtype_t d, int op)
{
    return op <= WEFT_AVG || (op == WEFT_BXOR && wf_op_defined(d, op));
}

static bool rooted(wf_coll_t coll)
{
    return coll == WF_COLL_BROADCAST || coll == WF_COLL_REDUCE ||
           coll == WF_COLL_GATHER || coll == WF_COLL_SCATTER;
}

void wf_sim_matrix(const wf_algo_t *algo, int max_size)
{
    static const weft_dtype_t dtypes[] = {WEFT_INT32, WEFT_FLOAT32, WEFT_INT8,
                                          WEFT_BFLOAT16};
    int sizes[32], nsizes = 0;
    for (int n = 1; n <= max_size && nsizes < 30; n++)
        sizes[nsizes++] = n;
    if (max_size < 13)
        sizes[nsizes++] = 13;
    if (max_size < 16)
        sizes[nsizes++] = 16;
    bool reduces = wf_coll_reduces(algo->coll);
    if (algo->coll == WF_COLL_BARRIER) {
        for (int i = 0; i < nsizes; i++)
            wf_sim_check_barrier(algo, sizes[i]);
        return;
    }
    for (int si = 0; si < nsizes; si++) {
        int n = sizes[si];
        size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 37, 100};
        /* Every root up to 9 ranks; first, last and middle beyond. */
        int roots[16], nroots = 1;
        roots[0] = 0;
        if (rooted(algo->coll)) {
            nroots = n <= 9 ? n : 3;
            for (int k = 0; k < nroots; k++)
                roots[k] = n <= 9 ? k : (k == 0 ? 0 : k == 1 ? n - 1 : n / 2);
        }
        layout_t l[3];
        int nl = layouts_for(algo, n, l);
        for (int li = 0; li < nl; li++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(*counts); ci++)
            for (size_t di = 0; di < sizeof(dtypes) / sizeof(*dtypes); di++)
                for (int op = 0; op < (reduces ? WEFT_OP_COUNT : 1); op++) {
                    if (!matrix_op(dtypes[di], op))
                        continue;
                    for (int ri = 0; ri < nroots; ri++)
                        for (int ip = 0; ip < 2; ip++) {
                            wf_sim_case_t c = {
                                .coll = algo->coll, .size = n,
                                .count = counts[ci], .dtype = dtypes[di],
                                .op = (weft_op_t)op, .root = roots[ri],
                                .in_place = ip, .chunk_bytes = 16,
                                .ranks_per_node = l[li].per_node,
                                .interleave = l[li].interleave};
                            wf_sim_check(algo, &c, (unsigned)(ci + ri + ip));
                        }
                }
    }
}

/* ---- vector collectives ------------------------------------------------ */

/* How many elements rank `from` sends rank `to` in case c. */
static size_t vcount(const wf_sim_vcase_t *c, int from, int to)
{
    if (c->coll == WF_COLL_ALLTOALLV)
        return c->counts[(size_t)from * (size_t)c->size + (size_t)to];
    return c->counts[c->coll == WF_COLL_SCATTERV ? to : from];
}

/* Element i of what `from` sends `to` (reduce-scatterv: of from's whole
 * input, `to` unused), small enough for every dtype the cases use. */
static int32_t vval(int from, int to, size_t i)
{
    return (int32_t)((from * 31 + to * 7 + (int)(i % 1009) * 3) % 113);
}

/* Blocks of `counts` in reverse rank order, `gap` elements before each;
 * the extent in elements. */
static size_t vlay(const size_t *counts, size_t *displs, int n, size_t gap)
{
    size_t at = 0;
    for (int r = n - 1; r >= 0; r--) {
        at += gap;
        displs[r] = at;
        at += counts[r];
    }
    return at + gap;
}

static void vput(char *buf, size_t i, int32_t v)
{
    memcpy(buf + i * sizeof(v), &v, sizeof(v));
}

static int32_t vget(const char *buf, size_t i)
{
    int32_t v;
    memcpy(&v, buf + i * sizeof(v), sizeof(v));
    return v;
}

/* Rank r's buffers, arrays and input for vector case c (int32). */
static void setup_vrank(srank_t *k, const void *arg, int r)
{
    const wf_sim_vcase_t *c = arg;
    int n = c->size;
    size_t es = sizeof(int32_t);
    wf_coll_args_t *a = &k->args;
    *a = (wf_coll_args_t){.coll = c->coll, .dtype = WEFT_INT32, .op = c->op,
                          .elem_size = es, .peer = -1, .root = c->root,
                          .rank = r, .size = n,
                          .chunk_bytes = c->chunk_bytes};
    k->varrays = calloc(4 * (size_t)n, sizeof(size_t));
    size_t *rc = k->varrays, *rd = rc + n, *sc = rd + n, *sd = sc + n;
    for (int p = 0; p < n; p++) {
        rc[p] = c->coll == WF_COLL_ALLTOALLV ? vcount(c, p, r) : c->counts[p];
        sc[p] = vcount(c, r, p);
    }
    size_t rlen = vlay(rc, rd, n, 2), slen = 0, own = 0;
    bool root = r == c->root;
    bool ip = c->in_place && (root || (c->coll != WF_COLL_GATHERV &&
                                       c->coll != WF_COLL_SCATTERV));
    switch (c->coll) {
    case WF_COLL_ALLGATHERV: case WF_COLL_GATHERV:
        a->count = c->counts[r];
        own = rd[r];
        slen = a->count;
        if (c->coll == WF_COLL_GATHERV && !root)
            rlen = 0;
        break;
    case WF_COLL_SCATTERV:
        a->count = c->counts[r];
        slen = root ? rlen : 0;
        own = rd[r];
        rlen = a->count;
        break;
    case WF_COLL_ALLTOALLV:
        for (int p = 0; p < n; p++, slen += 1) { /* forward, a gap of 1 */
            sd[p] = slen;
            slen += sc[p];
        }
        for (int p = 0; p < n; p++)
            a->count += sc[p];
        break;
    default: /* reduce-scatterv: contiguous input */
        for (int p = 0; p < n; p++) {
            if (p == r)
                own = slen;
            slen += c->counts[p];
        }
        a->count = c->counts[r];
        rlen = a->count;
        break;
    }
    a->in_place = ip;
    a->vcounts = c->coll == WF_COLL_REDUCE_SCATTERV ? c->counts : rc;
    a->vdispls = c->coll == WF_COLL_REDUCE_SCATTERV ? NULL : rd;
    if ((c->coll == WF_COLL_GATHERV || c->coll == WF_COLL_SCATTERV) && !root)
        a->vcounts = a->vdispls = NULL;
    if (c->coll == WF_COLL_ALLTOALLV) {
        a->vscounts = ip ? rc : sc;
        a->vsdispls = ip ? rd : sd;
        if (ip)
            slen = rlen;
    }
    a->vsend_bytes = slen * es;
    a->vrecv_bytes = rlen * es;
    wf_coll_buffer_bytes(a, &k->sb, &k->rb);
    uint64_t total = k->sb + k->rb + 64;
    k->base = malloc(total);
    memset(k->base, 0x5a, total);
    k->buf[WF_BUF_SEND] = k->base;
    k->buf[WF_BUF_RECV] = k->base + k->sb + 32;
    if (ip) { /* the layouts weft.h defines as in place */
        if (c->coll == WF_COLL_ALLGATHERV || c->coll == WF_COLL_GATHERV) {
            k->buf[WF_BUF_RECV] = k->base;
            k->buf[WF_BUF_SEND] = k->base + own * es;
        } else if (c->coll == WF_COLL_SCATTERV ||
                   c->coll == WF_COLL_REDUCE_SCATTERV) {
            k->buf[WF_BUF_RECV] = k->base + own * es;
        } else {
            k->buf[WF_BUF_RECV] = k->base;
        }
    }
    char *in = k->buf[WF_BUF_SEND];
    switch (c->coll) {
    case WF_COLL_ALLGATHERV: case WF_COLL_GATHERV:
        for (size_t i = 0; i < a->count; i++)
            vput(in, i, vval(r, r, i));
        break;
    case WF_COLL_SCATTERV:
        for (int p = 0; p < n && root; p++)
            for (size_t i = 0; i < rc[p]; i++)
                vput(in, rd[p] + i, vval(r, p, i));
        break;
    case WF_COLL_ALLTOALLV:
        for (int p = 0; p < n; p++)
            for (size_t i = 0; i < a->vscounts[p]; i++)
                vput(in, a->vsdispls[p] + i, vval(r, p, i));
        break;
    default:
        for (size_t j = 0; j < slen; j++)
            vput(in, j, vval(r, 0, j));
        break;
    }
}

/* What rank r must hold at element i of its receive buffer, or false
 * where nothing is defined (gaps, and the in-place input around a
 * block, which the plan must leave alone: checked as unchanged below). */
static bool vwant(const wf_sim_vcase_t *c, const srank_t *k, int r, size_t i,
                  int32_t *want)
{
    const size_t *rc = k->varrays, *rd = rc + c->size;
    if (c->coll == WF_COLL_SCATTERV) {
        *want = vval(c->root, r, i);
        return true;
    }
    if (c->coll == WF_COLL_REDUCE_SCATTERV) {
        size_t before = 0;
        for (int p = 0; p < r; p++)
            before += c->counts[p];
        int64_t acc = c->op == WEFT_MAX ? INT32_MIN : 0;
        for (int p = 0; p < c->size; p++) {
            int32_t v = vval(p, 0, before + i);
            acc = c->op == WEFT_MAX ? (v > acc ? v : acc) : acc + v;
        }
        *want = (int32_t)acc;
        return true;
    }
    for (int p = 0; p < c->size; p++) {
        if (i >= rd[p] && i < rd[p] + rc[p]) {
            size_t e = i - rd[p];
            *want = c->coll == WF_COLL_ALLTOALLV ? vval(p, r, e)
                                                 : vval(p, p, e);
            return true;
        }
    }
    return false;
}

bool wf_sim_check_vector(const wf_algo_t *algo, const wf_sim_vcase_t *c,
                         unsigned seed)
{
    sim_t s;
    srand(seed);
    memset(&s, 0, sizeof(s));
    s.size = c->size;
    s.held = -1;
    s.ranks = calloc((size_t)c->size, sizeof(srank_t));
    if (!sim_build(&s, algo, c->size, WEFT_INT32, c->op, setup_vrank, c))
        return false;
    run_ready(&s);
    for (int r = 0; r < c->size; r++)
        if (s.ranks[r].ndone != s.ranks[r].plan.nsteps)
            wf_test_fail(__FILE__, __LINE__, "%s/%s on %d ranks: deadlock, "
                         "rank %d did %u of %u steps", wf_coll_name(c->coll),
                         algo->name, c->size, r, s.ranks[r].ndone,
                         s.ranks[r].plan.nsteps);
    for (int r = 0; r < c->size; r++) {
        srank_t *k = &s.ranks[r];
        size_t wrong = 0, n = k->rb / sizeof(int32_t);
        for (size_t i = 0; i < n; i++) {
            int32_t want, got = vget(k->buf[WF_BUF_RECV], i);
            if (!vwant(c, k, r, i, &want)) {
                /* A gap: untouched (0x5a bytes), unless in place, where
                 * it is the rank's other input and may hold anything the
                 * caller put there; none of it may change. */
                if (k->args.in_place)
                    continue;
                want = 0x5a5a5a5a;
            }
            if (got != want && wrong++ < 3)
                fprintf(stderr, "rank %d element %zu is %d, expected %d\n",
                        r, i, got, want);
        }
        if (wrong)
            wf_test_fail(__FILE__, __LINE__, "%s/%s: rank %d of %d, %s, "
                         "seed %u: %zu wrong", wf_coll_name(c->coll),
                         algo->name, r, c->size,
                         k->args.in_place ? "in place" : "out of place",
                         seed, wrong);
    }
    sim_free(&s);
    return true;
}
