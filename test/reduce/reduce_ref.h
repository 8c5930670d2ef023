/*
 * reduce_ref.h - scalar references shared by the reduction tests
 * (test_reduce.c, test_reduce_half.c): the float16 and bfloat16 conversions
 * computed without the implementation's bit tricks.
 *
 * float16 goes through gcc's _Float16 (libgcc's software conversions).
 * bfloat16, and float16 where the compiler lacks _Float16, are decoded with
 * ldexp and rounded by finding the two neighbouring representable values
 * and taking the nearer in double arithmetic, the even one on a tie.
 */
#ifndef WF_TEST_REDUCE_REF_H
#define WF_TEST_REDUCE_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* xorshift64*: deterministic, so a failure reproduces. */
static inline uint64_t rnd(void)
{
    static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* ---- references -------------------------------------------------------- */

static inline uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* A 16-bit float format: mantissa and exponent widths. */
#define F16_FMT 10, 5
#define BF16_FMT 7, 8

/* Value of a non-NaN 16-bit float from its fields.  The infinity pattern
 * counts as 2^(emax+1), the value rounding compares against at the top. */
static inline double ref_h16_value(uint16_t h, int mant, int ebits)
{
    int bias = (1 << (ebits - 1)) - 1;
    int e = (h >> mant) & ((1 << ebits) - 1), m = h & ((1 << mant) - 1);
    double v = e == 0 ? ldexp(m, 1 - bias - mant)
                      : ldexp((1 << mant) + m, e - bias - mant);
    return (h & 0x8000) ? -v : v;
}

/* Round a non-NaN float: binary-search the largest magnitude pattern not
 * above |f| (values grow with the bit pattern), then take the nearer of it
 * and the next pattern, the even one on a tie. */
static inline uint16_t ref_h16_round(float f, int mant, int ebits)
{
    uint16_t inf = (uint16_t)(((1 << ebits) - 1) << mant), lo = 0, top = inf;
    uint16_t sign = (fbits(f) >> 31) ? 0x8000 : 0;
    double x = fabs((double)f);

    while (lo < top) { /* invariant: value(lo) <= x */
        uint16_t mid = (uint16_t)((lo + top + 1) / 2);
        if (ref_h16_value(mid, mant, ebits) <= x)
            lo = mid;
        else
            top = (uint16_t)(mid - 1);
    }
    double dlo = x - ref_h16_value(lo, mant, ebits);
    if (dlo == 0 || lo == inf)
        return sign | lo;
    double dhi = ref_h16_value((uint16_t)(lo + 1), mant, ebits) - x;
    if (dlo != dhi)
        return sign | (dlo < dhi ? lo : (uint16_t)(lo + 1));
    return sign | ((lo & 1) ? (uint16_t)(lo + 1) : lo);
}

static inline double ref_bf16_value(uint16_t h)
{
    return ref_h16_value(h, BF16_FMT);
}

static inline uint16_t ref_f32_to_bf16(float f)
{
    return ref_h16_round(f, BF16_FMT);
}

/*
 * float16 uses gcc's _Float16 (software conversions in libgcc) where the
 * compiler has it; clang before 15 does not on x86-64, and then the
 * neighbour search above stands in.  reduce_narrow_rounding checks that
 * the two agree where both exist.
 */
#ifdef __FLT16_MANT_DIG__
#define HAVE_FLOAT16 1
static inline float ref_f16_to_f32(uint16_t h)
{
    _Float16 v;
    memcpy(&v, &h, sizeof(v));
    return (float)v;
}

static inline uint16_t ref_f32_to_f16(float f)
{
    _Float16 v = (_Float16)f;
    uint16_t h;
    memcpy(&h, &v, sizeof(h));
    return h;
}
#else
#define HAVE_FLOAT16 0
static inline float ref_f16_to_f32(uint16_t h)
{
    if ((h & 0x7c00) == 0x7c00)
        return (h & 0x3ff) ? NAN : (h & 0x8000) ? -INFINITY : INFINITY;
    return (float)ref_h16_value(h, F16_FMT);
}

static inline uint16_t ref_f32_to_f16(float f)
{
    return isnan(f) ? 0x7e00 : ref_h16_round(f, F16_FMT);
}
#endif

static inline bool f16_is_nan(uint16_t h) { return (h & 0x7fff) > 0x7c00; }
static inline bool bf16_is_nan(uint16_t h) { return (h & 0x7fff) > 0x7f80; }

#endif /* WF_TEST_REDUCE_REF_H */
