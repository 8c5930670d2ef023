/*
 * weft-bench - nccl-tests-style bandwidth/latency benchmark on the public
 * weft API.
 *
 *   weft-bench COLLECTIVE [-n NRANKS] [-b MIN] [-e MAX] [-f FACTOR]
 *              [-w WARMUP] [-r ITERS] [-d DTYPE] [-o OP] [-a ALGO]
 *              [-t TRANSPORT] [-c 0|1] [--root R]
 *
 * With -n and no WEFT_RANK in the environment it starts NRANKS local ranks
 * itself (embedded rendezvous); otherwise it joins the job its environment
 * describes (weftrun, torchrun, Slurm, mpirun), one process per rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "spawn.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: weft-bench COLLECTIVE [options]\n"
        "collectives: allreduce sendrecv\n"
        "  -n N        start N local ranks (default: join the launcher's job)\n"
        "  -b SIZE     smallest message in bytes (k/M/G suffixes; default 8)\n"
        "  -e SIZE     largest message (default 128M)\n"
        "  -f FACTOR   multiply the size by FACTOR each row (default 2)\n"
        "  -w N        warm-up iterations per size (default 5)\n"
        "  -r N        timed iterations per size (default 20)\n"
        "  -d DTYPE    int8 uint8 int32 uint32 int64 uint64 half bfloat16 "
        "float double\n"
        "  -o OP       sum prod min max avg (default sum)\n"
        "  -a ALGO     algorithm (WEFT_ALGO), default auto\n"
        "  -t NAME     transport (WEFT_TRANSPORT), default auto\n"
        "  -c 0|1      check results (default 1)\n"
        "  --root R    root rank for rooted collectives (default 0)\n");
}

static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1048576.0; end++; break;
    case 'g': case 'G': mult = 1073741824.0; end++; break;
    default: break;
    }
    if (errno || end == s || *end || v < 0)
        return false;
    *out = (size_t)(v * mult);
    return true;
}

static bool parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > 1 << 30)
        return false;
    *out = (int)v;
    return true;
}

static int parse_args(int argc, char **argv, bench_opts_t *o)
{
    *o = (bench_opts_t){.min_bytes = 8, .max_bytes = 128u << 20,
                        .factor = 2, .warmup = 5, .iters = 20,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .algo = "auto", .transport = "auto", .check = true};
    if (argc < 2 || argv[1][0] == '-') {
        usage(argc >= 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
        return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    o->coll = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        int c = 1;
        if (!v)
            ok = false;
        else if (!strcmp(f, "-n")) ok = parse_int(v, 1, &o->nranks);
        else if (!strcmp(f, "-b")) ok = parse_size(v, &o->min_bytes);
        else if (!strcmp(f, "-e")) ok = parse_size(v, &o->max_bytes);
        else if (!strcmp(f, "-f")) ok = (o->factor = atof(v)) > 1;
        else if (!strcmp(f, "-w")) ok = parse_int(v, 0, &o->warmup);
        else if (!strcmp(f, "-r")) ok = parse_int(v, 1, &o->iters);
        else if (!strcmp(f, "-d")) ok = bench_parse_dtype(v, &o->dtype);
        else if (!strcmp(f, "-o")) ok = bench_parse_op(v, &o->op);
        else if (!strcmp(f, "-a")) o->algo = v;
        else if (!strcmp(f, "-t")) o->transport = v;
        else if (!strcmp(f, "-c")) ok = parse_int(v, 0, &c), o->check = c;
        else if (!strcmp(f, "--root")) ok = parse_int(v, 0, &o->root);
        else {
            fprintf(stderr, "weft-bench: unknown option %s\n", f);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "weft-bench: bad or missing value for %s\n", f);
            return 2;
        }
        i++;
    }
    if (!bench_coll_find(o->coll)) {
        fprintf(stderr, "weft-bench: unknown collective %s\n", o->coll);
        usage(stderr);
        return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "weft-bench: -b is larger than -e\n");
        return 2;
    }
    return -1; /* run */
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
    if (c->comm)
        weft_comm_get_error(c->comm, &msg);
    fprintf(stderr, "weft-bench: rank %d: %s failed: %s%s%s\n", c->rank, what,
            weft_strerror(st), msg ? ": " : "", msg ? msg : "");
    exit(1);
}

/* Times one variant; returns max time per iteration (us) over ranks and
 * adds the global number of wrong elements to *wrong. */
static double run_variant(const bench_ctx_t *c, const bench_coll_t *coll,
                          void *send, void *recv, size_t count, long *wrong)
{
    size_t bytes = count * bench_dtype_size(c->o->dtype);
    int64_t bad = 0;
    weft_status_t st;
    if (c->o->check) {
        coll->fill(c, send, count);
        if (recv != send)
            memset(recv, 0, bytes);
        if ((st = coll->run(c, send, recv, count)) != WEFT_OK)
            die(c, coll->name, st);
        bad = (int64_t)coll->check(c, recv, count);
    }
    for (int i = 0; i < c->o->warmup; i++)
        if ((st = coll->run(c, send, recv, count)) != WEFT_OK)
            die(c, coll->name, st);
    int32_t token = 0;
    if ((st = weft_allreduce(&token, &token, 1, WEFT_INT32, WEFT_SUM,
                             c->comm)) != WEFT_OK)
        die(c, "barrier", st);
    double t0 = now_us();
    for (int i = 0; i < c->o->iters; i++)
        if ((st = coll->run(c, send, recv, count)) != WEFT_OK)
            die(c, coll->name, st);
    double t = (now_us() - t0) / c->o->iters;
    if ((st = weft_allreduce(&t, &t, 1, WEFT_FLOAT64, WEFT_MAX, c->comm)) ||
        (st = weft_allreduce(&bad, &bad, 1, WEFT_INT64, WEFT_SUM, c->comm)))
        die(c, "result reduction", st);
    *wrong += (long)bad;
    return t;
}

static void print_header(const bench_ctx_t *c)
{
    printf("# weft-bench %s: %d ranks, transport %s, algorithm %s, dtype %s, "
           "op %s\n# sizes %zu..%zu bytes x%g, warm-up %d, iterations %d, "
           "check %s\n#\n", c->o->coll, c->size, c->o->transport, c->o->algo,
           bench_dtype_name(c->o->dtype), bench_op_name(c->o->op),
           c->o->min_bytes, c->o->max_bytes, c->o->factor, c->o->warmup,
           c->o->iters, c->o->check ? "on" : "off");
    printf("#%59s%-34s%s\n", "", "out-of-place", "in-place");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s\n", "size", "count", "type", "redop", "root", "time",
           "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static int run_bench(const bench_ctx_t *c, const bench_coll_t *coll)
{
    size_t es = bench_dtype_size(c->o->dtype);
    size_t max_count = c->o->max_bytes / es ? c->o->max_bytes / es : 1;
    char *send = aligned_alloc(64, (max_count * es + 63) / 64 * 64);
    char *recv = aligned_alloc(64, (max_count * es + 63) / 64 * 64);
    long wrong = 0;
    double bw_sum = 0;
    int rows = 0;
    if (!send || !recv) {
        fprintf(stderr, "weft-bench: out of memory for %zu-byte buffers\n",
                max_count * es);
        return 1;
    }
    if (c->rank == 0)
        print_header(c);
    for (double b = (double)c->o->min_bytes; b <= (double)c->o->max_bytes;
         b = b * c->o->factor > b ? b * c->o->factor : b + 1) {
        size_t count = (size_t)b / es;
        size_t bytes = count * es;
        long w_out = 0, w_in = 0;
        double t_out = run_variant(c, coll, send, recv, count, &w_out);
        double t_in = coll->has_in_place
                          ? run_variant(c, coll, send, send, count, &w_in) : 0;
        double alg_out = t_out > 0 ? (double)bytes / t_out / 1e3 : 0;
        double alg_in = t_in > 0 ? (double)bytes / t_in / 1e3 : 0;
        double f = coll->bus_factor(c->size);
        wrong += w_out + w_in;
        bw_sum += alg_out * f + (coll->has_in_place ? alg_in * f : 0);
        rows += coll->has_in_place ? 2 : 1;
        if (c->rank != 0)
            continue;
        printf("%12zu  %12zu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6ld", bytes,
               count, bench_dtype_name(c->o->dtype),
               coll->reduces ? bench_op_name(c->o->op) : "none",
               -1, t_out, alg_out, alg_out * f, w_out);
        if (coll->has_in_place)
            printf("  %7.2f  %6.2f  %6.2f  %6ld\n", t_in, alg_in, alg_in * f,
                   w_in);
        else
            printf("  %7s  %6s  %6s  %6s\n", "N/A", "N/A", "N/A", "N/A");
        fflush(stdout);
    }
    if (c->rank == 0) {
        printf("# Out of bounds values : %ld %s\n", wrong, wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n#\n", rows ? bw_sum / rows : 0);
    }
    free(send);
    free(recv);
    return wrong ? 1 : 0;
}

static int run_rank(const bench_opts_t *o)
{
    const bench_coll_t *coll = bench_coll_find(o->coll);
    char config[256];
    snprintf(config, sizeof(config), "WEFT_ALGO=%s,WEFT_TRANSPORT=%s",
             o->algo, o->transport);
    weft_comm_params_t p = {.field_mask = WEFT_COMM_PARAM_CONFIG,
                            .config = config};
    bench_ctx_t c = {.o = o};
    weft_status_t st = weft_comm_create(&p, &c.comm);
    if (st != WEFT_OK) {
        fprintf(stderr, "weft-bench: joining the job failed: %s (see the "
                "log lines above)\n", weft_strerror(st));
        return 1;
    }
    weft_comm_rank(c.comm, &c.rank);
    weft_comm_size(c.comm, &c.size);
    if (c.size < coll->min_ranks) {
        if (c.rank == 0)
            fprintf(stderr, "weft-bench: %s needs at least %d ranks\n",
                    coll->name, coll->min_ranks);
        weft_comm_destroy(c.comm);
        return 2;
    }
    int rc = run_bench(&c, coll);
    st = weft_comm_destroy(c.comm);
    return rc ? rc : st != WEFT_OK;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *in_job = getenv("WEFT_RANK");
    if (o.nranks > 0 && !(in_job && *in_job)) {
        /* Re-run this binary as the ranks, with the same arguments. */
        char *args[256];
        int n = 0;
        args[n++] = "/proc/self/exe";
        for (int i = 1; i < argc && n < 255; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        spawn_opts_t so = {.nranks = o.nranks, .tool = "weft-bench"};
        return spawn_ranks(args, &so);
    }
    return run_rank(&o);
}
