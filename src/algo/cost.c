/*
 * cost.c - the constants of the cost model (see cost.h).
 */
#include "algo/cost.h"

/* Links between machines.  Alpha and the CPU work of a message from make
 * bench-netns (4 namespaced hosts on this machine's 2 cores, links shaped
 * to 1 and 5 Gbit/s): an 8-byte allreduce took 8-14 us a round (rd 28 us
 * for its 2 rounds, the ring 52 us for 6), and a message's CPU time is
 * the one-host sockets' fitted 13.5 us.  The first constants (alpha 25 us,
 * 48 us a message), from loopback before the waiting caller drove the
 * engine, priced the chain broadcast and the ring at 64 KiB at 5 Gbit/s
 * above the binomial tree and recursive doubling, which reached 48% and
 * 72% of the link where the chain and the ring reached 95% and 93%
 * (docs/performance.md, "5 Gbit/s"). A link moves about 0.67 GB/s
 * (5.4 Gbit/s) and a reduction streams about 2 GB/s unless told;
 * WEFT_LINK_MBPS replaces beta where the links are known (a 1 Gbit/s
 * network: 8 us/KB). */
const wf_cost_model_t wf_cost_network = {
    .name = "network",
    .alpha_us = 12.5,
    .beta_us_per_byte = 1.5 / 1000.0,  /* 0.67 GB/s */
    .gamma_us_per_byte = 0.5 / 1000.0, /* 2 GB/s */
    .host_msg_us = 13.5,
    .host_us_per_byte = 0.7 / 1000.0,
    .path_share = 0.25,
};

/* Every rank on one machine, every byte through the sockets.  Fitted
 * (make algo-fit) to the sweeps of every collective with a choice over
 * loopback TCP (bench/sweeps/sockets-unpaced/: 2, 3, 4 and 8 ranks on
 * 2 cores, 8 B to 256 MiB, taken once the streams stopped being paced;
 * the fit and its misses are in docs/algorithms.md): a round costs about
 * 7.5 us; the CPUs copy a byte sent for about 0.19 ns (5.2 GB/s, both ends
 * together) and handle a message for 13.5 us; the float32 sum kernel
 * streams 5 GB/s of output (make bench-reduce).  Beta, what one pair's
 * copy adds to the critical path on top of that CPU work, is small: on
 * one machine the bytes cost CPU, not wire. */
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
 * inputs written (bench/sweeps/written/, checked on written-verify/; the
 * first fit, to sweeps whose inputs were the kernel's zero page, took the
 * binomial reduce on 2 and 3 ranks where reduce-scatter + gather was
 * 1.26-1.41x faster): a message and a round cost 11-13 us, a byte sent
 * costs the CPUs 0.1 ns (one read by the receiver) where the sockets'
 * two copies and TCP cost 0.19, and what a byte adds to the critical path
 * beyond that work is small: the receivers of one sender read from it at
 * once, so the algorithm that does the least work with the fewest
 * messages wins. */
const wf_cost_model_t wf_cost_one_host_single_copy = {
    .name = "one-host single-copy",
    .alpha_us = 11.0,
    .beta_us_per_byte = 0.012 / 1000.0,
    .gamma_us_per_byte = 0.2 / 1000.0,  /* 5 GB/s */
    .host_msg_us = 13.2,
    .host_us_per_byte = 0.102 / 1000.0,
    .path_share = 0.029,
    /* A message forwarded after a receive wakes its receiver: the chain
     * broadcast on 3 ranks took 2 ms more CPU per 16 MiB call than the
     * tree, whose root posts everything at once (64 forwarded chunks, 186
     * more context switches; docs/algorithms.md).  Fitted with the waits
     * of every collective with a choice but allreduce counted. */
    .wake_us = 32.6,
};
