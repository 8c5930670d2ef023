/*
 * weft-rendezvous - the standalone rendezvous server ranks meet through.
 *
 *   weft-rendezvous --listen HOST:PORT [--port-file FILE] [--token-file F]
 *
 * One server serves any number of jobs (keyed by WEFT_JOB_ID); point every
 * rank at it with WEFT_RENDEZVOUS=HOST:PORT.  Runs until SIGINT or SIGTERM.
 * Uses the public API only (weft_server_start/address/stop); the server
 * itself runs on a library thread, so main just waits for a signal.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft.h"

static const char usage[] =
    "usage: weft-rendezvous --listen HOST:PORT [--port-file FILE] "
    "[--token-file FILE]\n"
    "\n"
    "Runs the weft rendezvous server until SIGINT or SIGTERM.\n"
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
    "  --help               show this text\n"
    "\n"
    "Ranks reach it with WEFT_RENDEZVOUS=HOST:PORT; one server serves any\n"
    "number of jobs, told apart by WEFT_JOB_ID.  The largest accepted frame\n"
    "is WEFT_RDV_MAX_FRAME; logging follows WEFT_LOG.\n";

typedef struct {
    const char *listen;
    const char *port_file;
    const char *token_file;
} options_t;

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
    if (!opt->listen) {
        fprintf(stderr, "weft-rendezvous: --listen HOST:PORT is required\n\n"
                        "%s", usage);
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

int main(int argc, char **argv)
{
    options_t opt = {0};
    weft_server_t server = NULL;
    sigset_t sigs;
    int sig = 0;

    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    /* Block the signals before the server thread starts so it inherits the
     * mask and only sigwait below receives them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
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
