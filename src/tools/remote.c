/*
 * remote.c - weftrun's agents on other hosts (remote.h).
 *
 * The agent's input, written by the head: one line per variable,
 * "KEY=HEX" (the value hex-encoded, so any byte survives), then an empty
 * line; after that the head writes nothing and only its end matters.
 */
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WR_AGENT_MAX_RANKS 512

/* ---- the head's side ----------------------------------------------------- */

/* 'arg' quoted for the remote shell that ssh hands its command to. */
static void quote(char *out, size_t len, size_t *used, const char *arg)
{
    size_t o = *used;
    if (o + 3 < len)
        out[o++] = '\'';
    for (const char *p = arg; *p && o + 6 < len; p++) {
        if (*p == '\'') {
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            out[o++] = *p;
        }
    }
    if (o + 2 < len) {
        out[o++] = '\'';
        out[o++] = ' ';
    }
    out[o] = '\0';
    *used = o;
}

static bool write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool write_env(int fd, char *const env[])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq)
            continue;
        size_t klen = (size_t)(eq - env[i]) + 1, vlen = strlen(eq + 1);
        char *line = malloc(klen + 2 * vlen + 2);
        if (!line)
            return false;
        memcpy(line, env[i], klen);
        for (size_t k = 0; k < vlen; k++) {
            unsigned char c = (unsigned char)eq[1 + k];
            line[klen + 2 * k] = digits[c >> 4];
            line[klen + 2 * k + 1] = digits[c & 15];
        }
        line[klen + 2 * vlen] = '\n';
        bool ok = write_all(fd, line, klen + 2 * vlen + 1);
        free(line);
        if (!ok)
            return false;
    }
    return write_all(fd, "\n", 1);
}

bool remote_start(spawn_child_t *c, const wr_host_t *h, int size,
                  char *const argv[], char *const env[], const wr_ssh_t *ssh,
                  const char *tool)
{
    char cmd[16384], num[64];
    /* The remote shell replaces itself: the agent is ssh's child there. */
    size_t used = (size_t)snprintf(cmd, sizeof(cmd), "exec ");
    quote(cmd, sizeof(cmd), &used, ssh->weftrun);
    quote(cmd, sizeof(cmd), &used, "--agent");
    quote(cmd, sizeof(cmd), &used, h->name);
    snprintf(num, sizeof(num), "%d", h->first);
    quote(cmd, sizeof(cmd), &used, num);
    snprintf(num, sizeof(num), "%d", h->count);
    quote(cmd, sizeof(cmd), &used, num);
    snprintf(num, sizeof(num), "%d", size);
    quote(cmd, sizeof(cmd), &used, num);
    quote(cmd, sizeof(cmd), &used, ssh->tag ? "1" : "0");
    quote(cmd, sizeof(cmd), &used, "--");
    for (size_t i = 0; argv[i]; i++)
        quote(cmd, sizeof(cmd), &used, argv[i]);
    if (used + 8 >= sizeof(cmd)) {
        fprintf(stderr, "%s: the command for host %s is too long\n", tool,
                h->name);
        return false;
    }
    const char *args[64];
    int n = 0;
    args[n++] = "ssh";
    args[n++] = "-o";
    args[n++] = "BatchMode=yes"; /* fail, never prompt */
    if (ssh->port) {
        args[n++] = "-p";
        args[n++] = ssh->port;
    }
    if (ssh->identity) {
        args[n++] = "-i";
        args[n++] = ssh->identity;
    }
    for (int i = 0; i < ssh->noptions && n < 58; i++) {
        args[n++] = "-o";
        args[n++] = ssh->options[i];
    }
    args[n++] = h->name;
    args[n++] = cmd;
    args[n] = NULL;

    int in[2];
    if (pipe(in) != 0) {
        fprintf(stderr, "%s: pipe: %s\n", tool, strerror(errno));
        return false;
    }
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    *c = (spawn_child_t){.pid = -1, .out_fd = -1, .in_fd = -1, .rank = -1,
                         .host = h->name};
    fflush(stdout);
    fflush(stderr);
    c->pid = fork();
    if (c->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        close(in[0]);
        execvp("ssh", (char *const *)args);
        fprintf(stderr, "%s: cannot run ssh for host %s: %s (install "
                "openssh-client)\n", tool, h->name, strerror(errno));
        _exit(255);
    }
    close(in[0]);
    if (c->pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", tool, strerror(errno));
        close(in[1]);
        return false;
    }
    c->in_fd = in[1];
    /* The block is small: it fits the pipe, so this never waits for ssh. */
    if (!write_env(c->in_fd, env))
        fprintf(stderr, "%s: host %s: could not hand over the environment "
                "(ssh exited?)\n", tool, h->name);
    return true;
}

/* ---- the agent ----------------------------------------------------------- */

static int hex_digit(int c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
}

/* Reads "KEY=HEX" lines up to the empty one from fd, one byte at a time
 * (what follows is watched, not read here), into the environment. */
static bool read_env(int fd, const char *tool)
{
    char line[65536];
    for (;;) {
        size_t n = 0;
        for (;;) {
            char ch;
            ssize_t got = read(fd, &ch, 1);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                fprintf(stderr, "%s --agent: the launcher's input ended "
                        "before the environment did\n", tool);
                return false;
            }
            if (ch == '\n')
                break;
            if (n + 1 < sizeof(line))
                line[n++] = ch;
        }
        line[n] = '\0';
        if (n == 0)
            return true;
        char *eq = strchr(line, '=');
        if (!eq || strlen(eq + 1) % 2) {
            fprintf(stderr, "%s --agent: malformed environment line\n", tool);
            return false;
        }
        *eq = '\0';
        char *v = eq + 1, *w = v;
        for (const char *p = v; p[0] && p[1]; p += 2) {
            int hi = hex_digit(p[0]), lo = hex_digit(p[1]);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "%s --agent: malformed value of %s\n", tool,
                        line);
                return false;
            }
            *w++ = (char)(hi << 4 | lo);
        }
        *w = '\0';
        setenv(line, v, 1);
    }
}

static bool parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

int remote_agent_main(int argc, char **argv)
{
    const char *tool = "weftrun";
    int first, count, size, tag;
    /* argv: weftrun --agent HOST FIRST COUNT SIZE TAG -- PROGRAM ... */
    if (argc < 9 || strcmp(argv[7], "--") != 0 ||
        !parse_int(argv[3], 0, 1 << 24, &first) ||
        !parse_int(argv[4], 1, WR_AGENT_MAX_RANKS, &count) ||
        !parse_int(argv[5], 1, 1 << 24, &size) ||
        !parse_int(argv[6], 0, 1, &tag) || first + count > size) {
        fprintf(stderr, "%s --agent: this is weftrun's own entry point on "
                "the other hosts, not for use by hand\n", tool);
        return 2;
    }
    const char *host = argv[2];
    signal(SIGPIPE, SIG_IGN);
    /* The control input moves off stdin, which the ranks get as
     * /dev/null: the head's end of it is what stops them. */
    int control = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int null_fd = open("/dev/null", O_RDONLY);
    if (control < 0 || null_fd < 0) {
        fprintf(stderr, "%s --agent on %s: %s\n", tool, host,
                strerror(errno));
        return 1;
    }
    dup2(null_fd, STDIN_FILENO);
    close(null_fd);
    if (!read_env(control, tool))
        return 1;
    const char *cwd = getenv("WEFTRUN_CWD");
    if (cwd && chdir(cwd) != 0)
        fprintf(stderr, "%s: host %s has no directory %s (%s); the ranks "
                "start in %s\n", tool, host, cwd, strerror(errno),
                getenv("HOME") ? getenv("HOME") : "the login directory");
    unsetenv("WEFTRUN_CWD");
    static spawn_child_t procs[WR_AGENT_MAX_RANKS];
    for (int i = 0; i < count; i++) {
        spawn_env_t env = {0};
        spawn_env_rank(&env, first + i, size, i, count);
        bool ok = spawn_rank(&procs[i], argv + 8, env.vars, first + i,
                             tag != 0, tool);
        spawn_env_free(&env);
        if (!ok) {
            for (int k = 0; k < i; k++)
                kill(-procs[k].pid, SIGKILL);
            return 1;
        }
    }
    return spawn_supervise(procs, count, tool, control, host);
}
