/*
 * reduce_kernels.h - the element-wise reductions on device memory
 * (reduce.cu): the CUDA part's interface to its own host glue and to the
 * tests, which run the same kernels on the CPU through cuda_compat.h's
 * shim.  Results equal the host table's (src/reduce/reduce.h) bit for bit:
 * both are built from src/reduce/reduce_ops.h.
 */
#ifndef WF_CUDA_REDUCE_KERNELS_H
#define WF_CUDA_REDUCE_KERNELS_H

#include <stddef.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launch shape: threads per block, and at most this many blocks (the
 * kernels are grid-stride loops, so any shape covers any size).  Zero
 * fields take the defaults below. */
typedef struct wf_cuda_shape {
    int threads;
    int max_blocks;
} wf_cuda_shape_t;

#define WF_CUDA_THREADS_DEFAULT 256
#define WF_CUDA_BLOCKS_DEFAULT 1024

/* dst[i] = a[i] op b[i] for i < n, enqueued on `stream` (a cudaStream_t;
 * NULL is the default stream).  dst may alias a or b exactly.  WEFT_AVG
 * gives the sum; wf_cuda_avg_finish divides at the end.  Returns 0, a
 * cudaError_t value from the launch, or -1 for an invalid dtype or op. */
int wf_cuda_reduce(void *dst, const void *a, const void *b, size_t n,
                   weft_dtype_t dtype, weft_op_t op,
                   const wf_cuda_shape_t *shape, void *stream);

/* buf[i] = buf[i] / divisor (WEFT_AVG's final step, as on the host). */
int wf_cuda_avg_finish(void *buf, size_t n, weft_dtype_t dtype, int divisor,
                       const wf_cuda_shape_t *shape, void *stream);

/* Loads every kernel above on the calling thread's current device now.
 * CUDA loads kernels lazily by default (CUDA_MODULE_LOADING=LAZY since
 * 12.2), and a first load waits for the device's queue to drain: from the
 * engine's thread, while an application stream waits for that very
 * operation (the stream-ordered calls), it would wait forever.  Returns 0
 * or the first failure's cudaError_t value. */
int wf_cuda_load_kernels(void);

#ifdef __cplusplus
}
#endif

#endif /* WF_CUDA_REDUCE_KERNELS_H */
