/*
 * reduce_x86.h - CPU-specific kernels behind the portable reduction table
 * (reduce_x86.c), and the portable ones they fall back to for tails.
 */
#ifndef WF_REDUCE_X86_H
#define WF_REDUCE_X86_H

#include "reduce/reduce.h"

/* The CPU-specific kernels come in tiers; a CPU with AVX-512F runs both. */
typedef enum {
    WF_X86_NONE = 0,
    WF_X86_AVX2 = 1,   /* AVX2, and F16C for float16 */
    WF_X86_AVX512 = 2, /* AVX-512F as well */
} wf_x86_tier_t;

/* The widest kernel for (dtype, op) this CPU runs, else NULL.
 * Bit-identical results to the portable kernel. */
wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op);
/* The kernel of one tier, NULL where this CPU does not run that tier or
 * it has none for (dtype, op) (tests compare every tier). */
wf_reduce_fn wf_reduce_x86_kernel(weft_dtype_t dtype, weft_op_t op,
                                  wf_x86_tier_t tier);

/* The portable kernels (reduce.c). */
void wf_reduce_float16_sum(void *dst, const void *a, const void *b, size_t n);
void wf_reduce_float16_prod(void *dst, const void *a, const void *b,
                            size_t n);
void wf_reduce_bfloat16_sum(void *dst, const void *a, const void *b,
                            size_t n);
void wf_reduce_bfloat16_prod(void *dst, const void *a, const void *b,
                             size_t n);
/* The portable kernel for (dtype, op), never a CPU-specific one (tests
 * compare the two). */
wf_reduce_fn wf_reduce_get_portable(weft_dtype_t dtype, weft_op_t op);

#endif /* WF_REDUCE_X86_H */
