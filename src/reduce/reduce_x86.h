/*
 * reduce_x86.h - CPU-specific kernels behind the portable reduction table
 * (reduce_x86.c), and the portable ones they fall back to for tails.
 */
#ifndef WF_REDUCE_X86_H
#define WF_REDUCE_X86_H

#include "reduce/reduce.h"

/* The AVX2/F16C kernel for (dtype, op) when this CPU runs it and one
 * exists, else NULL.  Bit-identical results to the portable kernel. */
wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op);

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
