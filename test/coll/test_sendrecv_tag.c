/*
 * test_sendrecv_tag.c - tagged point-to-point and receives from any
 * source: tags match independently, one tag keeps posting order, a
 * receive from any source takes the first message of its tag and says
 * whose, later receives of its tag wait behind it and other tags do not,
 * and bad tags or sources are refused with a reason.  As threads and as
 * processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "test.h"

#define BIG ((4u << 20) / 4 + 5) /* int32s: a single copy on one machine */

static int32_t *filled(size_t n, int32_t base)
{
    int32_t *p = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        p[i] = base + (int32_t)(i % 1000);
    return p;
}

static void check_filled(const int32_t *p, size_t n, int32_t base)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != base + (int32_t)(i % 1000)) {
            wf_test_fail(__FILE__, __LINE__, "elem %zu is %d, not %d", i,
                         p[i], base + (int32_t)(i % 1000));
            return;
        }
}

/* Rank 0 sends tag 1 then tag 2; rank 1 receives tag 2 first.  Without
 * tags the first receive would take the tag-1 message. */
static void tags_out_of_order(weft_comm_t comm, int rank, size_t n)
{
    if (rank == 0) {
        int32_t *a = filled(n, 100), *b = filled(n, 200);
        weft_request_t ra, rb;
        ASSERT_OK(weft_isend_tag(a, n, WEFT_INT32, 1, 1, comm, &ra));
        ASSERT_OK(weft_isend_tag(b, n, WEFT_INT32, 1, 2, comm, &rb));
        ASSERT_OK(weft_wait(rb));
        ASSERT_OK(weft_wait(ra));
        weft_request_free(ra);
        weft_request_free(rb);
        free(a);
        free(b);
    } else if (rank == 1) {
        int32_t *got = malloc(n * 4);
        int src = -1;
        ASSERT_OK(weft_recv_tag(got, n, WEFT_INT32, 0, 2, comm, &src));
        ASSERT_EQ(src, 0);
        check_filled(got, n, 200);
        ASSERT_OK(weft_recv_tag(got, n, WEFT_INT32, 0, 1, comm, NULL));
        check_filled(got, n, 100);
        free(got);
    }
}

/* Every other rank sends three numbered messages of tag 5 to rank 0,
 * which takes them from any source: each sender is seen three times, in
 * its own order, and the sender named is the one that sent. */
static void any_source_gather(weft_comm_t comm, int rank, int size)
{
    enum { PER = 3 };
    if (rank != 0) {
        for (int32_t k = 0; k < PER; k++) {
            int32_t v = rank * 100 + k;
            ASSERT_OK(weft_send_tag(&v, 1, WEFT_INT32, 0, 5, comm));
        }
        return;
    }
    int next[64] = {0};
    for (int m = 0; m < PER * (size - 1); m++) {
        int32_t v = -1;
        int src = -1;
        ASSERT_OK(weft_recv_tag(&v, 1, WEFT_INT32, WEFT_ANY_SOURCE, 5, comm,
                                &src));
        ASSERT_TRUE(src > 0 && src < size);
        ASSERT_EQ(v, src * 100 + next[src]);
        next[src]++;
    }
    for (int r = 1; r < size; r++)
        ASSERT_EQ(next[r], PER);
}

/* A receive from any source, one from rank 1 and another from any source,
 * all of tag 0 and posted in that order, take rank 1's three messages in
 * its order: the specific receive does not overtake the first. */
static void any_source_keeps_order(weft_comm_t comm, int rank)
{
    if (rank == 1) {
        for (int32_t v = 10; v < 13; v++)
            ASSERT_OK(weft_send(&v, 1, WEFT_INT32, 0, comm));
    } else if (rank == 0) {
        int32_t got[3] = {-1, -1, -1};
        weft_request_t r[3];
        ASSERT_OK(weft_irecv(&got[0], 1, WEFT_INT32, WEFT_ANY_SOURCE, comm,
                             &r[0]));
        ASSERT_OK(weft_irecv(&got[1], 1, WEFT_INT32, 1, comm, &r[1]));
        ASSERT_OK(weft_irecv(&got[2], 1, WEFT_INT32, WEFT_ANY_SOURCE, comm,
                             &r[2]));
        int src = -1;
        for (int k = 2; k >= 0; k--) {
            ASSERT_OK(weft_wait(r[k]));
            ASSERT_OK(weft_request_source(r[k], &src));
            ASSERT_EQ(src, 1);
            weft_request_free(r[k]);
        }
        ASSERT_EQ(got[0], 10);
        ASSERT_EQ(got[1], 11);
        ASSERT_EQ(got[2], 12);
    }
}

/* An unmatched receive of tag 5 from any source does not hold back a
 * receive of tag 0: rank 1 sends tag 0 (a single copy, which waits for
 * its receive) before the tag-5 message. */
static void other_tags_pass(weft_comm_t comm, int rank)
{
    if (rank == 1) {
        int32_t *a = filled(BIG, 7);
        int32_t v = 55;
        ASSERT_OK(weft_send(a, BIG, WEFT_INT32, 0, comm));
        ASSERT_OK(weft_send_tag(&v, 1, WEFT_INT32, 0, 5, comm));
        free(a);
    } else if (rank == 0) {
        int32_t v = -1, *a = malloc(BIG * 4);
        weft_request_t wild;
        ASSERT_OK(weft_irecv_tag(&v, 1, WEFT_INT32, WEFT_ANY_SOURCE, 5, comm,
                                 &wild));
        /* Rank 1 sends its tag-5 message only after this receive. */
        int src = -1;
        ASSERT_STATUS(weft_request_source(wild, &src), WEFT_INPROGRESS);
        ASSERT_OK(weft_recv(a, BIG, WEFT_INT32, 1, comm));
        check_filled(a, BIG, 7);
        ASSERT_OK(weft_wait(wild));
        ASSERT_EQ(v, 55);
        ASSERT_OK(weft_request_source(wild, &src));
        ASSERT_EQ(src, 1);
        weft_request_free(wild);
        free(a);
    }
}

static void bad_input(weft_comm_t comm, int rank)
{
    int32_t v = 0;
    weft_request_t r;
    ASSERT_STATUS(weft_isend_tag(&v, 1, WEFT_INT32, 1 - rank, -1, comm, &r),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_isend(&v, 1, WEFT_INT32, WEFT_ANY_SOURCE, comm, &r),
                  WEFT_ERR_INVALID_ARG);
    int src;
    ASSERT_STATUS(weft_request_source(NULL, &src), WEFT_ERR_INVALID_ARG);
}

/* p: {job, rendezvous or NULL (threads: the in-memory store), config}. */
static weft_comm_t make_comm(int rank, int size, void *p, const char *config)
{
    const char **a = p;
    weft_comm_t comm;
    if (a[1])
        ASSERT_OK(wf_test_comm_rdv(a[0], a[1], rank, size, config, &comm));
    else
        ASSERT_OK(wf_test_comm_mem(a[0], rank, size, config, &comm));
    return comm;
}

static void tag_rank(int rank, int size, void *p)
{
    weft_comm_t comm = make_comm(rank, size, p, ((const char **)p)[2]);
    /* A barrier between the phases: a rank done with one must not send
     * the next one's messages to a receive from any source still open. */
    /* First, on connections not yet made: rank 0 has to reach out to
     * every peer it may hear from. */
    any_source_gather(comm, rank, size);
    ASSERT_OK(weft_barrier(comm));
    tags_out_of_order(comm, rank, 3);
    tags_out_of_order(comm, rank, BIG);
    ASSERT_OK(weft_barrier(comm));
    any_source_keeps_order(comm, rank);
    ASSERT_OK(weft_barrier(comm));
    other_tags_pass(comm, rank);
    bad_input(comm, rank);
    /* The communicator still works for collectives afterwards. */
    int32_t x = rank, sum = -1;
    ASSERT_OK(weft_allreduce(&x, &sum, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_EQ(sum, size * (size - 1) / 2);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_sendrecv_tag_threads_n2, 60)
{
    const char *a[3] = {wf_test_unique("p2ptag"), NULL, NULL};
    wf_test_run_threads(2, tag_rank, a);
}

WF_TEST(coll_sendrecv_tag_threads_n4, 60)
{
    const char *a[3] = {wf_test_unique("p2ptag"), NULL, NULL};
    wf_test_run_threads(4, tag_rank, a);
}

WF_TEST(coll_sendrecv_tag_procs_n3, 60)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *a[3] = {wf_test_unique("p2ptag"), addr, NULL};
    wf_test_run_procs(3, tag_rank, a);
    wf_test_stop_process(pid);
}

/* Over TCP, whose unexpected messages are kept by the shared matching
 * layer as shm's are, but arrive by another path. */
WF_TEST(coll_sendrecv_tag_procs_tcp_n3, 60)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *a[3] = {wf_test_unique("p2ptag"), addr,
                        "WEFT_TRANSPORT=tcp"};
    wf_test_run_procs(3, tag_rank, a);
    wf_test_stop_process(pid);
}

/* A receive from any source that nothing matches times out, and the
 * message says what it waited for. */
static void wild_timeout_rank(int rank, int size, void *p)
{
    weft_comm_t comm = make_comm(rank, size, p, "WEFT_TIMEOUT=400ms");
    int32_t v;
    weft_status_t st = weft_recv_tag(&v, 1, WEFT_INT32, WEFT_ANY_SOURCE, 9,
                                     comm, NULL);
    ASSERT_TRUE(st == WEFT_ERR_TIMEOUT || st == WEFT_ERR_REMOTE);
    const char *msg = NULL;
    weft_comm_get_error(comm, &msg);
    ASSERT_TRUE(msg != NULL);
    if (st == WEFT_ERR_TIMEOUT)
        ASSERT_STR_CONTAINS(msg, "waiting for a message of tag 9 from any "
                                 "rank");
    weft_comm_destroy(comm);
}

WF_TEST(coll_sendrecv_any_source_times_out, 60)
{
    const char *a[3] = {wf_test_unique("p2pwild"), NULL, NULL};
    wf_test_run_threads(2, wild_timeout_rank, a);
}
