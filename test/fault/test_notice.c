/*
 * test_notice.c - failures spread between ranks (src/sched/notice.c):
 * an abort on one rank reaches ranks that are not waiting for it, long
 * before any timeout; a clean destroy on one rank is not a failure for the
 * ranks that go on without it.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ranks 1 and 2 wait for each other forever (both receive); rank 0
 * aborts.  Only the notice can end their wait before the 60 s timeout. */
static void abort_spreads_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=60s", &comm));
    ASSERT_OK(weft_barrier(comm)); /* everyone connected to everyone */
    ASSERT_OK(weft_barrier(comm));
    if (rank == 0) {
        usleep(200000);
        weft_comm_abort(comm);
        return;
    }
    float v;
    double t0 = now_s();
    weft_status_t st = rank == 3 ? weft_barrier(comm)
                                 : weft_recv(&v, 1, WEFT_FLOAT32, 3 - rank,
                                             comm);
    double took = now_s() - t0;
    ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_TRUE(took < 5.0);
    const char *msg = NULL;
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(msg, "rank 0: communicator aborted");
    weft_comm_destroy(comm);
}

WF_TEST(abort_on_one_rank_reaches_the_others, 60)
{
    wf_test_run_threads(4, abort_spreads_rank,
                        (void *)wf_test_unique("notice-abort"));
}

/* Rank 0 leaves cleanly after a collective; ranks 1 and 2 keep exchanging
 * point-to-point messages, which must all succeed. */
static void clean_leave_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=20s", &comm));
    int32_t x = rank + 1;
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_EQ(x, size * (size + 1) / 2);
    if (rank == 0) {
        ASSERT_OK(weft_comm_destroy(comm));
        return;
    }
    usleep(300000); /* rank 0's bye and its closed connections land */
    for (int i = 0; i < 50; i++) {
        int32_t out = rank * 1000 + i, in = -1;
        if (rank == 1) {
            ASSERT_OK(weft_send(&out, 1, WEFT_INT32, 2, comm));
            ASSERT_OK(weft_recv(&in, 1, WEFT_INT32, 2, comm));
            ASSERT_EQ(in, 2000 + i);
        } else {
            ASSERT_OK(weft_recv(&in, 1, WEFT_INT32, 1, comm));
            ASSERT_OK(weft_send(&out, 1, WEFT_INT32, 1, comm));
            ASSERT_EQ(in, 1000 + i);
        }
    }
    const char *msg = NULL;
    ASSERT_OK(weft_comm_get_error(comm, &msg));
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(clean_destroy_is_not_a_failure, 60)
{
    wf_test_run_threads(3, clean_leave_rank,
                        (void *)wf_test_unique("notice-bye"));
}
