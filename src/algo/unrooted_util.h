/*
 * unrooted_util.h - helpers shared by the unrooted collectives (allgather,
 * reduce-scatter, alltoall, barrier; allreduce for the trivial cases and
 * its ring neighbours): the trivial cases, cutting byte ranges into
 * messages, and tracking which step last wrote a range (whose writers a
 * read waits for, folded into three by deps.h).
 *
 * Cutting: a range [lo, hi) of some logical byte space is cut into pieces
 * at every multiple of the grid (the chunk size, rounded to whole
 * elements), at a set of break points (where the logical space stops
 * being contiguous in the real buffer), and at its own ends.  Both sides
 * of a message compute the pieces from the same inputs, so the pieces
 * (and their running tags) match without negotiation.  A range inside
 * another range is cut into pieces that each lie inside one piece of the
 * outer range, which is what makes the recursive halving's dependencies
 * exact.
 *
 * Tracing: algorithms that forward data they received (recursive
 * doubling, Bruck) send pieces that can span several received pieces; a
 * trace records (range, step) for every write and returns the steps a
 * later read of a range must wait for.
 */
#ifndef WF_ALGO_UNROOTED_UTIL_H
#define WF_ALGO_UNROOTED_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "algo/deps.h"

static inline int wf_unr_mod(int x, int n) { return ((x % n) + n) % n; }

/* For the cost model: the messages that send `runs` runs of the buffer
 * of `bytes` in all, each cut at a grid of `grid` bytes. */
static inline double wf_unr_runs_msgs(double runs, double bytes, double grid)
{
    return runs > 0 ? runs * wf_msgs(bytes / runs, grid) : 0;
}

/* The chunk size in bytes, a whole number of elements, at least one. */
static inline uint64_t wf_unr_grid(const wf_coll_args_t *a)
{
    uint64_t elems = a->chunk_bytes / a->elem_size;
    return (elems ? elems : 1) * a->elem_size;
}

/* One rank's block as the ring allgather, the ring reduce-scatter and the
 * pairwise alltoall move it: *block bytes, cut at the chunk grid (*grid
 * bytes, wf_unr_grid) into the chunks it returns the number of, every
 * one but the last a whole grid long. */
static inline uint64_t wf_unr_block_chunks(const wf_coll_args_t *a,
                                           uint64_t *block, uint64_t *grid)
{
    *block = (uint64_t)a->count * a->elem_size;
    *grid = wf_unr_grid(a);
    return (*block + *grid - 1) / *grid;
}

/* The cost terms of a ring that passes whole blocks on, in chunks of the
 * grid: the ring allgather's, to which the ring reduce-scatter adds a
 * reduction of everything it sends.  n - 1 rounds; every rank sends n - 1
 * blocks, its own (or its input) in the first step at once, the others
 * as they arrive. */
void wf_unr_ring_terms(const wf_coll_args_t *a, wf_cost_terms_t *t);

/*
 * The cases every unrooted collective (allreduce included) treats alike:
 * one rank (copy the block, or the vector, unless in place) and zero
 * elements on several ranks (one empty message to the right neighbour, so
 * a rank whose count differs is told: the signature carries the count).
 * True when the plan is complete; *st then says whether it was built.
 */
bool wf_unr_trivial(const wf_coll_args_t *a, wf_plan_t *plan,
                    weft_status_t *st);

/* Break points b0 + i * step for 0 <= i < nbreaks (none when 0). */
typedef struct {
    uint64_t grid;
    uint64_t b0, step;
    uint64_t nbreaks;
} wf_unr_cuts_t;

/* Iterates over the pieces of [lo, hi). */
typedef struct {
    const wf_unr_cuts_t *cuts;
    uint64_t pos, hi;
} wf_unr_iter_t;

static inline wf_unr_iter_t wf_unr_pieces(const wf_unr_cuts_t *cuts,
                                          uint64_t lo, uint64_t hi)
{
    wf_unr_iter_t it = {cuts, lo, hi};
    return it;
}

/* The next piece as [*start, *start + *len); false at the end. */
bool wf_unr_next(wf_unr_iter_t *it, uint64_t *start, uint64_t *len);

/*
 * Which step wrote which range: batches of pieces, each batch sorted by
 * position and free of overlaps (a new batch per round or per run).
 * Ranges in different batches may overlap only where the caller queries
 * one trace per generation (the recursive halving keeps one per round).
 */
typedef struct {
    uint64_t lo, hi;
    int32_t step;
} wf_unr_piece_t;

#define WF_UNR_MAX_BATCHES 160

typedef struct {
    wf_unr_piece_t *p;
    size_t n, cap;
    size_t start[WF_UNR_MAX_BATCHES + 1];
    int nbatch;
    bool failed;
} wf_unr_trace_t;

void wf_unr_trace_init(wf_unr_trace_t *t);
void wf_unr_trace_free(wf_unr_trace_t *t);
/* Empties the trace (keeps its memory). */
void wf_unr_trace_clear(wf_unr_trace_t *t);
/* Starts a new batch; later adds go there. */
void wf_unr_trace_batch(wf_unr_trace_t *t);
void wf_unr_trace_add(wf_unr_trace_t *t, uint64_t lo, uint64_t len,
                      int32_t step);
/* Adds every step that wrote part of [lo, lo + len) to *d. */
void wf_unr_trace_deps(const wf_unr_trace_t *t, uint64_t lo, uint64_t len,
                       wf_deps_t *d, wf_plan_t *plan, wf_bref_t anchor);

/*
 * The fold used by recursive doubling and halving on a size that is not a
 * power of two: p is the largest power of two <= size, e = size - p, and
 * rank p + i (i < e) hands its work to rank i.  Rank v < p then stands
 * for the blocks v and, when v < e, v + p.  In the "virtual" block order
 * 0, p, 1, p + 1, ..., e - 1, e - 1 + p, e, e + 1, ..., p - 1 the blocks
 * of any range of virtual ranks are contiguous; the first 2e virtual
 * blocks are not contiguous in the real buffer, so pieces break at each
 * of their boundaries.
 */
typedef struct {
    int n, p, e;
    uint64_t block; /* bytes */
} wf_unr_fold_t;

wf_unr_fold_t wf_unr_fold(const wf_coll_args_t *a);

/*
 * For the cost model: the messages all p ranks of fold f send in one
 * round where each sends an aligned group of d virtual ranks, `bytes` in
 * all.  A virtual rank v < e stands for blocks v and v + p, which breaks
 * the run in the buffer twice; the virtual ranks from e on are one run.
 * Every group is sent by d ranks.
 */
static inline double wf_unr_group_msgs(const wf_unr_fold_t *f, int d,
                                       double bytes, double grid)
{
    if (d <= 0) /* one rank: no round */
        return 0;
    double runs = 2.0 * f->e * d + f->p - (double)d * (f->e / d);
    return wf_unr_runs_msgs(runs, bytes, grid);
}

/* For the cost model: the pieces, cut at the chunk grid, of a run of
 * blocks that hold only the block at its start, none when the block is
 * smaller than a chunk (about floor(block / grid)). */
static inline double wf_unr_own_msgs(double block, double grid)
{
    return grid > 0 ? (double)(uint64_t)(block / grid) : 0;
}

/* First virtual block of virtual rank v (v <= p; v == p gives n). */
static inline uint64_t wf_unr_vstart(const wf_unr_fold_t *f, int v)
{
    return (uint64_t)v + (uint64_t)(v < f->e ? v : f->e);
}

/* The byte offset in the real buffer of virtual byte offset x. */
uint64_t wf_unr_vreal(const wf_unr_fold_t *f, uint64_t x);

/* Cuts for virtual byte ranges: the grid plus the non-contiguous
 * boundaries. */
wf_unr_cuts_t wf_unr_vcuts(const wf_unr_fold_t *f, uint64_t grid);

#endif /* WF_ALGO_UNROOTED_UTIL_H */
