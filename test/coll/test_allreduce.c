/*
 * test_allreduce.c - the allreduce matrix on world sizes 1,2,3,4,5,7,8:
 * ranks as threads over the in-memory store, and ranks as processes over a
 * real weft-rendezvous server on loopback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_util.h"
#include "test.h"

#define CHUNK 4096 /* small chunks so chunk+-1 counts stay small */

typedef struct {
    const char *name;
    const char *rdv;
    int big;
} matrix_arg_t;

static void matrix_rank(int rank, int size, void *p)
{
    const matrix_arg_t *a = p;
    weft_comm_t comm;
    char cfg[128];
    snprintf(cfg, sizeof(cfg), "WEFT_CHUNK_SIZE=%d,WEFT_TIMEOUT=60s", CHUNK);
    if (a->rdv) {
        weft_comm_params_t prm = {
            .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                          WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                          WEFT_COMM_PARAM_CONFIG,
            .rank = rank, .size = size, .rendezvous = a->rdv,
            .job_id = a->name, .config = cfg};
        ASSERT_OK(weft_comm_create(&prm, &comm));
    } else {
        ASSERT_OK(wf_test_comm_mem(a->name, rank, size, cfg, &comm));
    }
    int r = -1, s = -1;
    ASSERT_OK(weft_comm_rank(comm, &r));
    ASSERT_OK(weft_comm_size(comm, &s));
    ASSERT_EQ(r, rank);
    ASSERT_EQ(s, size);
    cu_allreduce_matrix(comm, rank, size, CHUNK, a->big);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void threads_matrix(int size)
{
    matrix_arg_t a = {wf_test_unique("allreduce-threads"), NULL, 1};
    wf_test_run_threads(size, matrix_rank, &a);
}

static void procs_matrix(int size)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    matrix_arg_t a = {wf_test_unique("allreduce-procs"), addr, 1};
    wf_test_run_procs(size, matrix_rank, &a);
    wf_test_stop_process(pid);
}

WF_TEST(coll_allreduce_threads_n1, 60) { threads_matrix(1); }
WF_TEST(coll_allreduce_threads_n2, 120) { threads_matrix(2); }
WF_TEST(coll_allreduce_threads_n3, 120) { threads_matrix(3); }
WF_TEST(coll_allreduce_threads_n4, 120) { threads_matrix(4); }
WF_TEST(coll_allreduce_threads_n5, 180) { threads_matrix(5); }
WF_TEST(coll_allreduce_threads_n7, 180) { threads_matrix(7); }
WF_TEST(coll_allreduce_threads_n8, 240) { threads_matrix(8); }

WF_TEST(coll_allreduce_procs_n1, 60) { procs_matrix(1); }
WF_TEST(coll_allreduce_procs_n2, 120) { procs_matrix(2); }
WF_TEST(coll_allreduce_procs_n3, 120) { procs_matrix(3); }
WF_TEST(coll_allreduce_procs_n4, 120) { procs_matrix(4); }
WF_TEST(coll_allreduce_procs_n5, 180) { procs_matrix(5); }
WF_TEST(coll_allreduce_procs_n7, 180) { procs_matrix(7); }
WF_TEST(coll_allreduce_procs_n8, 240) { procs_matrix(8); }

/* Several non-blocking allreduces in flight at once, completed in reverse
 * order, while the caller does other work: they must not cross-match. */
static void nonblocking_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    enum { K = 6, COUNT = 5000 };
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_CHUNK_SIZE=2k", &comm));
    float *bufs[K];
    weft_request_t reqs[K];
    for (int k = 0; k < K; k++) {
        bufs[k] = malloc(COUNT * sizeof(float));
        for (int i = 0; i < COUNT; i++)
            bufs[k][i] = (float)(k * 10 + rank + i % 3);
        ASSERT_OK(weft_iallreduce(bufs[k], bufs[k], COUNT, WEFT_FLOAT32,
                                  WEFT_SUM, comm, &reqs[k]));
    }
    for (int k = K - 1; k >= 0; k--) {
        ASSERT_OK(weft_wait(reqs[k]));
        ASSERT_OK(weft_test(reqs[k]));
        ASSERT_OK(weft_request_free(reqs[k]));
        for (int i = 0; i < COUNT; i++) {
            float want = (float)(size * (k * 10 + i % 3) + size * (size - 1) / 2);
            if (bufs[k][i] != want)
                wf_test_fail(__FILE__, __LINE__, "op %d elem %d: %g != %g", k,
                             i, bufs[k][i], want);
        }
        free(bufs[k]);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_allreduce_nonblocking_overlap, 60)
{
    wf_test_run_threads(4, nonblocking_rank, (void *)wf_test_unique("nb"));
}

/* weft_test polls without blocking and the operation still finishes while
 * the caller never calls wait (the progress thread drives it). */
static void progress_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    int64_t v = rank + 1;
    weft_request_t req;
    ASSERT_OK(weft_iallreduce(&v, &v, 1, WEFT_INT64, WEFT_SUM, comm, &req));
    weft_status_t st;
    int polls = 0;
    while ((st = weft_test(req)) == WEFT_INPROGRESS) {
        usleep(1000);
        ASSERT_TRUE(++polls < 20000);
    }
    ASSERT_OK(st);
    ASSERT_EQ(v, (int64_t)size * (size + 1) / 2);
    weft_request_free(req);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_allreduce_progress_without_wait, 60)
{
    wf_test_run_threads(3, progress_rank, (void *)wf_test_unique("prog"));
}

/* Several threads of one rank wait at once on different requests of the
 * same communicator: each drives the engine in turn (one progress lock) and
 * every result must be right. */
enum { WAITERS = 4, WAITER_COUNT = 3000 };

typedef struct {
    weft_request_t req;
    weft_status_t status;
} waiter_t;

static void *wait_one(void *p)
{
    waiter_t *w = p;
    w->status = weft_wait(w->req);
    return NULL;
}

static void concurrent_waiters_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_CHUNK_SIZE=1k", &comm));
    int32_t *bufs[WAITERS];
    waiter_t waiters[WAITERS];
    pthread_t threads[WAITERS];
    for (int k = 0; k < WAITERS; k++) {
        bufs[k] = malloc(WAITER_COUNT * sizeof(int32_t));
        for (int i = 0; i < WAITER_COUNT; i++)
            bufs[k][i] = k * 100000 + rank * 10 + i;
        ASSERT_OK(weft_iallreduce(bufs[k], bufs[k], WAITER_COUNT, WEFT_INT32,
                                  WEFT_SUM, comm, &waiters[k].req));
    }
    for (int k = 0; k < WAITERS; k++)
        ASSERT_EQ(pthread_create(&threads[k], NULL, wait_one, &waiters[k]), 0);
    for (int k = 0; k < WAITERS; k++) {
        ASSERT_EQ(pthread_join(threads[k], NULL), 0);
        ASSERT_OK(waiters[k].status);
        weft_request_free(waiters[k].req);
        for (int i = 0; i < WAITER_COUNT; i++) {
            int32_t want = size * (k * 100000 + i) + 10 * size * (size - 1) / 2;
            if (bufs[k][i] != want)
                wf_test_fail(__FILE__, __LINE__, "op %d elem %d: %d != %d", k,
                             i, bufs[k][i], want);
        }
        free(bufs[k]);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_allreduce_concurrent_waiters, 60)
{
    wf_test_run_threads(3, concurrent_waiters_rank,
                        (void *)wf_test_unique("waiters"));
}
