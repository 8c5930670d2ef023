/*
 * reduce.h - host reductions: a [dtype][op] table of element-wise kernels,
 * plus dtype/op metadata.
 *
 * Semantics (shared with the CUDA kernels):
 *  - integers wrap on overflow (computed in unsigned arithmetic);
 *  - float16 and bfloat16 are widened to float32, combined, and rounded back
 *    to nearest even;
 *  - float8_e4m3 and float8_e5m2 likewise, every op, rounded back to
 *    nearest even with saturation to the largest finite value (an e5m2
 *    infinity included; fp8.h), NaN canonical as below (0x7f, 0x7e);
 *  - a NaN result of a float sum or product is the canonical quiet NaN
 *    (0x7e00, 0x7fc0, 0x7fc00000, 0x7ff8000000000000), whatever the inputs'
 *    payloads, so operand order, vector width and device never change bits;
 *  - min/max: NaN if either input is NaN; -0 is below +0;
 *  - WEFT_AVG reduces as WEFT_SUM; wf_reduce_avg_finish divides once at the
 *    end (integers: C division truncating toward zero; floats: the float32 or
 *    float64 quotient, rounded once to the element type);
 *  - band/bor/bxor and land/lor (1 or 0, nonzero is true) are defined for
 *    the integer dtypes only.
 */
#ifndef WF_REDUCE_H
#define WF_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* dst[i] = a[i] op b[i] for i < n.  dst may alias a or b exactly; no other
 * overlap.  No alignment requirement beyond the element's natural one. */
typedef void (*wf_reduce_fn)(void *dst, const void *a, const void *b,
                             size_t n);

/* The kernel for (dtype, op); WEFT_AVG gives the sum kernel.  NULL when
 * either is out of range or the op is not defined for the dtype. */
wf_reduce_fn wf_reduce_get(weft_dtype_t dtype, weft_op_t op);

/* Whether op reduces dtype: both valid, and not a bitwise or logical op on
 * a float dtype (what the API checks before planning). */
bool wf_op_defined(weft_dtype_t dtype, weft_op_t op);

/* Convenience: look up and run. */
void wf_reduce(void *dst, const void *a, const void *b, size_t n,
               weft_dtype_t dtype, weft_op_t op);

/* In place: buf[i] = buf[i] / divisor, for WEFT_AVG's final step. */
void wf_reduce_avg_finish(void *buf, size_t n, weft_dtype_t dtype,
                          int divisor);

size_t wf_dtype_size(weft_dtype_t dtype);
bool wf_dtype_valid(int dtype);
bool wf_op_valid(int op);
const char *wf_dtype_name(weft_dtype_t dtype); /* "float32", "bfloat16", ... */
const char *wf_op_name(weft_op_t op);          /* "sum", "band", ... */
/* Accept the names above (and nccl-tests aliases: float, half, bf16,
 * double, int, uint8, f8e4m3...); false when unknown. */
bool wf_dtype_parse(const char *text, weft_dtype_t *dtype);
bool wf_op_parse(const char *text, weft_op_t *op);

#endif /* WF_REDUCE_H */
