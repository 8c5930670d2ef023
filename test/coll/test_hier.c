/*
 * test_hier.c - the node-aware algorithms (src/algo/hier_*.c) on machines
 * made up with WEFT_NODE_ID: uneven ones (3 + 1, 2 + 2 + 1), even ones
 * (2 + 2, where the allreduce takes its slices), one rank per machine and
 * all ranks on one (where they do not apply and the cost model stays
 * flat), against values computed here; forced and chosen by the cost
 * model; ranks that disagree on the count.  The collective matrix runs
 * every node-aware collective too, on 3 + 1 and 2 + 2 + 1 (test_colls.c),
 * and the plan simulator on machines of 2 and 3 (test/harness/sim.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "plan/coll.h"
#include "test.h"

typedef struct {
    const char *job;
    const int *node_of; /* each rank's made-up machine */
    const char *algo;   /* WEFT_ALGO */
    weft_status_t expect; /* of the first call */
} hier_arg_t;

static void hier_rank(int rank, int size, void *p)
{
    const hier_arg_t *a = p;
    char cfg[256];
    snprintf(cfg, sizeof(cfg), "WEFT_NODE_ID=machine%d,WEFT_ALGO=%s,"
             "WEFT_TIMEOUT=30s,WEFT_CHUNK_SIZE=4k", a->node_of[rank], a->algo);
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(a->job, rank, size, cfg, &comm));
    /* Counts below, at and above the ranks per machine, odd and even,
     * several chunks; every op; in and out of place. */
    size_t counts[] = {1, 2, 3, 4, 6, 1000, 4096, 12345};
    weft_op_t ops[] = {WEFT_SUM, WEFT_MAX, WEFT_MIN, WEFT_PROD, WEFT_AVG};
    for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++)
        for (size_t o = 0; o < sizeof(ops) / sizeof(*ops); o++)
            for (int in_place = 0; in_place < 2; in_place++) {
                size_t n = counts[k];
                weft_dtype_t d = ops[o] == WEFT_AVG ? WEFT_FLOAT64
                                 : ops[o] == WEFT_PROD ? WEFT_INT64
                                                       : WEFT_INT32;
                size_t es = cu_dtype_size(d);
                char *send = malloc(n * es), *recv = malloc(n * es);
                cu_fill(send, n, rank, cu_pattern_op(WF_COLL_ALLREDUCE,
                                                     ops[o]), d);
                if (in_place)
                    memcpy(recv, send, n * es);
                weft_status_t st = weft_allreduce(in_place ? recv : send,
                                                  recv, n, d, ops[o], comm);
                if (a->expect != WEFT_OK) {
                    ASSERT_STATUS(st, a->expect);
                    free(send);
                    free(recv);
                    weft_comm_abort(comm);
                    return;
                }
                if (st != WEFT_OK)
                    wf_test_fail(__FILE__, __LINE__, "allreduce of %zu, op "
                                 "%d, in place %d on rank %d: %s", n, ops[o],
                                 in_place, rank, weft_strerror(st));
                for (size_t i = 0; i < n; i++) {
                    double want, got = cu_get(recv, d, i);
                    cu_expected(WF_COLL_ALLREDUCE, size, n, d, ops[o], 0,
                                rank, i, &want);
                    if (got != want)
                        wf_test_fail(__FILE__, __LINE__, "allreduce of %zu "
                                     "(op %d, in place %d) rank %d element "
                                     "%zu: %g, expected %g", n, ops[o],
                                     in_place, rank, i, got, want);
                }
                free(send);
                free(recv);
            }
    ASSERT_OK(weft_comm_destroy(comm));
}

static void run(int size, const int *node_of, const char *algo,
                weft_status_t expect)
{
    hier_arg_t a = {wf_test_unique("hier"), node_of, algo, expect};
    wf_test_run_threads(size, hier_rank, &a);
}

WF_TEST(coll_hier_allreduce_uneven_3_1, 120)
{
    run(4, (const int[]){0, 0, 0, 1}, "allreduce:hier", WEFT_OK);
}

WF_TEST(coll_hier_allreduce_uneven_2_2_1, 120)
{
    run(5, (const int[]){0, 0, 1, 1, 2}, "allreduce:hier", WEFT_OK);
    /* Interleaved: a machine's ranks need not be consecutive. */
    run(5, (const int[]){0, 1, 0, 2, 1}, "allreduce:hier", WEFT_OK);
}

WF_TEST(coll_hier_allreduce_even_2_2_slices, 120)
{
    run(4, (const int[]){0, 0, 1, 1}, "allreduce:hier", WEFT_OK);
    run(6, (const int[]){0, 1, 2, 0, 1, 2}, "allreduce:hier", WEFT_OK);
}

/* Where no machine has two ranks, or one machine has them all, there is
 * nothing to be node-aware about: forcing it says so, auto stays flat. */
WF_TEST(coll_hier_allreduce_flat_layouts, 120)
{
    wf_test_log_capture();
    run(4, (const int[]){0, 1, 2, 3}, "allreduce:hier",
        WEFT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "algorithm hier is unsupported");
    weft_set_logger(NULL, NULL);
    run(4, (const int[]){0, 1, 2, 3}, "auto", WEFT_OK);
    run(3, (const int[]){0, 0, 0}, "auto", WEFT_OK);
}

/* The cost model on a layout where the hierarchy pays: auto is right
 * whatever it picks, and says what it picked. */
WF_TEST(coll_hier_allreduce_auto, 120)
{
    run(6, (const int[]){0, 0, 0, 1, 1, 1}, "auto", WEFT_OK);
}

/* Ranks that disagree on the count (machines 0-1 and 2-3): every rank
 * fails with WEFT_ERR_MISMATCH naming both calls, as with a flat
 * algorithm, not a hang or a wrong sum. */
static pthread_barrier_t mismatch_seen;

static void mismatch_rank(int rank, int size, void *p)
{
    char cfg[160];
    snprintf(cfg, sizeof(cfg), "WEFT_NODE_ID=machine%d,WEFT_ALGO=hier,"
             "WEFT_TIMEOUT=20s", rank / 2);
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(p, rank, size, cfg, &comm));
    int32_t v[16] = {0};
    double t0 = wf_test_now_s();
    weft_status_t st = weft_allreduce(v, v, rank == 3 ? 12 : 10, WEFT_INT32,
                                      WEFT_SUM, comm);
    /* A rank whose part ended before the stray message came learns it
     * at its next call. */
    if (st == WEFT_OK)
        st = weft_barrier(comm);
    ASSERT_STATUS(st, WEFT_ERR_MISMATCH);
    ASSERT_TRUE(wf_test_now_s() - t0 < 15.0);
    /* Every rank has its answer before any leaves: an abort closes
     * connections that a slower rank would count as a lost peer. */
    pthread_barrier_wait(&mismatch_seen);
    weft_comm_abort(comm);
}

WF_TEST(coll_hier_mismatched_counts, 60)
{
    wf_test_log_capture();
    pthread_barrier_init(&mismatch_seen, NULL, 4);
    wf_test_run_threads(4, mismatch_rank, (void *)wf_test_unique("hiermm"));
    ASSERT_STR_CONTAINS(wf_test_log_text(), "allreduce(count 10, int32");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "allreduce(count 12, int32");
    weft_set_logger(NULL, NULL);
}
