/*
 * test_reduce_half.c - float16 and bfloat16 conversions (src/reduce/half.h)
 * against the scalar references in reduce_ref.h: every 16-bit pattern both
 * ways, and rounding from float32 on edge cases and random values.  The
 * exhaustive tests also push every pattern through the vectorized sum
 * kernel, which inlines the same conversions into SIMD code.
 */
#include <math.h>
#include <string.h>

#include "reduce/half.h"
#include "reduce/reduce.h"
#include "reduce/reduce_x86.h"
#include "reduce_ref.h"
#include "test.h"

/* Checks a NaN conversion: still NaN, quiet, same sign. */
static void check_nan16(uint16_t in, uint16_t out, uint16_t quiet, bool bf)
{
    bool nan = bf ? bf16_is_nan(out) : f16_is_nan(out);
    if (!nan || !(out & quiet) || (out & 0x8000) != (in & 0x8000))
        wf_test_fail(__FILE__, __LINE__, "NaN 0x%04x came back as 0x%04x",
                     in, out);
}

/* Every 16-bit pattern through a vectorized sum kernel, which inlines
 * both conversions into SIMD code: x + -0 is x, and a NaN comes out as the
 * canonical quiet NaN (reduce.h: 0x7e00, 0x7fc0), whatever went in. */
static void check_kernel_roundtrip(weft_dtype_t dt)
{
    static uint16_t all[65536], out[65536], negzero[65536];
    bool bf = dt == WEFT_BFLOAT16;

    for (uint32_t i = 0; i < 65536; i++) {
        all[i] = (uint16_t)i;
        negzero[i] = 0x8000;
    }
    wf_reduce(out, all, negzero, 65536, dt, WEFT_SUM);
    for (uint32_t i = 0; i < 65536; i++) {
        if (bf ? bf16_is_nan(all[i]) : f16_is_nan(all[i]))
            ASSERT_EQ(out[i], bf ? 0x7fc0 : 0x7e00);
        else
            ASSERT_EQ(out[i], all[i]);
    }
}

WF_TEST(reduce_f16_exhaustive, 60)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = wf_f16_to_f32(h);
        uint16_t back = wf_f32_to_f16(f);
        if (f16_is_nan(h)) {
            ASSERT_TRUE(isnan(f) && (fbits(f) & 0x400000));
            ASSERT_EQ(fbits(f) >> 31, h >> 15);
            check_nan16(h, back, 0x200, false);
            if (h & 0x200) /* a quiet NaN keeps its payload */
                ASSERT_EQ(back, h);
        } else {
            if (fbits(f) != fbits(ref_f16_to_f32(h)))
                wf_test_fail(__FILE__, __LINE__, "0x%04x: got %a want %a", h,
                             (double)f, (double)ref_f16_to_f32(h));
            ASSERT_EQ(back, h);
        }
    }
    check_kernel_roundtrip(WEFT_FLOAT16);
}

WF_TEST(reduce_bf16_exhaustive, 60)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = wf_bf16_to_f32(h);
        uint16_t back = wf_f32_to_bf16(f);
        if (bf16_is_nan(h)) {
            ASSERT_TRUE(isnan(f) && (fbits(f) & 0x400000));
            check_nan16(h, back, 0x40, true);
            if (h & 0x40)
                ASSERT_EQ(back, h);
        } else {
            ASSERT_EQ(fbits(f), (uint32_t)h << 16);
            if ((h & 0x7f80) != 0x7f80)
                ASSERT_TRUE((double)f == ref_bf16_value(h));
            ASSERT_EQ(back, h);
        }
    }
    check_kernel_roundtrip(WEFT_BFLOAT16);
}

/* Ties, overflow thresholds, subnormals of both formats, NaNs whose
 * payload sits only in the bits narrowing drops. */
static const uint32_t edge_bits[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
    0xffc00000, 0x7f800001, 0xff800001, 0x7fbfffff, 0x7f7fffff,
    0xff7fffff, 0x7f7f7fff, 0x7f7f8000, 0xff7f8000, 0x7f7e8000,
    0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0x00008000,
    0x00018000, 0x00008001, 0x00000001, 0x80000001, 0x007fffff,
    0x00800000, 0x477fe000, 0x477fefff, 0x477ff000, 0xc77ff000,
    0x47800000, 0x38800000, 0x387fe000, 0x387ff000, 0x33800000,
    0x33000000, 0x33000001, 0xb3000000, 0x33c00000, 0x32ffffff,
    0x3f801000, 0x3f803000, 0x3f801001, 0x3f800fff, 0x45000800};

static void check_narrow(float f)
{
    uint16_t h = wf_f32_to_f16(f), b = wf_f32_to_bf16(f);
    if (isnan(f)) {
        uint16_t hi = (uint16_t)(fbits(f) >> 16);
        check_nan16(hi, h, 0x200, false);
        check_nan16(hi, b, 0x40, true);
        return;
    }
    if (HAVE_FLOAT16 && ref_f32_to_f16(f) != ref_h16_round(f, F16_FMT))
        wf_test_fail(__FILE__, __LINE__, "references disagree on %a",
                     (double)f);
    if (h != ref_f32_to_f16(f))
        wf_test_fail(__FILE__, __LINE__, "f16(%a 0x%08x) = 0x%04x, "
                     "want 0x%04x",
                     (double)f, fbits(f), h, ref_f32_to_f16(f));
    if (b != ref_f32_to_bf16(f))
        wf_test_fail(__FILE__, __LINE__, "bf16(%a 0x%08x) = 0x%04x, "
                     "want 0x%04x",
                     (double)f, fbits(f), b, ref_f32_to_bf16(f));
}

static void check_narrow_sweep(int count)
{
    for (size_t i = 0; i < NELEM(edge_bits); i++)
        check_narrow(bits_f(edge_bits[i]));
    for (int i = 0; i < count; i++) {
        uint64_t r = rnd();
        check_narrow(bits_f((uint32_t)r));
        /* Within float16's range: exponents from 2^-26 to 2^16. */
        uint32_t e = (uint32_t)(127 - 26 + (r >> 32) % 43);
        check_narrow(bits_f((uint32_t)(r & 0x807fffffu) | e << 23));
    }
}

WF_TEST(reduce_narrow_rounding, 120) { check_narrow_sweep(1 << 19); }

/*
 * Flush-to-zero and denormals-are-zero, which some applications turn on
 * for speed, must not change a conversion: the float arithmetic inside
 * them never produces a float subnormal, and the float subnormals it may
 * read all round to a float16 zero anyway.  (bfloat16 arithmetic does
 * flush under these modes, since bfloat16 subnormals are float32
 * subnormals, just as float32 arithmetic does; only its conversions,
 * pure integer code, are checked here.)
 */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

/* Volatile loads keep the compiler from computing these before the
 * floating-point mode changes. */
static void narrow_all(const volatile uint32_t *in, uint16_t *h, uint16_t *b,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h[i] = wf_f32_to_f16(bits_f(in[i]));
        b[i] = wf_f32_to_bf16(bits_f(in[i]));
    }
}

WF_TEST(reduce_half_ftz_daz, 60)
{
    enum { N = 1 << 16 };
    static uint32_t in[N];
    static uint16_t h0[N], b0[N], h1[N], b1[N];
    size_t n = 0;

    for (; n < NELEM(edge_bits); n++)
        in[n] = edge_bits[n];
    while (n + 1 < N) {
        uint64_t r = rnd();
        /* Half of them near float16's subnormals, 2^-30 to 2^-10. */
        uint32_t e = (uint32_t)(127 - 30 + (r >> 32) % 21);
        in[n++] = (uint32_t)r;
        in[n++] = ((uint32_t)r & 0x807fffffu) | e << 23;
    }
    narrow_all(in, h0, b0, N);
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ (bit 15), DAZ (bit 6) */
    narrow_all(in, h1, b1, N);
    check_kernel_roundtrip(WEFT_FLOAT16);
    _mm_setcsr(csr);
    for (size_t i = 0; i < N; i++) {
        if (h0[i] != h1[i] || b0[i] != b1[i])
            wf_test_fail(__FILE__, __LINE__, "0x%08x: 0x%04x/0x%04x under "
                         "FTZ/DAZ, 0x%04x/0x%04x without", in[i], h1[i],
                         b1[i], h0[i], b0[i]);
    }
}
#endif

/*
 * The CPU-specific kernels (reduce_x86.c) against the portable ones, bit for
 * bit: every float16/bfloat16 value as one operand against edge values
 * (zeros, subnormals, the largest finite, infinities, NaNs, ties) and
 * random ones as the other, at an odd offset and length so the vector
 * loop's tail runs too, and in place.  NaNs included: both paths give the
 * canonical NaN.
 */

static void check_fast_kernel(weft_dtype_t dt, weft_op_t op,
                              wf_x86_tier_t tier)
{
    enum { N = 1 << 16, OFF = 1, LEN = N - 3 };
    static const uint16_t edge16[] = {
        0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
        0x3c01, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7c01, 0x7e00, 0xfe01,
        0x0200, 0x3555, 0x5bff, 0x7800, 0x0002, 0x1000, 0x2001, 0xc000};
    static const uint16_t edgeb[] = {
        0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80,
        0x3f81, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7f81, 0x7fc0, 0xffc1,
        0x0040, 0x3eab, 0x4b7f, 0x7f00, 0x0002, 0x1000, 0x2001, 0xc000};
    const uint16_t *edge = dt == WEFT_FLOAT16 ? edge16 : edgeb;
    static uint16_t x[N + 1], y[N + 1], fast[N + 1], slow[N + 1];
    wf_reduce_fn f = wf_reduce_x86_kernel(dt, op, tier);
    wf_reduce_fn p = wf_reduce_get_portable(dt, op);
    ASSERT_TRUE(f != NULL && f != p);
    for (int round = 0; round < 48; round++) {
        for (int i = 0; i < N; i++) {
            x[OFF + i] = (uint16_t)i;
            y[OFF + i] = round < 24 ? edge[round] : (uint16_t)rnd();
        }
        p(slow + OFF, x + OFF, y + OFF, LEN);
        f(fast + OFF, x + OFF, y + OFF, LEN);
        f(y + OFF, x + OFF, y + OFF, LEN); /* in place, into b */
        for (int i = OFF; i < OFF + LEN; i++) {
            if (fast[i] != slow[i] || y[i] != slow[i])
                wf_test_fail(__FILE__, __LINE__, "%s %s of 0x%04x: fast "
                             "0x%04x, in place 0x%04x, portable 0x%04x",
                             wf_dtype_name(dt), wf_op_name(op), x[i],
                             fast[i], y[i], slow[i]);
        }
    }
}

/* Every tier of kernels this CPU runs; the widest is what wf_reduce_get
 * hands out. */
static void check_fast_tier(wf_x86_tier_t tier, const char *what)
{
    if (!wf_reduce_x86_kernel(WEFT_FLOAT16, WEFT_SUM, tier))
        WF_SKIP("this CPU does not run the %s kernels", what);
    check_fast_kernel(WEFT_FLOAT16, WEFT_SUM, tier);
    check_fast_kernel(WEFT_FLOAT16, WEFT_PROD, tier);
    check_fast_kernel(WEFT_BFLOAT16, WEFT_SUM, tier);
    check_fast_kernel(WEFT_BFLOAT16, WEFT_PROD, tier);
}

WF_TEST(reduce_half_fast_kernels_match_portable, 60)
{
    check_fast_tier(WF_X86_AVX2, "AVX2/F16C");
}

WF_TEST(reduce_half_avx512_kernels_match_portable, 60)
{
    check_fast_tier(WF_X86_AVX512, "AVX-512F");
}

/* A NaN result does not depend on operand order or on which NaN went in:
 * recursive doubling adds (a, b) on one rank and (b, a) on its partner,
 * and GPUs return their own default NaN; every float type gives its
 * canonical quiet NaN, for NaN inputs and for inf * 0 alike. */
WF_TEST(reduce_nan_results_are_canonical, 10)
{
    static const struct {
        weft_dtype_t dt;
        uint64_t nan1, nan2, inf, canon;
    } cases[] = {
        {WEFT_FLOAT16, 0xfe01, 0x7d23, 0x7c00, 0x7e00},
        {WEFT_BFLOAT16, 0xffc1, 0x7f93, 0x7f80, 0x7fc0},
        {WEFT_FLOAT32, 0xffc00001u, 0x7f812345u, 0x7f800000u, 0x7fc00000u},
        {WEFT_FLOAT64, 0xfff8000000000001ull, 0x7ff0000000012345ull,
         0x7ff0000000000000ull, 0x7ff8000000000000ull},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t es = wf_dtype_size(cases[c].dt), n = 37; /* vector + tail */
        uint8_t a[37 * 8], b[37 * 8], ab[37 * 8], ba[37 * 8];
        for (size_t i = 0; i < n; i++) {
            uint64_t x = i % 3 == 0 ? cases[c].nan1 : cases[c].inf;
            uint64_t y = i % 3 == 0 ? cases[c].nan2 : i % 3 == 1 ? 0 : cases[c].nan1;
            memcpy(a + i * es, &x, es); /* little endian: the low bytes */
            memcpy(b + i * es, &y, es);
        }
        for (int op = WEFT_SUM; op <= WEFT_PROD; op++) {
            wf_reduce(ab, a, b, n, cases[c].dt, (weft_op_t)op);
            wf_reduce(ba, b, a, n, cases[c].dt, (weft_op_t)op);
            for (size_t i = 0; i < n; i++) {
                uint64_t r1 = 0, r2 = 0;
                memcpy(&r1, ab + i * es, es);
                memcpy(&r2, ba + i * es, es);
                bool nan_result = i % 3 != 1 || op == WEFT_PROD;
                if (nan_result && (r1 != cases[c].canon || r2 != r1))
                    wf_test_fail(__FILE__, __LINE__, "%s %s element %zu: "
                                 "0x%llx and 0x%llx, want 0x%llx",
                                 wf_dtype_name(cases[c].dt),
                                 wf_op_name((weft_op_t)op), i,
                                 (unsigned long long)r1,
                                 (unsigned long long)r2,
                                 (unsigned long long)cases[c].canon);
            }
        }
    }
}
