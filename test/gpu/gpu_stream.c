/*
 * gpu_stream.c - weft_allreduce_stream's place in a CUDA stream
 * (`gpu_colls stream`, run by test/gpu/run.sh).
 *
 * The stream-ordered allreduce must read its send buffer only after the
 * work enqueued before it on the stream, and work enqueued after it must
 * see its result.  Each round enqueues on one non-blocking stream: a host
 * function that sleeps (so that the stream is still busy when the call
 * returns), poison into the receive buffer, the round's input into the
 * send buffer (cudaMemcpyAsync from pinned memory), the allreduce, and the
 * copy of the result back to pinned memory; only then does the host wait
 * for the stream.  A library that read the send buffer early would sum
 * the previous round's input, one that let the stream go on early would
 * leave the poison: both show as wrong elements.
 *
 * The API is the lead's to add: it is looked up with dlsym so that this
 * program builds and runs against a libweft without it, and then reports
 * "skipped: no stream API" (exit 77).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gpu_util.h"

typedef weft_status_t (*allreduce_stream_fn)(const void *sendbuf,
                                             void *recvbuf, size_t count,
                                             weft_dtype_t dtype, weft_op_t op,
                                             weft_comm_t comm,
                                             cudaStream_t stream);

#define STREAM_COUNT ((size_t)1 << 20) /* 4 MiB of float32 */
#define STREAM_ROUNDS 4
#define STREAM_DELAY_US 100000

static int round_no; /* the input of rank r at element i in this round */

static double round_val(int r, size_t i)
{
    return (double)(1 + (r + i + (size_t)round_no) % 8);
}

/* Runs on a CUDA runtime thread: must not call CUDA. */
static void CUDART_CB stream_delay(void *arg)
{
    (void)arg;
    usleep(STREAM_DELAY_US);
}

/* cudaStreamSynchronize, bounded: a stream the operation never releases
 * is reported rather than waited for until the outer timeout. */
#define STREAM_WAIT_S 60

static void wait_stream(cudaStream_t st)
{
    for (int ms = 0;; ms++) {
        cudaError_t e = cudaStreamQuery(st);
        if (e == cudaSuccess)
            return;
        if (e != cudaErrorNotReady)
            CU_CHECK(e);
        if (ms >= STREAM_WAIT_S * 1000)
            gpu_die(__FILE__, __LINE__, "cudaStreamQuery", "the stream "
                    "has not finished in 60 s: the operation never "
                    "released it");
        usleep(1000);
    }
}

static void stream_round(weft_comm_t comm, allreduce_stream_fn fn,
                         cudaStream_t st, void *send, void *recv,
                         void *pin_in, void *pin_out)
{
    const weft_dtype_t dt = WEFT_FLOAT32;
    size_t bytes = STREAM_COUNT * sizeof(float);
    void *in = gpu_host_fill(dt, STREAM_COUNT, round_val, gpu_rank, 0);
    memcpy(pin_in, in, bytes);
    free(in);
    memset(pin_out, 0, bytes);

    CU_CHECK(cudaLaunchHostFunc(st, stream_delay, NULL));
    CU_CHECK(cudaMemsetAsync(recv, 0xa5, bytes, st));
    CU_CHECK(cudaMemcpyAsync(send, pin_in, bytes, cudaMemcpyHostToDevice,
                             st));
    WEFT_MUST(comm, fn(send, recv, STREAM_COUNT, dt, WEFT_SUM, comm, st));
    CU_CHECK(cudaMemcpyAsync(pin_out, recv, bytes, cudaMemcpyDeviceToHost,
                             st));
    wait_stream(st);

    /* Every rank's round_val summed: small integers, exact in float32. */
    float *want = malloc(bytes);
    if (!want)
        gpu_die(__FILE__, __LINE__, "malloc", "out of memory");
    for (size_t i = 0; i < STREAM_COUNT; i++) {
        double sum = 0;
        for (int r = 0; r < gpu_size; r++)
            sum += round_val(r, i);
        want[i] = (float)sum;
    }
    char what[128];
    snprintf(what, sizeof(what), "allreduce_stream float32 sum n=%zu "
             "round %d", (size_t)STREAM_COUNT, round_no);
    gpu_expect_host(what, dt, pin_out, want, STREAM_COUNT);
    free(want);
}

int gpu_stream_main(weft_comm_t comm)
{
    allreduce_stream_fn fn;
    /* The POSIX way to turn dlsym's void * into a function pointer. */
    *(void **)&fn = dlsym(RTLD_DEFAULT, "weft_allreduce_stream");
    if (!fn) {
        if (gpu_rank == 0)
            printf("skipped: no stream API (libweft has no "
                   "weft_allreduce_stream)\n");
        return 77;
    }
    size_t bytes = STREAM_COUNT * sizeof(float);
    cudaStream_t st;
    void *send, *recv, *pin_in, *pin_out;
    CU_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CU_CHECK(cudaMalloc(&send, bytes));
    CU_CHECK(cudaMalloc(&recv, bytes));
    CU_CHECK(cudaMallocHost(&pin_in, bytes));
    CU_CHECK(cudaMallocHost(&pin_out, bytes));
    /* Round 0's send buffer starts as poison too: on the stream, since
     * a cudaMemset on the legacy default stream would race with the
     * non-blocking stream's copies. */
    CU_CHECK(cudaMemsetAsync(send, 0xa5, bytes, st));
    for (round_no = 0; round_no < STREAM_ROUNDS; round_no++)
        stream_round(comm, fn, st, send, recv, pin_in, pin_out);
    CU_CHECK(cudaStreamDestroy(st));
    CU_CHECK(cudaFree(send));
    CU_CHECK(cudaFree(recv));
    CU_CHECK(cudaFreeHost(pin_in));
    CU_CHECK(cudaFreeHost(pin_out));
    printf("[rank %d] stream: %d rounds of %zu elements, %d wrong\n",
           gpu_rank, STREAM_ROUNDS, (size_t)STREAM_COUNT, gpu_failures);
    return gpu_failures ? 1 : 0;
}
