/*
 * test_plan_cache.c - built plans kept by call signature (algo/plan_cache):
 * the cache against plans built afresh, its eviction and references, and
 * collectives that reuse cached plans with other buffers, counts and
 * layouts, checked element by element.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "comm.h"
#include "algo/plan_cache.h"
#include "test.h"

static wf_coll_args_t allreduce_args(size_t count, int rank, int size)
{
    wf_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.coll = WF_COLL_ALLREDUCE;
    a.count = count;
    a.dtype = WEFT_FLOAT32;
    a.op = WEFT_SUM;
    a.elem_size = 4;
    a.peer = -1;
    a.root = -1;
    a.rank = rank;
    a.size = size;
    a.chunk_bytes = 4096;
    return a;
}

static bool same_bref(wf_bref_t x, wf_bref_t y)
{
    return x.buf == y.buf && x.off == y.off;
}

/* Field by field: a step's buffer references have padding that a copied
 * wf_bref_t value need not carry over alike, so memcmp could tell two
 * equal plans apart (it did once auto took the ring here). */
static bool same_step(const wf_step_t *x, const wf_step_t *y)
{
    bool same = x->kind == y->kind && x->peer == y->peer &&
                x->tag == y->tag && same_bref(x->dst, y->dst) &&
                same_bref(x->src, y->src) && same_bref(x->src2, y->src2) &&
                x->count == y->count;
    for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
        same = same && x->deps[d] == y->deps[d];
    return same;
}

/* The plan the algorithm builds for `a` without any cache. */
static void assert_same_as_fresh(const wf_built_plan_t *b,
                                 const wf_coll_args_t *a)
{
    wf_plan_t fresh;
    wf_plan_init(&fresh, a->dtype, a->op, a->elem_size, a->size);
    ASSERT_OK(b->algo->build(a, &fresh));
    ASSERT_EQ(fresh.nsteps, b->plan.nsteps);
    ASSERT_EQ(fresh.scratch_bytes, b->plan.scratch_bytes);
    for (uint32_t i = 0; i < fresh.nsteps; i++)
        ASSERT_TRUE(same_step(&fresh.steps[i], &b->plan.steps[i]));
    wf_plan_free(&fresh);
}

WF_TEST(coll_cached_plan_hits_are_the_plan_built_for_those_arguments, 30)
{
    wf_plan_cache_t cache;
    wf_plan_cache_init(&cache, 4);
    wf_coll_args_t a = allreduce_args(1000, 1, 3);
    wf_coll_args_t b = allreduce_args(1001, 1, 3);
    wf_built_plan_t *p1, *p2, *p3;
    ASSERT_OK(wf_plan_cache_get(&cache, &a, "auto", &p1));
    ASSERT_OK(wf_plan_cache_get(&cache, &a, "auto", &p2));
    ASSERT_OK(wf_plan_cache_get(&cache, &b, "auto", &p3));
    ASSERT_TRUE(p1 == p2);
    ASSERT_TRUE(p3 != p1);
    ASSERT_EQ(cache.hits, 1);
    ASSERT_EQ(cache.misses, 2);
    assert_same_as_fresh(p1, &a);
    assert_same_as_fresh(p3, &b);
    /* The index: every step's dependencies are counted. */
    for (uint32_t i = 0; i < p1->plan.nsteps; i++) {
        uint32_t deps = 0;
        for (int d = 0; d < WF_STEP_MAX_DEPS; d++)
            deps += p1->plan.steps[i].deps[d] != WF_NO_DEP;
        ASSERT_EQ(p1->deps.pending[i], deps);
    }
    /* Another rank's arguments are another plan. */
    wf_coll_args_t c = allreduce_args(1000, 2, 3);
    wf_built_plan_t *p4;
    ASSERT_OK(wf_plan_cache_get(&cache, &c, "auto", &p4));
    ASSERT_TRUE(p4 != p1);
    assert_same_as_fresh(p4, &c);
    wf_built_plan_release(p1);
    wf_built_plan_release(p2);
    wf_built_plan_release(p3);
    wf_built_plan_release(p4);
    wf_plan_cache_fini(&cache);
}

WF_TEST(coll_cached_plans_evict_the_least_recently_used, 30)
{
    wf_plan_cache_t cache;
    wf_plan_cache_init(&cache, 2);
    wf_coll_args_t a = allreduce_args(10, 0, 2), b = allreduce_args(20, 0, 2),
                   c = allreduce_args(30, 0, 2);
    wf_built_plan_t *pa, *pb, *pc, *again;
    ASSERT_OK(wf_plan_cache_get(&cache, &a, "auto", &pa));
    ASSERT_OK(wf_plan_cache_get(&cache, &b, "auto", &pb));
    ASSERT_OK(wf_plan_cache_get(&cache, &a, "auto", &again)); /* a used */
    wf_built_plan_release(again);
    ASSERT_OK(wf_plan_cache_get(&cache, &c, "auto", &pc)); /* evicts b */
    ASSERT_EQ(cache.misses, 3);
    ASSERT_OK(wf_plan_cache_get(&cache, &a, "auto", &again));
    ASSERT_TRUE(again == pa);
    wf_built_plan_release(again);
    ASSERT_EQ(cache.misses, 3);
    ASSERT_OK(wf_plan_cache_get(&cache, &b, "auto", &again));
    ASSERT_EQ(cache.misses, 4);
    ASSERT_TRUE(again != pb);
    wf_built_plan_release(again);
    /* The evicted plan lives while its holder runs it, and past the
     * cache itself. */
    wf_plan_cache_fini(&cache);
    assert_same_as_fresh(pb, &b);
    assert_same_as_fresh(pa, &a);
    wf_built_plan_release(pa);
    wf_built_plan_release(pb);
    wf_built_plan_release(pc);
}

WF_TEST(coll_cached_plans_off_or_large_build_every_call, 60)
{
    wf_plan_cache_t off;
    wf_plan_cache_init(&off, 0);
    wf_coll_args_t a = allreduce_args(100, 0, 2);
    wf_built_plan_t *p1, *p2;
    ASSERT_OK(wf_plan_cache_get(&off, &a, "auto", &p1));
    ASSERT_OK(wf_plan_cache_get(&off, &a, "auto", &p2));
    ASSERT_TRUE(p1 != p2);
    assert_same_as_fresh(p2, &a);
    wf_built_plan_release(p1);
    wf_built_plan_release(p2);
    wf_plan_cache_fini(&off);

    /* 64 MiB in 4 KiB chunks on 2 ranks: thousands of steps. */
    wf_plan_cache_t cache;
    wf_plan_cache_init(&cache, 4);
    wf_coll_args_t big = allreduce_args(16u << 20, 0, 2);
    ASSERT_OK(wf_plan_cache_get(&cache, &big, "ring", &p1));
    ASSERT_TRUE(p1->plan.nsteps > WF_PLAN_CACHE_MAX_STEPS);
    ASSERT_OK(wf_plan_cache_get(&cache, &big, "ring", &p2));
    ASSERT_TRUE(p1 != p2);
    ASSERT_EQ(cache.misses, 2);
    wf_built_plan_release(p1);
    wf_built_plan_release(p2);
    wf_plan_cache_fini(&cache);
}

WF_TEST(coll_cached_plans_keep_nothing_on_errors, 30)
{
    wf_plan_cache_t cache;
    wf_plan_cache_init(&cache, 4);
    wf_coll_args_t a = allreduce_args(100, 0, 2);
    wf_built_plan_t *p = NULL;
    ASSERT_STATUS(wf_plan_cache_get(&cache, &a, "allreduce:bruck", &p),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_TRUE(p == NULL);
    for (int i = 0; i < cache.cap; i++)
        ASSERT_TRUE(cache.entry[i] == NULL);
    wf_plan_cache_fini(&cache);
}

/* Collectives that run cached plans with other buffers each call: out of
 * place and in place alternately, counts that repeat in a shuffled
 * order, on fresh allocations, every result checked. */
typedef struct {
    const char *name;
    const char *config;
} reuse_arg_t;

static void reuse_rank(int rank, int size, void *p)
{
    const reuse_arg_t *ra = p;
    static const size_t counts[] = {1, 7, 1024, 1, 4099, 7, 1024, 0, 4099};
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(ra->name, rank, size, ra->config, &comm));
    for (int iter = 0; iter < 36; iter++) {
        size_t n = counts[(iter * 5) % (sizeof(counts) / sizeof(counts[0]))];
        weft_op_t op = iter % 3 == 0 ? WEFT_MAX : WEFT_SUM;
        bool inplace = iter % 2 == 1;
        float *send = malloc((n + 1) * sizeof(float));
        float *recv = malloc((n + 1) * sizeof(float));
        ASSERT_TRUE(send && recv);
        cu_fill(send, n, rank, op, WEFT_FLOAT32);
        if (inplace)
            memcpy(recv, send, n * sizeof(float));
        ASSERT_OK(weft_allreduce(inplace ? recv : send, recv, n,
                                 WEFT_FLOAT32, op, comm));
        ASSERT_EQ(cu_check_allreduce(recv, n, size, op, WEFT_FLOAT32,
                                     "cached plan"), 0);
        /* A rooted one too, its root moving. */
        int root = iter % size;
        cu_fill(send, n, rank, WEFT_SUM, WEFT_FLOAT32);
        ASSERT_OK(weft_broadcast(send, recv, n, WEFT_FLOAT32, root, comm));
        for (size_t i = 0; i < n; i++)
            ASSERT_TRUE(recv[i] == (float)cu_input(1 /* allreduce's */,
                                                   WEFT_SUM, WEFT_FLOAT32,
                                                   root, i));
        free(send);
        free(recv);
    }
    wf_comm_impl_t *c = comm->impl;
    if (strstr(ra->config, "WEFT_PLAN_CACHE=0")) {
        ASSERT_EQ(c->plans.hits, 0);
    } else {
        /* 36 calls of 5 counts (one is 0) x 2 layouts x 2 ops per
         * collective: most of them hit. */
        ASSERT_TRUE(c->plans.hits >= 36);
        ASSERT_TRUE(c->plans.misses <= 36);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_cached_plans_reused_with_other_buffers_and_layouts, 120)
{
    /* Small calls of one machine's ranks would take the shared segment,
     * which has no plans (src/node/). */
    reuse_arg_t on = {wf_test_unique("plan-cache-on"),
                      "WEFT_CHUNK_SIZE=4096,WEFT_TIMEOUT=60s,"
                      "WEFT_NODE_COLL_MAX=0"};
    wf_test_run_threads(3, reuse_rank, &on);
    reuse_arg_t off = {wf_test_unique("plan-cache-off"),
                       "WEFT_CHUNK_SIZE=4096,WEFT_TIMEOUT=60s,"
                       "WEFT_PLAN_CACHE=0,WEFT_NODE_COLL_MAX=0"};
    wf_test_run_threads(3, reuse_rank, &off);
}
