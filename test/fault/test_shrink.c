/*
 * test_shrink.c - weft_comm_shrink: after a rank dies with SIGKILL the
 * survivors build a communicator of their own and compute on it; a healthy
 * communicator shrinks to itself; a rank that hangs is left out after the
 * timeout and is told so when it arrives late.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define KILL_RANKS 4
#define KILL_VICTIM 2

typedef struct {
    int old_rank, new_rank, new_size, sum;
    char shrink_status[32];
    double took;
} shrink_report_t;

/* A rank of the kill test: the victim kills itself after the first
 * allreduce; the survivors see the failure, shrink, and allreduce their old
 * ranks on the new communicator. */
static void kill_rank(const char *rdv, const char *job, int rank, int fd)
{
    weft_comm_params_t prm = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                      WEFT_COMM_PARAM_CONFIG,
        .rank = rank, .size = KILL_RANKS, .rendezvous = rdv, .job_id = job,
        .config = "WEFT_TIMEOUT=20s"};
    weft_comm_t comm = NULL, small = NULL;
    if (weft_comm_create(&prm, &comm) != WEFT_OK)
        _exit(2);
    /* Every survivor runs into the dead rank, directly or by a notice;
     * even the first allreduce may fail for a survivor that the victim
     * left behind in it. */
    weft_status_t st = WEFT_OK;
    for (int i = 0; i < 1000 && st == WEFT_OK; i++) {
        int32_t x = 1;
        st = weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, comm);
        if (st == WEFT_OK && x != KILL_RANKS)
            _exit(3);
        if (rank == KILL_VICTIM)
            raise(SIGKILL);
    }
    if (st != WEFT_ERR_REMOTE)
        _exit(4);
    shrink_report_t rep = {.old_rank = rank, .new_rank = -1, .sum = -1};
    double t0 = wf_test_now_s();
    st = weft_comm_shrink(comm, &small);
    rep.took = wf_test_now_s() - t0;
    snprintf(rep.shrink_status, sizeof(rep.shrink_status), "%s",
             weft_status_name(st));
    if (st == WEFT_OK) {
        weft_comm_rank(small, &rep.new_rank);
        weft_comm_size(small, &rep.new_size);
        rep.sum = rank;
        if (weft_allreduce(&rep.sum, &rep.sum, 1, WEFT_INT32, WEFT_SUM,
                           small) != WEFT_OK)
            rep.sum = -2;
        weft_comm_destroy(small);
    }
    if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
        _exit(5);
    weft_comm_destroy(comm);
    _exit(0);
}

WF_TEST(fault_shrink_after_kill9_survivors_go_on, 120)
{
    char addr[128];
    int rdv_pid = wf_test_start_rendezvous(addr, sizeof(addr));
    const char *job = wf_test_unique("shrink-kill");
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pids[KILL_RANKS];
    for (int r = 0; r < KILL_RANKS; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            close(fds[0]);
            kill_rank(addr, job, r, fds[1]);
        }
    }
    close(fds[1]);
    for (int r = 0; r < KILL_RANKS; r++) {
        int ws;
        ASSERT_EQ(waitpid(pids[r], &ws, 0), pids[r]);
        if (r == KILL_VICTIM)
            ASSERT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
        else if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0))
            wf_test_fail(__FILE__, __LINE__, "survivor %d ended with "
                         "status 0x%x", r, ws);
    }
    wf_test_stop_process(rdv_pid);
    /* Survivors 0, 1, 3 become 0, 1, 2; the sum of their old ranks is 4. */
    int got = 0;
    shrink_report_t rep;
    while (read(fds[0], &rep, sizeof(rep)) == (ssize_t)sizeof(rep)) {
        got++;
        ASSERT_STR_CONTAINS(rep.shrink_status, "OK");
        ASSERT_EQ(rep.new_size, KILL_RANKS - 1);
        ASSERT_EQ(rep.new_rank, rep.old_rank - (rep.old_rank > KILL_VICTIM));
        ASSERT_EQ(rep.sum, 0 + 1 + 3);
        /* The dead rank was reported lost: no waiting for the timeout. */
        ASSERT_TRUE(rep.took < 10.0);
        printf("old rank %d -> rank %d of %d, shrink took %.2f s\n",
               rep.old_rank, rep.new_rank, rep.new_size, rep.took);
    }
    close(fds[0]);
    ASSERT_EQ(got, KILL_RANKS - 1);
}

/* Nobody failed: every rank stays, in order, and the new communicator
 * works; a second shrink of the same communicator works too. */
static void healthy_rank(int rank, int size, void *p)
{
    weft_comm_t comm, small;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=20s", &comm));
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(weft_comm_shrink(comm, &small));
        int r = -1, n = -1;
        ASSERT_OK(weft_comm_rank(small, &r));
        ASSERT_OK(weft_comm_size(small, &n));
        ASSERT_EQ(r, rank);
        ASSERT_EQ(n, size);
        int32_t x = rank + 1;
        ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, small));
        ASSERT_EQ(x, size * (size + 1) / 2);
        ASSERT_OK(weft_comm_destroy(small));
    }
    ASSERT_STATUS(weft_comm_shrink(comm, NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(fault_shrink_of_a_healthy_comm_keeps_everyone, 60)
{
    wf_test_run_threads(3, healthy_rank, (void *)wf_test_unique("shrink-ok"));
}

/* Rank 2 is alive but does not call shrink in time (stuck in application
 * code): ranks 0 and 1 go on without it after 2 x the 1 s timeout + 2 s,
 * and rank 2 is told it was left out. */
static void late_rank(int rank, int size, void *p)
{
    weft_comm_t comm, small = NULL;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=1s", &comm));
    ASSERT_OK(weft_barrier(comm));
    if (rank == 2) {
        usleep(5500000);
        ASSERT_STATUS(weft_comm_shrink(comm, &small), WEFT_ERR_REMOTE);
        ASSERT_TRUE(small == NULL);
    } else {
        double t0 = wf_test_now_s();
        ASSERT_OK(weft_comm_shrink(comm, &small));
        double took = wf_test_now_s() - t0;
        ASSERT_TRUE(took >= 3.9 && took < 5.4);
        int n = -1;
        ASSERT_OK(weft_comm_size(small, &n));
        ASSERT_EQ(n, 2);
        int32_t x = 10 + rank;
        ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, small));
        ASSERT_EQ(x, 21);
        ASSERT_OK(weft_comm_destroy(small));
    }
    weft_comm_destroy(comm);
}

WF_TEST(fault_shrink_leaves_out_a_rank_that_does_not_come, 60)
{
    wf_test_run_threads(3, late_rank, (void *)wf_test_unique("shrink-late"));
}
