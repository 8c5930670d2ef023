/*
 * cg.c - the textbook conjugate gradient iteration (Hestenes and Stiefel;
 * as in Saad, "Iterative Methods for Sparse Linear Systems", algorithm
 * 6.18) on the slab-decomposed 7-point Poisson operator of cg.h.  All
 * communication goes through cg_comm.h.  This file is compiled once and
 * linked into both the MPI and the weft binary, so every floating-point
 * operation outside the allreduces is the same machine code on both.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cg.h"
#include "cg_comm.h"

/* Index of point (i, j) of plane k (0 and nz+1 are the halo planes). */
#define AT(cg, i, j, k) (((size_t)(k) * (size_t)(cg)->ny + (size_t)(j)) * \
                         (size_t)(cg)->nx + (size_t)(i))

static size_t cg_len(const cg_t *cg)
{
    return cg->plane * (size_t)(cg->nz + 2);
}

/* y = A p on this rank's planes; p's halo planes must be current.  The
 * neighbours are subtracted in one fixed order, so the result does not
 * depend on the library. */
static void apply(const cg_t *cg, const double *p, double *y)
{
    const size_t up = cg->plane;
    for (int k = 1; k <= cg->nz; k++)
        for (int j = 0; j < cg->ny; j++)
            for (int i = 0; i < cg->nx; i++) {
                size_t c = AT(cg, i, j, k);
                double v = 6.0 * p[c];
                if (i > 0)
                    v -= p[c - 1];
                if (i < cg->nx - 1)
                    v -= p[c + 1];
                if (j > 0)
                    v -= p[c - cg->nx];
                if (j < cg->ny - 1)
                    v -= p[c + cg->nx];
                v -= p[c - up];
                v -= p[c + up];
                y[c] = v;
            }
}

/* This rank's part of a.b, summed in index order. */
static double dot_local(const cg_t *cg, const double *a, const double *b)
{
    double s = 0.0;
    for (size_t c = cg->plane; c < cg->plane * (size_t)(cg->nz + 1); c++)
        s += a[c] * b[c];
    return s;
}

static int dot(const cg_t *cg, const double *a, const double *b, double *out)
{
    *out = dot_local(cg, a, b);
    return cg_comm_allreduce_sum(out, 1);
}

/* p's halo planes <- the neighbours' edge planes. */
static int halo(const cg_t *cg, double *p)
{
    const size_t n = cg->plane;
    return cg_comm_halo(p + n, p, p + n * (size_t)cg->nz,
                        p + n * (size_t)(cg->nz + 1), n);
}

int cg_setup(cg_t *cg, int nx, int ny, int nz, int rank, int size)
{
    *cg = (cg_t){.nx = nx, .ny = ny, .nz = nz, .rank = rank, .size = size,
                 .plane = (size_t)nx * (size_t)ny};
    size_t len = cg_len(cg);
    double **vec[] = {&cg->x, &cg->r, &cg->p, &cg->ap};
    for (size_t v = 0; v < sizeof(vec) / sizeof(vec[0]); v++)
        if (!(*vec[v] = calloc(len, sizeof(double)))) {
            fprintf(stderr, "cg: out of memory for %zu doubles\n", len);
            cg_free(cg);
            return 1;
        }
    /* b = A 1: 6 minus the neighbours inside the global grid. */
    const int zlast = nz * size - 1;
    for (int k = 1; k <= nz; k++) {
        int z = rank * nz + k - 1;
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                int inside = (i > 0) + (i < nx - 1) + (j > 0) +
                             (j < ny - 1) + (z > 0) + (z < zlast);
                size_t c = AT(cg, i, j, k);
                cg->r[c] = cg->p[c] = 6.0 - inside;
            }
    }
    return dot(cg, cg->r, cg->r, &cg->rr);
}

void cg_free(cg_t *cg)
{
    free(cg->x);
    free(cg->r);
    free(cg->p);
    free(cg->ap);
    cg->x = cg->r = cg->p = cg->ap = NULL;
}

double cg_rnorm(const cg_t *cg)
{
    return sqrt(cg->rr);
}

int cg_iterate(cg_t *cg, int iters, double *rnorm)
{
    const size_t lo = cg->plane, hi = cg->plane * (size_t)(cg->nz + 1);
    for (int it = 0; it < iters; it++) {
        double pap, rr_new;
        if (halo(cg, cg->p))
            return 1;
        apply(cg, cg->p, cg->ap);
        if (dot(cg, cg->p, cg->ap, &pap))
            return 1;
        double alpha = cg->rr / pap;
        for (size_t c = lo; c < hi; c++) {
            cg->x[c] += alpha * cg->p[c];
            cg->r[c] -= alpha * cg->ap[c];
        }
        if (dot(cg, cg->r, cg->r, &rr_new))
            return 1;
        double beta = rr_new / cg->rr;
        cg->rr = rr_new;
        for (size_t c = lo; c < hi; c++)
            cg->p[c] = cg->r[c] + beta * cg->p[c];
        rnorm[it] = sqrt(rr_new);
    }
    return 0;
}

int cg_error(const cg_t *cg, double *err)
{
    double s = 0.0;
    for (size_t c = cg->plane; c < cg->plane * (size_t)(cg->nz + 1); c++)
        s += (cg->x[c] - 1.0) * (cg->x[c] - 1.0);
    if (cg_comm_allreduce_sum(&s, 1))
        return 1;
    *err = sqrt(s);
    return 0;
}

int cg_warmup(cg_t *cg, int rounds)
{
    /* ap's halo planes are never read (apply reads p's): scratch here. */
    for (int i = 0; i < rounds; i++) {
        double s = 1.0;
        if (halo(cg, cg->ap) || cg_comm_allreduce_sum(&s, 1))
            return 1;
    }
    return 0;
}
