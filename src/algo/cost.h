/*
 * cost.h - the alpha-beta-gamma model every algorithm's cost() uses, with
 * its constants in one place (docs/algorithms.md says how they were
 * measured and how to re-calibrate).
 *
 *   time = alpha * (sequential message rounds)
 *        + beta  * (bytes a rank sends on its critical path)
 *        + gamma * (bytes a rank reduces on its critical path)
 *
 * and, when more ranks share a machine than it has cores (wf_cost_host),
 * at least the CPU work of all the messages sent on that machine spread
 * over its cores.
 */
#ifndef WF_COST_H
#define WF_COST_H

#include <stdint.h>

#include "algo/algo.h"

typedef struct {
    double alpha_us;          /* per message round: latency + overheads */
    double beta_us_per_byte;  /* inverse bandwidth of one link */
    double gamma_us_per_byte; /* inverse reduction speed */
    double host_msg_us;       /* CPU time of one message, both ends, when
                               * ranks outnumber the cores */
    double host_us_per_byte;  /* CPU time of a byte sent, both ends, then */
} wf_cost_model_t;

/* Calibrated on loopback TCP (docs/algorithms.md). */
extern const wf_cost_model_t wf_cost_default;

static inline double wf_cost(double rounds, double bytes_sent,
                             double bytes_reduced)
{
    const wf_cost_model_t *m = &wf_cost_default;
    return rounds * m->alpha_us + bytes_sent * m->beta_us_per_byte +
           bytes_reduced * m->gamma_us_per_byte;
}

/* `path_us` (wf_cost of the critical path), or, when the ranks on this
 * machine outnumber its cores, mostly the CPU work of its share of all the
 * algorithm's `messages` and `bytes` (summed over every rank) on those
 * cores: then ranks wait for a CPU rather than for the network, and the
 * algorithms that do the least work in all win even with more rounds
 * (docs/algorithms.md). */
static inline double wf_cost_host(const wf_coll_args_t *a, double path_us,
                                  double messages, double bytes)
{
    const wf_cost_model_t *m = &wf_cost_default;
    int local = a->local_size > 0 ? a->local_size : 1;
    int cores = a->host_cores > 0 ? a->host_cores : local;
    if (local <= cores || a->size <= 1)
        return path_us;
    double host = (messages * m->host_msg_us + bytes * m->host_us_per_byte) *
                  ((double)local / a->size) / cores;
    /* The critical path still costs something while the CPUs are the
     * bottleneck (a quarter, measured); it breaks ties between algorithms
     * that do the same work. */
    return host > path_us ? host + 0.25 * path_us : path_us + 0.25 * host;
}

/* ceil(x / y) for message counts; at least 1. */
static inline double wf_msgs(double bytes, double chunk)
{
    double n = chunk > 0 ? bytes / chunk : 1;
    double whole = (double)(uint64_t)n;
    n = whole < n ? whole + 1 : whole;
    return n < 1 ? 1 : n;
}

/* ceil(log2(n)) for n >= 1. */
static inline int wf_ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

#endif /* WF_COST_H */
