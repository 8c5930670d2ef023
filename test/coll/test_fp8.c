/*
 * test_fp8.c - float8_e4m3 and float8_e5m2 through allreduce, reduce and
 * reduce_scatter on 2, 3 and 5 ranks, every arithmetic op, in and out of
 * place, each element checked against coll_util.h's reference (fp8_ref.h
 * rounding the exact result); saturation of a sum that overflows on every
 * rank; and the bitwise and logical ops refused for fp8 before anything
 * is sent, the log naming op and dtype.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "coll_util.h"
#include "test.h"

static const weft_dtype_t dtypes[] = {WEFT_FLOAT8_E4M3, WEFT_FLOAT8_E5M2};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX,
                                WEFT_AVG};
static const wf_coll_t colls[] = {WF_COLL_ALLREDUCE, WF_COLL_REDUCE,
                                  WF_COLL_REDUCE_SCATTER};
/* With 256-byte chunks, 1000 one-byte elements are several chunks. */
static const size_t counts[] = {1, 7, 1000};

static weft_status_t run_coll(weft_comm_t comm, wf_coll_t coll,
                              const void *s, void *r, size_t n,
                              weft_dtype_t d, weft_op_t op, int root)
{
    switch (coll) {
    case WF_COLL_ALLREDUCE: return weft_allreduce(s, r, n, d, op, comm);
    case WF_COLL_REDUCE: return weft_reduce(s, r, n, d, op, root, comm);
    default: return weft_reduce_scatter(s, r, n, d, op, comm);
    }
}

/* In place, reduce_scatter's result is block `rank` of the send buffer. */
static void fp8_case(weft_comm_t comm, wf_coll_t coll, int rank, int size,
                     size_t n, weft_dtype_t d, weft_op_t op, bool in_place)
{
    bool rs = coll == WF_COLL_REDUCE_SCATTER;
    size_t sn = rs ? n * (size_t)size : n;
    int root = size / 2;
    uint8_t *send = malloc(sn), *recv = malloc(n);
    ASSERT_TRUE(send && recv);
    cu_fill(send, sn, rank, op, d);
    memset(recv, 0x5a, n);
    uint8_t *out = in_place ? send + (rs ? (size_t)rank * n : 0) : recv;
    weft_status_t st = run_coll(comm, coll, send, out, n, d, op, root);
    char what[240];
    cu_case_name(what, sizeof(what), coll, "auto", rank, size, d, op, n, root,
                 in_place);
    if (st != WEFT_OK)
        wf_test_fail(__FILE__, __LINE__, "%s: %s", what, weft_strerror(st));
    size_t wrong = cu_check_coll(coll, size, n, d, op, root, rank, out, n,
                                 what);
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong", what, wrong);
    free(send);
    free(recv);
}

/* Every rank adds 320 (e4m3) or 49152 (e5m2): any partial sum is past the
 * largest finite value and saturates to it, whatever the order. */
static void saturation_case(weft_comm_t comm)
{
    uint8_t e4[3] = {0x7a, 0xfa, 0x7e}, e5[3] = {0x7a, 0xfa, 0x7c};
    ASSERT_OK(weft_allreduce(e4, e4, 3, WEFT_FLOAT8_E4M3, WEFT_SUM, comm));
    ASSERT_EQ(e4[0], 0x7e); /* 448 */
    ASSERT_EQ(e4[1], 0xfe);
    ASSERT_EQ(e4[2], 0x7e);
    /* 0x7c is an e5m2 infinity: it saturates as well. */
    ASSERT_OK(weft_allreduce(e5, e5, 3, WEFT_FLOAT8_E5M2, WEFT_SUM, comm));
    ASSERT_EQ(e5[0], 0x7b); /* 57344 */
    ASSERT_EQ(e5[1], 0xfb);
    ASSERT_EQ(e5[2], 0x7b);
}

static void fp8_rank(int rank, int size, void *job)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(job, rank, size,
                               "WEFT_CHUNK_SIZE=256,WEFT_TIMEOUT=60s", &comm));
    for (size_t c = 0; c < sizeof(colls) / sizeof(*colls); c++)
        for (size_t di = 0; di < sizeof(dtypes) / sizeof(*dtypes); di++)
            for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++)
                for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++)
                    for (int ip = 0; ip < 2; ip++)
                        fp8_case(comm, colls[c], rank, size, counts[k],
                                 dtypes[di], ops[o], ip);
    saturation_case(comm);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void run(int size)
{
    wf_test_run_threads(size, fp8_rank, (void *)wf_test_unique("fp8"));
}

WF_TEST(coll_fp8_n2, 120) { run(2); }
WF_TEST(coll_fp8_n3, 120) { run(3); }
WF_TEST(coll_fp8_n5, 180) { run(5); }

/* A bitwise or logical op on an fp8 dtype: WEFT_ERR_INVALID_ARG on each
 * rank, and the communicator works after it. */
static void refused_rank(int rank, int size, void *job)
{
    weft_comm_t comm;
    uint8_t b[4] = {0x38, 0x38, 0x38, 0x38}; /* 1.0 in e4m3 */
    weft_request_t req;
    ASSERT_OK(wf_test_comm_mem(job, rank, size, NULL, &comm));
    ASSERT_STATUS(weft_allreduce(b, b, 4, WEFT_FLOAT8_E4M3, WEFT_BAND, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_iallreduce(b, b, 4, WEFT_FLOAT8_E5M2, WEFT_BXOR, comm,
                                  &req),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_reduce(b, b, 2, WEFT_FLOAT8_E5M2, WEFT_LOR, 0, comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_reduce_scatter(b, b, 1, WEFT_FLOAT8_E4M3, WEFT_LAND,
                                      comm),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_OK(weft_allreduce(b, b, 1, WEFT_FLOAT8_E4M3, WEFT_SUM, comm));
    ASSERT_EQ(b[0], 0x40); /* 1 + 1 = 2 */
    (void)rank;
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_fp8_bitwise_refused, 30)
{
    wf_test_log_capture();
    wf_test_run_threads(2, refused_rank, (void *)wf_test_unique("fp8bits"));
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "weft_allreduce: op band is not defined for "
                             "float8_e4m3 (bitwise and logical ops take "
                             "integer dtypes)");
    ASSERT_STR_CONTAINS(log, "op bxor is not defined for float8_e5m2");
    ASSERT_STR_CONTAINS(log, "weft_reduce: op lor is not defined for "
                             "float8_e5m2");
    ASSERT_STR_CONTAINS(log, "op land is not defined for float8_e4m3");
}
