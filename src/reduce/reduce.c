/*
 * reduce.c - the host reduction table: one element-wise kernel per
 * (dtype, op), generated from X-macro lists, plus WEFT_AVG's final divide.
 *
 * The library builds at -O2, where gcc 12 vectorizes only with the
 * "very-cheap" cost model (no loops of unknown trip count).  These loops
 * are the host's reduction throughput, so this file alone asks for the
 * dynamic cost model.  The pragma comes before the includes so that the
 * inline helpers in half.h get the same options as the loops they are
 * inlined into.  docs/reductions.md says which kernels vectorize and how
 * scripts/check-vectorize.sh checks it.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "reduce/reduce.h"

#include <strings.h>

#include "reduce/fp8.h"
#include "reduce/half.h"
#include "reduce/reduce_ops.h"
#include "reduce/reduce_x86.h"

/*
 * The kernels may run with dst == a or dst == b (in-place reductions), so
 * the pointers cannot be restrict.  Without restrict gcc would version each
 * loop on a runtime overlap check, and exact aliasing fails that check, so
 * the in-place case would run the scalar copy.  ivdep states what the
 * contract guarantees: element i is read and written within iteration i
 * only, so there is no dependence between iterations.
 */
#if defined(__clang__)
#define WF_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define WF_IVDEP _Pragma("GCC ivdep")
#else
#define WF_IVDEP
#endif

/*
 * Each kernel is built for AVX-512F, AVX2 and baseline x86-64, and the
 * dynamic loader picks the widest this CPU runs (target_clones: an ifunc).
 * The same C, so the same results.  Where the buffers stay in a large
 * cache, glibc's memcpy moves 64 bytes an instruction, and the 16-byte
 * baseline loops reached 0.72-0.74 of it (docs/reductions.md).
 * Sanitizer builds keep the baseline loop alone: the loader runs an
 * ifunc's resolver while it relocates the library, before a sanitizer's
 * runtime is up, and under ThreadSanitizer every program linked with
 * libweft.so crashed there.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WF_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WF_SANITIZED 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && \
    !defined(WF_SANITIZED)
#define WF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WF_CLONES
#endif
#define WF_KERNEL(fname, T, COMBINE) static WF_KERNEL_BODY(fname, T, COMBINE)
/* The ones reduce_x86.c falls back to for the tail of a buffer. */
#define WF_KERNEL_SHARED(fname, T, COMBINE) WF_KERNEL_BODY(fname, T, COMBINE)
#define WF_KERNEL_BODY(fname, T, COMBINE)                                      \
    WF_CLONES void fname(void *dst_, const void *a_, const void *b_, size_t n) \
    {                                                                          \
        T *dst = dst_;                                                         \
        const T *a = a_;                                                       \
        const T *b = b_;                                                       \
        WF_IVDEP                                                               \
        for (size_t i = 0; i < n; i++)                                         \
            dst[i] = COMBINE(a[i], b[i]);                                      \
    }

/*
 * Integers: X(name, type, unsigned type, type avg divides in).  Sum and
 * product run on the unsigned type, where overflow wraps by definition and
 * the bits equal two's-complement signed wrapping (the product through
 * WF_UMUL, as 8- and 16-bit operands promote to int).  min/max use the real
 * signedness.  The average divides in a type that can hold the divisor: an
 * int8 divided by 300 ranks is 0, not a divide by (int8_t)300.
 */
#define WF_INT_TYPES(X)                                                        \
    X(int8, int8_t, uint8_t, int)                                              \
    X(uint8, uint8_t, uint8_t, int)                                            \
    X(int16, int16_t, uint16_t, int)                                           \
    X(uint16, uint16_t, uint16_t, int)                                         \
    X(int32, int32_t, uint32_t, int32_t)                                       \
    X(uint32, uint32_t, uint32_t, uint32_t)                                    \
    X(int64, int64_t, uint64_t, int64_t)                                       \
    X(uint64, uint64_t, uint64_t, uint64_t)

#define WF_INT_KERNELS(name, T, U, D)                                          \
    WF_KERNEL(wf_reduce_##name##_sum, U, WF_ADD)                               \
    WF_KERNEL(wf_reduce_##name##_prod, U, WF_UMUL)                             \
    WF_KERNEL(wf_reduce_##name##_min, T, WF_LESS)                              \
    WF_KERNEL(wf_reduce_##name##_max, T, WF_MORE)                              \
    WF_KERNEL(wf_reduce_##name##_band, U, WF_BAND)                             \
    WF_KERNEL(wf_reduce_##name##_bor, U, WF_BOR)                               \
    WF_KERNEL(wf_reduce_##name##_bxor, U, WF_BXOR)                             \
    WF_KERNEL(wf_reduce_##name##_land, U, WF_LAND)                             \
    WF_KERNEL(wf_reduce_##name##_lor, U, WF_LOR)
WF_INT_TYPES(WF_INT_KERNELS)

WF_KERNEL_SHARED(wf_reduce_float16_sum, uint16_t, WF_F16_ADD)
WF_KERNEL_SHARED(wf_reduce_float16_prod, uint16_t, WF_F16_MUL)
WF_KERNEL(wf_reduce_float16_min, uint16_t, WF_F16_MIN)
WF_KERNEL(wf_reduce_float16_max, uint16_t, WF_F16_MAX)
WF_KERNEL_SHARED(wf_reduce_bfloat16_sum, uint16_t, WF_BF16_ADD)
WF_KERNEL_SHARED(wf_reduce_bfloat16_prod, uint16_t, WF_BF16_MUL)
WF_KERNEL(wf_reduce_bfloat16_min, uint16_t, WF_BF16_MIN)
WF_KERNEL(wf_reduce_bfloat16_max, uint16_t, WF_BF16_MAX)
WF_KERNEL(wf_reduce_float32_sum, float, WF_F32_ADD)
WF_KERNEL(wf_reduce_float32_prod, float, WF_F32_MUL)
WF_KERNEL(wf_reduce_float32_min, float, wf_min_f32)
WF_KERNEL(wf_reduce_float32_max, float, wf_max_f32)
WF_KERNEL(wf_reduce_float64_sum, double, WF_F64_ADD)
WF_KERNEL(wf_reduce_float64_prod, double, WF_F64_MUL)
WF_KERNEL(wf_reduce_float64_min, double, wf_min_f64)
WF_KERNEL(wf_reduce_float64_max, double, wf_max_f64)
WF_KERNEL(wf_reduce_float8_e4m3_sum, uint8_t, WF_E4M3_ADD)
WF_KERNEL(wf_reduce_float8_e4m3_prod, uint8_t, WF_E4M3_MUL)
WF_KERNEL(wf_reduce_float8_e4m3_min, uint8_t, WF_E4M3_MIN)
WF_KERNEL(wf_reduce_float8_e4m3_max, uint8_t, WF_E4M3_MAX)
WF_KERNEL(wf_reduce_float8_e5m2_sum, uint8_t, WF_E5M2_ADD)
WF_KERNEL(wf_reduce_float8_e5m2_prod, uint8_t, WF_E5M2_MUL)
WF_KERNEL(wf_reduce_float8_e5m2_min, uint8_t, WF_E5M2_MIN)
WF_KERNEL(wf_reduce_float8_e5m2_max, uint8_t, WF_E5M2_MAX)

/*
 * Every dtype: X(enum suffix, name, element size, INT or FLOAT).  The order
 * is the enum's order; designated initializers keep the tables right if it
 * ever changes.
 */
#define WF_DTYPES(X)                                                           \
    X(INT8, int8, 1, INT)                                                      \
    X(UINT8, uint8, 1, INT)                                                    \
    X(INT16, int16, 2, INT)                                                    \
    X(UINT16, uint16, 2, INT)                                                  \
    X(INT32, int32, 4, INT)                                                    \
    X(UINT32, uint32, 4, INT)                                                  \
    X(INT64, int64, 8, INT)                                                    \
    X(UINT64, uint64, 8, INT)                                                  \
    X(FLOAT16, float16, 2, FLOAT)                                              \
    X(BFLOAT16, bfloat16, 2, FLOAT)                                            \
    X(FLOAT32, float32, 4, FLOAT)                                              \
    X(FLOAT64, float64, 8, FLOAT)                                              \
    X(FLOAT8_E4M3, float8_e4m3, 1, FLOAT)                                      \
    X(FLOAT8_E5M2, float8_e5m2, 1, FLOAT)

/* WEFT_AVG reduces with the sum kernel.  Floats have no bitwise or logical
 * kernels: their NULL entries are what makes an (op, dtype) pair undefined
 * (wf_op_defined). */
#define WF_INT_COLUMNS(name)                                                   \
    [WEFT_BAND] = wf_reduce_##name##_band,                                     \
    [WEFT_BOR] = wf_reduce_##name##_bor,                                       \
    [WEFT_BXOR] = wf_reduce_##name##_bxor,                                     \
    [WEFT_LAND] = wf_reduce_##name##_land,                                     \
    [WEFT_LOR] = wf_reduce_##name##_lor,
#define WF_FLOAT_COLUMNS(name)
#define WF_TABLE_ROW(E, name, size, kind)                                      \
    [WEFT_##E] = {                                                             \
        [WEFT_SUM] = wf_reduce_##name##_sum,                                   \
        [WEFT_PROD] = wf_reduce_##name##_prod,                                 \
        [WEFT_MIN] = wf_reduce_##name##_min,                                   \
        [WEFT_MAX] = wf_reduce_##name##_max,                                   \
        [WEFT_AVG] = wf_reduce_##name##_sum,                                   \
        WF_##kind##_COLUMNS(name)                                              \
    },
static const wf_reduce_fn wf_reduce_table[WEFT_DTYPE_COUNT][WEFT_OP_COUNT] = {
    WF_DTYPES(WF_TABLE_ROW)};

wf_reduce_fn wf_reduce_get_portable(weft_dtype_t dtype, weft_op_t op)
{
    if (!wf_dtype_valid(dtype) || !wf_op_valid(op))
        return NULL;
    return wf_reduce_table[dtype][op];
}

bool wf_op_defined(weft_dtype_t dtype, weft_op_t op)
{
    return wf_reduce_get_portable(dtype, op) != NULL;
}

wf_reduce_fn wf_reduce_get(weft_dtype_t dtype, weft_op_t op)
{
    wf_reduce_fn portable = wf_reduce_get_portable(dtype, op);
    if (!portable) /* out of range, or not defined for the dtype */
        return NULL;
    wf_reduce_fn fast = wf_reduce_x86_get(dtype, op == WEFT_AVG ? WEFT_SUM : op);
    return fast ? fast : portable;
}

void wf_reduce(void *dst, const void *a, const void *b, size_t n,
               weft_dtype_t dtype, weft_op_t op)
{
    wf_reduce_fn fn = wf_reduce_get(dtype, op);

    if (fn)
        fn(dst, a, b, n);
}

/* ---- WEFT_AVG's final divide ------------------------------------------ */

#define WF_AVG_INT(name, T, U, D)                                              \
    static void wf_avg_##name(void *buf, size_t n, int divisor)                \
    {                                                                          \
        T *p = buf;                                                            \
        D d = (D)divisor;                                                      \
        for (size_t i = 0; i < n; i++)                                         \
            p[i] = (T)((D)p[i] / d);                                           \
    }
WF_INT_TYPES(WF_AVG_INT)

#define WF_AVG_FLOAT(name, T, D, WIDEN, NARROW)                                \
    static void wf_avg_##name(void *buf, size_t n, int divisor)                \
    {                                                                          \
        T *p = buf;                                                            \
        D d = (D)divisor;                                                      \
        for (size_t i = 0; i < n; i++)                                         \
            p[i] = NARROW(WIDEN(p[i]) / d);                                    \
    }
#define WF_SAME(x) (x)
WF_AVG_FLOAT(float16, uint16_t, float, wf_f16_to_f32, wf_f32_to_f16)
WF_AVG_FLOAT(bfloat16, uint16_t, float, wf_bf16_to_f32, wf_f32_to_bf16)
WF_AVG_FLOAT(float32, float, float, WF_SAME, WF_SAME)
WF_AVG_FLOAT(float64, double, double, WF_SAME, WF_SAME)
WF_AVG_FLOAT(float8_e4m3, uint8_t, float, wf_e4m3_to_f32, wf_f32_to_e4m3)
WF_AVG_FLOAT(float8_e5m2, uint8_t, float, wf_e5m2_to_f32, wf_f32_to_e5m2)

typedef void (*wf_avg_fn)(void *buf, size_t n, int divisor);

#define WF_AVG_ROW(E, name, size, kind) [WEFT_##E] = wf_avg_##name,
static const wf_avg_fn wf_avg_table[WEFT_DTYPE_COUNT] = {
    WF_DTYPES(WF_AVG_ROW)};

void wf_reduce_avg_finish(void *buf, size_t n, weft_dtype_t dtype,
                          int divisor)
{
    /* The divisor is a communicator size.  Dividing by 1 changes nothing,
     * and a divisor below 1 would be a caller bug (and INT_MIN / -1 is
     * undefined), so both leave the buffer as it is. */
    if (divisor <= 1 || !wf_dtype_valid(dtype))
        return;
    wf_avg_table[dtype](buf, n, divisor);
}

/* ---- dtype and op metadata -------------------------------------------- */

#define WF_SIZE_ROW(E, name, size, kind) [WEFT_##E] = size,
static const size_t wf_dtype_sizes[WEFT_DTYPE_COUNT] = {
    WF_DTYPES(WF_SIZE_ROW)};

#define WF_NAME_ROW(E, name, size, kind) [WEFT_##E] = #name,
static const char *const wf_dtype_names[WEFT_DTYPE_COUNT] = {
    WF_DTYPES(WF_NAME_ROW)};

static const char *const wf_op_names[WEFT_OP_COUNT] = {
    [WEFT_SUM] = "sum",
    [WEFT_PROD] = "prod",
    [WEFT_MIN] = "min",
    [WEFT_MAX] = "max",
    [WEFT_AVG] = "avg",
    [WEFT_BAND] = "band",
    [WEFT_BOR] = "bor",
    [WEFT_BXOR] = "bxor",
    [WEFT_LAND] = "land",
    [WEFT_LOR] = "lor",
};

/* Names nccl-tests accepts for -d, besides ours. */
static const struct {
    const char *alias;
    weft_dtype_t dtype;
} wf_dtype_aliases[] = {
    {"char", WEFT_INT8},      {"int", WEFT_INT32},
    {"half", WEFT_FLOAT16},   {"fp16", WEFT_FLOAT16},
    {"bf16", WEFT_BFLOAT16},  {"float", WEFT_FLOAT32},
    {"fp32", WEFT_FLOAT32},   {"double", WEFT_FLOAT64},
    {"fp64", WEFT_FLOAT64},   {"f8e4m3", WEFT_FLOAT8_E4M3},
    {"f8e5m2", WEFT_FLOAT8_E5M2},
};

bool wf_dtype_valid(int dtype)
{
    return dtype >= 0 && dtype < WEFT_DTYPE_COUNT;
}

bool wf_op_valid(int op) { return op >= 0 && op < WEFT_OP_COUNT; }

size_t wf_dtype_size(weft_dtype_t dtype)
{
    return wf_dtype_valid(dtype) ? wf_dtype_sizes[dtype] : 0;
}

const char *wf_dtype_name(weft_dtype_t dtype)
{
    return wf_dtype_valid(dtype) ? wf_dtype_names[dtype] : "invalid";
}

const char *wf_op_name(weft_op_t op)
{
    return wf_op_valid(op) ? wf_op_names[op] : "invalid";
}

/* Case-insensitive: "-d Float" on a command line should just work. */
bool wf_dtype_parse(const char *text, weft_dtype_t *dtype)
{
    if (!text)
        return false;
    for (int i = 0; i < WEFT_DTYPE_COUNT; i++) {
        if (strcasecmp(text, wf_dtype_names[i]) == 0) {
            *dtype = (weft_dtype_t)i;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof(wf_dtype_aliases) /
                               sizeof(wf_dtype_aliases[0]); i++) {
        if (strcasecmp(text, wf_dtype_aliases[i].alias) == 0) {
            *dtype = wf_dtype_aliases[i].dtype;
            return true;
        }
    }
    return false;
}

bool wf_op_parse(const char *text, weft_op_t *op)
{
    if (!text)
        return false;
    for (int i = 0; i < WEFT_OP_COUNT; i++) {
        if (strcasecmp(text, wf_op_names[i]) == 0) {
            *op = (weft_op_t)i;
            return true;
        }
    }
    return false;
}
