/*
 * test_bad_input.c - every kind of bad input gets a clear status and a
 * message, never a crash, hang or wrong data.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static char logbuf[32768];
static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    size_t used = strlen(logbuf);
    snprintf(logbuf + used, sizeof(logbuf) - used, "%s\n", line);
}

static void args_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    float buf[8] = {0};
    char raw[64];
    weft_request_t req;
    ASSERT_STATUS(weft_allreduce(buf, NULL, 8, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(NULL, buf, 8, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(raw + 1, raw + 1, 4, WEFT_FLOAT32, WEFT_SUM,
                                 comm), WEFT_ERR_INVALID_ARG); /* misaligned */
    ASSERT_STATUS(weft_allreduce(buf, buf, SIZE_MAX / 2, WEFT_FLOAT32,
                                 WEFT_SUM, comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(buf, buf, 8, (weft_dtype_t)99, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(buf, buf, 8, WEFT_FLOAT32, (weft_op_t)17, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(buf, buf + 1, 4, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG); /* partial overlap */
    ASSERT_STATUS(weft_iallreduce(buf, buf, 8, WEFT_FLOAT32, WEFT_SUM, comm,
                                  NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_send(buf, 1, WEFT_FLOAT32, size, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_recv(buf, 1, WEFT_FLOAT32, -1, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_isend(buf, 1, WEFT_FLOAT32, rank, comm, &req),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_STATUS(weft_send(NULL, 3, WEFT_FLOAT32, 1 - rank, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_test(NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_wait(NULL), WEFT_ERR_INVALID_ARG);
    int r;
    ASSERT_STATUS(weft_comm_rank(NULL, &r), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_comm_rank(comm, NULL), WEFT_ERR_INVALID_ARG);
    /* Count 0 with NULL buffers is fine, and the comm still works after
     * all the rejected calls. */
    ASSERT_OK(weft_allreduce(NULL, NULL, 0, WEFT_FLOAT32, WEFT_SUM, comm));
    buf[0] = 1;
    ASSERT_OK(weft_allreduce(buf, buf, 1, WEFT_FLOAT32, WEFT_SUM, comm));
    ASSERT_TRUE(buf[0] == (float)size);
    ASSERT_OK(weft_comm_destroy(comm));
    /* A destroyed communicator is reported, not used. */
    ASSERT_STATUS(weft_allreduce(buf, buf, 1, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_USAGE);
    ASSERT_STATUS(weft_comm_destroy(comm), WEFT_ERR_INVALID_USAGE);
    ASSERT_OK(weft_comm_destroy(NULL));
}

WF_TEST(fault_bad_args_are_rejected, 30)
{
    weft_set_logger(capture, NULL);
    wf_test_run_threads(2, args_rank, (void *)wf_test_unique("args"));
    ASSERT_STR_CONTAINS(logbuf, "recvbuf is NULL with count 8");
    ASSERT_STR_CONTAINS(logbuf, "is not aligned to 4 bytes (float32)");
    ASSERT_STR_CONTAINS(logbuf, "overflows");
    ASSERT_STR_CONTAINS(logbuf, "unknown dtype 99");
    ASSERT_STR_CONTAINS(logbuf, "unknown reduction op 17");
    ASSERT_STR_CONTAINS(logbuf, "peer 2 is outside [0, 2)");
    ASSERT_STR_CONTAINS(logbuf, "was destroyed");
}

WF_TEST(fault_bad_comm_params, 30)
{
    weft_set_logger(capture, NULL);
    weft_comm_t comm;
    weft_comm_params_t p = {.field_mask = WEFT_COMM_PARAM_RANK |
                                          WEFT_COMM_PARAM_SIZE |
                                          WEFT_COMM_PARAM_RENDEZVOUS,
                            .rank = 3, .size = 2, .rendezvous = "mem://x"};
    ASSERT_STATUS(weft_comm_create(&p, &comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(logbuf, "rank 3 is outside [0, 2)");
    ASSERT_STATUS(weft_comm_create(NULL, &comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_comm_create(&p, NULL), WEFT_ERR_INVALID_ARG);
    /* No launcher and no WEFT_* variables: says what to set. */
    unsetenv("WEFT_RANK");
    unsetenv("RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");
    ASSERT_STATUS(weft_comm_init(&comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(logbuf, "set WEFT_RANK and WEFT_WORLD_SIZE");
    setenv("WEFT_RANK", "0", 1);
    setenv("WEFT_WORLD_SIZE", "1", 1);
    unsetenv("WEFT_RENDEZVOUS");
    unsetenv("MASTER_ADDR");
    ASSERT_STATUS(weft_comm_init(&comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(logbuf, "no rendezvous address");
    p.field_mask |= WEFT_COMM_PARAM_CONFIG;
    p.rank = 0;
    p.config = "WEFT_CHUNK_SIZ=4k";
    ASSERT_STATUS(weft_comm_create(&p, &comm), WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(logbuf, "did you mean WEFT_CHUNK_SIZE?");
}

typedef struct {
    const char *job;
    int claim[4];  /* rank each thread claims */
    int size[4];   /* world size each thread claims */
    weft_status_t result[4];
} join_arg_t;

static void join_rank(int idx, int nthreads, void *p)
{
    join_arg_t *a = p;
    (void)nthreads;
    weft_comm_t comm;
    char uri[128];
    snprintf(uri, sizeof(uri), "mem://%s", a->job);
    weft_comm_params_t prm = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_TIMEOUT |
                      WEFT_COMM_PARAM_CONFIG,
        .rank = a->claim[idx], .size = a->size[idx], .rendezvous = uri,
        .timeout_ms = 1500, .config = "WEFT_SOCKET_IFNAME=lo"};
    a->result[idx] = weft_comm_create(&prm, &comm);
    if (a->result[idx] == WEFT_OK)
        weft_comm_abort(comm);
}

WF_TEST(fault_rendezvous_world_size_mismatch, 30)
{
    weft_set_logger(capture, NULL);
    join_arg_t a = {wf_test_unique("size"), {0, 1}, {2, 3}, {0}};
    wf_test_run_threads(2, join_rank, &a);
    ASSERT_STATUS(a.result[0], WEFT_ERR_MISMATCH);
    ASSERT_STATUS(a.result[1], WEFT_ERR_MISMATCH);
    ASSERT_STR_CONTAINS(logbuf, "world size mismatch");
}

WF_TEST(fault_rendezvous_duplicate_rank, 30)
{
    weft_set_logger(capture, NULL);
    join_arg_t a = {wf_test_unique("dup"), {0, 0}, {2, 2}, {0}};
    wf_test_run_threads(2, join_rank, &a);
    /* One thread gets the rank (then times out waiting for rank 1); the
     * other is told the rank is taken. */
    ASSERT_TRUE((a.result[0] == WEFT_ERR_INVALID_USAGE) !=
                (a.result[1] == WEFT_ERR_INVALID_USAGE));
    ASSERT_TRUE(a.result[0] == WEFT_ERR_TIMEOUT ||
                a.result[1] == WEFT_ERR_TIMEOUT);
    ASSERT_STR_CONTAINS(logbuf, "rank 0 is claimed twice");
}

WF_TEST(fault_rendezvous_unreachable_times_out, 30)
{
    weft_set_logger(capture, NULL);
    weft_comm_t comm;
    /* Port 1 on loopback: nothing listens there. */
    weft_comm_params_t p = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_TIMEOUT,
        .rank = 0, .size = 2, .rendezvous = "127.0.0.1:1",
        .timeout_ms = 1500};
    double t0 = wf_test_now_s();
    ASSERT_STATUS(weft_comm_create(&p, &comm), WEFT_ERR_TIMEOUT);
    double took = wf_test_now_s() - t0;
    ASSERT_TRUE(took >= 1.0 && took < 5.0);
    ASSERT_STR_CONTAINS(logbuf, "127.0.0.1:1");
}

/* Ranks calling different collectives, counts, dtypes or ops: every rank ends
 * with WEFT_ERR_MISMATCH naming both sides. */
static void mismatch_rank(int rank, int size, void *p)
{
    const int *variant = ((const int **)p)[1];
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(((const char **)p)[0], rank, size,
                               "WEFT_TIMEOUT=20s", &comm));
    float buf[16] = {0};
    weft_status_t st;
    if (*variant == 0) /* count */
        st = weft_allreduce(buf, buf, rank ? 12 : 10, WEFT_FLOAT32, WEFT_SUM,
                            comm);
    else if (*variant == 1) /* dtype */
        st = weft_allreduce(buf, buf, 8, rank ? WEFT_INT32 : WEFT_FLOAT32,
                            WEFT_SUM, comm);
    else if (*variant == 2) /* op */
        st = weft_allreduce(buf, buf, 8, WEFT_FLOAT32,
                            rank ? WEFT_MAX : WEFT_SUM, comm);
    else if (*variant == 5) /* bitwise ops, on a 16-bit integer */
        st = weft_allreduce(buf, buf, 8, WEFT_INT16,
                            rank ? WEFT_BOR : WEFT_BAND, comm);
    else if (*variant == 3) /* point-to-point count */
        st = rank ? weft_recv(buf, 12, WEFT_FLOAT32, 0, comm)
                  : weft_send(buf, 10, WEFT_FLOAT32, 1, comm);
    else /* different collectives: broadcast from 0 against allreduce */
        st = rank ? weft_allreduce(buf, buf, 8, WEFT_FLOAT32, WEFT_SUM, comm)
                  : weft_broadcast(buf, buf, 8, WEFT_FLOAT32, 0, comm);
    if ((*variant == 3 || *variant == 4) && rank == 0) {
        /* The sender cannot know from its own call (which fails only if
         * the receiver's notice overtakes its completion); it learns from
         * that notice, and its next call fails with the mismatch. */
        ASSERT_TRUE(st == WEFT_OK || st == WEFT_ERR_MISMATCH);
        ASSERT_STATUS(weft_barrier(comm), WEFT_ERR_MISMATCH);
    } else {
        ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
        const char *msg = NULL;
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_MISMATCH);
        ASSERT_STR_CONTAINS(msg, "mismatch");
        /* Sticky: the next operation fails the same way, at once. */
        ASSERT_STATUS(weft_allreduce(buf, buf, 1, WEFT_FLOAT32, WEFT_SUM,
                                     comm), WEFT_ERR_MISMATCH);
    }
    weft_comm_abort(comm);
}

static void run_mismatch(int variant, const char *a, const char *b)
{
    weft_set_logger(capture, NULL);
    const void *arg[2] = {wf_test_unique("mm"), &variant};
    wf_test_run_threads(2, mismatch_rank, arg);
    ASSERT_STR_CONTAINS(logbuf, a);
    ASSERT_STR_CONTAINS(logbuf, b);
}

WF_TEST(fault_mismatch_count, 30)
{
    run_mismatch(0, "allreduce(count 10, float32, sum",
                 "allreduce(count 12, float32, sum");
}
WF_TEST(fault_mismatch_dtype, 30)
{
    run_mismatch(1, "count 8, float32", "count 8, int32");
}
WF_TEST(fault_mismatch_op, 30)
{
    run_mismatch(2, "float32, sum", "float32, max");
}
WF_TEST(fault_mismatch_bitwise_op, 30)
{
    run_mismatch(5, "int16, band", "int16, bor");
}
WF_TEST(fault_mismatch_collective, 30)
{
    run_mismatch(4, "broadcast(count 8, float32", "allreduce(count 8, float32");
}
WF_TEST(fault_mismatch_p2p_count, 30)
{
    run_mismatch(3, "send/recv(count 12, float32)",
                 "send/recv(count 10, float32)");
}

/* A rank that never joins the collective: the others time out naming who
 * they wait for, within the timeout (plus slack); through messages (the
 * engine) and through the shared segment (src/node/). */
typedef struct {
    const char *name, *config, *waiting;
} timeout_case_t;

static void timeout_rank(int rank, int size, void *p)
{
    const timeout_case_t *tc = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(tc->name, rank, size, tc->config, &comm));
    if (rank == 0) {
        float v = 1;
        double t0 = wf_test_now_s();
        ASSERT_STATUS(weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, comm),
                      WEFT_ERR_TIMEOUT);
        ASSERT_TRUE(wf_test_now_s() - t0 < 4.5);
        const char *msg;
        ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_TIMEOUT);
        ASSERT_STR_CONTAINS(msg, "timed out after 1500 ms");
        ASSERT_STR_CONTAINS(msg, tc->waiting);
    } else {
        sleep(3);
    }
    weft_comm_abort(comm);
}

WF_TEST(fault_collective_times_out_naming_peer, 30)
{
    timeout_case_t engine = {wf_test_unique("to"),
                             "WEFT_TIMEOUT=1500ms,WEFT_NODE_COLL_MAX=0",
                             "waiting to receive from peer 1"};
    wf_test_run_threads(2, timeout_rank, &engine);
    timeout_case_t node = {wf_test_unique("to"), "WEFT_TIMEOUT=1500ms",
                           "shared segment, waiting for rank(s) 1"};
    wf_test_run_threads(2, timeout_rank, &node);
}

/* Abort from another thread unblocks a waiting collective promptly. */
typedef struct {
    weft_comm_t comm;
    weft_status_t st;
    atomic_bool calling;
} abort_arg_t;

/* Rank 1 aborts only after rank 0 has checked its own abort's result:
 * an earlier notice from rank 1 would end rank 0's call with
 * WEFT_ERR_REMOTE instead. */
static pthread_barrier_t abort_checked;

static void *blocked_allreduce(void *p)
{
    abort_arg_t *a = p;
    float v = 1;
    atomic_store(&a->calling, true);
    a->st = weft_allreduce(&v, &v, 1, WEFT_FLOAT32, WEFT_SUM, a->comm);
    return NULL;
}

static void abort_rank(int rank, int size, void *p)
{
    abort_arg_t a = {0};
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &a.comm));
    if (rank == 0) {
        pthread_t t;
        pthread_create(&t, NULL, blocked_allreduce, &a);
        /* The thread calls right after the flag; 300 ms later it waits. */
        while (!atomic_load(&a.calling))
            usleep(1000);
        usleep(300000);
        double t0 = wf_test_now_s();
        ASSERT_OK(weft_comm_abort(a.comm));
        pthread_join(t, NULL);
        ASSERT_TRUE(wf_test_now_s() - t0 < 2.0);
        ASSERT_STATUS(a.st, WEFT_ERR_ABORTED);
    }
    pthread_barrier_wait(&abort_checked);
    if (rank == 1)
        weft_comm_abort(a.comm);
}

WF_TEST(fault_abort_unblocks_waiter, 30)
{
    pthread_barrier_init(&abort_checked, NULL, 2);
    wf_test_run_threads(2, abort_rank, (void *)wf_test_unique("abort"));
    pthread_barrier_destroy(&abort_checked);
}
