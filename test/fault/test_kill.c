/*
 * test_kill.c - a rank killed with SIGKILL at a random point of a loop of
 * mixed collectives: every survivor must get WEFT_ERR_REMOTE or
 * WEFT_ERR_TIMEOUT within twice the timeout, naming the dead rank, and
 * exit; no hang, no crash, no process left behind.  Also a user abort on
 * one rank reaching the others, and a clean destroy not being mistaken for
 * a failure.
 *
 * The ranks are processes joined through a real weft-rendezvous on
 * loopback; each survivor writes one line "status|message" into a pipe
 * that the test reads.  The trial count comes from WF_FAULT_TRIALS
 * (`make soak` raises it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define RANKS 4
#define TIMEOUT_MS 4000

/* Floats per operation and the transport of the trials: the default,
 * small messages through the pair's rings, unless a test says otherwise. */
static size_t kill_count = 4096;
static const char *kill_transport = "auto";
/* Ranks 0-1 and 2-3 as two machines, through the node-aware algorithms. */
static bool kill_hier;

static void report(int fd, int rank, weft_status_t st, const char *msg)
{
    char line[1024];
    int len = snprintf(line, sizeof(line), "%d|%s|%s\n", rank,
                       weft_status_name(st), msg ? msg : "(no message)");
    if (write(fd, line, (size_t)len) != len)
        _exit(4);
}

/* A kill during creation fails the others' weft_comm_create: that is a
 * report too (the rendezvous times out waiting for the dead rank). */
static weft_comm_t join(const char *rdv, const char *job, int rank, int fd)
{
    char cfg[224], hier[64] = "";
    if (kill_hier)
        snprintf(hier, sizeof(hier), ",WEFT_NODE_ID=machine%d,WEFT_ALGO=hier",
                 rank / 2);
    snprintf(cfg, sizeof(cfg),
             "WEFT_TIMEOUT=%dms,WEFT_CHUNK_SIZE=%s,WEFT_TRANSPORT=%s%s",
             TIMEOUT_MS, kill_count > 4096 ? "256k" : "8k", kill_transport,
             hier);
    weft_comm_params_t prm = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                      WEFT_COMM_PARAM_CONFIG,
        .rank = rank, .size = RANKS, .rendezvous = rdv, .job_id = job,
        .config = cfg};
    weft_comm_t comm = NULL;
    weft_status_t st = weft_comm_create(&prm, &comm);
    if (st != WEFT_OK) {
        report(fd, rank, st, "weft_comm_create failed");
        _exit(0);
    }
    return comm;
}

/* One operation of the mixed loop, chosen by the iteration number. */
static weft_status_t mixed_op(weft_comm_t comm, int it, float *a, float *b,
                              size_t n)
{
    switch (it % 6) {
    case 0:
        return weft_allreduce(a, b, n, WEFT_FLOAT32, WEFT_SUM, comm);
    case 1:
        return weft_broadcast(a, a, n, WEFT_FLOAT32, it % RANKS, comm);
    case 2:
        return weft_allgather(a, b, n / RANKS, WEFT_FLOAT32, comm);
    case 3:
        return weft_reduce(a, b, n, WEFT_FLOAT32, WEFT_MAX, it % RANKS, comm);
    case 4:
        return weft_barrier(comm);
    default:
        return weft_alltoall(a, b, n / RANKS, WEFT_FLOAT32, comm);
    }
}

/* A rank: runs the loop until an operation fails, reports, exits. */
static void loop_rank(const char *rdv, const char *job, int rank, int fd)
{
    weft_comm_t comm = join(rdv, job, rank, fd);
    size_t n = kill_count;
    float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
    weft_status_t st = WEFT_OK;
    for (int it = 0; st == WEFT_OK; it++)
        st = mixed_op(comm, it, a, b, n);
    const char *msg = NULL;
    weft_comm_get_error(comm, &msg);
    report(fd, rank, st, msg);
    weft_comm_destroy(comm);
    free(a), free(b);
    _exit(0);
}

typedef struct {
    int rank;
    char status[32];
    char msg[900];
} report_t;

/* Reads "rank|status|message" lines until every survivor reported or the
 * deadline passed; returns the number read. */
static int read_reports(int fd, report_t *out, int want, double deadline)
{
    static char buf[8192];
    size_t got = 0;
    int n = 0;
    while (n < want && wf_test_now_s() < deadline) {
        ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (r < 0 && errno == EAGAIN) {
            usleep(10000);
            continue;
        }
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
        char *line;
        while ((line = strchr(buf, '\n')) != NULL) {
            *line = '\0';
            report_t *rep = &out[n];
            char *s1 = strchr(buf, '|'), *s2 = s1 ? strchr(s1 + 1, '|') : NULL;
            if (s1 && s2 && n < want) {
                rep->rank = atoi(buf);
                snprintf(rep->status, sizeof(rep->status), "%.*s",
                         (int)(s2 - s1 - 1), s1 + 1);
                snprintf(rep->msg, sizeof(rep->msg), "%s", s2 + 1);
                n++;
            }
            size_t used = (size_t)(line + 1 - buf);
            memmove(buf, line + 1, got - used);
            got -= used;
            buf[got] = '\0';
        }
    }
    return n;
}

static void one_trial(const char *rdv, int trial, unsigned *seed)
{
    char job[64];
    snprintf(job, sizeof(job), "%s-%d", wf_test_unique("kill"), trial);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pids[RANKS];
    for (int r = 0; r < RANKS; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            close(fds[0]);
            loop_rank(rdv, job, r, fds[1]);
        }
    }
    close(fds[1]);
    int victim = (int)(rand_r(seed) % RANKS);
    useconds_t delay = 50000 + rand_r(seed) % 450000; /* 50-500 ms */
    usleep(delay);
    ASSERT_EQ(kill(pids[victim], SIGKILL), 0);
    double killed_at = wf_test_now_s();
    report_t reps[RANKS];
    int fl = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, fl | O_NONBLOCK);
    int n = read_reports(fds[0], reps, RANKS - 1,
                         killed_at + 2.0 * TIMEOUT_MS / 1000.0 + 1.0);
    double took = wf_test_now_s() - killed_at;
    /* Reap everyone; a survivor still running past the deadline hangs. */
    for (int r = 0; r < RANKS; r++) {
        if (r != victim && n < RANKS - 1)
            kill(pids[r], SIGKILL);
        int ws;
        ASSERT_EQ(waitpid(pids[r], &ws, 0), pids[r]);
        if (r != victim && n == RANKS - 1 &&
            !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0))
            wf_test_fail(__FILE__, __LINE__, "trial %d: rank %d ended with "
                         "status 0x%x", trial, r, ws);
    }
    close(fds[0]);
    if (n < RANKS - 1)
        wf_test_fail(__FILE__, __LINE__, "trial %d: rank %d killed after %u "
                     "ms; only %d of %d survivors reported within %.1f s",
                     trial, victim, delay / 1000, n, RANKS - 1, took);
    char peer[32];
    snprintf(peer, sizeof(peer), "peer %d (", victim);
    for (int i = 0; i < n; i++) {
        bool remote = strcmp(reps[i].status, "ERR_REMOTE") == 0;
        bool timeout = strcmp(reps[i].status, "ERR_TIMEOUT") == 0;
        if (!(remote || timeout) || (remote && !strstr(reps[i].msg, peer)))
            wf_test_fail(__FILE__, __LINE__, "trial %d (rank %d killed): "
                         "rank %d got %s: %s", trial, victim, reps[i].rank,
                         reps[i].status, reps[i].msg);
    }
    printf("trial %d: rank %d killed after %3u ms, survivors reported in "
           "%.2f s: %s\n", trial, victim, delay / 1000, took, reps[0].msg);
}

static void kill_trials(int default_trials)
{
    const char *env = getenv("WF_FAULT_TRIALS");
    int trials = env ? atoi(env) : default_trials;
    unsigned seed = (unsigned)getpid();
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    for (int t = 0; t < trials; t++)
        one_trial(addr, t, &seed);
    wf_test_stop_process(pid);
}

WF_TEST(fault_kill9_one_rank_survivors_fail_fast, 300)
{
    kill_trials(20);
}

/* Over shared memory with messages of 4 MiB: most are read from the
 * sender's memory (process_vm_readv) when the kill comes, so a read of a
 * dead process and a FIN that never comes are both met. */
WF_TEST(fault_kill9_shm_large_messages, 300)
{
    kill_count = 1u << 20;
    kill_transport = "shm";
    kill_trials(8);
}

/* Small operations among the ranks of one machine run through the shared
 * segment (src/node/), where nothing but the dead rank's pidfd tells it
 * is gone; alltoall between them still takes messages. */
WF_TEST(fault_kill9_node_collectives, 300)
{
    kill_count = 16;
    kill_transport = "auto";
    kill_trials(12);
}

/* The node-aware algorithms' phases (two made-up machines of two ranks):
 * a rank killed inside or across fails every survivor as a flat
 * algorithm's would. */
WF_TEST(fault_kill9_node_aware_algorithms, 300)
{
    kill_hier = true;
    kill_trials(8);
}
