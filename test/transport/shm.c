/*
 * shm.c - what the shared-memory transport promises beyond the
 * conformance suite: only the job's processes attach (the secret, the
 * user), nothing is left in /dev/shm, a peer of another machine is
 * refused, and the route sends each peer to the transport that reaches
 * it; a message whose receive comes late is read once.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "route.h"
#include "shm/shm_wire.h"
#include "tgroup.h"

/* Drives `ctx` (and `other`, where given) until send `sr` ends or `ms`
 * pass; its final status, or WEFT_INPROGRESS when it never ended. */
static weft_status_t wait_send(wf_tctx_t *ctx, wf_treq_t *sr,
                               wf_tctx_t *other, int ms)
{
    uint64_t end = tg_now_ms() + (uint64_t)ms;
    wf_treq_info_t info;
    weft_status_t st;

    while ((st = wf_shm_transport.test(ctx, sr, &info)) == WEFT_INPROGRESS &&
           tg_now_ms() < end) {
        wf_shm_transport.progress(ctx);
        if (other)
            wf_shm_transport.progress(other);
        usleep(100);
    }
    return st;
}

/* A context of rank `r` of 2 whose job secret is `secret`. */
static void open_with_secret(tg_group_t *g, int r, const uint8_t *secret)
{
    wf_tconfig_t cfg;

    tg_make_cfg(&cfg, r, 2, "lo", 3000);
    memcpy(cfg.secret, secret, sizeof(cfg.secret));
    tg_open_one(g, r, &cfg);
}

/* A process of another job (another secret) that knows the address
 * cannot attach; the real peer still can afterwards. */
WF_TEST(transport_shm_other_secret_refused, 30)
{
    tg_group_t g = {.ops = &wf_shm_transport, .n = 2};
    tg_group_t stray = {.ops = &wf_shm_transport, .n = 1};
    uint8_t other[32];
    wf_treq_t *sr;

    weft_set_logger(tg_log_capture, NULL);
    memset(other, 0x5a, sizeof(other));
    open_with_secret(&g, 1, tg_secret);
    open_with_secret(&stray, 0, other);
    ASSERT_STATUS(g.ops->connect(stray.ctx[0], 1, g.addr[1], g.alen[1]),
                  WEFT_INPROGRESS);
    ASSERT_OK(g.ops->isend(stray.ctx[0], 1, 7, NULL, "x", 1, NULL, &sr));
    ASSERT_STATUS(wait_send(stray.ctx[0], sr, g.ctx[1], 5000),
                  WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(tg_log_text(), "authentication failed");
    tg_fini(&stray, 0);
    /* The acceptor forgot the stray: the job's own rank 0 gets through. */
    open_with_secret(&g, 0, tg_secret);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 3, 100000);
    tg_xfer(&g, 1, 0, 4, 10);
    tg_close(&g);
}

/* Names under /dev/shm, sorted into one string. */
static void dev_shm_list(char *out, size_t len)
{
    DIR *d = opendir("/dev/shm");
    size_t at = 0;

    out[0] = '\0';
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s\n",
                                   e->d_name);
    closedir(d);
}

static bool maps_contain(const char *what)
{
    char line[512];
    bool hit = false;
    FILE *f = fopen("/proc/self/maps", "r");

    ASSERT_TRUE(f != NULL);
    while (!hit && fgets(line, sizeof(line), f))
        hit = strstr(line, what) != NULL;
    fclose(f);
    return hit;
}

/* The segments are memfds: mapped while the pair is up, named nowhere,
 * so neither a running job nor a crashed one leaves a file. */
WF_TEST(transport_shm_nothing_in_dev_shm, 30)
{
    static char before[8192], during[8192], after[8192];
    tg_group_t g;

    dev_shm_list(before, sizeof(before));
    tg_open(&g, &wf_shm_transport, 3);
    tg_connect_pair(&g, 0, 1);
    tg_connect_pair(&g, 1, 2);
    tg_xfer(&g, 0, 1, 1, 1 << 20);
    tg_xfer(&g, 2, 1, 2, 64);
    ASSERT_TRUE(maps_contain("memfd:weft-shm"));
    dev_shm_list(during, sizeof(during));
    ASSERT_TRUE(strcmp(during, before) == 0);
    tg_close(&g);
    ASSERT_TRUE(!maps_contain("memfd:weft-shm"));
    dev_shm_list(after, sizeof(after));
    ASSERT_TRUE(strcmp(after, before) == 0);
}

/* Another user on the machine cannot even start a handshake: the
 * acceptor checks the connecting process's uid (root only: the test
 * drops to nobody in a child). */
WF_TEST(transport_shm_other_user_refused, 30)
{
    tg_group_t g = {.ops = &wf_shm_transport, .n = 2};
    wf_shm_addr_t a;

    if (geteuid() != 0)
        WF_SKIP("needs root to run a child as another user");
    weft_set_logger(tg_log_capture, NULL);
    open_with_secret(&g, 1, tg_secret);
    memcpy(&a, g.addr[1], sizeof(a));
    pid_t child = fork();
    ASSERT_TRUE(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        struct sockaddr_un sa;
        socklen_t sl = wf_shm_sockaddr(a.sock, &sa);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl) != 0)
            _exit(4);
        char buf[256];
        /* Closed with nothing said: 0.  Anything else is a failure. */
        _exit(recv(fd, buf, sizeof(buf), 0) == 0 ? 0 : 5);
    }
    int ws = 0;
    uint64_t end = tg_now_ms() + 10000;
    while (waitpid(child, &ws, WNOHANG) == 0 && tg_now_ms() < end)
        g.ops->progress(g.ctx[1]);
    if (tg_now_ms() >= end) {
        kill(child, SIGKILL);
        waitpid(child, &ws, 0);
    }
    ASSERT_TRUE(WIFEXITED(ws));
    ASSERT_EQ(WEXITSTATUS(ws), 0);
    ASSERT_STR_CONTAINS(tg_log_text(), "not this job's user");
    tg_close(&g);
}

/* The address of a process on another machine (or network namespace)
 * is not one shm can reach; forced shm says so and does not connect. */
WF_TEST(transport_shm_other_machine_unreachable, 10)
{
    tg_group_t g;
    wf_shm_addr_t a;

    tg_open(&g, &wf_shm_transport, 2);
    memcpy(&a, g.addr[1], sizeof(a));
    ASSERT_TRUE(wf_shm_transport.reaches(g.ctx[0], &a, sizeof(a)));
    a.node ^= 1;
    ASSERT_TRUE(!wf_shm_transport.reaches(g.ctx[0], &a, sizeof(a)));
    ASSERT_STATUS(wf_shm_transport.connect(g.ctx[0], 1, &a, sizeof(a)),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(tg_log_text(), "another machine");
    tg_close(&g);
}

/* In a route's blob, makes the shm part say "another machine". */
static void blob_other_machine(uint8_t *b, size_t len)
{
    for (size_t i = 0; i + sizeof(wf_shm_addr_t) <= len; i++) {
        uint64_t magic;
        memcpy(&magic, b + i, sizeof(magic));
        if (magic == WF_SHM_ADDR_MAGIC) {
            b[i + offsetof(wf_shm_addr_t, node)] ^= 1;
            return;
        }
    }
    wf_test_fail(__FILE__, __LINE__, "no shm address in the route's blob");
}

/* Connects a to b as if b were on another machine. */
static void connect_far(tg_group_t *g, int a, int b)
{
    uint8_t blob[WF_TADDR_MAX];

    memcpy(blob, g->addr[b], g->alen[b]);
    blob_other_machine(blob, g->alen[b]);
    weft_status_t st = g->ops->connect(g->ctx[a], b, blob, g->alen[b]);
    ASSERT_TRUE(st == WEFT_OK || st == WEFT_INPROGRESS);
}

/* The route: shm for a peer of this machine, the first network transport
 * for a peer shm does not reach, and the log says which and why. */
WF_TEST(transport_route_chooses_per_peer, 30)
{
    tg_group_t g;
    const wf_transport_ops_t *m[WF_ROUTE_MAX];
    int n = 0;
    char line[96];

    /* The network for the far peer: ib where a port is up (make
     * test-rdma's guest), else tcp. */
    ASSERT_OK(wf_transport_members("auto", m, &n));
    ASSERT_TRUE(n >= 2 && m[0] == &wf_shm_transport);
    const char *net = m[1]->name;
    wf_log_reconfigure("info", "net"); /* the route's choices are info */
    tg_open(&g, &wf_route_transport, 3);
    /* Ranks 0 and 1 share a machine; rank 2 is, to both, elsewhere. */
    tg_connect_pair(&g, 0, 1);
    connect_far(&g, 0, 2);
    connect_far(&g, 2, 0);
    connect_far(&g, 1, 2);
    connect_far(&g, 2, 1);
    tg_xfer(&g, 0, 1, 1, 1 << 20);
    tg_xfer(&g, 1, 0, 2, 8);
    tg_xfer(&g, 0, 2, 3, 1 << 20);
    tg_xfer(&g, 2, 1, 4, 8);
    ASSERT_TRUE(strcmp(wf_route_peer_transport(g.ctx[0], 1), "shm") == 0);
    ASSERT_TRUE(strcmp(wf_route_peer_transport(g.ctx[1], 0), "shm") == 0);
    ASSERT_TRUE(strcmp(wf_route_peer_transport(g.ctx[0], 2), net) == 0);
    ASSERT_TRUE(strcmp(wf_route_peer_transport(g.ctx[2], 1), net) == 0);
    ASSERT_STR_CONTAINS(tg_log_text(), "reaches peer 1 by shm");
    snprintf(line, sizeof(line), "reaches peer 2 by %s (shm: does not reach "
             "it)", net);
    ASSERT_STR_CONTAINS(tg_log_text(), line);
    tg_close(&g);
    wf_log_reconfigure(getenv("WEFT_LOG"), getenv("WEFT_LOG_SUBSYS"));
}

/* WEFT_TRANSPORT's forms: a single name is that transport alone, auto
 * and lists are the route over the usable ones, in order. */
WF_TEST(transport_route_select_forms, 10)
{
    const wf_transport_ops_t *ops = NULL, *m[WF_ROUTE_MAX];
    int n = 0;

    ASSERT_OK(wf_transport_select("shm", &ops));
    ASSERT_TRUE(ops == &wf_shm_transport);
    ASSERT_OK(wf_transport_select("auto", &ops));
    ASSERT_TRUE(ops == &wf_route_transport);
    ASSERT_OK(wf_transport_select("tcp,shm", &ops));
    ASSERT_TRUE(ops == &wf_route_transport);
    ASSERT_OK(wf_transport_members("tcp,shm", m, &n));
    ASSERT_EQ(n, 2);
    ASSERT_TRUE(m[0] == &wf_tcp_transport && m[1] == &wf_shm_transport);
    ASSERT_OK(wf_transport_members("auto", m, &n));
    ASSERT_TRUE(n >= 2 && m[0] == &wf_shm_transport &&
                m[n - 1] == &wf_tcp_transport);
    /* A list naming one usable transport twice is that one alone. */
    ASSERT_OK(wf_transport_select("tcp,tcp", &ops));
    ASSERT_TRUE(ops == &wf_tcp_transport);
    weft_set_logger(tg_log_capture, NULL);
    ASSERT_STATUS(wf_transport_select("shm,pigeon", &ops),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(tg_log_text(), "pigeon");
}

/* A dialer whose connect() finds the acceptor's backlog full retries,
 * and still fails on time when the acceptor never answers (it looped
 * retrying past its deadline before). */
WF_TEST(transport_shm_full_backlog_times_out, 30)
{
    tg_group_t g = {.ops = &wf_shm_transport, .n = 2};
    wf_tconfig_t cfg;
    wf_shm_addr_t a;
    int fds[512], nfds = 0;
    wf_treq_t *sr;

    weft_set_logger(tg_log_capture, NULL);
    tg_make_cfg(&cfg, 1, 2, "lo", 500);
    tg_open_one(&g, 1, &cfg);
    tg_make_cfg(&cfg, 0, 2, "lo", 500);
    tg_open_one(&g, 0, &cfg);
    /* Rank 1 never progresses: fill its listen backlog. */
    memcpy(&a, g.addr[1], sizeof(a));
    struct sockaddr_un sa;
    socklen_t sl = wf_shm_sockaddr(a.sock, &sa);
    while (nfds < (int)WF_ARRAY_LEN(fds)) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
        ASSERT_TRUE(fd >= 0);
        if (connect(fd, (struct sockaddr *)&sa, sl) != 0) {
            ASSERT_EQ(errno, EAGAIN);
            close(fd);
            break;
        }
        fds[nfds++] = fd;
    }
    ASSERT_TRUE(nfds < (int)WF_ARRAY_LEN(fds));
    ASSERT_STATUS(g.ops->connect(g.ctx[0], 1, g.addr[1], g.alen[1]),
                  WEFT_INPROGRESS);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 1, NULL, "x", 1, NULL, &sr));
    ASSERT_STATUS(wait_send(g.ctx[0], sr, NULL, 10000), WEFT_ERR_TIMEOUT);
    ASSERT_STR_CONTAINS(tg_log_text(), "no connection within 500 ms");
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    tg_close(&g);
}

/* A large message whose receive is posted a few calls after its RTS
 * arrived is read once, straight into that receive: not into a buffer at
 * the receiver's next progress() call, which completed the send before
 * the receive existed and copied the data twice.  With no receive at
 * all, the send still completes once the receiver has been idle. */
WF_TEST(transport_shm_late_receive_reads_once, 30)
{
    tg_group_t g = {0};
    size_t len = 256 << 10;
    uint8_t *src = malloc(len), *dst = malloc(len);
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;

    ASSERT_TRUE(src && dst);
    tg_open(&g, &wf_shm_transport, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, len); /* connected, and the single copy proven */
    tg_fill(src, len, 7);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 2, NULL, src, len, NULL, &sr));
    for (int i = 0; i < 3; i++) { /* the RTS arrives, then two calls */
        g.ops->progress(g.ctx[0]);
        g.ops->progress(g.ctx[1]);
    }
    g.ops->progress(g.ctx[0]);
    ASSERT_STATUS(g.ops->test(g.ctx[0], sr, &info), WEFT_INPROGRESS);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 2, dst, len, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_EQ(info.len, len);
    ASSERT_TRUE(tg_check(dst, len, 7));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));

    /* No receive: the idle receiver reads it into a buffer. */
    tg_fill(src, len, 9);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 3, NULL, src, len, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    memset(src, 0, len);
    memset(dst, 0, len);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 3, dst, len, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_TRUE(tg_check(dst, len, 9));
    tg_close(&g);
    free(src);
    free(dst);
}
