/*
 * cost.c - the constants of the cost model (see cost.h).
 */
#include "algo/cost.h"

const wf_cost_model_t wf_cost_default = {
    .alpha_us = 20.0,
    .beta_us_per_byte = 1.0 / 1000.0,  /* 1 GB/s */
    .gamma_us_per_byte = 1.0 / 4000.0, /* 4 GB/s */
};
