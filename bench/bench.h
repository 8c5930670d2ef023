/*
 * bench.h - weft-bench internals: options and per-collective descriptors.
 * The benchmark uses only the public API in weft.h.
 */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

typedef struct {
    const char *coll;
    int nranks;        /* -n: start this many local ranks */
    size_t min_bytes, max_bytes;
    double factor;     /* -f */
    int warmup, iters; /* -w, -r */
    weft_dtype_t dtype;
    weft_op_t op;
    const char *algo;
    const char *transport;
    bool check;
    int root;
} bench_opts_t;

typedef struct {
    weft_comm_t comm;
    int rank, size;
    const bench_opts_t *o;
} bench_ctx_t;

/* One collective: how to run it and how to check it. */
typedef struct {
    const char *name;
    /* busbw = algbw * factor(n) */
    double (*bus_factor)(int n);
    int min_ranks;
    bool has_in_place;
    bool reduces; /* prints the op in the redop column, else "none" */
    /* Fills buffers for a check; returns the status of one operation. */
    weft_status_t (*run)(const bench_ctx_t *c, void *send, void *recv,
                         size_t count);
    /* Puts rank-specific input in send (and recv for in-place). */
    void (*fill)(const bench_ctx_t *c, void *send, size_t count);
    /* Counts wrong elements of recv against the expected result. */
    size_t (*check)(const bench_ctx_t *c, const void *recv, size_t count);
} bench_coll_t;

const bench_coll_t *bench_coll_find(const char *name);
size_t bench_dtype_size(weft_dtype_t dtype);
const char *bench_dtype_name(weft_dtype_t dtype);
const char *bench_op_name(weft_op_t op);
bool bench_parse_dtype(const char *s, weft_dtype_t *dtype);
bool bench_parse_op(const char *s, weft_op_t *op);

#endif /* WEFT_BENCH_H */
