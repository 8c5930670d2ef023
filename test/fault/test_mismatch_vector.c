/*
 * test_mismatch_vector.c - vector collectives whose ranks disagree on the
 * counts, and bad count arrays.  Where every rank passes the same counts
 * (allgatherv, reduce_scatterv) the signatures carry their digest; where
 * each side knows only its own count (gatherv, scatterv, alltoallv) the
 * receiver compares the message's length with its count.  Either way
 * every rank ends with WEFT_ERR_MISMATCH well before the timeout, and the
 * log names both sides.  Arrays that are missing, blocks that overlap and
 * a rank's own block given two different counts are refused locally with
 * WEFT_ERR_INVALID_ARG and a message, and the communicator goes on.
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

typedef enum { AGV, RSV, GV, SV, A2AV } vcoll_t;

typedef struct {
    const char *store;
    vcoll_t coll;
} case_t;

/* Rank 0 believes rank 1's block is one element longer than rank 1
 * (and everyone else) does. */
static weft_status_t disagree(vcoll_t coll, int rank, double *send,
                              double *recv, weft_comm_t comm)
{
    size_t counts[4] = {3, 5, 2, 4}, displs[4] = {0, 3, 9, 11};
    size_t sc[4] = {2, 2, 2, 2}, sd[4] = {0, 2, 4, 6};
    if (rank == 0) {
        counts[1] = 6;
        sc[1] = 3;
        sd[2] = 5, sd[3] = 7;
    }
    switch (coll) {
    case AGV:
        return weft_allgatherv(send, counts[rank], recv, counts, displs,
                               WEFT_FLOAT64, comm);
    case RSV:
        return weft_reduce_scatterv(send, recv, counts, WEFT_FLOAT64,
                                    WEFT_SUM, comm);
    case GV: /* root 0's recvcounts[1] is 6, rank 1 sends 5 */
        return weft_gatherv(send, rank == 0 ? counts[0] : counts[rank], recv,
                            counts, displs, WEFT_FLOAT64, 0, comm);
    case SV: /* root 0 sends rank 1 six elements, rank 1 expects 5 */
        return weft_scatterv(send, counts, displs, recv,
                             rank == 0 ? counts[0] : counts[rank],
                             WEFT_FLOAT64, 0, comm);
    default: { /* rank 0 sends rank 1 three elements, rank 1 expects 2 */
        size_t rc[4] = {2, 2, 2, 2}, rd[4] = {0, 2, 4, 6};
        return weft_alltoallv(send, sc, sd, recv, rc, rd, WEFT_FLOAT64, comm);
    }
    }
}

static void disagree_rank(int rank, int size, void *p)
{
    const case_t *c = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(c->store, rank, size, "WEFT_TIMEOUT=20s",
                               &comm));
    /* A failed call's receives stay posted until the communicator is
     * aborted (weft.h): the buffers live until then. */
    double send[32] = {0}, recv[32] = {0};
    double t0 = wf_test_now_s();
    weft_status_t st = disagree(c->coll, rank, send, recv, comm);
    /* A rank whose part was done before the others found out succeeded
     * locally; the failure reaches it in its next calls. */
    for (int i = 0; i < 3 && st == WEFT_OK; i++)
        st = weft_barrier(comm);
    ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
    ASSERT_TRUE(wf_test_now_s() - t0 < 10.0); /* not the 20 s timeout */
    weft_comm_abort(comm);
}

static void run(vcoll_t coll, const char *want1, const char *want2)
{
    wf_test_log_capture();
    case_t c = {wf_test_unique("vmis"), coll};
    wf_test_run_threads(4, disagree_rank, &c);
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "mismatch: rank ");
    ASSERT_STR_CONTAINS(log, want1);
    if (want2)
        ASSERT_STR_CONTAINS(log, want2);
    weft_set_logger(NULL, NULL);
}

WF_TEST(fault_mismatch_allgatherv_counts, 60)
{
    run(AGV, "allgatherv(counts digest", NULL);
}
WF_TEST(fault_mismatch_reduce_scatterv_counts, 60)
{
    run(RSV, "reducescatterv(counts digest", NULL);
}
WF_TEST(fault_mismatch_gatherv_count, 60)
{
    run(GV, "gatherv(float64, root 0", "with a 40-byte message where 48 "
                                       "bytes were expected");
}
WF_TEST(fault_mismatch_scatterv_count, 60)
{
    run(SV, "scatterv(float64, root 0", "with a 48-byte message where 40 "
                                        "bytes were expected");
}
WF_TEST(fault_mismatch_alltoallv_count, 60)
{
    run(A2AV, "alltoallv(float64", "with a 24-byte message where 16 bytes "
                                   "were expected");
}

/* Refused before anything is sent; the same communicator then works. */
static void refused_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    size_t counts[2] = {2, 2}, displs[2] = {0, 2}, overlap[2] = {0, 1};
    double send[4] = {1, 2, 3, 4}, recv[4] = {0};
    ASSERT_STATUS(weft_allgatherv(send, 2, recv, NULL, displs, WEFT_FLOAT64,
                                  comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allgatherv(send, 2, recv, counts, overlap,
                                  WEFT_FLOAT64, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allgatherv(send, 3, recv, counts, displs,
                                  WEFT_FLOAT64, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_alltoallv(send, counts, NULL, recv, counts, displs,
                                 WEFT_FLOAT64, comm), WEFT_ERR_INVALID_ARG);
    size_t huge[2] = {SIZE_MAX / 2, 1};
    ASSERT_STATUS(weft_reduce_scatterv(send, recv, huge, WEFT_FLOAT64,
                                       WEFT_SUM, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_reduce_scatterv(send, recv, counts, WEFT_FLOAT64,
                                       WEFT_BAND, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_gatherv(send, 2, recv, counts, displs, WEFT_FLOAT64,
                               2, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(weft_allgatherv(send, 2, recv, counts, displs, WEFT_FLOAT64,
                              comm));
    ASSERT_TRUE(recv[0] == 1 && recv[3] == 2);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(fault_bad_vector_arguments, 30)
{
    wf_test_log_capture();
    wf_test_run_threads(2, refused_rank, (void *)wf_test_unique("vbad"));
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "weft_allgatherv: recvcounts is NULL");
    ASSERT_STR_CONTAINS(log, "weft_allgatherv: the receive blocks of ranks 0 "
                             "and 1 overlap");
    ASSERT_STR_CONTAINS(log, "sendcount 3 on rank");
    ASSERT_STR_CONTAINS(log, "weft_alltoallv: a displacement array is NULL");
    ASSERT_STR_CONTAINS(log, "the recvcounts add up past the address space");
    ASSERT_STR_CONTAINS(log, "op band is not defined for float64");
    ASSERT_STR_CONTAINS(log, "weft_gatherv: root 2 is outside [0, 2)");
    weft_set_logger(NULL, NULL);
}
