/*
 * weft-bench - nccl-tests-style bandwidth/latency benchmark on the public
 * weft API: options and the start of the ranks.  docs/bench.md is the
 * user's guide.
 *
 *   weft-bench COLLECTIVE [-n NRANKS] [-b MIN] [-e MAX] [-f FACTOR]
 *              [-w WARMUP] [-r ITERS] [-d DTYPE] [-o OP] [-a ALGO]
 *              [-t TRANSPORT] [-c 0|1] [--root R] [--percentiles] [--sync]
 *              [--json FILE] [--csv] [--plot FILE.png]
 *              [--bidir | --unidir] [--window W] [--algos A,B,...]
 *
 * With -n and no WEFT_RANK in the environment it starts NRANKS local ranks
 * itself (embedded rendezvous); otherwise it joins the job its environment
 * describes (weftrun, torchrun, Slurm, mpirun), one process per rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "spawn.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: weft-bench COLLECTIVE [options]\n"
        "collectives: %s\n"
        "  -n N          start N local ranks (default: join the launcher's "
        "job)\n"
        "  -b SIZE       smallest message in bytes (K/M/G suffixes; "
        "default 8)\n"
        "  -e SIZE       largest message (default 128M)\n"
        "  -f FACTOR     multiply the size by FACTOR each row (default 2)\n"
        "  -w N          warm-up iterations per size (default 5)\n"
        "  -r N          timed iterations per size (default 20)\n"
        "  --loop-bytes SIZE  at least SIZE bytes per size's timed loop: "
        "ceil(SIZE/size)\n"
        "                iterations where that is more than -r (a link's "
        "burst or\n"
        "                buffers then weigh little against the loop)\n"
        "  -d DTYPE      int8 uint8 int16 uint16 int32 uint32 int64 uint64 "
        "half bfloat16\n"
        "                float double f8e4m3 f8e5m2\n"
        "  -o OP         sum prod min max avg, and on integers band bor bxor "
        "land lor\n"
        "                (default sum)\n"
        "  -a ALGO       algorithm, default WEFT_ALGO or auto\n"
        "  -t NAME       transport, default WEFT_TRANSPORT or auto\n"
        "  -c 0|1        check results (default 1)\n"
        "  --root R      root rank of broadcast, reduce, gather, scatter "
        "(default 0)\n"
        "  --percentiles p50 and p99 of the per-iteration times\n"
        "  --sync        a barrier before every timed iteration, not "
        "timed (osu-style):\n"
        "                one call's latency rather than back-to-back "
        "calls\n"
        "  --json FILE   write the run as JSON (\"-\": to stdout, no "
        "table)\n"
        "  --csv         CSV rows on stdout instead of the table\n"
        "  --plot FILE   draw busbw (latency: and latency) against size "
        "into a PNG (gnuplot)\n"
        "  --unidir      sendrecv: rank 0 -> 1, a window of messages "
        "(osu_bw)\n"
        "  --bidir       sendrecv: ranks 0 <-> 1 both ways (osu_bibw)\n"
        "  --window W    messages per window for --unidir/--bidir "
        "(default 64)\n"
        "  --algos A,B   compare these algorithms in one job (auto among "
        "them): each\n"
        "                gets its own communicator and the timed calls "
        "take turns\n", bench_coll_names());
}

/* A byte count: 64, 64K, 1M, 2G, 1.5M (binary multiples; "B", "KB" and
 * "KiB" spellings accepted). */
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
    if (mult > 1 && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (errno || end == s || *end || v < 0 || v * mult > 1e15)
        return false;
    *out = (size_t)(v * mult);
    return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Options without a value; returns false when f is not one. */
static bool parse_flag(const char *f, bench_opts_t *o)
{
    if (!strcmp(f, "--percentiles")) o->percentiles = true;
    else if (!strcmp(f, "--sync")) o->sync = true;
    else if (!strcmp(f, "--csv")) o->csv = true;
    else if (!strcmp(f, "--bidir")) o->p2p = BENCH_P2P_BIDIR;
    else if (!strcmp(f, "--unidir")) o->p2p = BENCH_P2P_UNIDIR;
    /* Hidden: damages one element of the result before the check, so the
     * tests can see the check fail (docs/bench.md). */
    else if (!strcmp(f, "--corrupt-for-test")) o->corrupt = true;
    else return false;
    return true;
}

/* Options with a value; 1 parsed, 0 bad value, -1 unknown option. */
static int parse_valued(const char *f, const char *v, bench_opts_t *o)
{
    int c = 1, big = 1 << 30;
    bool ok;
    if (!strcmp(f, "-n")) ok = parse_int(v, 1, 256, &o->nranks);
    else if (!strcmp(f, "-b")) ok = parse_size(v, &o->min_bytes);
    else if (!strcmp(f, "-e")) ok = parse_size(v, &o->max_bytes);
    else if (!strcmp(f, "-f")) ok = (o->factor = atof(v)) > 1;
    else if (!strcmp(f, "-w")) ok = parse_int(v, 0, big, &o->warmup);
    else if (!strcmp(f, "-r")) ok = parse_int(v, 1, big, &o->iters);
    else if (!strcmp(f, "--loop-bytes")) ok = parse_size(v, &o->loop_bytes);
    else if (!strcmp(f, "-d")) ok = bench_parse_dtype(v, &o->dtype);
    else if (!strcmp(f, "-o")) ok = bench_parse_op(v, &o->op);
    else if (!strcmp(f, "-a")) ok = o->algo_given = *(o->algo = v) != '\0';
    else if (!strcmp(f, "-t"))
        ok = o->transport_given = *(o->transport = v) != '\0';
    else if (!strcmp(f, "-c")) ok = parse_int(v, 0, 1, &c), o->check = c;
    else if (!strcmp(f, "--root")) ok = parse_int(v, 0, big, &o->root);
    else if (!strcmp(f, "--json")) ok = *(o->json_path = v) != '\0';
    else if (!strcmp(f, "--plot")) ok = *(o->plot_path = v) != '\0';
    else if (!strcmp(f, "--window")) ok = parse_int(v, 1, 1024, &o->window);
    else if (!strcmp(f, "--algos")) ok = bench_algos_parse(v, o);
    else return -1;
    return ok ? 1 : 0;
}

/* Combinations that cannot work, found before any rank starts. */
static bool check_opts(const bench_opts_t *o)
{
    const char *err = NULL;
    if (!bench_coll_find(o->coll))
        err = "unknown collective";
    else if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "weft-bench: -b (%zu bytes) is larger than -e (%zu "
                "bytes)\n", o->min_bytes, o->max_bytes);
        return false;
    } else if (o->csv && o->json_path && !strcmp(o->json_path, "-"))
        err = "--csv and --json - both want stdout";
    else if (o->op >= WEFT_BAND && bench_dtype_is_float(o->dtype) &&
             bench_coll_find(o->coll)->reduces) {
        fprintf(stderr, "weft-bench: -o %s takes an integer -d, not %s\n",
                bench_op_name(o->op), bench_dtype_name(o->dtype));
        return false;
    } else if (o->p2p != BENCH_P2P_RING && strcmp(o->coll, "sendrecv"))
        err = "--bidir and --unidir are for sendrecv";
    else if (o->nalgos && (o->algo_given || o->json_path ||
                           o->plot_path))
        err = "--algos takes the place of -a and does not go with --json "
              "or --plot";
    else if (o->nalgos && (!strcmp(o->coll, "sendrecv") ||
                           !strcmp(o->coll, "latency")))
        err = "--algos is for collectives; sendrecv and latency have no "
              "algorithms";
    if (err)
        fprintf(stderr, "weft-bench: %s%s%s\n", err,
                bench_coll_find(o->coll) ? "" : ": ",
                bench_coll_find(o->coll) ? "" : o->coll);
    return err == NULL;
}

/* What the library will use when the command line does not say: the
 * environment's value, shown in the table's header and reports. */
static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

/* Returns -1 to run, else the exit code. */
static int parse_args(int argc, char **argv, bench_opts_t *o)
{
    *o = (bench_opts_t){.min_bytes = 8, .max_bytes = 128u << 20,
                        .factor = 2, .warmup = 5, .iters = 20,
                        .dtype = WEFT_FLOAT32, .op = WEFT_SUM,
                        .algo = env_or("WEFT_ALGO", "auto"),
                        .transport = env_or("WEFT_TRANSPORT", "auto"),
                        .check = true,
                        .window = 64};
    bool help = argc >= 2 && (!strcmp(argv[1], "--help") ||
                              !strcmp(argv[1], "-h"));
    if (argc < 2 || argv[1][0] == '-') {
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    o->coll = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i];
        if (parse_flag(f, o))
            continue;
        int r = i + 1 < argc ? parse_valued(f, argv[i + 1], o)
                             : parse_valued(f, "", o);
        if (r < 0) {
            fprintf(stderr, "weft-bench: unknown option %s\n", f);
            usage(stderr);
            return 2;
        }
        if (r == 0 || i + 1 >= argc) {
            fprintf(stderr, "weft-bench: bad or missing value for %s\n", f);
            return 2;
        }
        i++;
    }
    return check_opts(o) ? -1 : 2;
}

/* Rank checks that need the communicator; 0 when the run can go on. */
static int check_ranks(const bench_ctx_t *c)
{
    const char *what = NULL;
    if (c->size < c->coll->min_ranks)
        what = "too few ranks";
    else if (c->coll->rooted && c->o->root >= c->size)
        what = "--root is not a rank";
    if (what && c->rank == 0)
        fprintf(stderr, "weft-bench: %s: %s needs %s%d ranks, --root "
                "below the number of ranks (%d)\n", what, c->coll->name,
                "at least ", c->coll->min_ranks, c->size);
    return what ? 2 : 0;
}

void bench_comm_config(const bench_opts_t *o, char *config, size_t len)
{
    /* -a NAME names this collective's algorithm, so a name it does not
     * have is refused ("unsupported") instead of falling back to auto. */
    bool per_coll = strcmp(o->algo, "auto") != 0 && !strchr(o->algo, ':') &&
                    strcmp(o->coll, "sendrecv") != 0 &&
                    strcmp(o->coll, "latency") != 0;
    config[0] = '\0';
    if (o->algo_given)
        snprintf(config, len, "WEFT_ALGO=%s%s%s", per_coll ? o->coll : "",
                 per_coll ? ":" : "", o->algo);
    size_t used = strlen(config);
    if (o->transport_given)
        snprintf(config + used, len - used, "%sWEFT_TRANSPORT=%s",
                 used ? "," : "", o->transport);
}

static int run_rank(const bench_opts_t *o)
{
    char config[512];
    bench_comm_config(o, config, sizeof(config));
    weft_comm_params_t p = {.field_mask = WEFT_COMM_PARAM_CONFIG,
                            .config = config};
    bench_ctx_t c = {.o = o, .coll = bench_coll_find(o->coll)};
    weft_status_t st = weft_comm_create(&p, &c.comm);
    if (st != WEFT_OK) {
        fprintf(stderr, "weft-bench: joining the job failed: %s (see the "
                "log lines above)\n", weft_strerror(st));
        return 1;
    }
    weft_comm_rank(c.comm, &c.rank);
    weft_comm_size(c.comm, &c.size);
    int rc = check_ranks(&c);
    bench_algos_t algos = {0};
    if (rc == 0 && o->nalgos) {
        rc = bench_algos_open(&c, &algos) != WEFT_OK;
        c.runs = algos.ctx;
        c.nruns = algos.n;
    }
    if (rc == 0)
        rc = bench_run(&c);
    if (bench_algos_close(&algos) != WEFT_OK && rc == 0)
        rc = 1;
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
