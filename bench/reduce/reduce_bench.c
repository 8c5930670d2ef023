/*
 * reduce_bench.c - `make bench-reduce`: single-core throughput of the host
 * reduction kernels against memcpy on buffers larger than the caches.
 *
 * Bandwidth here is memory traffic per second: a reduction dst = a op b
 * reads two buffers and writes one (3 x bytes), memcpy reads one and
 * writes one (2 x bytes).  Each kernel runs REPS times over the same
 * buffers after a warm-up pass (so page faults are not timed); the best
 * repetition counts, as the machine is shared.
 *
 * usage: reduce-bench [MiB per buffer, default 64] [reps, default 5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reduce/reduce.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double best_memcpy(void *dst, const void *src, size_t bytes, int reps)
{
    double best = 1e30;
    memcpy(dst, src, bytes);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        memcpy(dst, src, bytes);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static double best_reduce(void *dst, const void *a, const void *b,
                          size_t bytes, weft_dtype_t dtype, weft_op_t op,
                          int reps)
{
    size_t n = bytes / wf_dtype_size(dtype);
    wf_reduce_fn fn = wf_reduce_get(dtype, op);
    double best = 1e30;
    fn(dst, a, b, n);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        fn(dst, a, b, n);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    size_t bytes = mib << 20;
    unsigned char *a = malloc(bytes), *b = malloc(bytes), *d = malloc(bytes);
    if (!mib || reps < 1 || !a || !b || !d) {
        fprintf(stderr, "usage: reduce-bench [MiB > 0] [reps > 0]\n");
        return 2;
    }
    /* Small finite values in every dtype (no NaN or denormal slow paths). */
    for (size_t i = 0; i < bytes; i++) {
        a[i] = (unsigned char)(i % 61 == 0 ? 0x3c : i % 7);
        b[i] = (unsigned char)(i % 53 == 0 ? 0x3c : i % 5);
    }
    double t_copy = best_memcpy(d, a, bytes, reps);
    double copy_gbs = 2.0 * (double)bytes / t_copy / 1e9;
    printf("# %zu MiB per buffer, best of %d; bandwidth = bytes read + "
           "written per second\n", mib, reps);
    printf("%-10s %-5s %10s %12s\n", "dtype", "op", "GB/s", "vs memcpy");
    printf("%-10s %-5s %10.2f %12s\n", "memcpy", "-", copy_gbs, "1.00");
    static const weft_dtype_t dtypes[] = {WEFT_FLOAT32, WEFT_FLOAT16,
                                          WEFT_BFLOAT16, WEFT_FLOAT64,
                                          WEFT_INT32, WEFT_INT8};
    static const weft_op_t ops[] = {WEFT_SUM, WEFT_MAX};
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++) {
            double t = best_reduce(d, a, b, bytes, dtypes[i], ops[j], reps);
            double gbs = 3.0 * (double)bytes / t / 1e9;
            printf("%-10s %-5s %10.2f %12.2f\n", wf_dtype_name(dtypes[i]),
                   wf_op_name(ops[j]), gbs, gbs / copy_gbs);
        }
    }
    free(a), free(b), free(d);
    return 0;
}
