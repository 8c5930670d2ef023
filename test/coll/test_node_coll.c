/*
 * test_node_coll.c - the shared segment's collectives (src/node/) under
 * settings the collective matrix does not use.
 */
#include <stdint.h>

#include "log.h"
#include "node/node_impl.h"
#include "test.h"

/* WEFT_TIMEOUT=0 is no deadline: setting up the segment waits for the
 * other ranks through the store as long as it takes, where a store wait
 * of 0 would be a probe that fails when rank 0 has not written yet. */
static void no_timeout_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=0", &comm));
    int32_t v[4], sum[4];
    for (int i = 0; i < 4; i++)
        v[i] = rank * 10 + i;
    ASSERT_OK(weft_allreduce(v, sum, 4, WEFT_INT32, WEFT_SUM, comm));
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(sum[i], 10 * size * (size - 1) / 2 + size * i);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_node_no_timeout_joins, 60)
{
    wf_test_log_capture();
    wf_log_reconfigure("info", "all"); /* for the choice's line */
    wf_test_run_threads(4, no_timeout_rank, (void *)wf_test_unique("nodet0"));
    ASSERT_STR_CONTAINS(wf_test_log_text(), "algorithm node (shared segment");
    weft_set_logger(NULL, NULL);
}

/* Ranks that each believe they are a broadcast's root only write their
 * own slots and wait for nobody; the others' histories are compared when
 * a root's slots come round again, so every rank fails with the mismatch
 * within WF_NODE_DEPTH + 1 calls, naming both roots, not at the timeout
 * and not never. */
typedef struct {
    const char *job;
    int roots[4]; /* the root each rank names */
} dispute_arg_t;

static void dispute_rank(int rank, int size, void *p)
{
    const dispute_arg_t *a = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(a->job, rank, size, "WEFT_TIMEOUT=20s",
                               &comm));
    float v[2] = {(float)rank, 1.0f};
    weft_status_t st = WEFT_OK;
    int calls = 0;
    double t0 = wf_test_now_s();
    while (st == WEFT_OK && calls < 4 * WF_NODE_DEPTH) {
        st = weft_broadcast(v, v, 2, WEFT_FLOAT32, a->roots[rank], comm);
        calls++;
    }
    ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
    ASSERT_TRUE(wf_test_now_s() - t0 < 10.0);
    if (a->roots[rank] == rank) /* a root that read nobody's slot */
        ASSERT_TRUE(calls <= WF_NODE_DEPTH + 1);
    const char *msg = NULL;
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_MISMATCH);
    ASSERT_STR_CONTAINS(msg, "mismatch");
    weft_comm_abort(comm);
}

static void run_dispute(int size, const int roots[4], const char *other)
{
    wf_test_log_capture();
    dispute_arg_t a = {wf_test_unique("nodedisp"), {0}};
    for (int i = 0; i < size; i++)
        a.roots[i] = roots[i];
    wf_test_run_threads(size, dispute_rank, &a);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "shared segment");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "broadcast(count 2, float32");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "root 0");
    ASSERT_STR_CONTAINS(wf_test_log_text(), other);
    weft_set_logger(NULL, NULL);
}

WF_TEST(coll_node_roots_in_dispute_fail_within_the_depth, 60)
{
    /* Two roots and nobody else; a root with a follower against a lone
     * root. */
    run_dispute(2, (const int[4]){0, 1}, "root 1");
    run_dispute(3, (const int[4]){0, 0, 2}, "root 2");
}
