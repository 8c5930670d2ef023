/*
 * test_apps_cg.c - the CG mini-app (bench/apps/cg/) on weft against the
 * same solver on Open MPI, the independent reference: both programs link
 * one solver object and differ only in their communication library, so
 * their residual histories may differ only by the order in which the
 * allreduces add the ranks' partial dot products.
 *   2 ranks: a + b == b + a in IEEE arithmetic, whatever the algorithm:
 *            every residual norm and the final error must match bit for bit.
 *   3 and 4 ranks: the libraries may group three or four partial sums
 *            differently, so the histories must agree within CG_REL_TOL
 *            (relative, per iteration).  The problem is small and short
 *            enough (30 iterations, the residual still well above rounding
 *            level) that a different order moves only the last bits.
 * mk/apps.mk builds the programs (make test, make apps); without mpicc or
 * mpirun the tests skip and say so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define CG_ARGS "-x 16 -y 16 -z 16 -i 30"
#define CG_ITERS 30
#define CG_REL_TOL 1e-10
/* Open MPI over its shared memory; no binding, since the ranks may
 * outnumber the cores. */
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --bind-to none " \
               "--mca btl self,vader"

/* The residual norms of iterations 0..CG_ITERS, then the error. */
typedef struct {
    double v[CG_ITERS + 2];
} history_t;

static const char *program(const char *name)
{
    const char *path = wf_test_tool(name);
    if (access(path, X_OK) != 0)
        WF_SKIP("%s is not built (make test or make apps builds it)", path);
    return path;
}

/* The MPI program and mpirun, or a skip saying which is missing. */
static const char *mpi_program(void)
{
    if (system("command -v mpicc >/dev/null 2>&1") != 0)
        WF_SKIP("mpicc not found: the MPI twin of the CG mini-app is not "
                "built (scripts/install-compare-deps.sh installs Open MPI)");
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        WF_SKIP("mpirun not found (scripts/install-compare-deps.sh "
                "installs Open MPI)");
    return program("../apps/cg_mpi");
}

/* Runs `cmd` and reads its history from the exact %a values. */
static void run(const char *cmd, history_t *h)
{
    char *out;
    int code = wf_test_run_cmd(cmd, &out);
    if (code != 0)
        fprintf(stderr, "%s\n---\n%s\n", cmd, out);
    ASSERT_EQ(code, 0);
    int seen = 0;
    for (char *line = out; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        int k;
        char hex[64];
        if (sscanf(line, "cg: iter %d %63s", &k, hex) == 2) {
            ASSERT_TRUE(k >= 0 && k <= CG_ITERS);
            h->v[k] = strtod(hex, NULL);
            seen++;
        } else if (sscanf(line, "cg: error %63s", hex) == 1) {
            h->v[CG_ITERS + 1] = strtod(hex, NULL);
            seen++;
        }
    }
    if (seen != CG_ITERS + 2)
        fprintf(stderr, "%s\n---\n%s\n", cmd, out);
    ASSERT_EQ(seen, CG_ITERS + 2);
    free(out);
}

/* Both histories on n ranks. */
static void run_both(int n, history_t *weft, history_t *mpi)
{
    const char *mpi_prog = mpi_program();
    const char *weft_prog = program("../apps/cg_weft");
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s -n %d %s " CG_ARGS,
             wf_test_tool("weftrun"), n, weft_prog);
    run(cmd, weft);
    snprintf(cmd, sizeof(cmd), MPIRUN " -np %d %s " CG_ARGS, n, mpi_prog);
    run(cmd, mpi);
    /* A solver that went wrong on both sides alike would still agree:
     * the residual must fall, and stay positive and finite. */
    ASSERT_TRUE(mpi->v[CG_ITERS] > 0 && mpi->v[CG_ITERS] < mpi->v[0] / 10);
}

WF_TEST(tools_apps_cg_2_ranks_bitwise_as_mpi, 60)
{
    history_t weft, mpi;
    run_both(2, &weft, &mpi);
    for (int k = 0; k < CG_ITERS + 2; k++)
        if (memcmp(&weft.v[k], &mpi.v[k], sizeof(double)) != 0) {
            fprintf(stderr, "value %d: weft %a, mpi %a\n", k, weft.v[k],
                    mpi.v[k]);
            ASSERT_TRUE(!"2-rank histories differ");
        }
}

static void within_tolerance(int n)
{
    history_t weft, mpi;
    run_both(n, &weft, &mpi);
    int same = 0;
    for (int k = 0; k < CG_ITERS + 2; k++) {
        double rel = fabs(weft.v[k] - mpi.v[k]) / fabs(mpi.v[k]);
        if (!(rel <= CG_REL_TOL)) {
            fprintf(stderr, "value %d: weft %a, mpi %a, relative %g\n", k,
                    weft.v[k], mpi.v[k], rel);
            ASSERT_TRUE(!"histories differ beyond CG_REL_TOL");
        }
        same += memcmp(&weft.v[k], &mpi.v[k], sizeof(double)) == 0;
    }
    printf("%d ranks: %d of %d values bitwise equal\n", n, same,
           CG_ITERS + 2);
}

WF_TEST(tools_apps_cg_3_ranks_close_to_mpi, 60)
{
    within_tolerance(3);
}

WF_TEST(tools_apps_cg_4_ranks_close_to_mpi, 60)
{
    within_tolerance(4);
}
