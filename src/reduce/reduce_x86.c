/*
 * reduce_x86.c - float16 / bfloat16 sum and product with AVX2 (and F16C
 * for float16), or AVX-512F, chosen at run time when the CPU has them.
 *
 * The portable kernels in reduce.c build for baseline x86-64 (SSE2), where
 * the float16 conversions are a dozen integer operations per element and
 * run at a sixth of memcpy speed.  F16C converts eight elements in one
 * instruction with the same rounding (nearest even), the same handling of
 * subnormals and infinities, and the same quiet-NaN rule (quiet bit set,
 * top payload bits kept), so the results are the portable kernels' bit for
 * bit; test/reduce/test_reduce_half.c checks exactly that.  bfloat16 needs no
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

/* Sixteen bfloat16 are eight 32-bit lanes of two: the even element in the
 * low half, the odd one in the high half.  A bfloat16 is the top half of
 * its float32, so the even ones widen by a shift and the odd ones by
 * clearing the low half, and the two narrowed results go back into their
 * halves the same way: no shuffle across lanes, where widening with
 * vpmovzxwd and packing back with vpackusdw and vpermq took three for
 * every eight elements (no faster at 32 bytes, and the same shape as the
 * sixteen-lane kernel below, which is what gained: docs/reductions.md). */
#define WF_BF16_KERNEL(name, VOP, portable)                                    \
    WF_X86_TARGET static void name(void *dst, const void *a, const void *b,   \
                                   size_t n)                                   \
    {                                                                          \
        const uint16_t *x = a, *y = b;                                         \
        uint16_t *d = dst;                                                     \
        const __m256i high = _mm256_set1_epi32((int)0xffff0000u);              \
        size_t i = 0;                                                          \
        for (; i + 16 <= n; i += 16) {                                         \
            __m256i vx = _mm256_loadu_si256((const __m256i *)(x + i));         \
            __m256i vy = _mm256_loadu_si256((const __m256i *)(y + i));         \
            __m256 even = VOP(_mm256_castsi256_ps(_mm256_slli_epi32(vx, 16)), \
                              _mm256_castsi256_ps(_mm256_slli_epi32(vy, 16)));\
            __m256 odd = VOP(_mm256_castsi256_ps(_mm256_and_si256(vx, high)), \
                             _mm256_castsi256_ps(_mm256_and_si256(vy, high)));\
            __m256i r = _mm256_or_si256(                                       \
                wf_f32x8_narrow(even),                                         \
                _mm256_slli_epi32(wf_f32x8_narrow(odd), 16));                  \
            _mm256_storeu_si256((__m256i *)(d + i), r);                        \
        }                                                                      \
        portable(d + i, x + i, y + i, n - i);                                  \
    }

WF_BF16_KERNEL(wf_reduce_bfloat16_sum_avx2, WF_ADD_PS,
               wf_reduce_bfloat16_sum)
WF_BF16_KERNEL(wf_reduce_bfloat16_prod_avx2, WF_MUL_PS,
               wf_reduce_bfloat16_prod)

/* The same kernels sixteen float32 lanes wide, with AVX-512F (its masks
 * replace the blends).  Where the buffers stay in a large cache the
 * library's memcpy moves 64 bytes an instruction, and 32-byte kernels fell
 * behind it (docs/reductions.md). */
#define WF_X512_TARGET __attribute__((target("avx512f")))

WF_X512_TARGET static inline __m512 wf_canon512(__m512 r)
{
    __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(
        nan, r, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
}
#define WF_ADD512(x, y) wf_canon512(_mm512_add_ps(x, y))
#define WF_MUL512(x, y) wf_canon512(_mm512_mul_ps(x, y))

#define WF_F16_KERNEL512(name, VOP, portable)                                  \
    WF_X512_TARGET static void name(void *dst, const void *a, const void *b,  \
                                    size_t n)                                  \
    {                                                                          \
        const uint16_t *x = a, *y = b;                                         \
        uint16_t *d = dst;                                                     \
        size_t i = 0;                                                          \
        for (; i + 16 <= n; i += 16) {                                         \
            __m512 fx = _mm512_cvtph_ps(                                       \
                _mm256_loadu_si256((const __m256i *)(x + i)));                 \
            __m512 fy = _mm512_cvtph_ps(                                       \
                _mm256_loadu_si256((const __m256i *)(y + i)));                 \
            _mm256_storeu_si256((__m256i *)(d + i),                            \
                                _mm512_cvtps_ph(VOP(fx, fy), WF_RNE));         \
        }                                                                      \
        portable(d + i, x + i, y + i, n - i);                                  \
    }

WF_F16_KERNEL512(wf_reduce_float16_sum_avx512, WF_ADD512,
                 wf_reduce_float16_sum)
WF_F16_KERNEL512(wf_reduce_float16_prod_avx512, WF_MUL512,
                 wf_reduce_float16_prod)

/* wf_f32x8_narrow, sixteen lanes. */
WF_X512_TARGET static inline __m512i wf_f32x16_narrow(__m512 f)
{
    __m512i u = _mm512_castps_si512(f);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                   _mm512_set1_epi32(1));
    __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f800000));
    __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16),
                                    _mm512_set1_epi32(0x0040));
    return _mm512_mask_blend_epi32(nan, r, quiet);
}

#define WF_BF16_KERNEL512(name, VOP, portable)                                 \
    WF_X512_TARGET static void name(void *dst, const void *a, const void *b,  \
                                    size_t n)                                  \
    {                                                                          \
        const uint16_t *x = a, *y = b;                                         \
        uint16_t *d = dst;                                                     \
        const __m512i high = _mm512_set1_epi32((int)0xffff0000u);              \
        size_t i = 0;                                                          \
        for (; i + 32 <= n; i += 32) {                                         \
            __m512i vx = _mm512_loadu_si512((const void *)(x + i));            \
            __m512i vy = _mm512_loadu_si512((const void *)(y + i));            \
            __m512 even = VOP(_mm512_castsi512_ps(_mm512_slli_epi32(vx, 16)), \
                              _mm512_castsi512_ps(_mm512_slli_epi32(vy, 16)));\
            __m512 odd = VOP(_mm512_castsi512_ps(_mm512_and_si512(vx, high)), \
                             _mm512_castsi512_ps(_mm512_and_si512(vy, high)));\
            __m512i r = _mm512_or_si512(                                       \
                wf_f32x16_narrow(even),                                        \
                _mm512_slli_epi32(wf_f32x16_narrow(odd), 16));                 \
            _mm512_storeu_si512((void *)(d + i), r);                           \
        }                                                                      \
        portable(d + i, x + i, y + i, n - i);                                  \
    }

WF_BF16_KERNEL512(wf_reduce_bfloat16_sum_avx512, WF_ADD512,
                  wf_reduce_bfloat16_sum)
WF_BF16_KERNEL512(wf_reduce_bfloat16_prod_avx512, WF_MUL512,
                  wf_reduce_bfloat16_prod)

/* The widest tier this CPU runs (wf_x86_tier_t), found once. */
static int cpu_tier(void)
{
    /* Any thread may be first; every one computes the same answer, so a
     * relaxed atomic is enough. */
    static int tier = -1;
    int t = __atomic_load_n(&tier, __ATOMIC_RELAXED);
    if (t < 0) {
        /* F16C from CPUID leaf 1, ECX bit 29: clang's
         * __builtin_cpu_supports does not know "f16c". */
        unsigned eax, ebx, ecx = 0, edx;
        bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
                    (ecx & (1u << 29));
        __builtin_cpu_init();
        t = WF_X86_NONE;
        if (__builtin_cpu_supports("avx2") && f16c)
            t = __builtin_cpu_supports("avx512f") ? WF_X86_AVX512
                                                  : WF_X86_AVX2;
        __atomic_store_n(&tier, t, __ATOMIC_RELAXED);
    }
    return t;
}

wf_reduce_fn wf_reduce_x86_kernel(weft_dtype_t dtype, weft_op_t op,
                                  wf_x86_tier_t tier)
{
    if (tier == WF_X86_NONE || (int)tier > cpu_tier())
        return NULL;
    bool wide = tier == WF_X86_AVX512;
    if (dtype == WEFT_FLOAT16 && op == WEFT_SUM)
        return wide ? wf_reduce_float16_sum_avx512 : wf_reduce_float16_sum_f16c;
    if (dtype == WEFT_FLOAT16 && op == WEFT_PROD)
        return wide ? wf_reduce_float16_prod_avx512
                    : wf_reduce_float16_prod_f16c;
    if (dtype == WEFT_BFLOAT16 && op == WEFT_SUM)
        return wide ? wf_reduce_bfloat16_sum_avx512
                    : wf_reduce_bfloat16_sum_avx2;
    if (dtype == WEFT_BFLOAT16 && op == WEFT_PROD)
        return wide ? wf_reduce_bfloat16_prod_avx512
                    : wf_reduce_bfloat16_prod_avx2;
    return NULL;
}

wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op)
{
    return wf_reduce_x86_kernel(dtype, op, (wf_x86_tier_t)cpu_tier());
}

#else /* not x86-64 with GNU C */

wf_reduce_fn wf_reduce_x86_kernel(weft_dtype_t dtype, weft_op_t op,
                                  wf_x86_tier_t tier)
{
    (void)dtype;
    (void)op;
    (void)tier;
    return NULL;
}

wf_reduce_fn wf_reduce_x86_get(weft_dtype_t dtype, weft_op_t op)
{
    (void)dtype;
    (void)op;
    return NULL;
}

#endif
