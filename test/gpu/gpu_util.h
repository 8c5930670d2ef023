/*
 * gpu_util.h - helpers of the GPU test program (gpu_colls.c,
 * gpu_stream.c): device buffers filled and read with cudaMemcpy, element
 * values stored in any weft dtype, and comparisons that report the first
 * wrong element.  The program uses the public API (include/weft.h) and the
 * CUDA runtime only.
 *
 * Values are small integers, exact in every dtype (float16 up to 2048,
 * bfloat16 up to 256), so every expected result is computed here in
 * double and stored in the element type, independently of the library
 * (integer products wrap, as the library's do).
 */
#ifndef WF_GPU_UTIL_H
#define WF_GPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "weft.h"

/* This process's rank and the world size, set by gpu_init. */
extern int gpu_rank, gpu_size;

/* Exits the process (exit code 1) after printing rank, place and why:
 * a failed CUDA or weft call leaves the ranks out of step, so the run
 * stops (weftrun then stops the other ranks). */
void gpu_die(const char *file, int line, const char *what, const char *why)
    __attribute__((noreturn));

#define CU_CHECK(call)                                                         \
    do {                                                                       \
        cudaError_t cu_e_ = (call);                                            \
        if (cu_e_ != cudaSuccess)                                              \
            gpu_die(__FILE__, __LINE__, #call, cudaGetErrorString(cu_e_));     \
    } while (0)

/* A weft call that must succeed; the message is the communicator's. */
void gpu_weft_ok(const char *file, int line, const char *what,
                 weft_status_t st, weft_comm_t comm);
#define WEFT_MUST(comm, call)                                                  \
    gpu_weft_ok(__FILE__, __LINE__, #call, (call), (comm))

/* weft_comm_init from the launcher's environment, then the device
 * rank % (number of devices). */
weft_comm_t gpu_init(void);

size_t gpu_dtype_size(weft_dtype_t dt);
const char *gpu_dtype_name(weft_dtype_t dt);
const char *gpu_op_name(weft_op_t op);

/* Element i of `buf` (of dtype dt) = v, a small integer (or, for the
 * float types' WEFT_AVG, an exact quotient). */
void gpu_store(weft_dtype_t dt, void *buf, size_t i, double v);

/* A value of rank r at element i. */
typedef double (*gpu_gen_fn)(int r, size_t i);

/* Host buffer of n elements: gen(r, off + i). */
void *gpu_host_fill(weft_dtype_t dt, size_t n, gpu_gen_fn gen, int r,
                    size_t off);
/* Device buffer of n elements holding gen(r, i), or poison (0xa5 bytes)
 * when gen is NULL. */
void *gpu_dev_fill(weft_dtype_t dt, size_t n, gpu_gen_fn gen, int r);

/* Reads n elements of device buffer `dev` and compares them with `want`
 * (host); on a difference prints `what` and the first wrong element and
 * counts a failure.  Returns whether they are equal. */
bool gpu_expect_dev(const char *what, weft_dtype_t dt, const void *dev,
                    const void *want, size_t n);
/* The same for a host buffer. */
bool gpu_expect_host(const char *what, weft_dtype_t dt, const void *got,
                     const void *want, size_t n);

/* Failed comparisons so far in this process. */
extern int gpu_failures;

#endif /* WF_GPU_UTIL_H */
