/*
 * test_select.c - choosing an algorithm (src/algo/select.c) with the cost
 * model (src/algo/cost.h): the rules that hold whatever the constants are
 * (WEFT_ALGO overrides, which constants apply, what the estimates count,
 * where the linear algorithms are priced).  How well auto picks is
 * test_select_grid.c's, as properties over grids: the cells these tests
 * pinned one pick each for before are cells of its sweeps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "common.h"
#include "test.h"

WF_TEST(select_weft_algo_override, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 10,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 4};
    const wf_algo_t *automatic = NULL;
    ASSERT_OK(wf_algo_select(&a, "auto", &automatic));
    ASSERT_TRUE(automatic->coll == WF_COLL_ALLREDUCE);
    ASSERT_OK(wf_algo_select(&a, "allreduce:ring", &algo));
    ASSERT_TRUE(strcmp(algo->name, "ring") == 0);
    ASSERT_OK(wf_algo_select(&a, "broadcast:tree,allreduce:ring", &algo));
    /* Named for the collective: refused.  Global: the cost model decides
     * (with a warning when no collective has that name). */
    ASSERT_STATUS(wf_algo_select(&a, "allreduce:nosuch", &algo),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_OK(wf_algo_select(&a, "nosuch", &algo));
    ASSERT_TRUE(algo == automatic);
    /* A global name applies where it exists: ring for allreduce. */
    ASSERT_OK(wf_algo_select(&a, "ring", &algo));
    ASSERT_TRUE(strcmp(algo->name, "ring") == 0);
    a.coll = WF_COLL_BROADCAST;
    ASSERT_STATUS(wf_algo_select(&a, "broadcast:nosuch", &algo),
                  WEFT_ERR_UNSUPPORTED);
}

/* The CPU work an estimate counts (cost.h, wf_cost_terms_eval): the work
 * of every message of the machine spread over the cores its ranks use. */
static double cpu_work(const wf_coll_args_t *a, const wf_cost_terms_t *t)
{
    wf_cost_model_t m = wf_cost_model(a);
    int local = a->local_size > 0 ? a->local_size : 1;
    int cores = a->host_cores > 0 ? a->host_cores : local;
    return (t->messages * m.host_msg_us + t->waits * m.wake_us +
            t->bytes * m.host_us_per_byte +
            t->reduced * m.gamma_us_per_byte) *
           ((double)local / a->size) / (local < cores ? local : cores);
}

/* The critical path alone. */
static double path_only(const wf_coll_args_t *a, const wf_cost_terms_t *t)
{
    wf_cost_model_t m = wf_cost_model(a);
    return wf_cost_with(&m, t->rounds, t->path_sent, t->path_reduced);
}

/* Whether `algo`'s estimate for `a` counts the CPU work of all ranks
 * (at least that work, and more than its path alone). */
static bool counts_cpu_work(const wf_algo_t *algo, const wf_coll_args_t *a)
{
    wf_cost_terms_t t;
    algo->cost_terms(a, &t);
    return algo->cost(a) >= cpu_work(a, &t) &&
           algo->cost(a) > path_only(a, &t);
}

/* On one machine every byte sent is copied by the CPUs at both ends, so
 * the work of all ranks counts even with a core per rank (counted, it
 * took the binomial reduce, which moves one buffer, on 2 ranks at 2 MiB
 * over reduce-scatter + gather, which moves 1.5 on a shorter path: the
 * tree took 489-494 us, rsg 2-4% more, weft-bench reduce -n 2 --sync,
 * 2026-11-28).  Between machines with a core per rank, the path alone. */
WF_TEST(select_one_host_counts_cpu_work_with_a_core_per_rank, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_REDUCE, .count = 512 << 10,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .size = 2,
                        .chunk_bytes = 256 << 10, .local_size = 2,
                        .host_cores = 2};
    const wf_algo_t *const algos[] = {&wf_algo_reduce_tree,
                                      &wf_algo_reduce_rsg};
    for (size_t i = 0; i < WF_ARRAY_LEN(algos); i++) {
        wf_cost_terms_t t;
        a.local_size = 2;
        ASSERT_TRUE(counts_cpu_work(algos[i], &a));
        a.local_size = 1;
        algos[i]->cost_terms(&a, &t);
        ASSERT_TRUE(algos[i]->cost(&a) == path_only(&a, &t));
    }
}

/* With the transport's single copy a large message is read once by its
 * receiver, and the one-host constants fitted with it apply
 * (bench/sweeps/written/); without it the sockets' (sockets-written/);
 * between machines the network's either way. */
WF_TEST(select_one_host_follows_the_single_copy, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 32 << 20,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2};
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "socket");
    double sockets = wf_algo_allreduce_ring.cost(&a);
    a.single_copy_min = 64 << 10;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "single-copy");
    ASSERT_TRUE(wf_algo_allreduce_ring.cost(&a) != sockets);
    /* Ranks on separate machines: the network's constants either way. */
    a.local_size = 1;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "network");
    a.single_copy_min = 0;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "network");
}

/* With the single copy the binomial broadcast's root posts every chunk at
 * once and its children read them back to back, where the chain forwards
 * chunks whose receivers sleep and wake for each (the model's `waits`,
 * priced by the single copy's wake_us: 16 MiB on 3 ranks took 2.6 and
 * 3.6 ms with the tree, 3.9 and 4.9 ms with scatter-allgather, in
 * bench/sweeps/pulled/ and verify/). */
WF_TEST(select_one_host_broadcast_counts_forwarded_chunks, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .count = 4 << 20,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2, .single_copy_min = 64 << 10};
    /* No chunk of the tree waits on 3 ranks; all of the chain's that
     * leave the middle rank do. */
    wf_cost_terms_t tree, chain;
    wf_algo_bcast_tree.cost_terms(&a, &tree);
    wf_algo_bcast_ring.cost_terms(&a, &chain);
    ASSERT_TRUE(tree.waits == 0);
    ASSERT_TRUE(chain.waits == 64);
    ASSERT_TRUE(wf_cost_model(&a).wake_us > 0);
}

/* The same for allgather: on 3 ranks Bruck sends only each rank's own
 * block (one block per round), all posted at once, where the ring
 * forwards the block it received in step 0 (128 MiB took 35.0 and 50.4 ms
 * with Bruck with the single copy, 49.3 and 61.4 ms with the ring, which
 * the model took before it counted the allgathers' waits). */
WF_TEST(select_one_host_allgather_counts_forwarded_blocks, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLGATHER, .count = 11184810,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2, .single_copy_min = 64 << 10};
    wf_cost_terms_t bruck, ring;
    wf_algo_allgather_bruck.cost_terms(&a, &bruck);
    wf_algo_allgather_ring.cost_terms(&a, &ring);
    ASSERT_TRUE(bruck.waits == 0);
    /* 3 ranks forward one block each, in 171 chunks of 256 KiB. */
    ASSERT_TRUE(ring.waits == 3 * 171);
}

/* WEFT_LINK_MBPS tells the model what the links are, even when the ranks
 * share a kernel (make bench-netns shapes namespaces to 1 Gbit/s): the
 * network's constants with beta from the link's speed, not the one-host
 * ones. */
WF_TEST(select_follows_link_mbps, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 16 << 10,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 4,
                        .chunk_bytes = 256 << 10, .local_size = 4,
                        .host_cores = 2};
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "one-host");
    a.link_mbps = 1000;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "WEFT_LINK_MBPS");
    ASSERT_TRUE(wf_cost_model(&a).beta_us_per_byte == 8.0 / 1000);
    double fast = wf_algo_allreduce_ring.cost(&a);
    a.link_mbps = 100;
    ASSERT_TRUE(wf_algo_allreduce_ring.cost(&a) > 5 * fast);
}

/* On one host `algo` costs its terms as they are: the one-host constants
 * were fitted to them, so no between-machines amendment may reach them. */
static void expect_one_host_cost_is_terms(const wf_algo_t *algo,
                                          wf_coll_args_t a)
{
    wf_cost_terms_t t;
    a.link_mbps = 0;
    algo->cost_terms(&a, &t);
    ASSERT_TRUE(algo->cost(&a) == wf_cost_terms_eval(&a, &t));
}

/* Between machines the log-round allreduces' bytes cost
 * WF_COST_FAR_FACTOR more (rounds with changing peers overlap less than
 * the ring's one steady flow per link: 95-96% of a 1 Gbit/s link against
 * rhd's 89-95% in make bench-netns); on one host their terms stand as
 * fitted. */
WF_TEST(select_log_round_bytes_weigh_more_between_machines, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .count = 1 << 20,
                        .chunk_bytes = 256 << 10, .local_size = 4,
                        .host_cores = 2, .link_mbps = 1000};
    const wf_algo_t *const far[] = {&wf_algo_allreduce_rhd,
                                    &wf_algo_allreduce_rd};
    for (size_t i = 0; i < WF_ARRAY_LEN(far); i++) {
        wf_cost_terms_t t;
        far[i]->cost_terms(&a, &t);
        ASSERT_TRUE(far[i]->cost(&a) > wf_cost_terms_eval(&a, &t));
        t.path_sent *= WF_COST_FAR_FACTOR;
        ASSERT_TRUE(far[i]->cost(&a) == wf_cost_terms_eval(&a, &t));
        expect_one_host_cost_is_terms(far[i], a);
    }
    /* The ring's bytes as they are, between machines too. */
    wf_cost_terms_t t;
    wf_algo_allreduce_ring.cost_terms(&a, &t);
    ASSERT_TRUE(wf_algo_allreduce_ring.cost(&a) == wf_cost_terms_eval(&a, &t));
}

/* The chain broadcast between machines pays a round per hop, not per
 * chunk (on 4 shaped hosts at 1 Gbit/s it reached 92-98% of the link at
 * 64 KiB, where auto took scatter-allgather, 42-66%, which the per-chunk
 * rounds priced 4% cheaper); on one host the fitted terms count a round
 * per chunk (4 MiB: 16 chunks). */
WF_TEST(select_chain_broadcast_rounds_per_hop_between_machines, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .count = 1 << 20,
                        .chunk_bytes = 256 << 10, .local_size = 4,
                        .host_cores = 2, .link_mbps = 1000};
    wf_cost_terms_t t;
    wf_algo_bcast_ring.cost_terms(&a, &t);
    ASSERT_TRUE(t.rounds >= 16);
    ASSERT_TRUE(wf_algo_bcast_ring.cost(&a) < wf_cost_terms_eval(&a, &t));
    expect_one_host_cost_is_terms(&wf_algo_bcast_ring, a);
}

/* More ranks on a machine than it has cores: the estimate counts the CPU
 * work of every message there (8 ranks over 2 cores, 8 bytes: the linear
 * allreduce's 2(p-1) messages beat recursive doubling's p log p;
 * docs/algorithms.md, "The cost model", and
 * bench/results/2026-11-27-linear-allreduce.md); with a core per rank on
 * separate machines, the path alone. */
WF_TEST(select_counts_cpu_work_when_ranks_outnumber_cores, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 2,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 8,
                        .chunk_bytes = 256 << 10};
    /* Those whose terms no between-machines amendment changes. */
    const wf_algo_t *const algos[] = {&wf_algo_allreduce_tree,
                                      &wf_algo_allreduce_dbtree,
                                      &wf_algo_allreduce_ring};
    for (size_t i = 0; i < WF_ARRAY_LEN(algos); i++) {
        wf_cost_terms_t t;
        a.local_size = 1, a.host_cores = 0, a.count = 2;
        algos[i]->cost_terms(&a, &t);
        ASSERT_TRUE(algos[i]->cost(&a) == path_only(&a, &t));
        a.local_size = 8, a.host_cores = 2; /* one machine, 2 cores */
        ASSERT_TRUE(counts_cpu_work(algos[i], &a));
        a.count = 4 << 20;
        ASSERT_TRUE(counts_cpu_work(algos[i], &a));
    }
    /* 16 ranks, 8 to a machine of 2 cores: each machine's share. */
    a.size = 16, a.local_size = 8, a.host_cores = 2, a.count = 2;
    ASSERT_TRUE(counts_cpu_work(&wf_algo_allreduce_tree, &a));
}

/* The linear algorithms (the root handles n - 1 messages in a row) are
 * priced only where the ranks of one machine outnumber its cores, where
 * they were measured fastest for small messages (docs/algorithms.md,
 * "The cost model"; bench/results/2026-11-27-linear-allreduce.md,
 * 2026-11-28-linear-broadcast-written-inputs.md and
 * 2026-11-28-linear-reduce.md):
 * elsewhere their estimate is infinite, so auto never takes them there,
 * while WEFT_ALGO still runs them anywhere. */
static void expect_linear_priced_only_where_ranks_outnumber_cores(
    const wf_algo_t *linear, wf_coll_args_t a)
{
    const wf_algo_t *algo = NULL;
    char forced[64];
    snprintf(forced, sizeof(forced), "%s:linear", wf_coll_name(a.coll));
    ASSERT_TRUE(linear->coll == a.coll);
    /* 4 and 8 ranks on 2 cores, 8 B to 64 MiB: priced. */
    for (int n = 4; n <= 8; n *= 2)
        for (size_t count = 2; count <= (16u << 20); count *= 16) {
            a.size = a.local_size = n, a.host_cores = 2, a.count = count;
            ASSERT_TRUE(isfinite(linear->cost(&a)));
        }
    a.count = 2;
    /* Two ranks on two cores, a core per rank, 1024 machines. */
    const int shapes[][3] = {{2, 2, 2}, {4, 4, 4}, {1024, 1, 64}};
    for (size_t i = 0; i < WF_ARRAY_LEN(shapes); i++) {
        a.size = shapes[i][0], a.local_size = shapes[i][1];
        a.host_cores = shapes[i][2];
        ASSERT_TRUE(isinf(linear->cost(&a)));
        ASSERT_OK(wf_algo_select(&a, "auto", &algo));
        ASSERT_TRUE(algo != linear);
        /* Forced, it runs where auto would not take it. */
        ASSERT_OK(wf_algo_select(&a, forced, &algo));
        ASSERT_TRUE(algo == linear);
    }
}

WF_TEST(select_linear_where_ranks_outnumber_cores, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .chunk_bytes = 256 << 10,
                        .single_copy_min = 64 << 10};
    expect_linear_priced_only_where_ranks_outnumber_cores(
        &wf_algo_allreduce_linear, a);
}

WF_TEST(select_linear_broadcast_where_ranks_outnumber_cores, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .chunk_bytes = 256 << 10,
                        .single_copy_min = 64 << 10};
    expect_linear_priced_only_where_ranks_outnumber_cores(
        &wf_algo_bcast_linear, a);
}

/* The linear reduce, priced where the others are, with a floor: its
 * root's own work (the `own_*` terms: n - 1 messages handled and n - 1
 * vectors reduced by one rank) runs on one core, whatever the spread of
 * everyone's work over the cores says.  Without it the model took the
 * linear reduce on 8 ranks at sizes where it was 2x slower than the tree
 * (3 ranks at 128 MiB: 118-149 ms, rsg 72-77). */
WF_TEST(select_linear_reduce_where_ranks_outnumber_cores, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_REDUCE, .dtype = WEFT_FLOAT32,
                        .op = WEFT_SUM, .elem_size = 4,
                        .chunk_bytes = 256 << 10,
                        .single_copy_min = 64 << 10};
    expect_linear_priced_only_where_ranks_outnumber_cores(
        &wf_algo_reduce_linear, a);
    wf_cost_model_t m;
    for (int n = 3; n <= 8; n += 5) {
        a.size = a.local_size = n, a.host_cores = 2, a.count = 32 << 20;
        m = wf_cost_model(&a);
        wf_cost_terms_t t;
        wf_algo_reduce_linear.cost_terms(&a, &t);
        double own = (t.own_messages * m.host_msg_us +
                      t.own_bytes * m.host_us_per_byte) / 2 +
                     t.own_reduced * m.gamma_us_per_byte;
        ASSERT_TRUE(t.own_messages >= n - 1);
        ASSERT_TRUE(t.own_reduced == (n - 1) * 4.0 * a.count);
        ASSERT_TRUE(wf_algo_reduce_linear.cost(&a) >= own);
        double with_own = wf_cost_terms_eval(&a, &t);
        t.own_messages = t.own_bytes = t.own_reduced = 0;
        ASSERT_TRUE(with_own >= wf_cost_terms_eval(&a, &t));
    }
    /* 3 ranks at 128 MiB: the floor is what the estimate is. */
    a.size = a.local_size = 3;
    wf_cost_terms_t t;
    wf_algo_reduce_linear.cost_terms(&a, &t);
    double with_own = wf_cost_terms_eval(&a, &t);
    t.own_messages = t.own_bytes = t.own_reduced = 0;
    ASSERT_TRUE(with_own > wf_cost_terms_eval(&a, &t));
}
