/*
 * bench_run.c - the timing loop of weft-bench: for each size, a checked
 * run, warm-up, then every timed iteration clocked on its own so the
 * report can give p50/p99 of the per-iteration maximum over ranks.  With
 * --sync a barrier (not timed) precedes every iteration, so a rooted
 * collective cannot start the next call while the last one is still
 * travelling down the tree.
 *
 * With --algos the same loop times several algorithms at once, each on its
 * own communicator (c->runs, bench_algos.c): iteration i calls every
 * algorithm in turn, in a shuffled order, so a slow spell of the machine
 * falls on all of them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

typedef struct {
    char *send, *recv; /* each `cap` bytes, 64-byte aligned */
    size_t cap;
    double *times;     /* per-iteration times of this rank (us), iters of
                        * each run one after the other */
} bench_bufs_t;

/* What the timed calls go to: c->runs with --algos, else c itself. */
static const bench_ctx_t *runs(const bench_ctx_t *c, int *n)
{
    *n = c->runs ? c->nruns : 1;
    return c->runs ? c->runs : c;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void die(const bench_ctx_t *c, const char *what, weft_status_t st)
{
    const char *msg = NULL;
    bench_progress_clear();
    if (c->comm)
        weft_comm_get_error(c->comm, &msg);
    fprintf(stderr, "weft-bench: rank %d: %s failed: %s%s%s\n", c->rank, what,
            weft_strerror(st), msg ? ": " : "", msg ? msg : "");
    exit(1);
}

static void run_once(const bench_ctx_t *c, void *send, void *recv,
                     size_t count)
{
    weft_status_t st = c->coll->run(c, send, recv, count);
    if (st != WEFT_OK)
        die(c, c->coll->name, st);
}

/* The call's count and the buffer lengths (elements) for a row of
 * `total` elements. */
static void row_sizes(const bench_ctx_t *c, size_t total, size_t *count,
                      size_t *send, size_t *recv)
{
    if (c->coll->sizes)
        c->coll->sizes(c, total, count, send, recv);
    else
        *count = *send = *recv = total;
}

/* The row's size in bytes (NCCL's convention: the larger buffer). */
static size_t row_bytes(const bench_ctx_t *c, size_t total)
{
    size_t count, ns, nr;
    row_sizes(c, total, &count, &ns, &nr);
    return (ns > nr ? ns : nr) * bench_dtype_size(c->o->dtype);
}

/* The most iterations --loop-bytes makes of one size: every iteration's
 * time is kept, 8 bytes per algorithm. */
#define BENCH_MAX_LOOP_ITERS (1 << 24)

/* Timed iterations of a row of `bytes`: -r, or more where --loop-bytes
 * asks for a longer loop. */
static int row_iters(const bench_opts_t *o, size_t bytes)
{
    if (!o->loop_bytes || !bytes)
        return o->iters;
    size_t n = (o->loop_bytes + bytes - 1) / bytes;
    n = n < BENCH_MAX_LOOP_ITERS ? n : BENCH_MAX_LOOP_ITERS;
    return n > (size_t)o->iters ? (int)n : o->iters;
}

/* --corrupt-for-test: flip the lowest bit of the first element on the
 * rank whose result is checked (the root, else rank 1), as a broken
 * library would. */
static void corrupt(const bench_ctx_t *c, void *recv, size_t count)
{
    int target = c->coll->rooted ? c->o->root : c->size > 1 ? 1 : 0;
    if (c->o->corrupt && c->rank == target && count > 0)
        *(unsigned char *)recv ^= 1;
}

/* One untimed run on fresh inputs; returns this rank's wrong elements.
 * Without the check the inputs are still written, once: an input buffer
 * nobody wrote maps every page to the kernel's one zero page, so the
 * timed runs would read 4 KiB over and over from the core's cache instead
 * of the message from memory (a 16 MiB reduce on 2 ranks looked 1.5x
 * faster that way, and its best algorithm changed). */
static int64_t checked_run(const bench_ctx_t *c, void *send, void *recv,
                           bool in_place, size_t count, size_t recv_bytes)
{
    c->coll->fill(c, send, count);
    if (!c->o->check)
        return 0;
    if (!in_place)
        memset(recv, 0, recv_bytes);
    run_once(c, send, recv, count);
    corrupt(c, recv, count);
    return (int64_t)c->coll->check(c, recv, count);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of n sorted values. */
static double percentile(const double *sorted, int n, double q)
{
    int idx = (int)ceil(q * n) - 1;
    return sorted[idx < 0 ? 0 : idx >= n ? n - 1 : idx];
}

/* The order in which iteration i calls the runs: a shuffle that every
 * rank computes alike from i (the calls must match across ranks), so that
 * each algorithm follows each other one about equally often and no
 * algorithm always pays for what the same predecessor left behind. */
static void turn_order(int i, int n, int *order)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
    for (int k = 0; k < n; k++)
        order[k] = k;
    for (int k = n - 1; k > 0; k--) {
        x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29;
        int j = (int)(x % (uint64_t)(k + 1));
        int t = order[k];
        order[k] = order[j], order[j] = t;
    }
}

/* Reduces this rank's results of one run (times: its iterations) over
 * the ranks into *res (per message, maximum over ranks). */
static void collect(const bench_ctx_t *c, const bench_ctx_t *run,
                    double *times, int iters, double total, int64_t bad,
                    bench_result_t *res)
{
    weft_status_t st;
    if ((st = weft_allreduce(&total, &total, 1, WEFT_FLOAT64, WEFT_MAX,
                             c->comm)) != WEFT_OK ||
        (st = weft_allreduce(times, times, (size_t)iters, WEFT_FLOAT64,
                             WEFT_MAX, c->comm)) != WEFT_OK ||
        (st = weft_allreduce(&bad, &bad, 1, WEFT_INT64, WEFT_SUM, c->comm)))
        die(c, "result reduction", st);
    double msgs = run->coll->msgs_per_iter ? run->coll->msgs_per_iter(run)
                                           : 1;
    qsort(times, (size_t)iters, sizeof(double), cmp_double);
    res->time_us = total / iters / msgs;
    res->p50_us = percentile(times, iters, 0.50) / msgs;
    res->p99_us = percentile(times, iters, 0.99) / msgs;
    res->wrong = (long)bad;
}

/* Times one variant of every run into res[k] (per message, maximum over
 * ranks). */
static void run_variant(const bench_ctx_t *c, bench_bufs_t *b, void *send,
                        void *recv, bool in_place, size_t count,
                        size_t recv_bytes, int iters, const char *label,
                        bench_result_t *res)
{
    int nrun;
    const bench_ctx_t *run = runs(c, &nrun);
    int64_t bad[BENCH_MAX_ALGOS] = {0};
    double total[BENCH_MAX_ALGOS] = {0};
    for (int k = 0; k < nrun; k++) {
        bad[k] = checked_run(&run[k], send, recv, in_place, count,
                             recv_bytes);
        for (int i = 0; i < c->o->warmup; i++) {
            bench_progress(c, "%s: warm-up %d/%d", label, i + 1,
                           c->o->warmup);
            run_once(&run[k], send, recv, count);
        }
    }
    int32_t token = 0;
    weft_status_t st = weft_allreduce(&token, &token, 1, WEFT_INT32,
                                      WEFT_SUM, c->comm);
    if (st != WEFT_OK)
        die(c, "barrier", st);
    double t = now_us();
    for (int i = 0; i < iters; i++) {
        int order[BENCH_MAX_ALGOS];
        bench_progress(c, "%s: iteration %d/%d", label, i + 1, iters);
        turn_order(i, nrun, order);
        for (int turn = 0; turn < nrun; turn++) {
            int k = order[turn];
            if (c->o->sync) {
                /* The barrier is not timed.  On the run's own
                 * communicator, as without --algos: the call then starts
                 * on a communicator just used, not one idle since the
                 * algorithm's last turn. */
                if ((st = weft_barrier(run[k].comm)) != WEFT_OK)
                    die(c, "barrier", st);
                t = now_us();
            } else if (nrun > 1) {
                /* Back to back, a call starts as the ranks left the one
                 * before; one untimed call of this algorithm first, so
                 * that its ranks are not skewed as the last algorithm
                 * left them (a fast algorithm after a slow one paid for
                 * the slow one's stragglers). */
                run_once(&run[k], send, recv, count);
                t = now_us();
            }
            run_once(&run[k], send, recv, count);
            double t1 = now_us();
            b->times[(size_t)k * iters + i] = t1 - t;
            total[k] += t1 - t;
            t = t1;
        }
    }
    for (int k = 0; k < nrun; k++)
        collect(c, &run[k], b->times + (size_t)k * iters, iters, total[k],
                bad[k], &res[k]);
}

static void finish_bw(const bench_ctx_t *c, const bench_row_t *row,
                      bench_result_t *r)
{
    r->algbw = r->time_us > 0 ? (double)row->bytes / r->time_us / 1e3 : 0;
    r->busbw = r->algbw * c->coll->bus_factor(c);
}

/* Measures one size; rows[k] gets run k's results. */
static void run_row(const bench_ctx_t *c, bench_bufs_t *b, size_t total,
                    int index, int nrows, bench_row_t *rows)
{
    size_t es = bench_dtype_size(c->o->dtype), count, ns, nr;
    int nrun;
    const bench_ctx_t *run = runs(c, &nrun);
    bench_result_t out[BENCH_MAX_ALGOS], in[BENCH_MAX_ALGOS];
    char label[96];
    row_sizes(c, total, &count, &ns, &nr);
    size_t bytes = row_bytes(c, total);
    int iters = row_iters(c->o, bytes);
    snprintf(label, sizeof(label), "%s %zu B (%d/%d) out-of-place",
             c->coll->name, bytes, index + 1, nrows);
    run_variant(c, b, b->send, b->recv, false, count, nr * es, iters,
                label, out);
    if (c->coll->has_in_place) {
        void *send = b->send, *recv = b->send;
        if (c->coll->in_place)
            c->coll->in_place(c, b->send, count, &send, &recv);
        snprintf(label, sizeof(label), "%s %zu B (%d/%d) in-place",
                 c->coll->name, bytes, index + 1, nrows);
        run_variant(c, b, send, recv, true, count, nr * es, iters, label,
                    in);
    }
    for (int k = 0; k < nrun; k++) {
        bench_row_t *row = &rows[k];
        *row = (bench_row_t){.bytes = bytes, .count = count,
                             .has_in = c->coll->has_in_place,
                             .iters = iters, .out = out[k]};
        finish_bw(&run[k], row, &row->out);
        if (row->has_in) {
            row->in = in[k];
            finish_bw(&run[k], row, &row->in);
        }
    }
}

/* The element counts of the sweep's rows (malloc'd); *n gets their
 * number. */
static size_t *sweep(const bench_ctx_t *c, int *n)
{
    size_t es = bench_dtype_size(c->o->dtype);
    size_t *totals = NULL;
    int len = 0;
    for (double b = (double)c->o->min_bytes; b <= (double)c->o->max_bytes;
         b = b * c->o->factor > b ? b * c->o->factor : b + 1) {
        if (len % 64 == 0)
            totals = realloc(totals, (size_t)(len + 64) * sizeof(*totals));
        totals[len++] = c->coll->sizeless ? 0 : (size_t)b / es;
        if (c->coll->sizeless)
            break;
    }
    *n = len;
    return totals;
}

static bool alloc_bufs(const bench_ctx_t *c, size_t max_total,
                       int max_iters, bench_bufs_t *b)
{
    size_t count, ns, nr, es = bench_dtype_size(c->o->dtype);
    row_sizes(c, max_total, &count, &ns, &nr);
    b->cap = ((ns > nr ? ns : nr) * es + 63) / 64 * 64;
    b->cap = b->cap ? b->cap : 64;
    b->send = aligned_alloc(64, b->cap);
    b->recv = aligned_alloc(64, b->cap);
    int nrun;
    runs(c, &nrun);
    b->times = malloc((size_t)max_iters * (size_t)nrun * sizeof(double));
    if (b->send && b->recv && b->times)
        return true;
    fprintf(stderr, "weft-bench: out of memory for %zu-byte buffers\n",
            b->cap);
    return false;
}

/* Rank 0 reports; every rank runs. */
static int report_all(const bench_ctx_t *c, const bench_info_t *info,
                      const bench_row_t *rows, int nrows, long wrong,
                      double avg)
{
    int rc = 0;
    bench_report_end(c, wrong, avg);
    if (c->rank != 0)
        return 0;
    if (c->o->json_path && bench_report_json(c, info, rows, nrows, wrong,
                                             avg) != 0)
        rc = 1;
    if (c->o->plot_path && bench_plot(c, info, rows, nrows) != 0)
        rc = 1;
    return rc;
}

int bench_run(const bench_ctx_t *c)
{
    bench_info_t info = {0};
    bench_bufs_t b = {0};
    int nrows, nrun, rc = 1;
    const bench_ctx_t *run = runs(c, &nrun);
    size_t *totals = sweep(c, &nrows);
    bench_row_t *rows = calloc((size_t)nrows * (size_t)nrun, sizeof(*rows));
    long wrong = 0;
    double bw_sum = 0;
    int nbw = 0;
    int max_iters = 0;
    for (int i = 0; i < nrows; i++) {
        int n = row_iters(c->o, row_bytes(c, totals[i]));
        max_iters = n > max_iters ? n : max_iters;
    }
    if (!rows || !alloc_bufs(c, totals[nrows - 1], max_iters, &b) ||
        bench_info_gather(c, &info) != 0)
        goto out;
    bench_report_begin(c, &info);
    for (int i = 0; i < nrows; i++) {
        bench_row_t *size_rows = &rows[(size_t)i * nrun];
        run_row(c, &b, totals[i], i, nrows, size_rows);
        for (int k = 0; k < nrun; k++) {
            const bench_row_t *row = &size_rows[k];
            wrong += row->out.wrong + (row->has_in ? row->in.wrong : 0);
            bw_sum += row->out.busbw + (row->has_in ? row->in.busbw : 0);
            nbw += row->has_in ? 2 : 1;
            bench_report_row(&run[k], &info, row);
        }
        if (c->runs)
            bench_report_algos(c, size_rows, nrun);
    }
    bench_progress_clear();
    rc = report_all(c, &info, rows, nrows, wrong, nbw ? bw_sum / nbw : 0);
    rc = wrong ? 1 : rc;
out:
    bench_info_free(&info);
    free(b.send);
    free(b.recv);
    free(b.times);
    free(rows);
    free(totals);
    return rc;
}
