/*
 * comm_init_check.c - a plain C program under a launcher (test/launchers/
 * torchrun.sh): weft_comm_init from the environment alone, then checks
 * that rank and size are the launcher's (RANK/WORLD_SIZE given again as
 * arguments, so the check does not trust the library's reading of them)
 * and an allreduce, a broadcast and an allgather against values computed
 * here.  Prints "comm_init_check: rank R of N ok" on success.
 *
 *   comm_init_check EXPECTED_RANK EXPECTED_SIZE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"

#define N 4099

static int64_t buf[N], all[64];

int main(int argc, char **argv)
{
    weft_comm_t comm;
    int rank, size, bad = 0;

    if (argc != 3)
        return 2;
    int want_rank = atoi(argv[1]), want_size = atoi(argv[2]);
    if (want_size > 64 || weft_comm_init(&comm) != WEFT_OK ||
        weft_comm_rank(comm, &rank) != WEFT_OK ||
        weft_comm_size(comm, &size) != WEFT_OK)
        return 1;
    if (rank != want_rank || size != want_size) {
        fprintf(stderr, "rank %d of %d, expected %d of %d\n", rank, size,
                want_rank, want_size);
        return 1;
    }
    for (int i = 0; i < N; i++)
        buf[i] = (int64_t)i * (rank + 1);
    if (weft_allreduce(buf, buf, N, WEFT_INT64, WEFT_SUM, comm) != WEFT_OK)
        return 1;
    for (int i = 0; i < N; i++)
        bad += buf[i] != (int64_t)i * size * (size + 1) / 2;
    for (int i = 0; i < N; i++)
        buf[i] = rank == 1 % size ? -i : 0;
    if (weft_broadcast(buf, buf, N, WEFT_INT64, 1 % size, comm) != WEFT_OK)
        return 1;
    for (int i = 0; i < N; i++)
        bad += buf[i] != -i;
    int64_t mine = 1000 + rank;
    if (weft_allgather(&mine, all, 1, WEFT_INT64, comm) != WEFT_OK)
        return 1;
    for (int r = 0; r < size; r++)
        bad += all[r] != 1000 + r;
    weft_comm_destroy(comm);
    if (bad) {
        fprintf(stderr, "rank %d: %d wrong values\n", rank, bad);
        return 1;
    }
    printf("comm_init_check: rank %d of %d ok\n", rank, size);
    return 0;
}
