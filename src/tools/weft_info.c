/*
 * weft-info - what this weft is and how it is configured:
 *   weft-info             version and compiled-in parts
 *   weft-info --config    every WEFT_* knob with value, source, description
 *   weft-info --env-markdown   docs/env.md, generated from params.def
 *   weft-info --simulate COLLECTIVE --ranks N --bytes B [--alpha US]
 *             [--beta GB/s] [--gamma GB/s]   predicted time per algorithm
 *   weft-info --topology [--json] [--ranks N]   what weft sees on this node
 *             and what each of N local ranks would use (docs/topology.md)
 *   weft-info --doctor    pre-flight check of this host, OK/WARN/FAIL
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

/* weft-info --simulate COLL --ranks N --bytes B [--ranks-per-node K]
 * [--alpha US] [--beta GB/s] [--gamma GB/s] */
static int simulate(int argc, char **argv)
{
    const char *coll = argv[2];
    int ranks = 0, per_node = 1;
    double bytes = -1, alpha = 2.0, beta = 12.5, gamma = 10.0;
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        char *end;
        double x = strtod(v, &end);
        if (*end == 'k' || *end == 'K')
            x *= 1024, end++;
        else if (*end == 'm' || *end == 'M')
            x *= 1048576, end++;
        else if (*end == 'g' || *end == 'G')
            x *= 1073741824.0, end++;
        if (*end) {
            fprintf(stderr, "weft-info: bad value %s for %s\n", v, f);
            return 2;
        }
        if (!strcmp(f, "--ranks")) ranks = (int)x;
        else if (!strcmp(f, "--ranks-per-node")) per_node = (int)x;
        else if (!strcmp(f, "--bytes")) bytes = x;
        else if (!strcmp(f, "--alpha")) alpha = x;
        else if (!strcmp(f, "--beta")) beta = x;
        else if (!strcmp(f, "--gamma")) gamma = x;
        else {
            fprintf(stderr, "weft-info: unknown option %s\n", f);
            return 2;
        }
    }
    if (ranks < 1 || bytes < 0 || (argc - 3) % 2) {
        fprintf(stderr, "usage: weft-info --simulate COLLECTIVE --ranks N "
                "--bytes B [--ranks-per-node K] [--alpha US] [--beta GB/s] "
                "[--gamma GB/s]\n");
        return 2;
    }
    return weft_simulate_nodes(coll, ranks, per_node, (size_t)bytes, alpha,
                               beta, gamma, stdout) == WEFT_OK ? 0 : 1;
}

/* weft-info --topology [--json] [--ranks N] (N: local ranks, default 1) */
static int topology(int argc, char **argv)
{
    int ranks = 1, json = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
            char *end;
            ranks = (int)strtol(argv[++i], &end, 10);
            if (*end || ranks < 1 || ranks > 4096) {
                fprintf(stderr, "weft-info: --ranks wants 1-4096, not %s\n",
                        argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: weft-info --topology [--json] "
                    "[--ranks N]\n");
            return 2;
        }
    }
    return weft_topology_print(stdout, ranks, json) == WEFT_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--topology") == 0)
        return topology(argc, argv);
    if (argc == 2 && strcmp(argv[1], "--doctor") == 0)
        return weft_doctor(stdout) == WEFT_OK ? 0 : 1;
    if (argc >= 3 && strcmp(argv[1], "--simulate") == 0)
        return simulate(argc, argv);
    if (argc == 2 && strcmp(argv[1], "--config") == 0)
        return weft_config_dump(stdout) == WEFT_OK ? 0 : 1;
    if (argc == 2 && strcmp(argv[1], "--env-markdown") == 0)
        return weft_config_dump_markdown(stdout) == WEFT_OK ? 0 : 1;
    if (argc > 1) {
        fprintf(stderr, "usage: weft-info [--config | --env-markdown | "
                "--simulate COLLECTIVE --ranks N --bytes B ... | "
                "--topology [--json] [--ranks N] | --doctor]\n");
        return strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    int v = weft_get_version();
    printf("weft %d.%d.%d\n", v / 10000, v / 100 % 100, v % 100);
    printf("%s\n", weft_build_info());
    printf("run `weft-info --config` for every setting\n");
    return 0;
}
