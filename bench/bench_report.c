/*
 * bench_report.c - what rank 0 prints: the nccl-tests table (or CSV rows)
 * as each size finishes, the JSON document at the end, and a progress
 * line on a terminal's stderr while a long sweep runs.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static bool stdout_is_json(const bench_ctx_t *c)
{
    return c->o->json_path && strcmp(c->o->json_path, "-") == 0;
}

static bool table_on(const bench_ctx_t *c)
{
    return c->rank == 0 && !c->o->csv && !stdout_is_json(c);
}

static const char *mode_name(const bench_ctx_t *c)
{
    static const char *const names[] = {"ring", "unidir", "bidir"};
    if (strcmp(c->coll->name, "latency") == 0)
        return "pingpong";
    return strcmp(c->coll->name, "sendrecv") == 0 ? names[c->o->p2p] : "";
}

/* The mode column of the CSV: the mode, and "sync" with --sync. */
static const char *mode_column(const bench_ctx_t *c)
{
    static char buf[32];
    const char *m = mode_name(c);
    if (!c->o->sync)
        return m;
    snprintf(buf, sizeof(buf), "%s%ssync", m, *m ? "+" : "");
    return buf;
}

static const char *redop(const bench_ctx_t *c)
{
    return c->coll->reduces ? bench_op_name(c->o->op) : "none";
}

static int root(const bench_ctx_t *c)
{
    return c->coll->rooted ? c->o->root : -1;
}

static double msgs(const bench_ctx_t *c)
{
    return c->coll->msgs_per_iter ? c->coll->msgs_per_iter(c) : 1;
}

/* ---- table --------------------------------------------------------------- */

/* What a row's time means where it is not one call of a collective. */
static void print_mode_note(const bench_ctx_t *c)
{
    const char *m = mode_name(c);
    if (strcmp(m, "pingpong") == 0)
        printf("# ping-pong between ranks 0 and 1: time is the one-way "
               "latency (round trip / 2)\n");
    else if (strcmp(m, "unidir") == 0)
        printf("# rank 0 -> 1, window of %d messages: time per message\n",
               c->o->window);
    else if (strcmp(m, "bidir") == 0)
        printf("# ranks 0 <-> 1, window of %d messages each way: time per "
               "message, busbw counts both directions\n", c->o->window);
    else if (strcmp(m, "ring") == 0)
        printf("# ring shift: every rank sends to rank+1 and receives from "
               "rank-1\n");
    if (c->o->sync)
        printf("# --sync: a barrier before every timed iteration, left out "
               "of the time\n");
}

static void print_hosts(const bench_ctx_t *c, const bench_info_t *info)
{
    printf("# hosts:");
    const char *list = info->host_list;
    while (list && *list) {
        size_t len = strcspn(list, ",");
        int n = 0;
        for (int r = 0; r < c->size; r++)
            n += strlen(info->hosts[r]) == len &&
                 strncmp(info->hosts[r], list, len) == 0;
        printf(" %.*s (%d rank%s)%s", (int)len, list, n, n == 1 ? "" : "s",
               list[len] ? "," : "");
        list += len + (list[len] ? 1 : 0);
    }
    printf("\n");
}

static void print_columns(const bench_ctx_t *c)
{
    bool p = c->o->percentiles;
    const char *v = p ? "  %7s  %7s  %7s  %6s  %6s  %6s"
                      : "  %7s  %6s  %6s  %6s";
    int width = p ? 52 : 34;
    printf("#%59s%-*s%s\n", "", width, "out-of-place", "in-place");
    for (int line = 0; line < 2; line++) {
        printf("#%11s  %12s  %8s  %6s  %6s", line ? "(B)" : "size",
               line ? "(elements)" : "count", line ? "" : "type",
               line ? "" : "redop",
               line ? "" : "root");
        for (int k = 0; k < 2; k++) {
            if (p && line)
                printf(v, "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
            else if (p)
                printf(v, "time", "p50", "p99", "algbw", "busbw", "#wrong");
            else if (line)
                printf(v, "(us)", "(GB/s)", "(GB/s)", "");
            else
                printf(v, "time", "algbw", "busbw", "#wrong");
        }
        if (c->o->nalgos && !line)
            printf("  algorithm");
        printf("\n");
    }
}

static void print_header(const bench_ctx_t *c, const bench_info_t *info)
{
    const bench_opts_t *o = c->o;
    char algos[BENCH_MAX_ALGOS * 32] = "", *a = algos;
    for (int k = 0; k < o->nalgos; k++)
        a += snprintf(a, sizeof(algos) - (size_t)(a - algos), "%s%s",
                      k ? ", " : "", o->algo_names[k]);
    printf("# weft-bench %s: %d ranks, transport %s, %s %s, dtype %s, "
           "op %s", o->coll, c->size, o->transport,
           o->nalgos ? "algorithms interleaved" : "algorithm",
           o->nalgos ? algos : o->algo, bench_dtype_name(o->dtype),
           bench_op_name(o->op));
    if (c->coll->rooted)
        printf(", root %d", o->root);
    printf("\n# sizes %zu..%zu bytes x%g, warm-up %d, iterations %d",
           o->min_bytes, o->max_bytes, o->factor, o->warmup, o->iters);
    if (o->loop_bytes)
        printf(" or enough for %zu bytes per size", o->loop_bytes);
    printf(", check %s\n", o->check ? "on" : "off");
    print_mode_note(c);
    print_hosts(c, info);
    printf("# weft %d.%d.%d (%s), started %s\n", weft_get_version() / 10000,
           weft_get_version() / 100 % 100, weft_get_version() % 100,
           weft_build_info(), info->date);
    for (int i = 0; i < info->nknobs; i++)
        printf("# knob %s = %s (%s)\n", info->knob_names[i],
               info->knob_values[i], info->knob_sources[i]);
    printf("#\n");
    print_columns(c);
}

static void print_variant(const bench_ctx_t *c, const bench_result_t *r)
{
    if (c->o->percentiles)
        printf("  %7.2f  %7.2f  %7.2f  %6.2f  %6.2f  %6ld", r->time_us,
               r->p50_us, r->p99_us, r->algbw, r->busbw, r->wrong);
    else
        printf("  %7.2f  %6.2f  %6.2f  %6ld", r->time_us, r->algbw, r->busbw,
               r->wrong);
}

static void print_na(const bench_ctx_t *c)
{
    if (c->o->percentiles)
        printf("  %7s  %7s  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A",
               "N/A", "N/A");
    else
        printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

/* ---- CSV: one self-describing line per row and variant ------------------- */

static void csv_field(const char *s, bool last)
{
    if (strpbrk(s, ",\"\n\r")) {
        putchar('"');
        for (; *s; s++) {
            if (*s == '"')
                putchar('"');
            putchar(*s);
        }
        putchar('"');
    } else {
        fputs(s, stdout);
    }
    putchar(last ? '\n' : ',');
}

static void csv_header(void)
{
    printf("collective,transport,algorithm,ranks,hosts,dtype,op,root,mode,"
           "msgs_per_iter,warmup,iters,date,variant,size,count,time_us,"
           "p50_us,p99_us,algbw_gbs,busbw_gbs,wrong,knobs\n");
}

static void csv_line(const bench_ctx_t *c, const bench_info_t *info,
                     const bench_row_t *row, bool in)
{
    const bench_result_t *r = in ? &row->in : &row->out;
    char knobs[4096] = "", *k = knobs;
    for (int i = 0; i < info->nknobs; i++)
        k += snprintf(k, sizeof(knobs) - (size_t)(k - knobs) - 1, "%s%s=%s",
                      i ? ";" : "", info->knob_names[i], info->knob_values[i]);
    csv_field(c->o->coll, false);
    csv_field(c->o->transport, false);
    csv_field(c->o->algo, false);
    printf("%d,", c->size);
    csv_field(info->host_list, false);
    printf("%s,%s,%d,%s,%g,%d,%d,%s,%s,%zu,%zu,%.4f,%.4f,%.4f,%.6f,%.6f,%ld,",
           bench_dtype_name(c->o->dtype), redop(c), root(c), mode_column(c),
           msgs(c), c->o->warmup, row->iters, info->date,
           in ? "in-place" : "out-of-place", row->bytes, row->count,
           r->time_us, r->p50_us, r->p99_us, r->algbw, r->busbw, r->wrong);
    csv_field(knobs, true);
}

/* ---- the interface ------------------------------------------------------- */

void bench_report_begin(const bench_ctx_t *c, const bench_info_t *info)
{
    if (table_on(c))
        print_header(c, info);
    else if (c->rank == 0 && c->o->csv)
        csv_header();
    fflush(stdout);
}

void bench_report_row(const bench_ctx_t *c, const bench_info_t *info,
                      const bench_row_t *row)
{
    if (c->rank != 0)
        return;
    bench_progress_clear();
    if (c->o->csv) {
        csv_line(c, info, row, false);
        if (row->has_in)
            csv_line(c, info, row, true);
    } else if (table_on(c)) {
        printf("%12zu  %12zu  %8s  %6s  %6d", row->bytes, row->count,
               bench_dtype_name(c->o->dtype), redop(c), root(c));
        print_variant(c, &row->out);
        if (row->has_in)
            print_variant(c, &row->in);
        else
            print_na(c);
        if (c->o->nalgos)
            printf("  %s", c->o->algo);
        printf("\n");
    }
    fflush(stdout);
}

static const bench_result_t *variant(const bench_row_t *row, bool in)
{
    return in ? &row->in : &row->out;
}

/* "ring 1.00 rhd 1.23": each run's p50 over the fastest run's. */
static void print_ratios(const bench_ctx_t *c, const bench_row_t *rows, int n,
                         bool in)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (variant(&rows[k], in)->p50_us < variant(&rows[best], in)->p50_us)
            best = k;
    double t = variant(&rows[best], in)->p50_us;
    printf("# %s p50 / fastest (%s, %.2f us):",
           in ? "in-place" : "out-of-place", c->runs[best].o->algo, t);
    for (int k = 0; k < n; k++)
        printf(" %s %.2f", c->runs[k].o->algo,
               t > 0 ? variant(&rows[k], in)->p50_us / t : 1.0);
    printf("\n");
}

void bench_report_algos(const bench_ctx_t *c, const bench_row_t *rows, int n)
{
    if (!table_on(c))
        return;
    print_ratios(c, rows, n, false);
    if (rows[0].has_in)
        print_ratios(c, rows, n, true);
    fflush(stdout);
}

void bench_report_end(const bench_ctx_t *c, long wrong, double avg_busbw)
{
    if (!table_on(c))
        return;
    printf("# Out of bounds values : %ld %s\n", wrong, wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n#\n", avg_busbw);
    fflush(stdout);
}

/* ---- progress line ------------------------------------------------------- */

static struct {
    int enabled; /* 0 unknown, 1 on, -1 off */
    bool shown;
    double last;
} progress;

void bench_progress(const bench_ctx_t *c, const char *fmt, ...)
{
    struct timespec ts;
    char line[512];
    if (progress.enabled == 0)
        progress.enabled = c->rank == 0 && isatty(STDERR_FILENO) ? 1 : -1;
    if (progress.enabled < 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    if (progress.last == 0) /* short runs never show it */
        progress.last = now;
    if (now - progress.last < 0.2) /* a few updates a second at most */
        return;
    progress.last = now;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof(line), "weft-bench: ");
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* Longer than the terminal, the line would wrap and "\r" could no
     * longer erase it. */
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
        strlen(line) >= ws.ws_col)
        line[ws.ws_col - 1] = '\0';
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    progress.shown = true;
}

void bench_progress_clear(void)
{
    if (!progress.shown)
        return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    progress.shown = false;
}
