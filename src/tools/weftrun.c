/*
 * weftrun - start N local ranks of a program with an embedded rendezvous:
 *   weftrun -n N [-l|--tag-output] [--token-file F] [--] prog [args...]
 * Exits with the first failing rank's exit code; the other ranks are
 * terminated when one fails.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: weftrun -n N [-l|--tag-output] [--token-file FILE] [--] "
            "PROGRAM [ARGS...]\n"
            "  -n N            number of ranks to start on this host\n"
            "  -l, --tag-output prefix every output line with [rank]\n"
            "  --token-file F  the job's token (first line of F): the server\n"
            "                  and every rank prove it (WEFT_TOKEN_FILE)\n"
            "Each rank gets WEFT_RANK, WEFT_WORLD_SIZE, WEFT_RENDEZVOUS "
            "(an embedded server)\nand WEFT_JOB_ID.  The exit code is the "
            "first failing rank's.\n");
}

int main(int argc, char **argv)
{
    spawn_opts_t o = {.nranks = 0, .prefix_output = false, .tool = "weftrun"};
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 256) {
                fprintf(stderr, "weftrun: -n %s is not a rank count in "
                        "1..256\n", argv[i]);
                return 2;
            }
            o.nranks = (int)n;
        } else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc) {
            /* Ranks and the embedded server read it via the environment,
             * so the token itself never appears on a command line. */
            if (access(argv[++i], R_OK) != 0) {
                fprintf(stderr, "weftrun: --token-file %s: %s\n", argv[i],
                        strerror(errno));
                return 2;
            }
            setenv("WEFT_TOKEN_FILE", argv[i], 1);
        } else if (strcmp(argv[i], "-l") == 0 ||
                   strcmp(argv[i], "--tag-output") == 0) {
            o.prefix_output = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "weftrun: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            break;
        }
    }
    if (o.nranks == 0 || i >= argc) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    return spawn_ranks(argv + i, &o);
}
