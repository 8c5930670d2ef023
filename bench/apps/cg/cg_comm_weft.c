/*
 * cg_comm_weft.c - cg_comm.h over weft's C API: a communicator from the
 * launcher's environment (weft_comm_init: weftrun, or torchrun, Slurm, Open
 * MPI's mpirun), weft_allreduce for the dot products, weft_isend and
 * weft_irecv for the halo, the monotonic clock for time.
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
    weft_request_t req[4];
    int k = 0, bad = 0;
    /* Messages of one pair match in the order posted, so one tag serves
     * both directions: each pair carries one plane each way per call. */
    if (rank > 0)
        bad |= check(weft_irecv(recv_lo, n, WEFT_FLOAT64, rank - 1, comm,
                                &req[k++]), "weft_irecv");
    if (!bad && rank < size - 1)
        bad |= check(weft_irecv(recv_hi, n, WEFT_FLOAT64, rank + 1, comm,
                                &req[k++]), "weft_irecv");
    if (!bad && rank > 0)
        bad |= check(weft_isend(send_lo, n, WEFT_FLOAT64, rank - 1, comm,
                                &req[k++]), "weft_isend");
    if (!bad && rank < size - 1)
        bad |= check(weft_isend(send_hi, n, WEFT_FLOAT64, rank + 1, comm,
                                &req[k++]), "weft_isend");
    /* A failed start leaves no request behind it; wait for the ones that
     * started, so that no buffer is still in use when we return. */
    if (bad)
        k--;
    for (int i = 0; i < k; i++) {
        bad |= check(weft_wait(req[i]), "weft_wait");
        weft_request_free(req[i]);
    }
    return bad;
}

double cg_comm_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
