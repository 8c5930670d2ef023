/*
 * test_bench_algos.c - weft-bench -a NAME -c 1 over every registered
 * algorithm of every collective reports #wrong = 0, and a name that does
 * not apply to a collective is refused with a clear message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "algo/algo.h"
#include "test.h"

static int run_capture(const char *cmd, char *out, size_t len)
{
    char full[2048];
    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    ASSERT_TRUE(p != NULL);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

WF_TEST(tools_bench_every_algorithm_checks_clean, 300)
{
    size_t n;
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    static char out[1 << 16];
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        const wf_algo_t *a = reg[i];
        /* weft-bench's own ranks share one machine, where the node-aware
         * algorithms do not apply (below); test_hier.c, the matrix and
         * the namespace test run them on several. */
        if (a->coll == WF_COLL_SEND || a->coll == WF_COLL_RECV ||
            a->node_aware)
            continue;
        /* weft-bench times the equal-count collectives (nccl-tests'
         * set); the vector ones are checked by test_vcolls.c. */
        if (wf_coll_is_vector(a->coll))
            continue;
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "%s %s -n 3 -a %s -b 8 -e 64K -f 64 "
                 "-w 0 -r 1 -c 1 --root 1", wf_test_tool("weft-bench"),
                 wf_coll_name(a->coll), a->name);
        int code = run_capture(cmd, out, sizeof(out));
        if (code != 0 || !strstr(out, "# Out of bounds values : 0 OK"))
            wf_test_fail(__FILE__, __LINE__, "%s (exit %d):\n%s", cmd, code,
                         out);
        ran++;
    }
    ASSERT_TRUE(ran >= 18);
}

WF_TEST(tools_bench_inapplicable_algorithm_refused, 60)
{
    static char out[1 << 16];
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s broadcast -n 2 -a rd -b 8 -e 8",
             wf_test_tool("weft-bench"));
    int code = run_capture(cmd, out, sizeof(out));
    ASSERT_TRUE(code != 0 && code < 128); /* refused, not crashed */
    ASSERT_STR_CONTAINS(out, "unsupported");
    /* A node-aware algorithm with every rank on this machine. */
    snprintf(cmd, sizeof(cmd), "%s allreduce -n 3 -a hier -b 8 -e 8",
             wf_test_tool("weft-bench"));
    code = run_capture(cmd, out, sizeof(out));
    ASSERT_TRUE(code != 0 && code < 128);
    ASSERT_STR_CONTAINS(out, "algorithm hier is unsupported");
}
