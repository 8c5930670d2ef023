/*
 * test_blocking_wakes.c - a blocking collective is driven by its caller,
 * so it must not wake the engine's progress thread.
 *
 * Every blocking form but allreduce and send/recv used to go through its
 * non-blocking twin, which writes the engine's wake-up fd on every call:
 * a third thread woken per call per rank, on cores the ranks share
 * (bench/results/2026-11-27-blocking-collectives-no-wake.md).  Here each
 * blocking collective runs ITERS times on 2 thread-ranks, its results
 * checked against values computed here, and the engine's count of
 * wake-ups may not grow by more than a few; the same calls in their
 * non-blocking forms must wake it once each, which shows that the count
 * counts.
 */
#include <stdint.h>
#include <string.h>

#include "comm.h"
#include "sched/engine_impl.h"
#include "test.h"

#define ITERS 40
#define N 3 /* elements per rank's block */

static uint64_t wakes(weft_comm_t comm)
{
    return __atomic_load_n(&comm->impl->engine->wakes, __ATOMIC_RELAXED);
}

/* One call of collective `which` (0 .. NCOLLS-1) on 2 ranks, blocking or
 * not, with its result checked. */
enum { BCAST, REDUCE, ALLGATHER, REDSCAT, ALLTOALL, BARRIER, GATHER, SCATTER,
       ALLREDUCE, NCOLLS };
static const char *const names[NCOLLS] = {
    "broadcast", "reduce",  "allgather", "reduce_scatter", "alltoall",
    "barrier",   "gather",  "scatter",   "allreduce"};

static void one_call(weft_comm_t comm, int rank, int which, bool blocking)
{
    int32_t in[2 * N], out[2 * N], want[2 * N];
    weft_request_t req = NULL;
    weft_status_t st = WEFT_OK;
    memset(out, 0, sizeof(out));
    memset(want, 0, sizeof(want));
    for (int j = 0; j < 2 * N; j++)
        in[j] = rank * 100 + j;
    switch (which) {
    case BCAST: /* from rank 1 */
        for (int j = 0; j < N; j++)
            want[j] = 100 + j;
        if (rank == 1)
            memcpy(out, in, N * sizeof(int32_t));
        st = blocking ? weft_broadcast(out, out, N, WEFT_INT32, 1, comm)
                      : weft_ibroadcast(out, out, N, WEFT_INT32, 1, comm,
                                        &req);
        break;
    case REDUCE: /* to rank 0 */
        for (int j = 0; j < N && rank == 0; j++)
            want[j] = (0 * 100 + j) + (1 * 100 + j);
        st = blocking ? weft_reduce(in, out, N, WEFT_INT32, WEFT_SUM, 0, comm)
                      : weft_ireduce(in, out, N, WEFT_INT32, WEFT_SUM, 0,
                                     comm, &req);
        break;
    case ALLGATHER:
        for (int r = 0; r < 2; r++)
            for (int j = 0; j < N; j++)
                want[r * N + j] = r * 100 + j;
        st = blocking ? weft_allgather(in, out, N, WEFT_INT32, comm)
                      : weft_iallgather(in, out, N, WEFT_INT32, comm, &req);
        break;
    case REDSCAT: /* block `rank` of the sum of both inputs */
        for (int j = 0; j < N; j++)
            want[j] = (0 * 100 + rank * N + j) + (1 * 100 + rank * N + j);
        st = blocking ? weft_reduce_scatter(in, out, N, WEFT_INT32, WEFT_SUM,
                                            comm)
                      : weft_ireduce_scatter(in, out, N, WEFT_INT32, WEFT_SUM,
                                             comm, &req);
        break;
    case ALLTOALL: /* block r of rank s goes to rank r, as block s */
        for (int s = 0; s < 2; s++)
            for (int j = 0; j < N; j++)
                want[s * N + j] = s * 100 + rank * N + j;
        st = blocking ? weft_alltoall(in, out, N, WEFT_INT32, comm)
                      : weft_ialltoall(in, out, N, WEFT_INT32, comm, &req);
        break;
    case BARRIER:
        st = blocking ? weft_barrier(comm) : weft_ibarrier(comm, &req);
        break;
    case GATHER: /* to rank 1 */
        for (int r = 0; r < 2 && rank == 1; r++)
            for (int j = 0; j < N; j++)
                want[r * N + j] = r * 100 + j;
        st = blocking ? weft_gather(in, out, N, WEFT_INT32, 1, comm)
                      : weft_igather(in, out, N, WEFT_INT32, 1, comm, &req);
        break;
    case SCATTER: /* from rank 0: block `rank` of rank 0's input */
        for (int j = 0; j < N; j++)
            want[j] = rank * N + j;
        st = blocking ? weft_scatter(in, out, N, WEFT_INT32, 0, comm)
                      : weft_iscatter(in, out, N, WEFT_INT32, 0, comm, &req);
        break;
    case ALLREDUCE:
        for (int j = 0; j < N; j++)
            want[j] = (0 * 100 + j) + (1 * 100 + j);
        st = blocking ? weft_allreduce(in, out, N, WEFT_INT32, WEFT_SUM, comm)
                      : weft_iallreduce(in, out, N, WEFT_INT32, WEFT_SUM,
                                        comm, &req);
        break;
    }
    ASSERT_OK(st);
    if (!blocking) {
        ASSERT_OK(weft_wait(req));
        ASSERT_OK(weft_request_free(req));
    }
    for (int j = 0; j < 2 * N; j++)
        ASSERT_EQ(out[j], want[j]);
}

static void wakes_rank(int rank, int size, void *name)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(name, rank, size, NULL, &comm));
    for (int which = 0; which < NCOLLS; which++) {
        uint64_t before = wakes(comm);
        for (int i = 0; i < ITERS; i++)
            one_call(comm, rank, which, true);
        uint64_t blocking = wakes(comm) - before;
        before = wakes(comm);
        for (int i = 0; i < ITERS; i++)
            one_call(comm, rank, which, false);
        uint64_t nonblocking = wakes(comm) - before;
        if (blocking > ITERS / 8 || nonblocking < ITERS)
            wf_test_fail(__FILE__, __LINE__, "rank %d, %s: %llu wake-ups of "
                         "the progress thread in %d blocking calls (at most "
                         "%d), %llu in as many non-blocking ones (at least "
                         "%d)", rank, names[which],
                         (unsigned long long)blocking, ITERS, ITERS / 8,
                         (unsigned long long)nonblocking, ITERS);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_blocking_collectives_do_not_wake_the_progress_thread, 60)
{
    wf_test_run_threads(2, wakes_rank, (void *)wf_test_unique("wakes"));
}
