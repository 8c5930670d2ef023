/*
 * test_valgrind.c - valgrind's leak check over one full communicator
 * lifecycle: create (rendezvous, job secret, authenticated connections),
 * collectives, destroy.  The cycle is an ordinary test (tools_leakcheck_cycle)
 * that checks its own results; tools_valgrind_leak_check runs it again under
 * valgrind and fails on any definite or indirect leak or memory error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

extern const char *wf_test_build_dir;

static void cycle_rank(int rank, int size, void *arg)
{
    weft_comm_t comm;
    int32_t v[64], all[2 * 64];

    ASSERT_OK(wf_test_comm_mem(arg, rank, size, NULL, &comm));
    for (int i = 0; i < 64; i++)
        v[i] = rank * 100 + i;
    ASSERT_OK(weft_allreduce(v, v, 64, WEFT_INT32, WEFT_SUM, comm));
    for (int i = 0; i < 64; i++)
        ASSERT_EQ(v[i], 100 + 2 * i); /* (0 + i) + (100 + i) */
    ASSERT_OK(weft_broadcast(v, v, 64, WEFT_INT32, 1, comm));
    ASSERT_OK(weft_allgather(v, all, 64, WEFT_INT32, comm));
    for (int i = 0; i < 2 * 64; i++)
        ASSERT_EQ(all[i], 100 + 2 * (i % 64));
    ASSERT_OK(weft_barrier(comm));
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(tools_leakcheck_cycle, 60)
{
    char *name = (char *)wf_test_unique("leak"); /* malloc'ed: ours */

    wf_test_run_threads(2, cycle_rank, name);
    free(name);
}

WF_TEST(tools_valgrind_leak_check, 300)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    WF_SKIP("sanitizer build: valgrind cannot run sanitized binaries");
#endif
    if (system("valgrind --version >/dev/null 2>&1") != 0)
        WF_SKIP("valgrind is not installed (apt-get install valgrind)");
    char cmd[1024];
    /* The runner forks the test; valgrind follows forks, and every process
     * exits 99 on a leak or a memory error.  Libraries' one-time
     * allocations (libcrypto, the dynamic loader) are "still reachable",
     * not leaks. */
    snprintf(cmd, sizeof(cmd),
             "valgrind -q --leak-check=full --show-leak-kinds=definite,"
             "indirect --errors-for-leak-kinds=definite,indirect "
             "--error-exitcode=99 %s/test/weft-test --build %s "
             "tools_leakcheck_cycle 2>&1",
             wf_test_build_dir, wf_test_build_dir);
    int st = system(cmd);
    ASSERT_TRUE(WIFEXITED(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
}
