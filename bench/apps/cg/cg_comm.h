/*
 * cg_comm.h - everything the CG mini-app needs from a communication
 * library, so that the solver (cg.c) is one object linked unchanged against
 * either implementation: cg_comm_mpi.c (MPI) or cg_comm_weft.c (weft).
 * Linking the same solver object into both binaries is what makes their
 * answers comparable bit for bit: only the reductions' order can differ.
 *
 * Every function returns 0 on success; on failure it prints why to stderr
 * and returns nonzero (the caller stops).
 */
#ifndef CG_COMM_H
#define CG_COMM_H

#include <stddef.h>

/* Joins the job (MPI_Init, or a weft communicator from the launcher's
 * environment). */
int cg_comm_init(int *argc, char ***argv);
/* Leaves it; nothing else may be called afterwards. */
void cg_comm_finalize(void);

int cg_comm_rank(void);
int cg_comm_size(void);
/* The library's name, printed in the output's header. */
const char *cg_comm_name(void);

/* vals[0..n) <- their sum over all ranks, on every rank. */
int cg_comm_allreduce_sum(double *vals, size_t n);

/* The slab halo: sends `n` doubles from send_lo to rank-1 and from send_hi
 * to rank+1, receives rank-1's into recv_lo and rank+1's into recv_hi.
 * The first rank has no lower neighbour and the last no upper one: those
 * buffers are neither read nor written. */
int cg_comm_halo(const double *send_lo, double *recv_lo,
                 const double *send_hi, double *recv_hi, size_t n);

/* Seconds of wall time from an arbitrary origin, for differences. */
double cg_comm_wtime(void);

#endif
