/*
 * dev_cuda.cu - the real device layer (cuda/weft_cuda.h): wf_dev_ops_t
 * over the CUDA runtime, exported from libweft_cuda.so as
 * `wf_cuda_dev_ops` for dev_load.c to find with dlsym.
 *
 * Semantics follow the fake layer (dev_fake.c), which the multi-rank tests
 * run against: a stream is a cudaStream_t created non-blocking (it must not
 * serialise with the application's legacy default stream: the engine's
 * copies would otherwise wait for, and hold up, unrelated application
 * kernels), an event a cudaEvent_t without timing (cheaper to record and
 * query; nothing here measures time).  Every failing op returns
 * WEFT_ERR_CUDA (WEFT_ERR_NO_MEMORY when an allocation ran out) and leaves
 * "<call>: <CUDA's text> (<error name>)" in a thread-local buffer for
 * last_error(); the core logs it once.
 */
#include <pthread.h>
#include <stdio.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "reduce_kernels.h"
#include "weft_cuda.h"

namespace {

/* The calling thread's last failure, for last_error(). */
thread_local char last_msg[256] = "no error";

/* Records `err` from `call` and returns the status for it.
 *
 * The runtime also keeps a failed call's error as the thread's "last
 * error", and a kernel launch reports its own failure only through that
 * (reduce.cu reads cudaGetLastError after launching): an error left there
 * would make the next reduction on this thread fail with it.  The failure
 * is reported here through the status, so it is cleared.  (A sticky error,
 * one that breaks the context, stays whatever is done: every later call
 * returns it, and so fails with its own message.) */
weft_status_t fail(const char *call, cudaError_t err)
{
    snprintf(last_msg, sizeof(last_msg), "%s: %s (%s)", call,
             cudaGetErrorString(err), cudaGetErrorName(err));
    (void)cudaGetLastError();
    return err == cudaErrorMemoryAllocation ? WEFT_ERR_NO_MEMORY
                                            : WEFT_ERR_CUDA;
}

weft_status_t check(const char *call, cudaError_t err)
{
    return err == cudaSuccess ? WEFT_OK : fail(call, err);
}

cudaStream_t cu_stream(wf_dev_stream_t s)
{
    return static_cast<cudaStream_t>(s);
}

cudaEvent_t cu_event(wf_dev_event_t e)
{
    return static_cast<cudaEvent_t>(e);
}

/* ---- memory ----------------------------------------------------------- */

/* Never fails (weft_cuda.h): a pointer CUDA does not know, or a query that
 * fails (no driver, no device, a pointer from another allocator on an old
 * runtime), is host memory.  A failed query's error is cleared so that it
 * is not taken later for a kernel launch's (see fail()). */
wf_memtype_t cu_memtype(const void *ptr, int *device)
{
    cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
    wf_memtype_t t = WF_MEM_HOST;
    int dev = -1;
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
    } else {
        switch (attr.type) {
        case cudaMemoryTypeHost: /* cudaMallocHost or cudaHostRegister */
            t = WF_MEM_HOST_PINNED;
            break;
        case cudaMemoryTypeDevice:
            t = WF_MEM_DEVICE;
            dev = attr.device;
            break;
        case cudaMemoryTypeManaged:
            t = WF_MEM_MANAGED;
            dev = attr.device;
            break;
        case cudaMemoryTypeUnregistered:
        default:
            break;
        }
    }
    if (device)
        *device = dev;
    return t;
}

/* -1 is the "device" of host memory (memtype): nothing to switch to. */
weft_status_t cu_set_device(int device)
{
    if (device < 0)
        return WEFT_OK;
    return check("cudaSetDevice", cudaSetDevice(device));
}

weft_status_t cu_get_device(int *device)
{
    return check("cudaGetDevice", cudaGetDevice(device));
}

/* cudaMalloc or cudaMallocHost.  Zero bytes get one, as in the fake
 * layer: a distinct non-NULL pointer that the matching free takes back. */
weft_status_t alloc_with(cudaError_t (*fn)(void **, size_t), const char *call,
                         size_t bytes, void **ptr)
{
    void *p = NULL;
    cudaError_t err = fn(&p, bytes ? bytes : 1);
    if (err != cudaSuccess)
        return fail(call, err);
    *ptr = p;
    return WEFT_OK;
}

/* The ops that return nothing still leave their failure for last_error()
 * and clear it (fail()); there is nobody to return it to. */
void free_with(cudaError_t (*fn)(void *), const char *call, void *ptr)
{
    if (ptr)
        (void)check(call, fn(ptr));
}

weft_status_t cu_alloc(size_t bytes, void **ptr)
{
    return alloc_with(cudaMalloc, "cudaMalloc", bytes, ptr);
}

void cu_free(void *ptr) { free_with(cudaFree, "cudaFree", ptr); }

weft_status_t cu_alloc_pinned(size_t bytes, void **ptr)
{
    return alloc_with(cudaMallocHost, "cudaMallocHost", bytes, ptr);
}

void cu_free_pinned(void *ptr)
{
    free_with(cudaFreeHost, "cudaFreeHost", ptr);
}

/* ---- streams and events ---------------------------------------------- */

/* cudaStreamCreateWithFlags or cudaEventCreateWithFlags: the handle goes
 * out as the layer's opaque one, only on success. */
template <typename H>
weft_status_t create_with(cudaError_t (*fn)(H *, unsigned int),
                          unsigned int flags, const char *call, void **out)
{
    H h;
    cudaError_t err = fn(&h, flags);
    if (err != cudaSuccess)
        return fail(call, err);
    *out = h;
    return WEFT_OK;
}

weft_status_t cu_stream_create(wf_dev_stream_t *stream)
{
    return create_with(cudaStreamCreateWithFlags, cudaStreamNonBlocking,
                       "cudaStreamCreateWithFlags", stream);
}

/* Work already enqueued still runs; the stream goes once it has. */
void cu_stream_destroy(wf_dev_stream_t stream)
{
    if (stream)
        (void)check("cudaStreamDestroy",
                    cudaStreamDestroy(cu_stream(stream)));
}

weft_status_t cu_event_create(wf_dev_event_t *event)
{
    return create_with(cudaEventCreateWithFlags, cudaEventDisableTiming,
                       "cudaEventCreateWithFlags", event);
}

/* Like cudaStreamDestroy: a pending record completes first. */
void cu_event_destroy(wf_dev_event_t event)
{
    if (event)
        (void)check("cudaEventDestroy", cudaEventDestroy(cu_event(event)));
}

weft_status_t cu_event_record(wf_dev_event_t event, wf_dev_stream_t stream)
{
    return check("cudaEventRecord",
                 cudaEventRecord(cu_event(event), cu_stream(stream)));
}

/* cudaErrorNotReady is "not yet", not a failure.  An event never recorded
 * is complete (cudaSuccess), as in the fake layer.  Whether the runtime
 * keeps a NotReady answer as the thread's last error is not documented; if
 * it did, the next reduction launched on this polling thread would fail
 * with it (see fail()), so it is cleared when it is there, and only then:
 * any other pending error is not ours to drop. */
weft_status_t cu_event_query(wf_dev_event_t event)
{
    cudaError_t err = cudaEventQuery(cu_event(event));
    if (err == cudaErrorNotReady) {
        if (cudaPeekAtLastError() == cudaErrorNotReady)
            (void)cudaGetLastError();
        return WEFT_INPROGRESS;
    }
    return check("cudaEventQuery", err);
}

weft_status_t cu_stream_wait_event(wf_dev_stream_t stream,
                                   wf_dev_event_t event)
{
    return check("cudaStreamWaitEvent",
                 cudaStreamWaitEvent(cu_stream(stream), cu_event(event), 0));
}

/* cudaLaunchHostFunc runs fn on a runtime thread once the work before it
 * is done and holds later work on the stream until fn returns; fn may not
 * call CUDA (weft_cuda.h passes that rule on to the core). */
weft_status_t cu_host_func(wf_dev_stream_t stream, void (*fn)(void *),
                           void *arg)
{
    return check("cudaLaunchHostFunc",
                 cudaLaunchHostFunc(cu_stream(stream), fn, arg));
}

weft_status_t cu_stream_capturing(wf_dev_stream_t stream, int *capturing)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing(cu_stream(stream), &status);
    if (err != cudaSuccess)
        return fail("cudaStreamIsCapturing", err);
    *capturing = status != cudaStreamCaptureStatusNone;
    return WEFT_OK;
}

/* The driver's cuStreamWaitValue32, found once through the runtime
 * (libweft_cuda.so links the runtime only, not libcuda). */
typedef CUresult (*wait_value32_fn)(CUstream, CUdeviceptr, cuuint32_t,
                                     unsigned int);

wait_value32_fn wait_value32(void)
{
    static wait_value32_fn fn;
    static bool looked;
    if (!looked) {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &p,
                                             12000, cudaEnableDefault,
                                             &q) == cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<wait_value32_fn>(p);
        else
            (void)cudaGetLastError();
        looked = true;
    }
    return fn;
}

/* The stream waits until the pinned word `flag` is nonzero: a wait the GPU
 * does itself (stream memory operations), holding no host thread.  The
 * word is in cudaMallocHost memory, which unified addressing maps at the
 * same address for the device. */
weft_status_t cu_stream_wait_flag(wf_dev_stream_t stream,
                                  const volatile uint32_t *flag)
{
    wait_value32_fn fn = wait_value32();
    if (!fn) {
        snprintf(last_msg, sizeof(last_msg), "cuStreamWaitValue32: the "
                 "driver does not provide it");
        return WEFT_ERR_CUDA;
    }
    CUresult r = fn(static_cast<CUstream>(stream),
                    reinterpret_cast<CUdeviceptr>(flag), 1,
                    CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS)
        return WEFT_OK;
    snprintf(last_msg, sizeof(last_msg), "cuStreamWaitValue32: driver "
             "error %d", static_cast<int>(r));
    return WEFT_ERR_CUDA;
}

/* ---- work on a stream ------------------------------------------------- */

/* cudaMemcpyDefault: the direction comes from the pointers (unified
 * addressing), so one op serves device<->device, host<->device and
 * pinned staging. */
weft_status_t cu_copy(void *dst, const void *src, size_t bytes,
                      wf_dev_stream_t stream)
{
    if (bytes == 0)
        return WEFT_OK;
    return check("cudaMemcpyAsync",
                 cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                 cu_stream(stream)));
}

/* wf_cuda_reduce/avg_finish return 0, a cudaError_t of the launch, or -1
 * for a dtype or op they do not know (a caller bug: the core validated
 * both). */
weft_status_t launched(const char *call, int rc)
{
    if (rc == 0)
        return WEFT_OK;
    if (rc < 0) {
        snprintf(last_msg, sizeof(last_msg), "%s: unsupported dtype or op",
                 call);
        return WEFT_ERR_INVALID_ARG;
    }
    return fail(call, static_cast<cudaError_t>(rc));
}

weft_status_t cu_reduce(void *dst, const void *a, const void *b, size_t n,
                        weft_dtype_t dtype, weft_op_t op,
                        wf_dev_stream_t stream)
{
    return launched("wf_cuda_reduce launch",
                    wf_cuda_reduce(dst, a, b, n, dtype, op, NULL, stream));
}

weft_status_t cu_avg_finish(void *buf, size_t n, weft_dtype_t dtype,
                            int divisor, wf_dev_stream_t stream)
{
    return launched("wf_cuda_avg_finish launch",
                    wf_cuda_avg_finish(buf, n, dtype, divisor, NULL, stream));
}

const char *cu_last_error(void) { return last_msg; }

/* The driver's cuMemGetAddressRange and cuMemGetHandleForAddressRange,
 * found once through the runtime like cuStreamWaitValue32. */
typedef CUresult (*addr_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*handle_range_fn)(void *, CUdeviceptr, size_t,
                                    CUmemRangeHandleType, unsigned long long);

void *driver_entry(const char *name)
{
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
        return p;
    (void)cudaGetLastError();
    return nullptr;
}

/* The whole allocation is exported (the range must be page aligned, and
 * an allocation is), and the caller registers its part by offset. */
weft_status_t cu_dmabuf_fd(const void *ptr, size_t len, int *fd,
                           uint64_t *offset)
{
    static addr_range_fn range =
        reinterpret_cast<addr_range_fn>(driver_entry("cuMemGetAddressRange"));
    static handle_range_fn handle = reinterpret_cast<handle_range_fn>(
        driver_entry("cuMemGetHandleForAddressRange"));
    CUdeviceptr base = 0;
    size_t size = 0;
    int out = -1;
    (void)len;
    if (!range || !handle) {
        snprintf(last_msg, sizeof(last_msg), "cuMemGetHandleForAddressRange:"
                 " the driver does not provide it (no driver, or one older "
                 "than 515)");
        return WEFT_ERR_UNSUPPORTED;
    }
    CUresult r = range(&base, &size, reinterpret_cast<CUdeviceptr>(ptr));
    if (r == CUDA_SUCCESS)
        r = handle(&out, base, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS) {
        snprintf(last_msg, sizeof(last_msg), "cuMemGetHandleForAddressRange:"
                 " driver error %d", static_cast<int>(r));
        return WEFT_ERR_UNSUPPORTED;
    }
    *fd = out;
    *offset = reinterpret_cast<uintptr_t>(ptr) - base;
    return WEFT_OK;
}

/* Makes `device` the calling thread's current one for an op that must
 * leave it as it was (-1: stays); *current gets the one leave_device
 * restores. */
weft_status_t enter_device(int device, int *current)
{
    cudaError_t err = cudaGetDevice(current);
    if (err != cudaSuccess)
        return fail("cudaGetDevice", err);
    if (device >= 0 && device != *current &&
        (err = cudaSetDevice(device)) != cudaSuccess)
        return fail("cudaSetDevice", err);
    return WEFT_OK;
}

void leave_device(int device, int current)
{
    if (device >= 0 && device != current)
        (void)cudaSetDevice(current);
}

/* cudaStreamLegacy, not 0: in a program built with per-thread default
 * streams, 0 would name the calling thread's stream alone.  The legacy
 * stream waits for every blocking stream, per-thread ones included. */
weft_status_t cu_mark_default_stream(int device, wf_dev_event_t *event)
{
    int current = -1;
    weft_status_t st = enter_device(device, &current);
    if (st != WEFT_OK)
        return st;
    cudaEvent_t ev = nullptr;
    const char *call = "cudaEventCreateWithFlags";
    cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (err == cudaSuccess) {
        call = "cudaEventRecord on the legacy default stream";
        err = cudaEventRecord(ev, cudaStreamLegacy);
        if (err != cudaSuccess)
            (void)cudaEventDestroy(ev);
    }
    leave_device(device, current);
    if (err != cudaSuccess)
        return fail(call, err);
    *event = ev;
    return WEFT_OK;
}

/* Devices whose kernels are loaded (prepare_device); a device past the
 * array loads every time, which is only slower. */
bool kernels_loaded[64];
pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;

weft_status_t cu_prepare_device(int device)
{
    weft_status_t st;
    if (device < 0 &&
        (st = check("cudaGetDevice", cudaGetDevice(&device))) != WEFT_OK)
        return st;
    bool known = device < (int)(sizeof(kernels_loaded) /
                                sizeof(kernels_loaded[0]));
    if (known && __atomic_load_n(&kernels_loaded[device], __ATOMIC_ACQUIRE))
        return WEFT_OK;
    int current = -1, rc = 0;
    pthread_mutex_lock(&kernels_lock);
    st = enter_device(device, &current);
    if (st == WEFT_OK) {
        rc = wf_cuda_load_kernels();
        leave_device(device, current);
        if (rc == 0 && known)
            __atomic_store_n(&kernels_loaded[device], true,
                             __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&kernels_lock);
    if (st == WEFT_OK && rc != 0)
        st = fail("cudaFuncGetAttributes (loading the reduction kernels)",
                  (cudaError_t)rc);
    return st;
}

} /* namespace */

/* Exported whatever the visibility default of the build: dev_load.c looks
 * this one symbol up. */
extern "C" __attribute__((visibility("default")))
const wf_dev_ops_t wf_cuda_dev_ops = {
    .version = WF_DEV_OPS_VERSION,
    .name = "cuda",
    .memtype = cu_memtype,
    .set_device = cu_set_device,
    .get_device = cu_get_device,
    .alloc = cu_alloc,
    .free = cu_free,
    .alloc_pinned = cu_alloc_pinned,
    .free_pinned = cu_free_pinned,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .stream_wait_event = cu_stream_wait_event,
    .host_func = cu_host_func,
    .stream_wait_flag = cu_stream_wait_flag,
    .copy = cu_copy,
    .reduce = cu_reduce,
    .avg_finish = cu_avg_finish,
    .last_error = cu_last_error,
    .dmabuf_fd = cu_dmabuf_fd,
    .mark_default_stream = cu_mark_default_stream,
    .prepare_device = cu_prepare_device,
    .stream_capturing = cu_stream_capturing,
};
