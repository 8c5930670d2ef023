/*
 * coll_util.h - data patterns and independent expected values for
 * collective tests.  Inputs are small integers so results are exact in
 * every dtype (float16/bfloat16 included) regardless of reduction order;
 * the expected value is computed in int64/double and wrapped to the type.
 */
#ifndef WF_COLL_UTIL_H
#define WF_COLL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "weft.h"

size_t cu_dtype_size(weft_dtype_t d);
/* The input of `rank` at element i. */
double cu_pattern(int rank, size_t i, weft_op_t op, weft_dtype_t d);
void cu_put(void *buf, weft_dtype_t d, size_t i, double v);
double cu_get(const void *buf, weft_dtype_t d, size_t i);
/* Fills buf with rank's pattern. */
void cu_fill(void *buf, size_t count, int rank, weft_op_t op, weft_dtype_t d);
/* The allreduce of all ranks' patterns at element i, as the library
 * computes it (integer wrap, the avg division rounded like the library). */
double cu_expected_reduce(size_t i, int size, weft_op_t op, weft_dtype_t d);

/* The op whose pattern a collective's inputs use: its own when it
 * reduces, WEFT_SUM's otherwise.  `coll` is a wf_coll_t. */
weft_op_t cu_pattern_op(int coll, weft_op_t op);

/* The typed value of rank r's input element i. */
double cu_input(int coll, weft_op_t op, weft_dtype_t d, int r, size_t i);

/* The expected element i of rank r's receive buffer after collective
 * `coll` (a wf_coll_t) over `size` ranks with these arguments; false when
 * the collective leaves that element undefined on rank r. */
bool cu_expected(int coll, int size, size_t count, weft_dtype_t d,
                 weft_op_t op, int root, int r, size_t i, double *want);

/* One case of a collective matrix, for its failure messages: "allreduce
 * with algorithm ring on 4 ranks (rank 1): dtype float32, op sum, count
 * 1000, out of place"; the root for rooted collectives, "op -" for those
 * that do not reduce.  Returns buf. */
char *cu_case_name(char *buf, size_t len, int coll, const char *algo,
                   int rank, int size, weft_dtype_t d, weft_op_t op,
                   size_t count, int root, bool in_place);

/* The name of the algorithm `comm` runs for this call on this rank, as
 * the library chooses it (its WEFT_ALGO, else the cost model), "?" when it
 * cannot say: for the failure messages of calls that leave the choice to
 * the communicator. */
const char *cu_algo_of(weft_comm_t comm, int coll, size_t count,
                       weft_dtype_t d, weft_op_t op, int root, bool in_place);

/* Number of the first `elems` elements of rank r's receive buffer `recv`
 * that differ from cu_expected's after collective `coll`; prints the first
 * few differences after `what` (cu_case_name's). */
size_t cu_check_coll(int coll, int size, size_t count, weft_dtype_t d,
                     weft_op_t op, int root, int r, const void *recv,
                     size_t elems, const char *what);

/* Number of elements of recv that differ from the allreduce of all ranks'
 * patterns; prints the first few differences. */
size_t cu_check_allreduce(const void *recv, size_t count, int size,
                          weft_op_t op, weft_dtype_t d, const char *what);

/* Runs the allreduce matrix (counts x dtypes x ops x in/out-of-place) on
 * comm; `big` adds the multi-MB odd count for a subset of combinations.
 * chunk_bytes is the communicator's WEFT_CHUNK_SIZE (for chunk+-1 counts). */
void cu_allreduce_matrix(weft_comm_t comm, int rank, int size,
                         size_t chunk_bytes, int big);

#endif /* WF_COLL_UTIL_H */
