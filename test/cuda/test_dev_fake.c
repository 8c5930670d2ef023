/*
 * test_dev_fake.c - the device path without a GPU: the fake device layer's
 * own semantics (stream order, events, host functions, scrambled memory),
 * point-to-point messages between device buffers through the engine's
 * staging, and the errors for buffers that mix host and device memory.
 * The collective matrix on fake device memory is colls_fake_device_nN
 * (test/coll/test_colls.c).
 */
#include <string.h>
#include <unistd.h>

#include "dev_fake.h"
#include "test.h"
#include "weft_cuda.h"

/* Work on a stream runs in order, an event completes after what came
 * before its record, and a host function sees the copies before it. */
static void saw_data(void *arg)
{
    int *flag = arg;
    *flag = 1;
}

WF_TEST(cuda_dev_fake_stream_order_and_events, 30)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    wf_dev_stream_t s;
    wf_dev_event_t ev;
    ASSERT_OK(d->stream_create(&s));
    ASSERT_OK(d->event_create(&ev));
    ASSERT_OK(d->event_query(ev)); /* never recorded: complete */
    enum { N = 1 << 20 };
    char *host = malloc(N), *back = malloc(N);
    char *dev = wf_fake_dev_alloc(N);
    ASSERT_EQ(d->memtype(dev + 5, NULL), WF_MEM_DEVICE);
    ASSERT_EQ(d->memtype(host, NULL), WF_MEM_HOST);
    for (int i = 0; i < N; i++)
        host[i] = (char)(i * 7);
    int flag = 0;
    ASSERT_OK(d->copy(dev, host, N, s));
    ASSERT_OK(d->copy(back, dev, N, s));
    ASSERT_OK(d->host_func(s, saw_data, &flag));
    ASSERT_OK(d->event_record(ev, s));
    while (d->event_query(ev) == WEFT_INPROGRESS)
        ;
    ASSERT_EQ(flag, 1);
    ASSERT_TRUE(memcmp(back, host, N) == 0);
    /* Device bytes are scrambled: reading them directly is wrong. */
    ASSERT_TRUE(memcmp(dev, host, 64) != 0);
    char check[64];
    wf_fake_dev_read(check, dev, sizeof(check));
    ASSERT_TRUE(memcmp(check, host, sizeof(check)) == 0);
    d->event_destroy(ev);
    d->stream_destroy(s);
    wf_fake_dev_free(dev);
    ASSERT_EQ(d->memtype(dev, NULL), WF_MEM_HOST);
    free(host);
    free(back);
}

/* A reduction on the fake device equals the host table's. */
WF_TEST(cuda_dev_fake_reduce_on_device, 30)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    wf_dev_stream_t s;
    wf_dev_event_t ev;
    ASSERT_OK(d->stream_create(&s));
    ASSERT_OK(d->event_create(&ev));
    float a[100], b[100], out[100];
    for (int i = 0; i < 100; i++)
        a[i] = (float)i, b[i] = (float)(3 * i);
    float *da = wf_fake_dev_alloc(sizeof(a)), *db = wf_fake_dev_alloc(sizeof(b));
    wf_fake_dev_write(da, a, sizeof(a));
    wf_fake_dev_write(db, b, sizeof(b));
    ASSERT_OK(d->reduce(da, da, db, 100, WEFT_FLOAT32, WEFT_MAX, s));
    ASSERT_OK(d->avg_finish(db, 100, WEFT_FLOAT32, 3, s));
    ASSERT_OK(d->event_record(ev, s));
    while (d->event_query(ev) == WEFT_INPROGRESS)
        ;
    wf_fake_dev_read(out, da, sizeof(out));
    for (int i = 0; i < 100; i++)
        ASSERT_TRUE(out[i] == (float)(3 * i));
    wf_fake_dev_read(out, db, sizeof(out));
    for (int i = 0; i < 100; i++)
        ASSERT_TRUE(out[i] == (float)i);
    d->event_destroy(ev);
    d->stream_destroy(s);
    wf_fake_dev_free(da);
    wf_fake_dev_free(db);
}

/* Send/recv between device buffers, 0 B to 3 MiB (many chunks), both
 * directions at once; then a mixed host/device call is refused. */
static void p2p_rank(int rank, int size, void *p)
{
    (void)size;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, 2, "WEFT_CHUNK_SIZE=64k", &comm));
    static const size_t counts[] = {0, 1, 1000, 16384, 786433};
    for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++) {
        size_t n = counts[k], bytes = n * sizeof(int32_t) + 4;
        int32_t *mine = malloc(bytes), *got = malloc(bytes);
        for (size_t i = 0; i < n; i++)
            mine[i] = (int32_t)(i * 31 + (size_t)rank);
        void *dsend = wf_fake_dev_alloc(bytes), *drecv = wf_fake_dev_alloc(bytes);
        wf_fake_dev_write(dsend, mine, bytes);
        weft_request_t rq[2];
        ASSERT_OK(weft_irecv(drecv, n, WEFT_INT32, 1 - rank, comm, &rq[0]));
        ASSERT_OK(weft_isend(dsend, n, WEFT_INT32, 1 - rank, comm, &rq[1]));
        for (int i = 0; i < 2; i++) {
            ASSERT_OK(weft_wait(rq[i]));
            weft_request_free(rq[i]);
        }
        wf_fake_dev_read(got, drecv, bytes);
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(got[i], (int32_t)(i * 31 + (size_t)(1 - rank)));
        wf_fake_dev_free(dsend);
        wf_fake_dev_free(drecv);
        free(mine);
        free(got);
    }
    float host[8] = {0};
    float *dev = wf_fake_dev_alloc(sizeof(host));
    ASSERT_STATUS(weft_allreduce(host, dev, 8, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_allreduce(dev, host, 8, WEFT_FLOAT32, WEFT_SUM, comm),
                  WEFT_ERR_INVALID_ARG);
    /* The refusal left the communicator usable. */
    ASSERT_OK(weft_allreduce(dev, dev, 8, WEFT_FLOAT32, WEFT_SUM, comm));
    wf_fake_dev_free(dev);
    weft_comm_destroy(comm);
}

WF_TEST(cuda_dev_fake_sendrecv_and_mixed_buffers, 60)
{
    wf_dev_use_fake(true);
    wf_test_log_capture();
    wf_test_run_threads(2, p2p_rank, (void *)wf_test_unique("devp2p"));
    ASSERT_STR_CONTAINS(wf_test_log_text(), "sendbuf is host memory and "
                        "recvbuf is device memory (GPU)");
}

/* A call on device buffers without a stream starts after the work the
 * application enqueued on the default stream before it, as after a
 * cudaMemset or a cudaMemcpy from pageable memory (which returns before
 * its copy lands): here a slow "kernel" on the fake's default stream
 * writes the input and poisons the output, and the allreduce is called at
 * once.  Found on a GPU by make test-gpu: the engine's non-blocking stream
 * read the input before the application's copy had landed. */
typedef struct {
    int32_t *dev_in, *dev_out;
    const int32_t *in, *poison;
    size_t bytes;
} late_io_t;

static void late_fill(void *arg)
{
    late_io_t *io = arg;
    usleep(150000);
    wf_fake_dev_write(io->dev_in, io->in, io->bytes);
    wf_fake_dev_write(io->dev_out, io->poison, io->bytes);
}

static void drain_default_stream(void)
{
    const wf_dev_ops_t *d = &wf_fake_dev_ops;
    wf_dev_event_t ev;
    ASSERT_OK(d->event_create(&ev));
    ASSERT_OK(d->event_record(ev, wf_fake_default_stream()));
    while (d->event_query(ev) == WEFT_INPROGRESS)
        usleep(1000);
    d->event_destroy(ev);
}

static void default_stream_rank(int rank, int size, void *p)
{
    enum { N = 40000 };
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, "WEFT_CHUNK_SIZE=16k",
                               &comm));
    size_t bytes = N * sizeof(int32_t);
    int32_t *in = malloc(bytes), *poison = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < N; i++) {
        in[i] = (int32_t)(i % 1000 + (size_t)rank);
        poison[i] = -7;
    }
    for (int round = 0; round < 2; round++) { /* blocking, then i-form */
        late_io_t io = {wf_fake_dev_alloc(bytes), wf_fake_dev_alloc(bytes),
                        in, poison, bytes};
        ASSERT_OK(wf_fake_dev_ops.host_func(wf_fake_default_stream(),
                                            late_fill, &io));
        if (round == 0) {
            ASSERT_OK(weft_allreduce(io.dev_in, io.dev_out, N, WEFT_INT32,
                                     WEFT_SUM, comm));
        } else {
            weft_request_t rq;
            ASSERT_OK(weft_iallreduce(io.dev_in, io.dev_out, N, WEFT_INT32,
                                      WEFT_SUM, comm, &rq));
            ASSERT_OK(weft_wait(rq));
            weft_request_free(rq);
        }
        wf_fake_dev_read(got, io.dev_out, bytes);
        /* late_fill has run by now only if the call waited for it; drain
         * the stream before io goes, so that a failure stays a clean one. */
        drain_default_stream();
        for (size_t i = 0; i < N; i++)
            ASSERT_EQ(got[i], (int32_t)(size * (int)(i % 1000)) +
                                  size * (size - 1) / 2);
        wf_fake_dev_free(io.dev_in);
        wf_fake_dev_free(io.dev_out);
    }
    free(in);
    free(poison);
    free(got);
    weft_comm_destroy(comm);
}

WF_TEST(cuda_dev_fake_call_waits_for_default_stream, 60)
{
    wf_dev_use_fake(true);
    wf_test_run_threads(2, default_stream_rank,
                        (void *)wf_test_unique("devdflt"));
}

/* Every blocking call on device buffers brings an event (the caller's
 * mark on the default stream); the engine used to keep each one, one
 * more live event per call until the communicator went. */
static void events_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    float *dev = wf_fake_dev_alloc(64 * sizeof(float));
    float host[64], want = 0;
    for (int r = 0; r < size; r++)
        want += (float)(r + 1);
    long before = 0;
    for (int i = 0; i < 300; i++) {
        for (int j = 0; j < 64; j++)
            host[j] = (float)(rank + 1);
        wf_fake_dev_write(dev, host, sizeof(host));
        ASSERT_OK(weft_allreduce(dev, dev, 64, WEFT_FLOAT32, WEFT_SUM, comm));
        wf_fake_dev_read(host, dev, sizeof(host));
        for (int j = 0; j < 64; j++)
            ASSERT_TRUE(host[j] == want);
        if (i == 99)
            before = wf_fake_live_events();
    }
    /* Both ranks' engines live in this process: 200 more calls each may
     * not leave hundreds of events behind. */
    long grown = wf_fake_live_events() - before;
    if (grown > 50)
        wf_test_fail(__FILE__, __LINE__, "rank %d: %ld more live events "
                     "after 200 more blocking allreduces", rank, grown);
    wf_fake_dev_free(dev);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(cuda_dev_fake_blocking_calls_keep_events_bounded, 60)
{
    wf_dev_use_fake(true);
    wf_test_run_threads(2, events_rank, (void *)wf_test_unique("events"));
}
