/*
 * cost.c - the constants of the cost model (see cost.h).
 */
#include "algo/cost.h"

/* Links between machines.  Alpha and a message's CPU time are measured on
 * the shaped namespaces of make bench-netns; beta, gamma and a byte's CPU
 * time are the first loopback calibration, not checked on a real network
 * (docs/algorithms.md, "The cost model";
 * bench/results/2026-11-28-netns-5gbit-constants.md).  The first alpha
 * and message time, taken on loopback before the waiting caller drove
 * the engine, made rounds and messages so dear that at 64 KiB the model
 * preferred the binomial tree and recursive doubling to the chain
 * broadcast and the ring, which were the faster on shaped links.  A link
 * moves about 0.67 GB/s (5.4 Gbit/s) and a reduction streams about 2 GB/s
 * unless told; WEFT_LINK_MBPS replaces beta where the links are known (a
 * 1 Gbit/s network: 8 us/KB). */
const wf_cost_model_t wf_cost_network = {
    .name = "network",
    .alpha_us = 12.5,
    .beta_us_per_byte = 1.5 / 1000.0,  /* 0.67 GB/s */
    .gamma_us_per_byte = 0.5 / 1000.0, /* 2 GB/s */
    .host_msg_us = 13.5,
    .host_us_per_byte = 0.7 / 1000.0,
    .path_share = 0.25,
};

/* Every rank on one machine, every byte through the sockets.  Fitted with
 * make algo-fit to the sweeps of every collective with a choice over
 * loopback TCP (bench/sweeps/sockets-unpaced/: 2, 3, 4 and 8 ranks on
 * 2 cores, 8 B to 256 MiB, taken once the streams stopped being paced),
 * gamma held at the float32 sum kernel's speed (make bench-reduce);
 * docs/algorithms.md says how ("How to recalibrate") and where the picks
 * miss ("How well the constants pick").  Beta, what one pair's copy adds
 * to the critical path on top of the CPUs' work, is small: on one machine
 * the bytes cost CPU, not wire. */
const wf_cost_model_t wf_cost_one_host = {
    .name = "one-host socket",
    .alpha_us = 7.5,
    .beta_us_per_byte = 0.027 / 1000.0, /* 37 GB/s */
    .gamma_us_per_byte = 0.2 / 1000.0,  /* 5 GB/s */
    .host_msg_us = 13.5,
    .host_us_per_byte = 0.192 / 1000.0,
    .path_share = 0.056,
};

/* Every rank on one machine with the single copy (WEFT_TCP_CMA_MIN, the
 * default).  Fitted the same way to the sweeps taken with it and with
 * inputs written (bench/sweeps/written/, checked on written-verify/): the
 * earlier fit, to sweeps whose inputs were the kernel's zero page, found
 * large reductions cheap to read and took the binomial reduce on 2 and 3
 * ranks where reduce-scatter + gather was faster
 * (bench/results/2026-11-28-constants-on-written-inputs.md).  A byte sent
 * costs the CPUs one read by its receiver, where the sockets cost two
 * copies and TCP, and what a byte adds to the critical path beyond that
 * work is small: the receivers of one sender read from it at once, so
 * the algorithm that does the least work with the fewest messages
 * wins. */
const wf_cost_model_t wf_cost_one_host_single_copy = {
    .name = "one-host single-copy",
    .alpha_us = 11.0,
    .beta_us_per_byte = 0.012 / 1000.0,
    .gamma_us_per_byte = 0.2 / 1000.0,  /* 5 GB/s */
    .host_msg_us = 13.2,
    .host_us_per_byte = 0.102 / 1000.0,
    .path_share = 0.029,
    /* A message forwarded after a receive costs its receiver a sleep and
     * a wake-up, where chunks posted at once are read back to back: a
     * rank inside the chain broadcast forwards every chunk, where the
     * tree's root posts them all at the start (docs/algorithms.md, "The
     * cost model"; bench/results/2026-11-24-one-host-constants.md).
     * Fitted with the waits of every collective with a choice but
     * allreduce counted. */
    .wake_us = 32.6,
};
