/*
 * spawn.h - starting ranks and watching them (weftrun, weft-bench -n).
 * Uses only the public weft API (for the embedded rendezvous server) and
 * libc.
 *
 * A job is a list of children: ranks started here, each in its own
 * process group, and, for weftrun across hosts, the ssh clients that run
 * weftrun's agent on the other hosts (remote.c).  The first child to fail
 * (or a stop signal, or the end of the watched input) stops them all:
 * ranks get SIGTERM and SIGKILL 3 s later, agents the end of their input
 * (they stop their own ranks) and then the same signals.
 */
#ifndef WEFT_SPAWN_H
#define WEFT_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
    int nranks;
    bool prefix_output; /* prefix each output line with "[rank] " */
    const char *tool;   /* name used in messages */
} spawn_opts_t;

/* Starts an embedded rendezvous server on 127.0.0.1, runs argv (argv[0]
 * looked up in PATH) as ranks 0..nranks-1 with WEFT_RANK,
 * WEFT_WORLD_SIZE, WEFT_RENDEZVOUS and WEFT_JOB_ID set, and torch's
 * RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
 * MASTER_PORT, and waits for them.  When one rank fails, the others are
 * terminated.  Returns the first failing exit code (128+signal for a
 * signal), 0 when all succeeded. */
int spawn_ranks(char *const argv[], const spawn_opts_t *opts);

/* ---- the pieces, for weftrun across hosts --------------------------------- */

typedef struct {
    pid_t pid;
    int out_fd;      /* read end of its tagged output, or -1 */
    int in_fd;       /* an agent's input (write end), or -1 */
    int rank;        /* a rank: its global rank; an agent: -1 */
    const char *host; /* an agent's host, for messages */
    char line[4096]; /* partial output line awaiting its newline */
    size_t line_len;
    bool exited;
} spawn_child_t;

/* Starts argv as one rank: its own process group, `env` ("KEY=VALUE",
 * NULL-terminated) set in it, its output tagged "[rank] " through a pipe
 * when `tag`.  Returns false (with a message) when fork or pipe fails. */
bool spawn_rank(spawn_child_t *c, char *const argv[], char *const env[],
                int rank, bool tag, const char *tool);

/* Watches the children until all have exited, relaying tagged output;
 * watch_fd (or -1): input whose end stops every child (an agent's stdin);
 * host (or NULL): this machine's name in messages.  Returns the first
 * failing exit code, 128+signal for a stop signal or the end of watch_fd,
 * 0 when all succeeded. */
int spawn_supervise(spawn_child_t *c, int n, const char *tool, int watch_fd,
                    const char *host);

/* A rank's environment: "KEY=VALUE" strings, NULL-terminated (vars). */
typedef struct {
    char **vars;
    size_t n, cap;
} spawn_env_t;

void spawn_env_add(spawn_env_t *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* weft's WEFT_RANK and WEFT_WORLD_SIZE, and torch's RANK, WORLD_SIZE,
 * LOCAL_RANK and LOCAL_WORLD_SIZE. */
void spawn_env_rank(spawn_env_t *e, int rank, int size, int local_rank,
                    int local_size);
void spawn_env_free(spawn_env_t *e);

#endif /* WEFT_SPAWN_H */
