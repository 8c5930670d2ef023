/*
 * weft-rendezvous - the standalone rendezvous server ranks meet through.
 *
 *   weft-rendezvous --listen HOST:PORT [--port-file FILE] [--token-file F]
 *                   [--max-jobs N]
 *   weft-rendezvous --check HOST:PORT [--token-file F] [--timeout SECONDS]
 *
 * One server serves any number of jobs (keyed by WEFT_JOB_ID); point every
 * rank at it with WEFT_RENDEZVOUS=HOST:PORT.  Runs until SIGINT or SIGTERM.
 * Uses the public API only (weft_server_start/address/stop/check); the
 * server itself runs on a library thread, so main just waits for a signal.
 * As a service it logs at info unless WEFT_LOG says otherwise: one
 * key=value line per job start and end (docs/launchers.md).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft.h"

static const char usage[] =
    "usage: weft-rendezvous --listen HOST:PORT [--port-file FILE] "
    "[--token-file FILE] [--max-jobs N]\n"
    "       weft-rendezvous --check HOST:PORT [--token-file FILE] "
    "[--timeout SECONDS]\n"
    "\n"
    "Runs the weft rendezvous server until SIGINT or SIGTERM, or checks\n"
    "that one serves.\n"
    "\n"
    "  --listen HOST:PORT   address to listen on; port 0 picks a free port;\n"
    "                       IPv6 as [ADDR]:PORT, e.g. [::]:29500;\n"
    "                       0.0.0.0:PORT listens on every interface\n"
    "  --port-file FILE     once listening, write the actual HOST:PORT to "
    "FILE\n"
    "  --token-file FILE    require every client to prove the token in FILE\n"
    "                       (its first line; same as WEFT_TOKEN_FILE).\n"
    "                       Without it (and without WEFT_TOKEN) each job's\n"
    "                       first client sets the job's token\n"
    "  --max-jobs N         jobs held at once; the next one is refused with\n"
    "                       a message naming the limit (WEFT_RDV_MAX_JOBS)\n"
    "  --check HOST:PORT    health probe: join a job of its own on the server\n"
    "                       there, set and read back a key; exit 0 when it\n"
    "                       serves, 1 (with the cause) when not\n"
    "  --timeout SECONDS    how long --check may take (default 5)\n"
    "  --help               show this text\n"
    "\n"
    "Ranks reach it with WEFT_RENDEZVOUS=HOST:PORT; one server serves any\n"
    "number of jobs, told apart by WEFT_JOB_ID.  The largest accepted frame\n"
    "is WEFT_RDV_MAX_FRAME; a client's vanished host is noticed after\n"
    "about twice WEFT_RDV_KEEPALIVE.  Logs at WEFT_LOG, info by default:\n"
    "key=value lines (event=listening, job_start, job_end, conn_lost,\n"
    "stopped).\n";

typedef struct {
    const char *listen;
    const char *port_file;
    const char *token_file;
    const char *max_jobs;
    const char *check;
    const char *timeout;
} options_t;

/* A decimal number in [1, max]. */
static bool positive(const char *text, long max)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    return !errno && end != text && !*end && v >= 1 && v <= max;
}

/* Returns -1 to go on, else the exit code (0 after --help, 2 on errors). */
static int parse_args(int argc, char **argv, options_t *opt)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        const char **dst = !strcmp(a, "--listen")       ? &opt->listen
                           : !strcmp(a, "--port-file")  ? &opt->port_file
                           : !strcmp(a, "--token-file") ? &opt->token_file
                           : !strcmp(a, "--max-jobs")   ? &opt->max_jobs
                           : !strcmp(a, "--check")      ? &opt->check
                           : !strcmp(a, "--timeout")    ? &opt->timeout
                                                        : NULL;
        if (!dst) {
            fprintf(stderr, "weft-rendezvous: unknown argument '%s'\n\n%s",
                    a, usage);
            return 2;
        }
        if (i + 1 >= argc || !argv[i + 1][0]) {
            fprintf(stderr, "weft-rendezvous: %s needs a value\n\n%s", a,
                    usage);
            return 2;
        }
        *dst = argv[++i];
    }
    if (!opt->listen == !opt->check) {
        fprintf(stderr, "weft-rendezvous: give --listen HOST:PORT or --check "
                        "HOST:PORT\n\n%s", usage);
        return 2;
    }
    if (opt->max_jobs && !positive(opt->max_jobs, 1 << 30)) {
        fprintf(stderr, "weft-rendezvous: --max-jobs %s is not a number of "
                        "jobs from 1 to %d\n", opt->max_jobs, 1 << 30);
        return 2;
    }
    if (opt->timeout && !positive(opt->timeout, 86400)) {
        fprintf(stderr, "weft-rendezvous: --timeout %s is not a number of "
                        "seconds from 1 to 86400\n", opt->timeout);
        return 2;
    }
    return -1;
}

/* Written to a temporary name and renamed, so a reader polling for the
 * file never sees it half written. */
static int write_port_file(const char *path, const char *address)
{
    char tmp[4096];

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
        (int)sizeof(tmp)) {
        fprintf(stderr, "weft-rendezvous: --port-file path too long\n");
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", address) < 0 || fclose(f) != 0 ||
        rename(tmp, path) != 0) {
        fprintf(stderr, "weft-rendezvous: cannot write %s: %s\n", path,
                strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* --check: exit 0 when the server answers the probe, 1 when not (the
 * library has logged the cause). */
static int check(const options_t *opt)
{
    long seconds = opt->timeout ? strtol(opt->timeout, NULL, 10) : 5;
    weft_status_t st = weft_server_check(opt->check, seconds * 1000);
    if (st != WEFT_OK) {
        fprintf(stderr, "weft-rendezvous: %s does not serve: %s\n",
                opt->check, weft_strerror(st));
        return st == WEFT_ERR_INVALID_ARG ? 2 : 1;
    }
    printf("weft-rendezvous: %s serves\n", opt->check);
    return 0;
}

int main(int argc, char **argv)
{
    options_t opt = {0};
    weft_server_t server = NULL;
    sigset_t sigs;
    int sig = 0;

    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    /* The library reads the token file itself (WEFT_TOKEN_FILE), so the
     * token never sits on this command line or in our memory. */
    if (opt.token_file) {
        if (access(opt.token_file, R_OK) != 0) {
            fprintf(stderr, "weft-rendezvous: --token-file %s: %s\n",
                    opt.token_file, strerror(errno));
            return 2;
        }
        setenv("WEFT_TOKEN_FILE", opt.token_file, 1);
    }
    if (opt.check)
        return check(&opt);
    if (opt.max_jobs)
        setenv("WEFT_RDV_MAX_JOBS", opt.max_jobs, 1);
    /* A service's log is its job starts and ends (info); WEFT_LOG set by
     * the caller wins. */
    setenv("WEFT_LOG", "info", 0);
    /* Block the signals before the server thread starts so it inherits the
     * mask and only sigwait below receives them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    weft_status_t st = weft_server_start(opt.listen, &server);
    if (st != WEFT_OK) {
        fprintf(stderr, "weft-rendezvous: cannot listen on %s: %s\n",
                opt.listen, weft_strerror(st));
        return st == WEFT_ERR_INVALID_ARG ? 2 : 1;
    }
    const char *address = weft_server_address(server);
    if (opt.port_file && write_port_file(opt.port_file, address) != 0) {
        weft_server_stop(server);
        return 1;
    }
    printf("weft-rendezvous listening on %s\n", address);
    fflush(stdout);

    while (sigwait(&sigs, &sig) != 0)
        ;
    st = weft_server_stop(server);
    printf("weft-rendezvous stopped (signal %d)\n", sig);
    return st == WEFT_OK ? 0 : 1;
}
