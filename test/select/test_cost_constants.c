/*
 * test_cost_constants.c - a communicator tells the cost model whether its
 * transport copies large messages once between ranks on one machine,
 * which chooses the model's one-host constants (docs/algorithms.md).
 */
#include "comm.h"
#include "test.h"

typedef struct {
    const char *name;
    const char *env;
    size_t single_copy_min[2];
} constants_case_t;

static void constants_rank(int rank, int size, void *arg)
{
    constants_case_t *c = arg;
    weft_comm_t comm;
    float x = 1.0f;
    ASSERT_OK(wf_test_comm_mem(c->name, rank, size, c->env, &comm));
    c->single_copy_min[rank] = comm->impl->single_copy_min;
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_FLOAT32, WEFT_SUM, comm));
    ASSERT_TRUE(x == 2.0f);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void check(const char *env, size_t want)
{
    constants_case_t c = {.name = wf_test_unique("cost-constants"),
                          .env = env};
    wf_test_run_threads(2, constants_rank, &c);
    ASSERT_EQ(c.single_copy_min[0], want);
    ASSERT_EQ(c.single_copy_min[1], want);
}

WF_TEST(select_comm_tells_the_cost_model_about_the_single_copy, 30)
{
    check("WEFT_TRANSPORT=tcp", 64 << 10); /* the default threshold */
    check("WEFT_TRANSPORT=tcp,WEFT_TCP_CMA_MIN=1m", 1 << 20);
    check("WEFT_TRANSPORT=tcp,WEFT_TCP_CMA_MIN=0", 0);
}

/* Over several transports the ranks of one machine are the first one's,
 * shared memory: its single copy counts, not the network's member's. */
WF_TEST(select_route_tells_the_cost_model_about_shm_single_copy, 30)
{
    check("WEFT_TRANSPORT=auto,WEFT_TCP_CMA_MIN=0", 32 << 10);
    check("WEFT_TRANSPORT=auto,WEFT_SHM_CMA_MIN=128k,WEFT_TCP_CMA_MIN=1m",
          128 << 10);
    check("WEFT_TRANSPORT=auto,WEFT_SHM_CMA_MIN=0", 0);
}
