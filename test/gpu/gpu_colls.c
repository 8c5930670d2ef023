/*
 * gpu_colls.c - the collectives on device memory, run by test/gpu/run.sh
 * (`make test-gpu`) as `weftrun -n N gpu_colls MODE`:
 *
 *   probe   no communicator: is there a device, and does cudaMalloc work?
 *           Exit 0 if so, else 1 with the reason (run.sh then skips).
 *   colls   every collective of include/weft.h on cudaMalloc'ed buffers
 *           through the ordinary blocking calls: a few dtypes and ops,
 *           counts 1 to 300001 (several chunks), roots 0 and N-1, in place
 *           where the API has it.  Buffers are filled with cudaMemcpy
 *           from host patterns and read back the same way; receive
 *           buffers start poisoned.
 *   stream  weft_allreduce_stream's ordering on a CUDA stream
 *           (gpu_stream.c); exit 77 (skipped) when libweft lacks it.
 *
 * Each rank exits 1 on a wrong element (after finishing the matrix, all
 * of them printed) or a failed call (at once).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

int gpu_stream_main(weft_comm_t comm); /* gpu_stream.c */

/* Reductions: 1..4, so products of 4 ranks stay exact in bfloat16 (256)
 * and int8 products wrap. */
static double red_val(int r, size_t i) { return (double)(1 + (r + i) % 4); }

/* Data movement: who sent which element shows in the value. */
static double move_val(int r, size_t i)
{
    return (double)((r * 37 + i * 3) % 101);
}

/* Element j of the reduction of every rank's red_val(r, j) with op. */
static double red_expect(weft_dtype_t dt, weft_op_t op, size_t j)
{
    double acc = red_val(0, j);
    for (int r = 1; r < gpu_size; r++) {
        double v = red_val(r, j);
        switch (op) {
        case WEFT_SUM:
        case WEFT_AVG: acc += v; break;
        case WEFT_PROD: acc *= v; break;
        case WEFT_MIN: acc = v < acc ? v : acc; break;
        case WEFT_MAX: acc = v > acc ? v : acc; break;
        case WEFT_BAND: acc = (double)((long long)acc & (long long)v); break;
        case WEFT_BOR: acc = (double)((long long)acc | (long long)v); break;
        case WEFT_BXOR: acc = (double)((long long)acc ^ (long long)v); break;
        case WEFT_LAND: acc = acc != 0 && v != 0; break;
        case WEFT_LOR: acc = acc != 0 || v != 0; break;
        default: break;
        }
    }
    if (op != WEFT_AVG)
        return acc;
    if (dt == WEFT_FLOAT32) /* the host divides float32 in float32 */
        return (double)((float)acc / (float)gpu_size);
    if (dt == WEFT_FLOAT64)
        return acc / gpu_size;
    return (double)((long long)acc / gpu_size); /* integers truncate */
}

static void *red_want(weft_dtype_t dt, weft_op_t op, size_t n, size_t off)
{
    void *w = malloc(n * gpu_dtype_size(dt) + 1);
    if (!w)
        gpu_die(__FILE__, __LINE__, "malloc", "out of memory");
    for (size_t i = 0; i < n; i++)
        gpu_store(dt, w, i, red_expect(dt, op, off + i));
    return w;
}

/* Rank r's block of `n` elements from gen(r, off_of_r + i), for every r:
 * the expected result of allgather, gather (off 0) and alltoall. */
static void *blocks_want(weft_dtype_t dt, size_t n, gpu_gen_fn gen,
                         size_t off)
{
    size_t es = gpu_dtype_size(dt);
    char *w = malloc((size_t)gpu_size * n * es + 1);
    if (!w)
        gpu_die(__FILE__, __LINE__, "malloc", "out of memory");
    for (int r = 0; r < gpu_size; r++) {
        void *b = gpu_host_fill(dt, n, gen, r, off);
        memcpy(w + (size_t)r * n * es, b, n * es);
        free(b);
    }
    return w;
}

static char what[256];
#define NAME(...) snprintf(what, sizeof(what), __VA_ARGS__)

/* The device result `d` (n elements) against `want`, then both freed. */
static void check_free(weft_dtype_t dt, void *d, void *want, size_t n)
{
    gpu_expect_dev(what, dt, d, want, n);
    free(want);
    CU_CHECK(cudaFree(d));
}

/* ---- reductions ------------------------------------------------------- */

static void t_allreduce(weft_comm_t c, weft_dtype_t dt, weft_op_t op,
                        size_t n, bool in_place)
{
    NAME("allreduce %s %s n=%zu%s", gpu_dtype_name(dt), gpu_op_name(op), n,
         in_place ? " in place" : "");
    void *s = gpu_dev_fill(dt, n, red_val, gpu_rank);
    void *d = in_place ? s : gpu_dev_fill(dt, n, NULL, 0);
    WEFT_MUST(c, weft_allreduce(s, d, n, dt, op, c));
    check_free(dt, d, red_want(dt, op, n, 0), n);
    if (!in_place)
        CU_CHECK(cudaFree(s));
}

static void t_reduce(weft_comm_t c, weft_dtype_t dt, weft_op_t op, size_t n,
                     int root)
{
    NAME("reduce %s %s n=%zu root=%d", gpu_dtype_name(dt), gpu_op_name(op),
         n, root);
    void *s = gpu_dev_fill(dt, n, red_val, gpu_rank);
    void *d = gpu_rank == root ? gpu_dev_fill(dt, n, NULL, 0) : NULL;
    WEFT_MUST(c, weft_reduce(s, d, n, dt, op, root, c));
    if (d)
        check_free(dt, d, red_want(dt, op, n, 0), n);
    CU_CHECK(cudaFree(s));
}

static void t_reduce_scatter(weft_comm_t c, weft_dtype_t dt, weft_op_t op,
                             size_t n)
{
    NAME("reduce_scatter %s %s recvcount=%zu", gpu_dtype_name(dt),
         gpu_op_name(op), n);
    void *s = gpu_dev_fill(dt, (size_t)gpu_size * n, red_val, gpu_rank);
    void *d = gpu_dev_fill(dt, n, NULL, 0);
    WEFT_MUST(c, weft_reduce_scatter(s, d, n, dt, op, c));
    check_free(dt, d, red_want(dt, op, n, (size_t)gpu_rank * n), n);
    CU_CHECK(cudaFree(s));
}

/* ---- data movement ---------------------------------------------------- */

static void t_broadcast(weft_comm_t c, weft_dtype_t dt, size_t n, int root,
                        bool in_place)
{
    NAME("broadcast %s n=%zu root=%d%s", gpu_dtype_name(dt), n, root,
         in_place ? " in place" : "");
    bool me = gpu_rank == root;
    void *d = gpu_dev_fill(dt, n, me && in_place ? move_val : NULL, root);
    void *s = me && !in_place ? gpu_dev_fill(dt, n, move_val, root)
                              : (me ? d : NULL);
    WEFT_MUST(c, weft_broadcast(s, d, n, dt, root, c));
    if (s && s != d)
        CU_CHECK(cudaFree(s));
    check_free(dt, d, gpu_host_fill(dt, n, move_val, root, 0), n);
}

static void t_allgather(weft_comm_t c, weft_dtype_t dt, size_t n)
{
    NAME("allgather %s sendcount=%zu", gpu_dtype_name(dt), n);
    void *s = gpu_dev_fill(dt, n, move_val, gpu_rank);
    void *d = gpu_dev_fill(dt, (size_t)gpu_size * n, NULL, 0);
    WEFT_MUST(c, weft_allgather(s, d, n, dt, c));
    check_free(dt, d, blocks_want(dt, n, move_val, 0), (size_t)gpu_size * n);
    CU_CHECK(cudaFree(s));
}

static void t_gather(weft_comm_t c, weft_dtype_t dt, size_t n, int root)
{
    NAME("gather %s sendcount=%zu root=%d", gpu_dtype_name(dt), n, root);
    void *s = gpu_dev_fill(dt, n, move_val, gpu_rank);
    void *d = gpu_rank == root ? gpu_dev_fill(dt, (size_t)gpu_size * n, NULL,
                                              0)
                               : NULL;
    WEFT_MUST(c, weft_gather(s, d, n, dt, root, c));
    if (d)
        check_free(dt, d, blocks_want(dt, n, move_val, 0),
                   (size_t)gpu_size * n);
    CU_CHECK(cudaFree(s));
}

static void t_scatter(weft_comm_t c, weft_dtype_t dt, size_t n, int root)
{
    NAME("scatter %s recvcount=%zu root=%d", gpu_dtype_name(dt), n, root);
    void *s = gpu_rank == root
                  ? gpu_dev_fill(dt, (size_t)gpu_size * n, move_val, root)
                  : NULL;
    void *d = gpu_dev_fill(dt, n, NULL, 0);
    WEFT_MUST(c, weft_scatter(s, d, n, dt, root, c));
    check_free(dt, d,
               gpu_host_fill(dt, n, move_val, root, (size_t)gpu_rank * n), n);
    if (s)
        CU_CHECK(cudaFree(s));
}

/* Rank r's element p * n + i goes to rank p: rank p expects, in block r,
 * move_val(r, p * n + i). */
static void t_alltoall(weft_comm_t c, weft_dtype_t dt, size_t n)
{
    NAME("alltoall %s count=%zu", gpu_dtype_name(dt), n);
    void *s = gpu_dev_fill(dt, (size_t)gpu_size * n, move_val, gpu_rank);
    void *d = gpu_dev_fill(dt, (size_t)gpu_size * n, NULL, 0);
    WEFT_MUST(c, weft_alltoall(s, d, n, dt, c));
    check_free(dt, d, blocks_want(dt, n, move_val, (size_t)gpu_rank * n),
               (size_t)gpu_size * n);
    CU_CHECK(cudaFree(s));
}

/* ---- the matrix ------------------------------------------------------- */

static const struct {
    weft_dtype_t dt;
    weft_op_t op;
} red_cases[] = {
    {WEFT_INT32, WEFT_SUM},      {WEFT_FLOAT32, WEFT_SUM},
    {WEFT_FLOAT16, WEFT_SUM},    {WEFT_BFLOAT16, WEFT_MAX},
    {WEFT_INT8, WEFT_PROD},      {WEFT_INT64, WEFT_PROD},
    {WEFT_FLOAT64, WEFT_MIN},    {WEFT_UINT8, WEFT_MAX},
    {WEFT_INT32, WEFT_AVG},      {WEFT_FLOAT32, WEFT_AVG},
    {WEFT_INT16, WEFT_BXOR},     {WEFT_UINT16, WEFT_BAND},
    {WEFT_UINT8, WEFT_LAND},     {WEFT_FLOAT8_E4M3, WEFT_MAX},
    {WEFT_FLOAT8_E5M2, WEFT_MIN},
};
static const weft_dtype_t move_dts[] = {WEFT_INT8, WEFT_FLOAT16, WEFT_INT32,
                                        WEFT_FLOAT64};
/* 300001 int32 elements are several WEFT_CHUNK_SIZE (256k) chunks. */
static const size_t counts[] = {1, 7, 1023, 300001};
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static int colls_main(weft_comm_t c)
{
    int cases = 0, roots[2] = {0, gpu_size - 1};
    for (size_t k = 0; k < LEN(counts); k++) {
        size_t n = counts[k];
        for (size_t j = 0; j < LEN(red_cases); j++) {
            weft_dtype_t dt = red_cases[j].dt;
            weft_op_t op = red_cases[j].op;
            t_allreduce(c, dt, op, n, false);
            t_allreduce(c, dt, op, n, true);
            t_reduce_scatter(c, dt, op, n);
            for (int q = 0; q < 2; q++)
                t_reduce(c, dt, op, n, roots[q]);
            cases += 5;
        }
        for (size_t j = 0; j < LEN(move_dts); j++) {
            weft_dtype_t dt = move_dts[j];
            for (int q = 0; q < 2; q++) {
                t_broadcast(c, dt, n, roots[q], false);
                t_broadcast(c, dt, n, roots[q], true);
                t_gather(c, dt, n, roots[q]);
                t_scatter(c, dt, n, roots[q]);
            }
            t_allgather(c, dt, n);
            t_alltoall(c, dt, n);
            cases += 10;
        }
    }
    printf("[rank %d] colls: %d cases on device buffers, %d wrong\n",
           gpu_rank, cases, gpu_failures);
    return gpu_failures ? 1 : 0;
}

/* Whether this process can use a GPU at all: run.sh's skip decision. */
static int probe_main(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("no CUDA device: cudaGetDeviceCount: %s\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 1;
    }
    void *p = NULL;
    e = cudaMalloc(&p, 1 << 20);
    if (e != cudaSuccess) {
        printf("cudaMalloc of 1 MiB failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    cudaFree(p);
    printf("%d CUDA device(s), cudaMalloc works\n", ndev);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "probe") == 0)
        return probe_main();
    if (strcmp(mode, "colls") != 0 && strcmp(mode, "stream") != 0) {
        fprintf(stderr, "usage: weftrun -n N %s colls|stream, or %s probe\n",
                argv[0], argv[0]);
        return 2;
    }
    weft_comm_t comm = gpu_init();
    int rc = strcmp(mode, "colls") == 0 ? colls_main(comm)
                                        : gpu_stream_main(comm);
    WEFT_MUST(comm, weft_comm_destroy(comm));
    return rc;
}
