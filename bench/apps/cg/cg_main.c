/*
 * cg_main.c - the CG mini-app's program: reads the options, runs the
 * solver of cg.c over whichever cg_comm.h implementation it was linked
 * with, and prints on rank 0:
 *
 *   cg: LIB, N ranks, grid NXxNYxNZ per rank (NXxNYxNZ*N in all), I iterations
 *   cg: iter 0 HEX (DEC)          the residual norm of x = 0
 *   cg: iter K HEX (DEC)          after iteration K, K = 1..I
 *   cg: error HEX (DEC)           |x - 1| over the whole grid
 *   cg: time per iteration S s
 *
 * HEX is the C99 %a form, exact, so two runs can be compared bit for bit.
 * The time is the slowest rank's wall time over the I iterations, divided
 * by I, after a few untimed rounds of the same communication.
 *
 * usage: cg [-x NX] [-y NY] [-z NZ] [-i ITERS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cg.h"
#include "cg_comm.h"

#define WARMUP_ROUNDS 10

static int positive(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > 1 << 20)
        return 1;
    *out = (int)v;
    return 0;
}

/* The slowest rank's value: each rank puts its own in its slot of an
 * otherwise zero array, and the sum hands every slot to every rank. */
static int slowest(double mine, double *out)
{
    int n = cg_comm_size();
    double *all = calloc((size_t)n, sizeof(double));
    if (!all)
        return 1;
    all[cg_comm_rank()] = mine;
    int bad = cg_comm_allreduce_sum(all, (size_t)n);
    *out = 0.0;
    for (int r = 0; r < n; r++)
        *out = all[r] > *out ? all[r] : *out;
    free(all);
    return bad;
}

static void print_norm(const char *what, double v)
{
    printf("cg: %s %a (%.6e)\n", what, v, v);
}

int main(int argc, char **argv)
{
    int nx = 32, ny = 32, nz = 32, iters = 50, opt, bad = 0;
    if (cg_comm_init(&argc, &argv))
        return 1;
    while ((opt = getopt(argc, argv, "x:y:z:i:")) != -1) {
        int *dst = opt == 'x' ? &nx : opt == 'y' ? &ny : opt == 'z' ? &nz
                 : opt == 'i' ? &iters : NULL;
        if (!dst || positive(optarg, dst)) {
            fprintf(stderr, "usage: cg [-x NX] [-y NY] [-z NZ] [-i ITERS]"
                            " (each a positive integer)\n");
            cg_comm_finalize();
            return 2;
        }
    }
    int rank = cg_comm_rank(), size = cg_comm_size();
    cg_t cg;
    double *rnorm = malloc((size_t)iters * sizeof(double));
    if (!rnorm || cg_setup(&cg, nx, ny, nz, rank, size)) {
        cg_comm_finalize();
        return 1;
    }
    double r0 = cg_rnorm(&cg), err = 0.0, t = 0.0;
    bad = cg_warmup(&cg, WARMUP_ROUNDS);
    double t0 = cg_comm_wtime();
    bad = bad || cg_iterate(&cg, iters, rnorm);
    double mine = cg_comm_wtime() - t0;
    bad = bad || slowest(mine, &t) || cg_error(&cg, &err);
    if (!bad && rank == 0) {
        printf("cg: %s, %d ranks, grid %dx%dx%d per rank (%dx%dx%d in all),"
               " %d iterations\n", cg_comm_name(), size, nx, ny, nz, nx, ny,
               nz * size, iters);
        print_norm("iter 0", r0);
        for (int i = 0; i < iters; i++) {
            char what[32];
            snprintf(what, sizeof(what), "iter %d", i + 1);
            print_norm(what, rnorm[i]);
        }
        print_norm("error", err);
        printf("cg: time per iteration %.6e s\n", t / iters);
    }
    cg_free(&cg);
    free(rnorm);
    cg_comm_finalize();
    return bad;
}
