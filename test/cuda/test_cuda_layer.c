/*
 * test_cuda_layer.c - the real device layer as the core finds it: dlopen
 * of the freshly built build/lib/libweft_cuda.so (which proves its rpath
 * finds libcudart), the table `wf_cuda_dev_ops` with dlsym, its version,
 * name and every op, as dev_load.c checks and uses them.  Then, on a host
 * where CUDA cannot run (no GPU, no driver), that the ops fail as
 * weft_cuda.h says instead of crashing: a status and a message naming the
 * call.  What the ops do on a GPU is `make test-gpu`'s (test/gpu/).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "weft_cuda.h"

extern const char *wf_test_build_dir;

/* Where mk/cuda.mk looks for nvcc (CUDA=auto): /usr/local/cuda, then
 * PATH. */
static bool nvcc_found(void)
{
    if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
        return true;
    const char *path = getenv("PATH");
    char dir[4096];
    while (path && *path) {
        size_t len = strcspn(path, ":");
        snprintf(dir, sizeof(dir), "%.*s/nvcc", (int)len, path);
        if (len > 0 && access(dir, X_OK) == 0)
            return true;
        path += len + (path[len] == ':');
    }
    return false;
}

/* The layer's table, or a skip when this build has none to load. */
static const wf_dev_ops_t *load_layer(void)
{
    if (!wf_cuda_available())
        WF_SKIP("weft was built with CUDA=0: no libweft_cuda.so");
    char path[4096];
    snprintf(path, sizeof(path), "%s/lib/libweft_cuda.so", wf_test_build_dir);
    if (access(path, F_OK) != 0) {
        if (!nvcc_found())
            WF_SKIP("nvcc not found (/usr/local/cuda/bin, PATH): "
                    "libweft_cuda.so is not built");
        wf_test_fail(__FILE__, __LINE__, "nvcc is installed but %s was not "
                     "built (make cuda)", path);
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        wf_test_fail(__FILE__, __LINE__, "dlopen %s: %s", path, dlerror());
    const wf_dev_ops_t *ops = dlsym(h, "wf_cuda_dev_ops");
    if (!ops)
        wf_test_fail(__FILE__, __LINE__, "dlsym wf_cuda_dev_ops: %s",
                     dlerror());
    return ops; /* kept loaded, as dev_load.c does */
}

#define ASSERT_OP(ops, op)                                                     \
    do {                                                                       \
        if (!(ops)->op)                                                        \
            wf_test_fail(__FILE__, __LINE__, "wf_cuda_dev_ops." #op            \
                         " is NULL");                                          \
    } while (0)

WF_TEST(cuda_layer_loads_with_every_op, 30)
{
    const wf_dev_ops_t *ops = load_layer();
    ASSERT_EQ(ops->version, WF_DEV_OPS_VERSION);
    ASSERT_TRUE(ops->name && strcmp(ops->name, "cuda") == 0);
    ASSERT_OP(ops, memtype);
    ASSERT_OP(ops, set_device);
    ASSERT_OP(ops, get_device);
    ASSERT_OP(ops, alloc);
    ASSERT_OP(ops, free);
    ASSERT_OP(ops, alloc_pinned);
    ASSERT_OP(ops, free_pinned);
    ASSERT_OP(ops, stream_create);
    ASSERT_OP(ops, stream_destroy);
    ASSERT_OP(ops, event_create);
    ASSERT_OP(ops, event_destroy);
    ASSERT_OP(ops, event_record);
    ASSERT_OP(ops, event_query);
    ASSERT_OP(ops, stream_wait_event);
    ASSERT_OP(ops, host_func);
    ASSERT_OP(ops, stream_wait_flag);
    ASSERT_OP(ops, copy);
    ASSERT_OP(ops, reduce);
    ASSERT_OP(ops, avg_finish);
    ASSERT_OP(ops, last_error);
    ASSERT_OP(ops, dmabuf_fd);
    ASSERT_OP(ops, mark_default_stream);
}

/* A failed op: an error status, the output untouched, and last_error()
 * naming the call and CUDA's error by name. */
static void expect_failure(const wf_dev_ops_t *ops, weft_status_t st,
                           const char *call)
{
    if (st != WEFT_ERR_CUDA && st != WEFT_ERR_NO_MEMORY)
        wf_test_fail(__FILE__, __LINE__, "%s: got %s, expected "
                     "WEFT_ERR_CUDA or WEFT_ERR_NO_MEMORY", call,
                     weft_status_name(st));
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "%s: ", call);
    const char *msg = ops->last_error();
    ASSERT_TRUE(msg && strncmp(msg, prefix, strlen(prefix)) == 0);
    ASSERT_STR_CONTAINS(msg, "(cuda"); /* "(cudaErrorNoDevice)" */
    printf("%s\n", msg);
}

WF_TEST(cuda_layer_fails_cleanly_without_gpu, 30)
{
    const wf_dev_ops_t *ops = load_layer();

    /* memtype never fails: host memory is host memory, with or without a
     * device to ask. */
    int local = 0, dev = 7;
    char *heap = malloc(64);
    ASSERT_TRUE(heap);
    ASSERT_EQ(ops->memtype(&local, &dev), WF_MEM_HOST);
    ASSERT_EQ(dev, -1);
    dev = 7;
    ASSERT_EQ(ops->memtype(heap + 8, &dev), WF_MEM_HOST);
    ASSERT_EQ(dev, -1);
    free(heap);

    void *marker = &local, *p = marker;
    weft_status_t st = ops->alloc(64, &p);
    if (st == WEFT_OK) {
        ops->free(p);
        WF_SKIP("cudaMalloc works here: a CUDA device is usable, "
                "make test-gpu covers the layer");
    }
    expect_failure(ops, st, "cudaMalloc");
    ASSERT_TRUE(p == marker);
    expect_failure(ops, ops->alloc_pinned(64, &p), "cudaMallocHost");
    ASSERT_TRUE(p == marker);

    wf_dev_stream_t stream = marker;
    expect_failure(ops, ops->stream_create(&stream),
                   "cudaStreamCreateWithFlags");
    ASSERT_TRUE(stream == marker);
    wf_dev_event_t event = marker;
    expect_failure(ops, ops->event_create(&event), "cudaEventCreateWithFlags");
    ASSERT_TRUE(event == marker);
    expect_failure(ops, ops->set_device(0), "cudaSetDevice");
    int current = 7;
    st = ops->get_device(&current);
    printf("get_device without a GPU: %s, device %d\n", weft_status_name(st),
           current);
    /* No default stream to mark without a device. */
    expect_failure(ops, ops->mark_default_stream(0, &event),
                   st == WEFT_OK ? "cudaSetDevice" : "cudaGetDevice");
    ASSERT_TRUE(event == marker);
    /* The "device" of host memory is no device: nothing to fail. */
    ASSERT_OK(ops->set_device(-1));
    /* No dma-buf of anything without a device: the verbs transport then
     * tries peer memory (transport/ib/ib_gdr.c). */
    int fd = -1;
    uint64_t off = 0;
    ASSERT_STATUS(ops->dmabuf_fd(&local, sizeof(local), &fd, &off),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_EQ(fd, -1);
    ASSERT_STR_CONTAINS(ops->last_error(), "cuMemGetHandleForAddressRange");
    printf("%s\n", ops->last_error());
}
