/*
 * cg_comm_weft.c - cg_comm.h over weft's C API: a communicator from the
 * launcher's environment (weft_comm_init: weftrun, or torchrun, Slurm, Open
 * MPI's mpirun), weft_allreduce for the dot products, a group of
 * weft_send and weft_recv for the halo (weft_group_start/end, as an MPI
 * code posts Irecv/Isend and waits for all), the monotonic clock for
 * time.
 */
#include <stdio.h>
#include <time.h>

#include "weft.h"

#include "cg_comm.h"

static weft_comm_t comm;
static int rank, size;

static int check(weft_status_t st, const char *what)
{
    if (st == WEFT_OK)
        return 0;
    fprintf(stderr, "cg (weft) rank %d: %s: %s\n", rank, what,
            weft_strerror(st));
    return 1;
}

int cg_comm_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (check(weft_comm_init(&comm), "weft_comm_init"))
        return 1;
    return check(weft_comm_rank(comm, &rank), "weft_comm_rank") ||
           check(weft_comm_size(comm, &size), "weft_comm_size");
}

void cg_comm_finalize(void)
{
    weft_comm_destroy(comm);
}

int cg_comm_rank(void) { return rank; }
int cg_comm_size(void) { return size; }
const char *cg_comm_name(void) { return "weft"; }

int cg_comm_allreduce_sum(double *vals, size_t n)
{
    return check(weft_allreduce(vals, vals, n, WEFT_FLOAT64, WEFT_SUM, comm),
                 "weft_allreduce");
}

int cg_comm_halo(const double *send_lo, double *recv_lo,
                 const double *send_hi, double *recv_hi, size_t n)
{
    /* One group: the receives and sends start together and the group's
     * end returns when all four are done, as MPI_Waitall would.  Messages
     * of one pair match in the order posted, so one tag serves both
     * directions: each pair carries one plane each way per call. */
    int bad = check(weft_group_start(), "weft_group_start");
    if (rank > 0)
        bad |= check(weft_recv(recv_lo, n, WEFT_FLOAT64, rank - 1, comm),
                     "weft_recv");
    if (rank < size - 1)
        bad |= check(weft_recv(recv_hi, n, WEFT_FLOAT64, rank + 1, comm),
                     "weft_recv");
    if (rank > 0)
        bad |= check(weft_send(send_lo, n, WEFT_FLOAT64, rank - 1, comm),
                     "weft_send");
    if (rank < size - 1)
        bad |= check(weft_send(send_hi, n, WEFT_FLOAT64, rank + 1, comm),
                     "weft_send");
    return check(weft_group_end(), "weft_group_end") || bad;
}

double cg_comm_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
