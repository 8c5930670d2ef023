/*
 * test_leave_early.c - a rank whose part of a collective is done may leave
 * (weft_comm_destroy) before a slower peer first uses the connection the
 * leaver opened: what it sent must still arrive.  And a rank that sent and
 * then died without a goodbye is still counted lost at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define ELEMS 1000
#define SLOW_MS 300

typedef struct {
    const char *job, *rdv;
    const char *config; /* early_rank: the algorithm and transport */
    size_t elems;       /* early_rank: elements per rank */
} early_arg_t;

/* Runs fn on `size` process ranks with a rendezvous server of their own,
 * the job named after `job`. */
static void run_procs_rdv(int size, wf_rank_fn fn, early_arg_t *a,
                          const char *job)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    a->job = wf_test_unique(job);
    a->rdv = addr;
    wf_test_run_procs(size, fn, a);
    wf_test_stop_process(pid);
}

static weft_comm_t rdv_comm(const early_arg_t *a, int rank, int size,
                            const char *config)
{
    weft_comm_t comm = NULL;
    ASSERT_OK(wf_test_comm_rdv(a->job, a->rdv, rank, size, config, &comm));
    return comm;
}

/* Every rank but the root reduces and leaves at once; the root (the
 * highest rank, so every sender dialled it) arrives late.  Tree reduce:
 * the leaves' only message goes up, and they are gone before the root's
 * engine first connects. */
static void early_rank(int rank, int size, void *p)
{
    const early_arg_t *a = p;
    int root = size - 1;
    size_t n = a->elems;
    weft_comm_t comm = rdv_comm(p, rank, size, a->config);
    int32_t *in = malloc(n * sizeof(*in));
    int32_t *out = malloc(n * sizeof(*out));
    ASSERT_TRUE(in && out);
    for (size_t i = 0; i < n; i++)
        in[i] = (rank + 1) * 1000 + (int32_t)(i % 100000);
    if (rank == root)
        usleep(SLOW_MS * 1000);
    ASSERT_OK(weft_reduce(in, out, n, WEFT_INT32, WEFT_SUM, root, comm));
    if (rank == root) {
        /* sum over r of (r + 1) * 1000 + i */
        int64_t base = 1000LL * size * (size + 1) / 2;
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(out[i], base + (int64_t)size * (int64_t)(i % 100000));
    }
    ASSERT_OK(weft_comm_destroy(comm));
    free(in);
    free(out);
}

static void leave_early(int size, const char *config, size_t elems)
{
    early_arg_t a = {.config = config, .elems = elems};
    run_procs_rdv(size, early_rank, &a, "leave-early");
}

WF_TEST(coll_leave_early_after_reduce_n2, 60)
{
    leave_early(2, "WEFT_ALGO=reduce:tree", ELEMS);
}
WF_TEST(coll_leave_early_after_reduce_n8, 120)
{
    leave_early(8, "WEFT_ALGO=reduce:tree", ELEMS);
}
/* The linear reduce, whose non-roots only send (it found the bug); with
 * two streams per peer, whose goodbye closes each; and with messages
 * above the single-copy threshold, which the root reads from the senders'
 * memory (so they wait for it and cannot leave first: the late root must
 * still find them). */
WF_TEST(coll_leave_early_after_reduce_linear_n8, 120)
{
    leave_early(8, "WEFT_ALGO=reduce:linear", ELEMS);
}
WF_TEST(coll_leave_early_after_reduce_two_streams_n4, 120)
{
    leave_early(4, "WEFT_ALGO=reduce:linear,WEFT_TCP_STREAMS=2", ELEMS);
}
WF_TEST(coll_leave_early_after_reduce_single_copy_n4, 120)
{
    leave_early(4, "WEFT_ALGO=reduce:linear", 100000);
}

/* Rank 0 sends one message and leaves with a goodbye; rank 1 comes late,
 * receives it, and then asks for a second one that never came: that
 * receive fails at once with the peer's departure, not at the timeout. */
static void gone_rank(int rank, int size, void *p)
{
    weft_comm_t comm = rdv_comm(p, rank, size, "WEFT_TIMEOUT=20s");
    int32_t msg[4] = {5, 6, 7, 8}, got[4] = {0};
    if (rank == 0) {
        ASSERT_OK(weft_send(msg, 4, WEFT_INT32, 1, comm));
        ASSERT_OK(weft_comm_destroy(comm));
        return;
    }
    usleep(SLOW_MS * 1000);
    ASSERT_OK(weft_recv(got, 4, WEFT_INT32, 0, comm));
    ASSERT_EQ(memcmp(got, msg, sizeof(msg)), 0);
    double t0 = wf_test_now_s();
    ASSERT_STATUS(weft_recv(got, 4, WEFT_INT32, 0, comm), WEFT_ERR_REMOTE);
    ASSERT_TRUE(wf_test_now_s() - t0 < 5.0);
    weft_comm_destroy(comm);
}

WF_TEST(coll_leave_early_nothing_more_to_receive, 60)
{
    early_arg_t a = {0};
    run_procs_rdv(2, gone_rank, &a, "gone-sender");
}

/* Rank 0 fills its ring to rank 1 while rank 1 is stopped (SIGSTOP, a
 * stand-in for a rank descheduled on a loaded machine), then leaves: its
 * goodbye waits behind the full ring.  It must be delivered once rank 1
 * runs again, not dropped after a grace period shorter than the
 * communicator's timeout, which made rank 1 count a clean departure as a
 * lost peer. */
#define FULL_RING_SLOTS 8
#define STOPPED_MS 800

static void full_ring_rank(int rank, int size, void *p)
{
    weft_comm_t comm = rdv_comm(p, rank, size,
                                "WEFT_TIMEOUT=20s,WEFT_TRANSPORT=shm,"
                                "WEFT_SHM_SLOTS=8");
    int32_t x = 0;
    if (rank == 0) {
        ASSERT_OK(weft_recv(&x, 1, WEFT_INT32, 1, comm)); /* 1 is stopping */
        usleep(100 * 1000);
        for (int32_t k = 0; k < FULL_RING_SLOTS; k++)
            ASSERT_OK(weft_send(&k, 1, WEFT_INT32, 1, comm));
        ASSERT_OK(weft_comm_destroy(comm));
        return;
    }
    pid_t waker = fork();
    ASSERT_TRUE(waker >= 0);
    if (waker == 0) {
        usleep(STOPPED_MS * 1000);
        kill(getppid(), SIGCONT);
        _exit(0);
    }
    ASSERT_OK(weft_send(&x, 1, WEFT_INT32, 0, comm));
    raise(SIGSTOP);
    waitpid(waker, NULL, 0);
    for (int32_t k = 0; k < FULL_RING_SLOTS; k++) {
        ASSERT_OK(weft_recv(&x, 1, WEFT_INT32, 0, comm));
        ASSERT_EQ(x, k);
    }
    usleep(SLOW_MS * 1000); /* the goodbye, then the close */
    const char *msg = NULL;
    ASSERT_OK(weft_comm_get_error(comm, &msg));
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_leave_early_behind_a_full_ring, 60)
{
    early_arg_t a = {0};
    run_procs_rdv(2, full_ring_rank, &a, "full-ring");
}

/* Rank 0 sends and dies without weft_comm_destroy; rank 1 comes late.
 * The message may be received, but rank 0 left no goodbye: rank 1 must
 * see the failure and count rank 0 lost, so that shrink does not wait out
 * its window (twice the 5 s timeout plus 2 s) for it. */
static void crashed_rank(int rank, int size, void *p)
{
    weft_comm_t comm = rdv_comm(p, rank, size, "WEFT_TIMEOUT=5s");
    int32_t msg[4] = {1, 2, 3, 4}, got[4] = {0};
    if (rank == 0) {
        ASSERT_OK(weft_send(msg, 4, WEFT_INT32, 1, comm));
        _exit(0); /* no goodbye */
    }
    usleep(SLOW_MS * 1000);
    weft_status_t st = weft_recv(got, 4, WEFT_INT32, 0, comm);
    if (st == WEFT_OK)
        ASSERT_EQ(memcmp(got, msg, sizeof(msg)), 0);
    else
        ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_STATUS(weft_barrier(comm), WEFT_ERR_REMOTE);
    weft_comm_t small = NULL;
    double t0 = wf_test_now_s();
    ASSERT_OK(weft_comm_shrink(comm, &small));
    double took = wf_test_now_s() - t0;
    int n = -1;
    ASSERT_OK(weft_comm_size(small, &n));
    ASSERT_EQ(n, 1);
    printf("recv: %s; shrink took %.2f s\n", weft_status_name(st), took);
    ASSERT_TRUE(took < 5.0);
    ASSERT_OK(weft_comm_destroy(small));
    weft_comm_destroy(comm);
}

WF_TEST(coll_crashed_sender_counted_lost, 60)
{
    early_arg_t a = {0};
    run_procs_rdv(2, crashed_rank, &a, "crashed-sender");
}
