/*
 * cost.h - the alpha-beta-gamma model every algorithm's cost() uses, with
 * its constants in one place (docs/algorithms.md says how they were
 * measured and how to re-calibrate).
 *
 *   time = alpha * (sequential message rounds)
 *        + beta  * (bytes a rank sends on its critical path)
 *        + gamma * (bytes a rank reduces on its critical path)
 */
#ifndef WF_COST_H
#define WF_COST_H

#include <stdint.h>

typedef struct {
    double alpha_us;          /* per message round: latency + overheads */
    double beta_us_per_byte;  /* inverse bandwidth of one link */
    double gamma_us_per_byte; /* inverse reduction speed */
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

/* ceil(log2(n)) for n >= 1. */
static inline int wf_ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

#endif /* WF_COST_H */
