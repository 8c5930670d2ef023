/*
 * test_reduce.c - the host reduction table against independent scalar
 * references, for every dtype and op including WEFT_AVG's finish.
 *
 * float16 and bfloat16 results come from the conversions in reduce_ref.h;
 * float32 results are computed in double and float64 results in
 * __float128 (both wide enough that rounding twice equals rounding once);
 * integer wrapping is taken from wider products masked down.  The kernels
 * run over odd lengths, at an unaligned start and in place, so vector
 * bodies and scalar tails are both checked, with guard bytes either side.
 */
#include <math.h>
#include <string.h>

#include "reduce/reduce.h"
#include "reduce_ref.h"
#include "test.h"

static double ref_min(double x, double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return signbit(x) ? x : y;
    return x < y ? x : y;
}

static double ref_max(double x, double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == y)
        return signbit(x) ? y : x;
    return x > y ? x : y;
}

/* One float32 op; sums and products of floats are exact or rounded once
 * when done in double, so converting back rounds exactly once more. */
static float ref_op_f32(weft_op_t op, float x, float y)
{
    switch (op) {
    case WEFT_PROD: return (float)((double)x * (double)y);
    case WEFT_MIN: return (float)ref_min(x, y);
    case WEFT_MAX: return (float)ref_max(x, y);
    default: return (float)((double)x + (double)y);
    }
}

static double ref_op_f64(weft_op_t op, double x, double y)
{
    switch (op) {
    case WEFT_PROD: return (double)((__float128)x * (__float128)y);
    case WEFT_MIN: return ref_min(x, y);
    case WEFT_MAX: return ref_max(x, y);
    default: return (double)((__float128)x + (__float128)y);
    }
}

/* The bitwise and logical ops on an integer's bits (the element's low
 * bits of a sign- or zero-extended value; the caller masks them):
 * per bit with tests and shifts, not C's operators, and the logical ones
 * as "any bit set" on each side. */
static uint64_t ref_bits(weft_op_t op, uint64_t x, uint64_t y)
{
    if (op == WEFT_LAND)
        return x != 0 ? y != 0 : 0;
    if (op == WEFT_LOR)
        return x != 0 ? 1 : y != 0;
    uint64_t r = 0;
    for (unsigned k = 0; k < 64; k++) {
        unsigned bx = (x >> k) % 2, by = (y >> k) % 2;
        unsigned bit = op == WEFT_BAND  ? bx * by
                       : op == WEFT_BOR ? (bx + by > 0)
                                        : (bx + by == 1);
        r += (uint64_t)bit << k;
    }
    return r;
}

/* Integers: wide arithmetic, then the low bits; signed min/max directly. */
static int64_t ref_op_int(weft_op_t op, int64_t x, int64_t y)
{
    switch (op) {
    case WEFT_PROD: return (int64_t)(uint64_t)((__int128)x * y);
    case WEFT_MIN: return x < y ? x : y;
    case WEFT_MAX: return x > y ? x : y;
    case WEFT_SUM:
    case WEFT_AVG: return (int64_t)(uint64_t)((__int128)x + y);
    default: return (int64_t)ref_bits(op, (uint64_t)x, (uint64_t)y);
    }
}

static uint64_t ref_op_uint(weft_op_t op, uint64_t x, uint64_t y)
{
    switch (op) {
    case WEFT_PROD: return (uint64_t)((unsigned __int128)x * y);
    case WEFT_MIN: return x < y ? x : y;
    case WEFT_MAX: return x > y ? x : y;
    case WEFT_SUM:
    case WEFT_AVG: return (uint64_t)((unsigned __int128)x + y);
    default: return ref_bits(op, x, y);
    }
}

/* Element values travel as uint64 bit patterns, zero-extended. */
static uint64_t load(weft_dtype_t dt, const void *p)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (wf_dtype_size(dt)) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static void store(weft_dtype_t dt, void *p, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (wf_dtype_size(dt)) {
    case 1: memcpy(p, &u8, 1); break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* Sign-extend a signed element's bits. */
static int64_t sext(weft_dtype_t dt, uint64_t v)
{
    unsigned shift = 64 - 8 * (unsigned)wf_dtype_size(dt);
    return (int64_t)(v << shift) >> shift;
}

static bool is_signed_int(weft_dtype_t dt)
{
    return dt == WEFT_INT8 || dt == WEFT_INT16 || dt == WEFT_INT32 ||
           dt == WEFT_INT64;
}

static bool is_float(weft_dtype_t dt)
{
    return dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32 ||
           dt == WEFT_FLOAT64 || dt == WEFT_FLOAT8_E4M3 ||
           dt == WEFT_FLOAT8_E5M2;
}

static uint64_t mask_bits(weft_dtype_t dt, uint64_t v)
{
    size_t size = wf_dtype_size(dt);
    return size == 8 ? v : v & ((1ull << (8 * size)) - 1);
}

/* The expected bits of x op y (op != AVG). */
static uint64_t ref_combine(weft_dtype_t dt, weft_op_t op, uint64_t x,
                            uint64_t y)
{
    double dx, dy;
    switch (dt) {
    case WEFT_FLOAT16:
        return ref_f32_to_f16(ref_op_f32(op, ref_f16_to_f32((uint16_t)x),
                                         ref_f16_to_f32((uint16_t)y)));
    case WEFT_BFLOAT16:
        if (bf16_is_nan((uint16_t)x) || bf16_is_nan((uint16_t)y))
            return 0x7fc0; /* compared as "some NaN" */
        dx = ref_bf16_value((uint16_t)x);
        dy = ref_bf16_value((uint16_t)y);
        /* Widening to float is exact, so the float op is the reference;
         * ref_op_f32 never returns NaN for an infinity input below. */
        {
            float r = ref_op_f32(op, (float)dx, (float)dy);
            return isnan(r) ? 0x7fc0 : ref_f32_to_bf16(r);
        }
    case WEFT_FLOAT32:
        return fbits(ref_op_f32(op, bits_f((uint32_t)x), bits_f((uint32_t)y)));
    case WEFT_FLOAT64: {
        double a, b, r;
        memcpy(&a, &x, 8);
        memcpy(&b, &y, 8);
        r = ref_op_f64(op, a, b);
        memcpy(&x, &r, 8);
        return x;
    }
    default:
        if (is_signed_int(dt))
            return mask_bits(dt, (uint64_t)ref_op_int(op, sext(dt, x),
                                                      sext(dt, y)));
        return mask_bits(dt, ref_op_uint(op, x, y));
    }
}

/* The expected bits of x / divisor for WEFT_AVG's finish. */
static uint64_t ref_avg(weft_dtype_t dt, uint64_t x, int d)
{
    float f;
    double g;
    switch (dt) {
    case WEFT_FLOAT16:
        return ref_f32_to_f16(ref_f16_to_f32((uint16_t)x) / (float)d);
    case WEFT_BFLOAT16:
        if (bf16_is_nan((uint16_t)x))
            return 0x7fc0;
        f = (float)((double)(float)ref_bf16_value((uint16_t)x) / d);
        return isnan(f) ? 0x7fc0 : ref_f32_to_bf16(f);
    case WEFT_FLOAT32:
        return fbits((float)((double)bits_f((uint32_t)x) / d));
    case WEFT_FLOAT64:
        memcpy(&g, &x, 8);
        g = (double)((__float128)g / d);
        memcpy(&x, &g, 8);
        return x;
    default:
        if (is_signed_int(dt))
            return mask_bits(dt, (uint64_t)(sext(dt, x) / d));
        return x / (uint64_t)d;
    }
}

static bool is_nan_bits(weft_dtype_t dt, uint64_t v)
{
    switch (dt) {
    case WEFT_FLOAT16: return f16_is_nan((uint16_t)v);
    case WEFT_BFLOAT16: return bf16_is_nan((uint16_t)v);
    case WEFT_FLOAT32: return (v & 0x7fffffffu) > 0x7f800000u;
    case WEFT_FLOAT64: return (v & ~(1ull << 63)) > 0x7ff0000000000000ull;
    default: return false;
    }
}

/* Equal bits (so -0 differs from +0), or NaN both. */
static bool same(weft_dtype_t dt, uint64_t got, uint64_t want)
{
    if (is_nan_bits(dt, want))
        return is_nan_bits(dt, got);
    return got == want;
}

/* ---- random elements --------------------------------------------------- */

/* Floats: a quarter random bits (NaN, inf, subnormals, wild exponents),
 * a little over half within a few binades of 1 (rounding and ties), the
 * rest special values. */
static uint64_t rnd_float(weft_dtype_t dt)
{
    static const uint32_t f32_special[] = {
        0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
        0xffc00001, 0x7f800001, 0x00000001, 0x80800000, 0x7f7fffff,
        0x3f800000, 0xbf800000, 0x477fe000, 0x38800000, 0x33800000};
    uint64_t r = rnd(), sel = r & 15;
    int mant = dt == WEFT_FLOAT64 ? 52 : dt == WEFT_FLOAT32 ? 23
             : dt == WEFT_FLOAT16 ? 10 : 7;
    int ebits = dt == WEFT_FLOAT64 ? 11 : dt == WEFT_FLOAT16 ? 5 : 8;
    uint64_t bias = (1ull << (ebits - 1)) - 1;

    if (sel < 4)
        return mask_bits(dt, r >> 8);
    if (sel < 13) {
        uint64_t e = bias - 3 + ((r >> 4) % 7), sign = (r >> 7) & 1;
        uint64_t m = (r >> 8) & ((1ull << mant) - 1);
        return (sign << (mant + ebits)) | (e << mant) | m;
    }
    float f = bits_f(f32_special[(r >> 8) % NELEM(f32_special)]);
    double d = f;
    switch (dt) {
    case WEFT_FLOAT16: return ref_f32_to_f16(f);
    case WEFT_BFLOAT16: return fbits(f) >> 16;
    case WEFT_FLOAT32: return fbits(f);
    default: memcpy(&r, &d, 8); return r;
    }
}

/* Integers: mostly full-range bits (products and sums wrap), some small
 * values (negative ones too), the extremes, zero (false to the logical
 * ops) and all ones. */
static uint64_t rnd_elem(weft_dtype_t dt)
{
    if (is_float(dt))
        return rnd_float(dt);
    uint64_t r = rnd();
    unsigned bits = 8 * (unsigned)wf_dtype_size(dt);
    switch (r & 7) {
    case 0: return mask_bits(dt, (r >> 8) % 33 - 16);
    case 1: return mask_bits(dt, 1ull << (bits - 1)); /* signed min */
    case 2: return mask_bits(dt, (1ull << (bits - 1)) - 1);
    case 3: return (r >> 8) % 2 ? 0 : mask_bits(dt, ~0ull);
    default: return mask_bits(dt, r >> 3);
    }
}


/* ---- the kernel table against the references -------------------------- */

#define MAXN 1025
enum { ALIAS_NONE, ALIAS_A, ALIAS_B, ALIAS_ALL, ALIAS_COUNT };

/* One dtype/op/length/offset/aliasing case; guard bytes on both sides of
 * the destination catch vector stores past the ends. */
static void check_case(weft_dtype_t dt, weft_op_t op, size_t n, size_t off,
                       int alias, int divisor)
{
    static uint64_t abuf[MAXN + 2], bbuf[MAXN + 2], dbuf[MAXN + 2];
    static uint64_t want[MAXN];
    size_t es = wf_dtype_size(dt);
    uint8_t *a = (uint8_t *)abuf + off * es, *b = (uint8_t *)bbuf + off * es;
    uint8_t *d = (uint8_t *)dbuf + off * es;
    const void *pa = a, *pb = b;

    for (size_t i = 0; i < n; i++) {
        uint64_t x = rnd_elem(dt), y = alias == ALIAS_ALL ? x : rnd_elem(dt);
        store(dt, a + i * es, x);
        store(dt, b + i * es, y);
        want[i] = ref_combine(dt, op == WEFT_AVG ? WEFT_SUM : op, x, y);
        if (op == WEFT_AVG)
            want[i] = ref_avg(dt, want[i], divisor);
    }
    memset(dbuf, 0xa5, sizeof(dbuf));
    if (alias != ALIAS_NONE)
        memcpy(d, alias == ALIAS_B ? b : a, n * es);
    if (alias == ALIAS_A || alias == ALIAS_ALL)
        pa = d;
    if (alias == ALIAS_B || alias == ALIAS_ALL)
        pb = d;
    wf_reduce(d, pa, pb, n, dt, op);
    if (op == WEFT_AVG)
        wf_reduce_avg_finish(d, n, dt, divisor);
    for (size_t i = 0; i < n; i++) {
        uint64_t got = load(dt, d + i * es);
        if (!same(dt, got, want[i]))
            wf_test_fail(__FILE__, __LINE__,
                         "%s %s n=%zu off=%zu alias=%d [%zu]: a=0x%llx "
                         "b=0x%llx got 0x%llx want 0x%llx",
                         wf_dtype_name(dt), wf_op_name(op), n, off, alias, i,
                         (unsigned long long)load(dt, a + i * es),
                         (unsigned long long)load(dt, b + i * es),
                         (unsigned long long)got,
                         (unsigned long long)want[i]);
    }
    for (size_t i = 0; i < es; i++) {
        ASSERT_EQ(d[n * es + i], 0xa5);
        if (off)
            ASSERT_EQ(d[-1 - (ptrdiff_t)i], 0xa5);
    }
}

static void check_dtype(weft_dtype_t dt)
{
    static const size_t lengths[] = {0, 1, 7, 1023, 1025};
    static const int divisors[] = {2, 3, 7, 300};
    int k = 0;

    for (int op = 0; op < WEFT_OP_COUNT; op++) {
        /* No kernel for bitwise and logical ops on floats. */
        if (is_float(dt) && op >= WEFT_BAND) {
            ASSERT_TRUE(!wf_op_defined(dt, (weft_op_t)op));
            ASSERT_TRUE(wf_reduce_get(dt, (weft_op_t)op) == NULL);
            continue;
        }
        ASSERT_TRUE(wf_op_defined(dt, (weft_op_t)op));
        for (size_t l = 0; l < NELEM(lengths); l++)
            for (size_t off = 0; off < 2; off++)
                for (int alias = 0; alias < ALIAS_COUNT; alias++, k++)
                    check_case(dt, (weft_op_t)op, lengths[l], off, alias,
                               divisors[k % 4]);
    }
}

#define OPS_TEST(E, name)                                                      \
    WF_TEST(reduce_ops_##name, 60) { check_dtype(WEFT_##E); }
OPS_TEST(INT8, int8)
OPS_TEST(UINT8, uint8)
OPS_TEST(INT16, int16)
OPS_TEST(UINT16, uint16)
OPS_TEST(INT32, int32)
OPS_TEST(UINT32, uint32)
OPS_TEST(INT64, int64)
OPS_TEST(UINT64, uint64)
OPS_TEST(FLOAT16, float16)
OPS_TEST(BFLOAT16, bfloat16)
OPS_TEST(FLOAT32, float32)
OPS_TEST(FLOAT64, float64)

/* ---- hand-picked cases ------------------------------------------------- */

/* x op y over 19 equal pairs (a vector body and a tail); all must agree. */
static uint64_t run1(weft_dtype_t dt, weft_op_t op, uint64_t x, uint64_t y)
{
    uint64_t a[19], b[19], d[19];
    size_t es = wf_dtype_size(dt);
    for (int i = 0; i < 19; i++) {
        store(dt, (uint8_t *)a + i * es, x);
        store(dt, (uint8_t *)b + i * es, y);
    }
    wf_reduce(d, a, b, 19, dt, op);
    uint64_t r = load(dt, d);
    for (int i = 1; i < 19; i++)
        ASSERT_EQ(load(dt, (uint8_t *)d + i * es), r);
    return r;
}

/* Wrapping, and the bitwise and logical ops' corner cases: the sign bit
 * alone is true, the logical ops give 1. */
WF_TEST(reduce_int_wrap, 10)
{
    static const struct {
        weft_dtype_t dt;
        weft_op_t op;
        int64_t x, y, want;
    } c[] = {
        {WEFT_INT8, WEFT_SUM, 127, 1, -128},
        {WEFT_INT8, WEFT_SUM, -128, -1, 127},
        {WEFT_INT8, WEFT_PROD, 16, 16, 0},
        {WEFT_INT8, WEFT_PROD, -128, -1, -128},
        {WEFT_INT8, WEFT_PROD, 100, 3, 44},
        {WEFT_INT8, WEFT_MIN, -128, 127, -128},
        {WEFT_UINT8, WEFT_SUM, 255, 1, 0},
        {WEFT_UINT8, WEFT_PROD, 255, 255, 1},
        {WEFT_UINT8, WEFT_MAX, 255, 1, 255},
        {WEFT_INT32, WEFT_SUM, INT32_MAX, 1, INT32_MIN},
        {WEFT_INT32, WEFT_PROD, 65536, 65536, 0},
        {WEFT_INT32, WEFT_PROD, INT32_MIN, -1, INT32_MIN},
        {WEFT_INT32, WEFT_PROD, 46341, 46341, -2147479015},
        {WEFT_UINT32, WEFT_SUM, UINT32_MAX, 1, 0},
        {WEFT_UINT32, WEFT_PROD, UINT32_MAX, UINT32_MAX, 1},
        {WEFT_UINT32, WEFT_MIN, UINT32_MAX, 1, 1},
        {WEFT_INT64, WEFT_SUM, INT64_MAX, 1, INT64_MIN},
        {WEFT_INT64, WEFT_PROD, INT64_MIN, -1, INT64_MIN},
        {WEFT_INT64, WEFT_PROD, INT64_MAX, 2, -2},
        {WEFT_INT64, WEFT_MAX, INT64_MIN, -1, -1},
        {WEFT_UINT64, WEFT_SUM, -1, 1, 0},
        {WEFT_UINT64, WEFT_PROD, -1, -1, 1},
        {WEFT_UINT64, WEFT_PROD, 1ll << 32, 1ll << 32, 0},
        {WEFT_UINT64, WEFT_MAX, -1, 1, -1},
        {WEFT_INT16, WEFT_SUM, INT16_MAX, 1, INT16_MIN},
        {WEFT_INT16, WEFT_PROD, INT16_MIN, -1, INT16_MIN},
        {WEFT_UINT16, WEFT_PROD, UINT16_MAX, UINT16_MAX, 1},
        {WEFT_INT16, WEFT_BXOR, -1, 0x5555, -0x5556},
        {WEFT_UINT32, WEFT_BAND, -1, 0x12345678, 0x12345678},
        {WEFT_INT64, WEFT_BOR, INT64_MIN, 1, INT64_MIN + 1},
        {WEFT_INT8, WEFT_LAND, -128, 2, 1},
        {WEFT_UINT8, WEFT_LAND, 1, 0, 0},
        {WEFT_INT8, WEFT_LOR, 0, 0, 0},
        {WEFT_UINT64, WEFT_LOR, INT64_MIN, 0, 1},
    };
    for (size_t i = 0; i < NELEM(c); i++) {
        uint64_t got = run1(c[i].dt, c[i].op, mask_bits(c[i].dt, c[i].x),
                            mask_bits(c[i].dt, c[i].y));
        if (got != mask_bits(c[i].dt, (uint64_t)c[i].want))
            wf_test_fail(__FILE__, __LINE__, "case %zu (%s %s): got 0x%llx",
                         i, wf_dtype_name(c[i].dt), wf_op_name(c[i].op),
                         (unsigned long long)got);
    }
}

/* The bits of a double in each float type (NaN: a quiet NaN). */
static uint64_t enc(weft_dtype_t dt, double v)
{
    uint64_t u;
    float f = (float)v;
    switch (dt) {
    case WEFT_FLOAT16: return ref_f32_to_f16(f);
    case WEFT_BFLOAT16: return isnan(f) ? 0x7fc0 : ref_f32_to_bf16(f);
    case WEFT_FLOAT32: return fbits(f);
    default: memcpy(&u, &v, 8); return u;
    }
}

WF_TEST(reduce_float_specials, 10)
{
    static const struct {
        weft_op_t op;
        double x, y, want;
    } c[] = {
        {WEFT_MIN, -0.0, 0.0, -0.0},      {WEFT_MIN, 0.0, -0.0, -0.0},
        {WEFT_MAX, -0.0, 0.0, 0.0},       {WEFT_MAX, 0.0, -0.0, 0.0},
        {WEFT_MIN, NAN, 1, NAN},          {WEFT_MIN, 1, NAN, NAN},
        {WEFT_MAX, NAN, 1, NAN},          {WEFT_MAX, 1, NAN, NAN},
        {WEFT_MIN, -INFINITY, NAN, NAN},  {WEFT_MAX, INFINITY, NAN, NAN},
        {WEFT_MIN, -INFINITY, 5, -INFINITY},
        {WEFT_MAX, INFINITY, 5, INFINITY}, {WEFT_MAX, -INFINITY, -5, -5},
        {WEFT_MIN, -1, 1, -1},            {WEFT_MAX, -1, 1, 1},
        {WEFT_SUM, INFINITY, -INFINITY, NAN},
        {WEFT_SUM, -0.0, -0.0, -0.0},     {WEFT_SUM, -0.0, 0.0, 0.0},
        {WEFT_SUM, NAN, 1, NAN},          {WEFT_SUM, INFINITY, 1, INFINITY},
        {WEFT_PROD, 0, INFINITY, NAN},    {WEFT_PROD, -0.0, 5, -0.0},
        {WEFT_PROD, INFINITY, -1, -INFINITY}, {WEFT_PROD, NAN, 0, NAN},
    };
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++) {
        for (size_t i = 0; i < NELEM(c); i++) {
            uint64_t got = run1(dt, c[i].op, enc(dt, c[i].x), enc(dt, c[i].y));
            if (!same(dt, got, enc(dt, c[i].want)))
                wf_test_fail(__FILE__, __LINE__, "case %zu (%s): got 0x%llx",
                             i, wf_dtype_name(dt), (unsigned long long)got);
        }
    }
    /* NaN min/max must not depend on the argument order, or recursive
     * doubling partners would end with different bits. */
    static const uint64_t nan_a[] = {0x7e01, 0x7fc1, 0x7fc00001,
                                     0x7ff8000000000001ull};
    static const uint64_t nan_b[] = {0xfd00, 0xff81, 0xff800001,
                                     0xfff0000000000001ull};
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++) {
        uint64_t na = nan_a[dt - WEFT_FLOAT16], nb = nan_b[dt - WEFT_FLOAT16];
        uint64_t one = enc(dt, 1.0);
        for (int op = WEFT_MIN; op <= WEFT_MAX; op++) {
            ASSERT_EQ(run1(dt, op, na, nb), run1(dt, op, nb, na));
            ASSERT_EQ(run1(dt, op, na, one), run1(dt, op, one, nb));
            ASSERT_TRUE(is_nan_bits(dt, run1(dt, op, one, na)));
        }
    }
    /* Rounding of sums: ties to even, and to infinity past the top. */
    /* 65504 + 16 ties to infinity; 65504 + 8 stays; 2048 + 1 ties down to
     * 2048; 2048 + 3 ties up to 2052; bfloat16 256 + 1 and 256 + 3 alike. */
    ASSERT_EQ(run1(WEFT_FLOAT16, WEFT_SUM, 0x7bff, 0x4c00), 0x7c00);
    ASSERT_EQ(run1(WEFT_FLOAT16, WEFT_SUM, 0x7bff, 0x4800), 0x7bff);
    ASSERT_EQ(run1(WEFT_FLOAT16, WEFT_SUM, 0x6800, 0x3c00), 0x6800);
    ASSERT_EQ(run1(WEFT_FLOAT16, WEFT_SUM, 0x6800, 0x4200), 0x6802);
    ASSERT_EQ(run1(WEFT_BFLOAT16, WEFT_SUM, 0x4380, 0x3f80), 0x4380);
    ASSERT_EQ(run1(WEFT_BFLOAT16, WEFT_SUM, 0x4380, 0x4040), 0x4382);
}

WF_TEST(reduce_avg_finish, 10)
{
    int8_t i8[] = {-7, 7, -128, 127, -1};
    int8_t i8_2[] = {-3, 3, -64, 63, 0};
    wf_reduce_avg_finish(i8, 5, WEFT_INT8, 2);
    ASSERT_TRUE(memcmp(i8, i8_2, sizeof(i8)) == 0);
    wf_reduce_avg_finish(i8, 5, WEFT_INT8, 300);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(i8[i], 0);
    uint8_t u8[] = {255, 1};
    wf_reduce_avg_finish(u8, 2, WEFT_UINT8, 2);
    ASSERT_EQ(u8[0], 127);
    ASSERT_EQ(u8[1], 0);
    int32_t i32[] = {-7, INT32_MIN, INT32_MAX};
    wf_reduce_avg_finish(i32, 3, WEFT_INT32, 3);
    ASSERT_EQ(i32[0], -2);
    ASSERT_EQ(i32[1], INT32_MIN / 3);
    ASSERT_EQ(i32[2], INT32_MAX / 3);
    uint32_t u32[] = {UINT32_MAX};
    wf_reduce_avg_finish(u32, 1, WEFT_UINT32, 2);
    ASSERT_EQ(u32[0], UINT32_MAX / 2);
    int64_t i64[] = {-7, INT64_MIN};
    wf_reduce_avg_finish(i64, 2, WEFT_INT64, 2);
    ASSERT_EQ(i64[0], -3);
    ASSERT_EQ(i64[1], INT64_MIN / 2);
    uint64_t u64[] = {UINT64_MAX};
    wf_reduce_avg_finish(u64, 1, WEFT_UINT64, 3);
    ASSERT_TRUE(u64[0] == UINT64_MAX / 3);

    /* Floats: one rounding of the quotient, for every float type. */
    static const double v[] = {1, -1, 2, 3, -0.0, 65504, 1e-7, INFINITY,
                               NAN, 1e30, 0.1};
    for (int dt = WEFT_FLOAT16; dt <= WEFT_FLOAT64; dt++) {
        for (size_t i = 0; i < NELEM(v); i++) {
            uint64_t buf = enc(dt, v[i]);
            wf_reduce_avg_finish(&buf, 1, dt, 3);
            ASSERT_TRUE(same(dt, mask_bits(dt, buf),
                             ref_avg(dt, enc(dt, v[i]), 3)));
        }
    }
    /* Divisors of 1 and below leave the buffer as it is. */
    int32_t keep[] = {-7, 9};
    wf_reduce_avg_finish(keep, 2, WEFT_INT32, 1);
    wf_reduce_avg_finish(keep, 2, WEFT_INT32, 0);
    wf_reduce_avg_finish(keep, 2, WEFT_INT32, -1);
    ASSERT_EQ(keep[0], -7);
    ASSERT_EQ(keep[1], 9);
}

WF_TEST(reduce_names, 10)
{
    static const char *names[] = {"int8", "uint8", "int32", "uint32",
                                  "int64", "uint64", "float16", "bfloat16",
                                  "float32", "float64", "int16", "uint16",
                                  "float8_e4m3", "float8_e5m2"};
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 2, 2, 1, 1};
    static const struct {
        const char *text;
        weft_dtype_t dt;
    } aliases[] = {
        {"char", WEFT_INT8},   {"int", WEFT_INT32},  {"half", WEFT_FLOAT16},
        {"fp16", WEFT_FLOAT16}, {"bf16", WEFT_BFLOAT16},
        {"float", WEFT_FLOAT32}, {"fp32", WEFT_FLOAT32},
        {"double", WEFT_FLOAT64}, {"fp64", WEFT_FLOAT64},
        {"FLOAT", WEFT_FLOAT32}, {"f8e4m3", WEFT_FLOAT8_E4M3},
        {"f8e5m2", WEFT_FLOAT8_E5M2},
    };
    static const char *ops[] = {"sum", "prod", "min", "max", "avg",
                                "band", "bor", "bxor", "land", "lor"};
    weft_dtype_t dt;
    weft_op_t op;

    for (int i = 0; i < WEFT_DTYPE_COUNT; i++) {
        ASSERT_TRUE(wf_dtype_valid(i));
        ASSERT_TRUE(strcmp(wf_dtype_name(i), names[i]) == 0);
        ASSERT_EQ(wf_dtype_size(i), sizes[i]);
        ASSERT_TRUE(wf_dtype_parse(names[i], &dt));
        ASSERT_EQ(dt, i);
        for (int o = 0; o < WEFT_OP_COUNT; o++)
            ASSERT_EQ(wf_reduce_get(i, o) != NULL,
                      o <= WEFT_AVG || !is_float((weft_dtype_t)i));
        ASSERT_TRUE(wf_reduce_get(i, WEFT_AVG) == wf_reduce_get(i, WEFT_SUM));
    }
    for (size_t i = 0; i < NELEM(aliases); i++) {
        ASSERT_TRUE(wf_dtype_parse(aliases[i].text, &dt));
        ASSERT_EQ(dt, aliases[i].dt);
    }
    for (int i = 0; i < WEFT_OP_COUNT; i++) {
        ASSERT_TRUE(wf_op_valid(i));
        ASSERT_TRUE(strcmp(wf_op_name(i), ops[i]) == 0);
        ASSERT_TRUE(wf_op_parse(ops[i], &op));
        ASSERT_EQ(op, i);
    }
    dt = WEFT_INT8;
    op = WEFT_SUM;
    ASSERT_TRUE(!wf_dtype_parse("float128", &dt));
    ASSERT_TRUE(!wf_dtype_parse("", &dt) && !wf_dtype_parse(NULL, &dt));
    ASSERT_TRUE(!wf_op_parse("mean", &op) && !wf_op_parse(NULL, &op));
    ASSERT_EQ(dt, WEFT_INT8); /* untouched on failure */
    ASSERT_EQ(op, WEFT_SUM);
    ASSERT_TRUE(!wf_dtype_valid(-1) && !wf_dtype_valid(WEFT_DTYPE_COUNT));
    ASSERT_TRUE(!wf_op_valid(-1) && !wf_op_valid(WEFT_OP_COUNT));
    ASSERT_EQ(wf_dtype_size(WEFT_DTYPE_COUNT), 0);
    ASSERT_TRUE(strcmp(wf_dtype_name(WEFT_DTYPE_COUNT), "invalid") == 0);
    ASSERT_TRUE(wf_reduce_get(WEFT_DTYPE_COUNT, WEFT_SUM) == NULL);
    ASSERT_TRUE(wf_reduce_get(WEFT_INT8, WEFT_OP_COUNT) == NULL);
}
