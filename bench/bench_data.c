/*
 * bench_data.c - element types, element access and the input patterns of
 * weft-bench, shared by every collective's fill and check.
 *
 * Inputs are small integers so every result is exact in every dtype
 * (float16 and bfloat16 included) whatever order the library reduces in;
 * the expected value is computed here in double arithmetic from the same
 * pattern, then wrapped to the element type.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

static const struct {
    const char *name; /* nccl-tests spelling */
    size_t size;
} dtypes[WEFT_DTYPE_COUNT] = {
    [WEFT_INT8] = {"int8", 1},      [WEFT_UINT8] = {"uint8", 1},
    [WEFT_INT16] = {"int16", 2},    [WEFT_UINT16] = {"uint16", 2},
    [WEFT_INT32] = {"int32", 4},    [WEFT_UINT32] = {"uint32", 4},
    [WEFT_INT64] = {"int64", 8},    [WEFT_UINT64] = {"uint64", 8},
    [WEFT_FLOAT16] = {"half", 2},   [WEFT_BFLOAT16] = {"bfloat16", 2},
    [WEFT_FLOAT32] = {"float", 4},  [WEFT_FLOAT64] = {"double", 8},
    [WEFT_FLOAT8_E4M3] = {"f8e4m3", 1}, [WEFT_FLOAT8_E5M2] = {"f8e5m2", 1},
};
static const char *const ops[WEFT_OP_COUNT] = {
    "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor"};

size_t bench_dtype_size(weft_dtype_t d) { return dtypes[d].size; }
const char *bench_dtype_name(weft_dtype_t d) { return dtypes[d].name; }
const char *bench_op_name(weft_op_t op) { return ops[op]; }
bool bench_dtype_is_float(weft_dtype_t d)
{
    return d == WEFT_FLOAT16 || d == WEFT_BFLOAT16 || d == WEFT_FLOAT32 ||
           d == WEFT_FLOAT64 || bench_dtype_is_fp8(d);
}

bool bench_dtype_is_fp8(weft_dtype_t d)
{
    return d == WEFT_FLOAT8_E4M3 || d == WEFT_FLOAT8_E5M2;
}

bool bench_parse_dtype(const char *s, weft_dtype_t *d)
{
    static const struct {
        const char *alias;
        weft_dtype_t d;
    } aliases[] = {{"float32", WEFT_FLOAT32}, {"fp32", WEFT_FLOAT32},
                   {"float16", WEFT_FLOAT16}, {"fp16", WEFT_FLOAT16},
                   {"bf16", WEFT_BFLOAT16},   {"float64", WEFT_FLOAT64},
                   {"fp64", WEFT_FLOAT64},    {"int", WEFT_INT32},
                   {"char", WEFT_INT8},
                   {"float8_e4m3", WEFT_FLOAT8_E4M3},
                   {"float8_e5m2", WEFT_FLOAT8_E5M2}};
    for (int i = 0; i < WEFT_DTYPE_COUNT; i++)
        if (strcmp(s, dtypes[i].name) == 0)
            return *d = (weft_dtype_t)i, true;
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return *d = aliases[i].d, true;
    return false;
}

bool bench_parse_op(const char *s, weft_op_t *op)
{
    for (int i = 0; i < WEFT_OP_COUNT; i++)
        if (strcmp(s, ops[i]) == 0)
            return *op = (weft_op_t)i, true;
    return false;
}

/* Exact encodings of small integers (|v| < 2048) as float16. */
static uint16_t small_to_half(double v)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int e;
    double m = frexp(fabs(v), &e); /* v = m * 2^e, m in [0.5, 1) */
    return sign | (uint16_t)((e + 14) << 10) |
           (uint16_t)((m * 2 - 1) * 1024);
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    if (e == 31)
        v = m ? NAN : INFINITY;
    return h & 0x8000 ? -v : v;
}

/* The float8 formats from their definition (mant mantissa bits, exponent
 * bias): v rounded to nearest even and saturated at `top`, the largest
 * finite pattern, as the library rounds; finite values only, which is all
 * the patterns hold.  (weft-bench sees the public API alone, so not the
 * library's fp8.h.) */
static uint8_t to_fp8(double v, int mant, int bias, uint8_t top)
{
    uint8_t sign = signbit(v) ? 0x80 : 0;
    int e;
    double a = fabs(v);
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): a's exponent is e - 1 */
    int exp = a == 0 || e - 1 < 1 - bias ? 1 - bias : e - 1;
    /* The significand in units of the last place, rounded by nearbyint
     * (ties to even); a carry into the next binade lands in the exponent. */
    double q = nearbyint(ldexp(a, mant - exp));
    unsigned code = a == 0 || e - 1 < 1 - bias
                        ? (unsigned)q
                        : ((unsigned)(exp + bias) << mant) +
                              (unsigned)q - (1u << mant);
    return sign | (uint8_t)(code > top ? top : code);
}

static double from_fp8(uint8_t b, int mant, int bias)
{
    int e = (b & 0x7f) >> mant, m = b & ((1 << mant) - 1);
    double v = e == 0 ? ldexp(m, 1 - bias - mant)
                      : ldexp((1 << mant) + m, e - bias - mant);
    return b & 0x80 ? -v : v;
}

void bench_put(void *buf, weft_dtype_t d, size_t i, double v)
{
    float f = (float)v;
    uint32_t bits;
    switch (d) {
    case WEFT_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case WEFT_INT16: ((int16_t *)buf)[i] = (int16_t)(int64_t)v; break;
    case WEFT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)(int64_t)v; break;
    case WEFT_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
    case WEFT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
    case WEFT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case WEFT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case WEFT_FLOAT16: ((uint16_t *)buf)[i] = small_to_half(v); break;
    case WEFT_BFLOAT16:
        memcpy(&bits, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
        break;
    case WEFT_FLOAT32: ((float *)buf)[i] = f; break;
    case WEFT_FLOAT8_E4M3: ((uint8_t *)buf)[i] = to_fp8(f, 3, 7, 0x7e); break;
    case WEFT_FLOAT8_E5M2: ((uint8_t *)buf)[i] = to_fp8(f, 2, 15, 0x7b); break;
    default: ((double *)buf)[i] = v; break;
    }
}

double bench_get(const void *buf, weft_dtype_t d, size_t i)
{
    uint32_t bits;
    float f;
    switch (d) {
    case WEFT_INT8: return ((const int8_t *)buf)[i];
    case WEFT_UINT8: return ((const uint8_t *)buf)[i];
    case WEFT_INT16: return ((const int16_t *)buf)[i];
    case WEFT_UINT16: return ((const uint16_t *)buf)[i];
    case WEFT_INT32: return ((const int32_t *)buf)[i];
    case WEFT_UINT32: return ((const uint32_t *)buf)[i];
    case WEFT_INT64: return (double)((const int64_t *)buf)[i];
    case WEFT_UINT64: return (double)((const uint64_t *)buf)[i];
    case WEFT_FLOAT16: return half_to_double(((const uint16_t *)buf)[i]);
    case WEFT_BFLOAT16:
        bits = (uint32_t)((const uint16_t *)buf)[i] << 16;
        memcpy(&f, &bits, 4);
        return f;
    case WEFT_FLOAT32: return ((const float *)buf)[i];
    case WEFT_FLOAT8_E4M3: return from_fp8(((const uint8_t *)buf)[i], 3, 7);
    case WEFT_FLOAT8_E5M2: return from_fp8(((const uint8_t *)buf)[i], 2, 15);
    default: return ((const double *)buf)[i];
    }
}

/* The input of `rank` at element i for op `op`; WEFT_OP_COUNT stands for
 * "no reduction" (copies: broadcast, allgather, alltoall, sendrecv), where
 * the value mixes rank and index so a block that lands in the wrong place
 * or from the wrong rank shows, and stays below 61 so it is exact in
 * every dtype. */
double bench_pattern(int rank, size_t i, weft_op_t op, weft_dtype_t d)
{
    bool is_unsigned = d == WEFT_UINT8 || d == WEFT_UINT16 ||
                       d == WEFT_UINT32 || d == WEFT_UINT64;
    size_t bit = (i + (size_t)rank) % 7;
    /* fp8 holds few integers exactly (up to 16 in e4m3, 8 in e5m2): sum and
     * avg get a 1 on at most one rank and 0 on the others, so that every
     * partial sum is 0 or 1 on any number of ranks. */
    if (bench_dtype_is_fp8(d) && (op == WEFT_SUM || op == WEFT_AVG))
        return rank < 7 && (i + (size_t)rank) % 7 == 0 ? 1 : 0;
    switch (op) {
    case WEFT_PROD: return (i + (size_t)rank) % 5 == 0 ? 2 : 1;
    /* The bitwise and logical ops (integers only): all ones but one bit,
     * one bit, mixed signs, mostly true, mostly false. */
    case WEFT_BAND: return -1 - (double)(1 << bit);
    case WEFT_BOR: return 1 << bit;
    case WEFT_BXOR: return (double)((i * 7 + (size_t)rank * 13) % 61) - 30;
    case WEFT_LAND: return (i + (size_t)rank) % 9 == 0 ? 0 : -3;
    case WEFT_LOR: return (i + (size_t)rank) % 5 == 0 ? 3 : 0;
    case WEFT_MIN:
    case WEFT_MAX:
        return (double)(((size_t)rank * 7 + i * 3) % 11) -
               (is_unsigned ? 0 : 5);
    case WEFT_AVG: return (double)(i % 4); /* same on all ranks: exact */
    case WEFT_OP_COUNT: return (double)((i * 7 + (size_t)rank * 13) % 61);
    default: return (double)((i + (size_t)rank) % 4);
    }
}

/* Wraps an exact integer result to the element type, as the library does. */
double bench_wrap(double v, weft_dtype_t d)
{
    char tmp[8];
    bench_put(tmp, d, 0, v);
    return bench_get(tmp, d, 0);
}

/* The bitwise or logical reduction of element i over all ranks, on the
 * int64 two's complement (whose low bits are the narrow type's); one
 * rank's input comes back unchanged. */
static int64_t bench_bits_expect(const bench_ctx_t *c, size_t i)
{
    weft_op_t op = c->o->op;
    int64_t acc = (int64_t)bench_pattern(0, i, op, c->o->dtype);
    for (int r = 1; r < c->size; r++) {
        int64_t v = (int64_t)bench_pattern(r, i, op, c->o->dtype);
        acc = op == WEFT_BAND   ? acc & v
              : op == WEFT_BOR  ? acc | v
              : op == WEFT_BXOR ? acc ^ v
              : op == WEFT_LAND ? (acc && v)
                                : (acc || v);
    }
    return acc;
}

/* The reduction of element i over all ranks with the run's op. */
double bench_reduce_expect(const bench_ctx_t *c, size_t i)
{
    weft_op_t op = c->o->op;
    weft_dtype_t d = c->o->dtype;
    double acc = bench_pattern(0, i, op, d);
    if (op >= WEFT_BAND) /* the patterns are small integers: exact */
        return bench_wrap((double)bench_bits_expect(c, i), d);
    for (int r = 1; r < c->size; r++) {
        double v = bench_pattern(r, i, op, d);
        acc = op == WEFT_PROD  ? acc * v
              : op == WEFT_MIN ? fmin(acc, v)
              : op == WEFT_MAX ? fmax(acc, v)
                               : acc + v;
    }
    if (op == WEFT_AVG)
        acc /= c->size;
    return bench_wrap(acc, d);
}

/* buf[k] = pattern of `rank` at element first + k. */
void bench_fill_pattern(const bench_ctx_t *c, void *buf, size_t count,
                        int rank, size_t first, weft_op_t op)
{
    for (size_t k = 0; k < count; k++)
        bench_put(buf, c->o->dtype, k,
                  bench_pattern(rank, first + k, op, c->o->dtype));
}

/* How many buf[k] differ from the pattern of `rank` at first + k. */
size_t bench_count_wrong(const bench_ctx_t *c, const void *buf, size_t count,
                         int rank, size_t first, weft_op_t op)
{
    weft_dtype_t d = c->o->dtype;
    size_t wrong = 0;
    for (size_t k = 0; k < count; k++)
        if (bench_get(buf, d, k) !=
            bench_wrap(bench_pattern(rank, first + k, op, d), d))
            wrong++;
    return wrong;
}
