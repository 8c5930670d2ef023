/*
 * spawn.c - the local launcher behind weftrun and weft-bench -n.
 */
#include "spawn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

/* Set by SIGINT/SIGTERM/SIGHUP: the ranks run in their own process groups,
 * so the launcher forwards the request to stop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

typedef struct {
    pid_t pid;
    int out_fd;      /* read end of the rank's stdout+stderr, or -1 */
    char line[4096]; /* partial line awaiting its newline */
    size_t line_len;
    bool exited;
} rank_proc_t;

static void child_exec(char *const argv[], int rank, const spawn_opts_t *o,
                       const char *rdv, const char *job, int out_fd)
{
    char buf[32];
    /* Own process group: stopping a rank also stops what it started. */
    setpgid(0, 0);
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("WEFT_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", o->nranks);
    setenv("WEFT_WORLD_SIZE", buf, 1);
    setenv("WEFT_RENDEZVOUS", rdv, 1);
    setenv("WEFT_JOB_ID", job, 1);
    if (out_fd >= 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
        close(out_fd);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "%s: cannot run %s: %s\n", o->tool, argv[0],
            strerror(errno));
    _exit(127);
}

static void flush_line(rank_proc_t *p, int rank, bool force)
{
    char *nl;
    while ((nl = memchr(p->line, '\n', p->line_len)) ||
           (force && p->line_len)) {
        size_t n = nl ? (size_t)(nl - p->line) + 1 : p->line_len;
        printf("[%d] %.*s%s", rank, (int)n, p->line, nl ? "" : "\n");
        memmove(p->line, p->line + n, p->line_len - n);
        p->line_len -= n;
    }
    if (p->line_len == sizeof(p->line)) /* a very long line: cut it */
        flush_line(p, rank, true);
    fflush(stdout);
}

static void pump_output(rank_proc_t *procs, int n, int timeout_ms)
{
    struct pollfd fds[256];
    int idx[256], nfds = 0;
    for (int r = 0; r < n && nfds < 256; r++)
        if (procs[r].out_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = procs[r].out_fd, .events = POLLIN};
            idx[nfds++] = r;
        }
    if (nfds == 0) {
        usleep((useconds_t)timeout_ms * 1000);
        return;
    }
    if (poll(fds, (nfds_t)nfds, timeout_ms) <= 0)
        return;
    for (int i = 0; i < nfds; i++) {
        rank_proc_t *p = &procs[idx[i]];
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t got = read(p->out_fd, p->line + p->line_len,
                           sizeof(p->line) - p->line_len);
        if (got <= 0) {
            flush_line(p, idx[i], true);
            close(p->out_fd);
            p->out_fd = -1;
            continue;
        }
        p->line_len += (size_t)got;
        flush_line(p, idx[i], false);
    }
}

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Reaps exited ranks; returns the number still running. */
static int reap(rank_proc_t *procs, int n, int *first_fail, int *fail_rank)
{
    int running = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (procs[r].exited)
            continue;
        if (waitpid(procs[r].pid, &st, WNOHANG) != procs[r].pid) {
            running++;
            continue;
        }
        procs[r].exited = true;
        if (exit_code(st) != 0 && *first_fail == 0) {
            *first_fail = exit_code(st);
            *fail_rank = r;
        }
    }
    return running;
}

static void terminate_all(rank_proc_t *procs, int n, int sig)
{
    for (int r = 0; r < n; r++)
        kill(-procs[r].pid, sig); /* the rank's whole process group */
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for the ranks, relaying their output.  The first failure (or a
 * stop signal) sends SIGTERM to every rank's process group, SIGKILL 3 s
 * later; output still open 1 s after the last rank exited (a leftover
 * background process holding the pipe) is abandoned. */
static int supervise(rank_proc_t *procs, const spawn_opts_t *o)
{
    int first_fail = 0, fail_rank = -1, n = o->nranks;
    double killed_at = 0, all_exited_at = 0;
    for (;;) {
        pump_output(procs, n, 20);
        int running = reap(procs, n, &first_fail, &fail_rank);
        bool output_open = false;
        for (int r = 0; r < n; r++)
            output_open |= procs[r].out_fd >= 0;
        if (!running && all_exited_at == 0)
            all_exited_at = now_s();
        if (!running && (!output_open || now_s() - all_exited_at > 1))
            break;
        if ((first_fail || stop_signal) && killed_at == 0) {
            if (first_fail)
                fprintf(stderr, "%s: rank %d exited with code %d; stopping "
                        "the other ranks\n", o->tool, fail_rank, first_fail);
            terminate_all(procs, n, SIGTERM);
            killed_at = now_s();
        } else if (killed_at > 0 && now_s() - killed_at >= 3) {
            terminate_all(procs, n, SIGKILL);
            killed_at = now_s() + 1e9; /* once */
        }
    }
    terminate_all(procs, n, SIGKILL); /* leftovers of finished ranks */
    if (!first_fail && stop_signal)
        first_fail = 128 + stop_signal;
    return first_fail;
}

int spawn_ranks(char *const argv[], const spawn_opts_t *o)
{
    weft_server_t server;
    rank_proc_t procs[256];
    char job[64];
    if (o->nranks < 1 || o->nranks > 256) {
        fprintf(stderr, "%s: the number of ranks must be 1..256\n", o->tool);
        return 2;
    }
    weft_status_t st = weft_server_start("127.0.0.1:0", &server);
    if (st != WEFT_OK) {
        fprintf(stderr, "%s: cannot start the rendezvous server: %s\n",
                o->tool, weft_strerror(st));
        return 1;
    }
    snprintf(job, sizeof(job), "%s-%d-%ld", o->tool, (int)getpid(),
             (long)time(NULL));
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < o->nranks; r++) {
        int fds[2] = {-1, -1};
        if (o->prefix_output && pipe(fds) != 0) {
            perror("pipe");
            o = &(spawn_opts_t){o->nranks, false, o->tool};
        }
        procs[r] = (rank_proc_t){.pid = fork(), .out_fd = fds[0]};
        if (procs[r].pid == 0) {
            if (fds[0] >= 0)
                close(fds[0]);
            child_exec(argv, r, o, weft_server_address(server), job, fds[1]);
        }
        if (procs[r].pid > 0)
            setpgid(procs[r].pid, procs[r].pid); /* no race with the child */
        if (fds[1] >= 0)
            close(fds[1]);
        if (procs[r].pid < 0) {
            perror("fork");
            terminate_all(procs, r, SIGKILL);
            weft_server_stop(server);
            return 1;
        }
    }
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int code = supervise(procs, o);
    weft_server_stop(server);
    return code;
}
