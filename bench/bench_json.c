/*
 * bench_json.c - --json FILE: the whole run as one JSON document, rows
 * and configuration, for scripts and dashboards.  Written by hand (no JSON
 * library in the dependencies); every string goes through json_str, which
 * escapes what JSON requires and replaces bytes that are not UTF-8, and
 * numbers that are not finite become null, so the output always parses.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* Length of the valid UTF-8 sequence at s, 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4   ? 4
            : s[0] >= 0xe0                 ? 3
            : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                                           : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, f);
        } else {
            int n = utf8_len(p);
            if (n == 0) {
                fputs("\\ufffd", f);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            }
        }
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
        fprintf(f, "%.0f", v); /* counts and sizes stay exact */
    else if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* "key": with the separator before it. */
static void key(FILE *f, bool *first, const char *k)
{
    fprintf(f, "%s\n    ", *first ? "" : ",");
    *first = false;
    json_str(f, k);
    fputs(": ", f);
}

/* "key": "s", or null when s is NULL. */
static void kv_str(FILE *f, bool *first, const char *k, const char *s)
{
    key(f, first, k);
    if (s)
        json_str(f, s);
    else
        fputs("null", f);
}

static void kv_num(FILE *f, bool *first, const char *k, double v)
{
    key(f, first, k);
    json_num(f, v);
}

static void kv_size(FILE *f, bool *first, const char *k, size_t v)
{
    key(f, first, k);
    fprintf(f, "%zu", v);
}

static void json_knobs(FILE *f, const bench_info_t *info)
{
    fputc('{', f);
    for (int i = 0; i < info->nknobs; i++) {
        fputs(i ? ", " : "", f);
        json_str(f, info->knob_names[i]);
        fputs(": {\"value\": ", f);
        json_str(f, info->knob_values[i]);
        fputs(", \"source\": ", f);
        json_str(f, info->knob_sources[i]);
        fputc('}', f);
    }
    fputc('}', f);
}

static const char *p2p_mode(const bench_ctx_t *c)
{
    static const char *const names[] = {"ring", "unidir", "bidir"};
    return strcmp(c->o->coll, "sendrecv") == 0 ? names[c->o->p2p] : NULL;
}

static void json_config(FILE *f, const bench_ctx_t *c,
                        const bench_info_t *info, const bench_row_t *rows,
                        int nrows)
{
    const bench_opts_t *o = c->o;
    bool first = true;
    fputc('{', f);
    kv_str(f, &first, "collective", o->coll);
    kv_str(f, &first, "transport", o->transport);
    kv_str(f, &first, "algorithm", o->algo);
    kv_num(f, &first, "ranks", c->size);
    key(f, &first, "hosts");
    fputc('[', f);
    for (int r = 0; r < c->size; r++) {
        fputs(r ? ", " : "", f);
        json_str(f, info->hosts[r]);
    }
    fputc(']', f);
    kv_str(f, &first, "dtype", bench_dtype_name(o->dtype));
    kv_str(f, &first, "op", c->coll->reduces ? bench_op_name(o->op) : NULL);
    kv_num(f, &first, "root", c->coll->rooted ? o->root : NAN);
    kv_str(f, &first, "sendrecv_mode", p2p_mode(c));
    kv_num(f, &first, "sync", o->sync ? 1 : 0);
    kv_num(f, &first, "messages_per_iteration",
           c->coll->msgs_per_iter ? c->coll->msgs_per_iter(c) : 1);
    kv_size(f, &first, "min_bytes", o->min_bytes);
    kv_size(f, &first, "max_bytes", o->max_bytes);
    kv_num(f, &first, "step_factor", o->factor);
    key(f, &first, "sizes");
    fputc('[', f);
    for (int i = 0; i < nrows; i++)
        fprintf(f, "%s%zu", i ? ", " : "", rows[i].bytes);
    fputc(']', f);
    kv_num(f, &first, "warmup_iterations", o->warmup);
    kv_num(f, &first, "iterations", o->iters);
    kv_size(f, &first, "loop_bytes", o->loop_bytes);
    key(f, &first, "check");
    fputs(o->check ? "true" : "false", f);
    kv_num(f, &first, "bus_factor", c->coll->bus_factor(c));
    key(f, &first, "knobs");
    json_knobs(f, info);
    fputs("\n  }", f);
}

static void json_row(FILE *f, const bench_ctx_t *c, const bench_row_t *row,
                     bool in, bool first)
{
    const bench_result_t *r = in ? &row->in : &row->out;
    fprintf(f, "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": ",
            first ? "" : ",", row->bytes, row->count);
    json_str(f, bench_dtype_name(c->o->dtype));
    fputs(", \"redop\": ", f);
    json_str(f, c->coll->reduces ? bench_op_name(c->o->op) : "none");
    fprintf(f, ", \"root\": %d, \"variant\": \"%s\", \"iterations\": %d, "
            "\"time_us\": ", c->coll->rooted ? c->o->root : -1,
            in ? "in-place" : "out-of-place", row->iters);
    json_num(f, r->time_us);
    fputs(", \"p50_us\": ", f), json_num(f, r->p50_us);
    fputs(", \"p99_us\": ", f), json_num(f, r->p99_us);
    fputs(", \"algbw_gbs\": ", f), json_num(f, r->algbw);
    fputs(", \"busbw_gbs\": ", f), json_num(f, r->busbw);
    fprintf(f, ", \"wrong\": %ld}", r->wrong);
}

int bench_report_json(const bench_ctx_t *c, const bench_info_t *info,
                      const bench_row_t *rows, int nrows, long wrong,
                      double avg_busbw)
{
    bool to_stdout = strcmp(c->o->json_path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(c->o->json_path, "w");
    if (!f) {
        perror(c->o->json_path);
        return -1;
    }
    int v = weft_get_version();
    fprintf(f, "{\n  \"tool\": \"weft-bench\",\n  \"version\": \"%d.%d.%d\","
            "\n  \"build\": ", v / 10000, v / 100 % 100, v % 100);
    json_str(f, weft_build_info());
    fputs(",\n  \"date\": ", f), json_str(f, info->date);
    fputs(",\n  \"config\": ", f);
    json_config(f, c, info, rows, nrows);
    fputs(",\n  \"rows\": [", f);
    for (int i = 0; i < nrows; i++) {
        json_row(f, c, &rows[i], false, i == 0);
        if (rows[i].has_in)
            json_row(f, c, &rows[i], true, false);
    }
    fprintf(f, "\n  ],\n  \"wrong\": %ld,\n  \"avg_busbw_gbs\": ", wrong);
    json_num(f, avg_busbw);
    fprintf(f, ",\n  \"result\": \"%s\"\n}\n", wrong ? "FAILED" : "OK");
    int err = ferror(f);
    if ((to_stdout ? fflush(f) : fclose(f)) != 0 || err) {
        fprintf(stderr, "weft-bench: writing %s failed\n", c->o->json_path);
        return -1;
    }
    return 0;
}
