/*
 * remote.h - weftrun's ranks on other hosts: one ssh per host runs
 * `weftrun --agent` there, which starts that host's ranks and watches its
 * input.  The head writes the job's environment (rendezvous, token,
 * forwarded variables, the working directory) into that input, so the
 * token never appears on a command line, and keeps it open: when the head
 * stops (a failure elsewhere, Ctrl-C) or dies, the input ends and the
 * agent stops its ranks.
 */
#ifndef WEFT_REMOTE_H
#define WEFT_REMOTE_H

#include <stdbool.h>

#include "hostlist.h"
#include "spawn.h"

typedef struct {
    const char *port;     /* --ssh-port, or NULL */
    const char *identity; /* --ssh-identity-file, or NULL */
    char **options;       /* --ssh-option, each an ssh -o */
    int noptions;
    const char *weftrun;  /* weftrun's path, the same on every host */
    bool tag;             /* -l: the agent tags its ranks' lines */
} wr_ssh_t;

/* Starts the agent for host h (its ranks h->first .. + h->count of
 * `size`) running argv, and writes `env` ("KEY=VALUE", NULL-terminated)
 * into its input.  False with a message when ssh cannot be started. */
bool remote_start(spawn_child_t *c, const wr_host_t *h, int size,
                  char *const argv[], char *const env[], const wr_ssh_t *ssh,
                  const char *tool);

/* `weftrun --agent HOST FIRST COUNT SIZE TAG -- PROGRAM ARGS...`: reads
 * the environment from stdin, starts the ranks, relays their output and
 * returns the first failing rank's code (128+SIGTERM when its input ended
 * first). */
int remote_agent_main(int argc, char **argv);

#endif /* WEFT_REMOTE_H */
