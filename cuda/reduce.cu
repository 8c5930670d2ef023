/*
 * reduce.cu - element-wise reductions on device memory: one grid-stride
 * kernel template, instantiated per (dtype, op) from the per-element
 * operations the host table uses (src/reduce/reduce_ops.h), so GPU and CPU
 * results agree bit for bit.  float16, bfloat16 and the float8 types are
 * widened to float32, combined and rounded back by the same code as on the
 * host (half.h, fp8.h), not by the hardware's conversions, whose NaN
 * payloads could differ.
 *
 * Memory is moved 16 bytes at a time: when dst, a and b sit at the same
 * offset from a 16-byte boundary, the elements before the first boundary
 * (the head) and after the last whole vector (the tail) are done one by
 * one and the body as 16-byte vectors; otherwise everything is done
 * element by element (still coalesced).  Built by nvcc into
 * libweft_cuda.so, and by g++ with cuda_compat.h's shim for the tests.
 */
#include <stddef.h>
#include <stdint.h>

#include "cuda_compat.h"
#include "reduce/reduce_ops.h"
#include "reduce_kernels.h"

#if defined(WF_CUDA_SHIM)
thread_local wf_dim3 blockIdx, threadIdx, blockDim, gridDim;
unsigned wf_shim_kernels_loaded;
/* For the tests, which are C. */
extern "C" unsigned wf_cuda_shim_kernels_loaded(void)
{
    return wf_shim_kernels_loaded;
}
#endif

namespace {

/* ---- the per-element operations as types ------------------------------ */

/* Integers: sum and product in the unsigned type (wraps, by definition),
 * min and max in the real one, the bitwise and logical ops on the bits, as
 * on the host. */
template <typename T, typename U> struct IntSum {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, T y)
    {
        return (T)(U)WF_ADD((U)x, (U)y);
    }
};
template <typename T, typename U> struct IntProd {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, T y)
    {
        return (T)(U)WF_UMUL((U)x, (U)y);
    }
};
#define WF_INT_BITS_OP(NAME, COMBINE)                                          \
    template <typename T> struct NAME {                                        \
        typedef T type;                                                        \
        static __host__ __device__ __forceinline__ T apply(T x, T y)           \
        {                                                                      \
            return (T)COMBINE(x, y);                                           \
        }                                                                      \
    };
WF_INT_BITS_OP(Band, WF_BAND)
WF_INT_BITS_OP(Bor, WF_BOR)
WF_INT_BITS_OP(Bxor, WF_BXOR)
WF_INT_BITS_OP(Land, WF_LAND)
WF_INT_BITS_OP(Lor, WF_LOR)
template <typename T> struct Min {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, T y)
    {
        return WF_LESS(x, y);
    }
};
template <typename T> struct Max {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, T y)
    {
        return WF_MORE(x, y);
    }
};

#define WF_ELEM_OP(NAME, T, EXPR)                                              \
    struct NAME {                                                              \
        typedef T type;                                                        \
        static __host__ __device__ __forceinline__ T apply(T x, T y)           \
        {                                                                      \
            return EXPR;                                                       \
        }                                                                      \
    };
WF_ELEM_OP(F16Sum, uint16_t, WF_F16_ADD(x, y))
WF_ELEM_OP(F16Prod, uint16_t, WF_F16_MUL(x, y))
WF_ELEM_OP(F16Min, uint16_t, WF_F16_MIN(x, y))
WF_ELEM_OP(F16Max, uint16_t, WF_F16_MAX(x, y))
WF_ELEM_OP(BF16Sum, uint16_t, WF_BF16_ADD(x, y))
WF_ELEM_OP(BF16Prod, uint16_t, WF_BF16_MUL(x, y))
WF_ELEM_OP(BF16Min, uint16_t, WF_BF16_MIN(x, y))
WF_ELEM_OP(BF16Max, uint16_t, WF_BF16_MAX(x, y))
WF_ELEM_OP(F32Sum, float, WF_F32_ADD(x, y))
WF_ELEM_OP(F32Prod, float, WF_F32_MUL(x, y))
WF_ELEM_OP(F32Min, float, wf_min_f32(x, y))
WF_ELEM_OP(F32Max, float, wf_max_f32(x, y))
WF_ELEM_OP(F64Sum, double, WF_F64_ADD(x, y))
WF_ELEM_OP(F64Prod, double, WF_F64_MUL(x, y))
WF_ELEM_OP(F64Min, double, wf_min_f64(x, y))
WF_ELEM_OP(F64Max, double, wf_max_f64(x, y))
WF_ELEM_OP(E4M3Sum, uint8_t, WF_E4M3_ADD(x, y))
WF_ELEM_OP(E4M3Prod, uint8_t, WF_E4M3_MUL(x, y))
WF_ELEM_OP(E4M3Min, uint8_t, WF_E4M3_MIN(x, y))
WF_ELEM_OP(E4M3Max, uint8_t, WF_E4M3_MAX(x, y))
WF_ELEM_OP(E5M2Sum, uint8_t, WF_E5M2_ADD(x, y))
WF_ELEM_OP(E5M2Prod, uint8_t, WF_E5M2_MUL(x, y))
WF_ELEM_OP(E5M2Min, uint8_t, WF_E5M2_MIN(x, y))
WF_ELEM_OP(E5M2Max, uint8_t, WF_E5M2_MAX(x, y))

/* ---- the kernel -------------------------------------------------------- */

/* 16 bytes seen as a vector or as its elements. */
template <typename T> union Vec16 {
    uint4 v;
    T e[16 / sizeof(T)];
};

/* Elements [0, head) and [head + nvec * V, n) one by one, the nvec
 * vectors in between 16 bytes at a time.  Every thread walks the grid
 * stride through all three parts. */
template <class Op>
__global__ void reduce_kernel(typename Op::type *dst,
                              const typename Op::type *a,
                              const typename Op::type *b, size_t n,
                              size_t head, size_t nvec)
{
    typedef typename Op::type T;
    const size_t V = 16 / sizeof(T);
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = tid; i < head; i += stride)
        dst[i] = Op::apply(a[i], b[i]);
    const uint4 *va = (const uint4 *)(a + head);
    const uint4 *vb = (const uint4 *)(b + head);
    uint4 *vd = (uint4 *)(dst + head);
    for (size_t k = tid; k < nvec; k += stride) {
        Vec16<T> x, y, r;
        x.v = va[k];
        y.v = vb[k];
        for (size_t j = 0; j < V; j++)
            r.e[j] = Op::apply(x.e[j], y.e[j]);
        vd[k] = r.v;
    }
    for (size_t i = head + nvec * V + tid; i < n; i += stride)
        dst[i] = Op::apply(a[i], b[i]);
}

/* How many elements precede the first 16-byte boundary of dst, and how
 * many whole vectors follow; no vectors when the three pointers sit at
 * different offsets from a boundary (their vectors would not line up). */
static void split(const void *dst, const void *a, const void *b, size_t n,
                  size_t size, size_t *head, size_t *nvec)
{
    uintptr_t off = (uintptr_t)dst % 16;
    if ((uintptr_t)a % 16 != off || (uintptr_t)b % 16 != off ||
        off % size != 0) {
        *head = n;
        *nvec = 0;
        return;
    }
    size_t h = off ? (16 - off) / size : 0;
    *head = h < n ? h : n;
    *nvec = (n - *head) / (16 / size);
}

static void shape_of(const wf_cuda_shape_t *shape, size_t work, int *blocks,
                     int *threads)
{
    int t = shape && shape->threads > 0 ? shape->threads
                                        : WF_CUDA_THREADS_DEFAULT;
    int maxb = shape && shape->max_blocks > 0 ? shape->max_blocks
                                              : WF_CUDA_BLOCKS_DEFAULT;
    size_t need = (work + (size_t)t - 1) / (size_t)t;
    *threads = t;
    *blocks = need < (size_t)maxb ? (need > 0 ? (int)need : 1) : maxb;
}

/* The stream only wf_cuda_load_kernels passes: a launch function given
 * it loads its kernel instead of running it, so that the loads go through
 * the same dispatch as the launches and miss none. */
char preload_tag;
void *const PRELOAD = &preload_tag;

template <class Op>
int launch(void *dst, const void *a, const void *b, size_t n,
           const wf_cuda_shape_t *shape, void *stream)
{
    typedef typename Op::type T;
    void (*kernel)(T *, const T *, const T *, size_t, size_t, size_t) =
        reduce_kernel<Op>;
    if (stream == PRELOAD)
        return wf_load_kernel(kernel);
    if (n == 0)
        return 0;
    size_t head, nvec;
    split(dst, a, b, n, sizeof(T), &head, &nvec);
    size_t tail = n - head - nvec * (16 / sizeof(T));
    size_t work = nvec > head + tail ? nvec : head + tail;
    int blocks, threads;
    shape_of(shape, work, &blocks, &threads);
    WF_LAUNCH(kernel, blocks, threads, stream, (T *)dst, (const T *)a,
              (const T *)b, n, head, nvec);
    return WF_LAUNCH_ERROR();
}

template <typename T, typename U> int launch_int(void *d, const void *a,
                                                 const void *b, size_t n,
                                                 weft_op_t op,
                                                 const wf_cuda_shape_t *s,
                                                 void *st)
{
    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG:
        return launch<IntSum<T, U> >(d, a, b, n, s, st);
    case WEFT_PROD:
        return launch<IntProd<T, U> >(d, a, b, n, s, st);
    case WEFT_MIN:
        return launch<Min<T> >(d, a, b, n, s, st);
    case WEFT_MAX:
        return launch<Max<T> >(d, a, b, n, s, st);
    case WEFT_BAND:
        return launch<Band<T> >(d, a, b, n, s, st);
    case WEFT_BOR:
        return launch<Bor<T> >(d, a, b, n, s, st);
    case WEFT_BXOR:
        return launch<Bxor<T> >(d, a, b, n, s, st);
    case WEFT_LAND:
        return launch<Land<T> >(d, a, b, n, s, st);
    case WEFT_LOR:
        return launch<Lor<T> >(d, a, b, n, s, st);
    default:
        return -1;
    }
}

/* No bitwise or logical ops on floats: -1, as for any undefined pair (the
 * API refuses them before a kernel is asked for). */
template <class Sum, class Prod, class Mn, class Mx>
int launch_float(void *d, const void *a, const void *b, size_t n,
                 weft_op_t op, const wf_cuda_shape_t *s, void *st)
{
    switch (op) {
    case WEFT_SUM:
    case WEFT_AVG:
        return launch<Sum>(d, a, b, n, s, st);
    case WEFT_PROD:
        return launch<Prod>(d, a, b, n, s, st);
    case WEFT_MIN:
        return launch<Mn>(d, a, b, n, s, st);
    case WEFT_MAX:
        return launch<Mx>(d, a, b, n, s, st);
    default:
        return -1;
    }
}

/* ---- WEFT_AVG's final divide ------------------------------------------ */

/* The host's rule (reduce.c): integers divide in a type that holds the
 * divisor, truncating; floats divide in float32 (half types) or their own
 * type and round once. */
template <typename T, typename D> struct DivInt {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, D d)
    {
        return (T)((D)x / d);
    }
};
/* The narrow floats: widen, divide in float32, round once. */
#define WF_DIV_NARROW(NAME, T, WIDEN, NARROW)                                  \
    struct NAME {                                                              \
        typedef T type;                                                        \
        static __host__ __device__ __forceinline__ T apply(T x, float d)       \
        {                                                                      \
            return NARROW(WIDEN(x) / d);                                       \
        }                                                                      \
    };
WF_DIV_NARROW(DivF16, uint16_t, wf_f16_to_f32, wf_f32_to_f16)
WF_DIV_NARROW(DivBF16, uint16_t, wf_bf16_to_f32, wf_f32_to_bf16)
WF_DIV_NARROW(DivE4M3, uint8_t, wf_e4m3_to_f32, wf_f32_to_e4m3)
WF_DIV_NARROW(DivE5M2, uint8_t, wf_e5m2_to_f32, wf_f32_to_e5m2)
template <typename T> struct DivSame {
    typedef T type;
    static __host__ __device__ __forceinline__ T apply(T x, T d)
    {
        return x / d;
    }
};

template <class Div, typename D>
__global__ void avg_kernel(typename Div::type *buf, size_t n, D d)
{
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = tid; i < n; i += stride)
        buf[i] = Div::apply(buf[i], d);
}

template <class Div, typename D>
int launch_avg(void *buf, size_t n, D d, const wf_cuda_shape_t *shape,
               void *stream)
{
    void (*kernel)(typename Div::type *, size_t, D) = avg_kernel<Div, D>;
    if (stream == PRELOAD)
        return wf_load_kernel(kernel);
    if (n == 0)
        return 0;
    int blocks, threads;
    shape_of(shape, n, &blocks, &threads);
    WF_LAUNCH(kernel, blocks, threads, stream, (typename Div::type *)buf, n,
              d);
    return WF_LAUNCH_ERROR();
}

} /* namespace */

extern "C" int wf_cuda_reduce(void *dst, const void *a, const void *b,
                              size_t n, weft_dtype_t dtype, weft_op_t op,
                              const wf_cuda_shape_t *shape, void *stream)
{
    switch (dtype) {
    case WEFT_INT8:
        return launch_int<int8_t, uint8_t>(dst, a, b, n, op, shape, stream);
    case WEFT_UINT8:
        return launch_int<uint8_t, uint8_t>(dst, a, b, n, op, shape, stream);
    case WEFT_INT16:
        return launch_int<int16_t, uint16_t>(dst, a, b, n, op, shape, stream);
    case WEFT_UINT16:
        return launch_int<uint16_t, uint16_t>(dst, a, b, n, op, shape,
                                              stream);
    case WEFT_INT32:
        return launch_int<int32_t, uint32_t>(dst, a, b, n, op, shape, stream);
    case WEFT_UINT32:
        return launch_int<uint32_t, uint32_t>(dst, a, b, n, op, shape,
                                              stream);
    case WEFT_INT64:
        return launch_int<int64_t, uint64_t>(dst, a, b, n, op, shape, stream);
    case WEFT_UINT64:
        return launch_int<uint64_t, uint64_t>(dst, a, b, n, op, shape,
                                              stream);
    case WEFT_FLOAT16:
        return launch_float<F16Sum, F16Prod, F16Min, F16Max>(dst, a, b, n, op,
                                                             shape, stream);
    case WEFT_BFLOAT16:
        return launch_float<BF16Sum, BF16Prod, BF16Min, BF16Max>(
            dst, a, b, n, op, shape, stream);
    case WEFT_FLOAT32:
        return launch_float<F32Sum, F32Prod, F32Min, F32Max>(dst, a, b, n, op,
                                                             shape, stream);
    case WEFT_FLOAT64:
        return launch_float<F64Sum, F64Prod, F64Min, F64Max>(dst, a, b, n, op,
                                                             shape, stream);
    case WEFT_FLOAT8_E4M3:
        return launch_float<E4M3Sum, E4M3Prod, E4M3Min, E4M3Max>(
            dst, a, b, n, op, shape, stream);
    case WEFT_FLOAT8_E5M2:
        return launch_float<E5M2Sum, E5M2Prod, E5M2Min, E5M2Max>(
            dst, a, b, n, op, shape, stream);
    default:
        return -1;
    }
}

extern "C" int wf_cuda_avg_finish(void *buf, size_t n, weft_dtype_t dtype,
                                  int divisor, const wf_cuda_shape_t *shape,
                                  void *stream)
{
    if (divisor <= 1)
        return 0; /* as on the host: nothing to do, or a caller bug */
    switch (dtype) {
    case WEFT_INT8:
        return launch_avg<DivInt<int8_t, int>, int>(buf, n, divisor, shape,
                                                    stream);
    case WEFT_UINT8:
        return launch_avg<DivInt<uint8_t, int>, int>(buf, n, divisor, shape,
                                                     stream);
    case WEFT_INT16:
        return launch_avg<DivInt<int16_t, int>, int>(buf, n, divisor, shape,
                                                     stream);
    case WEFT_UINT16:
        return launch_avg<DivInt<uint16_t, int>, int>(buf, n, divisor, shape,
                                                      stream);
    case WEFT_INT32:
        return launch_avg<DivInt<int32_t, int32_t>, int32_t>(
            buf, n, divisor, shape, stream);
    case WEFT_UINT32:
        return launch_avg<DivInt<uint32_t, uint32_t>, uint32_t>(
            buf, n, (uint32_t)divisor, shape, stream);
    case WEFT_INT64:
        return launch_avg<DivInt<int64_t, int64_t>, int64_t>(
            buf, n, divisor, shape, stream);
    case WEFT_UINT64:
        return launch_avg<DivInt<uint64_t, uint64_t>, uint64_t>(
            buf, n, (uint64_t)divisor, shape, stream);
    case WEFT_FLOAT16:
        return launch_avg<DivF16, float>(buf, n, (float)divisor, shape,
                                         stream);
    case WEFT_BFLOAT16:
        return launch_avg<DivBF16, float>(buf, n, (float)divisor, shape,
                                          stream);
    case WEFT_FLOAT32:
        return launch_avg<DivSame<float>, float>(buf, n, (float)divisor, shape,
                                                 stream);
    case WEFT_FLOAT64:
        return launch_avg<DivSame<double>, double>(buf, n, (double)divisor,
                                                   shape, stream);
    case WEFT_FLOAT8_E4M3:
        return launch_avg<DivE4M3, float>(buf, n, (float)divisor, shape,
                                          stream);
    case WEFT_FLOAT8_E5M2:
        return launch_avg<DivE5M2, float>(buf, n, (float)divisor, shape,
                                          stream);
    default:
        return -1;
    }
}

extern "C" int wf_cuda_load_kernels(void)
{
    /* Every op but WEFT_AVG, whose kernel is the sum's, and but the
     * bitwise and logical ones on floats, which have none. */
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        bool is_float = dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 ||
                        dt == WEFT_FLOAT32 || dt == WEFT_FLOAT64 ||
                        dt == WEFT_FLOAT8_E4M3 || dt == WEFT_FLOAT8_E5M2;
        for (int op = 0; op < WEFT_OP_COUNT; op++) {
            if (op == WEFT_AVG || (is_float && op >= WEFT_BAND))
                continue;
            int rc = wf_cuda_reduce(NULL, NULL, NULL, 0, (weft_dtype_t)dt,
                                    (weft_op_t)op, NULL, PRELOAD);
            if (rc != 0)
                return rc;
        }
        int rc = wf_cuda_avg_finish(NULL, 0, (weft_dtype_t)dt, 2, NULL,
                                    PRELOAD);
        if (rc != 0)
            return rc;
    }
    return 0;
}
