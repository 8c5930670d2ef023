/*
 * test_soak.c - many allreduces of random sizes, dtypes and ops, each
 * checked element by element against the independent expectation in
 * coll_util (small-integer patterns, exact in every dtype).  `make test`
 * runs WF_SOAK_ITERS=1500 (default) on 3 process ranks; `make soak` runs
 * 100,000.  Every rank draws the same sequence from one seed, so the ranks
 * agree on each call's arguments; the seed is printed for replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_util.h"
#include "test.h"

typedef struct {
    const char *rdv;
    const char *job;
    unsigned seed;
    long iters;
} soak_arg_t;

static const weft_dtype_t dtypes[] = {
    WEFT_INT8,  WEFT_UINT8,   WEFT_INT32,    WEFT_UINT32,  WEFT_INT64,
    WEFT_UINT64, WEFT_FLOAT16, WEFT_BFLOAT16, WEFT_FLOAT32, WEFT_FLOAT64};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX,
                                WEFT_AVG};

/* Sizes spread over decades: mostly small, sometimes chunk-sized, now and
 * then a few hundred thousand elements. */
static size_t random_count(unsigned *seed)
{
    unsigned r = (unsigned)rand_r(seed);
    switch (r % 8) {
    case 0:
        return 0;
    case 1:
    case 2:
    case 3:
        return 1 + (size_t)rand_r(seed) % 64;
    case 4:
    case 5:
        return 1 + (size_t)rand_r(seed) % 4096;
    case 6:
        return 1 + (size_t)rand_r(seed) % 70000;
    default:
        return 1 + (size_t)rand_r(seed) % 300000;
    }
}

static void soak_rank(int rank, int size, void *p)
{
    const soak_arg_t *a = p;
    weft_comm_params_t prm = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                      WEFT_COMM_PARAM_CONFIG,
        .rank = rank, .size = size, .rendezvous = a->rdv, .job_id = a->job,
        .config = "WEFT_TIMEOUT=60s,WEFT_CHUNK_SIZE=32k"};
    weft_comm_t comm;
    ASSERT_OK(weft_comm_create(&prm, &comm));
    unsigned seed = a->seed;
    size_t cap = 300000 * 8;
    char *send = malloc(cap), *recv = malloc(cap);
    ASSERT_TRUE(send && recv);
    for (long it = 0; it < a->iters; it++) {
        size_t count = random_count(&seed);
        weft_dtype_t d = dtypes[(unsigned)rand_r(&seed) % 10];
        weft_op_t op = ops[(unsigned)rand_r(&seed) % 5];
        bool in_place = rand_r(&seed) % 2;
        cu_fill(send, count, rank, op, d);
        char *src = in_place ? recv : send;
        if (in_place)
            memcpy(recv, send, count * cu_dtype_size(d));
        ASSERT_OK(weft_allreduce(src, recv, count, d, op, comm));
        char what[96];
        snprintf(what, sizeof(what), "iteration %ld (seed %u)", it, a->seed);
        size_t bad = cu_check_allreduce(recv, count, size, op, d, what);
        if (bad)
            wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong elements", what,
                         bad);
    }
    free(send), free(recv);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(fault_soak_random_allreduces, 600)
{
    const char *env = getenv("WF_SOAK_ITERS");
    soak_arg_t a = {.iters = env ? atol(env) : 1500,
                    .seed = (unsigned)getpid(),
                    .job = wf_test_unique("soak")};
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    a.rdv = addr;
    printf("soak: %ld allreduces on 3 ranks, seed %u\n", a.iters, a.seed);
    wf_test_run_procs(3, soak_rank, &a);
    wf_test_stop_process(pid);
}
