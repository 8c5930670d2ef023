/*
 * test_sim.c - every registered algorithm through the schedule simulator
 * (test/harness/sim.h): world sizes 1..9, 13 and 16, edge counts, dtypes,
 * ops, roots, in place and out of place, random step orders.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "sim.h"
#include "test.h"

WF_TEST(algo_sim_all_algorithms, 600)
{
    size_t n;
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    int tested = 0;
    for (size_t i = 0; i < n; i++) {
        if (reg[i]->coll == WF_COLL_SEND || reg[i]->coll == WF_COLL_RECV)
            continue; /* one-sided halves of a pair: test_sendrecv.c */
        wf_sim_matrix(reg[i], 9);
        tested++;
    }
    ASSERT_TRUE(tested >= 1);
}

/* A ring whose sends lose their dependencies: they may read segments
 * before the reduce that fills them. */
static weft_status_t broken_build(const wf_coll_args_t *a, wf_plan_t *plan)
{
    WEFT_CHECK(wf_algo_allreduce_ring.build(a, plan));
    for (uint32_t i = 0; i < plan->nsteps; i++)
        if (plan->steps[i].kind == WF_STEP_SEND)
            plan->steps[i].deps[0] = WF_NO_DEP;
    return WEFT_OK;
}

/* The simulator itself notices a wrong plan. */
WF_TEST(algo_sim_detects_missing_dependency, 60)
{
    wf_sim_case_t c = {.coll = WF_COLL_ALLREDUCE, .size = 4, .count = 40,
                       .dtype = WEFT_INT32, .op = WEFT_SUM,
                       .chunk_bytes = 16};
    ASSERT_TRUE(wf_sim_check(&wf_algo_allreduce_ring, &c, 1));
    wf_algo_t broken = wf_algo_allreduce_ring;
    broken.build = broken_build;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (unsigned seed = 1; seed < 20; seed++)
            wf_sim_check(&broken, &c, seed);
        _exit(0); /* not detected */
    }
    int st;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
}
