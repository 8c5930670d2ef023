/*
 * test_cuda_kernels.c - the CUDA reduction kernels (cuda/reduce.cu), run
 * on the CPU through cuda/cuda_compat.h's shim, against the host table
 * (src/reduce): every dtype x op, sizes around the 16-byte vector width,
 * pointers at every offset from a 16-byte boundary (equal offsets take the
 * vector path, unequal ones the element path), in place, and grid shapes
 * from one thread to many blocks.  Inputs are random bits, so NaNs with
 * payloads, infinities, -0 and subnormals all occur in the float types.
 * Equality is bitwise: GPU and host share their per-element code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "reduce_kernels.h"
#include "test.h"

wf_reduce_fn wf_reduce_get_portable(weft_dtype_t dtype, weft_op_t op);

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t rand_byte(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint8_t)(rng >> 32);
}

static const wf_cuda_shape_t shapes[] = {{1, 1}, {32, 1}, {64, 3},
                                         {256, 64}, {0, 0}};
static const size_t counts[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33,
                                255, 1000, 4099};

/* One case: the kernel's dst against the host table's, byte for byte. */
static void check(weft_dtype_t dt, weft_op_t op, size_t n, size_t offd,
                  size_t offa, size_t offb, const wf_cuda_shape_t *shape,
                  int in_place)
{
    size_t es = wf_dtype_size(dt), bytes = n * es, pad = 64;
    /* aligned_alloc wants a multiple of the alignment (ASan checks). */
    size_t cap = (bytes + pad + 63) / 64 * 64;
    uint8_t *a = aligned_alloc(64, cap), *b = aligned_alloc(64, cap);
    uint8_t *d = aligned_alloc(64, cap), *ref = malloc(bytes + 1);
    ASSERT_TRUE(a && b && d && ref);
    for (size_t i = 0; i < bytes + pad; i++)
        a[i] = rand_byte(), b[i] = rand_byte(), d[i] = 0xee;
    uint8_t *pa = a + offa * es, *pb = b + offb * es, *pd = d + offd * es;
    wf_reduce_get_portable(dt, op)(ref, pa, pb, n);
    if (in_place)
        pd = pa; /* dst == a, as in-place collectives do */
    ASSERT_EQ(wf_cuda_reduce(pd, pa, pb, n, dt, op, shape, NULL), 0);
    if (memcmp(pd, ref, bytes) != 0)
        wf_test_fail(__FILE__, __LINE__, "%s %s n=%zu offsets %zu/%zu/%zu "
                     "shape %dx%d%s: kernel and host table differ",
                     wf_dtype_name(dt), wf_op_name(op), n, offd, offa, offb,
                     shape->max_blocks, shape->threads,
                     in_place ? " in place" : "");
    /* Nothing outside dst[0, n) was written. */
    if (!in_place)
        for (size_t i = 0; i < bytes + pad; i++)
            if ((i < offd * es || i >= offd * es + bytes) && d[i] != 0xee)
                wf_test_fail(__FILE__, __LINE__, "%s %s n=%zu: byte %zu "
                             "outside dst written", wf_dtype_name(dt),
                             wf_op_name(op), n, i);
    free(a), free(b), free(d), free(ref);
}

WF_TEST(cuda_kernels_match_host_table_on_cpu, 120)
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        size_t es = wf_dtype_size((weft_dtype_t)dt);
        size_t per_vec = 16 / es;
        for (int op = 0; op < WEFT_OP_COUNT; op++) {
            /* Bitwise and logical ops on floats: no kernel either side. */
            if (!wf_op_defined((weft_dtype_t)dt, (weft_op_t)op)) {
                ASSERT_EQ(wf_cuda_reduce(NULL, NULL, NULL, 4, (weft_dtype_t)dt,
                                         (weft_op_t)op, NULL, NULL),
                          -1);
                continue;
            }
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]);
                     s++) {
                    size_t n = counts[c];
                    /* Equal offsets: every head length; then unequal. */
                    for (size_t off = 0; off < per_vec; off++)
                        check((weft_dtype_t)dt, (weft_op_t)op, n, off, off,
                              off, &shapes[s], 0);
                    check((weft_dtype_t)dt, (weft_op_t)op, n, 0, 1 % per_vec,
                          0, &shapes[s], 0);
                    check((weft_dtype_t)dt, (weft_op_t)op, n,
                          per_vec > 1 ? 1 : 0, 0, 0, &shapes[s], 1);
                }
        }
    }
    ASSERT_EQ(wf_cuda_reduce(NULL, NULL, NULL, 4, (weft_dtype_t)99, WEFT_SUM,
                             NULL, NULL),
              -1);
}

/* WEFT_AVG's final divide: the kernel against the host's. */
WF_TEST(cuda_kernels_avg_finish_matches_host_on_cpu, 60)
{
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++)
        for (int divisor = 1; divisor <= 7; divisor += 3) {
            size_t n = 1001, bytes = n * wf_dtype_size((weft_dtype_t)dt);
            uint8_t *x = malloc(bytes), *y = malloc(bytes);
            ASSERT_TRUE(x && y);
            for (size_t i = 0; i < bytes; i++)
                x[i] = y[i] = rand_byte();
            wf_reduce_avg_finish(x, n, (weft_dtype_t)dt, divisor);
            wf_cuda_shape_t shape = {64, 4};
            ASSERT_EQ(wf_cuda_avg_finish(y, n, (weft_dtype_t)dt, divisor,
                                         &shape, NULL),
                      0);
            if (memcmp(x, y, bytes) != 0)
                wf_test_fail(__FILE__, __LINE__, "%s / %d: kernel and host "
                             "differ", wf_dtype_name((weft_dtype_t)dt),
                             divisor);
            free(x), free(y);
        }
}

unsigned wf_cuda_shim_kernels_loaded(void);

/* wf_cuda_load_kernels reaches every kernel a launch can: for each dtype
 * a divide and a reduction per op with a kernel of its own (not avg, the
 * sum's), each asked for once. */
WF_TEST(cuda_kernels_load_reaches_every_kernel, 30)
{
    unsigned want = 0;
    for (int dt = 0; dt < WEFT_DTYPE_COUNT; dt++) {
        want++;
        for (int op = 0; op < WEFT_OP_COUNT; op++)
            want += op != WEFT_AVG &&
                    wf_op_defined((weft_dtype_t)dt, (weft_op_t)op);
    }
    /* 8 integer dtypes, 6 float ones */
    ASSERT_EQ(want, 8 * 9 + 6 * 4 + WEFT_DTYPE_COUNT);
    unsigned before = wf_cuda_shim_kernels_loaded();
    ASSERT_EQ(wf_cuda_load_kernels(), 0);
    ASSERT_EQ(wf_cuda_shim_kernels_loaded() - before, want);
}
