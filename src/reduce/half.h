/*
 * half.h - float16 and bfloat16 <-> float32 conversions.
 *
 * Round to nearest even, infinities and subnormals exact, NaN kept as a
 * quiet NaN (sign and top payload bits preserved).  Every case is computed
 * and the answer picked with selects, never with a branch per element, so
 * loops calling these vectorize with plain SSE2; variable shifts are avoided
 * for the same reason (SSE2 has no per-lane shift count).  Plain C with no
 * library calls: the CUDA kernels include this file too.
 *
 * The float adds used below rely on the default rounding mode (nearest
 * even).  Flush-to-zero / denormals-are-zero modes do not change any
 * result: the only float subnormals involved are inputs that round to a
 * half zero anyway.
 */
#ifndef WF_HALF_H
#define WF_HALF_H

#include <stdint.h>

#if defined(__CUDACC__)
#define WF_HALF_INLINE static __host__ __device__ __forceinline__
#else
#define WF_HALF_INLINE static inline
#endif

/* Union punning is defined in C11 and cheap: it stays in a register. */
WF_HALF_INLINE uint32_t wf_f32_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

WF_HALF_INLINE float wf_f32_from_bits(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

WF_HALF_INLINE uint64_t wf_f64_bits(double d)
{
    union { double d; uint64_t u; } v;
    v.d = d;
    return v.u;
}

WF_HALF_INLINE double wf_f64_from_bits(uint64_t u)
{
    union { double d; uint64_t u; } v;
    v.u = u;
    return v.d;
}

/*
 * Branch-free select for cases computed with float arithmetic.  Written as
 * a ternary, gcc moves the float operation of the case not taken behind a
 * branch, and under -ftrapping-math (the default) it may then not turn that
 * branch back into a select, since the operation could raise an exception;
 * the loop is then not vectorized.  A mask keeps the operation
 * unconditional.
 */
WF_HALF_INLINE uint32_t wf_select32(int cond, uint32_t yes, uint32_t no)
{
    uint32_t mask = 0u - (uint32_t)(cond != 0);
    return (yes & mask) | (no & ~mask);
}

/* float16 bit layout: 1 sign, 5 exponent (bias 15), 10 mantissa. */
#define WF_F16_EXP_MASK 0x7c00u
#define WF_F16_MIN_NORMAL 0x0400u
#define WF_F16_QUIET 0x0200u
/* Exponent rebias between float16 (15) and float32 (127), in place. */
#define WF_F16_REBIAS ((127u - 15u) << 23)
/* float32 bits of 2^-14 (smallest normal half) and of 65520 (half-way
 * between the largest half, 65504, and 65536: ties go up to infinity
 * because 65504's mantissa is odd). */
#define WF_F32_HALF_MIN_NORMAL 0x38800000u
#define WF_F32_HALF_OVERFLOW 0x477ff000u
#define WF_F32_INF 0x7f800000u
#define WF_F32_QUIET 0x00400000u

WF_HALF_INLINE float wf_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t em = (uint32_t)h & 0x7fffu; /* exponent and mantissa */
    /* Normal: move the fields into place and rebias the exponent; inf and
     * NaN rebias once more to reach the all-ones float exponent, and a NaN
     * gets the quiet bit. */
    uint32_t r = (em << 13) + WF_F16_REBIAS;
    r += em >= WF_F16_EXP_MASK ? WF_F16_REBIAS : 0u;
    r |= em > WF_F16_EXP_MASK ? WF_F32_QUIET : 0u;
    /* Zero and subnormals are mantissa * 2^-24, exact in float32; the
     * int-to-float conversion exists in SSE2, a normalizing shift does
     * not. */
    uint32_t sub = wf_f32_bits((float)(int32_t)em * 0x1p-24f);
    r = wf_select32(em < WF_F16_MIN_NORMAL, sub, r);
    return wf_f32_from_bits(r | sign);
}

WF_HALF_INLINE uint16_t wf_f32_to_f16(float f)
{
    uint32_t u = wf_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu; /* magnitude bits */
    /* Normal range: rebias, then add 0x0fff (just under half an ulp) plus
     * the kept lsb, so exact ties round to even; a mantissa carry bumps
     * the exponent, which is the right answer.  Wraps harmlessly (unsigned)
     * for inputs the later selects replace. */
    uint32_t normal =
        (a - WF_F16_REBIAS + 0x0fffu + ((a >> 13) & 1u)) >> 13;
    /* Below 2^-14: adding 0.5 puts the float ulp at 2^-24, one half
     * subnormal step, so the adder rounds |f| / 2^-24 to an integer (ties
     * to even) and the low bits are the half's bits, up to 0x400 for
     * inputs that round up to the smallest normal. */
    uint32_t sub = wf_f32_bits(wf_f32_from_bits(a) + 0.5f) - 0x3f000000u;
    /* NaN: keep the top payload bits and make it quiet. */
    uint32_t nan = WF_F16_EXP_MASK | WF_F16_QUIET | ((a >> 13) & 0x3ffu);
    uint32_t r = a >= WF_F32_HALF_OVERFLOW ? WF_F16_EXP_MASK : normal;
    r = a > WF_F32_INF ? nan : r;
    /* Last, so that no later select can hide the float add in a branch. */
    r = wf_select32(a < WF_F32_HALF_MIN_NORMAL, sub, r);
    return (uint16_t)(r | sign);
}

/* bfloat16 is the upper half of a float32: widening is a shift. */
WF_HALF_INLINE float wf_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    u |= ((uint32_t)h & 0x7fffu) > 0x7f80u ? WF_F32_QUIET : 0u;
    return wf_f32_from_bits(u);
}

WF_HALF_INLINE uint16_t wf_f32_to_bf16(float f)
{
    uint32_t u = wf_f32_bits(f);
    /* Same bias trick as for float16: 0x7fff plus the kept lsb.  The carry
     * out of the largest finite values gives infinity, as it should. */
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x0040u;
    return (uint16_t)((u & 0x7fffffffu) > WF_F32_INF ? nan : r);
}

#endif /* WF_HALF_H */
