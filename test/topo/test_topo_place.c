/*
 * test_topo_place.c - the choice in use: a communicator logs at info which
 * GPU, NIC(s), NUMA node and core each local rank uses and why; the
 * progress thread is pinned only when the process is not already bound
 * more narrowly than the chosen NUMA node.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "test.h"
#include "topo/topo.h"

static void place_rank(int rank, int size, void *arg)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem((const char *)arg, rank, size,
                               "WEFT_TOPO_FILE=test/topo/one-socket-1nic.xml,"
                               "WEFT_LOG=info,WEFT_LOG_SUBSYS=init", &comm));
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(topo_comm_logs_placement, 30)
{
    if (strncmp(wf_topo_backend(), "hwloc", 5))
        WF_SKIP("built without hwloc (HWLOC=0)");
    wf_test_log_capture();
    wf_test_run_threads(2, place_rank, (void *)wf_test_unique("place"));
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "local rank 0 of 2: GPU none, NIC(s) eth0, "
                             "NUMA node 0, core 0;");
    ASSERT_STR_CONTAINS(log, "local rank 1 of 2: GPU none, NIC(s) eth0, "
                             "NUMA node 0, core 1;");
}

/* A one-node model whose node has `ncores` cores, the first on `cpu`. */
static void model(wf_topo_t *t, wf_topo_core_t *cores, int ncores, int cpu)
{
    memset(t, 0, sizeof(*t));
    t->nnuma = t->npackages = 1;
    t->ncores = ncores;
    t->cores = cores;
    for (int i = 0; i < ncores; i++)
        cores[i] = (wf_topo_core_t){.cpu = cpu + i, .numa = 0};
}

WF_TEST(topo_pin_respects_narrow_binding, 10)
{
    cpu_set_t mask;
    ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
    int first = 0, allowed = CPU_COUNT(&mask);
    while (!CPU_ISSET(first, &mask))
        first++;
    wf_topo_t t;
    wf_topo_core_t cores[CPU_SETSIZE];
    wf_topo_choice_t c = {.gpu = -1, .numa = 0, .core = 0};
    char why[160];
    /* The node fits in the mask: pinned to its first core. */
    model(&t, cores, 1, first);
    ASSERT_EQ(wf_topo_pin_cpu(&t, &c, 1, why, sizeof(why)), first);
    /* Two local ranks on that one core: left to the scheduler. */
    ASSERT_EQ(wf_topo_pin_cpu(&t, &c, 2, why, sizeof(why)), -1);
    ASSERT_STR_CONTAINS(why, "local ranks share");
    wf_topo_pin_thread(pthread_self(), first);
    cpu_set_t now;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
    ASSERT_EQ(CPU_COUNT(&now), 1);
    ASSERT_TRUE(CPU_ISSET(first, &now));
    /* Bound (now) to fewer CPUs than the node has: left as placed. */
    model(&t, cores, allowed + 1, first);
    ASSERT_EQ(wf_topo_pin_cpu(&t, &c, 1, why, sizeof(why)), -1);
    ASSERT_STR_CONTAINS(why, "left as placed");
}
