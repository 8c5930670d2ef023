/*
 * test_select_grid.c - how well automatic selection picks, as properties
 * over grids of world sizes and message sizes rather than one pinned
 * choice per cell, so that a recalibration of the cost model
 * (src/algo/cost.c, docs/algorithms.md) keeps them unless it picks worse:
 *
 *  - select_auto_takes_the_cheapest_estimate: everywhere, auto's pick
 *    supports the call and no algorithm that supports it has a lower
 *    estimate (factor 1: the rule of src/algo/select.c), and every such
 *    algorithm can be forced by name;
 *  - select_auto_near_the_simulators_best: between machines, where the
 *    estimates are the alpha-beta-gamma model the virtual-time simulator
 *    runs (src/algo/vsim.c), the simulated time of auto's pick is within
 *    SIM_NEAR of the fastest simulated algorithm in most cells and
 *    within SIM_FAR in every cell;
 *  - select_auto_near_the_measured_best: on one machine, where the
 *    constants are fitted to measured sweeps (bench/sweeps/), the measured
 *    time of auto's pick is within MEASURED_NEAR of the fastest measured
 *    algorithm in most cells of each sweep and within its `far` in every
 *    cell.
 *
 * The factors and shares are what the constants of 2026-12-01 meet with a
 * margin (each test prints its own numbers on failure); a recalibration
 * that moves a pick to an algorithm as good passes, one that picks worse
 * fails, naming the cells.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/vsim.h"
#include "common.h"
#include "test.h"

/* The collectives with a choice of algorithm. */
static const wf_coll_t choosing[] = {WF_COLL_ALLREDUCE, WF_COLL_BROADCAST,
                                     WF_COLL_REDUCE, WF_COLL_ALLGATHER,
                                     WF_COLL_REDUCE_SCATTER};

/* Where the ranks run: what the cost model is told about the machines. */
typedef struct {
    const char *name;
    bool one_host;          /* every rank on one machine */
    int cores;              /* that machine's cores (0: one per rank) */
    int link_mbps;          /* WEFT_LINK_MBPS, 0 unset */
    size_t single_copy_min; /* the transport's single copy, 0 off */
} placement_t;

static const placement_t placements[] = {
    {"separate machines", false, 0, 0, 0},
    {"separate machines, 1 Gbit/s", false, 0, 1000, 0},
    {"separate machines, 100 Gbit/s", false, 0, 100000, 0},
    {"one machine, 5 Gbit/s links", true, 2, 5000, 0},
    {"one machine, a core per rank", true, 0, 0, 0},
    {"one machine, 2 cores", true, 2, 0, 0},
    {"one machine, 2 cores, single copy", true, 2, 0, 64 << 10},
};

/* A float32 sum of `bytes` on n ranks as weft-bench sizes its rows: the
 * whole buffer for allgather and reduce-scatter. */
static wf_coll_args_t call_args(wf_coll_t coll, int n, size_t bytes,
                                const placement_t *pl)
{
    bool blocked = coll == WF_COLL_ALLGATHER || coll == WF_COLL_REDUCE_SCATTER;
    return (wf_coll_args_t){
        .coll = coll, .count = bytes / 4 / (blocked ? (size_t)n : 1),
        .dtype = WEFT_FLOAT32, .op = WEFT_SUM, .elem_size = 4, .peer = -1,
        .root = 0, .rank = 0, .size = n, .chunk_bytes = 256 << 10,
        .local_size = pl->one_host ? n : 1,
        .host_cores = pl->cores ? pl->cores : n, .link_mbps = pl->link_mbps,
        .single_copy_min = pl->single_copy_min};
}

static const wf_algo_t *auto_pick(const wf_coll_args_t *a)
{
    const wf_algo_t *algo = NULL;
    ASSERT_OK(wf_algo_select(a, "auto", &algo));
    ASSERT_TRUE(algo != NULL && algo->coll == a->coll);
    return algo;
}

WF_TEST(select_auto_takes_the_cheapest_estimate, 60)
{
    static const int ranks[] = {2, 3, 4, 5, 7, 8, 13, 16, 64, 1024};
    size_t nreg;
    const wf_algo_t *const *reg = wf_algo_registry(&nreg);
    int cells = 0, wrong = 0;
    for (size_t p = 0; p < WF_ARRAY_LEN(placements); p++)
        for (size_t c = 0; c < WF_ARRAY_LEN(choosing); c++)
            for (size_t k = 0; k < WF_ARRAY_LEN(ranks); k++)
                for (size_t bytes = 8; bytes <= (256u << 20); bytes *= 4) {
                    wf_coll_args_t a = call_args(choosing[c], ranks[k],
                                                 bytes, &placements[p]);
                    if (a.count == 0)
                        continue;
                    const wf_algo_t *pick = auto_pick(&a);
                    double est = pick->cost(&a), best = INFINITY;
                    const char *cheapest = "?";
                    ASSERT_TRUE(pick->supports(&a));
                    for (size_t i = 0; i < nreg; i++) {
                        const wf_algo_t *algo = reg[i];
                        if (algo->coll != a.coll || !algo->supports(&a))
                            continue;
                        /* Forced by name, it runs. */
                        char spec[64];
                        const wf_algo_t *forced = NULL;
                        snprintf(spec, sizeof(spec), "%s:%s",
                                 wf_coll_name(a.coll), algo->name);
                        ASSERT_OK(wf_algo_select(&a, spec, &forced));
                        ASSERT_TRUE(forced == algo);
                        if (algo->cost(&a) < best)
                            best = algo->cost(&a), cheapest = algo->name;
                    }
                    cells++;
                    if (!(est <= best) || isinf(est)) {
                        if (wrong++ < 10)
                            fprintf(stderr, "%s, %s of %zu B on %d ranks: "
                                    "auto takes %s (%.1f us), %s is "
                                    "estimated at %.1f us\n",
                                    placements[p].name,
                                    wf_coll_name(a.coll), bytes, ranks[k],
                                    pick->name, est, cheapest, best);
                    }
                }
    fprintf(stderr, "%d cells, %d where auto is not the cheapest estimate\n",
            cells, wrong);
    ASSERT_EQ(wrong, 0);
    ASSERT_TRUE(cells > 1500);
}

/* Between machines the simulator runs every rank's plan in virtual time
 * with the constants of the estimate (a send holds its sender's link for
 * bytes x beta and arrives alpha later; a reduction takes bytes x gamma of
 * its rank's CPU), so it judges the estimates by the plans themselves.
 * Where it and the estimates part most: Bruck's allgather on 3 ranks sends
 * both its blocks at once, which the simulator sees as one round and the
 * estimate counts as two, level with the ring's two (2.0x at 64 B). */
#define SIM_NEAR 1.10  /* most cells */
#define SIM_NEAR_SHARE 0.90
#define SIM_FAR 2.25   /* every cell */

WF_TEST(select_auto_near_the_simulators_best, 120)
{
    static const int ranks[] = {2, 3, 4, 5, 8, 13, 16, 32};
    size_t nreg;
    const wf_algo_t *const *reg = wf_algo_registry(&nreg);
    int cells = 0, near = 0, far = 0;
    double worst = 1;
    for (size_t p = 0; p < WF_ARRAY_LEN(placements); p++) {
        if (placements[p].one_host)
            continue; /* the CPUs' share: the simulator has no model of it */
        for (size_t c = 0; c < WF_ARRAY_LEN(choosing); c++)
            for (size_t k = 0; k < WF_ARRAY_LEN(ranks); k++)
                for (size_t bytes = 8; bytes <= (64u << 20); bytes *= 8) {
                    wf_coll_args_t a = call_args(choosing[c], ranks[k],
                                                 bytes, &placements[p]);
                    if (a.count == 0)
                        continue;
                    wf_cost_model_t m = wf_cost_model(&a);
                    wf_vsim_params_t prm = {
                        .alpha_us = m.alpha_us,
                        .beta_us_per_byte = m.beta_us_per_byte,
                        .gamma_us_per_byte = m.gamma_us_per_byte};
                    const wf_algo_t *pick = auto_pick(&a);
                    double t_pick = NAN, best = INFINITY;
                    const char *fastest = "?";
                    for (size_t i = 0; i < nreg; i++) {
                        const wf_algo_t *algo = reg[i];
                        wf_vsim_result_t r;
                        /* Those the model prices here: the linear ones
                         * only where ranks outnumber cores. */
                        if (algo->coll != a.coll || !algo->supports(&a) ||
                            isinf(algo->cost(&a)))
                            continue;
                        ASSERT_OK(wf_vsim_run(algo, &a, &prm, &r));
                        ASSERT_TRUE(!r.skipped);
                        if (r.time_us < best)
                            best = r.time_us, fastest = algo->name;
                        if (algo == pick)
                            t_pick = r.time_us;
                    }
                    ASSERT_TRUE(!isnan(t_pick));
                    double ratio = t_pick / best;
                    cells++;
                    near += ratio <= SIM_NEAR;
                    worst = ratio > worst ? ratio : worst;
                    if (ratio > SIM_FAR && far++ < 10)
                        fprintf(stderr, "%s, %s of %zu B on %d ranks: auto "
                                "takes %s, simulated %.1f us, %.2fx the "
                                "%.1f us of %s\n", placements[p].name,
                                wf_coll_name(a.coll), bytes, ranks[k],
                                pick->name, t_pick, ratio, best, fastest);
                }
    }
    fprintf(stderr, "%d cells: auto within %.2fx of the simulator's fastest "
            "in %d (%.0f%%, at least %.0f%% wanted), at worst %.2fx (%.2fx "
            "allowed)\n", cells, SIM_NEAR, near, 100.0 * near / cells,
            100 * SIM_NEAR_SHARE, worst, SIM_FAR);
    ASSERT_TRUE(cells > 800);
    ASSERT_EQ(far, 0);
    ASSERT_TRUE(near >= SIM_NEAR_SHARE * cells);
}

/* ---- measured sweeps ------------------------------------------------ */

/* On one machine the constants were fitted to sweeps of every algorithm
 * forced, each cell (world size, message size) measured in one job on the
 * project's 2-core build machine (bench/sweeps/README.md).  Auto's pick
 * with the constants now in the library is judged by the measured time of
 * that algorithm in the cell; docs/algorithms.md ("How well the constants
 * pick") counts the same.  Where they miss: algorithms within noise of
 * each other on small cells of 3 and 4 ranks sharing 2 cores, and the
 * tree's reduce on 8 ranks from 2 MiB, one call at a time. */
#define MEASURED_NEAR 1.10 /* most cells */

typedef struct {
    const char *path;
    wf_coll_t coll;
    size_t single_copy_min;
    double near_share; /* of the cells within MEASURED_NEAR */
    double far;        /* every cell within it */
} sweep_t;

/* The single copy's constants (fitted to written/) and the sockets'
 * (fitted to inputs read from the zero page, sockets-unpaced/, and
 * checked on written inputs, sockets-written/); the bounds leave room
 * above what the constants now meet (docs/algorithms.md, "How well the
 * constants pick", has the counts). */
static const sweep_t sweeps[] = {
    {"bench/sweeps/written/allreduce.md", WF_COLL_ALLREDUCE, 64 << 10, 0.95,
     1.5},
    {"bench/sweeps/written/broadcast.md", WF_COLL_BROADCAST, 64 << 10, 0.90,
     1.5},
    /* With the chain reduce, which written/reduce.md has not. */
    {"bench/sweeps/written-verify/reduce-ring.md", WF_COLL_REDUCE, 64 << 10,
     0.90, 1.5},
    {"bench/sweeps/written/allgather.md", WF_COLL_ALLGATHER, 64 << 10, 0.90,
     1.5},
    {"bench/sweeps/written/reducescatter.md", WF_COLL_REDUCE_SCATTER,
     64 << 10, 0.95, 1.5},
    {"bench/sweeps/sockets-written/allreduce.md", WF_COLL_ALLREDUCE, 0, 0.80,
     1.8},
    {"bench/sweeps/sockets-written/broadcast.md", WF_COLL_BROADCAST, 0, 0.70,
     1.8},
    {"bench/sweeps/sockets-written/reduce.md", WF_COLL_REDUCE, 0, 0.75, 1.8},
    {"bench/sweeps/sockets-written/allgather.md", WF_COLL_ALLGATHER, 0, 0.80,
     1.8},
    {"bench/sweeps/sockets-written/reducescatter.md", WF_COLL_REDUCE_SCATTER,
     0, 0.75, 1.8},
};

#define MAX_COLS 16

/* Splits a markdown table row "| a | b |" into its cells (in place). */
static int split_row(char *line, char **cells)
{
    int n = 0;
    char *p = strchr(line, '|');
    while (p && n < MAX_COLS) {
        char *end = strchr(p + 1, '|');
        if (!end)
            break;
        *end = '\0';
        char *s = p + 1;
        while (*s == ' ')
            s++;
        for (char *t = end - 1; t >= s && *t == ' '; t--)
            *t = '\0';
        cells[n++] = s;
        p = end;
    }
    return n;
}

/* Judges auto's picks against one sweep; adds to *cells, *near, *far. */
static void judge_sweep(const sweep_t *sw, int *cells, int *near, int *far,
                        double *worst)
{
    FILE *f = fopen(sw->path, "r");
    if (!f)
        wf_test_fail(__FILE__, __LINE__, "%s: cannot open (run from the "
                     "repository's top folder)", sw->path);
    char line[1024], *col[MAX_COLS], algo_names[MAX_COLS][32];
    int nalgos = 0, first = 2, rows = 0, sweep_near = 0, unmeasured = 0;
    double sweep_worst = 1;
    const placement_t one_host = {"one machine, 2 cores", true, 2, 0,
                                  sw->single_copy_min};
    while (fgets(line, sizeof(line), f)) {
        int n = split_row(line, col);
        if (n > 3 && strcmp(col[0], "ranks") == 0) {
            /* ranks | size (B) | algorithm... | auto | pick | ... */
            nalgos = 0;
            for (int i = first; i < n && strcmp(col[i], "auto") != 0; i++)
                snprintf(algo_names[nalgos++], sizeof(algo_names[0]), "%s",
                         col[i]);
            continue;
        }
        if (n < first + nalgos || !nalgos || !(col[0][0] >= '0' &&
                                               col[0][0] <= '9'))
            continue;
        int nranks = atoi(col[0]);
        size_t bytes = strtoull(col[1], NULL, 10);
        wf_coll_args_t a = call_args(sw->coll, nranks, bytes, &one_host);
        if (a.count == 0)
            continue;
        const wf_algo_t *pick = auto_pick(&a);
        double t_pick = NAN, best = INFINITY;
        const char *fastest = "?";
        for (int i = 0; i < nalgos; i++) {
            double t = atof(col[first + i]);
            if (t < best)
                best = t, fastest = algo_names[i];
            if (strcmp(algo_names[i], pick->name) == 0)
                t_pick = t;
        }
        if (isnan(t_pick)) { /* an algorithm newer than the sweep */
            unmeasured++;
            continue;
        }
        double ratio = t_pick / best;
        rows++;
        sweep_near += ratio <= MEASURED_NEAR;
        *worst = ratio > *worst ? ratio : *worst;
        sweep_worst = ratio > sweep_worst ? ratio : sweep_worst;
        if (ratio > sw->far && (*far)++ < 10)
            fprintf(stderr, "%s: %zu B on %d ranks: auto takes %s, measured "
                    "%.1f us, %.2fx the %.1f us of %s\n", sw->path, bytes,
                    nranks, pick->name, t_pick, ratio, best, fastest);
    }
    fclose(f);
    fprintf(stderr, "%s: auto within %.2fx of the fastest in %d of %d cells "
            "(at least %.0f%% wanted), at worst %.2fx (%.2fx allowed)%s",
            sw->path, MEASURED_NEAR, sweep_near, rows, 100 * sw->near_share,
            sweep_worst, sw->far, unmeasured ? "" : "\n");
    if (unmeasured)
        fprintf(stderr, "; %d more where it takes an algorithm the sweep "
                "did not measure\n", unmeasured);
    /* Two thirds of the cells judged, at least: a sweep that no longer
     * says how auto picks needs measuring again (sockets-written/reduce.md
     * predates the chain reduce, which auto takes in 12 of its 40). */
    ASSERT_TRUE(rows >= 25 && 2 * unmeasured <= rows);
    if (sweep_near < sw->near_share * rows)
        wf_test_fail(__FILE__, __LINE__, "%s: auto within %.2fx of the "
                     "fastest in %d of %d cells, under %.0f%%", sw->path,
                     MEASURED_NEAR, sweep_near, rows, 100 * sw->near_share);
    *cells += rows;
    *near += sweep_near;
}

WF_TEST(select_auto_near_the_measured_best, 60)
{
    int cells = 0, near = 0, far = 0;
    double worst = 1;
    for (size_t i = 0; i < WF_ARRAY_LEN(sweeps); i++)
        judge_sweep(&sweeps[i], &cells, &near, &far, &worst);
    fprintf(stderr, "%d measured cells: auto within %.2fx of the fastest in "
            "%d, at worst %.2fx\n", cells, MEASURED_NEAR, near, worst);
    ASSERT_EQ(far, 0);
}
