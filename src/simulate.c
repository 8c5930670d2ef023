/*
 * simulate.c - weft_simulate: predicts every applicable algorithm of a
 * collective with the virtual-time simulator and reports what
 * auto-selection would choose.
 */
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "common.h"
#include "config.h"
#include "algo/vsim.h"

static bool parse_coll(const char *name, wf_coll_t *coll)
{
    for (int c = 1; c < WF_COLL_MAX; c++)
        if (c != WF_COLL_SEND && c != WF_COLL_RECV &&
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
        fprintf(out, "%-14s %12s %10s %10s %14s %12.1f  skipped: about %llu "
                "plan steps\n", a->name, "-", "-", "-", "-", estimate,
                (unsigned long long)r->total_steps);
        return;
    }
    double busbw = r->time_us > 0 ? (double)bytes / r->time_us / 1e3 * factor
                                  : 0;
    fprintf(out, "%-14s %12.1f %10.3f %10llu %14llu %12.1f\n", a->name,
            r->time_us, busbw, (unsigned long long)r->max_msgs,
            (unsigned long long)r->max_bytes, estimate);
}

WEFT_API weft_status_t weft_simulate(const char *coll_name, int ranks,
                                     size_t bytes, double alpha_us,
                                     double beta_gbs, double gamma_gbs,
                                     FILE *out)
{
    wf_coll_t coll;
    wf_config_t cfg;
    if (!coll_name || !out || !parse_coll(coll_name, &coll) || ranks < 1 ||
        ranks > 1 << 20 || alpha_us < 0 || beta_gbs <= 0 || gamma_gbs <= 0) {
        WEFT_WARN(TOOL, "weft_simulate: bad arguments (collective %s, %d "
                  "ranks, alpha %g us, beta %g GB/s, gamma %g GB/s)",
                  coll_name ? coll_name : "(null)", ranks, alpha_us,
                  beta_gbs, gamma_gbs);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    wf_coll_args_t a = {.coll = coll, .count = count_for(coll, bytes, ranks),
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .elem_size = 4, .peer = -1, .root = 0,
                        .size = ranks, .chunk_bytes = cfg.chunk_size,
                        /* The cost model a job with this environment
                         * would use. */
                        .link_mbps = (int)cfg.link_mbps};
    wf_vsim_params_t p = {alpha_us, 1e-3 / beta_gbs, 1e-3 / gamma_gbs, 0};
    fprintf(out, "# %s of %zu bytes on %d ranks: alpha %g us, beta %g GB/s, "
            "gamma %g GB/s, chunk %llu bytes\n", wf_coll_name(coll), bytes,
            ranks, alpha_us, beta_gbs, gamma_gbs,
            (unsigned long long)cfg.chunk_size);
    fprintf(out, "%-14s %12s %10s %10s %14s %12s\n", "# algorithm",
            "time(us)", "busbw", "msgs/rank", "bytes/rank", "model(us)");
    size_t n;
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    for (size_t i = 0; i < n; i++) {
        wf_vsim_result_t r;
        if (reg[i]->coll != coll || !reg[i]->supports(&a))
            continue;
        WEFT_CHECK(wf_vsim_run(reg[i], &a, &p, &r));
        print_row(out, reg[i], &r, reg[i]->cost(&a), bytes,
                  bus_factor(coll, ranks));
    }
    const wf_algo_t *pick;
    WEFT_CHECK(wf_algo_select(&a, "auto", &pick));
    fprintf(out, "# auto-selection (library cost model) picks: %s\n",
            pick->name);
    return WEFT_OK;
}
