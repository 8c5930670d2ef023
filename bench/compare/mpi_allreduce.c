/*
 * mpi_allreduce.c - the MPI_Allreduce side of `make compare`: the same
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

typedef struct {
    double min, max, factor;
    int warmup, iters;
} opts_t;

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

static int parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.min = 8, .max = 64 << 20, .factor = 2, .warmup = 5,
                  .iters = 20};
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

/* Small integers, so the sum is exact whatever the reduction order. */
static long check(float *send, float *recv, size_t count, int rank, int size)
{
    long wrong = 0;
    for (size_t i = 0; i < count; i++)
        send[i] = (float)((i + (size_t)rank) % 4);
    memset(recv, 0, count * sizeof(float));
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < count; i++) {
        double expect = 0;
        for (int r = 0; r < size; r++)
            expect += (double)((i + (size_t)r) % 4);
        wrong += recv[i] != (float)expect;
    }
    return wrong;
}

static void one_size(const opts_t *o, float *send, float *recv, size_t count,
                     int rank, int size)
{
    long wrong = check(send, recv, count, rank, size), total_wrong = 0;
    for (int i = 0; i < o->warmup; i++)
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o->iters; i++)
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) * 1e6 / o->iters, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    if (rank != 0)
        return;
    double bytes = (double)(count * sizeof(float));
    double algbw = tmax > 0 ? bytes / tmax / 1e3 : 0;
    printf("%zu %zu %.3f %.6f %.6f %ld\n", count * sizeof(float), count,
           tmax, algbw, algbw * 2.0 * (size - 1) / size, total_wrong);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    opts_t o;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce [-b MIN] [-e MAX] "
                    "[-f FACTOR] [-w WARMUP] [-r ITERS]\n");
        MPI_Finalize();
        return 2;
    }
    size_t max_count = (size_t)o.max / sizeof(float) + 1;
    float *send = malloc(max_count * sizeof(float));
    float *recv = malloc(max_count * sizeof(float));
    if (!send || !recv)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("# size count time_us algbw busbw wrong (MPI_Allreduce, "
               "%d ranks)\n", size);
    for (double b = o.min; b <= o.max; b *= o.factor)
        if ((size_t)b / sizeof(float) > 0)
            one_size(&o, send, recv, (size_t)b / sizeof(float), rank, size);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
