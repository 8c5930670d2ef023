/*
 * test_mismatch_root.c - ranks that disagree on the root of a rooted
 * collective.  A receive compares signatures, but with roots in dispute
 * messages can go where no receive waits: two ranks that each believe they
 * are a broadcast's root both only send and both finish.  The engine spots
 * such stray messages (src/sched/stray.c), so every rank still ends with
 * WEFT_ERR_MISMATCH naming both roots: from the rooted call itself, or,
 * where that call had already finished, from the call after it.
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

typedef enum { BCAST, REDUCE, GATHER, SCATTER } rooted_t;

typedef struct {
    const char *store;
    rooted_t coll;
} case_t;

static weft_status_t call_rooted(rooted_t coll, float *small, float *big,
                                 int root, weft_comm_t comm)
{
    switch (coll) {
    case BCAST:
        return weft_broadcast(small, small, 8, WEFT_FLOAT32, root, comm);
    case REDUCE:
        return weft_reduce(small, big, 8, WEFT_FLOAT32, WEFT_SUM, root, comm);
    case GATHER:
        return weft_gather(small, big, 8, WEFT_FLOAT32, root, comm);
    default:
        return weft_scatter(big, small, 8, WEFT_FLOAT32, root, comm);
    }
}

/* Rank 0 names root 0, every other rank root 1. */
static void disputed_root_rank(int rank, int size, void *p)
{
    const case_t *c = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(c->store, rank, size, "WEFT_TIMEOUT=20s",
                               &comm));
    float small[8] = {0}, big[8 * 8] = {0};
    double t0 = wf_test_now_s();
    weft_status_t st = call_rooted(c->coll, small, big, rank == 0 ? 0 : 1,
                                   comm);
    /* A call that finished before the stray message showed up succeeded
     * locally; the failure then reaches this rank before its next calls
     * complete (the rank that saw the stray one stops taking part). */
    for (int i = 0; i < 3 && st == WEFT_OK; i++)
        st = weft_barrier(comm);
    ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
    ASSERT_TRUE(wf_test_now_s() - t0 < 10.0); /* not the 20 s timeout */
    const char *msg = NULL;
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_MISMATCH);
    ASSERT_STR_CONTAINS(msg, "mismatch");
    weft_comm_abort(comm);
}

static void run_disputed(rooted_t coll, int size, const char *name)
{
    wf_test_log_capture();
    case_t c = {wf_test_unique("root"), coll};
    wf_test_run_threads(size, disputed_root_rank, &c);
    /* Whoever saw it named both sides. */
    char mine[64];
    snprintf(mine, sizeof(mine), "%s(count 8, float32", name);
    ASSERT_STR_CONTAINS(wf_test_log_text(), mine);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "root 0");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "root 1");
    weft_set_logger(NULL, NULL);
}

/* The case a receive-side check can never see: both ranks only send. */
WF_TEST(fault_mismatch_root_broadcast_both_roots, 60)
{
    run_disputed(BCAST, 2, "broadcast");
}
WF_TEST(fault_mismatch_root_broadcast_3, 60)
{
    run_disputed(BCAST, 3, "broadcast");
}
WF_TEST(fault_mismatch_root_broadcast_4, 60)
{
    run_disputed(BCAST, 4, "broadcast");
}
WF_TEST(fault_mismatch_root_reduce, 60)
{
    run_disputed(REDUCE, 2, "reduce");
    run_disputed(REDUCE, 3, "reduce");
}
WF_TEST(fault_mismatch_root_gather, 60)
{
    run_disputed(GATHER, 2, "gather");
    run_disputed(GATHER, 4, "gather");
}
WF_TEST(fault_mismatch_root_scatter, 60)
{
    run_disputed(SCATTER, 2, "scatter");
    run_disputed(SCATTER, 3, "scatter");
}

/* Peers running ahead are not strays: non-blocking broadcasts from
 * changing roots, several in flight, all agree and all succeed. */
static void agreeing_roots_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=20s", &comm));
    enum { N = 24 };
    float v[N][4];
    weft_request_t req[N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 4; k++)
            v[i][k] = rank == i % size ? (float)(i * 10 + k) : -1.0f;
        ASSERT_OK(weft_ibroadcast(v[i], v[i], 4, WEFT_FLOAT32, i % size,
                                  comm, &req[i]));
    }
    for (int i = N; i-- > 0;) {
        ASSERT_OK(weft_wait(req[i]));
        weft_request_free(req[i]);
        for (int k = 0; k < 4; k++)
            ASSERT_TRUE(v[i][k] == (float)(i * 10 + k));
    }
    ASSERT_OK(weft_barrier(comm));
    weft_comm_destroy(comm);
}

WF_TEST(fault_agreeing_roots_ahead_are_not_strays, 30)
{
    wf_test_run_threads(3, agreeing_roots_rank, (void *)wf_test_unique("ok"));
    wf_test_run_threads(4, agreeing_roots_rank, (void *)wf_test_unique("ok"));
}
