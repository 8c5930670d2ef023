/*
 * test_bit_ops.c - the bitwise and logical reductions (band, bor, bxor,
 * land, lor) through allreduce, reduce and reduce_scatter on 2, 3 and 5
 * ranks, in the 8-, 16-, 32- and 64-bit integers, on host buffers and on
 * the fake device layer's, each element checked against coll_util.h's
 * reference computed from every rank's inputs; and a float dtype with a
 * bitwise op refused before anything is sent, the log naming both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "coll_util.h"
#include "dev_fake.h"
#include "test.h"

static const weft_dtype_t dtypes[] = {WEFT_UINT8, WEFT_INT16, WEFT_UINT16,
                                      WEFT_INT32, WEFT_INT64};
static const weft_op_t ops[] = {WEFT_BAND, WEFT_BOR, WEFT_BXOR, WEFT_LAND,
                                WEFT_LOR};
static const wf_coll_t colls[] = {WF_COLL_ALLREDUCE, WF_COLL_REDUCE,
                                  WF_COLL_REDUCE_SCATTER};
/* With 1 KiB chunks, 700 elements are several chunks in every dtype. */
static const size_t counts[] = {1, 700};

typedef struct {
    const char *job;
    bool device;
} bits_arg_t;

static weft_status_t call(weft_comm_t comm, wf_coll_t coll, const void *s,
                          void *r, size_t n, weft_dtype_t d, weft_op_t op,
                          int root)
{
    switch (coll) {
    case WF_COLL_ALLREDUCE: return weft_allreduce(s, r, n, d, op, comm);
    case WF_COLL_REDUCE: return weft_reduce(s, r, n, d, op, root, comm);
    default: return weft_reduce_scatter(s, r, n, d, op, comm);
    }
}

/* A copy of `bytes` of host memory in fake device memory, or NULL. */
static char *on_device(const char *host, size_t bytes)
{
    char *dev = wf_fake_dev_alloc(bytes);
    wf_fake_dev_write(dev, host, bytes);
    return dev;
}

static void one_case(weft_comm_t comm, wf_coll_t coll, int rank, int size,
                     size_t n, weft_dtype_t d, weft_op_t op, bool device)
{
    size_t es = cu_dtype_size(d);
    size_t sn = coll == WF_COLL_REDUCE_SCATTER ? n * (size_t)size : n;
    int root = size - 1;
    char *send = malloc(sn * es), *recv = malloc(n * es);
    ASSERT_TRUE(send && recv);
    cu_fill(send, sn, rank, op, d);
    memset(recv, 0x5a, n * es);
    char *dsend = device ? on_device(send, sn * es) : send;
    char *drecv = device ? on_device(recv, n * es) : recv;
    weft_status_t st = call(comm, coll, dsend, drecv, n, d, op, root);
    if (device) {
        wf_fake_dev_read(recv, drecv, n * es);
        wf_fake_dev_free(dsend);
        wf_fake_dev_free(drecv);
    }
    char what[240];
    cu_case_name(what, sizeof(what), coll, "auto", rank, size, d, op, n, root,
                 false);
    if (st != WEFT_OK)
        wf_test_fail(__FILE__, __LINE__, "%s: %s", what, weft_strerror(st));
    if (device)
        strncat(what, " (device)", sizeof(what) - strlen(what) - 1);
    size_t wrong = cu_check_coll(coll, size, n, d, op, root, rank, recv, n,
                                 what);
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong", what, wrong);
    free(send);
    free(recv);
}

static void bits_rank(int rank, int size, void *p)
{
    const bits_arg_t *a = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(a->job, rank, size,
                               "WEFT_CHUNK_SIZE=1k,WEFT_TIMEOUT=60s", &comm));
    for (size_t c = 0; c < sizeof(colls) / sizeof(*colls); c++)
        for (size_t di = 0; di < sizeof(dtypes) / sizeof(*dtypes); di++)
            for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++)
                for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++)
                    one_case(comm, colls[c], rank, size, counts[k],
                             dtypes[di], ops[o], a->device);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void run(int size, bool device)
{
    if (device)
        wf_dev_use_fake(true);
    bits_arg_t a = {wf_test_unique(device ? "bitsd" : "bits"), device};
    wf_test_run_threads(size, bits_rank, &a);
}

WF_TEST(coll_bit_ops_n2, 120) { run(2, false); }
WF_TEST(coll_bit_ops_n3, 120) { run(3, false); }
WF_TEST(coll_bit_ops_n5, 180) { run(5, false); }
WF_TEST(coll_bit_ops_fake_device_n3, 180) { run(3, true); }

/* Every reducing collective refuses a bitwise or logical op on a float
 * dtype with WEFT_ERR_INVALID_ARG on each rank, and the communicator
 * works after it. */
static void refused_rank(int rank, int size, void *p)
{
    weft_comm_t comm;
    float f[4] = {1, 2, 3, 4};
    weft_request_t req;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, NULL, &comm));
    ASSERT_STATUS(weft_allreduce(f, f, 1, WEFT_FLOAT32, WEFT_BAND, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_iallreduce(f, f, 1, WEFT_FLOAT64, WEFT_LOR, comm, &req),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_reduce(f, f, 1, WEFT_BFLOAT16, WEFT_BXOR, 0, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_reduce_scatter(f, f, 1, WEFT_FLOAT16, WEFT_LAND, comm),
                  WEFT_ERR_INVALID_ARG);
    int32_t x = rank + 1; /* 1 | 2 */
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_BOR, comm));
    ASSERT_EQ(x, 3);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_bit_ops_refused_on_floats, 30)
{
    wf_test_log_capture();
    wf_test_run_threads(2, refused_rank, (void *)wf_test_unique("bitsf"));
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "weft_allreduce: op band is not defined for "
                             "float32 (bitwise and logical ops take integer "
                             "dtypes)");
    ASSERT_STR_CONTAINS(log, "op lor is not defined for float64");
    ASSERT_STR_CONTAINS(log, "weft_reduce: op bxor is not defined for "
                             "bfloat16");
    ASSERT_STR_CONTAINS(log, "op land is not defined for float16");
}
