/*
 * cost.c - the constants of the cost model (see cost.h).
 */
#include "algo/cost.h"

/* Measured with scripts/algo-sweep.sh on loopback TCP, 2 cores
 * (docs/algorithms.md): a message round costs about 25 us since the
 * waiting caller drives the engine (a 2-rank 8-byte exchange: 19-23 us;
 * it was 50-100 us with a thread hand-off per round), a link moves about
 * 0.6 GB/s with 4 ranks sharing the cores, and a reduction streams about
 * 2 GB/s from memory.  The lower alpha also moves bandwidth-optimal
 * algorithms (rhd, ring) down to 64 KiB on 4 ranks, which is where a
 * 1 Gbit/s link (make bench-netns) needs them. */
const wf_cost_model_t wf_cost_default = {
    .alpha_us = 25.0,
    .beta_us_per_byte = 1.5 / 1000.0,  /* 0.67 GB/s */
    .gamma_us_per_byte = 0.5 / 1000.0, /* 2 GB/s */
};
