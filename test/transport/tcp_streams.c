/*
 * tcp_streams.c - the TCP transport with several streams per peer
 * (WEFT_TCP_STREAMS): striping over two loopback addresses, pieces that
 * arrive before their header, draining after the peer left, a failed
 * stream, and a stream-count mismatch.  The conformance suite runs the
 * generic checks with 2 and 4 streams (tgroup.c); these look inside.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp/tcp.h"
#include "tgroup.h"

#define MIB (1u << 20)

static void open_streams(tg_group_t *g, int n, int streams, const char *ifn)
{
    tg_tcp_streams = streams;
    tg_open_ex(g, &wf_tcp_transport, n, ifn, 10000);
}

#define LEN (2u << 20)

/* Two ranks on loopback with 4 streams, connected and warmed up, and a
 * filled send buffer and a zeroed receive buffer of LEN bytes. */
static void open_four(tg_group_t *g, uint8_t **sbuf, uint8_t **rbuf)
{
    open_streams(g, 2, 4, "lo");
    tg_connect_pair(g, 0, 1);
    tg_xfer(g, 0, 1, 1, 10);
    *sbuf = malloc(LEN);
    *rbuf = calloc(1, LEN);
    ASSERT_TRUE(*sbuf && *rbuf);
    tg_fill(*sbuf, LEN, 9);
}

/* Both addresses of WEFT_SOCKET_IFNAME=127.0.0.1,127.0.0.2 carry bytes:
 * stream 0 binds to the first on both ends, stream 1 to the second. */
WF_TEST(transport_tcp_streams_two_addrs, 30)
{
    static const char *const want[2] = {"127.0.0.1:", "127.0.0.2:"};
    char local[80], remote[80];
    uint64_t out, in;
    tg_group_t g;

    open_streams(&g, 2, 2, "127.0.0.1,127.0.0.2");
    ASSERT_EQ(g.alen[0], WF_TCP_ADDR_LEN(2)); /* one address each */
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 8 * MIB);
    tg_xfer(&g, 1, 0, 2, 8 * MIB + 3);
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(wf_tcp_stream_stats(g.ctx[0], 1, k, &out, &in, local,
                                      remote, sizeof(local)));
        printf("rank 0 stream %d: %s -> %s, %llu out, %llu in\n", k, local,
               remote, (unsigned long long)out, (unsigned long long)in);
        ASSERT_TRUE(strncmp(local, want[k], strlen(want[k])) == 0);
        ASSERT_TRUE(strncmp(remote, want[k], strlen(want[k])) == 0);
        ASSERT_TRUE(out > 3 * MIB && in > 3 * MIB);
    }
    tg_close(&g);
}

/* Without WEFT_TCP_STREAMS a pair opens one stream per interface both
 * ends listen on: listing two addresses is enough to use both (before,
 * everything went over the first unless the stream count was set too).
 * A rank with one interface and one with two use one stream. */
WF_TEST(transport_tcp_streams_follow_the_interfaces, 30)
{
    static const char *const want[2] = {"127.0.0.1:", "127.0.0.2:"};
    char local[80], remote[80];
    uint64_t out, in;
    tg_group_t g = {.ops = &wf_tcp_transport, .n = 3};
    wf_tconfig_t cfg;

    tg_tcp_streams = 0;
    for (int r = 0; r < 3; r++) {
        tg_make_cfg(&cfg, r, 3, r < 2 ? "127.0.0.1,127.0.0.2" : "127.0.0.1",
                    10000);
        tg_open_one(&g, r, &cfg);
    }
    tg_connect_pair(&g, 0, 1);
    tg_connect_pair(&g, 0, 2);
    tg_connect_pair(&g, 1, 2);
    ASSERT_EQ(g.ctx[0]->peers[1].nstreams, 2);
    ASSERT_EQ(g.ctx[1]->peers[0].nstreams, 2);
    for (int r = 0; r < 2; r++) {
        ASSERT_EQ(g.ctx[r]->peers[2].nstreams, 1);
        ASSERT_EQ(g.ctx[2]->peers[r].nstreams, 1);
    }
    tg_xfer(&g, 0, 1, 1, 8 * MIB);
    tg_xfer(&g, 1, 0, 2, 8 * MIB + 3);
    tg_xfer(&g, 2, 0, 3, 4 * MIB + 1);
    tg_xfer(&g, 1, 2, 4, 4 * MIB + 5);
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(wf_tcp_stream_stats(g.ctx[0], 1, k, &out, &in, local,
                                      remote, sizeof(local)));
        ASSERT_TRUE(strncmp(local, want[k], strlen(want[k])) == 0);
        ASSERT_TRUE(strncmp(remote, want[k], strlen(want[k])) == 0);
        ASSERT_TRUE(out > 3 * MIB && in > 3 * MIB);
    }
    tg_close(&g);
    tg_tcp_streams = 1;
}

/* A piece that arrives before its striped header waits (its stream is
 * not read) and lands once stream 0 delivers the header. */
WF_TEST(transport_tcp_piece_before_header, 30)
{
    uint8_t *sbuf, *rbuf;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    tg_group_t g;

    open_four(&g, &sbuf, &rbuf);
    wf_tcp_peer_t *p = &g.ctx[1]->peers[0];
    /* Hold stream 0 of the receiver the way a parked stream is held. */
    p->streams[0].rx.waiting = true;
    wf_tcp_stream_watch(g.ctx[1], &p->streams[0], false);
    ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 2, rbuf, LEN, NULL, &rr));
    ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 2, NULL, sbuf, LEN, NULL,
                                     &sr));
    tg_spin(&g, 200);
    for (int k = 1; k < 4; k++)
        ASSERT_TRUE(p->streams[k].rx.waiting); /* parked on its piece */
    ASSERT_STATUS(wf_tcp_transport.test(g.ctx[1], rr, &info),
                  WEFT_INPROGRESS);
    p->streams[0].rx.waiting = false;
    wf_tcp_stream_watch(g.ctx[1], &p->streams[0], false);
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_TRUE(tg_check(rbuf, LEN, 9));
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* The sender finishes and leaves while its pieces are still in the
 * receiver's sockets: the EOF of stream 0 must not drop them. */
WF_TEST(transport_tcp_streams_drain_after_close, 30)
{
    uint8_t *sbuf, *rbuf;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    tg_group_t g;

    open_four(&g, &sbuf, &rbuf);
    ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 2, NULL, sbuf, LEN, NULL,
                                     &sr));
    /* Only the sender runs until its send is written, then it leaves. */
    while (wf_tcp_transport.test(g.ctx[0], sr, &info) == WEFT_INPROGRESS)
        wf_tcp_transport.progress(g.ctx[0]);
    tg_fini(&g, 0);
    tg_log_clear();
    tg_spin(&g, 100);
    ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 2, rbuf, LEN, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_TRUE(tg_check(rbuf, LEN, 9));
    ASSERT_TRUE(strstr(tg_log_text(), "closed") == NULL); /* a goodbye */
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* A stream that breaks (reset) fails the peer at once, naming the peer,
 * the stream, its address and the errno text; nothing hangs. */
WF_TEST(transport_tcp_stream_reset, 30)
{
    uint8_t *buf = calloc(1, LEN);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    tg_group_t g;

    open_streams(&g, 2, 4, "lo");
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, LEN);
    ASSERT_OK(wf_tcp_transport.irecv(g.ctx[0], 1, 2, buf, LEN, NULL, &rr));
    /* Reset stream 2 from rank 1's end, as a crashed host would. */
    wf_tcp_stream_t *s = &g.ctx[1]->peers[0].streams[2];
    ASSERT_TRUE(setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg,
                           sizeof(lg)) == 0);
    close(s->fd);
    s->fd = -1;
    tg_log_clear();
    ASSERT_STATUS(tg_wait(&g, 0, rr, &info), WEFT_ERR_REMOTE);
    const char *log = tg_log_text();
    ASSERT_STR_CONTAINS(log, "peer 1 (127.0.0.1:");
    ASSERT_STR_CONTAINS(log, "stream 2 of 4 (127.0.0.1:");
    ASSERT_STR_CONTAINS(log, strerror(ECONNRESET));
    /* Later posts fail at once. */
    ASSERT_STATUS(wf_tcp_transport.isend(g.ctx[0], 1, 3, NULL, buf, LEN,
                                         NULL, &sr),
                  WEFT_ERR_REMOTE);
    tg_close(&g);
    free(buf);
}

/* Ranks that disagree on WEFT_TCP_STREAMS fail with the reason. */
WF_TEST(transport_tcp_streams_mismatch, 30)
{
    wf_tconfig_t cfg;
    wf_treq_t *sr;
    wf_treq_info_t info;
    tg_group_t g = {.ops = &wf_tcp_transport, .n = 2};

    weft_set_logger(tg_log_capture, NULL);
    for (int r = 0; r < 2; r++) {
        tg_tcp_streams = r == 0 ? 2 : 1;
        tg_make_cfg(&cfg, r, 2, "lo", 2000);
        tg_open_one(&g, r, &cfg);
    }
    tg_log_clear();
    tg_connect_pair(&g, 0, 1);
    ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 1, NULL, "x", 1, NULL,
                                     &sr));
    ASSERT_STATUS(tg_wait(&g, 0, sr, &info), WEFT_ERR_TRANSPORT);
    ASSERT_STR_CONTAINS(tg_log_text(), "stream count mismatch");
    ASSERT_STR_CONTAINS(tg_log_text(), "peer 1 (127.0.0.1:");
    tg_close(&g);
}

/* One stream cannot connect (the peer's second address is a closed
 * port): the dialer fails the peer naming that stream, address and errno
 * text within its timeout, and the acceptor, which had stream 0 already,
 * fails too as soon as the dialer gives up, instead of waiting forever. */
WF_TEST(transport_tcp_stream_unreachable, 30)
{
    uint8_t blob[WF_TADDR_MAX], buf[4];
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    wf_tconfig_t cfg;
    tg_group_t g = {.ops = &wf_tcp_transport, .n = 2};
    tg_group_t gone;

    weft_set_logger(tg_log_capture, NULL);
    tg_tcp_streams = 2;
    for (int r = 0; r < 2; r++) {
        tg_make_cfg(&cfg, r, 2, "lo", 500);
        tg_open_one(&g, r, &cfg);
    }
    /* Rank 1's blob, plus a second address: a context that is gone. */
    tg_open_ex(&gone, &wf_tcp_transport, 1, "lo", 500);
    memcpy(blob, g.addr[1], g.alen[1]);
    memcpy(blob + g.alen[1], gone.addr[0] + WF_TCP_ADDR_HDR,
           WF_TCP_ADDR_ENTRY);
    blob[1] = 2;
    tg_close(&gone);
    tg_log_clear();
    weft_status_t st = wf_tcp_transport.connect(g.ctx[0], 1, blob,
                                                WF_TCP_ADDR_LEN(2));
    ASSERT_TRUE(st == WEFT_OK || st == WEFT_INPROGRESS);
    tg_connect(&g, 1, 0);
    ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 1, buf, 4, NULL, &rr));
    ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 1, NULL, "abc", 4, NULL,
                                     &sr));
    uint64_t start = tg_now_ms();
    ASSERT_STATUS(tg_wait(&g, 0, sr, &info), WEFT_ERR_REMOTE);
    ASSERT_STATUS(tg_wait(&g, 1, rr, &info), WEFT_ERR_REMOTE);
    ASSERT_TRUE(tg_now_ms() - start < 5000);
    ASSERT_STR_CONTAINS(tg_log_text(), "stream 1 of 2 (127.0.0.1:");
    ASSERT_STR_CONTAINS(tg_log_text(), strerror(ECONNREFUSED));
    tg_close(&g);
}

/* A piece that parked before its header and turns out to point past the
 * end of its message fails the peer as a protocol error; it is never
 * written anywhere. */
WF_TEST(transport_tcp_bad_parked_piece, 30)
{
    uint8_t *sbuf, *rbuf, hdr[WF_TCP_HDR_LEN + 8] = {0};
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    tg_group_t g;

    open_four(&g, &sbuf, &rbuf);
    /* Message 0 of the pair, offset past its end, 8 bytes. */
    wf_tcp_put64(hdr, WF_TCP_PIECE_MAGIC);
    wf_tcp_put64(hdr + 16, 3 * LEN);
    wf_tcp_put64(hdr + 24, 8);
    ASSERT_EQ(send(g.ctx[0]->peers[1].streams[1].fd, hdr, sizeof(hdr),
                   MSG_NOSIGNAL), sizeof(hdr));
    tg_spin(&g, 100);
    ASSERT_TRUE(g.ctx[1]->peers[0].streams[1].rx.waiting);
    tg_log_clear();
    ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 2, rbuf, LEN, NULL, &rr));
    ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 2, NULL, sbuf, LEN, NULL,
                                     &sr));
    ASSERT_STATUS(tg_wait(&g, 1, rr, &info), WEFT_ERR_TRANSPORT);
    ASSERT_STR_CONTAINS(tg_log_text(), "stream 1 of 4");
    ASSERT_STR_CONTAINS(tg_log_text(), "protocol error: bad piece");
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* The cut of a striped message: equal pieces while the streams' rates are
 * unknown or within 25% of each other, else in proportion to them (a
 * 200 and a 50 Mbit/s NIC: 80% and 20%, where equal halves left the fast
 * one idle for most of the time), piece ends aligned, a share that rounds
 * to nothing allowed, every byte in exactly one piece. */
WF_TEST(transport_tcp_stripe_cut_follows_the_rates, 10)
{
    size_t p[4];
    const uint64_t unknown[2] = {0, 100}, close[2] = {100, 120},
                   uneven[2] = {200, 50}, lopsided[2] = {1, 1000};

    ASSERT_EQ(wf_tcp_stripe_cut(1000, 3, NULL, 64, p), 3);
    ASSERT_TRUE(p[0] == 384 && p[1] == 384 && p[2] == 232);
    ASSERT_EQ(wf_tcp_stripe_cut(100, 4, NULL, 64, p), 2); /* 64 + 36 */
    ASSERT_EQ(wf_tcp_stripe_cut(MIB, 2, unknown, 64, p), 2);
    ASSERT_TRUE(p[0] == MIB / 2 && p[1] == MIB / 2);
    ASSERT_EQ(wf_tcp_stripe_cut(MIB, 2, close, 64, p), 2);
    ASSERT_TRUE(p[0] == MIB / 2 && p[1] == MIB / 2);
    ASSERT_EQ(wf_tcp_stripe_cut(MIB, 2, uneven, 64, p), 2);
    ASSERT_EQ(p[0] % 64, 0);
    ASSERT_EQ(p[0] + p[1], MIB);
    ASSERT_TRUE(p[0] > MIB / 10 * 8 - 64 && p[0] <= MIB / 10 * 8);
    ASSERT_EQ(wf_tcp_stripe_cut(100, 2, lopsided, 64, p), 2);
    ASSERT_TRUE(p[0] == 0 && p[1] == 100);
    ASSERT_EQ(wf_tcp_stripe_cut(3 * MIB + 7, 2, lopsided, 64, p), 2);
    ASSERT_EQ(p[0] + p[1], 3 * MIB + 7);
}

/* Unexpected messages of 128 KiB and more hand their buffers to the
 * context's pool when delivered, and the next ones take them instead of
 * fresh memory (back-to-back collectives faulted fresh pages in for
 * every early chunk: bench/results/2026-11-24-1mib-64mib-and-bbr.md);
 * every byte still arrives. */
WF_TEST(transport_tcp_unexpected_buffers_reused, 30)
{
    /* More than the 8 buffers the pool was first limited to: 4 ranks at
     * 64 MiB have hundreds of early chunks a call. */
    enum { NMSG = 12, MLEN = 300 * 1024 };
    static uint8_t sbuf[NMSG][MLEN], rbuf[NMSG][MLEN];
    wf_treq_t *sr[NMSG], *rr[NMSG];
    wf_treq_info_t info;
    tg_group_t g;

    open_streams(&g, 2, 1, "lo");
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NMSG; i++) {
            tg_fill(sbuf[i], MLEN, (unsigned)(10 * round + i));
            memset(rbuf[i], 0, MLEN);
            ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 100 + (uint64_t)i,
                                             NULL, sbuf[i], MLEN, NULL,
                                             &sr[i]));
        }
        /* All three arrive before any receive is posted. */
        for (int i = 0; i < NMSG; i++)
            ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
        tg_spin(&g, 50);
        /* Round 0: nothing kept yet; round 1: all three kept buffers taken. */
        ASSERT_EQ(g.ctx[1]->m.nspare, 0);
        for (int i = 0; i < NMSG; i++) {
            ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 100 + (uint64_t)i,
                                             rbuf[i], MLEN, NULL, &rr[i]));
            ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
            ASSERT_EQ(info.len, MLEN);
            ASSERT_TRUE(tg_check(rbuf[i], MLEN, (unsigned)(10 * round + i)));
        }
        ASSERT_EQ(g.ctx[1]->m.nspare, NMSG); /* handed back for the next ones */
    }
    tg_close(&g);
}

/* The pool keeps at most WF_MATCH_SPARE_BYTES: of nine delivered 4 MiB
 * messages it keeps eight, and frees the ninth. */
WF_TEST(transport_tcp_unexpected_pool_bounded, 30)
{
    enum { NMSG = 9 };
    const size_t mlen = WF_MATCH_SPARE_MAX;
    uint8_t *sbuf = malloc(mlen), *rbuf = malloc(mlen);
    wf_treq_t *sr[NMSG], *rr;
    wf_treq_info_t info;
    tg_group_t g;

    ASSERT_TRUE(sbuf && rbuf);
    open_streams(&g, 2, 1, "lo");
    tg_connect_pair(&g, 0, 1);
    tg_fill(sbuf, mlen, 5);
    for (int i = 0; i < NMSG; i++)
        ASSERT_OK(wf_tcp_transport.isend(g.ctx[0], 1, 200 + (uint64_t)i, NULL,
                                         sbuf, mlen, NULL, &sr[i]));
    for (int i = 0; i < NMSG; i++)
        ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
    tg_spin(&g, 50);
    for (int i = 0; i < NMSG; i++) {
        memset(rbuf, 0, mlen);
        ASSERT_OK(wf_tcp_transport.irecv(g.ctx[1], 0, 200 + (uint64_t)i, rbuf,
                                         mlen, NULL, &rr));
        ASSERT_OK(tg_wait(&g, 1, rr, &info));
        ASSERT_TRUE(info.len == mlen && tg_check(rbuf, mlen, 5));
    }
    ASSERT_EQ(g.ctx[1]->m.nspare, WF_MATCH_SPARE_BYTES / WF_MATCH_SPARE_MAX);
    ASSERT_EQ(g.ctx[1]->m.spare_bytes, WF_MATCH_SPARE_BYTES);
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}
