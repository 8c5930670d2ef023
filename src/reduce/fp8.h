/*
 * fp8.h - the two OCP 8-bit float formats <-> float32.
 *
 * float8_e4m3 ("e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
 * infinities, S.1111.111 is NaN, so the largest finite value is
 * S.1111.110 = 448.  float8_e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa
 * bits, IEEE-like (infinities, NaNs); largest finite 57344.
 *
 * Widening is exact.  Narrowing rounds to nearest even and saturates: a
 * value, infinities included, beyond the largest finite one becomes that
 * value with its sign, as CUDA's __nv_cvt_float_to_fp8 with __NV_SATFINITE
 * (the conversion of the __nv_fp8_* constructors, which NCCL's fp8
 * reductions use), so weft's results match a GPU's that reduced the same
 * way.  A NaN stays a NaN (its sign kept, its payload not: e4m3 has only
 * one NaN per sign).
 *
 * Like half.h: cases computed side by side and picked with selects, plain C
 * that the CUDA kernels include too.
 */
#ifndef WF_FP8_H
#define WF_FP8_H

#include <stdint.h>

#include "reduce/half.h"

#define WF_E4M3_MAX_FINITE 0x7eu  /* 448, the largest finite */
#define WF_E4M3_NAN 0x7fu         /* S.1111.111, the only NaN */
#define WF_E5M2_MAX_FINITE 0x7bu  /* 57344 */
#define WF_E5M2_INF 0x7cu
#define WF_E5M2_NAN 0x7eu         /* quiet: top mantissa bit set */
#define WF_F32_E4M3_MAX 0x43e00000u /* 448.0f */
#define WF_F32_E5M2_MAX 0x47600000u /* 57344.0f */
/* Smallest normals, 2^-6 and 2^-14, as float32 bits. */
#define WF_F32_E4M3_MIN_NORMAL 0x3c800000u
#define WF_F32_E5M2_MIN_NORMAL 0x38800000u

WF_HALF_INLINE float wf_e4m3_to_f32(uint8_t b)
{
    uint32_t sign = ((uint32_t)b & 0x80u) << 24;
    uint32_t em = (uint32_t)b & 0x7fu; /* exponent and mantissa */
    /* Normal: the fields moved to float32's places, the exponent rebiased
     * from 7 to 127. */
    uint32_t r = (em << 20) + ((127u - 7u) << 23);
    r = em == WF_E4M3_NAN ? WF_F32_INF | WF_F32_QUIET : r;
    /* Exponent field 0: mantissa * 2^-9, exact in float32. */
    uint32_t sub = wf_f32_bits((float)(int32_t)em * 0x1p-9f);
    r = wf_select32(em < 8u, sub, r);
    return wf_f32_from_bits(r | sign);
}

/* e5m2 is the upper byte of a binary16: same exponent, mantissa cut to two
 * bits; infinities and NaNs widen as binary16's do. */
WF_HALF_INLINE float wf_e5m2_to_f32(uint8_t b)
{
    return wf_f16_to_f32((uint16_t)((uint32_t)b << 8));
}

/*
 * Narrowing, shared by both formats: `mant` mantissa bits, exponent bias
 * `bias`.  In the normal range, rebias and add just under half an ulp plus
 * the kept lsb, so exact ties round to even (a mantissa carry bumps the
 * exponent, which is right).  Below the smallest normal, adding `magic`
 * (a power of two whose float32 ulp is the format's subnormal step) makes
 * the float adder round |f| to a whole number of steps, ties to even; the
 * low bits are then the fp8 bits, up to the smallest normal's.
 */
WF_HALF_INLINE uint32_t wf_f32_to_f8(float f, int mant, uint32_t bias,
                                     uint32_t min_normal, float magic,
                                     uint32_t max_bits, uint32_t max_code,
                                     uint32_t nan_code)
{
    uint32_t u = wf_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    int shift = 23 - mant;
    uint32_t normal = (a - ((127u - bias) << 23) + ((1u << (shift - 1)) - 1u) +
                       ((a >> shift) & 1u)) >> shift;
    uint32_t sub = wf_f32_bits(wf_f32_from_bits(a) + magic) -
                   wf_f32_bits(magic);
    uint32_t r = a >= max_bits ? max_code : normal; /* saturate, inf too */
    r = a > WF_F32_INF ? nan_code : r;
    r = wf_select32(a < min_normal, sub, r);
    return r | sign;
}

WF_HALF_INLINE uint8_t wf_f32_to_e4m3(float f)
{
    return (uint8_t)wf_f32_to_f8(f, 3, 7u, WF_F32_E4M3_MIN_NORMAL, 0x1p14f,
                                 WF_F32_E4M3_MAX, WF_E4M3_MAX_FINITE,
                                 WF_E4M3_NAN);
}

WF_HALF_INLINE uint8_t wf_f32_to_e5m2(float f)
{
    return (uint8_t)wf_f32_to_f8(f, 2, 15u, WF_F32_E5M2_MIN_NORMAL, 0x1p7f,
                                 WF_F32_E5M2_MAX, WF_E5M2_MAX_FINITE,
                                 WF_E5M2_NAN);
}

#endif /* WF_FP8_H */
