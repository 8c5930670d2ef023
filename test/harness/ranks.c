/*
 * ranks.c - running a test body as several ranks: threads over the
 * in-memory store, or forked processes; plus helpers for tools.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

extern const char *wf_test_build_dir;

typedef struct {
    int rank, size;
    wf_rank_fn fn;
    void *arg;
} thread_arg_t;

static void *rank_thread(void *p)
{
    thread_arg_t *a = p;
    a->fn(a->rank, a->size, a->arg);
    return NULL;
}

void wf_test_run_threads(int size, wf_rank_fn fn, void *arg)
{
    pthread_t tid[256];
    thread_arg_t args[256];
    ASSERT_TRUE(size > 0 && size <= 256);
    for (int r = 0; r < size; r++) {
        args[r] = (thread_arg_t){r, size, fn, arg};
        ASSERT_EQ(pthread_create(&tid[r], NULL, rank_thread, &args[r]), 0);
    }
    for (int r = 0; r < size; r++)
        pthread_join(tid[r], NULL);
}

void wf_test_run_procs(int size, wf_rank_fn fn, void *arg)
{
    pid_t pids[256];
    ASSERT_TRUE(size > 0 && size <= 256);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < size; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            fn(r, size, arg);
            fflush(stdout);
            _exit(0);
        }
    }
    int bad = -1, bad_status = 0;
    for (int r = 0; r < size; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && bad < 0)
            bad = r, bad_status = st;
    }
    if (bad >= 0)
        wf_test_fail(__FILE__, __LINE__, "rank %d process failed (%s %d)",
                     bad, WIFSIGNALED(bad_status) ? "signal" : "exit",
                     WIFSIGNALED(bad_status) ? WTERMSIG(bad_status)
                                             : WEXITSTATUS(bad_status));
}

weft_status_t wf_test_comm_rdv(const char *job, const char *rendezvous,
                               int rank, int size, const char *config,
                               weft_comm_t *comm)
{
    char cfg[1024];
    /* Tests talk over loopback only. */
    snprintf(cfg, sizeof(cfg), "WEFT_SOCKET_IFNAME=lo%s%s",
             config && *config ? "," : "", config ? config : "");
    weft_comm_params_t p = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_CONFIG |
                      WEFT_COMM_PARAM_JOB_ID,
        .rank = rank,
        .size = size,
        .rendezvous = rendezvous,
        .job_id = job,
        .config = cfg,
    };
    return weft_comm_create(&p, comm);
}

weft_status_t wf_test_comm_mem(const char *name, int rank, int size,
                               const char *config, weft_comm_t *comm)
{
    char uri[256];
    snprintf(uri, sizeof(uri), "mem://%s", name);
    return wf_test_comm_rdv(name, uri, rank, size, config, comm);
}

const char *wf_test_unique(const char *base)
{
    static int counter;
    char *s = malloc(strlen(base) + 48);
    ASSERT_TRUE(s != NULL);
    sprintf(s, "%s-%d-%d", base, (int)getpid(),
            __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    return s;
}

const char *wf_test_tool(const char *name)
{
    char *s = malloc(strlen(wf_test_build_dir) + strlen(name) + 8);
    ASSERT_TRUE(s != NULL);
    sprintf(s, "%s/bin/%s", wf_test_build_dir, name);
    return s;
}

int wf_test_start_rendezvous(char *addr, size_t len)
{
    return wf_test_start_rendezvous_with(addr, len, NULL, NULL);
}

int wf_test_start_rendezvous_with(char *addr, size_t len,
                                  const char *const *args, const char *log)
{
    char portfile[] = "/tmp/weft-rdv-port-XXXXXX";
    const char *argv[32] = {NULL, "--listen", "127.0.0.1:0", "--port-file",
                            portfile};
    int argc = 5;
    int fd = mkstemp(portfile);
    ASSERT_TRUE(fd >= 0);
    close(fd);
    unlink(portfile);
    const char *tool = wf_test_tool("weft-rendezvous");
    argv[0] = tool;
    for (; args && *args && argc < 31; args++)
        argv[argc++] = *args;
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int out = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
                       0600);
        if (out >= 0) {
            dup2(out, STDOUT_FILENO);
            if (log)
                dup2(out, STDERR_FILENO);
        }
        execv(tool, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) { /* up to 10 s */
        FILE *f = fopen(portfile, "r");
        if (f) {
            char buf[128] = "";
            if (fgets(buf, sizeof(buf), f) && strchr(buf, ':')) {
                fclose(f);
                unlink(portfile);
                buf[strcspn(buf, "\r\n")] = '\0';
                snprintf(addr, len, "%s", buf);
                return pid;
            }
            fclose(f);
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            wf_test_fail(__FILE__, __LINE__, "%s exited early", tool);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    wf_test_fail(__FILE__, __LINE__, "%s did not write its port", tool);
}

void wf_test_stop_process(int pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

double wf_test_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
