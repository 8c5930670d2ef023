/*
 * cost.c - the constants of the cost model (see cost.h).
 */
#include "algo/cost.h"

/* Measured with scripts/algo-sweep.sh on loopback TCP, 2 cores
 * (docs/algorithms.md): a message round costs 50-100 us once the engine's
 * thread hand-offs are counted, a link moves about 0.6 GB/s with 2 ranks,
 * and a reduction streams about 2 GB/s from memory. */
const wf_cost_model_t wf_cost_default = {
    .alpha_us = 60.0,
    .beta_us_per_byte = 1.5 / 1000.0,  /* 0.67 GB/s */
    .gamma_us_per_byte = 0.5 / 1000.0, /* 2 GB/s */
};
