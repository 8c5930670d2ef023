/*
 * cg_comm_mpi.c - cg_comm.h over MPI: MPI_Allreduce for the dot products,
 * nonblocking point-to-point for the halo (the usual way to exchange with
 * both neighbours at once without ordering the sends), MPI_Wtime.
 */
#include <stdio.h>

#include <mpi.h>

#include "cg_comm.h"

static int rank, size;

/* MPI's default error handler aborts the job, so a failing call never
 * returns here; checking is still cheap and says which call it was if a
 * caller sets MPI_ERRORS_RETURN. */
static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return 0;
    fprintf(stderr, "cg (mpi) rank %d: %s failed (%d)\n", rank, what, rc);
    return 1;
}

int cg_comm_init(int *argc, char ***argv)
{
    if (check(MPI_Init(argc, argv), "MPI_Init"))
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return 0;
}

void cg_comm_finalize(void)
{
    MPI_Finalize();
}

int cg_comm_rank(void) { return rank; }
int cg_comm_size(void) { return size; }
const char *cg_comm_name(void) { return "mpi"; }

int cg_comm_allreduce_sum(double *vals, size_t n)
{
    return check(MPI_Allreduce(MPI_IN_PLACE, vals, (int)n, MPI_DOUBLE,
                               MPI_SUM, MPI_COMM_WORLD),
                 "MPI_Allreduce");
}

int cg_comm_halo(const double *send_lo, double *recv_lo,
                 const double *send_hi, double *recv_hi, size_t n)
{
    MPI_Request req[4];
    int k = 0, rc = MPI_SUCCESS;
    /* Receives first, so that a message finds its buffer posted. */
    if (rank > 0)
        rc |= MPI_Irecv(recv_lo, (int)n, MPI_DOUBLE, rank - 1, 0,
                        MPI_COMM_WORLD, &req[k++]);
    if (rank < size - 1)
        rc |= MPI_Irecv(recv_hi, (int)n, MPI_DOUBLE, rank + 1, 0,
                        MPI_COMM_WORLD, &req[k++]);
    if (rank > 0)
        rc |= MPI_Isend(send_lo, (int)n, MPI_DOUBLE, rank - 1, 0,
                        MPI_COMM_WORLD, &req[k++]);
    if (rank < size - 1)
        rc |= MPI_Isend(send_hi, (int)n, MPI_DOUBLE, rank + 1, 0,
                        MPI_COMM_WORLD, &req[k++]);
    if (check(rc, "MPI_Irecv/MPI_Isend"))
        return 1;
    return check(MPI_Waitall(k, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

double cg_comm_wtime(void)
{
    return MPI_Wtime();
}
