/*
 * test_rdv_restart.c - the rendezvous server killed while ranks wait in
 * weft_comm_create: they fail with a clear error naming the server, well
 * within the timeout; a server started again then serves a new job.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

typedef struct {
    const char *rdv;
    const char *job;
    int size;
    weft_status_t status;
    double took;
} join_arg_t;

static char log_text[16384];
static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx, (void)level, (void)subsys;
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof(log_text) - used, "%s\n", line);
}

/* Rank 0 of a job whose other ranks never come: it waits in creation. */
static void waiting_rank(const char *rdv, const char *job, int fd)
{
    weft_set_logger(capture, NULL);
    weft_comm_params_t p = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                      WEFT_COMM_PARAM_TIMEOUT,
        .rank = 0, .size = 3, .rendezvous = rdv, .job_id = job,
        .timeout_ms = 20000};
    weft_comm_t comm;
    double t0 = wf_test_now_s();
    weft_status_t st = weft_comm_create(&p, &comm);
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s %.2f %s", weft_status_name(st),
                     wf_test_now_s() - t0, log_text);
    if (write(fd, line, (size_t)n) < 0)
        _exit(2);
    _exit(0);
}

static void ok_rank(int rank, int size, void *p)
{
    const char *rdv = p;
    weft_comm_params_t prm = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID,
        .rank = rank, .size = size, .rendezvous = rdv,
        .job_id = "after-restart"};
    weft_comm_t comm;
    ASSERT_OK(weft_comm_create(&prm, &comm));
    int32_t v = rank + 1;
    ASSERT_OK(weft_allreduce(&v, &v, 1, WEFT_INT32, WEFT_SUM, comm));
    ASSERT_EQ(v, 3);
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(fault_rendezvous_killed_during_init_then_restarted, 60)
{
    char addr[128];
    int server = wf_test_start_rendezvous(addr, sizeof(addr));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t rank = fork();
    ASSERT_TRUE(rank >= 0);
    if (rank == 0) {
        close(fds[0]);
        waiting_rank(addr, wf_test_unique("rdv-kill"), fds[1]);
    }
    close(fds[1]);
    usleep(500000); /* the rank is registered and waits for the others */
    ASSERT_EQ(kill(server, SIGKILL), 0);
    waitpid(server, NULL, 0);
    static char report[4096];
    ssize_t n = 0, r;
    while ((r = read(fds[0], report + n, sizeof(report) - 1 - (size_t)n)) > 0)
        n += r;
    report[n > 0 ? n : 0] = '\0';
    int ws;
    ASSERT_EQ(waitpid(rank, &ws, 0), rank);
    ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    char status[32];
    double took = -1;
    ASSERT_EQ(sscanf(report, "%31s %lf", status, &took), 2);
    printf("rank after the server died: %s in %.2f s\n", status, took);
    ASSERT_TRUE(strcmp(status, "OK") != 0);
    ASSERT_TRUE(took < 10.0); /* well within the 20 s timeout */
    ASSERT_STR_CONTAINS(report, addr);
    /* A new server serves a new job. */
    server = wf_test_start_rendezvous(addr, sizeof(addr));
    wf_test_run_threads(2, ok_rank, addr);
    wf_test_stop_process(server);
}
