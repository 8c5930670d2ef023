/*
 * coll_util.c - see coll_util.h.
 */
#include "coll_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "comm.h"
#include "fp8_ref.h"
#include "reduce/reduce.h"
#include "test.h"

size_t cu_dtype_size(weft_dtype_t d)
{
    static const size_t sizes[WEFT_DTYPE_COUNT] = {
        [WEFT_INT8] = 1,    [WEFT_UINT8] = 1,    [WEFT_INT16] = 2,
        [WEFT_UINT16] = 2,  [WEFT_INT32] = 4,    [WEFT_UINT32] = 4,
        [WEFT_INT64] = 8,   [WEFT_UINT64] = 8,   [WEFT_FLOAT16] = 2,
        [WEFT_BFLOAT16] = 2, [WEFT_FLOAT32] = 4, [WEFT_FLOAT64] = 8,
        [WEFT_FLOAT8_E4M3] = 1, [WEFT_FLOAT8_E5M2] = 1};
    return (unsigned)d < WEFT_DTYPE_COUNT ? sizes[d] : 0;
}

/* The bitwise and logical ops' inputs, the same in every integer dtype
 * once wrapped: band all ones but one bit (and some all-ones and zeros),
 * bor one bit (and some all-ones), bxor mixed signs, land mostly true,
 * lor mostly false; -128 is a true value whose low byte is the sign bit
 * alone. */
static double bits_pattern(int rank, size_t i, weft_op_t op)
{
    size_t r = (size_t)rank, bit = (i + r * 3) % 7;
    switch (op) {
    case WEFT_BAND:
        return (i + r) % 13 == 0 ? 0 : i % 11 == 5 ? -1 : -1 - (1 << bit);
    case WEFT_BOR: return (i * 5 + r) % 17 == 0 ? -1 : 1 << bit;
    case WEFT_BXOR: return (double)((i * 7 + r * 13) % 61) - 30;
    case WEFT_LAND: return (i * 3 + r * 7) % 9 == 4 ? 0 : i % 2 ? -128 : 3;
    default: return (i + r * 5) % 7 == 0 ? (i % 2 ? -128 : 2) : 0;
    }
}

static bool is_fp8(weft_dtype_t d)
{
    return d == WEFT_FLOAT8_E4M3 || d == WEFT_FLOAT8_E5M2;
}

double cu_pattern(int rank, size_t i, weft_op_t op, weft_dtype_t d)
{
    bool is_unsigned = d == WEFT_UINT8 || d == WEFT_UINT16 ||
                       d == WEFT_UINT32 || d == WEFT_UINT64;
    if (op >= WEFT_BAND)
        return bits_pattern(rank, i, op);
    /* fp8 holds every integer up to 8 (e5m2) or 16 (e4m3) exactly, no
     * more: sums of -1, 0 and 1 stay exact on up to 8 ranks in any order.
     * The product and min/max patterns below are exact as they are. */
    if (is_fp8(d) && (op == WEFT_SUM || op == WEFT_AVG))
        return (double)((i + (size_t)rank * 5) % 3) - 1;
    switch (op) {
    case WEFT_PROD: return ((i * 3 + (size_t)rank) % 7 == 0) ? 2 : (i % 5 == 1 ? -1 : 1);
    case WEFT_MIN:
    case WEFT_MAX:
        return (double)(((size_t)rank * 7 + i * 3) % 11) - (is_unsigned ? 0 : 5);
    case WEFT_AVG: return (double)((i % 4) * 2 + (size_t)rank % 2);
    default: return (double)((i + (size_t)rank * 5) % 9) - (is_unsigned ? 0 : 3);
    }
}

void cu_put(void *buf, weft_dtype_t d, size_t i, double v)
{
    float f = (float)v;
    _Float16 h = (_Float16)v;
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
    case WEFT_FLOAT16: memcpy((uint16_t *)buf + i, &h, 2); break;
    case WEFT_BFLOAT16:
        /* Round to nearest even, independently of the library. */
        memcpy(&bits, &f, 4);
        bits += 0x7fff + ((bits >> 16) & 1);
        ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
        break;
    case WEFT_FLOAT32: ((float *)buf)[i] = f; break;
    case WEFT_FLOAT8_E4M3:
        ((uint8_t *)buf)[i] = ref_f8_round(v, REF_E4M3);
        break;
    case WEFT_FLOAT8_E5M2:
        ((uint8_t *)buf)[i] = ref_f8_round(v, REF_E5M2);
        break;
    default: ((double *)buf)[i] = v; break;
    }
}

double cu_get(const void *buf, weft_dtype_t d, size_t i)
{
    uint32_t bits;
    float f;
    _Float16 h;
    switch (d) {
    case WEFT_INT8: return ((const int8_t *)buf)[i];
    case WEFT_UINT8: return ((const uint8_t *)buf)[i];
    case WEFT_INT16: return ((const int16_t *)buf)[i];
    case WEFT_UINT16: return ((const uint16_t *)buf)[i];
    case WEFT_INT32: return ((const int32_t *)buf)[i];
    case WEFT_UINT32: return ((const uint32_t *)buf)[i];
    case WEFT_INT64: return (double)((const int64_t *)buf)[i];
    case WEFT_UINT64: return (double)((const uint64_t *)buf)[i];
    case WEFT_FLOAT16: memcpy(&h, (const uint16_t *)buf + i, 2); return h;
    case WEFT_BFLOAT16:
        bits = (uint32_t)((const uint16_t *)buf)[i] << 16;
        memcpy(&f, &bits, 4);
        return f;
    case WEFT_FLOAT32: return ((const float *)buf)[i];
    case WEFT_FLOAT8_E4M3:
        return ref_f8_value(((const uint8_t *)buf)[i], REF_E4M3);
    case WEFT_FLOAT8_E5M2:
        return ref_f8_value(((const uint8_t *)buf)[i], REF_E5M2);
    default: return ((const double *)buf)[i];
    }
}

void cu_fill(void *buf, size_t count, int rank, weft_op_t op, weft_dtype_t d)
{
    for (size_t i = 0; i < count; i++)
        cu_put(buf, d, i, cu_pattern(rank, i, op, d));
}

static bool is_int(weft_dtype_t d)
{
    return d != WEFT_FLOAT16 && d != WEFT_BFLOAT16 && d != WEFT_FLOAT32 &&
           d != WEFT_FLOAT64 && !is_fp8(d);
}

/* The value as the dtype holds it (wrapped). */
static double stored(weft_dtype_t d, double v)
{
    char tmp[8];
    cu_put(tmp, d, 0, v);
    return cu_get(tmp, d, 0);
}

/* The expected element: exact integer arithmetic (the bitwise ops on the
 * int64 two's complement, whose low bits are the narrow type's; the
 * logical ops on the values as the dtype holds them, so that one rank's
 * input comes back unchanged, as in MPI), then the library's final avg
 * division (C division for integers, float/double/half rounding). */
double cu_expected_reduce(size_t i, int size, weft_op_t op, weft_dtype_t d)
{
    int64_t acc = (int64_t)cu_pattern(0, i, op, d);
    if ((op == WEFT_LAND || op == WEFT_LOR) && stored(d, (double)acc) == 0)
        acc = 0; /* false as the dtype holds it (a multiple of 256, say) */
    for (int r = 1; r < size; r++) {
        int64_t v = (int64_t)cu_pattern(r, i, op, d);
        bool truth = stored(d, (double)v) != 0;
        acc = op == WEFT_PROD   ? acc * v
              : op == WEFT_MIN  ? (v < acc ? v : acc)
              : op == WEFT_MAX  ? (v > acc ? v : acc)
              : op == WEFT_BAND ? (acc & v)
              : op == WEFT_BOR  ? (acc | v)
              : op == WEFT_BXOR ? (acc ^ v)
              : op == WEFT_LAND ? (acc && truth)
              : op == WEFT_LOR  ? (acc || truth)
                                : acc + v;
    }
    char tmp[8];
    cu_put(tmp, d, 0, (double)acc); /* wraps integers like the library */
    double wrapped = cu_get(tmp, d, 0);
    if (op != WEFT_AVG)
        return wrapped;
    if (is_int(d)) {
        /* The sum wraps in the type first, then divides. */
        if (d == WEFT_UINT8 || d == WEFT_UINT16 || d == WEFT_UINT32 ||
            d == WEFT_UINT64)
            return (double)((uint64_t)wrapped / (uint64_t)size);
        return (double)((int64_t)wrapped / size);
    }
    if (d == WEFT_FLOAT64)
        return wrapped / size;
    cu_put(tmp, d, 0, (double)((float)wrapped / (float)size));
    return cu_get(tmp, d, 0);
}

weft_op_t cu_pattern_op(int coll, weft_op_t op)
{
    return wf_coll_reduces((wf_coll_t)coll) ? op : WEFT_SUM;
}

double cu_input(int coll, weft_op_t op, weft_dtype_t d, int r, size_t i)
{
    char tmp[8];
    cu_put(tmp, d, 0, cu_pattern(r, i, cu_pattern_op(coll, op), d));
    return cu_get(tmp, d, 0);
}

bool cu_expected(int coll, int size, size_t count, weft_dtype_t d,
                 weft_op_t op, int root, int r, size_t i, double *want)
{
    size_t n = count, blk = n ? i / n : 0, off = n ? i % n : 0;
    switch ((wf_coll_t)coll) {
    case WF_COLL_ALLREDUCE:
        *want = cu_expected_reduce(i, size, op, d);
        return true;
    case WF_COLL_REDUCE:
        *want = cu_expected_reduce(i, size, op, d);
        return r == root;
    case WF_COLL_BROADCAST: *want = cu_input(coll, op, d, root, i); return true;
    case WF_COLL_ALLGATHER:
        *want = cu_input(coll, op, d, (int)blk, off);
        return true;
    case WF_COLL_GATHER:
        *want = cu_input(coll, op, d, (int)blk, off);
        return r == root;
    case WF_COLL_REDUCE_SCATTER:
        *want = cu_expected_reduce((size_t)r * n + i, size, op, d);
        return true;
    case WF_COLL_ALLTOALL:
        *want = cu_input(coll, op, d, (int)blk, (size_t)r * n + off);
        return true;
    case WF_COLL_SCATTER:
        *want = cu_input(coll, op, d, root, (size_t)r * n + i);
        return true;
    default: return false;
    }
}

static bool is_rooted(int coll)
{
    return coll == WF_COLL_BROADCAST || coll == WF_COLL_REDUCE ||
           coll == WF_COLL_GATHER || coll == WF_COLL_SCATTER;
}

char *cu_case_name(char *buf, size_t len, int coll, const char *algo,
                   int rank, int size, weft_dtype_t d, weft_op_t op,
                   size_t count, int root, bool in_place)
{
    char at[32] = "";
    if (is_rooted(coll))
        snprintf(at, sizeof(at), ", root %d", root);
    snprintf(buf, len, "%s with algorithm %s on %d ranks (rank %d): dtype "
             "%s, op %s, count %zu%s, %s", wf_coll_name((wf_coll_t)coll),
             algo, size, rank, wf_dtype_name(d),
             wf_coll_reduces((wf_coll_t)coll) ? wf_op_name(op) : "-", count,
             at, in_place ? "in place" : "out of place");
    return buf;
}

const char *cu_algo_of(weft_comm_t comm, int coll, size_t count,
                       weft_dtype_t d, weft_op_t op, int root, bool in_place)
{
    /* The call's arguments as src/api.c fills them for the plan cache. */
    const wf_comm_impl_t *c = comm ? comm->impl : NULL;
    const wf_algo_t *algo = NULL;
    if (!c)
        return "?";
    wf_coll_args_t a = {.coll = (wf_coll_t)coll, .count = count, .dtype = d,
                        .op = wf_coll_reduces((wf_coll_t)coll) ? op : WEFT_SUM,
                        .elem_size = cu_dtype_size(d), .peer = -1,
                        .root = root, .rank = c->rank, .size = c->size,
                        .chunk_bytes = (size_t)c->cfg.chunk_size,
                        .in_place = in_place, .local_size = c->local_size,
                        .host_cores = c->host_cores,
                        .link_mbps = (int)c->cfg.link_mbps,
                        .single_copy_min = c->single_copy_min};
    return wf_algo_select(&a, c->cfg.algo, &algo) == WEFT_OK ? algo->name
                                                             : "?";
}

size_t cu_check_coll(int coll, int size, size_t count, weft_dtype_t d,
                     weft_op_t op, int root, int r, const void *recv,
                     size_t elems, const char *what)
{
    size_t wrong = 0;
    for (size_t i = 0; i < elems; i++) {
        double want, got = cu_get(recv, d, i);
        if (!cu_expected(coll, size, count, d, op, root, r, i, &want) ||
            got == want)
            continue;
        if (wrong++ < 3)
            fprintf(stderr, "%s: element %zu is %g, expected %g\n", what, i,
                    got, want);
    }
    return wrong;
}

size_t cu_check_allreduce(const void *recv, size_t count, int size,
                          weft_op_t op, weft_dtype_t d, const char *what)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        double want = cu_expected_reduce(i, size, op, d), got = cu_get(recv, d, i);
        if (got != want && !(isnan(got) && isnan(want))) {
            if (wrong < 3)
                fprintf(stderr, "%s: element %zu is %g, expected %g\n", what,
                        i, got, want);
            wrong++;
        }
    }
    return wrong;
}

static void one_case(weft_comm_t comm, int rank, int size, size_t count,
                     weft_dtype_t d, weft_op_t op, bool in_place, char *send,
                     char *recv)
{
    char what[200];
    size_t bytes = count * cu_dtype_size(d);
    cu_fill(send, count, rank, op, d);
    if (!in_place)
        memset(recv, 0x5a, bytes);
    weft_status_t st = weft_allreduce(send, in_place ? send : recv, count, d,
                                      op, comm);
    /* The algorithm is the communicator's choice: named after the call. */
    cu_case_name(what, sizeof(what), WF_COLL_ALLREDUCE,
                 cu_algo_of(comm, WF_COLL_ALLREDUCE, count, d, op, 0,
                            in_place),
                 rank, size, d, op, count, 0, in_place);
    if (st != WEFT_OK) {
        const char *msg = NULL;
        weft_comm_get_error(comm, &msg);
        wf_test_fail(__FILE__, __LINE__, "%s: %s (%s)", what,
                     weft_strerror(st), msg ? msg : "");
    }
    size_t wrong = cu_check_allreduce(in_place ? send : recv, count, size, op,
                                      d, what);
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong elements", what,
                     wrong);
}

/* A pair with no reduction (a bitwise or logical op on floats) is refused
 * by every rank before anything is sent (its message: test_bit_ops.c). */
static void refused_case(weft_comm_t comm, weft_dtype_t d, weft_op_t op,
                         char *buf)
{
    ASSERT_STATUS(weft_allreduce(buf, buf, 1, d, op, comm),
                  WEFT_ERR_INVALID_ARG);
}

void cu_allreduce_matrix(weft_comm_t comm, int rank, int size,
                         size_t chunk_bytes, int big)
{
    size_t big_count = big ? (3u << 20) / 2 + 7 : 0; /* odd, ~6 MB f32 */
    size_t max_count = WF_TEST_MAX(big_count, 4 * chunk_bytes + 64);
    size_t bytes = (max_count * 8 + 63) / 64 * 64; /* a multiple of 64 */
    char *send = aligned_alloc(64, bytes);
    char *recv = aligned_alloc(64, bytes);
    ASSERT_TRUE(send && recv);
    for (int d = 0; d < WEFT_DTYPE_COUNT; d++) {
        size_t ce = chunk_bytes / cu_dtype_size((weft_dtype_t)d);
        size_t counts[] = {1, 1000, ce * (size_t)size + 1, 0,
                           (size_t)size - 1, ce - 1, ce + 1};
        for (int op = 0; op < WEFT_OP_COUNT; op++) {
            if (!wf_op_defined((weft_dtype_t)d, (weft_op_t)op)) {
                refused_case(comm, (weft_dtype_t)d, (weft_op_t)op, send);
                continue;
            }
            /* The algorithms treat every op alike (bar avg's divide): the
             * bitwise and logical ops take the first three counts only. */
            size_t nk = op >= WEFT_BAND ? 3 : sizeof(counts) / sizeof(*counts);
            for (size_t k = 0; k < nk; k++)
                for (int ip = 0; ip < 2; ip++)
                    one_case(comm, rank, size, counts[k], (weft_dtype_t)d,
                             (weft_op_t)op, ip, send, recv);
        }
    }
    if (big) { /* the multi-MB count for a few representative combinations */
        one_case(comm, rank, size, big_count, WEFT_FLOAT32, WEFT_SUM, false,
                 send, recv);
        one_case(comm, rank, size, big_count, WEFT_BFLOAT16, WEFT_AVG, true,
                 send, recv);
        one_case(comm, rank, size, big_count, WEFT_INT64, WEFT_MAX, false,
                 send, recv);
        one_case(comm, rank, size, big_count, WEFT_UINT8, WEFT_PROD, true,
                 send, recv);
    }
    free(send);
    free(recv);
}
