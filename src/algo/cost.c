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
    /* 4 and 8 ranks on the 2 cores: the tree's 2(p-1) messages take
     * 140 and 335 us at 8 bytes, recursive doubling's p log p 160 and
     * 700 us: about 48 us of CPU per message per core. */
    .host_msg_us = 48.0,
    /* And the tree's 14 x 256 KiB messages take 1.6 ms on 8 ranks: with
     * the per-message part, 0.7 us/KB per core. */
    .host_us_per_byte = 0.7 / 1000.0,
};
