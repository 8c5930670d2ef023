/*
 * test_bench_launchers.c - weft-bench joins jobs started by other
 * launchers, one process per rank: torchrun-style variables (rank 0 hosts
 * the rendezvous at MASTER_PORT+1), Slurm variables with an external
 * weft-rendezvous, and Open MPI's mpirun as a plain launcher.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    ASSERT_TRUE(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* Runs `size` shells of `cmd_fmt` (with %d = rank) at once; all must
 * print the clean-check footer... rank 0 prints it. */
static void run_ranks(int size, const char *env_fmt)
{
    char cmd[4096];
    size_t o = 0;
    o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "(");
    for (int r = 0; r < size; r++) {
        char env[1024];
        snprintf(env, sizeof(env), env_fmt, r, size);
        o += (size_t)snprintf(cmd + o, sizeof(cmd) - o,
                              "env %s %s allreduce -b 8 -e 64K -f 64 -w 1 "
                              "-r 2 > /tmp/wfb-launch-%d-%d.out 2>&1 & ",
                              env, wf_test_tool("weft-bench"), (int)getpid(),
                              r);
    }
    snprintf(cmd + o, sizeof(cmd) - o, "wait)");
    ASSERT_EQ(system(cmd), 0);
    char path[256], line[512];
    snprintf(path, sizeof(path), "/tmp/wfb-launch-%d-0.out", (int)getpid());
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f != NULL);
    bool clean = false;
    while (fgets(line, sizeof(line), f))
        clean |= strstr(line, "# Out of bounds values : 0 OK") != NULL;
    fclose(f);
    for (int r = 0; r < size; r++) {
        snprintf(path, sizeof(path), "/tmp/wfb-launch-%d-%d.out",
                 (int)getpid(), r);
        unlink(path);
    }
    ASSERT_TRUE(clean);
}

WF_TEST(tools_bench_under_torchrun_env, 60)
{
    char fmt[512];
    int port = free_port();
    snprintf(fmt, sizeof(fmt), "-u WEFT_RANK -u WEFT_WORLD_SIZE "
             "-u WEFT_RENDEZVOUS RANK=%%d WORLD_SIZE=%%d "
             "MASTER_ADDR=127.0.0.1 MASTER_PORT=%d", port - 1);
    run_ranks(3, fmt);
}

WF_TEST(tools_bench_under_slurm_env, 60)
{
    char addr[128], fmt[512];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    snprintf(fmt, sizeof(fmt), "-u WEFT_RANK -u WEFT_WORLD_SIZE "
             "SLURM_PROCID=%%d SLURM_NTASKS=%%d SLURM_JOB_ID=%d "
             "WEFT_RENDEZVOUS=%s", (int)getpid(), addr);
    run_ranks(2, fmt);
    wf_test_stop_process(pid);
}

WF_TEST(tools_bench_under_mpirun, 120)
{
    if (system("command -v mpirun >/dev/null 2>&1") != 0)
        WF_SKIP("mpirun is not installed (make compare installs Open MPI)");
    char addr[128], cmd[1024];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    snprintf(cmd, sizeof(cmd), "env -u WEFT_RANK -u WEFT_WORLD_SIZE "
             "WEFT_RENDEZVOUS=%s WEFT_JOB_ID=mpirun-%d mpirun "
             "--allow-run-as-root --oversubscribe -np 3 -x WEFT_RENDEZVOUS "
             "-x WEFT_JOB_ID %s allreduce -b 8 -e 64K -f 64 -w 1 -r 2 2>&1 "
             "| grep -q '# Out of bounds values : 0 OK'", addr, (int)getpid(),
             wf_test_tool("weft-bench"));
    int rc = system(cmd);
    wf_test_stop_process(pid);
    ASSERT_EQ(rc, 0);
}
