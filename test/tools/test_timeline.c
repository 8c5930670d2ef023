/*
 * test_timeline.c - WEFT_TIMELINE and weft_timeline_start/stop: one event
 * per operation per rank with its fields, valid JSON, the merge tool's
 * tracks, a file cut off by a crash (test/tools/check_timeline.py reads
 * the files; it knows what the ranks below did).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

extern const char *wf_test_build_dir;

#define SMALL_ALLREDUCES 4
#define LARGE_ALLREDUCES 2
#define LARGE_COUNT (256 * 1024)
#define BROADCASTS 3

typedef struct {
    const char *job, *rdv;
    char config[512];
} tl_arg_t;

/* What every rank does: the segment's small calls, the engine's large
 * ones (checked, so that a timeline does not change results), a barrier,
 * and one allreduce on a communicator split off the first. */
static void timeline_rank(int rank, int size, void *p)
{
    const tl_arg_t *a = p;
    weft_comm_t comm, half;
    ASSERT_OK(wf_test_comm_rdv(a->job, a->rdv, rank, size, a->config,
                               &comm));
    float small[2] = {1, 2};
    for (int i = 0; i < SMALL_ALLREDUCES; i++)
        ASSERT_OK(weft_allreduce(small, small, 2, WEFT_FLOAT32, WEFT_SUM,
                                 comm));
    float *big = malloc(LARGE_COUNT * sizeof(float));
    ASSERT_TRUE(big != NULL);
    for (int i = 0; i < LARGE_ALLREDUCES; i++) {
        for (size_t k = 0; k < LARGE_COUNT; k++)
            big[k] = (float)(rank + 1);
        ASSERT_OK(weft_allreduce(big, big, LARGE_COUNT, WEFT_FLOAT32,
                                 WEFT_SUM, comm));
        ASSERT_TRUE(big[LARGE_COUNT - 1] == (float)(size * (size + 1) / 2));
    }
    free(big);
    int32_t v[4] = {rank, rank, rank, rank};
    for (int i = 0; i < BROADCASTS; i++)
        ASSERT_OK(weft_broadcast(v, v, 4, WEFT_INT32, 1, comm));
    ASSERT_EQ(v[3], 1);
    ASSERT_OK(weft_barrier(comm));
    ASSERT_OK(weft_comm_split(comm, rank % 2, rank, &half));
    int32_t x = 1;
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, half));
    ASSERT_OK(weft_comm_destroy(half));
    ASSERT_OK(weft_comm_destroy(comm));
    /* The harness ends a rank with _exit, which skips what closes the
     * file at exit. */
    ASSERT_OK(weft_timeline_stop());
}

/* Runs check_timeline.py over dir's files of `ranks` ranks. */
static void check_files(const char *dir, int ranks, const char *expect)
{
    char cmd[2048], *out = NULL;
    int n = snprintf(cmd, sizeof(cmd), "python3 test/tools/check_timeline.py "
                     "%s '%s'", wf_test_tool("weft-timeline"), expect);
    for (int r = 0; r < ranks; r++)
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " %s/tl-%d.json",
                      dir, r);
    int rc = wf_test_run_cmd(cmd, &out);
    printf("%s", out);
    ASSERT_STR_CONTAINS(out, "timeline ok");
    ASSERT_EQ(rc, 0);
    free(out);
}

WF_TEST(tools_timeline_every_operation_of_every_rank, 120)
{
    if (system("command -v python3 >/dev/null") != 0)
        WF_SKIP("python3 is not installed: the check reads the JSON with it");
    char dir[] = "/tmp/weft-timeline-XXXXXX", addr[128];
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    tl_arg_t a = {.job = wf_test_unique("timeline"), .rdv = addr};
    snprintf(a.config, sizeof(a.config),
             "WEFT_TIMEOUT=30s,WEFT_TIMELINE=%s/tl-%%r.json", dir);
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    wf_test_run_procs(3, timeline_rank, &a);
    wf_test_stop_process(pid);
    char expect[512];
    snprintf(expect, sizeof(expect),
             "{\"ranks\": 3, \"comms\": 2, \"engine\": [\"allreduce\"], "
             "\"ops\": {\"allreduce\": %d, \"broadcast\": %d, "
             "\"barrier\": 1}}",
             SMALL_ALLREDUCES + LARGE_ALLREDUCES + 1, BROADCASTS);
    check_files(dir, 3, expect);
    char rm[128];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    ASSERT_EQ(system(rm), 0);
}

/* weft_timeline_start and _stop at run time, as Horovod's
 * start_timeline/stop_timeline use them; thread ranks share the file. */
typedef struct {
    const char *job;
    pthread_barrier_t started, ran;
} api_arg_t;

static void api_rank(int rank, int size, void *p)
{
    api_arg_t *a = p;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(a->job, rank, size, "WEFT_TIMEOUT=30s",
                               &comm));
    int32_t x = rank;
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, comm));
    pthread_barrier_wait(&a->started); /* the timeline starts */
    pthread_barrier_wait(&a->started);
    for (int i = 0; i < 3; i++)
        ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, comm));
    pthread_barrier_wait(&a->ran); /* it stops */
    pthread_barrier_wait(&a->ran);
    ASSERT_OK(weft_allreduce(&x, &x, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_OK(weft_comm_destroy(comm));
}

static void *api_ranks(void *p)
{
    wf_test_run_threads(2, api_rank, p);
    return NULL;
}

WF_TEST(tools_timeline_start_and_stop_at_run_time, 60)
{
    if (system("command -v python3 >/dev/null") != 0)
        WF_SKIP("python3 is not installed: the check reads the JSON with it");
    char dir[] = "/tmp/weft-timeline-XXXXXX", path[256], cmd[512], *out;
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/api.json", dir);
    ASSERT_STATUS(weft_timeline_start(NULL), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_timeline_start("/nonexistent-dir/x/tl.json"),
                  WEFT_ERR_SYSTEM);
    ASSERT_OK(weft_timeline_stop()); /* none: nothing to do */
    api_arg_t a = {.job = wf_test_unique("tlapi")};
    pthread_barrier_init(&a.started, NULL, 3);
    pthread_barrier_init(&a.ran, NULL, 3);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, api_ranks, &a), 0);
    pthread_barrier_wait(&a.started);
    ASSERT_OK(weft_timeline_start(path));
    ASSERT_STATUS(weft_timeline_start(path), WEFT_ERR_INVALID_USAGE);
    pthread_barrier_wait(&a.started);
    pthread_barrier_wait(&a.ran);
    ASSERT_OK(weft_timeline_stop());
    ASSERT_OK(weft_timeline_stop());
    pthread_barrier_wait(&a.ran);
    pthread_join(t, NULL);
    /* Only the three calls between start and stop, of both ranks. */
    snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; e=json.load("
             "open(sys.argv[1])); x=[v for v in e if v[\"ph\"]==\"X\"]; "
             "print(len(x), sorted({v[\"args\"][\"rank\"] for v in x}), "
             "{v[\"name\"] for v in x})' %s", path);
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
    printf("%s", out);
    ASSERT_STR_CONTAINS(out, "6 [0, 1] {'allreduce'}");
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
}
