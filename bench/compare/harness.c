/*
 * harness.c - options and the element-wise check of the C allreduce
 * harnesses (harness.h).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number with an optional k/m/g suffix (bytes); -1 when it is not. */
static double parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s)
        return -1;
    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1024; end++; break;
    case 'm': case 'M': unit = 1048576; end++; break;
    case 'g': case 'G': unit = 1073741824.0; end++; break;
    default: break;
    }
    return *end ? -1 : v * unit;
}

/* A whole number >= 0; -1 when it is not. */
static int parse_count(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return end == s || *end || v < 0 || v > 1000000000 ? -1 : (int)v;
}

int harness_parse(int argc, char **argv, harness_opts_t *o)
{
    *o = (harness_opts_t){.min = 8, .max = 64 << 20, .factor = 2,
                          .warmup = 5, .iters = 20};
    if (argc % 2 == 0)
        return -1; /* an option without its value */
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "-b")) o->min = parse_size(v);
        else if (!strcmp(f, "-e")) o->max = parse_size(v);
        else if (!strcmp(f, "-f")) o->factor = atof(v);
        else if (!strcmp(f, "-w")) o->warmup = parse_count(v);
        else if (!strcmp(f, "-r")) o->iters = parse_count(v);
        else if (!strcmp(f, "-c") && !strcmp(v, "broadcast"))
            o->broadcast = true;
        else if (!strcmp(f, "-c") && !strcmp(v, "allreduce"))
            o->broadcast = false;
        else return -1;
    }
    /* At least one float per size, so that the sweep moves. */
    return o->min >= (double)sizeof(float) && o->min <= o->max &&
                   o->factor > 1 && o->warmup >= 0 && o->iters > 0
               ? 0 : -1;
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

void harness_fill_bcast(float *buf, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = rank == 0 ? (float)(i % 4) : 0.0f;
}

long harness_wrong_bcast(const float *buf, size_t count)
{
    long wrong = 0;
    for (size_t i = 0; i < count; i++)
        wrong += buf[i] != (float)(i % 4);
    return wrong;
}

void harness_report(const harness_opts_t *o, size_t count, double time_us,
                    int size, long wrong)
{
    double bytes = (double)(count * sizeof(float));
    double algbw = time_us > 0 ? bytes / time_us / 1e3 : 0;
    double busbw = o->broadcast ? algbw : algbw * 2.0 * (size - 1) / size;
    printf("%zu %zu %.3f %.6f %.6f %ld\n", count * sizeof(float), count,
           time_us, algbw, busbw, wrong);
    fflush(stdout);
}
