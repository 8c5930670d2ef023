/*
 * spawn.h - starting N local ranks of a program (weftrun, weft-bench -n).
 * Uses only the public weft API (for the embedded rendezvous server) and
 * libc.
 */
#ifndef WEFT_SPAWN_H
#define WEFT_SPAWN_H

#include <stdbool.h>

typedef struct {
    int nranks;
    bool prefix_output; /* prefix each output line with "[rank] " */
    const char *tool;   /* name used in messages */
} spawn_opts_t;

/* Starts an embedded rendezvous server on 127.0.0.1, runs argv (argv[0]
 * looked up in PATH) as ranks 0..nranks-1 with WEFT_RANK, WEFT_WORLD_SIZE,
 * WEFT_RENDEZVOUS and WEFT_JOB_ID set, and waits for them.  When one rank
 * fails, the others are terminated.  Returns the first failing exit code
 * (128+signal for a signal), 0 when all succeeded. */
int spawn_ranks(char *const argv[], const spawn_opts_t *opts);

#endif /* WEFT_SPAWN_H */
