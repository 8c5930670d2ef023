/*
 * test_auth.c - authentication end to end: jobs with and without a token
 * over a real rendezvous server, wrong and missing tokens, a server with a
 * token of its own, the tools' --token-file, and a port scan with forged
 * handshakes during a loop of allreduces.  Every refusal must be logged
 * naming the client's address, and the token must never appear in a log
 * line, even at debug level.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "common.h"
#include "log.h"
#include "rdv/bootstrap.h"
#include "rdv/rdv_proto.h"
#include "rdv/store.h"
#include "tcp/tcp.h"
#include "test.h"

#define TOKEN "Zq7-auth-test-token-XYZ"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[65536];

static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    pthread_mutex_lock(&log_lock);
    size_t used = strlen(logbuf);
    snprintf(logbuf + used, sizeof(logbuf) - used, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
}

/* Debug logging of everything, captured; the token must not show up. */
static void log_debug_capture(void)
{
    logbuf[0] = '\0';
    wf_log_reconfigure("debug", "all");
    weft_set_logger(capture, NULL);
}

static void assert_token_not_logged(void)
{
    pthread_mutex_lock(&log_lock);
    bool leaked = strstr(logbuf, TOKEN) != NULL;
    pthread_mutex_unlock(&log_lock);
    ASSERT_TRUE(!leaked);
}

typedef struct {
    const char *addr, *job;
    const char *token[4];
    weft_status_t result[4];
    int64_t timeout_ms;
} job_arg_t;

static weft_status_t create(const job_arg_t *a, int rank, int size,
                            weft_comm_t *comm)
{
    weft_comm_params_t p = {
        .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                      WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                      WEFT_COMM_PARAM_TIMEOUT | WEFT_COMM_PARAM_CONFIG |
                      (a->token[rank] ? WEFT_COMM_PARAM_TOKEN : 0),
        .rank = rank, .size = size, .rendezvous = a->addr, .job_id = a->job,
        .timeout_ms = a->timeout_ms, .token = a->token[rank],
        .config = "WEFT_SOCKET_IFNAME=lo"};
    return weft_comm_create(&p, comm);
}

/* Joins, runs one allreduce checked against size*(size+1)/2, leaves. */
static void join_rank(int rank, int size, void *p)
{
    job_arg_t *a = p;
    weft_comm_t comm;

    a->result[rank] = create(a, rank, size, &comm);
    if (a->result[rank] != WEFT_OK)
        return;
    int32_t v[16];
    for (int i = 0; i < 16; i++)
        v[i] = rank + 1 + i;
    ASSERT_OK(weft_allreduce(v, v, 16, WEFT_INT32, WEFT_SUM, comm));
    for (int i = 0; i < 16; i++)
        ASSERT_EQ(v[i], size * (size + 1) / 2 + size * i);
    ASSERT_OK(weft_comm_destroy(comm));
}

/* Ranks with the same token work together over a token-less server (the
 * first registers the job's key); ranks with different tokens cannot form
 * a job: one is refused with WEFT_ERR_AUTH and a log line naming it. */
WF_TEST(fault_auth_token_job_over_server, 60)
{
    weft_server_t srv;

    log_debug_capture();
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    job_arg_t ok = {weft_server_address(srv), wf_test_unique("tok"),
                    {TOKEN, TOKEN, TOKEN}, {0}, 20000};
    wf_test_run_threads(3, join_rank, &ok);
    for (int r = 0; r < 3; r++)
        ASSERT_OK(ok.result[r]);
    job_arg_t bad = {weft_server_address(srv), wf_test_unique("tokbad"),
                     {TOKEN, TOKEN "-wrong"}, {0}, 3000};
    wf_test_run_threads(2, join_rank, &bad);
    /* Whichever rank reaches the token-less server first registers the
     * job's key; the other one is refused, and the first waits for it in
     * vain. */
    ASSERT_TRUE((bad.result[0] == WEFT_ERR_AUTH) !=
                (bad.result[1] == WEFT_ERR_AUTH));
    ASSERT_TRUE(bad.result[0] < 0 && bad.result[1] < 0);
    ASSERT_STR_CONTAINS(logbuf, "wrong token for job");
    ASSERT_STR_CONTAINS(logbuf, "closing connection from 127.0.0.1:");
    assert_token_not_logged();
    ASSERT_OK(weft_server_stop(srv));
    weft_set_logger(NULL, NULL);
}

/* A server with its own token turns away clients without it. */
WF_TEST(fault_auth_server_token_required, 30)
{
    weft_server_t srv;
    wf_store_t *s = NULL;

    log_debug_capture();
    ASSERT_OK(wf_rdv_server_start("127.0.0.1:0", TOKEN, &srv));
    const char *addr = weft_server_address(srv);
    ASSERT_STATUS(wf_store_open(addr, "j", NULL, 2000, &s), WEFT_ERR_AUTH);
    ASSERT_STR_CONTAINS(logbuf, "requires a token");
    ASSERT_STATUS(wf_store_open(addr, "j", "other", 2000, &s), WEFT_ERR_AUTH);
    ASSERT_TRUE(s == NULL);
    ASSERT_OK(wf_store_open(addr, "j", TOKEN, 2000, &s));
    ASSERT_OK(wf_store_set(s, "k", "v", 1));
    wf_store_close(s);
    job_arg_t ok = {addr, wf_test_unique("srvtok"), {TOKEN, TOKEN}, {0},
                    20000};
    wf_test_run_threads(2, join_rank, &ok);
    ASSERT_OK(ok.result[0]);
    ASSERT_OK(ok.result[1]);
    assert_token_not_logged();
    ASSERT_OK(weft_server_stop(srv));
    weft_set_logger(NULL, NULL);
}

/* A fake rendezvous that accepts any proof and answers WELCOME with a
 * made-up one: a client with a token must refuse it. */
static int fake_lfd;

static void fake_read_frame(int fd)
{
    uint8_t head[WF_RDV_HDR_SIZE], body[1024];
    wf_rdv_hdr_t h;

    ASSERT_EQ(recv(fd, head, sizeof(head), MSG_WAITALL), sizeof(head));
    wf_rdv_hdr_decode(head, &h);
    ASSERT_TRUE(h.length <= sizeof(body));
    ASSERT_EQ(recv(fd, body, h.length, MSG_WAITALL), h.length);
}

static void *fake_server(void *p)
{
    static const uint8_t nonce[WF_AUTH_NONCE_LEN] = "fake srv nonce.";
    uint8_t junk[WF_AUTH_MAC_LEN];
    wf_rdv_buf_t b;
    int fd = accept(fake_lfd, NULL, NULL);

    (void)p;
    ASSERT_TRUE(fd >= 0);
    fake_read_frame(fd); /* HELLO */
    wf_rdv_buf_init(&b);
    wf_rdv_frame_begin(&b, WF_RDV_CHALLENGE);
    wf_rdv_put_bytes(&b, nonce, sizeof(nonce));
    wf_rdv_put_u32(&b, WF_RDV_CHALLENGE_KEYED);
    ASSERT_OK(wf_rdv_frame_end(&b));
    ASSERT_EQ(send(fd, b.data, b.len, MSG_NOSIGNAL), b.len);
    fake_read_frame(fd); /* AUTH */
    memset(junk, 0x5a, sizeof(junk));
    b.len = 0;
    wf_rdv_frame_begin(&b, WF_RDV_WELCOME);
    wf_rdv_put_bytes(&b, junk, sizeof(junk));
    ASSERT_OK(wf_rdv_frame_end(&b));
    ASSERT_EQ(send(fd, b.data, b.len, MSG_NOSIGNAL), b.len);
    wf_rdv_buf_free(&b);
    usleep(200000);
    close(fd);
    return NULL;
}

WF_TEST(fault_auth_client_checks_server, 30)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    wf_store_t *s = NULL;
    pthread_t th;
    char addr[64];

    log_debug_capture();
    fake_lfd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(bind(fake_lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ASSERT_EQ(listen(fake_lfd, 4), 0);
    ASSERT_EQ(getsockname(fake_lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    ASSERT_EQ(pthread_create(&th, NULL, fake_server, NULL), 0);
    ASSERT_STATUS(wf_store_open(addr, "j", TOKEN, 3000, &s), WEFT_ERR_AUTH);
    ASSERT_TRUE(s == NULL);
    ASSERT_STR_CONTAINS(logbuf, "could not prove it knows the token");
    pthread_join(th, NULL);
    close(fake_lfd);
    weft_set_logger(NULL, NULL);
}

/* Without a token every rank of the job ends up with the same random
 * data-plane secret, and a different job gets a different one. */
WF_TEST(fault_auth_random_job_secret, 20)
{
    char uri[128];
    wf_store_t *a, *b, *c;
    uint8_t sa[32], sb[32], sc[32], zero[32] = {0};

    snprintf(uri, sizeof(uri), "mem://%s", wf_test_unique("secret"));
    ASSERT_OK(wf_store_open(uri, "job1", NULL, 1000, &a));
    ASSERT_OK(wf_store_open(uri, "job1", NULL, 1000, &b));
    ASSERT_OK(wf_store_open(uri, "job2", NULL, 1000, &c));
    ASSERT_OK(wf_bootstrap_secret(a, "job1", NULL, sa));
    ASSERT_OK(wf_bootstrap_secret(b, "job1", "", sb));
    ASSERT_OK(wf_bootstrap_secret(c, "job2", NULL, sc));
    ASSERT_TRUE(memcmp(sa, sb, 32) == 0);
    ASSERT_TRUE(memcmp(sa, sc, 32) != 0);
    ASSERT_TRUE(memcmp(sa, zero, 32) != 0);
    /* With a token: derived, the same everywhere, unrelated to the
     * rendezvous key of the same token. */
    uint8_t t1[32], t2[32], rk[32];
    ASSERT_OK(wf_bootstrap_secret(a, "job1", TOKEN, t1));
    ASSERT_OK(wf_bootstrap_secret(c, "job1", TOKEN, t2));
    ASSERT_OK(wf_auth_derive(TOKEN, WF_AUTH_PURPOSE_RDV, "job1", rk));
    ASSERT_TRUE(memcmp(t1, t2, 32) == 0);
    ASSERT_TRUE(memcmp(t1, rk, 32) != 0);
    wf_store_close(a);
    wf_store_close(b);
    wf_store_close(c);
}

/* ---- a port scan with forged handshakes during allreduces ------------- */

typedef struct {
    const char *job;
    int port_lo, port_hi;
    int stop; /* atomic: set by the main thread, read by the scanner */
    int probes; /* atomic: connections the scanner made */
} scan_arg_t;

static int connect_port(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* One probe: garbage, or a hello that is right in everything an outsider
 * can know (job id, communicator, ranks) followed by a guessed proof. */
static void probe(const scan_arg_t *s, int fd, int kind)
{
    uint8_t h[WF_TCP_HELLO_LEN], mac[WF_TCP_MAC_LEN], proof[WF_TCP_PROOF_LEN];
    static const uint8_t nonce[WF_TCP_NONCE_LEN] = "scanner nonce..";
    uint64_t job_key = wf_hash64(s->job, strlen(s->job));

    if (kind == 0) {
        (void)!send(fd, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL);
        return;
    }
    wf_tcp_hello_encode(h, job_key, wf_hash64("world", 5) ^ job_key, 0, 1,
                        nonce);
    (void)!send(fd, h, sizeof(h), MSG_NOSIGNAL);
    memset(mac, 0x42, sizeof(mac));
    wf_tcp_proof_encode(proof, mac, false);
    usleep(2000);
    (void)!send(fd, proof, sizeof(proof), MSG_NOSIGNAL);
}

static void *scanner(void *p)
{
    scan_arg_t *s = p;

    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
        for (int port = s->port_lo;
             port <= s->port_hi && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED);
             port++) {
            int fd = connect_port(port);
            if (fd < 0)
                continue;
            probe(s, fd, __atomic_load_n(&s->probes, __ATOMIC_RELAXED) % 2);
            __atomic_fetch_add(&s->probes, 1, __ATOMIC_RELAXED);
            usleep(5000);
            close(fd);
        }
    }
    return NULL;
}

typedef struct {
    const char *store;
    char config[128];
    const scan_arg_t *scan;
} scan_job_t;

/* At least ITERS allreduces, and on until the scanner has connected
 * MIN_PROBES times (at most 20 s): a job that ended before any probe
 * reached a listening port left nothing to reject, and the test failed
 * now and then on a fast run.  The ranks agree on stopping through an
 * allreduce of their wishes. */
static void scanned_rank(int rank, int size, void *p)
{
    scan_job_t *j = p;
    weft_comm_t comm;
    enum { N = 1000, ITERS = 100, MIN_PROBES = 6 };
    static int32_t bufs[2][N];
    int32_t *v = bufs[rank];
    double t0 = wf_test_now_s();
    int32_t more = 1;

    ASSERT_OK(wf_test_comm_mem(j->store, rank, size, j->config, &comm));
    for (int it = 0; it < ITERS || more; it++) {
        for (int i = 0; i < N; i++)
            v[i] = (rank + 1) * (i + it);
        ASSERT_OK(weft_allreduce(v, v, N, WEFT_INT32, WEFT_SUM, comm));
        for (int i = 0; i < N; i++)
            ASSERT_EQ(v[i], 3 * (i + it)); /* (1 + 2) * (i + it) */
        more = __atomic_load_n(&j->scan->probes, __ATOMIC_RELAXED) <
                   MIN_PROBES &&
               wf_test_now_s() - t0 < 20.0;
        ASSERT_OK(weft_allreduce(&more, &more, 1, WEFT_INT32, WEFT_MAX,
                                 comm));
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

static bool port_free(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Eight free ports below Linux's ephemeral range (32768 and up by
 * default): the scanner's own outgoing connections take ephemeral ports,
 * and one of those inside the ranks' WEFT_PORT_RANGE made their bind
 * fail (an intermittent ERR_SYSTEM at creation). */
static int free_port_base(void)
{
    for (int tries = 0; tries < 1000; tries++) {
        int base = 20000 + (int)((getpid() + tries * 8) % 1500) * 8;
        bool all = true;
        for (int p = base; p < base + 8 && all; p++)
            all = port_free(p);
        if (all)
            return base;
    }
    wf_test_fail(__FILE__, __LINE__, "no 8 free ports in 20000-32000");
}

WF_TEST(fault_auth_port_scan_during_allreduce, 60)
{
    scan_job_t j = {wf_test_unique("scan"), "", NULL};
    scan_arg_t s = {j.store, 0, 0, 0, 0};
    pthread_t th;

    log_debug_capture();
    wf_log_reconfigure("warn", "all");
    s.port_lo = free_port_base();
    s.port_hi = s.port_lo + 7;
    snprintf(j.config, sizeof(j.config), "WEFT_PORT_RANGE=%d-%d", s.port_lo,
             s.port_hi);
    j.scan = &s;
    ASSERT_EQ(pthread_create(&th, NULL, scanner, &s), 0);
    wf_test_run_threads(2, scanned_rank, &j);
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    ASSERT_TRUE(__atomic_load_n(&s.probes, __ATOMIC_RELAXED) > 0);
    ASSERT_STR_CONTAINS(logbuf, "rejected connection from 127.0.0.1:");
    weft_set_logger(NULL, NULL);
}

/* ---- the tools' --token-file ------------------------------------------ */

WF_TEST(fault_auth_rendezvous_token_file, 30)
{
    char path[] = "/tmp/weft-token-XXXXXX", addr[128] = "";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(write(fd, TOKEN "\n", strlen(TOKEN) + 1) > 0);
    close(fd);
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    const char *tool = wf_test_tool("weft-rendezvous");
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        execl(tool, tool, "--listen", "127.0.0.1:0", "--token-file", path,
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[256];
    ASSERT_TRUE(fgets(line, sizeof(line), f) != NULL);
    ASSERT_TRUE(sscanf(line, "weft-rendezvous listening on %127s", addr) == 1);
    wf_store_t *s = NULL;
    ASSERT_STATUS(wf_store_open(addr, "j", NULL, 2000, &s), WEFT_ERR_AUTH);
    ASSERT_OK(wf_store_open(addr, "j", TOKEN, 2000, &s));
    wf_store_close(s);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    fclose(f);
    /* A missing file is a usage error with the path in the message. */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s --listen 127.0.0.1:0 --token-file %s.none"
             " 2>/dev/null", tool, path);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    unlink(path);
}
