/*
 * cost.h - the alpha-beta-gamma model every algorithm's cost() uses, with
 * its constants in one place (docs/algorithms.md, "The cost model" and
 * "How to recalibrate", says how they were measured and how to
 * re-calibrate).
 *
 *   time = alpha * (sequential message rounds)
 *        + beta  * (bytes a rank sends on its critical path)
 *        + gamma * (bytes a rank reduces on its critical path)
 *
 * and, when more ranks share a machine than it has cores (wf_cost_terms_eval),
 * at least the CPU work of all the messages sent on that machine spread
 * over its cores, and at least the work one rank must do alone.  Two sets
 * of constants: links between machines, and every rank on one machine,
 * where a link is a memory copy.
 */
#ifndef WF_COST_H
#define WF_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo.h"

typedef struct {
    const char *name;         /* for the log: which constants these are */
    double alpha_us;          /* per message round: latency + overheads */
    double beta_us_per_byte;  /* inverse bandwidth of one link */
    double gamma_us_per_byte; /* inverse reduction speed */
    double host_msg_us;       /* CPU time of one message, both ends, when
                               * ranks outnumber the cores */
    double host_us_per_byte;  /* CPU time of a byte sent, both ends, then */
    double path_share;        /* weight of the critical path while the
                               * CPUs are the bottleneck */
    double wake_us;           /* CPU time of a rank waking for a message
                               * that waited for a receive (the terms'
                               * `waits`), beyond host_msg_us */
} wf_cost_model_t;

/* Links between machines (calibrated on loopback with the links shared,
 * and on the shaped namespaces of make bench-netns). */
extern const wf_cost_model_t wf_cost_network;
/* Every rank on one machine: a "link" is the kernel copying memory
 * (calibrated on loopback TCP, docs/algorithms.md, "The cost model"). */
extern const wf_cost_model_t wf_cost_one_host;
/* Every rank on one machine with the transport's single copy: a large
 * message is read once by its receiver rather than copied through the
 * kernel's sockets (calibrated on the same sweeps with it). */
extern const wf_cost_model_t wf_cost_one_host_single_copy;

/* The network's constants, with beta from WEFT_LINK_MBPS when it is set. */
static inline wf_cost_model_t wf_cost_network_model(const wf_coll_args_t *a)
{
    wf_cost_model_t m = wf_cost_network;
    if (a->link_mbps > 0) {
        m.name = "WEFT_LINK_MBPS";
        m.beta_us_per_byte = 8.0 / (double)a->link_mbps; /* 8 bits/byte */
    }
    return m;
}

/* Whether every rank shares this machine and WEFT_LINK_MBPS does not say
 * what the links are: then a "link" is a CPU copying memory. */
static inline bool wf_cost_on_one_host(const wf_coll_args_t *a)
{
    return a->link_mbps <= 0 && a->size > 1 && a->local_size == a->size;
}

/* Whether every rank shares this machine and they outnumber its cores:
 * then the CPUs, not the links, are what the ranks wait for. */
static inline bool wf_cost_ranks_outnumber_cores(const wf_coll_args_t *a)
{
    return wf_cost_on_one_host(a) && a->host_cores > 0 &&
           a->local_size > a->host_cores;
}

/* The constants for this call: the one-host ones on one host (those of
 * the single copy when the transport uses it), else the network's. */
static inline wf_cost_model_t wf_cost_model(const wf_coll_args_t *a)
{
    if (!wf_cost_on_one_host(a))
        return wf_cost_network_model(a);
    return a->single_copy_min ? wf_cost_one_host_single_copy
                              : wf_cost_one_host;
}

static inline double wf_cost_with(const wf_cost_model_t *m, double rounds,
                                  double bytes_sent, double bytes_reduced)
{
    return rounds * m->alpha_us + bytes_sent * m->beta_us_per_byte +
           bytes_reduced * m->gamma_us_per_byte;
}

/* The path-only model, with the network's constants, of the collectives
 * that have a single algorithm (gather, scatter, alltoall, barrier,
 * send/recv): their cost is only logged, never compared. */
static inline double wf_cost(const wf_coll_args_t *a, double rounds,
                             double bytes_sent, double bytes_reduced)
{
    wf_cost_model_t m = wf_cost_network_model(a);
    return wf_cost_with(&m, rounds, bytes_sent, bytes_reduced);
}

/* What an algorithm does, for the model: its critical path (`rounds`,
 * and the bytes a rank sends and reduces on it) and the work of all ranks
 * together (`messages`, sent `bytes`, `reduced` bytes).  The algorithms of
 * every collective that has a choice describe themselves this way
 * (wf_algo_t.cost_terms), so that bench/cost fits the constants to a
 * sweep with the library's own terms. */
typedef struct wf_cost_terms {
    double rounds, path_sent, path_reduced;
    double messages, bytes, reduced;
    /* Of `messages`, those whose send waits for a receive of the same
     * call (forwarded ones): their receiver sleeps until the forwarder has
     * its data, where messages posted at once are read back to back.
     * Counted by every collective with a choice but allreduce, whose
     * algorithms leave it at 0 (not counted). */
    double waits;
    /* The work of one rank that no other rank can take over: the root of
     * a linear broadcast or reduce handles n - 1 messages (`own_messages`,
     * `own_bytes`) and reduces n - 1 vectors (`own_reduced`) itself.
     * Spread over the cores with everyone's work it looked cheap, and the
     * model took the linear reduce on 8 ranks at sizes where the tree was
     * faster; since no other rank can take this work over, it is a floor
     * on one core under the estimate (wf_cost_terms_eval).  Elsewhere 0:
     * the linear allreduce leaves them out too, since its constants were
     * fitted without them and with them gave up cells where it was the
     * fastest (docs/algorithms.md, "The cost model";
     * bench/results/2026-11-28-linear-reduce.md). */
    double own_messages, own_bytes, own_reduced;
} wf_cost_terms_t;

/* The critical path, or the CPU work of this machine's share of the work
 * of all ranks spread over the cores its ranks use, whichever is more.
 * The CPU work counts when the ranks on a machine outnumber its cores
 * (they wait for a CPU rather than for the network, and the algorithms
 * that do the least work in all win even with more rounds), and always
 * when every rank shares one machine, where every byte a rank sends is
 * also copied by the CPUs at both ends (docs/algorithms.md, "The cost
 * model"). */
static inline double wf_cost_terms_eval(const wf_coll_args_t *a,
                                        const wf_cost_terms_t *t)
{
    wf_cost_model_t m = wf_cost_model(a);
    double path_us = wf_cost_with(&m, t->rounds, t->path_sent,
                                  t->path_reduced);
    int local = a->local_size > 0 ? a->local_size : 1;
    int cores = a->host_cores > 0 ? a->host_cores : local;
    if (a->size <= 1 || (local <= cores && !wf_cost_on_one_host(a)))
        return path_us;
    double host = (t->messages * m.host_msg_us + t->waits * m.wake_us +
                   t->bytes * m.host_us_per_byte +
                   t->reduced * m.gamma_us_per_byte) *
                  ((double)local / a->size) / (local < cores ? local : cores);
    /* The critical path still costs something while the CPUs are the
     * bottleneck; it breaks ties between algorithms that do the same
     * work. */
    double est = host > path_us ? host + m.path_share * path_us
                                : path_us + m.path_share * host;
    /* One rank's own work runs on one core; a message's CPU time is
     * counted at both ends, half of it at this one. */
    double own = (t->own_messages * m.host_msg_us +
                  t->own_bytes * m.host_us_per_byte) / 2 +
                 t->own_reduced * m.gamma_us_per_byte;
    return own > est ? own : est;
}

/*
 * Bandwidth factor for the log-round algorithms (recursive doubling,
 * Bruck, recursive halving).  In the plain alpha-beta model they send the
 * same bytes as a ring in fewer rounds, so they would win at every size;
 * in practice they lose for large messages: each round talks to a farther
 * peer (no neighbour locality, more connections), and a round forwards
 * data only once the previous round's pieces have landed, so consecutive
 * rounds overlap less than the ring's chunk pipeline.  This factor on
 * their byte term puts the crossover with the ring in the hundreds of
 * kilobytes per rank on 8 ranks; calibrate it with the other constants.
 * The allgathers and reduce-scatters carry it in their terms everywhere;
 * the allreduces only between machines (wf_cost_far_bytes), since the
 * one-host constants were fitted to their terms without it.
 */
#define WF_COST_FAR_FACTOR 1.1

/* The terms of an algorithm, and how the network constants read them
 * differently from the one-host ones (NULL: no differently). */
typedef void (*wf_cost_terms_fn)(const wf_coll_args_t *, wf_cost_terms_t *);

/* The cost() of an algorithm that describes itself with `terms`; between
 * machines `between` (if any) amends them first.  The one-host constants
 * were fitted to the terms as they are, so amendments apply only where
 * the network constants do. */
static inline double wf_cost_of_terms_between(const wf_coll_args_t *a,
                                              wf_cost_terms_fn terms,
                                              wf_cost_terms_fn between)
{
    wf_cost_terms_t t;
    if (a->size <= 1)
        return 0;
    terms(a, &t);
    if (between && !wf_cost_on_one_host(a))
        between(a, &t);
    return wf_cost_terms_eval(a, &t);
}

/* The cost() of an algorithm that describes itself with `terms`. */
static inline double wf_cost_of_terms(const wf_coll_args_t *a,
                                      wf_cost_terms_fn terms)
{
    return wf_cost_of_terms_between(a, terms, NULL);
}

/* The terms of a reduction whose data moves as its mirror's does (the
 * reduce tree, chain and linear as the broadcast's, the ring
 * reduce-scatter as the ring allgather's), from the mirror's terms: every
 * byte sent is reduced once where it lands, on the critical path too. */
static inline void wf_cost_terms_reduce_sent(wf_cost_terms_t *t)
{
    t->path_reduced = t->path_sent;
    t->reduced = t->bytes;
}

/* Between machines a log-round allreduce's (rhd, rd) bytes cost
 * WF_COST_FAR_FACTOR more than a ring's.  On shaped links (make
 * bench-netns) the ring is ahead of rhd or level, under BBR and CUBIC
 * alike, but the plain model had them level and took rhd for its two
 * fewer rounds (bench/results/2026-11-27-shaped-links.md). */
static inline void wf_cost_far_bytes(const wf_coll_args_t *a,
                                     wf_cost_terms_t *t)
{
    (void)a;
    t->path_sent *= WF_COST_FAR_FACTOR;
}

/* ceil(x / y) for message counts; at least 1. */
static inline double wf_msgs(double bytes, double chunk)
{
    double n = chunk > 0 ? bytes / chunk : 1;
    double whole = (double)(uint64_t)n;
    n = whole < n ? whole + 1 : whole;
    return n < 1 ? 1 : n;
}

/* Messages that send `count` elements cut into `parts` near-equal pieces
 * (wf_algo_segment), each piece in chunks of `chunk` bytes; an empty
 * piece sends nothing. */
static inline double wf_msgs_pieces(size_t count, size_t elem_size,
                                    int parts, size_t chunk)
{
    size_t base = count / (size_t)parts, extra = count % (size_t)parts;
    double small = base ? wf_msgs((double)(base * elem_size), (double)chunk)
                        : 0;
    double large = wf_msgs((double)((base + 1) * elem_size), (double)chunk);
    return (double)((size_t)parts - extra) * small + (double)extra * large;
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
