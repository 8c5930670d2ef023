/*
 * weft_cuda.h - the only CUDA interface the core sees.
 *
 * The core never links the CUDA runtime.  Device work goes through a
 * device layer: a const ops table (like a transport's) that one of two
 * implementations provides:
 *
 *  - "cuda": libweft_cuda.so (cuda/dev_cuda.cu, built with nvcc, linked
 *    with libcudart), loaded with dlopen on the first buffer that may be
 *    device memory; it exports the table as `wf_cuda_dev_ops`.
 *  - "fake" (test/harness/dev_fake.c, in the test program only): host
 *    memory stands in for device memory and a worker thread per stream for
 *    a CUDA stream, so the staging pipeline and stream ordering run end to
 *    end in the multi-rank tests on machines without a GPU.  The tests
 *    hand it to the loader with wf_dev_layer_provide(), the seam the real
 *    layer comes through too.
 *
 * Every op that can fail returns a weft_status_t (WEFT_ERR_CUDA for a
 * device-side failure) and leaves a message naming the call and the CUDA
 * error text for last_error(); the core logs it once.
 */
#ifndef WEFT_CUDA_H
#define WEFT_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    WF_MEM_HOST = 0,
    WF_MEM_HOST_PINNED,
    WF_MEM_DEVICE,
    WF_MEM_MANAGED
} wf_memtype_t;

/* Streams and events are the layer's own opaque handles (cudaStream_t and
 * cudaEvent_t for "cuda"). */
typedef void *wf_dev_stream_t;
typedef void *wf_dev_event_t;

/* 3: dmabuf_fd appended.  4: get_device and mark_default_stream. */
#define WF_DEV_OPS_VERSION 5

typedef struct wf_dev_ops {
    int version; /* WF_DEV_OPS_VERSION: checked by the loader */
    const char *name;

    /* ---- memory -------------------------------------------------------- */
    /* Where `ptr` lives; unknown pointers are host memory.  *device gets
     * the ordinal of the GPU owning device or managed memory (else -1). */
    wf_memtype_t (*memtype)(const void *ptr, int *device);
    /* Makes `device` current for the calling thread (the engine's threads
     * follow the device of the buffers they work on). */
    weft_status_t (*set_device)(int device);
    /* The calling thread's current device (to restore after set_device). */
    weft_status_t (*get_device)(int *device);
    /* Device memory on the current device (scratch of device operations). */
    weft_status_t (*alloc)(size_t bytes, void **ptr);
    void (*free)(void *ptr);
    /* Page-locked host memory (staging buffers). */
    weft_status_t (*alloc_pinned)(size_t bytes, void **ptr);
    void (*free_pinned)(void *ptr);

    /* ---- streams and events ------------------------------------------- */
    weft_status_t (*stream_create)(wf_dev_stream_t *stream);
    void (*stream_destroy)(wf_dev_stream_t stream);
    weft_status_t (*event_create)(wf_dev_event_t *event);
    void (*event_destroy)(wf_dev_event_t event);
    /* Marks the point in `stream` that event_query then waits for. */
    weft_status_t (*event_record)(wf_dev_event_t event,
                                  wf_dev_stream_t stream);
    /* WEFT_OK once the work before the record is done, WEFT_INPROGRESS
     * before, an error if that work failed.  Never blocks. */
    weft_status_t (*event_query)(wf_dev_event_t event);
    /* Later work on `stream` waits for `event`'s recorded point. */
    weft_status_t (*stream_wait_event)(wf_dev_stream_t stream,
                                       wf_dev_event_t event);
    /* Runs fn(arg) on a layer thread once the work before it on `stream`
     * is done; later work on `stream` waits until fn returns.  fn must not
     * call the layer.  The stream-ordered API uses it to start an
     * operation at its place in the stream and hold the stream until the
     * operation ends. */
    weft_status_t (*host_func)(wf_dev_stream_t stream, void (*fn)(void *),
                               void *arg);
    /* Later work on `stream` waits until *flag (in memory from
     * alloc_pinned) is nonzero, which the host sets when an operation
     * ends: how the stream-ordered API holds a stream without blocking a
     * thread ("cuda": cuStreamWaitValue32). */
    weft_status_t (*stream_wait_flag)(wf_dev_stream_t stream,
                                      const volatile uint32_t *flag);

    /* ---- work enqueued on a stream ------------------------------------- */
    /* Any direction (unified addressing). */
    weft_status_t (*copy)(void *dst, const void *src, size_t bytes,
                          wf_dev_stream_t stream);
    /* dst[i] = a[i] op b[i], the host table's results bit for bit
     * (cuda/reduce.cu); WEFT_AVG sums, avg_finish divides. */
    weft_status_t (*reduce)(void *dst, const void *a, const void *b,
                            size_t n, weft_dtype_t dtype, weft_op_t op,
                            wf_dev_stream_t stream);
    weft_status_t (*avg_finish)(void *buf, size_t n, weft_dtype_t dtype,
                                int divisor, wf_dev_stream_t stream);

    /* The message of the calling thread's last failed op ("cudaMemcpyAsync:
     * an illegal memory access was encountered"). */
    const char *(*last_error)(void);

    /* ---- GPUDirect RDMA (version 3) ------------------------------------ */
    /* A dma-buf file descriptor that exports the device allocation holding
     * [ptr, ptr + len), for ibv_reg_dmabuf_mr; *offset is ptr's offset in
     * it.  The caller closes the fd.  "cuda": cuMemGetHandleForAddressRange
     * (driver 515 / CUDA 11.7 and later, on a kernel with dma-buf);
     * WEFT_ERR_UNSUPPORTED where the driver cannot. */
    weft_status_t (*dmabuf_fd)(const void *ptr, size_t len, int *fd,
                               uint64_t *offset);

    /* ---- the application's own order (version 4) ----------------------- */
    /* A new event, recorded on `device`'s legacy default stream from the
     * calling thread: the point that the work the application enqueued
     * before (on that stream, and on the blocking streams it waits for)
     * reaches.  The calling thread's current device is left as it was.
     * A call without a stream makes the engine's stream wait for it
     * before touching the buffers, so that cudaMemset, kernels, and
     * cudaMemcpy from pageable memory (which returns before its copy has
     * landed) on the default stream are seen, as a CUDA user expects. */
    weft_status_t (*mark_default_stream)(int device, wf_dev_event_t *event);

    /* ---- kernels loaded up front (version 5) --------------------------- */
    /* Loads every kernel of the layer on `device` (-1: the current one)
     * from the calling thread, the first time per device and process;
     * later calls return at once.  CUDA loads kernels lazily by default,
     * and a first load waits for the device's queue to drain: launched
     * from the engine's thread while an application stream waits for that
     * very operation (the stream-ordered calls), it would wait forever.
     * The core calls this from the application's thread before every call
     * on device buffers.  The calling thread's current device is left as
     * it was. */
    weft_status_t (*prepare_device)(int device);
    /* Whether work enqueued on `stream` now would be captured into a CUDA
     * graph (cudaStreamIsCapturing): *capturing 1 or 0.  The
     * stream-ordered calls refuse such a stream, since a replay would
     * run their host function and flag wait again for a request long
     * ended. */
    weft_status_t (*stream_capturing)(wf_dev_stream_t stream,
                                      int *capturing);
} wf_dev_ops_t;

/* libweft_cuda.so's table (dev_cuda.cu). */
extern const wf_dev_ops_t wf_cuda_dev_ops;

/* ---- the core's side (dev_load.c) --------------------------------------- */

/* Where `ptr` lives.  Without a loaded layer a pointer can only be device
 * memory if the process has the CUDA driver loaded; then the layer is
 * loaded to ask.  Never fails: anything unknown is host memory. */
wf_memtype_t wf_dev_memtype(const void *ptr, int *device);

/* False when no buffer of this process can be device memory now: no
 * provided layer and no CUDA driver loaded.  Costs what one wf_dev_memtype of a
 * host buffer costs, once for all of a call's buffers. */
bool wf_dev_possible(void);

/* The device layer, loading it on first use.  NULL when it cannot be had:
 * *why (capacity len) then says what is missing (libweft_cuda.so not
 * found, libcudart missing, version mismatch), for WEFT_ERR_CUDA. */
const wf_dev_ops_t *wf_dev_layer(char *why, size_t len);

/* Whether wf_dev_memtype's answer about a pointer holds for as long as its
 * memory stays allocated, so a caller may cache it: true once the real
 * layer answers (unified addressing never hands a freed device range out
 * as host memory); false before (the answer changes when CUDA loads) and
 * with a provided layer (the tests' fake device memory comes from
 * malloc). */
bool wf_dev_answers_cacheable(void);

/* A layer the process provides itself, used from now on instead of
 * loading libweft_cuda.so (before any communicator is created); NULL goes
 * back to loading the real one.  The tests' fake device
 * (test/harness/dev_fake.c) comes in this way. */
void wf_dev_layer_provide(const wf_dev_ops_t *ops);

/* Whether this build can operate on device memory at all. */
int wf_cuda_available(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CUDA_H */
