/*
 * gpu_util.c - helpers of the GPU test program (gpu_util.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

int gpu_rank = -1, gpu_size = 0, gpu_failures;

void gpu_die(const char *file, int line, const char *what, const char *why)
{
    fprintf(stderr, "[rank %d] %s:%d: %s: %s\n", gpu_rank, file, line, what,
            why);
    fflush(stderr);
    exit(1);
}

void gpu_weft_ok(const char *file, int line, const char *what,
                 weft_status_t st, weft_comm_t comm)
{
    if (st == WEFT_OK)
        return;
    const char *msg = NULL;
    if (comm)
        weft_comm_get_error(comm, &msg);
    char why[1024];
    snprintf(why, sizeof(why), "%s (%s)", weft_status_name(st),
             msg ? msg : weft_strerror(st));
    gpu_die(file, line, what, why);
}

weft_comm_t gpu_init(void)
{
    weft_comm_t comm = NULL;
    /* The device first: it loads the CUDA driver, after which weft asks
     * its device layer where each buffer lives (cuda/dev_load.c). */
    int ndev = 0;
    CU_CHECK(cudaGetDeviceCount(&ndev));
    WEFT_MUST(NULL, weft_comm_init(&comm));
    WEFT_MUST(comm, weft_comm_rank(comm, &gpu_rank));
    WEFT_MUST(comm, weft_comm_size(comm, &gpu_size));
    CU_CHECK(cudaSetDevice(gpu_rank % ndev));
    return comm;
}

size_t gpu_dtype_size(weft_dtype_t dt)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 2, 2, 1, 1};
    return sizes[dt];
}

const char *gpu_dtype_name(weft_dtype_t dt)
{
    static const char *const names[] = {
        "int8",  "uint8",   "int32",    "uint32",  "int64",
        "uint64", "float16", "bfloat16", "float32", "float64",
        "int16", "uint16", "float8_e4m3", "float8_e5m2"};
    return names[dt];
}

const char *gpu_op_name(weft_op_t op)
{
    static const char *const names[] = {"sum",  "prod", "min", "max",
                                        "avg",  "band", "bor", "bxor",
                                        "land", "lor"};
    return names[op];
}

/* A small non-negative integer as binary16: exact below 2^11. */
static uint16_t f16_of(double v)
{
    if (v != floor(v) || v < 0 || v > 2048)
        gpu_die(__FILE__, __LINE__, "f16_of", "not a small integer");
    if (v == 0)
        return 0;
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t exp = ((b >> 23) & 0xff) - 127 + 15;
    return (uint16_t)((exp << 10) | ((b >> 13) & 0x3ff));
}

/* bfloat16 is the upper half of binary32: exact for integers below 2^8
 * (and for every value used here). */
static uint16_t bf16_of(double v)
{
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    if (b & 0xffff)
        gpu_die(__FILE__, __LINE__, "bf16_of", "not exact in bfloat16");
    return (uint16_t)(b >> 16);
}

/* A small non-negative integer as an OCP float8 with `mant` mantissa
 * bits and exponent bias `bias`, from the format's definition; the
 * values used here are exact. */
static uint8_t f8_of(double v, int mant, int bias)
{
    int e;
    double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
    double sig = ldexp(m, mant + 1); /* 1.f as an integer of mant+1 bits */
    if (v != floor(v) || v < 0 || v > 16 || sig != floor(sig))
        gpu_die(__FILE__, __LINE__, "f8_of", "not exact in float8");
    if (v == 0)
        return 0;
    return (uint8_t)(((e - 1 + bias) << mant) | ((int)sig - (1 << mant)));
}

void gpu_store(weft_dtype_t dt, void *buf, size_t i, double v)
{
    /* Integers wrap to their width, as the library's sums and products. */
    int64_t n = (int64_t)v;
    switch (dt) {
    case WEFT_INT8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)n; break;
    case WEFT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)n; break;
    case WEFT_INT16: ((int16_t *)buf)[i] = (int16_t)(uint16_t)n; break;
    case WEFT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)n; break;
    case WEFT_INT32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)n; break;
    case WEFT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)n; break;
    case WEFT_INT64: ((int64_t *)buf)[i] = n; break;
    case WEFT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)n; break;
    case WEFT_FLOAT16: ((uint16_t *)buf)[i] = f16_of(v); break;
    case WEFT_BFLOAT16: ((uint16_t *)buf)[i] = bf16_of(v); break;
    case WEFT_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case WEFT_FLOAT64: ((double *)buf)[i] = v; break;
    case WEFT_FLOAT8_E4M3: ((uint8_t *)buf)[i] = f8_of(v, 3, 7); break;
    case WEFT_FLOAT8_E5M2: ((uint8_t *)buf)[i] = f8_of(v, 2, 15); break;
    default: gpu_die(__FILE__, __LINE__, "gpu_store", "unknown dtype");
    }
}

void *gpu_host_fill(weft_dtype_t dt, size_t n, gpu_gen_fn gen, int r,
                    size_t off)
{
    void *h = malloc(n * gpu_dtype_size(dt) + 1);
    if (!h)
        gpu_die(__FILE__, __LINE__, "malloc", "out of memory");
    for (size_t i = 0; i < n; i++)
        gpu_store(dt, h, i, gen(r, off + i));
    return h;
}

void *gpu_dev_fill(weft_dtype_t dt, size_t n, gpu_gen_fn gen, int r)
{
    size_t bytes = n * gpu_dtype_size(dt);
    void *d = NULL;
    CU_CHECK(cudaMalloc(&d, bytes ? bytes : 1));
    if (!gen) {
        CU_CHECK(cudaMemset(d, 0xa5, bytes));
        return d;
    }
    void *h = gpu_host_fill(dt, n, gen, r, 0);
    CU_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

bool gpu_expect_host(const char *what, weft_dtype_t dt, const void *got,
                     const void *want, size_t n)
{
    size_t es = gpu_dtype_size(dt);
    if (memcmp(got, want, n * es) == 0)
        return true;
    size_t i = 0;
    while (memcmp((const char *)got + i * es, (const char *)want + i * es,
                  es) == 0)
        i++;
    uint64_t g = 0, w = 0; /* the element's bytes, little-endian */
    memcpy(&g, (const char *)got + i * es, es);
    memcpy(&w, (const char *)want + i * es, es);
    fprintf(stderr, "[rank %d] FAIL %s: element %zu of %zu is 0x%0*llx, "
            "expected 0x%0*llx\n", gpu_rank, what, i, n, (int)(2 * es),
            (unsigned long long)g, (int)(2 * es), (unsigned long long)w);
    gpu_failures++;
    return false;
}

bool gpu_expect_dev(const char *what, weft_dtype_t dt, const void *dev,
                    const void *want, size_t n)
{
    size_t bytes = n * gpu_dtype_size(dt);
    void *h = malloc(bytes + 1);
    if (!h)
        gpu_die(__FILE__, __LINE__, "malloc", "out of memory");
    CU_CHECK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));
    bool ok = gpu_expect_host(what, dt, h, want, n);
    free(h);
    return ok;
}
