/*
 * cuda_compat.h - what reduce.cu needs from CUDA, in two flavours:
 *
 *  - nvcc: the real thing; WF_LAUNCH is a <<<grid, block, 0, stream>>>
 *    launch.
 *  - WF_CUDA_SHIM (g++ on a host without a GPU, for the tests): the
 *    qualifiers vanish, blockIdx/threadIdx/blockDim/gridDim are thread-local
 *    variables, and WF_LAUNCH runs every thread of the grid in turn on the
 *    calling thread.  The kernels are grid-stride loops with no
 *    synchronisation between threads, so running the threads one after
 *    another computes what the GPU computes, and the tests exercise the
 *    kernels' own indexing, vector widths, heads and tails.
 */
#ifndef WF_CUDA_COMPAT_H
#define WF_CUDA_COMPAT_H

#include <stdint.h>

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#define WF_LAUNCH(kernel, grid, block, stream, ...)                            \
    kernel<<<(grid), (block), 0, (cudaStream_t)(stream)>>>(__VA_ARGS__)
#define WF_LAUNCH_ERROR() ((int)cudaGetLastError())

/* Loads a kernel now rather than at its first launch (CUDA loads modules
 * lazily by default since 12.2): 0 or a cudaError_t value. */
template <typename F> static inline int wf_load_kernel(F kernel)
{
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, (const void *)kernel);
}

#elif defined(WF_CUDA_SHIM)

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct wf_dim3 {
    unsigned x, y, z;
};
extern thread_local wf_dim3 blockIdx, threadIdx, blockDim, gridDim;

struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

#define WF_LAUNCH(kernel, grid, block, stream, ...)                            \
    do {                                                                       \
        (void)(stream);                                                        \
        gridDim = wf_dim3{(unsigned)(grid), 1, 1};                             \
        blockDim = wf_dim3{(unsigned)(block), 1, 1};                           \
        for (unsigned bx_ = 0; bx_ < gridDim.x; bx_++)                         \
            for (unsigned tx_ = 0; tx_ < blockDim.x; tx_++) {                  \
                blockIdx = wf_dim3{bx_, 0, 0};                                 \
                threadIdx = wf_dim3{tx_, 0, 0};                                \
                kernel(__VA_ARGS__);                                           \
            }                                                                  \
    } while (0)
#define WF_LAUNCH_ERROR() 0

/* The shim has nothing to load; it counts the kernels asked for, so that
 * a test sees every instantiation reached (test_cuda_kernels.c). */
extern unsigned wf_shim_kernels_loaded;
template <typename F> static inline int wf_load_kernel(F kernel)
{
    (void)kernel;
    wf_shim_kernels_loaded++;
    return 0;
}

#else
#error "reduce.cu is built by nvcc, or by a C++ compiler with WF_CUDA_SHIM"
#endif

#endif /* WF_CUDA_COMPAT_H */
