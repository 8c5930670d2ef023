/*
 * mpi_allreduce.c - the MPI side of `make compare`: MPI_Allreduce, or
 * MPI_Bcast from rank 0 with -c broadcast, in the same
 * sweep weft-bench makes (sizes -b..-e times -f, -w warm-up and -r timed
 * iterations, float32 sum, out of place, an element-wise check first) and
 * the same definitions: time = the slowest rank's average, algbw = bytes
 * / time, busbw = algbw * 2(n-1)/n.
 *
 * Output (rank 0): one line per size, "size count time_us algbw busbw
 * wrong", after a "#" line naming the columns.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* One call: allreduce out of place, or broadcast from rank 0 in recv. */
static void call(const harness_opts_t *o, float *send, float *recv,
                 size_t count)
{
    if (o->broadcast)
        MPI_Bcast(recv, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
}

/* The check (harness.c): one call on small integers. */
static long check(const harness_opts_t *o, float *send, float *recv,
                  size_t count, int rank, int size)
{
    if (o->broadcast) {
        harness_fill_bcast(recv, count, rank);
        call(o, send, recv, count);
        return harness_wrong_bcast(recv, count);
    }
    harness_fill(send, recv, count, rank);
    call(o, send, recv, count);
    return harness_wrong(recv, count, size);
}

static void one_size(const harness_opts_t *o, float *send, float *recv,
                     size_t count, int rank, int size)
{
    long wrong = check(o, send, recv, count, rank, size), total_wrong = 0;
    for (int i = 0; i < o->warmup; i++)
        call(o, send, recv, count);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o->iters; i++)
        call(o, send, recv, count);
    double t = (MPI_Wtime() - t0) * 1e6 / o->iters, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    if (rank == 0)
        harness_report(o, count, tmax, size, total_wrong);
}

int main(int argc, char **argv)
{
    harness_opts_t o;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (harness_parse(argc, argv, &o) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce [-b MIN] [-e MAX] "
                    "[-f FACTOR] [-w WARMUP] [-r ITERS] "
                    "[-c allreduce|broadcast]\n");
        MPI_Finalize();
        return 2;
    }
    size_t max_count = (size_t)o.max / sizeof(float) + 1;
    float *send = malloc(max_count * sizeof(float));
    float *recv = malloc(max_count * sizeof(float));
    if (!send || !recv)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("# size count time_us algbw busbw wrong (%s, %d ranks)\n",
               o.broadcast ? "MPI_Bcast" : "MPI_Allreduce", size);
    for (double b = o.min; b <= o.max; b *= o.factor)
        if ((size_t)b / sizeof(float) > 0)
            one_size(&o, send, recv, (size_t)b / sizeof(float), rank, size);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
