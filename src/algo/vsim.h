/*
 * vsim.h - executing plans in virtual time, without payload or network:
 * the planning simulator behind weft_simulate / weft-info --simulate.
 *
 * Model: a send occupies the sender's link for bytes*beta and arrives
 * alpha + bytes*beta after it starts; a rank's sends are serialised on its
 * link; reduce/copy/avg steps take bytes*gamma on the rank's CPU, also
 * serialised; a receive completes when both it is ready and its message
 * has arrived.  Receivers' links are not modelled separately.  With
 * machines (the args' node map), a send to a rank of the same machine
 * takes the intra constants on the sender's own memory link, and a send
 * to another machine the network's on that machine's one NIC, which all
 * its ranks share.
 */
#ifndef WF_VSIM_H
#define WF_VSIM_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo.h"

typedef struct {
    double alpha_us;
    double beta_us_per_byte;
    double gamma_us_per_byte;
    uint64_t max_steps; /* budget over all ranks; 0 = default */
    /* Inside one machine (with a node map): a message's latency and
     * inverse bandwidth. */
    double intra_alpha_us;
    double intra_beta_us_per_byte;
} wf_vsim_params_t;

typedef struct {
    bool skipped;          /* over budget: nothing simulated */
    uint64_t total_steps;  /* planned (or estimated, when skipped) */
    double time_us;        /* when the last rank finished */
    uint64_t max_msgs;     /* most messages one rank sends */
    uint64_t max_bytes;    /* most bytes one rank sends */
    uint64_t total_msgs;   /* messages all ranks send */
    uint64_t upfront_msgs; /* of those, sent without waiting for any
                            * receive of the same call */
    uint64_t total_bytes;  /* bytes all ranks send */
} wf_vsim_result_t;

/* Runs `algo` for every rank of `tmpl` (rank is set per rank).  Fails with
 * WEFT_ERR_INTERNAL (and a message) on a deadlock or a receive whose
 * message differs in length. */
weft_status_t wf_vsim_run(const wf_algo_t *algo, const wf_coll_args_t *tmpl,
                          const wf_vsim_params_t *params,
                          wf_vsim_result_t *result);

#endif /* WF_VSIM_H */
