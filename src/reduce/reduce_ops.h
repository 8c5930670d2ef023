/*
 * reduce_ops.h - the per-element operations of every reduction, shared by
 * the host table (reduce.c) and the CUDA kernels (cuda/reduce.cu), so CPU
 * and GPU results agree bit for bit: the same rounding (half.h), the same
 * NaN and signed-zero rules.  Plain C that nvcc compiles as
 * __host__ __device__ (WF_HALF_INLINE).  Semantics: reduce.h.
 */
#ifndef WF_REDUCE_OPS_H
#define WF_REDUCE_OPS_H

#include <stdint.h>

#include "reduce/fp8.h"
#include "reduce/half.h"

#define WF_ADD(x, y) ((x) + (y))
#define WF_MUL(x, y) ((x) * (y))
/* The integer product: 16-bit operands promote to int, where 65535 *
 * 65535 overflows (undefined); times 1u first makes it unsigned, which
 * wraps, and its low bits are the narrow type's product. */
#define WF_UMUL(x, y) ((x) * 1u * (y))
#define WF_LESS(x, y) ((x) < (y) ? (x) : (y))
#define WF_MORE(x, y) ((x) > (y) ? (x) : (y))
/* Integers only.  The logical ops give 1 or 0, nonzero being true (as
 * MPI_LAND and MPI_LOR); & and | rather than && and || so that the loops
 * have no branch and vectorize. */
#define WF_BAND(x, y) ((x) & (y))
#define WF_BOR(x, y) ((x) | (y))
#define WF_BXOR(x, y) ((x) ^ (y))
#define WF_LAND(x, y) (((x) != 0) & ((y) != 0))
#define WF_LOR(x, y) (((x) != 0) | ((y) != 0))

/* The min/max of NaN and anything is this one quiet NaN, so the result
 * does not depend on the argument order: recursive doubling combines
 * (a, b) on one rank and (b, a) on its partner, and both must agree. */
#define WF_F32_CANON_NAN 0x7fc00000u
#define WF_F64_CANON_NAN 0x7ff8000000000000ull

/*
 * Float min/max.  Written as one nested select: x < y, y < x, equal, and
 * unordered (a NaN) are the four outcomes.  Values that compare equal but
 * differ in bits are -0 and +0; OR-ing the bits gives -0 (min), AND-ing
 * gives +0 (max).  gcc 12 if-converts this shape for double too, where
 * separate statements for the NaN test leave a branch or an unsupported
 * mask conversion and the loop stays scalar.
 */
WF_HALF_INLINE float wf_min_f32(float x, float y)
{
    uint32_t ux = wf_f32_bits(x), uy = wf_f32_bits(y);
    return wf_f32_from_bits(x < y    ? ux
                            : y < x  ? uy
                            : x == y ? (ux | uy)
                                     : WF_F32_CANON_NAN);
}

WF_HALF_INLINE float wf_max_f32(float x, float y)
{
    uint32_t ux = wf_f32_bits(x), uy = wf_f32_bits(y);
    return wf_f32_from_bits(x > y    ? ux
                            : y > x  ? uy
                            : x == y ? (ux & uy)
                                     : WF_F32_CANON_NAN);
}

WF_HALF_INLINE double wf_min_f64(double x, double y)
{
    uint64_t ux = wf_f64_bits(x), uy = wf_f64_bits(y);
    return wf_f64_from_bits(x < y    ? ux
                            : y < x  ? uy
                            : x == y ? (ux | uy)
                                     : WF_F64_CANON_NAN);
}

WF_HALF_INLINE double wf_max_f64(double x, double y)
{
    uint64_t ux = wf_f64_bits(x), uy = wf_f64_bits(y);
    return wf_f64_from_bits(x > y    ? ux
                            : y > x  ? uy
                            : x == y ? (ux & uy)
                                     : WF_F64_CANON_NAN);
}

/*
 * float16 / bfloat16 min/max pick one input unchanged, so they need no
 * widening: flipping the magnitude bits of negative values gives a signed
 * integer key in the same order as the floats, with -0 (key -1) below +0
 * (key 0).  The key is one-to-one, so equal keys are equal bits.  A NaN
 * gives the same canonical quiet NaN that widening, wf_min_f32 and
 * narrowing would: 0x7e00 for float16, 0x7fc0 for bfloat16.  Integer
 * compares keep the loop free of float operations gcc might branch on.
 */
WF_HALF_INLINE int32_t wf_h16_key(uint16_t h)
{
    int32_t mag = h & 0x7fff;
    return (h & 0x8000) ? ~mag : mag;
}

WF_HALF_INLINE uint16_t wf_min_h16(uint16_t x, uint16_t y, int32_t inf,
                                  uint16_t qnan)
{
    uint16_t r = wf_h16_key(x) < wf_h16_key(y) ? x : y;
    int nan = ((x & 0x7fff) > inf) | ((y & 0x7fff) > inf);
    return nan ? qnan : r;
}

WF_HALF_INLINE uint16_t wf_max_h16(uint16_t x, uint16_t y, int32_t inf,
                                  uint16_t qnan)
{
    uint16_t r = wf_h16_key(x) > wf_h16_key(y) ? x : y;
    int nan = ((x & 0x7fff) > inf) | ((y & 0x7fff) > inf);
    return nan ? qnan : r;
}

/*
 * Float sum and product: a NaN result is the canonical quiet NaN, whatever
 * NaNs went in.  Which input's payload x86 passes on depends on the operand
 * order the compiler picked (scalar and vector code differ), recursive
 * doubling adds (a, b) on one rank and (b, a) on its partner, and GPUs
 * return their own default NaN: without this rule the ranks, and the CPU
 * and the GPU, could end with different bits.  The select vectorizes.
 */
WF_HALF_INLINE float wf_canon_f32(float r)
{
    /* On the bits: a float compare here keeps gcc from vectorizing the
     * float16 loops, whose narrowing is all integer selects. */
    uint32_t u = wf_f32_bits(r);
    return wf_f32_from_bits((u & 0x7fffffffu) > WF_F32_INF ? WF_F32_CANON_NAN
                                                            : u);
}

WF_HALF_INLINE double wf_canon_f64(double r)
{
    return r != r ? wf_f64_from_bits(WF_F64_CANON_NAN) : r;
}

#define WF_F32_ADD(x, y) wf_canon_f32(WF_ADD(x, y))
#define WF_F32_MUL(x, y) wf_canon_f32(WF_MUL(x, y))
#define WF_F64_ADD(x, y) wf_canon_f64(WF_ADD(x, y))
#define WF_F64_MUL(x, y) wf_canon_f64(WF_MUL(x, y))

/* A half NaN (magnitude above infinity `inf`) becomes `qnan`. */
WF_HALF_INLINE uint16_t wf_canon_h16(uint16_t h, int32_t inf, uint16_t qnan)
{
    return (int32_t)(h & 0x7fff) > inf ? qnan : h;
}

/* float16 / bfloat16 sum and product: widen to float32, combine, round
 * back once; a NaN becomes 0x7e00 / 0x7fc0 (after the narrowing, on
 * 16-bit integers, which keeps gcc's vectorization of these loops). */
#define WF_F16_OP(OP, x, y)                                                    \
    wf_canon_h16(wf_f32_to_f16(OP(wf_f16_to_f32(x), wf_f16_to_f32(y))),       \
                 0x7c00, 0x7e00)
#define WF_BF16_OP(OP, x, y)                                                   \
    wf_canon_h16(wf_f32_to_bf16(OP(wf_bf16_to_f32(x), wf_bf16_to_f32(y))),    \
                 0x7f80, 0x7fc0)
#define WF_F16_ADD(x, y) WF_F16_OP(WF_ADD, x, y)
#define WF_F16_MUL(x, y) WF_F16_OP(WF_MUL, x, y)
#define WF_F16_MIN(x, y) wf_min_h16(x, y, 0x7c00, 0x7e00)
#define WF_F16_MAX(x, y) wf_max_h16(x, y, 0x7c00, 0x7e00)
#define WF_BF16_ADD(x, y) WF_BF16_OP(WF_ADD, x, y)
#define WF_BF16_MUL(x, y) WF_BF16_OP(WF_MUL, x, y)
#define WF_BF16_MIN(x, y) wf_min_h16(x, y, 0x7f80, 0x7fc0)
#define WF_BF16_MAX(x, y) wf_max_h16(x, y, 0x7f80, 0x7fc0)

/*
 * float8_e4m3 / float8_e5m2 sum and product: widen both operands to
 * float32, combine, narrow once with rounding to nearest even and
 * saturation (fp8.h).  A NaN becomes the
 * format's canonical quiet NaN, 0x7f / 0x7e, for the reason given above
 * wf_canon_f32; `inf` is the largest magnitude that is not a NaN.
 */
WF_HALF_INLINE uint8_t wf_canon_f8(uint8_t b, uint32_t inf, uint8_t qnan)
{
    return ((uint32_t)b & 0x7fu) > inf ? qnan : b;
}

#define WF_E4M3_OP(OP, x, y)                                                   \
    wf_canon_f8(wf_f32_to_e4m3(OP(wf_e4m3_to_f32(x), wf_e4m3_to_f32(y))),     \
                WF_E4M3_MAX_FINITE, WF_E4M3_NAN)
#define WF_E5M2_OP(OP, x, y)                                                   \
    wf_canon_f8(wf_f32_to_e5m2(OP(wf_e5m2_to_f32(x), wf_e5m2_to_f32(y))),     \
                WF_E5M2_INF, WF_E5M2_NAN)
#define WF_E4M3_ADD(x, y) WF_E4M3_OP(WF_ADD, x, y)
#define WF_E4M3_MUL(x, y) WF_E4M3_OP(WF_MUL, x, y)
#define WF_E5M2_ADD(x, y) WF_E5M2_OP(WF_ADD, x, y)
#define WF_E5M2_MUL(x, y) WF_E5M2_OP(WF_MUL, x, y)

/*
 * fp8 min/max give what widening, wf_min_f32/wf_max_f32 and narrowing
 * would, without the floats, which keep gcc from vectorizing the loop:
 * the integer key of wf_h16_key on 8 bits picks one input (-0 below +0);
 * a magnitude above `top` (an e5m2 infinity) saturates to `top`; a NaN,
 * any magnitude above `nan_above`, gives the canonical `qnan`.
 */
WF_HALF_INLINE int32_t wf_f8_key(uint8_t b)
{
    int32_t mag = b & 0x7f;
    return (b & 0x80) ? ~mag : mag;
}

WF_HALF_INLINE uint8_t wf_pick_f8(uint8_t x, uint8_t y, int want_max,
                                  uint32_t top, uint32_t nan_above,
                                  uint8_t qnan)
{
    int32_t kx = wf_f8_key(x), ky = wf_f8_key(y);
    uint8_t r = (want_max ? kx > ky : kx < ky) ? x : y;
    uint8_t sat = (uint8_t)((r & 0x80u) | top);
    r = ((uint32_t)r & 0x7fu) > top ? sat : r;
    int nan = (((uint32_t)x & 0x7fu) > nan_above) |
              (((uint32_t)y & 0x7fu) > nan_above);
    return nan ? qnan : r;
}

#define WF_E4M3_PICK(x, y, mx)                                                 \
    wf_pick_f8(x, y, mx, WF_E4M3_MAX_FINITE, WF_E4M3_MAX_FINITE, WF_E4M3_NAN)
#define WF_E5M2_PICK(x, y, mx)                                                 \
    wf_pick_f8(x, y, mx, WF_E5M2_MAX_FINITE, WF_E5M2_INF, WF_E5M2_NAN)
#define WF_E4M3_MIN(x, y) WF_E4M3_PICK(x, y, 0)
#define WF_E4M3_MAX(x, y) WF_E4M3_PICK(x, y, 1)
#define WF_E5M2_MIN(x, y) WF_E5M2_PICK(x, y, 0)
#define WF_E5M2_MAX(x, y) WF_E5M2_PICK(x, y, 1)

#endif /* WF_REDUCE_OPS_H */
