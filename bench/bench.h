/*
 * bench.h - weft-bench internals: options, per-collective descriptors,
 * results and the modules that share them.  The benchmark uses only the
 * public API in weft.h.
 *
 *   bench.c          main, options, starting local ranks
 *   bench_run.c      the timing loop (per-iteration times, percentiles)
 *   bench_algos.c    --algos: one communicator per compared algorithm
 *   bench_info.c     what ran where: host names, non-default WEFT_* knobs
 *   bench_report.c   table and CSV output, the progress line
 *   bench_json.c     --json
 *   bench_plot.c     --plot through gnuplot
 *   bench_data.c     dtypes, element access, input patterns
 *   bench_colls.c    allreduce, sendrecv, latency descriptors
 *   bench_colls2.c   broadcast, reduce, allgather, ... descriptors
 */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

/* What sendrecv measures: nccl-tests' ring shift (every rank sends to its
 * right neighbour), or a window of messages between ranks 0 and 1 in one
 * direction (osu_bw) or both (osu_bibw). */
typedef enum {
    BENCH_P2P_RING = 0,
    BENCH_P2P_UNIDIR,
    BENCH_P2P_BIDIR
} bench_p2p_mode_t;

#define BENCH_MAX_ALGOS 8 /* --algos: at most this many names */

typedef struct {
    const char *coll;
    int nranks;        /* -n: start this many local ranks */
    size_t min_bytes, max_bytes;
    double factor;     /* -f */
    int warmup, iters; /* -w, -r */
    /* --loop-bytes: a size's timed loop runs at least this many bytes
     * (ceil(loop_bytes / size) iterations when that is more than -r);
     * 0: -r alone. */
    size_t loop_bytes;
    weft_dtype_t dtype;
    weft_op_t op;
    const char *algo;      /* -a, else WEFT_ALGO, else "auto" */
    const char *transport; /* -t, else WEFT_TRANSPORT, else "auto" */
    bool algo_given;       /* -a (or --algos) named it: the config string
                            * carries it, above the environment */
    bool transport_given;  /* -t named it */
    bool check;
    int root;
    bool percentiles;      /* --percentiles: p50/p99 columns */
    bool sync;             /* --sync: a barrier before every timed run */
    const char *json_path; /* --json FILE ("-": stdout, no table) */
    bool csv;              /* --csv: CSV on stdout instead of the table */
    const char *plot_path; /* --plot FILE.png */
    bench_p2p_mode_t p2p;  /* --bidir / --unidir */
    int window;            /* --window: messages per iteration (uni/bidir) */
    bool corrupt;          /* --corrupt-for-test: damage one result */
    /* --algos A,B,...: the algorithms compared in one job (nalgos >= 2;
     * 0 without the option); the names point into algos_buf. */
    int nalgos;
    const char *algo_names[BENCH_MAX_ALGOS];
    char algos_buf[BENCH_MAX_ALGOS * 32];
} bench_opts_t;

struct bench_coll;

typedef struct bench_ctx {
    weft_comm_t comm;
    int rank, size;
    const bench_opts_t *o;
    const struct bench_coll *coll;
    /* --algos: the compared algorithms' contexts, each with its own
     * communicator and options naming its algorithm; the timed calls go
     * to them in turn, barriers and results through `comm`.  NULL: the
     * calls go to `comm`. */
    const struct bench_ctx *runs;
    int nruns;
} bench_ctx_t;

/* The contexts of --algos (bench_algos.c). */
typedef struct {
    int n; /* communicators created */
    bench_opts_t opts[BENCH_MAX_ALGOS];
    bench_ctx_t ctx[BENCH_MAX_ALGOS];
} bench_algos_t;

/* One collective: how to size, run and check it. */
typedef struct bench_coll {
    const char *name;
    /* busbw = algbw * factor */
    double (*bus_factor)(const bench_ctx_t *c);
    int min_ranks;
    bool has_in_place;
    bool reduces; /* prints the op in the redop column, else "none" */
    bool rooted;  /* prints --root in the root column, else -1 */
    bool sizeless; /* barrier: one row, time only */
    /* Messages one timed iteration stands for (NULL: 1): the reported
     * time is the iteration's time divided by it (latency: 2, a round
     * trip; windowed sendrecv: the window). */
    double (*msgs_per_iter)(const bench_ctx_t *c);
    /* From the row's element count (row bytes / dtype size) to the count
     * passed to the call and the send/recv buffer lengths in elements.
     * NULL: all three equal `total`.  NCCL's convention: the row's size
     * is the larger of the two buffers. */
    void (*sizes)(const bench_ctx_t *c, size_t total, size_t *count,
                  size_t *send_elems, size_t *recv_elems);
    /* Where send and recv point for the in-place variant inside `buf`
     * (NULL: both at buf). */
    void (*in_place)(const bench_ctx_t *c, char *buf, size_t count,
                     void **send, void **recv);
    /* One operation. */
    weft_status_t (*run)(const bench_ctx_t *c, void *send, void *recv,
                         size_t count);
    /* Puts rank-specific input in send. */
    void (*fill)(const bench_ctx_t *c, void *send, size_t count);
    /* Counts wrong elements of recv against the expected result. */
    size_t (*check)(const bench_ctx_t *c, const void *recv, size_t count);
} bench_coll_t;

/* One variant (out-of-place or in-place) of one row, as rank 0 reports it:
 * times are per message, the maximum over ranks. */
typedef struct {
    double time_us;          /* average over the timed iterations */
    double p50_us, p99_us;   /* of the per-iteration maxima over ranks */
    double algbw, busbw;     /* GB/s */
    long wrong;              /* wrong elements, summed over ranks */
} bench_result_t;

typedef struct {
    size_t bytes;  /* the row's size (NCCL convention) */
    size_t count;  /* the count passed to the call */
    bool has_in;   /* in-place variant measured */
    int iters;     /* timed iterations of this row (-r, --loop-bytes) */
    bench_result_t out, in;
} bench_row_t;

/* What ran where, for headers, CSV, JSON and plot titles (rank 0). */
typedef struct {
    char **hosts;     /* host name of each rank */
    char *host_list;  /* distinct host names, comma separated */
    int nknobs;
    char **knob_names, **knob_values, **knob_sources;
    char date[32];    /* UTC start time, ISO 8601 */
} bench_info_t;

/* bench_data.c */
size_t bench_dtype_size(weft_dtype_t dtype);
const char *bench_dtype_name(weft_dtype_t dtype);
const char *bench_op_name(weft_op_t op);
bool bench_dtype_is_float(weft_dtype_t dtype); /* no bitwise ops on these */
bool bench_dtype_is_fp8(weft_dtype_t dtype);
bool bench_parse_dtype(const char *s, weft_dtype_t *dtype);
bool bench_parse_op(const char *s, weft_op_t *op);
void bench_put(void *buf, weft_dtype_t d, size_t i, double v);
double bench_get(const void *buf, weft_dtype_t d, size_t i);
double bench_pattern(int rank, size_t i, weft_op_t op, weft_dtype_t d);
double bench_wrap(double v, weft_dtype_t d);
double bench_reduce_expect(const bench_ctx_t *c, size_t i);
void bench_fill_pattern(const bench_ctx_t *c, void *buf, size_t count,
                        int rank, size_t first, weft_op_t op);
size_t bench_count_wrong(const bench_ctx_t *c, const void *buf, size_t count,
                         int rank, size_t first, weft_op_t op);

/* bench_colls.c / bench_colls2.c */
const bench_coll_t *bench_coll_find(const char *name);
const bench_coll_t *bench_colls2_find(const char *name);
const char *bench_coll_names(void);
double bench_factor_one(const bench_ctx_t *c);
double bench_factor_n1n(const bench_ctx_t *c);

/* bench.c: the communicator's config string: o->algo and o->transport
 * when the command line named them (WEFT_ALGO=COLL:NAME, so a name the
 * collective lacks is refused), else nothing, so the environment's
 * WEFT_ALGO and WEFT_TRANSPORT apply as in any other program. */
void bench_comm_config(const bench_opts_t *o, char *config, size_t len);

/* bench_algos.c: parses the --algos list into o (false: fewer than 2,
 * more than BENCH_MAX_ALGOS, repeated or malformed names); creates and
 * destroys the algorithms' communicators (collective over the world). */
bool bench_algos_parse(const char *list, bench_opts_t *o);
weft_status_t bench_algos_open(const bench_ctx_t *world, bench_algos_t *a);
weft_status_t bench_algos_close(bench_algos_t *a);

/* bench_run.c: runs the sweep; returns the exit code (1 on wrong results) */
int bench_run(const bench_ctx_t *c);

/* bench_info.c */
int bench_info_gather(const bench_ctx_t *c, bench_info_t *info);
void bench_info_free(bench_info_t *info);

/* bench_report.c, bench_json.c */
void bench_report_begin(const bench_ctx_t *c, const bench_info_t *info);
void bench_report_row(const bench_ctx_t *c, const bench_info_t *info,
                      const bench_row_t *row);
void bench_report_end(const bench_ctx_t *c, long wrong, double avg_busbw);
/* --algos, table only: each algorithm's p50 against the fastest one for
 * the `n` rows of one size (rows[k] measured on c->runs[k]). */
void bench_report_algos(const bench_ctx_t *c, const bench_row_t *rows, int n);
int bench_report_json(const bench_ctx_t *c, const bench_info_t *info,
                      const bench_row_t *rows, int nrows, long wrong,
                      double avg_busbw);
void bench_progress(const bench_ctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_progress_clear(void);

/* bench_plot.c */
int bench_plot(const bench_ctx_t *c, const bench_info_t *info,
               const bench_row_t *rows, int nrows);

#endif /* WEFT_BENCH_H */
