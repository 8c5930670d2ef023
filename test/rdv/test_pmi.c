/*
 * test_pmi.c - the rendezvous through a launcher's process-management
 * interface (src/rdv/launch_pmi.c, pmi_wire.c): ranks started as hydra
 * starts them (PMI_FD, PMI_RANK, PMI_SIZE and nothing else) find each
 * other through a stand-in for hydra's PMI-1 server in the test process;
 * a launcher that refuses a command, and a launcher with no interface at
 * all, end in a clear error.  The real mpirun, mpiexec.hydra and srun are
 * in make test-launchers.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdv/pmi.h"
#include "test.h"

#define MAX_RANKS 4

static const char *const launcher_vars[] = {
    "WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_RENDEZVOUS", "WEFT_JOB_ID",
    "WEFT_TOKEN", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMIX_NAMESPACE", "PMI_FD", "PMI_RANK",
    "PMI_SIZE"};

static void clear_launcher_env(void)
{
    for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(*launcher_vars); i++)
        unsetenv(launcher_vars[i]);
}

/* ---- a stand-in for hydra's side of PMI-1 -------------------------------- */

typedef struct {
    int fd[MAX_RANKS];
    int n;
    char keys[16][64], values[16][WF_PMI_VALUE_MAX]; /* puts, in order */
    int nkv;
    int in_barrier;
    bool refuse_put; /* answer every put with rc=1 */
    int finalized;   /* ranks that said goodbye */
} fake_hydra_t;

static void reply(int fd, const char *line)
{
    ASSERT_EQ(write(fd, line, strlen(line)), (ssize_t)strlen(line));
}

static void serve_line(fake_hydra_t *h, int r, const char *line)
{
    char key[64], cmd[32], out[WF_PMI_VALUE_MAX + 64];
    ASSERT_TRUE(wf_pmi_wire_field(line, "cmd", cmd, sizeof(cmd)) != NULL);
    if (strcmp(cmd, "init") == 0) {
        reply(h->fd[r], "cmd=response_to_init pmi_version=1 pmi_subversion=1 "
                        "rc=0\n");
    } else if (strcmp(cmd, "get_my_kvsname") == 0) {
        reply(h->fd[r], "cmd=my_kvsname kvsname=kvs_test_0\n");
    } else if (strcmp(cmd, "put") == 0) {
        if (h->refuse_put) {
            reply(h->fd[r], "cmd=put_result rc=1 msg=duplicate_key\n");
            return;
        }
        ASSERT_TRUE(wf_pmi_wire_field(line, "key", h->keys[h->nkv], 64));
        ASSERT_TRUE(wf_pmi_wire_field(line, "value", h->values[h->nkv],
                                      WF_PMI_VALUE_MAX));
        h->nkv++;
        reply(h->fd[r], "cmd=put_result rc=0 msg=success\n");
    } else if (strcmp(cmd, "barrier_in") == 0) {
        if (++h->in_barrier == h->n) {
            for (int i = 0; i < h->n; i++)
                reply(h->fd[i], "cmd=barrier_out\n");
            h->in_barrier = 0;
        }
    } else if (strcmp(cmd, "get") == 0) {
        ASSERT_TRUE(wf_pmi_wire_field(line, "key", key, sizeof(key)));
        snprintf(out, sizeof(out), "cmd=get_result rc=-1 msg=not_found\n");
        for (int i = 0; i < h->nkv; i++)
            if (strcmp(h->keys[i], key) == 0) {
                snprintf(out, sizeof(out), "cmd=get_result rc=0 value=%s\n",
                         h->values[i]);
            }
        reply(h->fd[r], out);
    } else if (strcmp(cmd, "finalize") == 0) {
        h->finalized++;
        reply(h->fd[r], "cmd=finalize_ack\n");
    } else {
        reply(h->fd[r], "cmd=error rc=-1\n");
    }
}

/* Serves until every rank closed its socket. */
static void serve(fake_hydra_t *h)
{
    char buf[MAX_RANKS][1024];
    size_t len[MAX_RANKS] = {0};
    int open = h->n;
    while (open > 0) {
        struct pollfd p[MAX_RANKS];
        for (int r = 0; r < h->n; r++)
            p[r] = (struct pollfd){.fd = h->fd[r], .events = POLLIN};
        ASSERT_TRUE(poll(p, (nfds_t)h->n, 30000) > 0);
        for (int r = 0; r < h->n; r++) {
            if (h->fd[r] < 0 || !(p[r].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t got = read(h->fd[r], buf[r] + len[r],
                               sizeof(buf[r]) - len[r] - 1);
            if (got <= 0) {
                close(h->fd[r]);
                h->fd[r] = -1;
                open--;
                continue;
            }
            len[r] += (size_t)got;
            char *nl;
            while ((nl = memchr(buf[r], '\n', len[r]))) {
                *nl = '\0';
                serve_line(h, r, buf[r]);
                size_t used = (size_t)(nl - buf[r]) + 1;
                memmove(buf[r], nl + 1, len[r] - used);
                len[r] -= used;
            }
        }
    }
}

/* ---- ranks ---------------------------------------------------------------- */

/* A rank as hydra starts one: only PMI_FD, PMI_RANK and PMI_SIZE. */
static void rank_main(int fd, int rank, int size, int rounds,
                      weft_status_t expect)
{
    char v[16];
    clear_launcher_env();
    snprintf(v, sizeof(v), "%d", fd);
    setenv("PMI_FD", v, 1);
    snprintf(v, sizeof(v), "%d", rank);
    setenv("PMI_RANK", v, 1);
    snprintf(v, sizeof(v), "%d", size);
    setenv("PMI_SIZE", v, 1);
    setenv("WEFT_SOCKET_IFNAME", "lo", 1);
    setenv("WEFT_TIMEOUT", "20s", 1);
    weft_comm_t comm;
    for (int round = 0; round < rounds; round++) {
        weft_status_t st = weft_comm_init(&comm);
        if (expect != WEFT_OK) {
            ASSERT_STATUS(st, expect);
            exit(0);
        }
        ASSERT_OK(st);
        /* A broadcast's root waits for nobody: rank 0, which hosts the
         * rendezvous, may be gone while the others still finish their
         * own creation. */
        int64_t x = rank == 0 ? 41 + round : -1;
        ASSERT_OK(weft_broadcast(&x, &x, 1, WEFT_INT64, 0, comm));
        ASSERT_EQ(x, 41 + round);
        ASSERT_OK(weft_comm_destroy(comm));
    }
    exit(0); /* not _exit: the goodbye to the launcher is said at exit */
}

static void run_hydra(fake_hydra_t *h, int size, int rounds,
                      weft_status_t expect)
{
    pid_t pid[MAX_RANKS];
    h->n = size;
    for (int r = 0; r < size; r++) {
        int sv[2];
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        pid[r] = fork();
        ASSERT_TRUE(pid[r] >= 0);
        if (pid[r] == 0) {
            close(sv[0]);
            for (int i = 0; i < r; i++)
                close(h->fd[i]);
            rank_main(sv[1], r, size, rounds, expect);
        }
        close(sv[1]);
        h->fd[r] = sv[0];
    }
    serve(h);
    for (int r = 0; r < size; r++) {
        int st;
        ASSERT_EQ(waitpid(pid[r], &st, 0), pid[r]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            wf_test_fail(__FILE__, __LINE__, "rank %d failed (status %d)", r,
                         st);
    }
}

WF_TEST(rdv_pmi1_ranks_meet_with_no_address, 60)
{
    fake_hydra_t h = {0};
    run_hydra(&h, 3, 1, WEFT_OK);
    ASSERT_EQ(h.finalized, 3); /* at exit: hydra keeps their output */
    /* Rank 0's record: "address|job|token", the token a fresh one. */
    ASSERT_EQ(h.nkv, 1);
    ASSERT_STR_CONTAINS(h.values[0], "127.0.0.1:");
    ASSERT_STR_CONTAINS(h.values[0], "|PMI-1-kvs_test_0-0|");
    ASSERT_EQ(strlen(strrchr(h.values[0], '|') + 1), 32);
}

WF_TEST(rdv_pmi1_refused_put_fails_every_rank, 60)
{
    wf_test_log_capture();
    fake_hydra_t h = {.refuse_put = true};
    run_hydra(&h, 2, 1, WEFT_ERR_SYSTEM);
}

/* Communicators one after the other, each a broadcast from rank 0 and a
 * destroy: rank 0 stops its server only once every rank is done with
 * it (the others failed in their creation's last store access, about
 * one round in two). */
WF_TEST(rdv_pmi1_root_leaves_first_each_round, 120)
{
    fake_hydra_t h = {0};
    run_hydra(&h, 3, 6, WEFT_OK);
    ASSERT_EQ(h.nkv, 6);
}

static void no_interface_rank(int rank, int size, void *p)
{
    (void)p;
    clear_launcher_env();
    char v[16];
    snprintf(v, sizeof(v), "%d", rank);
    setenv("OMPI_COMM_WORLD_RANK", v, 1);
    snprintf(v, sizeof(v), "%d", size);
    setenv("OMPI_COMM_WORLD_SIZE", v, 1);
    weft_comm_t comm;
    ASSERT_STATUS(weft_comm_init(&comm), WEFT_ERR_INVALID_ARG);
}

/* An mpirun without PMIx (or the variables passed by hand): the error
 * says what was looked for and what to set. */
WF_TEST(rdv_pmi_none_says_what_to_set, 30)
{
    wf_test_log_capture();
    no_interface_rank(0, 2, NULL);
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "no rendezvous address from openmpi");
    ASSERT_STR_CONTAINS(log, "WEFT_RENDEZVOUS=HOST:PORT");
    ASSERT_STR_CONTAINS(log, "MASTER_ADDR");
    ASSERT_STR_CONTAINS(log, "PMIX_NAMESPACE");
}

WF_TEST(rdv_pmi1_reply_fields, 10)
{
    char v[64];
    ASSERT_STR_CONTAINS(wf_pmi_wire_field("cmd=get_result rc=0 value=a:1|b",
                                          "value", v, sizeof(v)),
                        "a:1|b");
    ASSERT_TRUE(wf_pmi_wire_field("cmd=barrier_out", "rc", v, sizeof(v)) ==
                NULL);
    ASSERT_STR_CONTAINS(wf_pmi_wire_field("cmd=x rcx=5 rc=3", "rc", v,
                                          sizeof(v)), "3");
    /* A value longer than the buffer is cut, not overrun. */
    ASSERT_EQ(strlen(wf_pmi_wire_field("cmd=y value=0123456789", "value", v,
                                       5)), 4);
}
