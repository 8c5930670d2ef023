/*
 * harness.h - what the C allreduce harnesses of bench/compare share
 * (mpi_allreduce.c, weft_allreduce.c): their options and the element-wise
 * check, so that both libraries are timed and checked the same way.
 */
#ifndef WF_COMPARE_HARNESS_H
#define WF_COMPARE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double min, max, factor;
    int warmup, iters;
    bool broadcast; /* -c broadcast (root 0) instead of allreduce */
} harness_opts_t;

/* -b MIN -e MAX -f FACTOR -w WARMUP -r ITERS -c allreduce|broadcast; 0,
 * or -1 on bad usage. */
int harness_parse(int argc, char **argv, harness_opts_t *o);

/* Small integers, so the sum is exact whatever the reduction order:
 * fills rank's send buffer and clears recv. */
void harness_fill(float *send, float *recv, size_t count, int rank);
/* Elements of recv that differ from the sum over `size` ranks. */
long harness_wrong(const float *recv, size_t count, int size);
/* Broadcast's: the root's buffer holds the pattern, the others' zeros;
 * then the elements of a buffer that differ from the pattern. */
void harness_fill_bcast(float *buf, size_t count, int rank);
long harness_wrong_bcast(const float *buf, size_t count);
/* Rank 0's line for one size: "size count time_us algbw busbw wrong",
 * with algbw = bytes / time and busbw = algbw * 2(n-1)/n for allreduce,
 * algbw for broadcast (nccl-tests' definitions). */
void harness_report(const harness_opts_t *o, size_t count, double time_us,
                    int size, long wrong);

#endif
