/*
 * test_group.c - grouped operations (weft_group_start/end).  A halo
 * exchange whose every rank first receives from both neighbours and then
 * sends to them, which as plain blocking calls would wait forever, runs as
 * one group on 4 thread ranks and 3 processes, with messages large enough
 * that a send cannot finish before its receive is posted; and two ranks
 * that each wait first on a receive whose message comes on another
 * communicator.  A group mixes
 * an allreduce, point-to-point and an allgatherv on two communicators;
 * count arrays changed after recording do not matter; nesting runs only
 * at the outer end; non-blocking calls inside and an end without a start
 * are refused; a call that cannot start fails the group on every rank,
 * and the communicator works afterwards.  Every value is checked against
 * one computed here.
 */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define HALO (256 * 1024) /* doubles: 2 MiB per message */

static double halo_val(int from, int to, size_t i)
{
    return (double)(from * 1000 + to) + (double)(i % 4093) * 1e-3;
}

static void halo(weft_comm_t comm, int rank, int size)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *to_l = malloc(HALO * sizeof(double));
    double *to_r = malloc(HALO * sizeof(double));
    double *from_l = malloc(HALO * sizeof(double));
    double *from_r = malloc(HALO * sizeof(double));
    ASSERT_TRUE(to_l && to_r && from_l && from_r);
    for (size_t i = 0; i < HALO; i++) {
        to_l[i] = halo_val(rank, left, i);
        to_r[i] = halo_val(rank, right, i);
    }
    /* Two neighbours on two ranks are one rank: tags tell the two
     * directions apart. */
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_recv_tag(from_l, HALO, WEFT_FLOAT64, left, 1, comm, NULL));
    ASSERT_OK(weft_recv_tag(from_r, HALO, WEFT_FLOAT64, right, 2, comm,
                            NULL));
    ASSERT_OK(weft_send_tag(to_r, HALO, WEFT_FLOAT64, right, 1, comm));
    ASSERT_OK(weft_send_tag(to_l, HALO, WEFT_FLOAT64, left, 2, comm));
    ASSERT_OK(weft_group_end());
    size_t wrong = 0;
    for (size_t i = 0; i < HALO; i++)
        wrong += from_l[i] != halo_val(left, rank, i) ||
                 from_r[i] != halo_val(right, rank, i);
    ASSERT_EQ(wrong, 0);
    free(to_l);
    free(to_r);
    free(from_l);
    free(from_r);
}

/* An allreduce, a ring shift and an allgatherv on a duplicate, in one
 * group; the count arrays are overwritten before the end. */
static void mixed(weft_comm_t comm, int rank, int size)
{
    weft_comm_t dup;
    ASSERT_OK(weft_comm_dup(comm, &dup));
    int64_t sum = rank + 1, shifted = -1, mine = rank * 10;
    size_t *counts = malloc((size_t)size * sizeof(size_t));
    size_t *displs = malloc((size_t)size * sizeof(size_t));
    int32_t own[8], all[64];
    size_t at = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (size_t)(r % 3);
        displs[r] = at;
        at += counts[r];
    }
    for (size_t i = 0; i < counts[rank]; i++)
        own[i] = rank * 100 + (int32_t)i;
    memset(all, 0xff, sizeof(all));
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_allreduce(&sum, &sum, 1, WEFT_INT64, WEFT_SUM, comm));
    ASSERT_OK(weft_recv(&shifted, 1, WEFT_INT64, (rank + size - 1) % size,
                        comm));
    ASSERT_OK(weft_send(&mine, 1, WEFT_INT64, (rank + 1) % size, comm));
    ASSERT_OK(weft_allgatherv(own, counts[rank], all, counts, displs,
                              WEFT_INT32, dup));
    for (int r = 0; r < size; r++)
        counts[r] = displs[r] = 7777; /* recorded already */
    ASSERT_OK(weft_group_end());
    ASSERT_EQ(sum, (int64_t)size * (size + 1) / 2);
    ASSERT_EQ(shifted, (int64_t)((rank + size - 1) % size) * 10);
    at = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < r % 3; i++)
            ASSERT_EQ(all[at++], r * 100 + i);
    ASSERT_EQ(all[at], -1); /* past the last block: untouched */
    free(counts);
    free(displs);
    ASSERT_OK(weft_comm_destroy(dup));
}

/* Each rank waits first for a receive on one communicator whose message
 * the other rank sends on the other one (a group across communicators
 * wakes their progress threads: a wait drives only its own engine). */
static void crossed(weft_comm_t comm, int rank, int size)
{
    if (size != 2)
        return;
    weft_comm_t dup;
    ASSERT_OK(weft_comm_dup(comm, &dup));
    double *out = malloc(HALO * sizeof(double));
    double *in = malloc(HALO * sizeof(double));
    ASSERT_TRUE(out && in);
    for (size_t i = 0; i < HALO; i++)
        out[i] = halo_val(rank, 1 - rank, i);
    weft_comm_t recv_on = rank == 0 ? comm : dup;
    weft_comm_t send_on = rank == 0 ? dup : comm;
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_recv(in, HALO, WEFT_FLOAT64, 1 - rank, recv_on));
    ASSERT_OK(weft_send(out, HALO, WEFT_FLOAT64, 1 - rank, send_on));
    ASSERT_OK(weft_group_end());
    size_t wrong = 0;
    for (size_t i = 0; i < HALO; i++)
        wrong += in[i] != halo_val(1 - rank, rank, i);
    ASSERT_EQ(wrong, 0);
    free(out);
    free(in);
    ASSERT_OK(weft_comm_destroy(dup));
}

static void nested_and_refused(weft_comm_t comm, int rank, int size)
{
    int32_t x = rank + 1;
    weft_request_t req = NULL;
    ASSERT_STATUS(weft_group_end(), WEFT_ERR_INVALID_USAGE);
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_MAX, comm));
    ASSERT_STATUS(weft_iallreduce(&x, &x, 1, WEFT_INT32, WEFT_MAX, comm,
                                  &req), WEFT_ERR_INVALID_USAGE);
    ASSERT_OK(weft_group_end());
    ASSERT_EQ(x, rank + 1); /* the inner end runs nothing */
    ASSERT_OK(weft_group_end());
    ASSERT_EQ(x, size);
    /* Every rank's second call has a root outside the communicator: the
     * first runs, the group fails on every rank, and nothing is left
     * half-done for the calls after it. */
    int32_t y = 1, b = 5;
    ASSERT_OK(weft_group_start());
    ASSERT_OK(weft_allreduce(&y, &y, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_OK(weft_broadcast(&b, &b, 1, WEFT_INT32, size + 3, comm));
    ASSERT_OK(weft_allreduce(&y, &y, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_STATUS(weft_group_end(), WEFT_ERR_INVALID_ARG);
    ASSERT_EQ(y, size);
    ASSERT_OK(weft_allreduce(&y, &y, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_EQ(y, size * size);
}

static void thread_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=60s", &comm));
    halo(comm, rank, size);
    mixed(comm, rank, size);
    crossed(comm, rank, size);
    nested_and_refused(comm, rank, size);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_group_n2, 60)
{
    wf_test_log_capture();
    wf_test_run_threads(2, thread_rank, (void *)wf_test_unique("grp"));
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "weft_group_end without weft_group_start");
    ASSERT_STR_CONTAINS(log, "weft_iallreduce inside a group");
    ASSERT_STR_CONTAINS(log, "weft_broadcast: root 5 is outside [0, 2)");
    weft_set_logger(NULL, NULL);
}

WF_TEST(coll_group_n4, 90)
{
    wf_test_run_threads(4, thread_rank, (void *)wf_test_unique("grp"));
}

static void proc_rank(int rank, int size, void *p)
{
    const char *const *a = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_rdv(a[0], a[1], rank, size, "WEFT_TIMEOUT=60s",
                               &comm));
    halo(comm, rank, size);
    mixed(comm, rank, size);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_group_halo_procs_n3, 90)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *a[2] = {wf_test_unique("grpp"), addr};
    wf_test_run_procs(3, proc_rank, a);
    wf_test_stop_process(pid);
}
