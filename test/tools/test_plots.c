/*
 * test_plots.c - the plots and the table of the benchmark scripts, on
 * made-up results whose answers are known: scripts/plotlines.py keeps a
 * size's best round and draws a PNG, scripts/bench-netns-table.py turns
 * busbw of the timed loop into a share of the link rate, takes each
 * cell's median over rounds, names the best forced algorithm and auto's
 * time relative to it, sets the measured times against weft-info
 * --simulate's, and draws its plot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

extern const char *wf_test_build_dir;

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    ASSERT_TRUE(fputs(text, f) >= 0);
    ASSERT_EQ(fclose(f), 0);
}

/* A PNG of more than an empty frame. */
static void assert_png(const char *dir, const char *name)
{
    static const unsigned char magic[8] = {0x89, 'P', 'N', 'G',
                                           '\r', '\n', 0x1a, '\n'};
    char path[512];
    unsigned char head[8] = {0};
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(fread(head, 1, 8, f), 8);
    ASSERT_EQ(fseek(f, 0, SEEK_END), 0);
    ASSERT_TRUE(ftell(f) > 5000);
    fclose(f);
    ASSERT_TRUE(memcmp(head, magic, 8) == 0);
}

/* DIR/allreduce-1gbit-ALGO.ROUND.csv as weft-bench --csv writes it: the
 * header and one row per "variant,size,count,time_us,p50_us,p99_us,
 * algbw_gbs,busbw_gbs" line of `rows`. */
static void write_netns_csv(const char *dir, const char *algo, int round,
                            const char *const *rows, int nrows)
{
    char name[64], csv[2048];
    size_t len = (size_t)snprintf(
        csv, sizeof(csv),
        "collective,transport,algorithm,ranks,hosts,dtype,op,root,mode,"
        "msgs_per_iter,warmup,iters,date,variant,size,count,time_us,p50_us,"
        "p99_us,algbw_gbs,busbw_gbs,wrong,knobs\n");
    for (int i = 0; i < nrows; i++)
        len += (size_t)snprintf(csv + len, sizeof(csv) - len,
                                "allreduce,auto,%s,4,vm,float,sum,-1,,1,1,5,"
                                "d,%s,0,\n",
                                algo, rows[i]);
    ASSERT_TRUE(len < sizeof(csv));
    snprintf(name, sizeof(name), "allreduce-1gbit-%s.%d.csv", algo, round);
    write_file(dir, name, csv);
}

WF_TEST(tools_plots_compare_and_netns_tables, 60)
{
    char dir[] = "/tmp/weft-plots-test-XXXXXX", cmd[2048], *out;
    ASSERT_TRUE(mkdtemp(dir) != NULL);

    /* Three rounds of one size: the plot keeps the best. */
    write_file(dir, "a.txt", "8 0.5 0\n8 0.7 0\n8 0.6 0\n1024 2 0\n");
    write_file(dir, "b.txt", "# a comment\n8 0.1 0\n1024 0.3 0\n");
    snprintf(cmd, sizeof(cmd),
             "python3 -c 'import sys; sys.path.insert(0, \"scripts\"); "
             "import plotlines; print(plotlines.read_series(\"%s/a.txt\"))'",
             dir);
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "[(8.0, 0.7), (1024.0, 2.0)]");
    free(out);

    /* 1 Gbit/s is 0.125 GB/s.  ring: busbw 0.1 GB/s over the loop in the
     * median of its three rounds: 80%.  auto: the loop twice ring's time,
     * 0.05 GB/s, though its median iteration is as fast as ring's: 40%,
     * and auto / best = 2.00 (the loop's time decides, not the median's).
     * The second table: ring's 100 us against the simulator's time for
     * 1024 bytes on 4 ranks at 0.125 GB/s, alpha 2 us: tens of us (6 steps
     * of latency and 1.5 KiB at 0.125 GB/s), so a ratio above 1 and well
     * below the 300 us round's. */
    const char *ring[] = {"out-of-place,1024,256,100,100,110,0.1,0.1",
                          "in-place,1024,256,900,900,900,0.01,0.01"};
    const char *ring_slow[] = {"out-of-place,1024,256,300,300,310,0.03,"
                               "0.033333"};
    const char *ring_fast[] = {"out-of-place,1024,256,90,90,95,0.11,"
                               "0.111111"};
    const char *autosel[] = {"out-of-place,1024,256,200,100,210,0.05,0.05"};
    write_netns_csv(dir, "ring", 1, ring, 2);
    write_netns_csv(dir, "ring", 2, ring_slow, 1);
    write_netns_csv(dir, "ring", 3, ring_fast, 1);
    write_netns_csv(dir, "auto", 1, autosel, 1);
    snprintf(cmd, sizeof(cmd),
             "python3 scripts/bench-netns-table.py --simulate "
             "%s/bin/weft-info --ranks 4 --ranks-per-node 2 %s allreduce "
             "1gbit ring auto",
             wf_test_build_dir, dir);
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "| 1024 | 80% | 40% | ring | 2.00 |");
    ASSERT_STR_CONTAINS(out, "alpha 2.0 us, beta 0.125 GB/s, 4 ranks, 2 per "
                             "machine");
    const char *sim = strstr(out, "\n| 1024 | ");
    ASSERT_TRUE(sim != NULL);
    sim = strstr(sim + 1, "\n| 1024 | ");
    ASSERT_TRUE(sim != NULL);
    double ratio = strtod(sim + strlen("\n| 1024 | "), NULL);
    ASSERT_TRUE(ratio > 1.0 && ratio < 6.0);
    ASSERT_STR_CONTAINS(out, "simulator error below 64 KiB: median");
    bool drawn = strstr(out, "plot: ") != NULL;
    if (!drawn)
        ASSERT_STR_CONTAINS(out, "plot skipped: gnuplot is not installed");
    free(out);

    if (drawn) {
        assert_png(dir, "allreduce-1gbit.png");
        snprintf(cmd, sizeof(cmd),
                 "python3 scripts/plotlines.py --out %s/c.png --ylog "
                 "--bold a --title t --ylabel y a=%s/a.txt b=%s/b.txt",
                 dir, dir, dir);
        ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
        free(out);
        assert_png(dir, "c.png");
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
    if (!drawn)
        WF_SKIP("the tables are checked; the plots need gnuplot "
                "(make deps installs gnuplot-nox)");
}

WF_TEST(tools_plots_refuse_what_they_cannot_draw, 30)
{
    char *out;
    ASSERT_EQ(wf_test_run_cmd("python3 scripts/plotlines.py --out "
                              "/tmp/weft-plots-none.png x=/nonexistent/file",
                              &out),
              2);
    ASSERT_STR_CONTAINS(out, "plotlines: /nonexistent/file: No such file");
    free(out);
    ASSERT_EQ(wf_test_run_cmd("python3 scripts/plotlines.py --out "
                              "/tmp/weft-plots-none.png x=/dev/null",
                              &out),
              2);
    ASSERT_STR_CONTAINS(out, "no data to plot");
    free(out);
}
