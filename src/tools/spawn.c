/*
 * spawn.c - the local launcher behind weftrun and weft-bench -n, and the
 * supervision of a job's children (spawn.h).
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

#define MAX_CHILDREN 512

/* Set by SIGINT/SIGTERM/SIGHUP: the ranks run in their own process groups,
 * so the launcher forwards the request to stop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

bool spawn_rank(spawn_child_t *c, char *const argv[], char *const env[],
                int rank, bool tag, const char *tool)
{
    int fds[2] = {-1, -1};
    *c = (spawn_child_t){.pid = -1, .out_fd = -1, .in_fd = -1, .rank = rank};
    if (tag && pipe(fds) != 0) {
        fprintf(stderr, "%s: pipe: %s (rank %d's output untagged)\n", tool,
                strerror(errno), rank);
        tag = false;
    }
    fflush(stdout);
    fflush(stderr);
    c->pid = fork();
    if (c->pid == 0) {
        /* Own process group: stopping a rank also stops what it started. */
        setpgid(0, 0);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        if (tag) {
            close(fds[0]);
            dup2(fds[1], STDOUT_FILENO);
            dup2(fds[1], STDERR_FILENO);
            close(fds[1]);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "%s: cannot run %s: %s\n", tool, argv[0],
                strerror(errno));
        _exit(127);
    }
    if (tag)
        close(fds[1]);
    if (c->pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", tool, strerror(errno));
        if (tag)
            close(fds[0]);
        return false;
    }
    setpgid(c->pid, c->pid); /* no race with the child */
    c->out_fd = tag ? fds[0] : -1;
    return true;
}

static void flush_line(spawn_child_t *p, bool force)
{
    char *nl;
    while ((nl = memchr(p->line, '\n', p->line_len)) ||
           (force && p->line_len)) {
        size_t n = nl ? (size_t)(nl - p->line) + 1 : p->line_len;
        printf("[%d] %.*s%s", p->rank, (int)n, p->line, nl ? "" : "\n");
        memmove(p->line, p->line + n, p->line_len - n);
        p->line_len -= n;
    }
    if (p->line_len == sizeof(p->line)) /* a very long line: cut it */
        flush_line(p, true);
    fflush(stdout);
}

/* Relays output and looks at watch_fd; false once watch_fd has ended. */
static bool pump(spawn_child_t *c, int n, int watch_fd, int timeout_ms)
{
    struct pollfd fds[MAX_CHILDREN + 1];
    int idx[MAX_CHILDREN + 1], nfds = 0;
    for (int r = 0; r < n && nfds < MAX_CHILDREN; r++)
        if (c[r].out_fd >= 0) {
            fds[nfds] = (struct pollfd){.fd = c[r].out_fd, .events = POLLIN};
            idx[nfds++] = r;
        }
    if (watch_fd >= 0) {
        fds[nfds] = (struct pollfd){.fd = watch_fd, .events = POLLIN};
        idx[nfds++] = -1;
    }
    if (nfds == 0) {
        usleep((useconds_t)timeout_ms * 1000);
        return true;
    }
    if (poll(fds, (nfds_t)nfds, timeout_ms) <= 0)
        return true;
    bool open = true;
    for (int i = 0; i < nfds; i++) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        if (idx[i] < 0) { /* the watched input: anything but its end is
                           * ignored */
            char buf[256];
            ssize_t got = read(watch_fd, buf, sizeof(buf));
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
                open = false;
            continue;
        }
        spawn_child_t *p = &c[idx[i]];
        ssize_t got = read(p->out_fd, p->line + p->line_len,
                           sizeof(p->line) - p->line_len);
        if (got <= 0) {
            flush_line(p, true);
            close(p->out_fd);
            p->out_fd = -1;
            continue;
        }
        p->line_len += (size_t)got;
        flush_line(p, false);
    }
    return open;
}

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Reaps exited children; returns the number still running.  A failure
 * is recorded only while `counting`: once the job is being stopped, the
 * children's codes are the stop's, not failures of their own. */
static int reap(spawn_child_t *c, int n, bool counting, int *first_fail,
                int *fail_child)
{
    int running = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (c[r].exited)
            continue;
        if (waitpid(c[r].pid, &st, WNOHANG) != c[r].pid) {
            running++;
            continue;
        }
        c[r].exited = true;
        if (counting && exit_code(st) != 0 && *first_fail == 0) {
            *first_fail = exit_code(st);
            *fail_child = r;
        }
    }
    return running;
}

/* Ranks get `sig` in their whole process group; agents the end of their
 * input (they stop their own ranks and exit), and `agent_sig` when it is
 * not 0. */
static void stop_all(spawn_child_t *c, int n, int sig, int agent_sig)
{
    for (int r = 0; r < n; r++) {
        if (c[r].in_fd >= 0) {
            close(c[r].in_fd);
            c[r].in_fd = -1;
        }
        if (c[r].exited)
            continue;
        if (c[r].rank >= 0)
            kill(-c[r].pid, sig);
        else if (agent_sig)
            kill(c[r].pid, agent_sig);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void report(const spawn_child_t *p, int code, const char *tool,
                   const char *host)
{
    if (p->rank >= 0)
        fprintf(stderr, "%s: rank %d%s%s exited with code %d; stopping the "
                "other ranks\n", tool, p->rank, host ? " on host " : "",
                host ? host : "", code);
    else
        fprintf(stderr, "%s: the ranks on host %s failed (code %d%s); "
                "stopping the other ranks\n", tool, p->host, code,
                code == 255 ? ": ssh could not run weftrun there, or the "
                              "connection broke" : "");
}

int spawn_supervise(spawn_child_t *c, int n, const char *tool, int watch_fd,
                    const char *host)
{
    int first_fail = 0, fail_child = -1, phase = 0;
    double stop_at = 0, all_exited_at = 0;
    bool input_ended = false;
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    for (;;) {
        if (!pump(c, n, input_ended ? -1 : watch_fd, 20))
            input_ended = true;
        int running = reap(c, n, phase == 0, &first_fail, &fail_child);
        bool output_open = false;
        for (int r = 0; r < n; r++)
            output_open |= c[r].out_fd >= 0;
        if (!running && all_exited_at == 0)
            all_exited_at = now_s();
        if (!running && (!output_open || now_s() - all_exited_at > 1))
            break;
        /* Stopping: ranks SIGTERM and agents the end of their input; 3 s
         * later ranks SIGKILL and agents SIGTERM; 3 s after, SIGKILL. */
        if (phase == 0 && (first_fail || stop_signal || input_ended)) {
            if (first_fail)
                report(&c[fail_child], first_fail, tool, host);
            stop_all(c, n, SIGTERM, 0);
            stop_at = now_s();
            phase = 1;
        } else if (phase == 1 && now_s() - stop_at >= 3) {
            stop_all(c, n, SIGKILL, SIGTERM);
            phase = 2;
        } else if (phase == 2 && now_s() - stop_at >= 6) {
            stop_all(c, n, SIGKILL, SIGKILL);
            phase = 3;
        }
    }
    stop_all(c, n, SIGKILL, 0); /* leftovers of finished ranks */
    if (!first_fail && stop_signal)
        first_fail = 128 + stop_signal;
    if (!first_fail && input_ended)
        first_fail = 128 + SIGTERM; /* told to stop before the end */
    return first_fail;
}

/* ---- weftrun -n N and weft-bench -n N: every rank on this host ---------- */

/* A TCP port of 127.0.0.1 that was free a moment ago, for torch's store. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29500;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int spawn_ranks(char *const argv[], const spawn_opts_t *o)
{
    weft_server_t server;
    static spawn_child_t procs[256];
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
    int master_port = free_port();
    for (int r = 0; r < o->nranks; r++) {
        spawn_env_t env = {0};
        spawn_env_rank(&env, r, o->nranks, r, o->nranks);
        spawn_env_add(&env, "WEFT_RENDEZVOUS", "%s",
                      weft_server_address(server));
        spawn_env_add(&env, "WEFT_JOB_ID", "%s", job);
        spawn_env_add(&env, "MASTER_ADDR", "127.0.0.1");
        spawn_env_add(&env, "MASTER_PORT", "%d", master_port);
        bool ok = spawn_rank(&procs[r], argv, env.vars, r, o->prefix_output,
                             o->tool);
        spawn_env_free(&env);
        if (!ok) {
            stop_all(procs, r, SIGKILL, 0);
            weft_server_stop(server);
            return 1;
        }
    }
    int code = spawn_supervise(procs, o->nranks, o->tool, -1, NULL);
    weft_server_stop(server);
    return code;
}

/* ---- rank environments ---------------------------------------------------- */

void spawn_env_add(spawn_env_t *e, const char *key, const char *fmt, ...)
{
    char value[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        char **v = realloc(e->vars, cap * sizeof(*v));
        if (!v)
            return;
        e->vars = v;
        e->cap = cap;
    }
    size_t len = strlen(key) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return;
    snprintf(kv, len, "%s=%s", key, value);
    e->vars[e->n++] = kv;
    e->vars[e->n] = NULL;
}

void spawn_env_rank(spawn_env_t *e, int rank, int size, int local_rank,
                    int local_size)
{
    spawn_env_add(e, "WEFT_RANK", "%d", rank);
    spawn_env_add(e, "WEFT_WORLD_SIZE", "%d", size);
    /* torch's env:// names, so torch scripts run unchanged */
    spawn_env_add(e, "RANK", "%d", rank);
    spawn_env_add(e, "WORLD_SIZE", "%d", size);
    spawn_env_add(e, "LOCAL_RANK", "%d", local_rank);
    spawn_env_add(e, "LOCAL_WORLD_SIZE", "%d", local_size);
}

void spawn_env_free(spawn_env_t *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->vars[i]);
    free(e->vars);
    *e = (spawn_env_t){0};
}
