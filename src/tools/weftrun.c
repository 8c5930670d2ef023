/*
 * weftrun - start the ranks of a program, on this host or across hosts,
 * with a rendezvous of its own:
 *   weftrun -n N [options] [--] PROGRAM [ARGS...]
 *   weftrun -np 8 -H a:4,b:4 [options] PROGRAM ...
 *   weftrun --hostfile FILE [options] PROGRAM ...
 * Ranks on other hosts are started over ssh by weftrun's agent there
 * (remote.c).  Exits with the first failing rank's exit code; the other
 * ranks, on every host, are stopped when one fails or on Ctrl-C.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostlist.h"
#include "remote.h"
#include "spawn.h"
#include "weft.h"

#define MAX_FORWARD 128
#define MAX_SSH_OPTIONS 16

extern char **environ;

typedef struct {
    int nranks;
    bool tag;
    wr_hosts_t hosts;
    bool have_hosts;
    const char *forward[MAX_FORWARD]; /* -x VAR or VAR=VALUE */
    int nforward;
    char *ssh_options[MAX_SSH_OPTIONS];
    wr_ssh_t ssh;
    int master_port;
} opts_t;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: weftrun [-n|-np N] [-H HOST[:SLOTS],...|--hostfile FILE]\n"
        "               [options] [--] PROGRAM [ARGS...]\n"
        "  -n, -np N             number of ranks (default with hosts: one\n"
        "                        per slot)\n"
        "  -H, --host LIST       hosts and their slots, as Horovod and Open\n"
        "                        MPI take them: a:4,b:4 (a host without :N\n"
        "                        has 1 slot); ranks fill the hosts in order\n"
        "  --hostfile FILE       one host per line: \"host slots=N\" or\n"
        "                        \"host:N\"\n"
        "  -x VAR[=VALUE]        pass VAR (or set it) to every rank on every\n"
        "                        host; WEFT_* variables, PATH and the\n"
        "                        current directory go along anyway\n"
        "  -l, --tag-output      prefix every output line with [rank]\n"
        "  --token-file F        the job's token (first line of F); with\n"
        "                        other hosts a fresh one is made otherwise\n"
        "  --ssh-port P          ssh to port P of the other hosts\n"
        "  --ssh-identity-file F ssh with this private key\n"
        "  --ssh-option OPT      one more ssh -o OPT (repeatable)\n"
        "  --master-port P       torch's MASTER_PORT (default: a free port)\n"
        "Each rank gets WEFT_RANK, WEFT_WORLD_SIZE, WEFT_RENDEZVOUS and\n"
        "WEFT_JOB_ID, and torch's RANK, WORLD_SIZE, LOCAL_RANK,\n"
        "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT.  Other hosts need\n"
        "weftrun at this same path and ssh without a password.  The exit\n"
        "code is the first failing rank's.\n");
}

static bool parse_int_arg(const char *opt, const char *s, int lo, int hi,
                          int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi) {
        fprintf(stderr, "weftrun: %s %s is not a number in %d..%d\n", opt, s,
                lo, hi);
        return false;
    }
    *out = (int)v;
    return true;
}

/* Parses the options; returns the index of PROGRAM, 0 to exit with
 * *code. */
static int parse(int argc, char **argv, opts_t *o, int *code)
{
    char err[512];
    int i = 1;
    *code = 2;
    for (; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            *code = 0;
            return 0;
        }
        if ((strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0) && more) {
            if (!parse_int_arg(a, argv[++i], 1, 1 << 20, &o->nranks))
                return 0;
        } else if ((strcmp(a, "-H") == 0 || strcmp(a, "--host") == 0) &&
                   more) {
            if (!hosts_parse_list(&o->hosts, argv[++i], err, sizeof(err))) {
                fprintf(stderr, "weftrun: %s\n", err);
                return 0;
            }
            o->have_hosts = true;
        } else if ((strcmp(a, "--hostfile") == 0 ||
                    strcmp(a, "-hostfile") == 0) && more) {
            if (!hosts_parse_file(&o->hosts, argv[++i], err, sizeof(err))) {
                fprintf(stderr, "weftrun: %s\n", err);
                return 0;
            }
            o->have_hosts = true;
        } else if (strcmp(a, "-x") == 0 && more) {
            if (o->nforward == MAX_FORWARD) {
                fprintf(stderr, "weftrun: more than %d -x\n", MAX_FORWARD);
                return 0;
            }
            o->forward[o->nforward++] = argv[++i];
        } else if (strcmp(a, "--token-file") == 0 && more) {
            /* Ranks and the embedded server read it via the environment,
             * so the token itself never appears on a command line. */
            if (access(argv[++i], R_OK) != 0) {
                fprintf(stderr, "weftrun: --token-file %s: %s\n", argv[i],
                        strerror(errno));
                return 0;
            }
            setenv("WEFT_TOKEN_FILE", argv[i], 1);
        } else if (strcmp(a, "-l") == 0 || strcmp(a, "--tag-output") == 0) {
            o->tag = true;
        } else if (strcmp(a, "--ssh-port") == 0 && more) {
            int port;
            if (!parse_int_arg(a, argv[++i], 1, 65535, &port))
                return 0;
            o->ssh.port = argv[i];
        } else if (strcmp(a, "--ssh-identity-file") == 0 && more) {
            o->ssh.identity = argv[++i];
        } else if (strcmp(a, "--ssh-option") == 0 && more) {
            if (o->ssh.noptions == MAX_SSH_OPTIONS) {
                fprintf(stderr, "weftrun: more than %d --ssh-option\n",
                        MAX_SSH_OPTIONS);
                return 0;
            }
            o->ssh_options[o->ssh.noptions++] = argv[++i];
        } else if (strcmp(a, "--master-port") == 0 && more) {
            if (!parse_int_arg(a, argv[++i], 1, 65535, &o->master_port))
                return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "weftrun: unknown option %s (or it lacks its "
                    "value)\n", a);
            usage(stderr);
            return 0;
        } else {
            break;
        }
    }
    if (i >= argc || (!o->nranks && !o->have_hosts)) {
        usage(stderr);
        return 0;
    }
    o->ssh.options = o->ssh_options;
    o->ssh.tag = o->tag;
    return i;
}

/* -x: "VAR" passes the head's value (if it has one), "VAR=VALUE" sets it. */
static void add_forwarded(spawn_env_t *env, const opts_t *o)
{
    for (int i = 0; i < o->nforward; i++) {
        const char *f = o->forward[i], *eq = strchr(f, '=');
        if (eq) {
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - f), f);
            spawn_env_add(env, key, "%s", eq + 1);
        } else if (getenv(f)) {
            spawn_env_add(env, f, "%s", getenv(f));
        }
    }
}

/* ---- across hosts --------------------------------------------------------- */

/* This host's address on the route to `host`: where that host reaches the
 * rendezvous.  A UDP connect sends nothing; it only asks for the route. */
static bool route_to(const char *host, char *out, size_t len)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *res = NULL;
    if (getaddrinfo(host, "9", &hints, &res) != 0 || !res)
        return false;
    bool ok = false;
    int fd = socket(res->ai_family, SOCK_DGRAM, 0);
    struct sockaddr_storage me;
    socklen_t me_len = sizeof(me);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&me, &me_len) == 0) {
        char ip[INET6_ADDRSTRLEN];
        const void *a = me.ss_family == AF_INET
                            ? (const void *)&((struct sockaddr_in *)&me)->sin_addr
                            : (const void *)&((struct sockaddr_in6 *)&me)->sin6_addr;
        if (inet_ntop(me.ss_family, a, ip, sizeof(ip))) {
            snprintf(out, len, me.ss_family == AF_INET6 ? "[%s]" : "%s", ip);
            ok = true;
        }
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return ok;
}

/* The job's token: --token-file's, WEFT_TOKEN's, or a fresh one. */
static bool job_token(char *out, size_t len)
{
    const char *file = getenv("WEFT_TOKEN_FILE");
    if (file && *file) {
        FILE *f = fopen(file, "r");
        if (!f || !fgets(out, (int)len, f)) {
            if (f)
                fclose(f);
            fprintf(stderr, "weftrun: cannot read the token from %s\n", file);
            return false;
        }
        fclose(f);
        out[strcspn(out, "\r\n")] = '\0';
        return true;
    }
    if (getenv("WEFT_TOKEN") && *getenv("WEFT_TOKEN")) {
        snprintf(out, len, "%s", getenv("WEFT_TOKEN"));
        return true;
    }
    unsigned char raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        fprintf(stderr, "weftrun: getrandom: %s\n", strerror(errno));
        return false;
    }
    for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < len; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return true;
}

/* What every rank on every host gets besides its rank: the rendezvous,
 * torch's master, the working directory and PATH, the head's WEFT_*
 * settings and -x. */
static void job_env(spawn_env_t *env, const opts_t *o, const char *rdv,
                    const char *job, const char *token, const char *master,
                    int master_port)
{
    static const char *const own[] = {"WEFT_RANK", "WEFT_WORLD_SIZE",
                                      "WEFT_RENDEZVOUS", "WEFT_JOB_ID",
                                      "WEFT_TOKEN", "WEFT_TOKEN_FILE"};
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "WEFT_", 5) != 0)
            continue;
        size_t klen = strcspn(*e, "=");
        bool skip = false;
        for (size_t k = 0; k < sizeof(own) / sizeof(*own); k++)
            skip |= strlen(own[k]) == klen && !strncmp(*e, own[k], klen);
        if (!skip && (*e)[klen] == '=') {
            char key[256];
            snprintf(key, sizeof(key), "%.*s", (int)klen, *e);
            spawn_env_add(env, key, "%s", *e + klen + 1);
        }
    }
    spawn_env_add(env, "WEFT_RENDEZVOUS", "%s", rdv);
    spawn_env_add(env, "WEFT_JOB_ID", "%s", job);
    spawn_env_add(env, "WEFT_TOKEN", "%s", token);
    spawn_env_add(env, "MASTER_ADDR", "%s", master);
    spawn_env_add(env, "MASTER_PORT", "%d", master_port);
    if (getenv("PATH"))
        spawn_env_add(env, "PATH", "%s", getenv("PATH"));
    if (getenv("LD_LIBRARY_PATH"))
        spawn_env_add(env, "LD_LIBRARY_PATH", "%s", getenv("LD_LIBRARY_PATH"));
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)))
        spawn_env_add(env, "WEFTRUN_CWD", "%s", cwd);
    add_forwarded(env, o);
}

static int run_across_hosts(char *const argv[], opts_t *o)
{
    wr_hosts_t *h = &o->hosts;
    const wr_host_t *first_remote = NULL, *rank0 = NULL;
    for (int i = 0; i < h->n; i++) {
        if (h->hosts[i].count && !h->hosts[i].local && !first_remote)
            first_remote = &h->hosts[i];
        if (h->hosts[i].count && h->hosts[i].first == 0)
            rank0 = &h->hosts[i];
    }
    char here[128], token[256], rdv[192], job[96], master[300], self[4096];
    if (!route_to(first_remote->name, here, sizeof(here))) {
        fprintf(stderr, "weftrun: cannot resolve host %s, or this host has "
                "no route to it\n", first_remote->name);
        return 1;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "weftrun: cannot find its own path: %s\n",
                strerror(errno));
        return 1;
    }
    self[n] = '\0';
    o->ssh.weftrun = self;
    if (!job_token(token, sizeof(token)))
        return 1;
    /* The embedded server asks every rank for this token. */
    setenv("WEFT_TOKEN", token, 1);
    unsetenv("WEFT_TOKEN_FILE");
    weft_server_t server;
    weft_status_t st = weft_server_start("0.0.0.0:0", &server);
    if (st != WEFT_OK) {
        fprintf(stderr, "weftrun: cannot start the rendezvous server: %s\n",
                weft_strerror(st));
        return 1;
    }
    const char *port = strrchr(weft_server_address(server), ':');
    snprintf(rdv, sizeof(rdv), "%s%s", here, port);
    snprintf(job, sizeof(job), "weftrun-%d-%ld", (int)getpid(),
             (long)time(NULL));
    /* torch's store lives in rank 0's process. */
    snprintf(master, sizeof(master), "%s", rank0->local ? here : rank0->name);
    int master_port = o->master_port;
    if (!master_port) {
        unsigned short r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = (unsigned short)getpid();
        /* Below Linux's ephemeral range, where no outgoing connection
         * takes it meanwhile. */
        master_port = 20000 + r % 12000;
    }
    spawn_env_t common = {0};
    job_env(&common, o, rdv, job, token, master, master_port);

    /* This host's ranks inherit it (its directory is already theirs). */
    for (size_t v = 0; v < common.n; v++)
        if (strncmp(common.vars[v], "WEFTRUN_CWD=", 12) != 0)
            putenv(strdup(common.vars[v]));
    static spawn_child_t procs[512];
    int nc = 0, code = 0;
    for (int i = 0; i < h->n && code == 0; i++) {
        wr_host_t *e = &h->hosts[i];
        if (!e->count)
            continue;
        if (!e->local) {
            if (nc == (int)(sizeof(procs) / sizeof(*procs)) ||
                !remote_start(&procs[nc], e, o->nranks, argv, common.vars,
                              &o->ssh, "weftrun"))
                code = 1;
            else
                nc++;
            continue;
        }
        for (int k = 0; k < e->count && code == 0; k++) {
            spawn_env_t env = {0};
            spawn_env_rank(&env, e->first + k, o->nranks, k, e->count);
            if (nc == (int)(sizeof(procs) / sizeof(*procs)) ||
                !spawn_rank(&procs[nc], argv, env.vars, e->first + k, o->tag,
                            "weftrun"))
                code = 1;
            else
                nc++;
            spawn_env_free(&env);
        }
    }
    if (code == 0)
        code = spawn_supervise(procs, nc, "weftrun", -1, "this host");
    else
        for (int i = 0; i < nc; i++)
            kill(procs[i].rank >= 0 ? -procs[i].pid : procs[i].pid, SIGKILL);
    spawn_env_free(&common);
    weft_server_stop(server);
    return code;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--agent") == 0)
        return remote_agent_main(argc, argv);
    opts_t o = {0};
    int code, i = parse(argc, argv, &o, &code);
    if (i == 0) { /* a bad option may follow hosts already read */
        hosts_free(&o.hosts);
        return code;
    }
    signal(SIGPIPE, SIG_IGN);
    if (o.have_hosts) {
        char err[256];
        if (!hosts_place(&o.hosts, &o.nranks, err, sizeof(err))) {
            fprintf(stderr, "weftrun: %s\n", err);
            hosts_free(&o.hosts);
            return 2;
        }
        if (hosts_any_remote(&o.hosts)) {
            code = run_across_hosts(argv + i, &o);
            hosts_free(&o.hosts);
            return code;
        }
        hosts_free(&o.hosts);
    }
    /* Every rank here: -x becomes the environment they inherit. */
    spawn_env_t fwd = {0};
    add_forwarded(&fwd, &o);
    for (size_t k = 0; k < fwd.n; k++)
        putenv(fwd.vars[k]); /* kept: putenv holds on to the strings */
    free(fwd.vars);
    spawn_opts_t so = {.nranks = o.nranks, .prefix_output = o.tag,
                       .tool = "weftrun"};
    return spawn_ranks(argv + i, &so);
}
