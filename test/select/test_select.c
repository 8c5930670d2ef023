/*
 * test_select.c - choosing an algorithm (src/algo/select.c) with the cost
 * model (src/algo/cost.h): WEFT_ALGO overrides, which constants apply, and
 * what the model counts.
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

/* Every rank on one machine: links are memory copies (the one-host
 * constants), and the choice follows the measured sweep of
 * docs/algorithms.md.  Before those constants the network ones picked the
 * ring for 128 KiB on 3 ranks over 2 cores (168 us) where recursive
 * doubling took 113 us, and recursive doubling for 32 KiB on 4 ranks
 * (111 us) where the tree took 74 us.  Both now go to the linear
 * allreduce, which was faster still (docs/algorithms.md: 3 ranks at
 * 128 KiB 155-250 us against rd's 199-331; 4 ranks at 32 KiB 90-95 us
 * against the tree's 115-121). */
WF_TEST(select_one_host_follows_the_loopback_sweep, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 32 << 10,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "linear");
    a.size = a.local_size = 4, a.count = 8 << 10;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "linear");
    /* The same ranks on separate machines: no linear, and for 8 KiB
     * rounds cost more than bytes. */
    a.local_size = 1, a.count = 2 << 10;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "rd") == 0);
}

/* On one machine every byte sent is copied by the CPUs at both ends, so
 * the work of all ranks counts even with a core per rank: a 2 MiB reduce
 * on 2 ranks takes the binomial tree (one buffer moved) over
 * reduce-scatter + gather (1.5 buffers, a shorter critical path), which
 * the path-only model picked.  Over the sockets with written inputs
 * (weft-bench reduce -n 2 --sync --algos tree,rsg -c 1, two runs,
 * 2026-11-28) the tree took 489-494 us and rsg 2-4% more; read from the
 * zero page, bench/sweeps/reduce.md had 371 us against 788.  Between
 * machines the shorter path still wins. */
WF_TEST(select_one_host_counts_cpu_work_with_a_core_per_rank, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_REDUCE, .count = 512 << 10,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .size = 2,
                        .chunk_bytes = 256 << 10, .local_size = 2,
                        .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "tree");
    a.local_size = 1;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "rsg");
}

/* With the transport's single copy a large message is read once by its
 * receiver, and the one-host constants of that path apply.  Measured with
 * it and written inputs (bench/sweeps/written/): 128 MiB allgather on 8
 * ranks takes recursive doubling (139 ms) over the ring (151 ms) that the
 * sockets' constants pick.  A 128 MiB allreduce on 3 ranks only checks
 * which set applies: both take the ring, level there with the double
 * binary tree (90.5 and 92.5 ms; the dbtree's 1.3x lead in the sweeps
 * before came from inputs read from the kernel's zero page). */
WF_TEST(select_one_host_follows_the_single_copy, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 32 << 20,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "ring");
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "socket");
    a.single_copy_min = 64 << 10;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "single-copy");
    a = (wf_coll_args_t){.coll = WF_COLL_ALLGATHER, .count = 4 << 20,
                         .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 8,
                         .chunk_bytes = 256 << 10, .local_size = 8,
                         .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "ring");
    a.single_copy_min = 64 << 10;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "rd");
    /* Ranks on separate machines: the network's constants either way. */
    a.local_size = 1;
    ASSERT_STR_CONTAINS(wf_cost_model(&a).name, "network");
}

/* With the single copy the binomial broadcast's root posts every chunk at
 * once and its children read them back to back, where the chain and
 * scatter-allgather forward chunks whose receivers sleep and wake for
 * each (the model's `waits`): 16 MiB on 3 ranks took 2.6 and 3.6 ms with
 * the tree in two sweeps, 3.9 and 4.9 ms with scatter-allgather
 * (bench/sweeps/pulled/ and verify/).  The sockets' constants, which count
 * no waits, pick one of the forwarding algorithms (the chain or
 * scatter-allgather: over the sockets the two were within 1% at this size
 * in bench/sweeps/sockets-unpaced/). */
WF_TEST(select_one_host_broadcast_counts_forwarded_chunks, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .count = 4 << 20,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo == &wf_algo_bcast_ring || algo == &wf_algo_bcast_sag);
    a.single_copy_min = 64 << 10;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    /* On 3 ranks the linear broadcast is the tree's plan with the root's
     * two children served in the other order; the model takes it for its
     * one round per chunk (bench/sweeps/written/broadcast.md: 3.31 ms,
     * the tree 3.37). */
    ASSERT_TRUE(algo == &wf_algo_bcast_tree ||
                algo == &wf_algo_bcast_linear);
    /* The terms: no chunk of the tree waits on 3 ranks; all of the
     * chain's that leave the middle rank do. */
    wf_cost_terms_t tree, chain;
    wf_algo_bcast_tree.cost_terms(&a, &tree);
    wf_algo_bcast_ring.cost_terms(&a, &chain);
    ASSERT_TRUE(tree.waits == 0);
    ASSERT_TRUE(chain.waits == 64);
}

/* The same for allgather: on 3 ranks Bruck sends only each rank's own
 * block (one block per round), all posted at once, where the ring
 * forwards the block it received in step 0.  128 MiB took 35.0 and
 * 50.4 ms with Bruck in the two sweeps with the single copy, 49.3 and
 * 61.4 ms with the ring, which the model picked before it counted the
 * allgathers' waits (bench/sweeps/pulled/ and verify/). */
WF_TEST(select_one_host_allgather_counts_forwarded_blocks, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLGATHER, .count = 11184810,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 3,
                        .chunk_bytes = 256 << 10, .local_size = 3,
                        .host_cores = 2, .single_copy_min = 64 << 10};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "bruck");
    wf_cost_terms_t bruck, ring;
    wf_algo_allgather_bruck.cost_terms(&a, &bruck);
    wf_algo_allgather_ring.cost_terms(&a, &ring);
    ASSERT_TRUE(bruck.waits == 0);
    /* 3 ranks forward one block each, in 171 chunks of 256 KiB. */
    ASSERT_TRUE(ring.waits == 3 * 171);
}

/* WEFT_LINK_MBPS tells the model what the links are, even when the ranks
 * share a kernel (make bench-netns shapes namespaces to 1 Gbit/s): 64 KiB
 * on 4 ranks then needs a bandwidth-optimal algorithm, where the one-host
 * constants take a latency one (linear, on 4 ranks sharing 2 cores). */
WF_TEST(select_follows_link_mbps, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 16 << 10,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 4,
                        .chunk_bytes = 256 << 10, .local_size = 4,
                        .host_cores = 2};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "linear");
    a.link_mbps = 1000;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "rhd") == 0 ||
                strcmp(algo->name, "ring") == 0);
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

/* Auto picks `name` for the call `a` with each of `counts` elements. */
static void expect_picks(wf_coll_args_t a, const size_t *counts, size_t n,
                         const char *name)
{
    const wf_algo_t *algo = NULL;
    for (size_t i = 0; i < n; i++) {
        a.count = counts[i];
        ASSERT_OK(wf_algo_select(&a, "auto", &algo));
        ASSERT_STR_CONTAINS(algo->name, name);
    }
}

/* Over links between machines the ring's one steady flow per link was
 * ahead of rhd's rounds with changing peers, or level, from 1 to 16 MiB
 * (make bench-netns, 4 hosts at 1 Gbit/s: 95-96% of the link against
 * 89-95% under BBR), where the plain model had them level and took rhd
 * for its fewer rounds.  Tiny messages still go to the log-round
 * algorithms; one host keeps its fitted picks. */
WF_TEST(select_prefers_ring_on_shaped_links, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .chunk_bytes = 256 << 10,
                        .local_size = 4, .host_cores = 2, .link_mbps = 1000};
    const size_t counts[] = {256 << 10, 1 << 20, 4 << 20, 16 << 20};
    expect_picks(a, counts, sizeof counts / sizeof counts[0], "ring");
    a.count = 2;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "ring") != 0);
    /* The factor is for links between machines only. */
    a.count = 1 << 20;
    expect_one_host_cost_is_terms(&wf_algo_allreduce_rhd, a);
}

/* Four hosts on this machine's two cores, links shaped to 5 Gbit/s (make
 * bench-netns): at 64 KiB the chain broadcast reached 95% of the link and
 * the binomial tree 48%, the allreduces ring and rhd 93% and 89% and
 * recursive doubling 72%.  With the network constants of the first
 * calibration (alpha 25 us, 48 us of CPU a message) auto took the tree
 * and rd there. */
WF_TEST(select_bandwidth_algorithms_on_5gbit_links, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .count = 16 << 10,
                        .chunk_bytes = 256 << 10, .local_size = 4,
                        .host_cores = 2, .link_mbps = 5000};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "ring") == 0 ||
                strcmp(algo->name, "rhd") == 0);
    a.coll = WF_COLL_BROADCAST;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "ring") == 0);
}

/* The chain broadcast between machines pays a round per hop, not per
 * chunk: on 4 shaped hosts at 1 Gbit/s (make bench-netns) it reached
 * 92-98% of the link at 64 KiB, back to back or one call at a time, where
 * auto took scatter-allgather (42-66%), which the per-chunk rounds priced
 * 4% cheaper. */
WF_TEST(select_chain_broadcast_on_shaped_links, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .chunk_bytes = 256 << 10,
                        .local_size = 4, .host_cores = 2, .link_mbps = 1000};
    const size_t counts[] = {16 << 10, 64 << 10, 256 << 10, 1 << 20};
    expect_picks(a, counts, sizeof counts / sizeof counts[0], "ring");
    /* On one host the fitted terms count a round per chunk, as before
     * (4 MiB: 16 chunks, where a round per hop would count 3 rounds). */
    a.count = 1 << 20;
    expect_one_host_cost_is_terms(&wf_algo_bcast_ring, a);
}

/* More ranks on a machine than it has cores: the cost model counts the
 * CPU work of every message there, so the algorithms of 2(p-1) messages
 * beat recursive doubling (p log p) for short vectors, and of those the
 * linear allreduce, two rounds against the tree's 2 log2(p), as measured
 * on 8 ranks over 2 cores (docs/algorithms.md: 8 bytes 145-189 us, the
 * tree 222-269, rd 211-261); with a core per rank, or one rank per
 * machine, the fewer rounds of recursive doubling win as before. */
WF_TEST(select_counts_cpu_work_when_ranks_outnumber_cores, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 2,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .size = 8,
                        .chunk_bytes = 256 << 10};
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "rd");
    a.local_size = 8, a.host_cores = 8;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "rd");
    a.host_cores = 2;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "linear");
    /* Large vectors stay with the bandwidth-optimal algorithm. */
    a.count = 4 << 20;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "rd") != 0);
    ASSERT_TRUE(strcmp(algo->name, "linear") != 0);
}

/* The linear allreduce is priced only where the ranks of one machine
 * outnumber its cores, where it was measured fastest from 8 B to 128 KiB
 * (docs/algorithms.md).  Its plain terms took it on 2 ranks at 128 KiB,
 * where it took 85-96 us against rd's 54-55 (rank 0 receives, reduces and
 * sends back one after the other), and at 8 bytes on 1024 machines, where
 * rank 0 would handle 2046 messages in a row.  WEFT_ALGO still runs it
 * anywhere. */
WF_TEST(select_linear_where_ranks_outnumber_cores, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 4, .chunk_bytes = 256 << 10,
                        .local_size = 4, .host_cores = 2,
                        .single_copy_min = 64 << 10};
    const size_t counts[] = {2, 512, 8 << 10, 32 << 10};
    expect_picks(a, counts, sizeof counts / sizeof counts[0], "linear");
    /* Two ranks on two cores: rd. */
    a.size = a.local_size = 2, a.count = 32 << 10;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_STR_CONTAINS(algo->name, "rd");
    /* A core per rank. */
    a.size = a.local_size = 4, a.host_cores = 4, a.count = 2;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "linear") != 0);
    /* 1024 machines, 8 bytes. */
    a.size = 1024, a.local_size = 1, a.host_cores = 64;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(strcmp(algo->name, "linear") != 0);
    /* Forced, it runs where auto would not take it. */
    ASSERT_OK(wf_algo_select(&a, "allreduce:linear", &algo));
    ASSERT_STR_CONTAINS(algo->name, "linear");
}

/* The linear broadcast, priced as the linear allreduce: where the ranks
 * of one machine outnumber its cores, a tree's rounds each wait for a
 * forwarding rank to get a core.  In the sweep with written inputs and the
 * single copy (bench/sweeps/written/broadcast.md, 2 cores) it was the
 * fastest on 8 ranks at every size from 8 B to 256 MiB (1.35-1.77x ahead
 * of the tree up to 32 KiB, 1.03-1.19x from 256 KiB) and on 4 ranks from
 * 32 KiB.  With a core per rank, or between machines, the root's n - 1
 * sends in a row are its critical path, which the model does not count:
 * never there. */
WF_TEST(select_linear_broadcast_where_ranks_outnumber_cores, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .dtype = WEFT_FLOAT32,
                        .elem_size = 4, .size = 8, .chunk_bytes = 256 << 10,
                        .local_size = 8, .host_cores = 2,
                        .single_copy_min = 64 << 10};
    const size_t eight[] = {2, 8 << 10, 512 << 10, 16 << 20};
    expect_picks(a, eight, WF_ARRAY_LEN(eight), "linear");
    a.size = a.local_size = 4;
    const size_t four[] = {64 << 10, 4 << 20, 64 << 20};
    expect_picks(a, four, WF_ARRAY_LEN(four), "linear");
    /* A core per rank, or separate machines: never linear. */
    a.count = 2, a.local_size = 4, a.host_cores = 4;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo != &wf_algo_bcast_linear);
    ASSERT_TRUE(isinf(wf_algo_bcast_linear.cost(&a)));
    a.local_size = 1, a.host_cores = 2;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo != &wf_algo_bcast_linear);
    ASSERT_TRUE(isinf(wf_algo_bcast_linear.cost(&a)));
    /* Forced, it runs anywhere. */
    ASSERT_OK(wf_algo_select(&a, "broadcast:linear", &algo));
    ASSERT_TRUE(algo == &wf_algo_bcast_linear);
}

/* The single copy's one-host constants fitted to inputs read from memory
 * (bench/sweeps/written/): a large reduce on 2 ranks goes to
 * reduce-scatter + gather, which moves and reduces less than the tree;
 * on 3 ranks to the chain, whose path reduces the vector once where the
 * tree's root reduces it twice and whose work is the tree's, less than
 * rsg's.  Measured at 16 MiB: 2 ranks rsg 3.34-3.41 ms, the tree
 * 4.43-4.58 (the sweep the constants were fitted to, and
 * written-verify/); 3 ranks at 64 MiB (weft-bench reduce -n 3 --sync
 * --algos tree,rsg,ring, two jobs, 2026-11-29) the chain 30-38 ms, rsg
 * 42-44, the tree 51-57.  The constants fitted to inputs that were the
 * kernel's zero page took the tree there. */
WF_TEST(select_one_host_large_reduce_takes_rsg_or_the_chain, 10)
{
    wf_coll_args_t a = {.coll = WF_COLL_REDUCE, .dtype = WEFT_FLOAT32,
                        .op = WEFT_SUM, .elem_size = 4, .size = 2,
                        .chunk_bytes = 256 << 10, .local_size = 2,
                        .host_cores = 2, .single_copy_min = 64 << 10};
    const size_t large[] = {4 << 20, 32 << 20, 64 << 20};
    expect_picks(a, large, WF_ARRAY_LEN(large), "rsg");
    a.size = a.local_size = 3;
    expect_picks(a, large, WF_ARRAY_LEN(large), "ring");
    /* A small one, with 3 ranks on 2 cores, the linear reduce (the
     * next test). */
    const wf_algo_t *algo = NULL;
    a.count = 1024;
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo == &wf_algo_reduce_linear);
}

/* The linear reduce, priced as the other linear algorithms: where the
 * ranks of one machine outnumber its cores (bench/sweeps/written/ and
 * written-verify/reduce.md, 2 cores: 4 ranks at 8 B 17.8 and 26.9 us
 * against the tree's 22.2 and 30.3; 8 ranks at 32 KiB 112.5 and 121.9
 * against 126.5 and 133.8).  From 2 MiB its root, reducing every vector
 * alone, is the slowest (8 ranks at 2 MiB: 4.0-4.1 ms, the tree 3.4; 3
 * ranks at 128 MiB: 118-149 ms, rsg 72-77).  On 3 ranks the root's own
 * work, counted on one core, is what keeps auto from it: spread over the
 * cores with everyone's, it would be cheaper there than rsg. */
WF_TEST(select_linear_reduce_where_ranks_outnumber_cores, 10)
{
    const wf_algo_t *algo = NULL;
    wf_coll_args_t a = {.coll = WF_COLL_REDUCE, .dtype = WEFT_FLOAT32,
                        .op = WEFT_SUM, .elem_size = 4, .size = 8,
                        .chunk_bytes = 256 << 10, .local_size = 8,
                        .host_cores = 2, .single_copy_min = 64 << 10};
    const size_t small[] = {2, 1024, 8 << 10};
    expect_picks(a, small, WF_ARRAY_LEN(small), "linear");
    a.size = a.local_size = 4;
    expect_picks(a, small, WF_ARRAY_LEN(small), "linear");
    a.size = a.local_size = 8;
    a.count = 512 << 10; /* 2 MiB */
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo != &wf_algo_reduce_linear);
    a.size = a.local_size = 3;
    a.count = 32 << 20; /* 128 MiB */
    ASSERT_OK(wf_algo_select(&a, "auto", &algo));
    ASSERT_TRUE(algo != &wf_algo_reduce_linear);
    wf_cost_terms_t t;
    wf_algo_reduce_linear.cost_terms(&a, &t);
    double with_own = wf_cost_terms_eval(&a, &t);
    t.own_messages = t.own_bytes = t.own_reduced = 0;
    ASSERT_TRUE(wf_cost_terms_eval(&a, &t) < wf_algo_reduce_rsg.cost(&a));
    ASSERT_TRUE(with_own > wf_algo_reduce_rsg.cost(&a));
    ASSERT_TRUE(with_own > algo->cost(&a));
    /* A core per rank, or separate machines: never linear. */
    a.count = 2, a.host_cores = 8;
    ASSERT_TRUE(isinf(wf_algo_reduce_linear.cost(&a)));
    a.host_cores = 2, a.local_size = 1;
    ASSERT_TRUE(isinf(wf_algo_reduce_linear.cost(&a)));
    ASSERT_OK(wf_algo_select(&a, "reduce:linear", &algo));
    ASSERT_TRUE(algo == &wf_algo_reduce_linear);
}
