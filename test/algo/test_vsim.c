/*
 * test_vsim.c - the virtual-time simulator agrees with closed forms, and
 * weft_simulate / weft-info --simulate report every algorithm.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/cost.h"
#include "common.h"
#include "algo/vsim.h"
#include "plan/nodemap.h"
#include "test.h"

WF_TEST(algo_vsim_ring_allreduce_closed_form, 60)
{
    for (int n = 2; n <= 16; n *= 2) {
        size_t count = (size_t)n * 3000; /* divisible: exact segments */
        wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = count,
                            .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                            .elem_size = 4, .peer = -1, .size = n,
                            .chunk_bytes = 4096};
        wf_vsim_params_t p = {.alpha_us = 2, .beta_us_per_byte = 1e-3,
                              .gamma_us_per_byte = 0};
        wf_vsim_result_t r;
        ASSERT_OK(wf_vsim_run(&wf_algo_allreduce_ring, &a, &p, &r));
        ASSERT_TRUE(!r.skipped);
        uint64_t bytes = count * 4;
        /* Every rank sends 2(n-1)/n of the buffer. */
        ASSERT_EQ(r.max_bytes, 2 * (uint64_t)(n - 1) * bytes / (uint64_t)n);
        /* 2(n-1) steps of ceil(segment / chunk) messages each. */
        uint64_t seg = bytes / (uint64_t)n, chunks = (seg + 4095) / 4096;
        ASSERT_EQ(r.max_msgs, 2 * (uint64_t)(n - 1) * chunks);
        /* Bandwidth-bound: time is at least the bytes on one link and the
         * pipeline keeps it within 2 alphas per step of that. */
        double wire = (double)r.max_bytes * p.beta_us_per_byte;
        ASSERT_TRUE(r.time_us >= wire);
        ASSERT_TRUE(r.time_us <= wire + 2 * (n - 1) * (p.alpha_us + 4.1) * 2);
    }
}

WF_TEST(algo_vsim_skips_over_budget, 30)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLREDUCE, .count = 1u << 20,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .peer = -1,
                        .size = 4096, .chunk_bytes = 4096};
    wf_vsim_params_t p = {.alpha_us = 2, .beta_us_per_byte = 1e-3,
                          .gamma_us_per_byte = 1e-4, .max_steps = 1000};
    wf_vsim_result_t r;
    ASSERT_OK(wf_vsim_run(&wf_algo_allreduce_ring, &a, &p, &r));
    ASSERT_TRUE(r.skipped);
    ASSERT_TRUE(r.total_steps > 1000);
}

/* Machines: ranks of one machine share its one network link, and a
 * message inside a machine takes the intra constants.  An allgather ring
 * on 4 ranks placed alternately on 2 machines crosses machines at every
 * hop, so each machine's link carries two ranks' steps: twice the time of
 * a machine per rank.  Placed in pairs, half the hops stay inside and
 * each machine's link carries one rank's: the ring, as slow as its slowest
 * hop, takes what it takes on 4 machines. */
WF_TEST(algo_vsim_machines_share_a_link, 60)
{
    wf_coll_args_t a = {.coll = WF_COLL_ALLGATHER, .count = 1u << 16,
                        .dtype = WEFT_FLOAT32, .elem_size = 4, .peer = -1,
                        .size = 4, .chunk_bytes = 1u << 20};
    wf_vsim_params_t p = {.alpha_us = 0, .beta_us_per_byte = 1e-3,
                          .intra_alpha_us = 0,
                          .intra_beta_us_per_byte = 1e-4};
    wf_vsim_result_t apart, alternate, pairs;
    ASSERT_OK(wf_vsim_run(&wf_algo_allgather_ring, &a, &p, &apart));
    wf_node_map_t m;
    ASSERT_OK(wf_node_map_from_nodes(&m, 4, (const int[]){0, 1, 0, 1}));
    a.nodes = &m;
    ASSERT_OK(wf_vsim_run(&wf_algo_allgather_ring, &a, &p, &alternate));
    wf_node_map_free(&m);
    ASSERT_OK(wf_node_map_from_nodes(&m, 4, (const int[]){0, 0, 1, 1}));
    ASSERT_OK(wf_vsim_run(&wf_algo_allgather_ring, &a, &p, &pairs));
    wf_node_map_free(&m);
    printf("one machine per rank %.1f us, alternate %.1f us, pairs %.1f us\n",
           apart.time_us, alternate.time_us, pairs.time_us);
    ASSERT_TRUE(alternate.time_us > 1.9 * apart.time_us &&
                alternate.time_us < 2.1 * apart.time_us);
    ASSERT_TRUE(pairs.time_us > 0.95 * apart.time_us &&
                pairs.time_us < 1.05 * apart.time_us);
}

WF_TEST(algo_vsim_public_simulate, 60)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK(weft_simulate("allreduce", 8, 1 << 20, 2, 12.5, 10, f));
    ASSERT_STATUS(weft_simulate("nosuch", 8, 1, 2, 12.5, 10, f),
                  WEFT_ERR_INVALID_ARG);
    /* Per-rank counts are not a size: refused, not an empty table. */
    ASSERT_STATUS(weft_simulate("allgatherv", 8, 1 << 20, 2, 12.5, 10, f),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_simulate("allreduce", 0, 1, 2, 12.5, 10, f),
                  WEFT_ERR_INVALID_ARG);
    fclose(f);
    ASSERT_STR_CONTAINS(buf, "ring");
    ASSERT_STR_CONTAINS(buf, "auto-selection (library cost model) picks:");
    free(buf);
}

static char *simulate_text(const char *coll, int ranks, size_t bytes)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK(weft_simulate(coll, ranks, bytes, 2, 12.5, 10, f));
    fclose(f);
    return buf;
}

/* The line of `text` that starts with `prefix`, copied into buf ("" when
 * there is none). */
static const char *line_of(const char *text, const char *prefix, char *buf,
                           size_t len)
{
    buf[0] = '\0';
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (strncmp(l, prefix, strlen(prefix)) == 0) {
            snprintf(buf, len, "%.*s", (int)n, l);
            break;
        }
        l = nl ? nl + 1 : NULL;
    }
    return buf;
}

/* weft-info --simulate picks with the cost model a job in the same
 * environment would use, WEFT_LINK_MBPS included (16 KiB on 4 ranks, one
 * per machine: with 1 Gbit/s links scatter-allgather, whose critical path
 * sends 1.5 buffers, was the model's pick over the tree, whose root sends
 * the whole buffer twice, which the default constants took): its pick is
 * wf_algo_select's for that call and link speed, and its estimates
 * change with the speed. */
WF_TEST(algo_vsim_simulate_follows_link_mbps, 30)
{
    unsetenv("WEFT_LINK_MBPS");
    unsetenv("WEFT_CHUNK_SIZE");
    char *plain = simulate_text("broadcast", 4, 16 << 10);
    setenv("WEFT_LINK_MBPS", "1000", 1);
    char *gbit = simulate_text("broadcast", 4, 16 << 10);
    unsetenv("WEFT_LINK_MBPS");
    wf_coll_args_t a = {.coll = WF_COLL_BROADCAST, .count = 4096,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .peer = -1, .size = 4,
                        .chunk_bytes = 256 << 10};
    const char *texts[] = {plain, gbit};
    for (int i = 0; i < 2; i++) {
        const wf_algo_t *algo = NULL;
        char want[96];
        a.link_mbps = i ? 1000 : 0;
        ASSERT_OK(wf_algo_select(&a, "auto", &algo));
        snprintf(want, sizeof(want), "picks: %s\n", algo->name);
        ASSERT_STR_CONTAINS(texts[i], want);
    }
    char row_plain[256], row_gbit[256];
    ASSERT_TRUE(strcmp(line_of(plain, "tree ", row_plain, sizeof(row_plain)),
                       line_of(gbit, "tree ", row_gbit, sizeof(row_gbit))) !=
                0);
    ASSERT_TRUE(row_plain[0] != 0);
    free(plain);
    free(gbit);
}

/* The work the cost model counts for an algorithm (messages and bytes
 * sent by all ranks, cost.h wf_cost_terms_t) is what its real plans send,
 * run in the simulator: the one-host constants are fitted to these terms
 * (scripts/algo-fit.py), so a term that drifts from the plan would fit
 * nonsense.  Bytes agree exactly; messages within 15%, because the models
 * count the pieces that the chunk grid and the folds cut only roughly. */
WF_TEST(algo_vsim_cost_terms_match_the_plans, 240)
{
    const size_t sizes[] = {8, 4096, 1 << 20, (4 << 20) + 12};
    size_t nreg;
    const wf_algo_t *const *reg = wf_algo_registry(&nreg);
    int checked = 0, wrong = 0, described = 0;
    for (size_t i = 0; i < nreg; i++)
        described += reg[i]->cost_terms != NULL;
    for (int n = 2; n <= 8; n++) {
        for (size_t s = 0; s < WF_ARRAY_LEN(sizes); s++) {
            for (size_t i = 0; i < nreg; i++) {
                const wf_algo_t *algo = reg[i];
                if (!algo->cost_terms)
                    continue;
                wf_coll_args_t a = {.coll = algo->coll,
                                    .count = sizes[s] / 4,
                                    .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                                    .elem_size = 4, .peer = -1, .size = n,
                                    .root = n / 2,
                                    .chunk_bytes = 256 << 10};
                wf_vsim_params_t p = {.alpha_us = 1,
                                      .beta_us_per_byte = 1e-3,
                                      .gamma_us_per_byte = 1e-3};
                wf_cost_terms_t t;
                wf_vsim_result_t r;
                if (!algo->supports(&a))
                    continue;
                algo->cost_terms(&a, &t);
                ASSERT_OK(wf_vsim_run(algo, &a, &p, &r));
                ASSERT_TRUE(!r.skipped);
                double bytes = (double)r.total_bytes;
                double msgs = (double)r.total_msgs;
                /* All but the allreduces count the messages that wait
                 * for a receive; those leave `waits` at 0. */
                bool counts_waits = algo->coll != WF_COLL_ALLREDUCE;
                double waits = counts_waits
                                   ? msgs - (double)r.upfront_msgs
                                   : 0;
                if (fabs(t.bytes - bytes) > 0.5 ||
                    fabs(t.messages - msgs) > 0.15 * msgs ||
                    fabs(t.waits - waits) > 0.15 * msgs) {
                    fprintf(stderr, "%s %s, %d ranks, %zu B: model %.1f "
                            "msgs %.0f B %.1f waiting, plans %.0f msgs "
                            "%.0f B %.0f waiting\n",
                            wf_coll_name(algo->coll), algo->name, n,
                            sizes[s], t.messages, t.bytes, t.waits, msgs,
                            bytes, waits);
                    wrong++;
                }
                checked++;
            }
        }
    }
    ASSERT_EQ(wrong, 0);
    /* allreduce 6, broadcast 4, reduce 4, allgather 3, reducescatter 2 */
    ASSERT_EQ(described, 19);
    ASSERT_EQ(checked, 7 * 4 * described);
}

/* The closed forms of `waits` subtract the messages sent at once from
 * all messages: for any size and world, also far beyond what the
 * simulator test runs, they stay between 0 and the messages. */
WF_TEST(algo_cost_terms_waits_stay_within_the_messages, 30)
{
    const size_t sizes[] = {0, 4, 8, 4096, 65536, 1 << 20, (4 << 20) + 12,
                            256u << 20};
    size_t nreg;
    const wf_algo_t *const *reg = wf_algo_registry(&nreg);
    int wrong = 0, checked = 0;
    for (int n = 2; n <= 1024; n += n < 20 ? 1 : 37) {
        for (size_t s = 0; s < WF_ARRAY_LEN(sizes); s++) {
            for (size_t i = 0; i < nreg; i++) {
                const wf_algo_t *algo = reg[i];
                wf_coll_args_t a = {.coll = algo->coll,
                                    .count = sizes[s] / 4,
                                    .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                                    .elem_size = 4, .peer = -1, .size = n,
                                    .root = n / 3,
                                    .chunk_bytes = 256 << 10};
                wf_cost_terms_t t;
                if (!algo->cost_terms || !algo->supports(&a))
                    continue;
                algo->cost_terms(&a, &t);
                checked++;
                if (t.waits < 0 || t.waits > t.messages) {
                    fprintf(stderr, "%s %s, %d ranks, %zu B: %.1f of %.1f "
                            "messages wait\n", wf_coll_name(algo->coll),
                            algo->name, n, sizes[s], t.waits, t.messages);
                    wrong++;
                }
            }
        }
    }
    ASSERT_EQ(wrong, 0);
    ASSERT_TRUE(checked > 15 * 8 * 40);
}

/* Every algorithm's cost terms are finite and never negative from two
 * ranks on, and asking for one rank (which has nothing to model) does
 * not crash: bench/cost and the tests call them directly, without the
 * cost() wrapper's shortcut for one rank, and the reduce-scatter's rhd
 * divided by zero there. */
WF_TEST(algo_cost_terms_defined_for_every_size, 30)
{
    const size_t counts[] = {0, 1, 1000, 1 << 20};
    size_t nreg;
    const wf_algo_t *const *reg = wf_algo_registry(&nreg);
    for (int n = 1; n <= 9; n++) {
        for (size_t c = 0; c < WF_ARRAY_LEN(counts); c++) {
            for (size_t i = 0; i < nreg; i++) {
                const wf_algo_t *algo = reg[i];
                if (!algo->cost_terms)
                    continue;
                wf_coll_args_t a = {.coll = algo->coll, .count = counts[c],
                                    .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                                    .elem_size = 4, .peer = -1, .size = n,
                                    .root = 0, .chunk_bytes = 256 << 10};
                wf_cost_terms_t t;
                algo->cost_terms(&a, &t);
                if (n == 1)
                    continue;
                const double *v = (const double *)&t;
                for (size_t k = 0; k < sizeof(t) / sizeof(double); k++)
                    if (!(v[k] >= 0 && v[k] < 1e300))
                        wf_test_fail(__FILE__, __LINE__, "%s on %d ranks, "
                                     "count %zu: term %zu is %g", algo->name,
                                     n, counts[c], k, v[k]);
            }
        }
    }
}

