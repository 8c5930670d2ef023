/*
 * cost_terms.c - prints what the cost model knows of every algorithm of
 * a collective (wf_cost_terms_t) for given rank counts and sizes, and the
 * one-host constants, so that scripts/algo-fit.py fits the constants to a
 * measured sweep with the library's own terms rather than a copy of them.
 *
 *   cost-terms [--chunk BYTES] [--coll NAME] [--single-copy BYTES]
 *              RANKS BYTES [BYTES...]
 *
 * NAME is a collective as weft-bench names it (default allreduce); BYTES
 * is weft-bench's size: the whole buffer, for allgather and
 * reducescatter all ranks' blocks together.  --single-copy gives the
 * transport's single-copy threshold (WEFT_TCP_CMA_MIN; default 0, none),
 * which chooses the one-host constants printed.  The root is rank 0, as in
 * weft-bench.  Output, one line per algorithm and size (float32 sum):
 *   terms NAME RANKS BYTES rounds path_sent path_reduced messages bytes
 *         reduced waits own_messages own_bytes own_reduced
 * preceded by one line
 *   one_host alpha beta gamma host_msg host_byte path_share wake
 *   (us, us/byte)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"

/* The collective weft-bench calls `name`, or WF_COLL_MAX. */
static wf_coll_t coll_named(const char *name)
{
    for (int c = 1; c < WF_COLL_MAX; c++)
        if (strcmp(wf_coll_name((wf_coll_t)c), name) == 0)
            return (wf_coll_t)c;
    return WF_COLL_MAX;
}

int main(int argc, char **argv)
{
    size_t chunk = 256 << 10, single_copy = 0;
    wf_coll_t coll = WF_COLL_ALLREDUCE;
    int arg = 1;
    for (; argc - arg > 2 && strncmp(argv[arg], "--", 2) == 0; arg += 2) {
        if (strcmp(argv[arg], "--chunk") == 0)
            chunk = strtoull(argv[arg + 1], NULL, 0);
        else if (strcmp(argv[arg], "--coll") == 0)
            coll = coll_named(argv[arg + 1]);
        else if (strcmp(argv[arg], "--single-copy") == 0)
            single_copy = strtoull(argv[arg + 1], NULL, 0);
        else
            coll = WF_COLL_MAX;
    }
    if (argc - arg < 2 || chunk == 0 || coll == WF_COLL_MAX) {
        fprintf(stderr, "usage: cost-terms [--chunk BYTES] [--coll NAME] "
                "[--single-copy BYTES] RANKS BYTES...\n");
        return 2;
    }
    int ranks = atoi(argv[arg]);
    if (ranks < 2) {
        fprintf(stderr, "cost-terms: RANKS must be at least 2\n");
        return 2;
    }
    const wf_cost_model_t *m = single_copy ? &wf_cost_one_host_single_copy
                                           : &wf_cost_one_host;
    printf("one_host %.10g %.10g %.10g %.10g %.10g %.10g %.10g\n",
           m->alpha_us, m->beta_us_per_byte, m->gamma_us_per_byte,
           m->host_msg_us, m->host_us_per_byte, m->path_share, m->wake_us);
    size_t n;
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    for (int i = arg + 1; i < argc; i++) {
        size_t bytes = strtoull(argv[i], NULL, 0);
        bool blocked = coll == WF_COLL_ALLGATHER ||
                       coll == WF_COLL_REDUCE_SCATTER;
        wf_coll_args_t a = {.coll = coll,
                            .count = bytes / 4 / (blocked ? ranks : 1),
                            .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                            .elem_size = 4, .peer = -1, .size = ranks,
                            .chunk_bytes = chunk, .local_size = ranks,
                            .single_copy_min = single_copy};
        for (size_t k = 0; k < n; k++) {
            wf_cost_terms_t t;
            if (reg[k]->coll != coll || !reg[k]->cost_terms ||
                !reg[k]->supports(&a))
                continue;
            reg[k]->cost_terms(&a, &t);
            printf("terms %s %d %zu %.10g %.10g %.10g %.10g %.10g %.10g "
                   "%.10g %.10g %.10g %.10g\n", reg[k]->name, ranks, bytes,
                   t.rounds, t.path_sent, t.path_reduced, t.messages,
                   t.bytes, t.reduced, t.waits, t.own_messages, t.own_bytes,
                   t.own_reduced);
        }
    }
    return 0;
}
