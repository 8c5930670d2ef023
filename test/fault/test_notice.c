/*
 * test_notice.c - failures spread between ranks (src/sched/notice.c):
 * an abort on one rank reaches ranks that are not waiting for it, long
 * before any timeout; a clean destroy on one rank is not a failure for the
 * ranks that go on without it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/* Ranks 1 and 2 wait for each other forever (both receive); rank 0
 * aborts.  Only the notice can end their wait before the 60 s timeout. */
static pthread_barrier_t spreads_barriers_done;

static void abort_spreads_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=60s", &comm));
    ASSERT_OK(weft_barrier(comm)); /* everyone connected to everyone */
    ASSERT_OK(weft_barrier(comm));
    /* Rank 0 can leave its barrier while a rank that stalled still owes
     * another its last message; an abort then would fail that barrier. */
    pthread_barrier_wait(&spreads_barriers_done);
    if (rank == 0) {
        usleep(200000);
        weft_comm_abort(comm);
        return;
    }
    float v;
    double t0 = wf_test_now_s();
    weft_status_t st = rank == 3 ? weft_barrier(comm)
                                 : weft_recv(&v, 1, WEFT_FLOAT32, 3 - rank,
                                             comm);
    double took = wf_test_now_s() - t0;
    ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_TRUE(took < 5.0);
    const char *msg = NULL;
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(msg, "rank 0: communicator aborted");
    weft_comm_destroy(comm);
}

WF_TEST(fault_abort_on_one_rank_reaches_the_others, 60)
{
    pthread_barrier_init(&spreads_barriers_done, NULL, 4);
    wf_test_run_threads(4, abort_spreads_rank,
                        (void *)wf_test_unique("notice-abort"));
    pthread_barrier_destroy(&spreads_barriers_done);
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

WF_TEST(fault_clean_destroy_is_not_a_failure, 60)
{
    wf_test_run_threads(3, clean_leave_rank,
                        (void *)wf_test_unique("notice-bye"));
}

/* Rank 0 sends to rank 1, which never touches that connection itself and
 * then aborts and leaves.  Rank 0 must hear why (the abort), not report
 * rank 1 as lost: the abort notice also goes over connections that only
 * the peer has used. */
static pthread_barrier_t one_sided_sent;

static void one_sided_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=60s", &comm));
    int32_t x = 7;
    if (rank == 0) {
        /* Complete once written: the connection is up on both sides. */
        ASSERT_OK(weft_send(&x, 1, WEFT_INT32, 1, comm));
        pthread_barrier_wait(&one_sided_sent);
        weft_status_t st = weft_recv(&x, 1, WEFT_INT32, 1, comm);
        ASSERT_STATUS(st, WEFT_ERR_REMOTE);
        const char *msg = NULL;
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
        ASSERT_STR_CONTAINS(msg, "rank 1: communicator aborted");
    } else {
        pthread_barrier_wait(&one_sided_sent);
        weft_comm_abort(comm);
    }
    weft_comm_destroy(comm);
}

WF_TEST(fault_abort_reaches_a_peer_that_only_the_peer_connected, 60)
{
    pthread_barrier_init(&one_sided_sent, NULL, 2);
    wf_test_run_threads(2, one_sided_rank,
                        (void *)wf_test_unique("notice-one-sided"));
    pthread_barrier_destroy(&one_sided_sent);
}

/* Hang diagnosis: rank 1 never calls the second allreduce.  Rank 0's
 * timeout says whom it waits for and how far that rank got, and
 * WEFT_DEBUG_DUMP=1 logs the recent operations. */
static char diag_log[65536];
static pthread_mutex_t diag_lock = PTHREAD_MUTEX_INITIALIZER;

static void diag_capture(void *ctx, weft_log_level_t level,
                         const char *subsys, const char *line)
{
    (void)ctx, (void)level, (void)subsys;
    pthread_mutex_lock(&diag_lock);
    size_t used = strlen(diag_log);
    snprintf(diag_log + used, sizeof(diag_log) - used, "%s\n", line);
    pthread_mutex_unlock(&diag_lock);
}

static void late_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size,
                               "WEFT_TIMEOUT=1500ms,WEFT_DEBUG_DUMP=1,"
                               "WEFT_NODE_COLL_MAX=0", &comm));
    float v = 1;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm));
    if (rank == 0) {
        ASSERT_STATUS(weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm),
                      WEFT_ERR_TIMEOUT);
        const char *msg = NULL;
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_TIMEOUT);
        ASSERT_STR_CONTAINS(msg, "allreduce #1 timed out");
        ASSERT_STR_CONTAINS(msg, "waiting to receive from peer 1");
        ASSERT_STR_CONTAINS(msg, "rank 1's last message belonged to "
                                 "operation #0: it has not reached #1");
    } else {
        usleep(2500000); /* "stuck" in application code */
    }
    weft_comm_destroy(comm);
}

WF_TEST(fault_timeout_names_the_late_rank_and_dumps_history, 60)
{
    weft_set_logger(diag_capture, NULL);
    wf_test_run_threads(2, late_rank, (void *)wf_test_unique("late"));
    ASSERT_STR_CONTAINS(diag_log, "debug dump of rank 0 (ERR_TIMEOUT): last "
                                  "2 of 2 operations");
    ASSERT_STR_CONTAINS(diag_log, "#0 allreduce 1 x float32 (");
    ASSERT_STR_CONTAINS(diag_log, "): done after ");
    ASSERT_STR_CONTAINS(diag_log, "#1 allreduce is waiting to receive from "
                                  "peer 1");
}

/* WEFT_DEBUG_DUMP=1: SIGUSR1 makes every communicator of the process log
 * its recent operations, while nothing has failed. */
static void signal_dump_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size,
                               "WEFT_TIMEOUT=20s,WEFT_DEBUG_DUMP=1", &comm));
    float v = 1;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm));
    ASSERT_OK(weft_barrier(comm));
    if (rank == 0)
        ASSERT_EQ(raise(SIGUSR1), 0);
    /* The dump happens on weft's dump thread; wait for both ranks'. */
    bool seen = false;
    for (int i = 0; i < 500 && !seen; i++) {
        usleep(10000);
        pthread_mutex_lock(&diag_lock);
        seen = strstr(diag_log, "debug dump of rank 0 (SIGUSR1)") &&
               strstr(diag_log, "debug dump of rank 1 (SIGUSR1)");
        pthread_mutex_unlock(&diag_lock);
    }
    ASSERT_TRUE(seen);
    ASSERT_OK(weft_barrier(comm));
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(fault_sigusr1_dumps_every_communicator, 60)
{
    pthread_mutex_lock(&diag_lock);
    diag_log[0] = '\0';
    pthread_mutex_unlock(&diag_lock);
    weft_set_logger(diag_capture, NULL);
    wf_test_run_threads(2, signal_dump_rank, (void *)wf_test_unique("sigdump"));
    weft_set_logger(NULL, NULL);
    ASSERT_STR_CONTAINS(diag_log, "#0 allreduce 1 x float32 (");
    ASSERT_STR_CONTAINS(diag_log, "#1 barrier 0 x ");
}

/* Hang diagnosis through the rendezvous: ranks 0 and 1 wait in allreduce
 * #1 (rank 0 in the blocking call, rank 1 in weft_wait), rank 2 waits to
 * receive from rank 3, and rank 3 is busy in application code.  The rank where the timeout arises collects where
 * everyone is and says so in its error message. */
static char gathered[4][1024];

static void gather_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=1s", &comm));
    float v = 1;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm));
    weft_status_t st;
    weft_request_t req = NULL;
    if (rank == 0) {
        st = weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm);
    } else if (rank == 1) { /* the non-blocking path gathers too */
        ASSERT_OK(weft_iallreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm,
                                  &req));
        st = weft_wait(req);
        weft_request_free(req);
    } else if (rank == 2)
        st = weft_recv(&v, 1, WEFT_FLOAT32, 3, comm);
    else {
        usleep(3500000);
        st = WEFT_ERR_TIMEOUT; /* never asked */
    }
    ASSERT_STATUS(st, WEFT_ERR_TIMEOUT);
    const char *msg = NULL;
    if (rank < 3)
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_TIMEOUT);
    snprintf(gathered[rank], sizeof(gathered[rank]), "%s", msg ? msg : "");
    weft_comm_destroy(comm);
}

WF_TEST(fault_timeout_gathers_where_every_rank_is, 60)
{
    memset(gathered, 0, sizeof(gathered));
    wf_test_run_threads(4, gather_rank, (void *)wf_test_unique("gather"));
    /* Whichever of ranks 0-2 timed out first gathered; its message
     * carries the summary. */
    const char *summary = gathered[0];
    for (int r = 0; r < 3; r++)
        if (strstr(gathered[r], " were in "))
            summary = gathered[r];
    printf("%s\n", summary);
    ASSERT_STR_CONTAINS(summary, "ranks 0-1 were in allreduce #1");
    ASSERT_STR_CONTAINS(summary, "rank 2 was in recv from rank 3");
    ASSERT_STR_CONTAINS(summary, "no answer from rank 3 within 1000 ms");
}

/* A rank whose transfer fails because its peer left after a mismatch
 * elsewhere reports the communicator's error (the mismatch it learned from
 * the notice), not "connection closed", so that this call and every later
 * one report the same error.  Rank 1 finds the mismatch with rank 0 and
 * leaves at once; rank 2 was receiving from rank 1.  Repeated, because
 * which of the notice and the closed connection rank 2 sees first depends
 * on timing. */
static void consistent_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_TIMEOUT=20s", &comm));
    ASSERT_OK(weft_barrier(comm));
    /* Rank 1 fails the communicator only once rank 2's barrier is over:
     * a notice that reaches rank 2 while its barrier still waits for rank
     * 0's last message fails the barrier too, as it should. */
    int32_t token = 0;
    if (rank == 2)
        ASSERT_OK(weft_send(&token, 1, WEFT_INT32, 1, comm));
    else if (rank == 1)
        ASSERT_OK(weft_recv(&token, 1, WEFT_INT32, 2, comm));
    float v[4] = {0};
    weft_status_t st;
    if (rank == 0)
        st = weft_send(v, 3, WEFT_FLOAT32, 1, comm);
    else if (rank == 1)
        st = weft_recv(v, 4, WEFT_FLOAT32, 0, comm);
    else
        st = weft_recv(v, 1, WEFT_FLOAT32, 1, comm);
    if (rank == 1) {
        ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
    } else if (rank == 2) {
        const char *msg = NULL;
        ASSERT_STATUS(st, weft_comm_get_error(comm, &msg));
        ASSERT_STATUS(weft_barrier(comm), st);
    }
    weft_comm_destroy(comm);
}

WF_TEST(fault_failed_call_reports_the_communicator_error, 120)
{
    for (int i = 0; i < 20; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s-%d", wf_test_unique("consistent"), i);
        wf_test_run_threads(3, consistent_rank, name);
    }
}

/* Rank 2 waits for rank 1, which (being the lower rank) would dial it but
 * never uses the link: rank 2 is connected to nobody.  Rank 0 aborts;
 * its notice reaches rank 1 only.  Rank 1's failed call posts the failure
 * in the rendezvous store, where rank 2, blocked for another interval
 * (an eighth of the 8 s timeout), finds it (src/stall.c).  Without that
 * post rank 2 waited out its whole timeout. */
static pthread_barrier_t unconnected_first_received;

static void unconnected_rank(int rank, int size, void *p)
{
    (void)size;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, 3, "WEFT_TIMEOUT=8s", &comm));
    float v = 1;
    if (rank == 0) {
        ASSERT_OK(weft_send(&v, 1, WEFT_FLOAT32, 1, comm)); /* links 0-1 */
        /* Rank 1 takes the message before the abort can fail its
         * receive, however late it comes to it. */
        pthread_barrier_wait(&unconnected_first_received);
        usleep(300000);
        weft_comm_abort(comm);
        return;
    }
    double t0 = wf_test_now_s();
    weft_status_t st;
    if (rank == 1) {
        ASSERT_OK(weft_recv(&v, 1, WEFT_FLOAT32, 0, comm));
        pthread_barrier_wait(&unconnected_first_received);
        st = weft_recv(&v, 1, WEFT_FLOAT32, 0, comm);
    } else {
        st = weft_recv(&v, 1, WEFT_FLOAT32, 1, comm);
    }
    double took = wf_test_now_s() - t0;
    ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_TRUE(took < 5.0);
    const char *msg = NULL;
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(msg, "rank 0: communicator aborted");
    weft_comm_destroy(comm);
}

WF_TEST(fault_failure_reaches_a_rank_connected_to_nobody, 60)
{
    pthread_barrier_init(&unconnected_first_received, NULL, 2);
    wf_test_run_threads(3, unconnected_rank, (void *)wf_test_unique("nc"));
    pthread_barrier_destroy(&unconnected_first_received);
}

/* A cascade that no notice carries: rank 3 leaves having connected to
 * nobody; rank 2's receive from it fails (its connection is refused) and
 * rank 2 leaves too, connected to nobody alive.  Ranks 0 and 1 then send
 * to rank 2 and are refused in turn.  Their own message can only name
 * rank 2; the failure rank 2 posted to the rendezvous names rank 3, and it
 * must be in theirs (src/stall.c).  Seen in fault_kill9_shm_large_messages
 * as a survivor blaming a survivor that had left. */
static pthread_barrier_t cascade_step;

static void cascade_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size,
                               "WEFT_TIMEOUT=8s,WEFT_TRANSPORT=shm", &comm));
    pthread_barrier_wait(&cascade_step); /* all created */
    if (rank == 3)
        weft_comm_destroy(comm);
    pthread_barrier_wait(&cascade_step); /* rank 3 has left */
    float v = 1;
    const char *msg = NULL;
    if (rank == 2) {
        ASSERT_STATUS(weft_recv(&v, 1, WEFT_FLOAT32, 3, comm),
                      WEFT_ERR_REMOTE);
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
        ASSERT_STR_CONTAINS(msg, "peer 3 (");
        weft_comm_destroy(comm);
    }
    pthread_barrier_wait(&cascade_step); /* rank 2 has failed and left */
    if (rank < 2) {
        ASSERT_STATUS(weft_send(&v, 1, WEFT_FLOAT32, 2, comm),
                      WEFT_ERR_REMOTE);
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_REMOTE);
        ASSERT_STR_CONTAINS(msg, "peer 2 (");
        ASSERT_STR_CONTAINS(msg, "first failure, posted to the rendezvous "
                                 "by rank 2");
        ASSERT_STR_CONTAINS(msg, "peer 3 (");
        weft_comm_destroy(comm);
    }
}

WF_TEST(fault_cascade_names_the_first_failure, 60)
{
    pthread_barrier_init(&cascade_step, NULL, 4);
    wf_test_run_threads(4, cascade_rank, (void *)wf_test_unique("cascade"));
    pthread_barrier_destroy(&cascade_step);
}
