/*
 * cg.h - conjugate gradients on the 3-D Poisson problem, 7-point stencil,
 * zero Dirichlet boundary, the grid cut into slabs along z, one slab of
 * nx*ny*nz points per rank.  The right-hand side is A*1, so the exact
 * solution is 1 everywhere and the error can be checked.
 */
#ifndef CG_H
#define CG_H

#include <stddef.h>

typedef struct {
    int nx, ny, nz;      /* this rank's points; nz planes along z */
    int rank, size;      /* the slab's place along z */
    size_t plane;        /* nx * ny */
    /* nz + 2 planes each: planes 0 and nz+1 hold the neighbours' edge
     * planes (zero beyond the global boundary); the solver's vectors. */
    double *x, *r, *p, *ap;
    double rr;           /* r.r over all ranks, kept between iterations */
} cg_t;

/* Allocates the vectors and sets x = 0, r = p = b; computes r.r (one
 * allreduce).  Returns 0, or nonzero after printing why. */
int cg_setup(cg_t *cg, int nx, int ny, int nz, int rank, int size);
void cg_free(cg_t *cg);

/* The sqrt of r.r after setup: the residual norm of x = 0. */
double cg_rnorm(const cg_t *cg);

/* Runs `iters` iterations; rnorm[i] = |r| after iteration i+1.  Each
 * iteration: one halo exchange of p, two allreduces (p.Ap and r.r). */
int cg_iterate(cg_t *cg, int iters, double *rnorm);

/* The 2-norm over the whole grid of x - 1 (one allreduce). */
int cg_error(const cg_t *cg, double *err);

/* `rounds` halo exchanges and allreduces whose results are not used:
 * both libraries set connections up on first use, which is not what the
 * timed iterations should measure. */
int cg_warmup(cg_t *cg, int rounds);

#endif
