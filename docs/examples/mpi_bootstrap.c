/*
 * mpi_bootstrap.c - weft inside a code that already uses MPI
 * (docs/launchers.md).  MPI starts the processes and knows the ranks;
 * rank 0 starts a weft rendezvous server in-process and broadcasts its
 * address over MPI; every rank then creates its weft communicator with
 * that address.  weft itself is not linked to MPI.
 *
 * Build: mpicc mpi_bootstrap.c $(pkg-config --cflags --libs weft)
 * Run:   mpirun -np 4 ./a.out
 *
 * It checks an allreduce and a broadcast against values computed here
 * and exits non-zero on any difference (test/launchers/mpi.sh runs it).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <weft.h>

#define N 100003 /* an odd count: chunks that do not divide evenly */

static int64_t data[N];

static int check(int rank, int size, weft_comm_t comm)
{
    int bad = 0;
    for (int i = 0; i < N; i++)
        data[i] = (int64_t)(rank + 1) * (i % 1000);
    if (weft_allreduce(data, data, N, WEFT_INT64, WEFT_SUM, comm) != WEFT_OK)
        return 1;
    for (int i = 0; i < N; i++) /* sum over r of (r+1) = size(size+1)/2 */
        bad += data[i] != (int64_t)size * (size + 1) / 2 * (i % 1000);
    for (int i = 0; i < N; i++)
        data[i] = rank == size - 1 ? i * 7 : -1;
    if (weft_broadcast(data, data, N, WEFT_INT64, size - 1, comm) != WEFT_OK)
        return 1;
    for (int i = 0; i < N; i++)
        bad += data[i] != (int64_t)i * 7;
    if (bad)
        fprintf(stderr, "rank %d: %d wrong values\n", rank, bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int rank, size, failed;
    weft_server_t server = NULL;
    weft_comm_t comm;
    char address[256] = "";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* 0.0.0.0: every interface; the address reads HOSTNAME:PORT. */
    if (rank == 0 && weft_server_start("0.0.0.0:0", &server) == WEFT_OK)
        snprintf(address, sizeof(address), "%s", weft_server_address(server));

    /* The two lines: rank 0's address to everyone, then the communicator. */
    MPI_Bcast(address, sizeof(address), MPI_CHAR, 0, MPI_COMM_WORLD);
    weft_comm_params_t p = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS,
        .rank = rank, .size = size, .rendezvous = address};
    if (!address[0] || weft_comm_create(&p, &comm) != WEFT_OK) {
        fprintf(stderr, "rank %d: no weft communicator\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    failed = check(rank, size, comm);
    weft_comm_destroy(comm);
    /* The server outlives every rank's communicator. */
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    weft_server_stop(server);
    if (rank == 0)
        printf("mpi_bootstrap: %d ranks, allreduce and broadcast %s\n", size,
               failed ? "WRONG" : "correct");
    MPI_Finalize();
    return failed;
}
