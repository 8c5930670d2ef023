/*
 * simulate.c - weft_simulate: predicts every applicable algorithm of a
 * collective with the virtual-time simulator and reports what
 * auto-selection would choose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "common.h"
#include "config.h"
#include "algo/cost.h"
#include "algo/vsim.h"
#include "plan/nodemap.h"

/* The equal-count collectives: a vector one's plan needs every rank's
 * counts, which a size in bytes does not give. */
static bool parse_coll(const char *name, wf_coll_t *coll)
{
    for (int c = 1; c < WF_COLL_MAX; c++)
        if (c != WF_COLL_SEND && c != WF_COLL_RECV &&
            !wf_coll_is_vector((wf_coll_t)c) &&
            strcmp(wf_coll_name((wf_coll_t)c), name) == 0)
            return *coll = (wf_coll_t)c, true;
    if (strcmp(name, "reduce_scatter") == 0)
        return *coll = WF_COLL_REDUCE_SCATTER, true;
    if (strcmp(name, "bcast") == 0)
        return *coll = WF_COLL_BROADCAST, true;
    return false;
}

/* nccl-tests' bus bandwidth factors. */
static double bus_factor(wf_coll_t coll, int n)
{
    switch (coll) {
    case WF_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case WF_COLL_ALLGATHER:
    case WF_COLL_REDUCE_SCATTER:
    case WF_COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

/* The per-call count for a `bytes`-byte float32 operation, the way
 * weft-bench sizes rows (blocked collectives: bytes is the whole buffer). */
static size_t count_for(wf_coll_t coll, size_t bytes, int n)
{
    bool blocked = coll == WF_COLL_ALLGATHER ||
                   coll == WF_COLL_REDUCE_SCATTER ||
                   coll == WF_COLL_ALLTOALL || coll == WF_COLL_GATHER ||
                   coll == WF_COLL_SCATTER;
    return bytes / 4 / (blocked ? (size_t)n : 1);
}

static void print_row(FILE *out, const wf_algo_t *a, const wf_vsim_result_t *r,
                      double estimate, size_t bytes, double factor)
{
    if (r->skipped) {
        fprintf(out, "%-14s %12s %10s %10s %14s %12.1f  %s (simulation "
                "skipped: about %llu plan steps)\n", a->name, "-", "-", "-",
                "-", estimate, a->node_aware ? "node-aware" : "flat",
                (unsigned long long)r->total_steps);
        return;
    }
    double busbw = r->time_us > 0 ? (double)bytes / r->time_us / 1e3 * factor
                                  : 0;
    fprintf(out, "%-14s %12.1f %10.3f %10llu %14llu %12.1f  %s\n", a->name,
            r->time_us, busbw, (unsigned long long)r->max_msgs,
            (unsigned long long)r->max_bytes, estimate,
            a->node_aware ? "node-aware" : "flat");
}

WEFT_API weft_status_t weft_simulate_nodes(const char *coll_name, int ranks,
                                           int ranks_per_node, size_t bytes,
                                           double alpha_us, double beta_gbs,
                                           double gamma_gbs, FILE *out)
{
    wf_coll_t coll;
    wf_config_t cfg;
    if (!coll_name || !out || !parse_coll(coll_name, &coll) || ranks < 1 ||
        ranks > 1 << 20 || ranks_per_node < 1 || ranks_per_node > ranks ||
        alpha_us < 0 || beta_gbs <= 0 || gamma_gbs <= 0) {
        WEFT_WARN(TOOL, "weft_simulate: bad arguments (collective %s, %d "
                  "ranks, %d per machine, alpha %g us, beta %g GB/s, gamma "
                  "%g GB/s)", coll_name ? coll_name : "(null)", ranks,
                  ranks_per_node, alpha_us, beta_gbs, gamma_gbs);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    /* Machines of ranks_per_node consecutive ranks (the last may have
     * fewer), as launchers place them by default. */
    wf_node_map_t map = {0};
    int *node_of = malloc((size_t)ranks * sizeof(int));
    if (!node_of)
        return WEFT_ERR_NO_MEMORY;
    for (int r = 0; r < ranks; r++)
        node_of[r] = r / ranks_per_node;
    weft_status_t st = wf_node_map_from_nodes(&map, ranks, node_of);
    free(node_of);
    WEFT_CHECK(st);
    wf_coll_args_t a = {.coll = coll, .count = count_for(coll, bytes, ranks),
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .peer = -1, .root = 0,
                        .size = ranks, .chunk_bytes = cfg.chunk_size,
                        /* The cost model a job with this environment
                         * would use. */
                        .link_mbps = (int)cfg.link_mbps,
                        .local_size = ranks_per_node,
                        .nodes = map.nodes > 1 ? &map : NULL};
    /* Inside a machine: the one-host model's memory copy. */
    wf_vsim_params_t p = {.alpha_us = alpha_us,
                          .beta_us_per_byte = 1e-3 / beta_gbs,
                          .gamma_us_per_byte = 1e-3 / gamma_gbs,
                          .intra_alpha_us = wf_cost_one_host.alpha_us,
                          .intra_beta_us_per_byte =
                              wf_cost_one_host.beta_us_per_byte};
    fprintf(out, "# %s of %zu bytes on %d ranks, %d per machine: alpha %g "
            "us, beta %g GB/s, gamma %g GB/s across machines; alpha %g us, "
            "beta %g GB/s inside; chunk %llu bytes\n", wf_coll_name(coll),
            bytes, ranks, ranks_per_node, alpha_us, beta_gbs, gamma_gbs,
            p.intra_alpha_us, 1e-3 / p.intra_beta_us_per_byte,
            (unsigned long long)cfg.chunk_size);
    fprintf(out, "%-14s %12s %10s %10s %14s %12s  %s\n", "# algorithm",
            "time(us)", "busbw", "msgs/rank", "bytes/rank", "model(us)",
            "kind");
    size_t n;
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    for (size_t i = 0; i < n && st == WEFT_OK; i++) {
        wf_vsim_result_t r;
        if (reg[i]->coll != coll || !reg[i]->supports(&a))
            continue;
        st = wf_vsim_run(reg[i], &a, &p, &r);
        if (st == WEFT_OK)
            print_row(out, reg[i], &r, reg[i]->cost(&a), bytes,
                      bus_factor(coll, ranks));
    }
    const wf_algo_t *pick = NULL;
    if (st == WEFT_OK)
        st = wf_algo_select(&a, "auto", &pick);
    if (st == WEFT_OK)
        fprintf(out, "# auto-selection (library cost model) picks: %s%s\n",
                pick->name, pick->node_aware ? " (node-aware)" : "");
    wf_node_map_free(&map);
    return st;
}

WEFT_API weft_status_t weft_simulate(const char *coll_name, int ranks,
                                     size_t bytes, double alpha_us,
                                     double beta_gbs, double gamma_gbs,
                                     FILE *out)
{
    return weft_simulate_nodes(coll_name, ranks, 1, bytes, alpha_us,
                               beta_gbs, gamma_gbs, out);
}
