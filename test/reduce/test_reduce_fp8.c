/*
 * test_reduce_fp8.c - float8_e4m3 and float8_e5m2 (src/reduce/fp8.h and
 * their reduction kernels) against fp8_ref.h, computed from the formats'
 * definitions: every pattern widened, every pattern narrowed back, ties to
 * even between every pair of neighbours, saturation, NaN, random floats;
 * and every op on every pair of patterns against the double result
 * rounded by the reference.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fp8_ref.h"
#include "reduce/fp8.h"
#include "reduce/reduce.h"
#include "reduce_ref.h"
#include "test.h"

typedef struct {
    weft_dtype_t dtype;
    ref_f8_fmt_t ref;
    float (*widen)(uint8_t);
    uint8_t (*narrow)(float);
    uint8_t qnan;
} f8_case_t;

static float e4m3_widen(uint8_t b) { return wf_e4m3_to_f32(b); }
static uint8_t e4m3_narrow(float f) { return wf_f32_to_e4m3(f); }
static float e5m2_widen(uint8_t b) { return wf_e5m2_to_f32(b); }
static uint8_t e5m2_narrow(float f) { return wf_f32_to_e5m2(f); }

static const f8_case_t E4M3 = {WEFT_FLOAT8_E4M3, {3, 4, true}, e4m3_widen,
                               e4m3_narrow, 0x7f};
static const f8_case_t E5M2 = {WEFT_FLOAT8_E5M2, {2, 5, false}, e5m2_widen,
                               e5m2_narrow, 0x7e};

/* Narrowing x must give the reference's pattern; NaNs compare as NaN with
 * the same sign. */
static void check_narrow(const f8_case_t *c, float x)
{
    uint8_t got = c->narrow(x), want = ref_f8_round((double)x, c->ref);
    if (isnan(x) ? !ref_f8_is_nan(got, c->ref) || (got & 0x80) != (want & 0x80)
                 : got != want)
        wf_test_fail(__FILE__, __LINE__, "%s: %a (0x%08x) narrowed to 0x%02x, "
                     "want 0x%02x", wf_dtype_name(c->dtype), (double)x,
                     fbits(x), got, want);
}

static void check_patterns(const f8_case_t *c)
{
    for (int i = 0; i < 256; i++) {
        uint8_t b = (uint8_t)i;
        float f = c->widen(b);
        double want = ref_f8_value(b, c->ref);
        if (ref_f8_is_nan(b, c->ref)) {
            ASSERT_TRUE(isnan(f) && (fbits(f) >> 31) == (uint32_t)(b >> 7));
            ASSERT_TRUE(ref_f8_is_nan(c->narrow(f), c->ref));
            ASSERT_EQ(c->narrow(f) & 0x80, b & 0x80);
            continue;
        }
        /* Widening is exact, -0 included. */
        if ((double)f != want || !signbit(f) != !signbit(want))
            wf_test_fail(__FILE__, __LINE__, "%s 0x%02x widened to %a, want "
                         "%a", wf_dtype_name(c->dtype), b, (double)f, want);
        /* Back unchanged, but an infinity saturates. */
        uint8_t back = c->narrow(f);
        ASSERT_EQ(back, ref_f8_is_inf(b, c->ref)
                            ? (b & 0x80) | ref_f8_max_finite(c->ref)
                            : b);
    }
}

/* Between each pair of neighbouring finite patterns: the midpoint goes to
 * the even one, a float either side of it to the nearer; a float past the
 * largest finite value saturates. */
static void check_rounding(const f8_case_t *c)
{
    uint8_t top = ref_f8_max_finite(c->ref);
    for (int s = 0; s < 2; s++) {
        for (uint8_t lo = 0; lo < top; lo++) {
            uint8_t sign = s ? 0x80 : 0;
            float vlo = (float)ref_f8_value(sign | lo, c->ref);
            float vhi = (float)ref_f8_value(sign | (uint8_t)(lo + 1), c->ref);
            float mid = (vlo + vhi) / 2; /* exact: few mantissa bits */
            uint8_t even = (lo & 1) ? (uint8_t)(lo + 1) : lo;
            ASSERT_EQ(c->narrow(mid), sign | even);
            ASSERT_EQ(c->narrow(nextafterf(mid, vlo)), sign | lo);
            ASSERT_EQ(c->narrow(nextafterf(mid, vhi)), sign | (lo + 1));
            check_narrow(c, mid);
        }
        float big = (float)ref_f8_value(top, c->ref), sgn = s ? -1.f : 1.f;
        uint8_t sat = (uint8_t)((s ? 0x80 : 0) | top);
        ASSERT_EQ(c->narrow(sgn * nextafterf(big, INFINITY)), sat);
        ASSERT_EQ(c->narrow(sgn * big * 1.0625f), sat);
        ASSERT_EQ(c->narrow(sgn * big * 2), sat);
        ASSERT_EQ(c->narrow(sgn * 1e30f), sat);
        ASSERT_EQ(c->narrow(sgn * INFINITY), sat);
        ASSERT_EQ(c->narrow(sgn * FLT_MAX), sat);
    }
    check_narrow(c, NAN);
    check_narrow(c, -NAN);
    check_narrow(c, bits_f(0x7f800001u)); /* a signalling payload */
    check_narrow(c, bits_f(0xffc12345u));
    check_narrow(c, bits_f(0x00000001u)); /* float subnormals: zero */
    check_narrow(c, bits_f(0x80400000u));
}

/* Random float bit patterns, and random values near the fp8 range. */
static void check_random(const f8_case_t *c)
{
    for (int i = 0; i < 200000; i++) {
        uint64_t r = rnd();
        check_narrow(c, bits_f((uint32_t)r));
        /* exponents around the format's: 2^-20 .. 2^17 */
        float near = ldexpf(1.0f + (float)(r >> 40) * 0x1p-24f,
                            (int)((r >> 32) % 38) - 20);
        check_narrow(c, (r & 1) ? -near : near);
    }
}

WF_TEST(reduce_fp8_e4m3_conversions, 60)
{
    check_patterns(&E4M3);
    check_rounding(&E4M3);
    check_random(&E4M3);
    /* The format's landmarks, from its definition. */
    ASSERT_TRUE(wf_e4m3_to_f32(0x7e) == 448.0f);
    ASSERT_TRUE(wf_e4m3_to_f32(0x08) == 0x1p-6f);
    ASSERT_TRUE(wf_e4m3_to_f32(0x01) == 0x1p-9f);
    ASSERT_TRUE(isnan(wf_e4m3_to_f32(0xff)));
    ASSERT_EQ(wf_f32_to_e4m3(464.0f), 0x7e); /* a tie with 480: saturates */
    ASSERT_EQ(wf_f32_to_e4m3(0x1p-10f), 0x00); /* half the step: even */
    ASSERT_EQ(wf_f32_to_e4m3(0x1.8p-9f), 0x02);
}

WF_TEST(reduce_fp8_e5m2_conversions, 60)
{
    check_patterns(&E5M2);
    check_rounding(&E5M2);
    check_random(&E5M2);
    ASSERT_TRUE(wf_e5m2_to_f32(0x7b) == 57344.0f);
    ASSERT_TRUE(wf_e5m2_to_f32(0x7c) == INFINITY);
    ASSERT_TRUE(wf_e5m2_to_f32(0xfc) == -INFINITY);
    ASSERT_TRUE(wf_e5m2_to_f32(0x04) == 0x1p-14f);
    ASSERT_TRUE(wf_e5m2_to_f32(0x01) == 0x1p-16f);
    ASSERT_EQ(wf_f32_to_e5m2(61440.0f), 0x7b); /* tie with 2^16: saturates */
    ASSERT_EQ(wf_f32_to_e5m2(0x1.4p0f), 0x3d); /* 1.25 */
    ASSERT_EQ(wf_f32_to_e5m2(0x1.2p0f), 0x3c); /* tie 1 / 1.25: 1 */
    ASSERT_EQ(wf_f32_to_e5m2(0x1.6p0f), 0x3e); /* tie 1.25 / 1.5: 1.5 */
}

/* The op in double: NaN when either is NaN; min/max order -0 below +0. */
static double ref_op(weft_op_t op, double x, double y)
{
    switch (op) {
    case WEFT_SUM: return x + y;
    case WEFT_PROD: return x * y;
    case WEFT_MIN:
        if (isnan(x) || isnan(y))
            return NAN;
        return x < y ? x : y < x ? y : signbit(x) ? x : y;
    default:
        if (isnan(x) || isnan(y))
            return NAN;
        return x > y ? x : y > x ? y : signbit(x) ? y : x;
    }
}

/* Every op on all 65536 pairs through the table's kernel (the in-place
 * aliasing the collectives use, dst == a): the double result rounded by
 * the reference, a NaN as the canonical quiet NaN. */
static void check_ops(const f8_case_t *c)
{
    static uint8_t a[65536], b[65536], out[65536];
    static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX,
                                    WEFT_AVG};
    for (size_t o = 0; o < NELEM(ops); o++) {
        weft_op_t op = ops[o] == WEFT_AVG ? WEFT_SUM : ops[o];
        for (uint32_t i = 0; i < 65536; i++) {
            a[i] = (uint8_t)(i >> 8);
            b[i] = (uint8_t)i;
        }
        memcpy(out, a, sizeof(out));
        wf_reduce(out, out, b, 65536, c->dtype, ops[o]);
        for (uint32_t i = 0; i < 65536; i++) {
            double r = ref_op(op, ref_f8_value(a[i], c->ref),
                              ref_f8_value(b[i], c->ref));
            uint8_t want = isnan(r) ? c->qnan : ref_f8_round(r, c->ref);
            if (out[i] != want)
                wf_test_fail(__FILE__, __LINE__, "%s %s(0x%02x, 0x%02x) = "
                             "0x%02x, want 0x%02x", wf_dtype_name(c->dtype),
                             wf_op_name(ops[o]), a[i], b[i], out[i], want);
        }
    }
    /* The average's divide: every pattern over 2, 3, 5 and 8 ranks. */
    static const int ranks[] = {2, 3, 5, 8};
    for (size_t k = 0; k < NELEM(ranks); k++) {
        int n = ranks[k];
        for (int i = 0; i < 256; i++)
            out[i] = (uint8_t)i;
        wf_reduce_avg_finish(out, 256, c->dtype, n);
        for (int i = 0; i < 256; i++) {
            double v = ref_f8_value((uint8_t)i, c->ref);
            if (isnan(v)) {
                ASSERT_TRUE(ref_f8_is_nan(out[i], c->ref));
                continue;
            }
            ASSERT_EQ(out[i], ref_f8_round(v / n, c->ref));
        }
    }
}

WF_TEST(reduce_fp8_e4m3_ops, 60) { check_ops(&E4M3); }
WF_TEST(reduce_fp8_e5m2_ops, 60) { check_ops(&E5M2); }

/* The bitwise and logical ops have no fp8 kernel, as for other floats. */
WF_TEST(reduce_fp8_no_bitwise_ops, 10)
{
    for (int op = WEFT_BAND; op <= WEFT_LOR; op++) {
        ASSERT_TRUE(!wf_op_defined(WEFT_FLOAT8_E4M3, (weft_op_t)op));
        ASSERT_TRUE(!wf_op_defined(WEFT_FLOAT8_E5M2, (weft_op_t)op));
        ASSERT_TRUE(wf_reduce_get(WEFT_FLOAT8_E5M2, (weft_op_t)op) == NULL);
    }
    ASSERT_EQ(wf_dtype_size(WEFT_FLOAT8_E4M3), 1);
    ASSERT_TRUE(strcmp(wf_dtype_name(WEFT_FLOAT8_E4M3), "float8_e4m3") == 0);
    ASSERT_TRUE(strcmp(wf_dtype_name(WEFT_FLOAT8_E5M2), "float8_e5m2") == 0);
    weft_dtype_t d;
    ASSERT_TRUE(wf_dtype_parse("f8e4m3", &d) && d == WEFT_FLOAT8_E4M3);
    ASSERT_TRUE(wf_dtype_parse("float8_e5m2", &d) && d == WEFT_FLOAT8_E5M2);
}
