/*
 * test_weft_harness.c - bench/compare/weft_allreduce, weft's twin of the
 * MPI harness that `make bench-latency` times weft with: one line per
 * size with no wrong element, algbw = size / time and busbw = algbw *
 * 2(n-1)/n read back from its own output, and bad usage refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* The harness's path, or a skip when this build has none (`make test` and
 * `make bench-latency` build it). */
static const char *harness(void)
{
    const char *path = wf_test_tool("../compare/weft_allreduce");
    if (access(path, X_OK) != 0)
        WF_SKIP("%s is not built (make test builds it)", path);
    return path;
}

/* a against b, both from numbers printed with 6 decimals: each is off by
 * up to 0.5e-6, b's error scaled by up to 4/3; plus 0.1%. */
static bool near(double a, double b)
{
    double d = a > b ? a - b : b - a;
    return d <= 2e-6 + b * 1e-3;
}

WF_TEST(tools_weft_harness_sizes_check_and_bandwidth, 60)
{
    char cmd[2048], *out;
    snprintf(cmd, sizeof(cmd),
             "WEFT_TCP_CMA_MIN=0 %s -n 3 %s -b 8 -e 64k -f 8 -w 2 -r 20",
             wf_test_tool("weftrun"), harness());
    int code = wf_test_run_cmd(cmd, &out);
    if (code != 0)
        fprintf(stderr, "%s\n---\n%s\n", cmd, out);
    ASSERT_EQ(code, 0);
    size_t expect_size = 8;
    int rows = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            ASSERT_TRUE(strstr(line, "3 ranks") != NULL);
            continue;
        }
        if (line[0] < '0' || line[0] > '9')
            continue; /* a launcher's or library's line on stderr */
        size_t size, count;
        double time_us, algbw, busbw;
        long wrong;
        ASSERT_EQ(sscanf(line, "%zu %zu %lf %lf %lf %ld", &size, &count,
                         &time_us, &algbw, &busbw, &wrong), 6);
        ASSERT_EQ(size, expect_size);
        ASSERT_EQ(count, size / 4);
        ASSERT_EQ(wrong, 0);
        ASSERT_TRUE(time_us > 0);
        /* Printed with 6 decimals: 0.5e-6 of rounding, plus 0.1%. */
        ASSERT_TRUE(near(algbw, (double)size / time_us / 1e3));
        ASSERT_TRUE(near(busbw, algbw * 4 / 3));
        expect_size *= 8;
        rows++;
    }
    ASSERT_EQ(rows, 5); /* 8 B, 64 B, 512 B, 4 KiB, 32 KiB */
    free(out);
}

WF_TEST(tools_weft_harness_refuses_bad_usage, 20)
{
    char cmd[2048], *out;
    snprintf(cmd, sizeof(cmd), "%s -x 1", harness());
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 2);
    ASSERT_TRUE(strstr(out, "usage: weft_allreduce") != NULL);
    free(out);
    /* No value, no iterations, an empty sweep, a size below one float, a
     * count that is not a number. */
    const char *bad[] = {"-r", "-r 0", "-b 64 -e 8", "-b 0", "-w x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), "%s %s", harness(), bad[i]);
        ASSERT_EQ(wf_test_run_cmd(cmd, &out), 2);
        ASSERT_TRUE(strstr(out, "usage: weft_allreduce") != NULL);
        free(out);
    }
}
