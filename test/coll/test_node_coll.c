/*
 * test_node_coll.c - the shared segment's collectives (src/node/) under
 * settings the collective matrix does not use.
 */
#include <stdint.h>

#include "log.h"
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
