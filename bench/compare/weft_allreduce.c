/*
 * weft_allreduce.c - weft's twin of mpi_allreduce.c, for `make
 * bench-latency` and `make bench-shm`: allreduce or (-c broadcast)
 * broadcast, the same sweep, check and loop (a barrier, then -r calls
 * back to back timed as one; time = the slowest rank's average), so that
 * weft and Open MPI are timed by the same harness.  weft-bench times each
 * call on its own, for its percentiles, and that clock read and store per
 * call show in an 8-byte allreduce's time
 * (bench/results/2026-11-29-small-messages-third-pass.md).
 *
 * Run under weftrun (weft_comm_init takes the rank from the environment).
 * Output (rank 0): as mpi_allreduce's.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "weft.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, weft_status_t st)
{
    fprintf(stderr, "weft_allreduce: %s: %s\n", what, weft_strerror(st));
    exit(1);
}

static void allreduce(const void *send, void *recv, size_t count,
                      weft_dtype_t dtype, weft_op_t op, weft_comm_t comm)
{
    weft_status_t st = weft_allreduce(send, recv, count, dtype, op, comm);
    if (st != WEFT_OK)
        die("weft_allreduce", st);
}

/* One call: allreduce out of place, or broadcast from rank 0 in recv,
 * as mpi_allreduce.c does. */
static void call(const harness_opts_t *o, float *send, float *recv,
                 size_t count, weft_comm_t comm)
{
    if (!o->broadcast) {
        allreduce(send, recv, count, WEFT_FLOAT32, WEFT_SUM, comm);
        return;
    }
    weft_status_t st = weft_broadcast(recv, recv, count, WEFT_FLOAT32, 0,
                                      comm);
    if (st != WEFT_OK)
        die("weft_broadcast", st);
}

static long check(const harness_opts_t *o, float *send, float *recv,
                  size_t count, int rank, int size, weft_comm_t comm)
{
    if (o->broadcast) {
        harness_fill_bcast(recv, count, rank);
        call(o, send, recv, count, comm);
        return harness_wrong_bcast(recv, count);
    }
    harness_fill(send, recv, count, rank);
    call(o, send, recv, count, comm);
    return harness_wrong(recv, count, size);
}

static void one_size(const harness_opts_t *o, float *send, float *recv,
                     size_t count, int rank, int size, weft_comm_t comm)
{
    long wrong = check(o, send, recv, count, rank, size, comm);
    long total_wrong = 0;
    for (int i = 0; i < o->warmup; i++)
        call(o, send, recv, count, comm);
    weft_status_t st = weft_barrier(comm);
    if (st != WEFT_OK)
        die("weft_barrier", st);
    double t0 = now_us();
    for (int i = 0; i < o->iters; i++)
        call(o, send, recv, count, comm);
    double t = (now_us() - t0) / o->iters, tmax = 0;
    allreduce(&t, &tmax, 1, WEFT_FLOAT64, WEFT_MAX, comm);
    allreduce(&wrong, &total_wrong, 1, WEFT_INT64, WEFT_SUM, comm);
    if (rank == 0)
        harness_report(o, count, tmax, size, total_wrong);
}

int main(int argc, char **argv)
{
    harness_opts_t o;
    weft_comm_t comm;
    int rank, size;
    if (harness_parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: weft_allreduce [-b MIN] [-e MAX] "
                "[-f FACTOR] [-w WARMUP] [-r ITERS] [-c allreduce|broadcast] "
                "(under weftrun)\n");
        return 2;
    }
    weft_status_t st = weft_comm_init(&comm);
    if (st != WEFT_OK)
        die("weft_comm_init", st);
    weft_comm_rank(comm, &rank);
    weft_comm_size(comm, &size);
    size_t max_count = (size_t)o.max / sizeof(float) + 1;
    float *send = malloc(max_count * sizeof(float));
    float *recv = malloc(max_count * sizeof(float));
    if (!send || !recv)
        die("buffers", WEFT_ERR_NO_MEMORY);
    if (rank == 0)
        printf("# size count time_us algbw busbw wrong (weft_%s, %d ranks)\n",
               o.broadcast ? "broadcast" : "allreduce", size);
    for (double b = o.min; b <= o.max; b *= o.factor)
        if ((size_t)b / sizeof(float) > 0)
            one_size(&o, send, recv, (size_t)b / sizeof(float), rank, size,
                     comm);
    free(send);
    free(recv);
    st = weft_comm_destroy(comm);
    return st == WEFT_OK ? 0 : 1;
}
