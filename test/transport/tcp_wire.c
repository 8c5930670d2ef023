/*
 * tcp_wire.c - tests of the TCP transport's own behaviour: the port range,
 * interface lists, and the handshake's defences, checked by speaking the
 * wire format (tcp/tcp.h) through raw loopback sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp.h"
#include "tgroup.h"

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    ASSERT_TRUE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int ctx_port(tg_group_t *g, int r)
{
    wf_tdev_attr_t attr;
    ASSERT_OK(g->ops->query(g->ctx[r], &attr));
    return atoi(strrchr(attr.address, ':') + 1);
}

WF_TEST(transport_tcp_port_range, 20)
{
    tg_group_t g;
    wf_tconfig_t cfg;
    wf_tctx_t *other = NULL;
    int base = free_port();

    memset(&g, 0, sizeof(g));
    g.ops = &wf_tcp_transport;
    g.n = 2;
    weft_set_logger(tg_log_capture, NULL);
    for (int r = 0; r < 2; r++) {
        tg_make_cfg(&cfg, r, 2, "127.0.0.1", 5000);
        cfg.port_min = base;
        cfg.port_max = base + 3;
        tg_open_one(&g, r, &cfg);
        ASSERT_TRUE(ctx_port(&g, r) >= base && ctx_port(&g, r) <= base + 3);
    }
    ASSERT_TRUE(ctx_port(&g, 0) != ctx_port(&g, 1));
    tg_make_cfg(&cfg, 0, 2, "lo", 5000);
    cfg.port_min = cfg.port_max = ctx_port(&g, 0);
    ASSERT_TRUE(wf_tcp_transport.init(&cfg, &other) < 0);
    ASSERT_TRUE(other == NULL);
    cfg.port_min = 10;
    cfg.port_max = 5;
    ASSERT_STATUS(wf_tcp_transport.init(&cfg, &other), WEFT_ERR_INVALID_ARG);
    tg_make_cfg(&cfg, 0, 2, "no-such-if0,also-missing", 5000);
    ASSERT_STATUS(wf_tcp_transport.init(&cfg, &other), WEFT_ERR_INVALID_ARG);
    /* A comma list uses the first entry that has an address. */
    tg_make_cfg(&cfg, 0, 2, "no-such-if0,lo", 5000);
    ASSERT_OK(wf_tcp_transport.init(&cfg, &other));
    wf_tcp_transport.fini(other);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 1000);
    tg_close(&g);
}

/* Connects a raw socket to rank `r`'s listening port. */
static int raw_connect(tg_group_t *g, int r)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_port = htons((uint16_t)ctx_port(g, r));
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    return fd;
}

/* Drives the contexts until the raw socket is closed by the remote end;
 * what it received before is returned in reply (up to *len bytes). */
static bool raw_wait_closed(tg_group_t *g, int fd, int ms, uint8_t *reply,
                            size_t *len)
{
    uint64_t end = tg_now_ms() + (uint64_t)ms;
    size_t got = 0, cap = len ? *len : 0;
    uint8_t sink[256];

    while (tg_now_ms() < end) {
        tg_progress(g);
        if (!tg_fd_readable(fd, 1))
            continue;
        ssize_t n = got < cap ? recv(fd, reply + got, cap - got, 0)
                              : recv(fd, sink, sizeof(sink), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            if (len)
                *len = got;
            return true;
        }
        if (n > 0 && got < cap)
            got += (size_t)n;
    }
    return false;
}

/* Sends `bytes` on a raw connection to rank 1, expects the context to close
 * it, then checks that ranks 0 and 1 still exchange messages. */
static void expect_rejected(tg_group_t *g, const void *bytes, size_t n,
                            int wait_ms, int verdict, const char *logged)
{
    int fd = raw_connect(g, 1);
    uint8_t reply[WF_TCP_REPLY_LEN];
    size_t len = sizeof(reply);
    static uint64_t tag = 1000;

    tg_log_clear();
    if (n)
        ASSERT_EQ(send(fd, bytes, n, MSG_NOSIGNAL), n);
    ASSERT_TRUE(raw_wait_closed(g, fd, wait_ms, reply, &len));
    close(fd);
    if (verdict >= 0) {
        ASSERT_EQ(len, WF_TCP_REPLY_LEN);
        ASSERT_EQ(wf_tcp_get32(reply + 12), verdict);
    }
    ASSERT_STR_CONTAINS(tg_log_text(), "127.0.0.1:");
    ASSERT_STR_CONTAINS(tg_log_text(), logged);
    tg_xfer(g, 0, 1, tag++, 100);
    tg_xfer(g, 1, 0, tag++, 100);
}

static void hello_open(tg_group_t *g)
{
    tg_open(g, &wf_tcp_transport, 3);
    tg_connect_pair(g, 0, 1);
    tg_xfer(g, 0, 1, 1, 10);
}

WF_TEST(transport_tcp_reject_garbage, 20)
{
    tg_group_t g;
    const char *junk = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
    uint8_t junk40[WF_TCP_HELLO_LEN];

    hello_open(&g);
    expect_rejected(&g, junk, strlen(junk), 2000, -1, "bad magic");
    memset(junk40, 0xff, sizeof(junk40));
    expect_rejected(&g, junk40, sizeof(junk40), 2000, -1, "bad magic");
    tg_close(&g);
}

WF_TEST(transport_tcp_reject_job_key, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN];

    hello_open(&g);
    wf_tcp_hello_encode(h, TG_JOB_KEY + 1, TG_COMM_KEY, 0, 1);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_JOB_KEY, "job key");
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY + 1, 0, 1);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_COMM_KEY,
                    "communicator key");
    tg_close(&g);
}

WF_TEST(transport_tcp_reject_ranks, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN];

    hello_open(&g);
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 2);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_DST_RANK,
                    "another rank");
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 2, 1);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_SRC_RANK, "source rank");
    /* Rank 0 is already connected to rank 1. */
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_DUPLICATE,
                    "already connected");
    tg_close(&g);
}

WF_TEST(transport_tcp_reject_stalled_hello, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN];

    hello_open(&g);
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1);
    expect_rejected(&g, h, 12, WF_TCP_HELLO_TIMEOUT_MS + 3000, -1,
                    "incomplete handshake");
    tg_close(&g);
}

/* A dialer turned away by the acceptor fails that peer with a clear
 * message: here rank 0 and rank 1 disagree on the job key. */
WF_TEST(transport_tcp_dialer_rejected, 20)
{
    tg_group_t g;
    wf_tconfig_t cfg;
    wf_treq_t *sr;
    wf_treq_info_t info;

    memset(&g, 0, sizeof(g));
    g.ops = &wf_tcp_transport;
    g.n = 2;
    weft_set_logger(tg_log_capture, NULL);
    for (int r = 0; r < 2; r++) {
        tg_make_cfg(&cfg, r, 2, "lo", 5000);
        cfg.job_key += (uint64_t)r;
        tg_open_one(&g, r, &cfg);
    }
    tg_connect_pair(&g, 0, 1);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 1, NULL, "x", 1, NULL, &sr));
    ASSERT_TRUE(tg_wait(&g, 0, sr, &info) < 0);
    ASSERT_STR_CONTAINS(tg_log_text(), "rejected by the peer");
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 1 (127.0.0.1:");
    tg_close(&g);
}

/* A raw socket that passes the handshake as rank 0 and then breaks the
 * framing: a good frame is delivered, the bad one fails the peer with
 * WEFT_ERR_TRANSPORT and the other peers carry on. */
WF_TEST(transport_tcp_bad_frame, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN], reply[WF_TCP_REPLY_LEN];
    uint8_t frame[WF_TCP_HDR_LEN + 3], got[8];
    size_t len = sizeof(reply);
    wf_treq_t *r1, *r2;
    wf_treq_info_t info;
    int fd;

    tg_open(&g, &wf_tcp_transport, 3);
    tg_connect(&g, 1, 0); /* rank 1 waits for rank 0 to dial */
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 5, got, sizeof(got), NULL, &r1));
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 6, got, sizeof(got), NULL, &r2));
    fd = raw_connect(&g, 1);
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1);
    ASSERT_EQ(send(fd, h, sizeof(h), MSG_NOSIGNAL), sizeof(h));
    wf_tcp_put64(frame, WF_TCP_FRAME_MAGIC);
    wf_tcp_put64(frame + 8, 5);
    wf_tcp_put64(frame + 16, 77);
    wf_tcp_put64(frame + 24, 78);
    wf_tcp_put64(frame + 32, 3);
    memcpy(frame + WF_TCP_HDR_LEN, "abc", 3);
    ASSERT_EQ(send(fd, frame, sizeof(frame), MSG_NOSIGNAL), sizeof(frame));
    ASSERT_OK(tg_wait(&g, 1, r1, &info));
    ASSERT_TRUE(info.len == 3 && info.sig[0] == 77 && info.sig[1] == 78);
    ASSERT_TRUE(memcmp(got, "abc", 3) == 0);
    memset(frame, 0x5a, sizeof(frame));
    tg_log_clear();
    ASSERT_EQ(send(fd, frame, sizeof(frame), MSG_NOSIGNAL), sizeof(frame));
    ASSERT_STATUS(tg_wait(&g, 1, r2, &info), WEFT_ERR_TRANSPORT);
    ASSERT_STR_CONTAINS(tg_log_text(), "protocol error");
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 0");
    len = sizeof(reply);
    ASSERT_TRUE(raw_wait_closed(&g, fd, 2000, reply, &len));
    ASSERT_EQ(len, WF_TCP_REPLY_LEN);
    ASSERT_EQ(wf_tcp_get32(reply + 12), WF_TCP_ACCEPT);
    close(fd);
    tg_connect_pair(&g, 1, 2);
    tg_xfer(&g, 2, 1, 9, 1000);
    tg_close(&g);
}

/* A peer that leaves while nothing is pending with it is not an error yet:
 * no warning until this side posts to it, then one. */
WF_TEST(transport_tcp_quiet_close, 20)
{
    tg_group_t g;
    wf_treq_t *sr;
    wf_treq_info_t info;
    weft_status_t st;

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    tg_log_clear();
    tg_fini(&g, 0);
    tg_spin(&g, 100);
    ASSERT_TRUE(strstr(tg_log_text(), "closed") == NULL);
    st = g.ops->isend(g.ctx[1], 0, 2, NULL, "x", 1, NULL, &sr);
    if (st == WEFT_OK)
        st = tg_wait(&g, 1, sr, &info);
    ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 0 (127.0.0.1:");
    ASSERT_STR_CONTAINS(tg_log_text(), "connection closed by the peer");
    tg_log_clear();
    ASSERT_STATUS(g.ops->isend(g.ctx[1], 0, 2, NULL, "x", 1, NULL, &sr),
                  WEFT_ERR_REMOTE);
    ASSERT_TRUE(tg_log_text()[0] == '\0'); /* reported once */
    tg_close(&g);
}
