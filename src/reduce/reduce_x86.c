/*
 * reduce_x86.c - float16 / bfloat16 sum and product with AVX2 (and F16C
 * for float16), chosen at run time when the CPU has them.
 *
 * The portable kernels in reduce.c build for baseline x86-64 (SSE2), where
 * the float16 conversions are a dozen integer operations per element and
 * run at a sixth of memcpy speed.  F16C converts eight elements in one
 * instruction with the same rounding (nearest even), the same handling of
 * subnormals and infinities, and the same quiet-NaN rule (quiet bit set,
 * top payload bits kept), so the results are the portable kernels' bit for
 * bit; test/unit/test_reduce_half.c checks exactly that.  bfloat16 needs no
 * conversion instructions, only AVX2's wider integer lanes.
 *
 * Both paths do the arithmetic with the same SSE/AVX float instructions,
 * so MXCSR's flush-to-zero and denormals-are-zero modes affect them alike
 * (for float16 not at all: widened halves and their sums and products are
 * never float32 subnormals).
 */
#include "reduce/reduce_x86.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <cpuid.h>
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#define WF_X86_TARGET __attribute__((target("avx2,f16c")))

/* Nearest even, no exceptions: what the portable narrowing does. */
#define WF_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* A NaN result becomes the canonical quiet NaN (reduce_ops.h). */
WF_X86_TARGET static inline __m256 wf_canon_ps(__m256 r)
{
    __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    return _mm256_blendv_ps(
        r, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
}
#define WF_ADD_PS(x, y) wf_canon_ps(_mm256_add_ps(x, y))
#define WF_MUL_PS(x, y) wf_canon_ps(_mm256_mul_ps(x, y))

#define WF_F16_KERNEL(name, VOP, portable)                                     \
    WF_X86_TARGET static void name(void *dst, const void *a, const void *b,   \
                                   size_t n)                                   \
    {                                                                          \
        const uint16_t *x = a, *y = b;                                         \
        uint16_t *d = dst;                                                     \
        size_t i = 0;                                                          \
        for (; i + 8 <= n; i += 8) {                                           \
            __m256 fx = _mm256_cvtph_ps(                                       \
                _mm_loadu_si128((const __m128i *)(x + i)));                    \
            __m256 fy = _mm256_cvtph_ps(                                       \
                _mm_loadu_si128((const __m128i *)(y + i)));                    \
            _mm_storeu_si128((__m128i *)(d + i),                               \
                             _mm256_cvtps_ph(VOP(fx, fy), WF_RNE));            \
        }                                                                      \
        portable(d + i, x + i, y + i, n - i);                                  \
    }

WF_F16_KERNEL(wf_reduce_float16_sum_f16c, WF_ADD_PS,
              wf_reduce_float16_sum)
WF_F16_KERNEL(wf_reduce_float16_prod_f16c, WF_MUL_PS,
              wf_reduce_float16_prod)

/* Eight bfloat16 to float32: the upper half of each word. */
WF_X86_TARGET static inline __m256 wf_bf16x8_widen(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* Eight float32 to bfloat16 in the low 16 bits of each 32-bit lane: round
 * to nearest even by adding 0x7fff plus the kept lsb; NaN keeps its top
 * bits with the quiet bit set (as wf_f32_to_bf16). */
WF_X86_TARGET static inline __m256i wf_f32x8_narrow(__m256 f)
{
    const __m256i one = _mm256_set1_epi32(1);
    __m256i u = _mm256_castps_si256(f);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i nan_mask = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16),
                                  _mm256_set1_epi32(0x0040));
    return _mm256_blendv_epi8(r, nan, nan_mask);
}

#define WF_BF16_KERNEL(name, VOP, portable)                                    \
    WF_X86_TARGET static void name(void *dst, const void *a, const void *b,   \
                                   size_t n)                                   \
    {                                                                          \
        const uint16_t *x = a, *y = b;                                         \
        uint16_t *d = dst;                                                     \
        size_t i = 0;                                                          \
        for (; i + 16 <= n; i += 16) {                                         \
            __m256i lo = wf_f32x8_narrow(                                      \
                VOP(wf_bf16x8_widen(x + i), wf_bf16x8_widen(y + i)));          \
            __m256i hi = wf_f32x8_narrow(                                      \
                VOP(wf_bf16x8_widen(x + i + 8), wf_bf16x8_widen(y + i + 8)));  \
            /* packus interleaves 128-bit lanes: lo0 hi0 lo1 hi1; the       \
             * permute puts them back in order. */                             \
            __m256i packed = _mm256_packus_epi32(lo, hi);                      \
            _mm256_storeu_si256((__m256i *)(d + i),                            \
                                _mm256_permute4x64_epi64(packed, 0xd8));       \
        }                                                                      \
        portable(d + i, x + i, y + i, n - i);                                  \
    }

WF_BF16_KERNEL(wf_reduce_bfloat16_sum_avx2, WF_ADD_PS,
               wf_reduce_bfloat16_sum)
WF_BF16_KERNEL(wf_reduce_bfloat16_prod_avx2, WF_MUL_PS,
               wf_reduce_bfloat16_prod)

wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op)
{
    /* Any thread may be first; every one computes the same answer, so a
     * relaxed atomic is enough. */
    static int usable = -1;
    int u = __atomic_load_n(&usable, __ATOMIC_RELAXED);
    if (u < 0) {
        /* F16C from CPUID leaf 1, ECX bit 29: clang's
         * __builtin_cpu_supports does not know "f16c". */
        unsigned eax, ebx, ecx = 0, edx;
        bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
                    (ecx & (1u << 29));
        __builtin_cpu_init();
        u = __builtin_cpu_supports("avx2") && f16c;
        __atomic_store_n(&usable, u, __ATOMIC_RELAXED);
    }
    if (!u)
        return NULL;
    if (dtype == WEFT_FLOAT16 && op == WEFT_SUM)
        return wf_reduce_float16_sum_f16c;
    if (dtype == WEFT_FLOAT16 && op == WEFT_PROD)
        return wf_reduce_float16_prod_f16c;
    if (dtype == WEFT_BFLOAT16 && op == WEFT_SUM)
        return wf_reduce_bfloat16_sum_avx2;
    if (dtype == WEFT_BFLOAT16 && op == WEFT_PROD)
        return wf_reduce_bfloat16_prod_avx2;
    return NULL;
}

#else /* not x86-64 with GNU C */

wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op)
{
    (void)dtype;
    (void)op;
    return NULL;
}

#endif
