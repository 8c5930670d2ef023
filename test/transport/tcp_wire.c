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

#include "auth.h"
#include "tcp/tcp.h"
#include "tgroup.h"

static const uint8_t test_nonce[WF_TCP_NONCE_LEN] = "raw dialer nonce";

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
    uint8_t reply[WF_TCP_CHALL_LEN];
    size_t len = sizeof(reply);
    static uint64_t tag = 1000;

    tg_log_clear();
    if (n)
        ASSERT_EQ(send(fd, bytes, n, MSG_NOSIGNAL), n);
    ASSERT_TRUE(raw_wait_closed(g, fd, wait_ms, reply, &len));
    close(fd);
    if (verdict >= 0) { /* the verdict sits at offset 12 of a challenge */
        ASSERT_EQ(len, WF_TCP_CHALL_LEN);
        ASSERT_EQ(wf_tcp_get64(reply), WF_TCP_CHALL_MAGIC);
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
    wf_tcp_hello_encode(h, TG_JOB_KEY + 1, TG_COMM_KEY, 0, 1, test_nonce);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_JOB_KEY, "job key");
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY + 1, 0, 1, test_nonce);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_COMM_KEY,
                    "communicator key");
    tg_close(&g);
}

WF_TEST(transport_tcp_reject_ranks, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN];

    hello_open(&g);
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 2, test_nonce);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_DST_RANK,
                    "another rank");
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 2, 1, test_nonce);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_SRC_RANK, "source rank");
    /* Rank 0 is already connected to rank 1. */
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1, test_nonce);
    expect_rejected(&g, h, sizeof(h), 2000, WF_TCP_REJ_DUPLICATE,
                    "already connected");
    tg_close(&g);
}

WF_TEST(transport_tcp_reject_stalled_hello, 20)
{
    tg_group_t g;
    uint8_t h[WF_TCP_HELLO_LEN];

    hello_open(&g);
    wf_tcp_hello_encode(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1, test_nonce);
    expect_rejected(&g, h, 12, WF_TCP_HELLO_TIMEOUT_MS + 3000, -1,
                    "incomplete handshake");
    tg_close(&g);
}

/* Two contexts whose configs differ (rank 1 gets `differ` applied): rank
 * 0 dials, its send fails; returns that status with the log kept. */
static void differ_on_rank_1(wf_tconfig_t *cfg, int rank, void *differ)
{
    if (rank == 1)
        ((void (*)(wf_tconfig_t *))differ)(cfg);
}

static weft_status_t dial_mismatched(tg_group_t *g,
                                     void (*differ)(wf_tconfig_t *cfg))
{
    wf_treq_t *sr;
    wf_treq_info_t info;

    tg_open_tcp_with(g, 2, 5000, differ_on_rank_1, (void *)differ);
    tg_connect_pair(g, 0, 1);
    ASSERT_OK(g->ops->isend(g->ctx[0], 1, 1, NULL, "x", 1, NULL, &sr));
    return tg_wait(g, 0, sr, &info);
}

static void other_job_key(wf_tconfig_t *cfg) { cfg->job_key++; }
static void other_secret(wf_tconfig_t *cfg) { cfg->secret[0] ^= 1; }

/* A dialer turned away by the acceptor fails that peer with a clear
 * message: here rank 0 and rank 1 disagree on the job key. */
WF_TEST(transport_tcp_dialer_rejected, 20)
{
    tg_group_t g;

    ASSERT_TRUE(dial_mismatched(&g, other_job_key) < 0);
    ASSERT_STR_CONTAINS(tg_log_text(), "rejected by the peer");
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 1 (127.0.0.1:");
    tg_close(&g);
}

/* Two contexts with different secrets: the dialer finds out the acceptor
 * cannot prove the secret and fails the peer with WEFT_ERR_AUTH. */
WF_TEST(transport_tcp_dialer_wrong_secret, 20)
{
    tg_group_t g;

    ASSERT_STATUS(dial_mismatched(&g, other_secret), WEFT_ERR_AUTH);
    ASSERT_STR_CONTAINS(tg_log_text(), "does not know the job secret");
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 1 (127.0.0.1:");
    tg_close(&g);
}

/* Reads exactly n bytes from a raw socket while the contexts progress. */
static void raw_read_n(tg_group_t *g, int fd, uint8_t *buf, size_t n)
{
    uint64_t end = tg_now_ms() + 5000;
    size_t got = 0;

    while (got < n) {
        ASSERT_TRUE(tg_now_ms() < end);
        tg_progress(g);
        if (!tg_fd_readable(fd, 1))
            continue;
        ssize_t r = recv(fd, buf + got, n - got, 0);
        ASSERT_TRUE(r > 0);
        got += (size_t)r;
    }
}

/* Runs the dialer's side of the handshake as rank 0 towards rank 1 with
 * `secret`; returns the final verdict.  With `replay` set, sends that
 * proof instead of computing one; with `keep` set, stores the computed
 * proof there and stops before sending it.  `offer` (or NULL) goes in the
 * hello, and *reads (when not NULL) gets the reply's answer to it. */
static uint32_t raw_handshake_offer(tg_group_t *g, int fd,
                                    const uint8_t *secret,
                                    const uint8_t *replay, uint8_t *keep,
                                    const uint8_t *offer, uint64_t *reads)
{
    uint8_t h[WF_TCP_HELLO_LEN], chall[WF_TCP_CHALL_LEN];
    uint8_t mac[WF_TCP_MAC_LEN], proof[WF_TCP_PROOF_LEN];
    uint8_t reply[WF_TCP_REPLY_LEN];

    wf_tcp_hello_encode_stream(h, TG_JOB_KEY, TG_COMM_KEY, 0, 1, 0, 1,
                               test_nonce, offer);
    ASSERT_EQ(send(fd, h, sizeof(h), MSG_NOSIGNAL), sizeof(h));
    raw_read_n(g, fd, chall, sizeof(chall));
    ASSERT_EQ(wf_tcp_get64(chall), WF_TCP_CHALL_MAGIC);
    ASSERT_EQ(wf_tcp_get32(chall + 12), WF_TCP_ACCEPT);
    /* The acceptor proved the secret to us (checked with the real one). */
    ASSERT_OK(wf_tcp_hs_mac(tg_secret, WF_TCP_ROLE_ACCEPTOR, h, chall + 16,
                            mac));
    ASSERT_TRUE(memcmp(mac, chall + 16 + WF_TCP_NONCE_LEN, sizeof(mac)) == 0);
    ASSERT_OK(wf_tcp_hs_mac(secret, WF_TCP_ROLE_DIALER, h, chall + 16, mac));
    if (keep) {
        memcpy(keep, mac, sizeof(mac));
        return WF_TCP_ACCEPT;
    }
    wf_tcp_proof_encode(proof, replay ? replay : mac, false);
    ASSERT_EQ(send(fd, proof, sizeof(proof), MSG_NOSIGNAL), sizeof(proof));
    raw_read_n(g, fd, reply, sizeof(reply));
    ASSERT_EQ(wf_tcp_get64(reply), WF_TCP_REPLY_MAGIC);
    if (reads)
        *reads = wf_tcp_get64(reply + 16);
    return wf_tcp_get32(reply + 12);
}

static uint32_t raw_handshake_ex(tg_group_t *g, int fd, const uint8_t *secret,
                                 const uint8_t *replay, uint8_t *keep)
{
    return raw_handshake_offer(g, fd, secret, replay, keep, NULL, NULL);
}

static uint32_t raw_handshake(tg_group_t *g, int fd, const uint8_t *secret,
                              const uint8_t *replay)
{
    return raw_handshake_ex(g, fd, secret, replay, NULL);
}

/* Rank 1 closed the raw peer's connection; ranks 1 and 2 still exchange
 * `len` bytes.  Closes the group. */
static void closed_and_others_carry_on(tg_group_t *g, int fd, size_t len)
{
    ASSERT_TRUE(raw_wait_closed(g, fd, 2000, NULL, NULL));
    close(fd);
    tg_connect_pair(g, 1, 2);
    tg_xfer(g, 2, 1, 9, len);
    tg_close(g);
}

/* A raw socket that passes the handshake as rank 0 and then breaks the
 * framing: a good frame is delivered, the bad one fails the peer with
 * WEFT_ERR_TRANSPORT and the other peers carry on. */
WF_TEST(transport_tcp_bad_frame, 20)
{
    tg_group_t g;
    uint8_t frame[WF_TCP_HDR_LEN + 3], got[8];
    wf_treq_t *r1, *r2;
    wf_treq_info_t info;
    int fd;

    tg_open(&g, &wf_tcp_transport, 3);
    tg_connect(&g, 1, 0); /* rank 1 waits for rank 0 to dial */
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 5, got, sizeof(got), NULL, &r1));
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 6, got, sizeof(got), NULL, &r2));
    fd = raw_connect(&g, 1);
    ASSERT_EQ(raw_handshake(&g, fd, tg_secret, NULL), WF_TCP_ACCEPT);
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
    closed_and_others_carry_on(&g, fd, 1000);
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

/* A peer's last message is delivered even when this side learns of the
 * peer's departure from a failed send rather than from reading: the
 * engine's failure notices travel that way (a failing rank sends its
 * notice and leaves; a rank still sending to it saw its send fail with
 * "connection lost" first, and the notice, already in its socket, went
 * unread: the mismatch tests then saw WEFT_ERR_REMOTE instead of the
 * notice's WEFT_ERR_MISMATCH). */
WF_TEST(transport_tcp_reads_before_a_failed_send, 20)
{
    tg_group_t g;
    wf_treq_t *r0, *s1, *r1;
    wf_treq_info_t info;
    weft_status_t st;
    char last[16] = {0};

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    /* Rank 0's last words go out at once (a small send completes in
     * isend); rank 1 reads nothing from here on. */
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 7, NULL, "last words", 10, NULL,
                           &r0));
    while ((st = g.ops->test(g.ctx[0], r0, &info)) == WEFT_INPROGRESS)
        g.ops->progress(g.ctx[0]);
    ASSERT_OK(st);
    tg_fini(&g, 0);
    /* Rank 1 sends on: the first send reaches the closed socket, whose
     * kernel answers with a reset; a later one fails. */
    for (int i = 0; i < 50; i++) {
        st = g.ops->isend(g.ctx[1], 0, 8, NULL, "x", 1, NULL, &s1);
        if (st != WEFT_OK)
            break;
        st = g.ops->test(g.ctx[1], s1, &info);
        if (st != WEFT_OK && st != WEFT_INPROGRESS)
            break;
        usleep(10000);
    }
    ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 7, last, sizeof(last), NULL, &r1));
    ASSERT_OK(tg_wait(&g, 1, r1, &info));
    ASSERT_EQ(info.len, 10);
    ASSERT_STR_CONTAINS(last, "last words");
    tg_close(&g);
}

/* A connection that knows the protocol but not the job secret is turned
 * away after its proof, logged with its address; the job goes on. */
WF_TEST(transport_tcp_reject_wrong_secret, 20)
{
    tg_group_t g;
    uint8_t wrong[32];

    tg_open(&g, &wf_tcp_transport, 3);
    tg_connect(&g, 1, 0); /* rank 1 waits for rank 0 to dial */
    memcpy(wrong, tg_secret, sizeof(wrong));
    wrong[5] ^= 1;
    int fd = raw_connect(&g, 1);
    tg_log_clear();
    ASSERT_EQ(raw_handshake(&g, fd, wrong, NULL), WF_TCP_REJ_AUTH);
    ASSERT_TRUE(raw_wait_closed(&g, fd, 2000, NULL, NULL));
    close(fd);
    ASSERT_STR_CONTAINS(tg_log_text(), "rejected connection from 127.0.0.1:");
    ASSERT_STR_CONTAINS(tg_log_text(), "authentication failed");
    tg_connect(&g, 0, 1);
    tg_xfer(&g, 0, 1, 7, 1000);
    tg_xfer(&g, 1, 0, 8, 1000);
    tg_close(&g);
}

/* A proof recorded from an earlier handshake does not open a new one:
 * the acceptor's nonce differs each time. */
WF_TEST(transport_tcp_reject_replayed_proof, 20)
{
    tg_group_t g;
    uint8_t old[WF_TCP_MAC_LEN];

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect(&g, 1, 0); /* rank 1 waits for rank 0 to dial */
    int fd = raw_connect(&g, 1);
    /* A valid proof for the first challenge, as if recorded on the wire. */
    ASSERT_EQ(raw_handshake_ex(&g, fd, tg_secret, NULL, old), WF_TCP_ACCEPT);
    close(fd);
    fd = raw_connect(&g, 1);
    tg_log_clear();
    ASSERT_EQ(raw_handshake(&g, fd, tg_secret, old), WF_TCP_REJ_AUTH);
    close(fd);
    ASSERT_STR_CONTAINS(tg_log_text(), "authentication failed");
    tg_connect(&g, 0, 1);
    tg_xfer(&g, 0, 1, 4, 1000);
    tg_close(&g);
}

/* More half-open connections than WF_TCP_PENDING_MAX: the surplus is
 * refused at once and logged; the job's own connection still comes up. */
WF_TEST(transport_tcp_pending_limit, 30)
{
    tg_group_t g;
    int fds[WF_TCP_PENDING_MAX + 8];

    tg_open(&g, &wf_tcp_transport, 2);
    tg_log_clear();
    for (size_t i = 0; i < WF_ARRAY_LEN(fds); i++)
        fds[i] = raw_connect(&g, 1);
    tg_spin(&g, 200);
    ASSERT_STR_CONTAINS(tg_log_text(), "already in their handshake");
    for (size_t i = 0; i < WF_ARRAY_LEN(fds); i++)
        close(fds[i]);
    tg_spin(&g, 100);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 3, 1000);
    tg_close(&g);
}

/* fuzz_tcp_wire crash 3158c127: a frame header claiming a huge length for
 * an unexpected message made the reader allocate the claimed size at once
 * (malloc of ~2^61 bytes: the peer failed "out of memory", and under ASan
 * the process aborted).  Memory must follow the bytes actually received:
 * the peer stays up, and the message arrives whole once it is complete. */
WF_TEST(transport_tcp_huge_claimed_length, 20)
{
    tg_group_t g;
    uint8_t hdr[WF_TCP_HDR_LEN], chunk[4096];
    wf_treq_t *r;
    wf_treq_info_t info;

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect(&g, 1, 0);
    int fd = raw_connect(&g, 1);
    ASSERT_EQ(raw_handshake(&g, fd, tg_secret, NULL), WF_TCP_ACCEPT);
    wf_tcp_put64(hdr, WF_TCP_FRAME_MAGIC);
    wf_tcp_put64(hdr + 8, 5);
    wf_tcp_put64(hdr + 16, 1);
    wf_tcp_put64(hdr + 24, 2);
    wf_tcp_put64(hdr + 32, 1ull << 61); /* claimed; only 4 KiB follow */
    memset(chunk, 0x33, sizeof(chunk));
    tg_log_clear();
    ASSERT_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), sizeof(hdr));
    ASSERT_EQ(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL), sizeof(chunk));
    tg_spin(&g, 100);
    ASSERT_EQ(g.ctx[1]->peers[0].state, WF_TCP_UP);
    ASSERT_TRUE(strstr(tg_log_text(), "out of memory") == NULL);
    close(fd);
    tg_close(&g);

    /* An honest unexpected message larger than the first buffer grows it
     * and arrives intact. */
    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect(&g, 1, 0);
    fd = raw_connect(&g, 1);
    ASSERT_EQ(raw_handshake(&g, fd, tg_secret, NULL), WF_TCP_ACCEPT);
    size_t len = 200 * 1024 + 7;
    uint8_t *msg = malloc(len);
    ASSERT_TRUE(msg != NULL);
    tg_fill(msg, len, 9);
    wf_tcp_put64(hdr + 32, len);
    ASSERT_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), sizeof(hdr));
    for (size_t off = 0; off < len;) {
        ssize_t n = send(fd, msg + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            off += (size_t)n;
        tg_progress(&g);
    }
    tg_spin(&g, 50);
    uint8_t *dst = malloc(len);
    ASSERT_TRUE(dst != NULL);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 5, dst, len, NULL, &r));
    ASSERT_OK(tg_wait(&g, 1, r, &info));
    ASSERT_EQ(info.len, len);
    ASSERT_TRUE(tg_check(dst, len, 9));
    free(msg);
    free(dst);
    close(fd);
    tg_close(&g);
}

/* `n` contexts with single copy from 4 KiB, rank 1 waiting for rank 0 to
 * dial; returns a raw socket connected to rank 1 for the test to play
 * rank 0. */
static int cma_group_with_raw_peer(tg_group_t *g, int n)
{
    tg_tcp_cma_min = 4096;
    tg_open(g, &wf_tcp_transport, n);
    tg_tcp_cma_min = 0;
    tg_connect(g, 1, 0);
    return raw_connect(g, 1);
}

/* Sends an RTS for tag 5 of `len` bytes at `addr` in this process and
 * returns what rank 1's receive of that tag, posted before, ends with. */
static weft_status_t raw_rts(tg_group_t *g, int fd, size_t len,
                             uint64_t addr)
{
    uint8_t hdr[WF_TCP_HDR_LEN + WF_TCP_CMA_TRAILER] = {0};
    static uint8_t got[4096];
    wf_treq_t *rr;
    wf_treq_info_t info;

    ASSERT_TRUE(len <= sizeof(got));
    ASSERT_OK(g->ops->irecv(g->ctx[1], 0, 5, got, len, NULL, &rr));
    wf_tcp_put64(hdr, WF_TCP_CMA_RTS_MAGIC);
    wf_tcp_put64(hdr + 8, 5);
    wf_tcp_put64(hdr + 32, len);
    wf_tcp_put64(hdr + WF_TCP_HDR_LEN, addr);
    tg_log_clear();
    ASSERT_EQ(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), sizeof(hdr));
    return tg_wait(g, 1, rr, &info);
}

/* A peer on this machine offers single copy, then sends an RTS whose
 * buffer address is not mapped in its process: the receive fails with
 * WEFT_ERR_TRANSPORT and a message that names the read, the pid and the
 * errno, the sender is told why in the FIN, and the other peers carry
 * on. */
WF_TEST(transport_tcp_cma_bad_address, 20)
{
    static volatile uint64_t cookie = 0x5eed5eed5eed5eedull;
    uint8_t offer[WF_TCP_OFFER_LEN], fin[WF_TCP_HDR_LEN];
    uint64_t reads = 0;
    tg_group_t g;
    int fd = cma_group_with_raw_peer(&g, 3);

    wf_tcp_put64(offer, (uint64_t)getpid());
    wf_tcp_put64(offer + 8, (uint64_t)(uintptr_t)&cookie);
    wf_tcp_put64(offer + 16, cookie);
    wf_tcp_put64(offer + 24, wf_node_key());
    ASSERT_EQ(raw_handshake_offer(&g, fd, tg_secret, NULL, NULL, offer,
                                  &reads),
              WF_TCP_ACCEPT);
    ASSERT_EQ(reads, 1); /* rank 1 read our cookie */
    /* Address 8: the first page, never mapped. */
    ASSERT_STATUS(raw_rts(&g, fd, 4096, 8), WEFT_ERR_TRANSPORT);
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 0");
    ASSERT_STR_CONTAINS(tg_log_text(), "single-copy read of 4096 bytes");
    ASSERT_STR_CONTAINS(tg_log_text(), "Bad address");
    raw_read_n(&g, fd, fin, sizeof(fin));
    ASSERT_EQ(wf_tcp_get64(fin), WF_TCP_CMA_FIN_MAGIC);
    ASSERT_EQ(wf_tcp_get64(fin + 8), 0);
    ASSERT_EQ(wf_tcp_get64(fin + 16), EFAULT);
    closed_and_others_carry_on(&g, fd, 100000);
}

/* An RTS from a peer that was never told it may send one (it offered
 * nothing) is a protocol error, not a read of its memory. */
WF_TEST(transport_tcp_cma_unoffered_rts, 20)
{
    static uint8_t payload[4096];
    tg_group_t g;
    int fd = cma_group_with_raw_peer(&g, 2);

    ASSERT_EQ(raw_handshake(&g, fd, tg_secret, NULL), WF_TCP_ACCEPT);
    ASSERT_STATUS(raw_rts(&g, fd, sizeof(payload),
                          (uint64_t)(uintptr_t)payload),
                  WEFT_ERR_TRANSPORT);
    ASSERT_STR_CONTAINS(tg_log_text(), "never offered");
    close(fd);
    tg_close(&g);
}
