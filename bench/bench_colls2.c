/*
 * bench_colls2.c - broadcast, reduce, allgather, reducescatter, alltoall,
 * gather, scatter and barrier for weft-bench, with independent checks.
 *
 * Sizes follow nccl-tests: a row's size is the larger buffer, so for
 * allgather, reducescatter and alltoall it is the whole gathered /
 * scattered buffer and the call's count is that divided by the number of
 * ranks.  Copies use the "no reduction" pattern with a global element
 * index, so a block that lands at the wrong offset is counted wrong.
 */
#include <string.h>

#include "bench.h"

#define NO_OP WEFT_OP_COUNT

static char *at(const bench_ctx_t *c, const void *buf, size_t elems)
{
    return (char *)buf + elems * bench_dtype_size(c->o->dtype);
}

/* count = total / ranks (at least 1); small buffer = count, large one =
 * count * ranks.  gathered: recv is the large one, else send is. */
static void split_sizes(const bench_ctx_t *c, size_t total, bool gathered,
                        size_t *count, size_t *send, size_t *recv)
{
    size_t per = total / (size_t)c->size ? total / (size_t)c->size : 1;
    *count = per;
    *send = gathered ? per : per * (size_t)c->size;
    *recv = gathered ? per * (size_t)c->size : per;
}

static void gather_sizes(const bench_ctx_t *c, size_t total, size_t *count,
                         size_t *send, size_t *recv)
{
    split_sizes(c, total, true, count, send, recv);
}

static void scatter_sizes(const bench_ctx_t *c, size_t total, size_t *count,
                          size_t *send, size_t *recv)
{
    split_sizes(c, total, false, count, send, recv);
}

/* alltoall: both buffers hold `total`, count is per peer. */
static void a2a_sizes(const bench_ctx_t *c, size_t total, size_t *count,
                      size_t *send, size_t *recv)
{
    split_sizes(c, total, false, count, send, recv);
    *recv = *send;
}

/* In place, NCCL style: my block of the large buffer is the small one. */
static void gather_in_place(const bench_ctx_t *c, char *buf, size_t count,
                            void **send, void **recv)
{
    *recv = buf;
    *send = at(c, buf, (size_t)c->rank * count);
}

static void scatter_in_place(const bench_ctx_t *c, char *buf, size_t count,
                             void **send, void **recv)
{
    *send = buf;
    *recv = at(c, buf, (size_t)c->rank * count);
}

/* ---- broadcast / reduce -------------------------------------------------- */

static weft_status_t bcast_run(const bench_ctx_t *c, void *send, void *recv,
                               size_t count)
{
    return weft_broadcast(send, recv, count, c->o->dtype, c->o->root,
                          c->comm);
}

/* Every rank fills its own pattern: only the root's may arrive. */
static void copy_fill(const bench_ctx_t *c, void *send, size_t count)
{
    bench_fill_pattern(c, send, count, c->rank, 0, NO_OP);
}

static size_t bcast_check(const bench_ctx_t *c, const void *recv,
                          size_t count)
{
    return bench_count_wrong(c, recv, count, c->o->root, 0, NO_OP);
}

static weft_status_t reduce_run(const bench_ctx_t *c, void *send, void *recv,
                                size_t count)
{
    return weft_reduce(send, recv, count, c->o->dtype, c->o->op, c->o->root,
                       c->comm);
}

static void op_fill(const bench_ctx_t *c, void *send, size_t count)
{
    bench_fill_pattern(c, send, count, c->rank, 0, c->o->op);
}

/* Expected reductions of elements first .. first+count-1. */
static size_t reduced_wrong(const bench_ctx_t *c, const void *recv,
                            size_t count, size_t first)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++)
        if (bench_get(recv, c->o->dtype, i) !=
            bench_reduce_expect(c, first + i))
            wrong++;
    return wrong;
}

static size_t reduce_check(const bench_ctx_t *c, const void *recv,
                           size_t count)
{
    return c->rank == c->o->root ? reduced_wrong(c, recv, count, 0) : 0;
}

/* ---- allgather / gather -------------------------------------------------- */

static weft_status_t allgather_run(const bench_ctx_t *c, void *send,
                                   void *recv, size_t count)
{
    return weft_allgather(send, recv, count, c->o->dtype, c->comm);
}

static weft_status_t gather_run(const bench_ctx_t *c, void *send, void *recv,
                                size_t count)
{
    return weft_gather(send, recv, count, c->o->dtype, c->o->root, c->comm);
}

/* Rank r contributes elements r*count .. of the gathered buffer. */
static void gather_fill(const bench_ctx_t *c, void *send, size_t count)
{
    bench_fill_pattern(c, send, count, c->rank, (size_t)c->rank * count,
                       NO_OP);
}

static size_t gathered_wrong(const bench_ctx_t *c, const void *recv,
                             size_t count)
{
    size_t wrong = 0;
    for (int r = 0; r < c->size; r++)
        wrong += bench_count_wrong(c, at(c, recv, (size_t)r * count), count,
                                   r, (size_t)r * count, NO_OP);
    return wrong;
}

static size_t gather_check(const bench_ctx_t *c, const void *recv,
                           size_t count)
{
    return c->rank == c->o->root ? gathered_wrong(c, recv, count) : 0;
}

/* ---- reducescatter / scatter --------------------------------------------- */

static weft_status_t rs_run(const bench_ctx_t *c, void *send, void *recv,
                            size_t count)
{
    return weft_reduce_scatter(send, recv, count, c->o->dtype, c->o->op,
                               c->comm);
}

static void rs_fill(const bench_ctx_t *c, void *send, size_t count)
{
    op_fill(c, send, count * (size_t)c->size);
}

static size_t rs_check(const bench_ctx_t *c, const void *recv, size_t count)
{
    return reduced_wrong(c, recv, count, (size_t)c->rank * count);
}

static weft_status_t scatter_run(const bench_ctx_t *c, void *send,
                                 void *recv, size_t count)
{
    return weft_scatter(send, recv, count, c->o->dtype, c->o->root, c->comm);
}

static void scatter_fill(const bench_ctx_t *c, void *send, size_t count)
{
    copy_fill(c, send, count * (size_t)c->size);
}

static size_t scatter_check(const bench_ctx_t *c, const void *recv,
                            size_t count)
{
    return bench_count_wrong(c, recv, count, c->o->root,
                             (size_t)c->rank * count, NO_OP);
}

/* ---- alltoall ------------------------------------------------------------ */

static weft_status_t a2a_run(const bench_ctx_t *c, void *send, void *recv,
                             size_t count)
{
    return weft_alltoall(send, recv, count, c->o->dtype, c->comm);
}

/* Block p of rank r holds r's pattern at p*count..: the receiver p then
 * finds sender r's block at offset r*count with r's pattern from
 * p*count. */
static void a2a_fill(const bench_ctx_t *c, void *send, size_t count)
{
    copy_fill(c, send, count * (size_t)c->size);
}

static size_t a2a_check(const bench_ctx_t *c, const void *recv, size_t count)
{
    size_t wrong = 0;
    for (int r = 0; r < c->size; r++)
        wrong += bench_count_wrong(c, at(c, recv, (size_t)r * count), count,
                                   r, (size_t)c->rank * count, NO_OP);
    return wrong;
}

/* ---- barrier ------------------------------------------------------------- */

static weft_status_t barrier_run(const bench_ctx_t *c, void *send, void *recv,
                                 size_t count)
{
    (void)send, (void)recv, (void)count;
    return weft_barrier(c->comm);
}

static void no_fill(const bench_ctx_t *c, void *send, size_t count)
{
    (void)c, (void)send, (void)count;
}

static size_t no_check(const bench_ctx_t *c, const void *recv, size_t count)
{
    (void)c, (void)recv, (void)count;
    return 0;
}

static double no_factor(const bench_ctx_t *c)
{
    (void)c;
    return 0.0;
}

static const bench_coll_t colls[] = {
    {.name = "broadcast", .bus_factor = bench_factor_one, .min_ranks = 1,
     .has_in_place = true, .rooted = true, .run = bcast_run,
     .fill = copy_fill, .check = bcast_check},
    {.name = "reduce", .bus_factor = bench_factor_one, .min_ranks = 1,
     .has_in_place = true, .reduces = true, .rooted = true,
     .run = reduce_run, .fill = op_fill, .check = reduce_check},
    {.name = "allgather", .bus_factor = bench_factor_n1n, .min_ranks = 1,
     .has_in_place = true, .sizes = gather_sizes,
     .in_place = gather_in_place, .run = allgather_run,
     .fill = gather_fill, .check = gathered_wrong},
    {.name = "reducescatter", .bus_factor = bench_factor_n1n,
     .min_ranks = 1, .has_in_place = true, .reduces = true,
     .sizes = scatter_sizes, .in_place = scatter_in_place, .run = rs_run,
     .fill = rs_fill, .check = rs_check},
    {.name = "alltoall", .bus_factor = bench_factor_n1n, .min_ranks = 1,
     .has_in_place = true, .sizes = a2a_sizes, .run = a2a_run,
     .fill = a2a_fill, .check = a2a_check},
    {.name = "gather", .bus_factor = bench_factor_n1n, .min_ranks = 1,
     .has_in_place = true, .rooted = true, .sizes = gather_sizes,
     .in_place = gather_in_place, .run = gather_run, .fill = gather_fill,
     .check = gather_check},
    {.name = "scatter", .bus_factor = bench_factor_n1n, .min_ranks = 1,
     .has_in_place = true, .rooted = true, .sizes = scatter_sizes,
     .in_place = scatter_in_place, .run = scatter_run,
     .fill = scatter_fill, .check = scatter_check},
    {.name = "barrier", .bus_factor = no_factor, .min_ranks = 1,
     .sizeless = true, .run = barrier_run, .fill = no_fill,
     .check = no_check},
};

const bench_coll_t *bench_colls2_find(const char *name)
{
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (strcmp(colls[i].name, name) == 0)
            return &colls[i];
    return NULL;
}
