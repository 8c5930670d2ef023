/*
 * test_launch.c - how a job learns its rank, size and rendezvous from the
 * launcher's variables (src/rdv/launch_env.c), and ranks as processes
 * started the way launchers start them: torchrun variables (rank 0 hosts
 * the rendezvous at MASTER_PORT+1), Slurm, Open MPI and PMI variables with
 * an external weft-rendezvous, WEFT_RENDEZVOUS_SERVE=1, and a file://
 * store.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdv/launch_env.h"
#include "test.h"

typedef struct {
    const char *kind;
    const char *rdv;  /* WEFT_RENDEZVOUS, or NULL */
    int port;         /* MASTER_PORT for torchrun */
    const char *job;
} launch_arg_t;

static const char *const launcher_vars[] = {
    "WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_RENDEZVOUS", "WEFT_JOB_ID",
    "WEFT_RENDEZVOUS_SERVE", "RANK", "WORLD_SIZE", "LOCAL_RANK",
    "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_JOB_ID", "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"};

/* A port that was free a moment ago, such that port+1 is free too. */
static int free_port_pair(void)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        ASSERT_TRUE(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        getsockname(fd, (struct sockaddr *)&a, &len);
        close(fd);
        int port = ntohs(a.sin_port);
        if (port < 65000)
            return port - 1 > 1024 ? port - 1 : port;
    }
    wf_test_fail(__FILE__, __LINE__, "no free port");
}

static void set_int(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", v);
    setenv(name, buf, 1);
}

static void launch_rank(int rank, int size, void *p)
{
    const launch_arg_t *a = p;
    for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(*launcher_vars); i++)
        unsetenv(launcher_vars[i]);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    if (a->rdv)
        setenv("WEFT_RENDEZVOUS", a->rdv, 1);
    if (a->job)
        setenv("WEFT_JOB_ID", a->job, 1);
    if (!strcmp(a->kind, "torchrun")) {
        set_int("RANK", rank);
        set_int("WORLD_SIZE", size);
        set_int("LOCAL_RANK", rank);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        set_int("MASTER_PORT", a->port);
    } else if (!strcmp(a->kind, "slurm")) {
        set_int("SLURM_PROCID", rank);
        set_int("SLURM_NTASKS", size);
        set_int("SLURM_JOB_ID", a->port);
    } else if (!strcmp(a->kind, "openmpi")) {
        set_int("OMPI_COMM_WORLD_RANK", rank);
        set_int("OMPI_COMM_WORLD_SIZE", size);
    } else if (!strcmp(a->kind, "pmi")) {
        set_int("PMI_RANK", rank);
        set_int("PMI_SIZE", size);
    } else { /* plain WEFT_* variables */
        set_int("WEFT_RANK", rank);
        set_int("WEFT_WORLD_SIZE", size);
        if (!strcmp(a->kind, "serve"))
            setenv("WEFT_RENDEZVOUS_SERVE", "1", 1);
    }
    weft_comm_t comm;
    ASSERT_OK(weft_comm_init(&comm));
    int r, s;
    ASSERT_OK(weft_comm_rank(comm, &r));
    ASSERT_OK(weft_comm_size(comm, &s));
    ASSERT_EQ(r, rank);
    ASSERT_EQ(s, size);
    int64_t v[3] = {rank, 1, -rank};
    ASSERT_OK(weft_allreduce(v, v, 3, WEFT_INT64, WEFT_SUM, comm));
    ASSERT_EQ(v[0], size * (size - 1) / 2);
    ASSERT_EQ(v[1], size);
    ASSERT_OK(weft_comm_destroy(comm));
}

static void with_server(const char *kind, int size)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    launch_arg_t a = {kind, addr, 4242, NULL};
    wf_test_run_procs(size, launch_rank, &a);
    wf_test_stop_process(pid);
}

WF_TEST(rdv_launch_torchrun_env_rank0_hosts, 60)
{
    launch_arg_t a = {"torchrun", NULL, free_port_pair(), "torch-job"};
    wf_test_run_procs(3, launch_rank, &a);
}

WF_TEST(rdv_launch_slurm_env, 60) { with_server("slurm", 3); }
WF_TEST(rdv_launch_openmpi_env, 60) { with_server("openmpi", 2); }
WF_TEST(rdv_launch_pmi_env, 60) { with_server("pmi", 4); }

WF_TEST(rdv_launch_weft_env_rank0_serves, 60)
{
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port_pair() + 1);
    launch_arg_t a = {"serve", addr, 0, "served"};
    wf_test_run_procs(3, launch_rank, &a);
}

WF_TEST(rdv_launch_file_store, 60)
{
    char dir[] = "/tmp/weft-file-store-XXXXXX", uri[128], cmd[160];
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(uri, sizeof(uri), "file://%s", dir);
    launch_arg_t a = {"weft", uri, 0, "filejob"};
    wf_test_run_procs(3, launch_rank, &a);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ASSERT_EQ(system(cmd), 0);
}

WF_TEST(rdv_launch_env_torchrun_slurm_ompi_pmi, 10)
{
    wf_launch_env_t env;
    const char *all[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                         "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID",
                         "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "PMI_RANK", "PMI_SIZE", "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        unsetenv(all[i]);
    ASSERT_TRUE(!wf_launch_env_detect(&env));
    setenv("PMI_RANK", "2", 1);
    setenv("PMI_SIZE", "4", 1);
    ASSERT_TRUE(wf_launch_env_detect(&env));
    ASSERT_TRUE(strcmp(env.source, "pmi") == 0 && env.rank == 2 && env.size == 4);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    ASSERT_TRUE(wf_launch_env_detect(&env));
    ASSERT_TRUE(strcmp(env.source, "openmpi") == 0 && env.rank == 1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_JOB_ID", "77", 1);
    ASSERT_TRUE(wf_launch_env_detect(&env));
    ASSERT_TRUE(strcmp(env.source, "slurm") == 0 && env.rank == 5 &&
                env.size == 8);
    ASSERT_TRUE(strcmp(env.job_id, "slurm-77.0") == 0);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    ASSERT_TRUE(wf_launch_env_detect(&env));
    ASSERT_TRUE(strcmp(env.source, "torchrun") == 0 && env.size == 2);
    ASSERT_TRUE(strcmp(env.rendezvous, "127.0.0.1:29501") == 0);
    ASSERT_TRUE(env.rank0_serves);
}
