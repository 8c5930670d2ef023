/*
 * bench_plot.c - --plot FILE.png: bus bandwidth (and for latency the
 * one-way latency) against message size, drawn by gnuplot from a data
 * file and a script written to a temporary directory.  gnuplot is run
 * without a shell, so file names and host names cannot inject commands;
 * strings inside the script are single-quoted (gnuplot doubles a quote).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* A gnuplot single-quoted string. */
static void gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if (*s != '\n')
            fputc(*s, f);
    }
    fputc('\'', f);
}

static bool is_latency(const bench_ctx_t *c)
{
    return strcmp(c->coll->name, "latency") == 0;
}

/* Columns: bytes, busbw out/in, time out/in, p50, p99 (out-of-place);
 * "?" marks a missing value.  Rows of 0 bytes cannot sit on a log axis. */
static int write_data(const char *path, const bench_row_t *rows, int nrows)
{
    FILE *f = fopen(path, "w");
    int n = 0;
    if (!f)
        return -1;
    for (int i = 0; i < nrows; i++) {
        const bench_row_t *r = &rows[i];
        if (r->bytes == 0)
            continue;
        fprintf(f, "%zu %.6g ", r->bytes, r->out.busbw);
        if (r->has_in)
            fprintf(f, "%.6g ", r->in.busbw);
        else
            fputs("? ", f);
        fprintf(f, "%.6g ", r->out.time_us);
        if (r->has_in)
            fprintf(f, "%.6g ", r->in.time_us);
        else
            fputs("? ", f);
        fprintf(f, "%.6g %.6g\n", r->out.p50_us, r->out.p99_us);
        n++;
    }
    return fclose(f) == 0 ? n : -1;
}

/* "8", "4K", "1M", "2G": the sizes as -b and -e take them. */
static void size_label(double v, char *buf, size_t len)
{
    static const char *const units[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, len, "%g%s", v, units[u]);
}

/* Labelled ticks at powers of two, every 2^k so that about ten of them
 * span the sizes. */
static void write_xtics(FILE *f, const bench_row_t *rows, int nrows)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < nrows; i++) {
        double b = (double)rows[i].bytes;
        if (b > 0 && (lo == 0 || b < lo))
            lo = b;
        hi = b > hi ? b : hi;
    }
    double first = pow(2, floor(log2(lo))), span = log2(hi / first);
    double step = pow(2, span > 10 ? ceil(span / 10) : 1);
    fputs("set xtics (", f);
    for (double t = first; t <= hi * 1.0001; t *= step) {
        char label[32];
        size_label(t, label, sizeof(label));
        fprintf(f, "%s'%s' %.0f", t > first ? ", " : "", label, t);
    }
    fputs(")\n", f);
    /* A little room on both sides: points and end labels off the border. */
    fprintf(f, "set xrange [%.6g:%.6g]\n", lo / 1.25, hi * 1.25);
}

/* "sendrecv (bidir, window 64)": what the point-to-point rows mean. */
static void coll_text(const bench_ctx_t *c, char *buf, size_t len)
{
    static const char *const modes[] = {"ring", "unidir", "bidir"};
    if (strcmp(c->coll->name, "sendrecv") == 0 && c->o->p2p != BENCH_P2P_RING)
        snprintf(buf, len, "sendrecv (%s, window %d)", modes[c->o->p2p],
                 c->o->window);
    else if (strcmp(c->coll->name, "sendrecv") == 0)
        snprintf(buf, len, "sendrecv (ring)");
    else if (is_latency(c))
        snprintf(buf, len, "latency (ping-pong, ranks 0 and 1)");
    else
        snprintf(buf, len, "%s", c->coll->name);
}

static void title_text(const bench_ctx_t *c, const bench_info_t *info,
                       char *buf, size_t len)
{
    char coll[64];
    coll_text(c, coll, sizeof(coll));
    snprintf(buf, len,
             "weft-bench %s: %d ranks, transport %s, algorithm %s, %s%s%s, "
             "hosts %s", coll, c->size, c->o->transport, c->o->algo,
             bench_dtype_name(c->o->dtype), c->coll->reduces ? " " : "",
             c->coll->reduces ? bench_op_name(c->o->op) : "",
             info->host_list);
}

/* The busbw panel: one line per variant. */
static void plot_busbw(FILE *f, const char *data, const bench_row_t *rows)
{
    fputs("set ylabel 'bus bandwidth (GB/s)'\nunset logscale y\n"
          "set yrange [0:*]\nplot ", f);
    gp_str(f, data);
    fputs(" using 1:2 with linespoints pt 7 ps 0.6 title 'out-of-place'", f);
    if (rows[0].has_in)
        fputs(", '' using 1:3 with linespoints pt 5 ps 0.6 "
              "title 'in-place'", f);
    fputs("\n", f);
}

/* The latency panel: average, and p50/p99 when they were asked for. */
static void plot_latency(FILE *f, const char *data, const bench_ctx_t *c)
{
    fputs("set ylabel 'one-way latency (us)'\nset logscale y 10\n"
          "set yrange [*:*]\nplot ", f);
    gp_str(f, data);
    fputs(" using 1:4 with linespoints pt 7 ps 0.6 title 'average'", f);
    if (c->o->percentiles)
        fputs(", '' using 1:6 with lines dt 2 title 'p50', '' using 1:7 "
              "with lines dt 3 title 'p99'", f);
    fputs("\n", f);
}

static int write_script(const char *path, const char *data,
                        const bench_ctx_t *c, const bench_info_t *info,
                        const bench_row_t *rows, int nrows)
{
    char title[512];
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    bool lat = is_latency(c);
    title_text(c, info, title, sizeof(title));
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo noenhanced size 1000,%d "
               "font 'sans,10'\n} else {\n"
               "  set terminal png noenhanced size 1000,%d\n}\n",
            lat ? 900 : 600, lat ? 900 : 600);
    fputs("set output ", f);
    gp_str(f, c->o->plot_path);
    fputs("\nset datafile missing '?'\nset logscale x 2\nset grid\n"
          "set key top left\nset xlabel 'message size (bytes)'\n", f);
    write_xtics(f, rows, nrows);
    fputs(lat ? "set multiplot layout 2,1 title " : "set title ", f);
    gp_str(f, title);
    fputs("\n", f);
    if (lat)
        plot_latency(f, data, c);
    plot_busbw(f, data, rows);
    if (lat)
        fputs("unset multiplot\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Runs `gnuplot script`; returns its exit code (127: not installed). */
static int run_gnuplot(const char *script)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool is_png(const char *path)
{
    static const unsigned char magic[8] = {0x89, 'P', 'N', 'G',
                                           '\r', '\n', 0x1a, '\n'};
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    bool ok = f && fread(head, 1, 8, f) == 8 && !memcmp(head, magic, 8);
    if (f)
        fclose(f);
    return ok;
}

int bench_plot(const bench_ctx_t *c, const bench_info_t *info,
               const bench_row_t *rows, int nrows)
{
    char dir[] = "/tmp/weft-bench-plot-XXXXXX", data[64], script[64];
    int rc = -1, code = 0;
    if (!mkdtemp(dir)) {
        fprintf(stderr, "weft-bench: --plot: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    snprintf(data, sizeof(data), "%s/data.txt", dir);
    snprintf(script, sizeof(script), "%s/plot.gp", dir);
    int n = write_data(data, rows, nrows);
    if (n == 0)
        fprintf(stderr, "weft-bench: --plot: no row with a size to plot\n");
    else if (n < 0 || write_script(script, data, c, info, rows, nrows) != 0)
        fprintf(stderr, "weft-bench: --plot: writing %s failed\n", dir);
    else if ((code = run_gnuplot(script)) == 127)
        fprintf(stderr, "weft-bench: --plot needs gnuplot: apt-get install "
                "gnuplot-nox\n");
    else if (code != 0 || !is_png(c->o->plot_path))
        fprintf(stderr, "weft-bench: --plot: gnuplot failed (exit code %d) "
                "or wrote no PNG to %s\n", code, c->o->plot_path);
    else
        rc = 0;
    unlink(data);
    unlink(script);
    rmdir(dir);
    return rc;
}
