/*
 * harness.c - options and the element-wise check of the C allreduce
 * harnesses (harness.h).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': return v * 1024;
    case 'm': case 'M': return v * 1048576;
    case 'g': case 'G': return v * 1073741824.0;
    default: return v;
    }
}

int harness_parse(int argc, char **argv, harness_opts_t *o)
{
    *o = (harness_opts_t){.min = 8, .max = 64 << 20, .factor = 2,
                          .warmup = 5, .iters = 20};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "-b")) o->min = parse_size(v);
        else if (!strcmp(f, "-e")) o->max = parse_size(v);
        else if (!strcmp(f, "-f")) o->factor = atof(v);
        else if (!strcmp(f, "-w")) o->warmup = atoi(v);
        else if (!strcmp(f, "-r")) o->iters = atoi(v);
        else return -1;
    }
    return o->factor > 1 && o->iters > 0 && o->min <= o->max ? 0 : -1;
}

void harness_fill(float *send, float *recv, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        send[i] = (float)((i + (size_t)rank) % 4);
    memset(recv, 0, count * sizeof(float));
}

long harness_wrong(const float *recv, size_t count, int size)
{
    long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        double expect = 0;
        for (int r = 0; r < size; r++)
            expect += (double)((i + (size_t)r) % 4);
        wrong += recv[i] != (float)expect;
    }
    return wrong;
}

void harness_report(size_t count, double time_us, int size, long wrong)
{
    double bytes = (double)(count * sizeof(float));
    double algbw = time_us > 0 ? bytes / time_us / 1e3 : 0;
    printf("%zu %zu %.3f %.6f %.6f %ld\n", count * sizeof(float), count,
           time_us, algbw, algbw * 2.0 * (size - 1) / size, wrong);
    fflush(stdout);
}
