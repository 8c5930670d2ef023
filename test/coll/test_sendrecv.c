/*
 * test_sendrecv.c - point-to-point: per-pair ordering, many sizes, both
 * directions at once, as threads and as processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "test.h"

static void ring_exchange(weft_comm_t comm, int rank, int size, size_t count,
                          int round)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int32_t *out = malloc((count ? count : 1) * 4);
    int32_t *in = malloc((count ? count : 1) * 4);
    for (size_t i = 0; i < count; i++)
        out[i] = (int32_t)(rank * 1000003 + (int)i * 7 + round);
    weft_request_t rq, sq;
    ASSERT_OK(weft_irecv(in, count, WEFT_INT32, left, comm, &rq));
    ASSERT_OK(weft_isend(out, count, WEFT_INT32, right, comm, &sq));
    ASSERT_OK(weft_wait(sq));
    ASSERT_OK(weft_wait(rq));
    weft_request_free(sq);
    weft_request_free(rq);
    for (size_t i = 0; i < count; i++)
        if (in[i] != (int32_t)(left * 1000003 + (int)i * 7 + round))
            wf_test_fail(__FILE__, __LINE__, "rank %d elem %zu wrong", rank, i);
    free(out);
    free(in);
}

/* Many messages posted back to back arrive in posting order. */
static void ordering(weft_comm_t comm, int rank, int size)
{
    enum { N = 64 };
    if (rank == 0) {
        for (int32_t k = 0; k < N; k++)
            ASSERT_OK(weft_send(&k, 1, WEFT_INT32, 1, comm));
    } else if (rank == 1) {
        weft_request_t reqs[N];
        int32_t got[N];
        for (int k = 0; k < N; k++)
            ASSERT_OK(weft_irecv(&got[k], 1, WEFT_INT32, 0, comm, &reqs[k]));
        for (int k = N - 1; k >= 0; k--) {
            ASSERT_OK(weft_wait(reqs[k]));
            weft_request_free(reqs[k]);
        }
        for (int k = 0; k < N; k++)
            ASSERT_EQ(got[k], k);
    }
    (void)size;
}

static void p2p_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    const char *rdv = ((const char **)p)[1];
    if (rdv) {
        weft_comm_params_t prm = {
            .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                          WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                          WEFT_COMM_PARAM_CONFIG,
            .rank = rank, .size = size, .rendezvous = rdv,
            .job_id = ((const char **)p)[0], .config = "WEFT_SOCKET_IFNAME=lo"};
        ASSERT_OK(weft_comm_create(&prm, &comm));
    } else {
        ASSERT_OK(wf_test_comm_mem(((const char **)p)[0], rank, size,
                                   NULL, &comm));
    }
    size_t counts[] = {0, 1, 1000, 65537, (4u << 20) + 3};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        ring_exchange(comm, rank, size, counts[k], (int)k);
    ordering(comm, rank, size);
    /* A mismatched size is caught: rank 0 sends 10, rank 1 expects 12. */
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_sendrecv_threads_n2, 60)
{
    const char *a[2] = {wf_test_unique("p2p"), NULL};
    wf_test_run_threads(2, p2p_rank, a);
}

WF_TEST(coll_sendrecv_threads_n5, 60)
{
    const char *a[2] = {wf_test_unique("p2p"), NULL};
    wf_test_run_threads(5, p2p_rank, a);
}

WF_TEST(coll_sendrecv_procs_n3, 60)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *a[2] = {wf_test_unique("p2p"), addr};
    wf_test_run_procs(3, p2p_rank, a);
    wf_test_stop_process(pid);
}
