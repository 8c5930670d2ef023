/*
 * test_dev_stream.c - the stream-ordered API (weft_*_stream) on the fake
 * device layer, whose streams are worker threads: an operation starts
 * only after the work enqueued before it, the work enqueued after it sees
 * its result, the calling thread never blocks, and a failed operation
 * still releases the stream.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dev_fake.h"
#include "test.h"
#include "weft_cuda.h"

enum { N = 50000 };

typedef struct {
    float *dev;   /* device buffer */
    float *host;  /* what the "kernel" writes, or where the result goes */
    /* produce: when set, waits for *gate (at most 10 s) instead of
     * sleeping, and sets gate_timed_out if it waited that long. */
    atomic_bool *gate;
    bool gate_timed_out;
} io_t;

/* Stands in for a kernel that produces the input, slowly. */
static void produce(void *arg)
{
    io_t *io = arg;
    if (!io->gate)
        usleep(200000);
    else {
        double t0 = wf_test_now_s();
        while (!atomic_load(io->gate) && !io->gate_timed_out) {
            io->gate_timed_out = wf_test_now_s() - t0 > 10.0;
            usleep(1000);
        }
    }
    wf_fake_dev_write(io->dev, io->host, N * sizeof(float));
}

/* Stands in for a kernel that consumes the result. */
static void consume(void *arg)
{
    io_t *io = arg;
    wf_fake_dev_read(io->host, io->dev, N * sizeof(float));
}

static void wait_stream(const wf_dev_ops_t *d, wf_dev_stream_t s)
{
    wf_dev_event_t ev;
    ASSERT_OK(d->event_create(&ev));
    ASSERT_OK(d->event_record(ev, s));
    double t0 = wf_test_now_s();
    while (d->event_query(ev) == WEFT_INPROGRESS) {
        ASSERT_TRUE(wf_test_now_s() - t0 < 20.0);
        usleep(1000);
    }
    d->event_destroy(ev);
}

/* Ranks are processes, as on GPUs: the fake's implicit synchronization
 * of allocations (dev_fake.c) waits for the streams of its process, as
 * CUDA's waits for those of its context. */
typedef struct {
    const char *job;
    char rdv[128];
} job_t;

static void comm_for(const job_t *j, int rank, int size, const char *config,
                     weft_comm_t *comm)
{
    ASSERT_OK(wf_test_comm_rdv(j->job, j->rdv, rank, size, config, comm));
}

static void run_procs(int size, wf_rank_fn fn, const char *job)
{
    job_t j = {wf_test_unique(job), ""};
    int pid = wf_test_start_rendezvous(j.rdv, sizeof(j.rdv));
    wf_test_run_procs(size, fn, &j);
    wf_test_stop_process(pid);
}

static void ordered_rank(int rank, int size, void *p)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    weft_comm_t comm;
    comm_for(p, rank, size, "WEFT_CHUNK_SIZE=16k", &comm);
    wf_dev_stream_t s;
    ASSERT_OK(d->stream_create(&s));
    float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    float *dgrad = wf_fake_dev_alloc(N * sizeof(float));
    float *dall = wf_fake_dev_alloc((size_t)size * 4 * sizeof(float));
    for (int i = 0; i < N; i++)
        in[i] = (float)(rank + 1) * (float)(i % 100);
    atomic_bool calls_returned = false;
    io_t prod = {dgrad, in, NULL, false}, cons = {dgrad, out, NULL, false};
    /* Round 0 fills the communicator's pools: a call that needs pinned or
     * device memory allocates it in the caller, which (like any CUDA
     * allocation) may wait for the device's queued work.  Round 1 needs
     * none and must not wait: its producer runs only once both calls
     * have returned, so a call that waited for it would make it wait its
     * whole 10 s. */
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            atomic_store(&calls_returned, false);
            prod.gate = &calls_returned;
        }
        ASSERT_OK(d->host_func(s, produce, &prod));
        ASSERT_OK(weft_allreduce_stream(dgrad, dgrad, N, WEFT_FLOAT32,
                                        WEFT_SUM, comm, s));
        /* A second operation queued behind the first: allgather 4
         * elements of the reduced buffer from every rank. */
        ASSERT_OK(weft_allgather_stream(dgrad, dall, 4, WEFT_FLOAT32, comm,
                                        s));
        ASSERT_OK(d->host_func(s, consume, &cons));
        atomic_store(&calls_returned, true);
        wait_stream(d, s);
        ASSERT_TRUE(!prod.gate_timed_out); /* neither call waited for it */
        float sum_ranks = (float)(size * (size + 1) / 2);
        for (int i = 0; i < N; i++)
            ASSERT_TRUE(out[i] == sum_ranks * (float)(i % 100));
        float all[16 * 4];
        wf_fake_dev_read(all, dall, (size_t)size * 4 * sizeof(float));
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 4; k++)
                ASSERT_TRUE(all[r * 4 + k] == sum_ranks * (float)k);
    }
    const char *msg = NULL;
    ASSERT_OK(weft_comm_get_error(comm, &msg));
    d->stream_destroy(s);
    wf_fake_dev_free(dgrad);
    wf_fake_dev_free(dall);
    free(in);
    free(out);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(cuda_dev_stream_orders_operations, 60)
{
    wf_dev_use_fake(true);
    run_procs(2, ordered_rank, "dso");
    run_procs(3, ordered_rank, "dso");
}

/* Ranks disagree on the count: the operation fails, the stream goes on,
 * and the communicator reports the mismatch. */
static void failing_rank(int rank, int size, void *p)
{
    (void)size;
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    weft_comm_t comm;
    comm_for(p, rank, 2, "WEFT_TIMEOUT=20s", &comm);
    wf_dev_stream_t s;
    ASSERT_OK(d->stream_create(&s));
    float *dbuf = wf_fake_dev_alloc(16 * sizeof(float));
    ASSERT_OK(weft_allreduce_stream(dbuf, dbuf, rank ? 12 : 8, WEFT_FLOAT32,
                                    WEFT_SUM, comm, s));
    double t0 = wf_test_now_s();
    wait_stream(d, s);
    ASSERT_TRUE(wf_test_now_s() - t0 < 10.0);
    /* The sending side may learn it only from the notice: give it time. */
    const char *msg = NULL;
    while (weft_comm_get_error(comm, &msg) == WEFT_OK &&
           wf_test_now_s() - t0 < 10.0)
        usleep(10000);
    ASSERT_STATUS(weft_comm_get_error(comm, &msg), WEFT_ERR_MISMATCH);
    ASSERT_STATUS(weft_allreduce_stream(dbuf, dbuf, 8, WEFT_FLOAT32,
                                        WEFT_SUM, comm, NULL),
                  WEFT_ERR_INVALID_ARG);
    d->stream_destroy(s);
    wf_fake_dev_free(dbuf);
    weft_comm_abort(comm);
}

WF_TEST(cuda_dev_stream_failure_releases_the_stream, 60)
{
    wf_dev_use_fake(true);
    run_procs(2, failing_rank, "dsf");
}

/* A stream-ordered call and an ordinary device call on one communicator,
 * both ways round.  The ordinary call's staging used to be allocated by
 * the engine's thread while the stream waited for the stream-ordered one:
 * the allocation waited for the stream, which waited for the engine (on
 * the fake, an error after 10 s).  Sizes the pools have not seen, so
 * that every call needs new memory. */
enum { BIG = 300000 };

static void mixed_rank(int rank, int size, void *p)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    weft_comm_t comm;
    comm_for(p, rank, size, "WEFT_TIMEOUT=30s", &comm);
    wf_dev_stream_t s;
    ASSERT_OK(d->stream_create(&s));
    float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    float *big = malloc(BIG * sizeof(float));
    float *dgrad = wf_fake_dev_alloc(N * sizeof(float));
    float *dbig = wf_fake_dev_alloc(BIG * sizeof(float));
    io_t prod = {dgrad, in, NULL, false}, cons = {dgrad, out, NULL, false};
    float sum_ranks = (float)(size * (size + 1) / 2);
    for (int order = 0; order < 2; order++) {
        for (int i = 0; i < N; i++)
            in[i] = (float)(rank + 1) * (float)(i % 100 + order);
        for (int i = 0; i < BIG; i++)
            big[i] = (float)(rank + 1) * (float)(i % 7 + order);
        wf_fake_dev_write(dbig, big, BIG * sizeof(float));
        size_t n_big = BIG - (size_t)order * 1000; /* a new plan each time */
        weft_request_t r = NULL;
        if (order == 1) /* ordinary first, still in flight */
            ASSERT_OK(weft_iallreduce(dbig, dbig, n_big, WEFT_FLOAT32,
                                      WEFT_SUM, comm, &r));
        ASSERT_OK(d->host_func(s, produce, &prod));
        ASSERT_OK(weft_allreduce_stream(dgrad, dgrad, N - (size_t)order,
                                        WEFT_FLOAT32, WEFT_SUM, comm, s));
        ASSERT_OK(d->host_func(s, consume, &cons));
        if (order == 0) /* stream-ordered first, its stream waiting */
            ASSERT_OK(weft_iallreduce(dbig, dbig, n_big, WEFT_FLOAT32,
                                      WEFT_SUM, comm, &r));
        ASSERT_OK(weft_wait(r));
        weft_request_free(r);
        wait_stream(d, s);
        for (int i = 0; i < N - order; i++)
            ASSERT_TRUE(out[i] == sum_ranks * (float)(i % 100 + order));
        wf_fake_dev_read(big, dbig, BIG * sizeof(float));
        for (size_t i = 0; i < n_big; i++)
            ASSERT_TRUE(big[i] == sum_ranks * (float)(i % 7 + order));
    }
    const char *msg = NULL;
    ASSERT_OK(weft_comm_get_error(comm, &msg));
    d->stream_destroy(s);
    wf_fake_dev_free(dgrad);
    wf_fake_dev_free(dbig);
    free(in);
    free(out);
    free(big);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(cuda_dev_stream_beside_ordinary_device_calls, 90)
{
    wf_dev_use_fake(true);
    run_procs(2, mixed_rank, "dsm");
}

/* A stream under graph capture is refused with WEFT_ERR_UNSUPPORTED and
 * nothing enqueued on it; the same stream, no longer capturing, works. */
static void capture_rank(int rank, int size, void *p)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    weft_comm_t comm;
    comm_for(p, rank, size, NULL, &comm);
    wf_dev_stream_t s;
    ASSERT_OK(d->stream_create(&s));
    float host[8];
    float *dbuf = wf_fake_dev_alloc(sizeof(host));
    for (int i = 0; i < 8; i++)
        host[i] = (float)(rank + 1);
    wf_fake_dev_write(dbuf, host, sizeof(host));
    wf_fake_stream_capture(s, 1);
    wf_test_log_capture();
    ASSERT_STATUS(weft_allreduce_stream(dbuf, dbuf, 8, WEFT_FLOAT32,
                                        WEFT_SUM, comm, s),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "captured into a CUDA graph");
    wf_fake_stream_capture(s, 0);
    ASSERT_OK(weft_allreduce_stream(dbuf, dbuf, 8, WEFT_FLOAT32, WEFT_SUM,
                                    comm, s));
    wait_stream(d, s);
    wf_fake_dev_read(host, dbuf, sizeof(host));
    for (int i = 0; i < 8; i++)
        ASSERT_TRUE(host[i] == (float)(size * (size + 1) / 2));
    const char *msg = NULL;
    ASSERT_OK(weft_comm_get_error(comm, &msg));
    d->stream_destroy(s);
    wf_fake_dev_free(dbuf);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(cuda_dev_stream_refuses_a_capturing_stream, 60)
{
    wf_dev_use_fake(true);
    run_procs(2, capture_rank, "dsc");
}

/* An operation that fails with device work still queued returns only
 * after that work has run: nothing writes the receive buffer once the
 * caller has its status (before, the queued copies went on landing).
 * Rank 0's fake copies take 50 ms each; the root (rank 1) sends a
 * broadcast of 16 chunks at full speed and leaves 150 ms later, while
 * rank 0 still has most of its copies queued. */
enum { SLOW_N = 64 * 1024 }; /* 16 chunks of 16 KiB */

static void failed_writes_rank(int rank, int size, void *p)
{
    (void)size;
    weft_comm_t comm;
    comm_for(p, rank, 2, "WEFT_CHUNK_SIZE=16k,WEFT_TIMEOUT=30s", &comm);
    float *host = malloc(SLOW_N * sizeof(float));
    float *again = malloc(SLOW_N * sizeof(float));
    float *dbuf = wf_fake_dev_alloc(SLOW_N * sizeof(float));
    for (int i = 0; i < SLOW_N; i++)
        host[i] = (float)(rank + 1);
    wf_fake_dev_write(dbuf, host, SLOW_N * sizeof(float));
    /* A first broadcast sets the pools up at full speed. */
    ASSERT_OK(weft_broadcast(dbuf, dbuf, SLOW_N, WEFT_FLOAT32, 1, comm));
    if (rank == 1) {
        /* New values, which a late copy on rank 0 would bring; sent at
         * full speed, then the root leaves while rank 0 copies slowly. */
        for (int i = 0; i < SLOW_N; i++)
            host[i] = 7;
        wf_fake_dev_write(dbuf, host, SLOW_N * sizeof(float));
        weft_request_t r;
        ASSERT_OK(weft_ibroadcast(dbuf, dbuf, SLOW_N, WEFT_FLOAT32, 1, comm,
                                  &r));
        usleep(150000);
        weft_comm_abort(comm);
        (void)weft_wait(r); /* done or aborted: all is sent either way */
        weft_request_free(r);
    } else {
        wf_fake_slow_copies(50000);
        ASSERT_TRUE(weft_broadcast(dbuf, dbuf, SLOW_N, WEFT_FLOAT32, 1,
                                   comm) != WEFT_OK);
        wf_fake_dev_read(host, dbuf, SLOW_N * sizeof(float));
        wf_fake_slow_copies(0); /* what is still queued lands at once */
        usleep(500000);
        wf_fake_dev_read(again, dbuf, SLOW_N * sizeof(float));
        ASSERT_TRUE(memcmp(host, again, SLOW_N * sizeof(float)) == 0);
    }
    wf_fake_slow_copies(0);
    wf_fake_dev_free(dbuf);
    free(host);
    free(again);
    weft_comm_abort(comm);
}

WF_TEST(cuda_dev_failed_call_leaves_no_writes_behind, 90)
{
    wf_dev_use_fake(true);
    run_procs(2, failed_writes_rank, "dfw");
}

/* CUDA_DEVICE_MAX_CONNECTIONS=1 gets a warning naming it at the first
 * stream-ordered call (the fake itself runs the call as usual). */
static void one_connection_rank(int rank, int size, void *p)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
    weft_comm_t comm;
    comm_for(p, rank, size, NULL, &comm);
    wf_dev_stream_t s;
    ASSERT_OK(d->stream_create(&s));
    float host[4] = {1, 1, 1, 1};
    float *dbuf = wf_fake_dev_alloc(sizeof(host));
    wf_fake_dev_write(dbuf, host, sizeof(host));
    wf_test_log_capture();
    ASSERT_OK(weft_allreduce_stream(dbuf, dbuf, 4, WEFT_FLOAT32, WEFT_SUM,
                                    comm, s));
    wait_stream(d, s);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "CUDA_DEVICE_MAX_CONNECTIONS=1");
    wf_fake_dev_read(host, dbuf, sizeof(host));
    ASSERT_TRUE(host[0] == (float)size);
    d->stream_destroy(s);
    wf_fake_dev_free(dbuf);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(cuda_dev_stream_warns_of_one_hardware_queue, 60)
{
    wf_dev_use_fake(true);
    run_procs(2, one_connection_rank, "dsq");
}
