/*
 * fp8_ref.h - a reference for the OCP 8-bit floats, written from the
 * formats' definitions without the library's bit tricks (src/reduce/fp8.h
 * is what it checks): decoding with ldexp from the sign, exponent and
 * mantissa fields, and rounding from a double by searching the finite
 * patterns for the nearest value, the even one on a tie, saturating beyond
 * the largest finite value.  Used by the reduction tests and by the
 * collective harness (coll_util.c) to write and read fp8 buffers.
 */
#ifndef WF_TEST_FP8_REF_H
#define WF_TEST_FP8_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* A format: mantissa bits, exponent bits, and whether it is the "fn"
 * variant (e4m3: no infinities, only all-ones is NaN). */
typedef struct {
    int mant, ebits;
    bool fn;
} ref_f8_fmt_t;

static const ref_f8_fmt_t REF_E4M3 = {3, 4, true};
static const ref_f8_fmt_t REF_E5M2 = {2, 5, false};

static inline bool ref_f8_is_nan(uint8_t b, ref_f8_fmt_t f)
{
    int emax = (1 << f.ebits) - 1, mmax = (1 << f.mant) - 1;
    int e = (b >> f.mant) & emax, m = b & mmax;
    return f.fn ? (e == emax && m == mmax) : (e == emax && m != 0);
}

static inline bool ref_f8_is_inf(uint8_t b, ref_f8_fmt_t f)
{
    int emax = (1 << f.ebits) - 1;
    return !f.fn && ((b >> f.mant) & emax) == emax &&
           !(b & ((1 << f.mant) - 1));
}

/* The value of pattern b: (-1)^s * 2^(e - bias) * 1.m, or
 * 2^(1 - bias) * 0.m when the exponent field is 0. */
static inline double ref_f8_value(uint8_t b, ref_f8_fmt_t f)
{
    int bias = (1 << (f.ebits - 1)) - 1;
    int e = (b >> f.mant) & ((1 << f.ebits) - 1), m = b & ((1 << f.mant) - 1);
    double v;
    if (ref_f8_is_nan(b, f))
        return (b & 0x80) ? -NAN : NAN;
    if (ref_f8_is_inf(b, f))
        v = INFINITY;
    else if (e == 0)
        v = ldexp(m, 1 - bias - f.mant);
    else
        v = ldexp((1 << f.mant) + m, e - bias - f.mant);
    return (b & 0x80) ? -v : v;
}

/* The largest finite magnitude's pattern: below the NaN in e4m3, below
 * infinity in e5m2. */
static inline uint8_t ref_f8_max_finite(ref_f8_fmt_t f)
{
    return f.fn ? 0x7e : (uint8_t)((((1 << f.ebits) - 1) << f.mant) - 1);
}

/* x rounded to nearest even, saturating; a NaN gives the format's quiet
 * NaN with x's sign (0x7f / 0x7e). */
static inline uint8_t ref_f8_round(double x, ref_f8_fmt_t f)
{
    uint8_t sign = signbit(x) ? 0x80 : 0, top = ref_f8_max_finite(f);
    double a = fabs(x);
    if (isnan(x))
        return sign | (f.fn ? 0x7f : 0x7e);
    if (a >= ref_f8_value(top, f))
        return sign | top;
    uint8_t lo = 0; /* magnitudes grow with the pattern */
    while (ref_f8_value((uint8_t)(lo + 1), f) <= a)
        lo++;
    double dlo = a - ref_f8_value(lo, f);
    double dhi = ref_f8_value((uint8_t)(lo + 1), f) - a;
    if (dlo != dhi)
        return sign | (dlo < dhi ? lo : (uint8_t)(lo + 1));
    return sign | ((lo & 1) ? (uint8_t)(lo + 1) : lo);
}

#endif /* WF_TEST_FP8_REF_H */
