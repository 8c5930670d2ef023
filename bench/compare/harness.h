/*
 * harness.h - what the C allreduce harnesses of bench/compare share
 * (mpi_allreduce.c, weft_allreduce.c): their options and the element-wise
 * check, so that both libraries are timed and checked the same way.
 */
#ifndef WF_COMPARE_HARNESS_H
#define WF_COMPARE_HARNESS_H

#include <stddef.h>

typedef struct {
    double min, max, factor;
    int warmup, iters;
} harness_opts_t;

/* -b MIN -e MAX -f FACTOR -w WARMUP -r ITERS; 0, or -1 on bad usage. */
int harness_parse(int argc, char **argv, harness_opts_t *o);

/* Small integers, so the sum is exact whatever the reduction order:
 * fills rank's send buffer and clears recv. */
void harness_fill(float *send, float *recv, size_t count, int rank);
/* Elements of recv that differ from the sum over `size` ranks. */
long harness_wrong(const float *recv, size_t count, int size);
/* Rank 0's line for one size: "size count time_us algbw busbw wrong",
 * with algbw = bytes / time and busbw = algbw * 2(n-1)/n. */
void harness_report(size_t count, double time_us, int size, long wrong);

#endif
