/*
 * test_topo_staging.c - a communicator's staging memory: on this host the
 * engine's kept scratch block and the TCP transport's scratch are bound
 * to the NUMA node the topology chose, and the placement line says so; a
 * communicator planned on an XML file of another node leaves them
 * unbound, says why, and computes the same result.
 */
#include <pthread.h>
#include <string.h>

#include "comm.h"
#include "sched/engine_impl.h"
#include "tcp/tcp.h"
#include "test.h"
#include "topo_test.h"

#define N_FLOATS (256 * 1024) /* 1 MiB: the ring keeps 64 KiB+ of scratch */

typedef struct {
    const char *name;
    const char *config;
    bool bound;        /* expected: bound to the rank's chosen node */
} staging_case_t;

/* The engine's kept block and the transport's scratch, checked while the
 * engine cannot free them (progress_lock). */
static void check_staging(weft_comm_t comm, bool bound)
{
    wf_comm_impl_t *c = comm->impl;
    wf_engine_t *e = c->engine;
    struct wf_tctx *tcp = (struct wf_tctx *)e->tctx;
    int only;
    ASSERT_EQ(e->numa, c->staging_numa);
    ASSERT_EQ(tcp->cfg.topo_numa, c->staging_numa);
    pthread_mutex_lock(&e->progress_lock);
    ASSERT_TRUE(e->spare_scratch != NULL && e->spare_bytes >= 64 * 1024);
    if (bound) {
        ASSERT_TRUE(c->staging_numa >= 0);
        ASSERT_TRUE(wf_test_mem_on_node(e->spare_scratch, c->staging_numa));
        ASSERT_TRUE(wf_test_mem_on_node(tcp->scratch, c->staging_numa));
    } else {
        ASSERT_EQ(c->staging_numa, -1);
        ASSERT_EQ(wf_test_mempolicy(e->spare_scratch, &only), 0);
        ASSERT_EQ(wf_test_mempolicy(tcp->scratch, &only), 0);
    }
    pthread_mutex_unlock(&e->progress_lock);
}

static void staging_rank(int rank, int size, void *arg)
{
    const staging_case_t *s = arg;
    weft_comm_t comm;
    float *v = malloc(N_FLOATS * sizeof(float));
    ASSERT_TRUE(v != NULL);
    for (int i = 0; i < N_FLOATS; i++)
        v[i] = (float)(rank + 1);
    ASSERT_OK(wf_test_comm_mem(s->name, rank, size, s->config, &comm));
    ASSERT_OK(weft_allreduce(v, v, N_FLOATS, WEFT_FLOAT32, WEFT_SUM, comm));
    ASSERT_TRUE(v[0] == 3.0f && v[N_FLOATS - 1] == 3.0f);
    check_staging(comm, s->bound);
    ASSERT_OK(weft_comm_destroy(comm));
    free(v);
}

WF_TEST(topo_staging_bound_on_this_host, 30)
{
    wf_test_need_binding();
    staging_case_t s = {
        .name = wf_test_unique("staging"),
        .config = "WEFT_TRANSPORT=tcp,WEFT_ALGO=allreduce:ring,"
                  "WEFT_LOG=info,WEFT_LOG_SUBSYS=init",
        .bound = true,
    };
    wf_test_log_capture();
    wf_test_run_threads(2, staging_rank, &s);
    const char *log = wf_test_log_text();
    const char *line = strstr(log, "local rank 0 of 2:");
    ASSERT_TRUE(line != NULL);
    ASSERT_STR_CONTAINS(line, "; staging memory bound to NUMA node ");
    ASSERT_STR_CONTAINS(strstr(log, "local rank 1 of 2:"),
                        "; staging memory bound to NUMA node ");
}

WF_TEST(topo_staging_unbound_for_xml_topology, 30)
{
    staging_case_t s = {
        .name = wf_test_unique("staging-xml"),
        .config = "WEFT_TRANSPORT=tcp,WEFT_ALGO=allreduce:ring,"
                  "WEFT_TOPO_FILE=test/topo/one-socket-1nic.xml,"
                  "WEFT_LOG=info,WEFT_LOG_SUBSYS=init",
        .bound = false,
    };
    wf_test_log_capture();
    wf_test_run_threads(2, staging_rank, &s);
    /* An HWLOC=0 build has no placement line: the load said why. */
    if (!strncmp(wf_topo_backend(), "hwloc", 5))
        ASSERT_STR_CONTAINS(strstr(wf_test_log_text(), "local rank 0 of 2:"),
                            "; staging memory not bound: the topology of "
                            "test/topo/one-socket-1nic.xml is not this host");
}
