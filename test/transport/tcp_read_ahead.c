/*
 * tcp_read_ahead.c - stream 0's read-ahead and the hot peers of the TCP
 * transport (docs/design.md, "Small messages"): one read per small frame,
 * frames of every size around the read-ahead buffer, posted and
 * unexpected, truncated and cut off by the peer's exit, and a hot peer
 * that must not hide the others from epoll.
 */
#include <poll.h>
#include <unistd.h>

#include "tcp/tcp.h"
#include "tgroup.h"

/* Frames sent one at a time, each waited for before the next: with the
 * read-ahead a header and its 8-byte payload arrive in one read.  (Before
 * it, the header came alone and the payload in a second read.) */
WF_TEST(transport_tcp_small_frame_takes_one_read, 20)
{
    enum { FRAMES = 50 };
    tg_group_t g;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    uint8_t out[8], in[8];

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    wf_tcp_stream_t *s = &g.ctx[1]->peers[0].streams[0];
    uint64_t reads = s->reads;
    for (int i = 0; i < FRAMES; i++) {
        tg_fill(out, sizeof(out), (unsigned)i);
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 100 + (uint64_t)i, in,
                               sizeof(in), NULL, &rr));
        ASSERT_OK(g.ops->isend(g.ctx[0], 1, 100 + (uint64_t)i, NULL, out,
                               sizeof(out), NULL, &sr));
        ASSERT_OK(tg_wait(&g, 0, sr, &info));
        ASSERT_OK(tg_wait(&g, 1, rr, &info));
        ASSERT_EQ(info.len, sizeof(in));
        ASSERT_TRUE(tg_check(in, sizeof(in), (unsigned)i));
    }
    printf("%llu reads for %d frames\n",
           (unsigned long long)(s->reads - reads), FRAMES);
    ASSERT_TRUE(s->reads - reads <= FRAMES);
    tg_close(&g);
}

/* Also around the largest frame sent from one flat copy and around the
 * largest read that goes into the read-ahead buffer alone (tcp_xfer.c). */
static const size_t sizes[] = {
    0, 1, 8, WF_TCP_HDR_LEN - 1, WF_TCP_HDR_LEN, WF_TCP_HDR_LEN + 1,
    WF_TCP_SMALL_SEND - WF_TCP_HDR_LEN - 1, WF_TCP_SMALL_SEND - WF_TCP_HDR_LEN,
    WF_TCP_SMALL_SEND - WF_TCP_HDR_LEN + 1, WF_TCP_AHEAD_RECV_MAX - 1,
    WF_TCP_AHEAD_RECV_MAX, WF_TCP_AHEAD_RECV_MAX + 1,
    WF_TCP_AHEAD_LEN - WF_TCP_HDR_LEN - 1, WF_TCP_AHEAD_LEN - WF_TCP_HDR_LEN,
    WF_TCP_AHEAD_LEN - WF_TCP_HDR_LEN + 1, WF_TCP_AHEAD_LEN - 1,
    WF_TCP_AHEAD_LEN, WF_TCP_AHEAD_LEN + 1, 3 * WF_TCP_AHEAD_LEN + 7, 70000,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 3

/* Every size around the buffer, back to back, three times over: each
 * readv's read-ahead ends at a different place in the next frames.  With
 * `late` the receives are posted only after every send completed (the
 * frames wait as unexpected messages); otherwise before.  One receive in
 * each round is too small and truncates its message. */
static void frames_across_the_buffer(bool late)
{
    tg_group_t g;
    enum { N = NSIZES * ROUNDS };
    uint8_t *sbuf[N], *rbuf[N];
    wf_treq_t *sr[N], *rr[N];
    wf_treq_info_t info;

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect_pair(&g, 0, 1);
    for (size_t i = 0; i < N; i++) {
        size_t len = sizes[i % NSIZES];
        sbuf[i] = malloc(len + 1);
        rbuf[i] = malloc(len + 1);
        ASSERT_TRUE(sbuf[i] && rbuf[i]);
        tg_fill(sbuf[i], len, (unsigned)i);
        memset(rbuf[i], 0xEE, len + 1);
    }
    size_t truncated = NSIZES + 9; /* 4055 bytes into a 9-byte receive */
    for (size_t i = 0; !late && i < N; i++)
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, i, rbuf[i],
                               i == truncated ? 9 : sizes[i % NSIZES], NULL,
                               &rr[i]));
    for (size_t i = 0; i < N; i++)
        ASSERT_OK(g.ops->isend(g.ctx[0], 1, i, NULL, sbuf[i],
                               sizes[i % NSIZES], NULL, &sr[i]));
    for (size_t i = 0; i < N; i++)
        ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
    for (size_t i = 0; late && i < N; i++) {
        tg_spin(&g, 1);
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, i, rbuf[i],
                               i == truncated ? 9 : sizes[i % NSIZES], NULL,
                               &rr[i]));
    }
    for (size_t i = 0; i < N; i++) {
        size_t len = sizes[i % NSIZES];
        size_t cap = i == truncated ? 9 : len;
        ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
        ASSERT_EQ(info.len, len);
        ASSERT_EQ(info.truncated, i == truncated);
        ASSERT_TRUE(tg_check(rbuf[i], cap, (unsigned)i));
        ASSERT_EQ(rbuf[i][cap], 0xEE);
        free(sbuf[i]);
        free(rbuf[i]);
    }
    tg_xfer(&g, 0, 1, 999, 10); /* the stream is still in step */
    tg_close(&g);
}

WF_TEST(transport_tcp_read_ahead_frames_posted, 30)
{
    frames_across_the_buffer(false);
}

WF_TEST(transport_tcp_read_ahead_frames_unexpected, 30)
{
    frames_across_the_buffer(true);
}

/* Small frames and the peer's close can arrive in one readv: every frame
 * is delivered, then the close fails what is still awaited. */
WF_TEST(transport_tcp_read_ahead_frames_before_close, 20)
{
    tg_group_t g;
    wf_treq_t *sr, *rr[4];
    wf_treq_info_t info;
    char in[4][16];
    weft_status_t st;

    tg_open(&g, &wf_tcp_transport, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 10, in[0], sizeof(in[0]), NULL,
                           &rr[0]));
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(g.ops->isend(g.ctx[0], 1, 10 + (uint64_t)i, NULL,
                               "frame", 6, NULL, &sr));
        while ((st = g.ops->test(g.ctx[0], sr, &info)) == WEFT_INPROGRESS)
            g.ops->progress(g.ctx[0]);
        ASSERT_OK(st);
    }
    tg_fini(&g, 0);
    usleep(20000); /* the frames and the FIN are in rank 1's socket */
    for (int i = 1; i < 4; i++)
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 10 + (uint64_t)i, in[i],
                               sizeof(in[i]), NULL, &rr[i]));
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
        ASSERT_EQ(info.len, 6);
        ASSERT_STR_CONTAINS(in[i], "frame");
    }
    ASSERT_STATUS(tg_wait(&g, 1, rr[3], &info), WEFT_ERR_REMOTE);
    tg_close(&g);
}

/* Ranks 0 and 2 connected to rank 1, each link used once. */
static void open_two_senders(tg_group_t *g)
{
    tg_open(g, &wf_tcp_transport, 3);
    tg_connect_pair(g, 0, 1);
    tg_connect_pair(g, 2, 1);
    tg_xfer(g, 0, 1, 1, 10);
    tg_xfer(g, 2, 1, 1, 10);
}

/* Waits until rank r's stream 0 from `peer` has bytes to read, without
 * calling rank r's progress() (whose counts the tests below check). */
static void wait_readable(tg_group_t *g, int r, int peer)
{
    struct pollfd pfd = {.fd = g->ctx[r]->peers[peer].streams[0].fd,
                         .events = POLLIN};
    ASSERT_EQ(poll(&pfd, 1, 5000), 1);
}

/* Rank `from` sends 8 bytes of `seed` to rank 1 and completes the send
 * driving only itself; returns once they are in rank 1's socket, which
 * has read nothing meanwhile. */
static void send_to_rank1(tg_group_t *g, int from, uint64_t tag,
                          unsigned seed)
{
    uint8_t out[8];
    wf_treq_t *sr;
    wf_treq_info_t info;
    weft_status_t st;

    tg_fill(out, sizeof(out), seed);
    ASSERT_OK(g->ops->isend(g->ctx[from], 1, tag, NULL, out, sizeof(out),
                            NULL, &sr));
    while ((st = g->ops->test(g->ctx[from], sr, &info)) == WEFT_INPROGRESS)
        g->ops->progress(g->ctx[from]);
    ASSERT_OK(st);
    wait_readable(g, 1, from);
}

/* While a receive waits on peer 0, whose socket progress() reads without
 * epoll, a message from peer 2 that nobody awaits is still noticed within
 * WF_TCP_EPOLL_EVERY calls: epoll_wait is skipped, never left out. */
WF_TEST(transport_tcp_hot_peer_leaves_others_to_epoll, 20)
{
    tg_group_t g;
    wf_treq_t *hot, *sr, *rr;
    wf_treq_info_t info;
    uint8_t in[8], out[8];
    weft_status_t st;

    open_two_senders(&g);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 5, in, sizeof(in), NULL, &hot));
    g.ops->progress(g.ctx[1]);
    ASSERT_EQ(g.ctx[1]->nhot, 1);
    for (int round = 0; round < 10; round++) {
        uint64_t before = g.ctx[1]->m.unexp_arrivals;
        send_to_rank1(&g, 2, 50 + (uint64_t)round, (unsigned)round);
        for (int k = 0; k < WF_TCP_EPOLL_EVERY; k++)
            g.ops->progress(g.ctx[1]);
        ASSERT_EQ(g.ctx[1]->m.unexp_arrivals, before + 1);
        /* Delivered at once from the unexpected list. */
        ASSERT_OK(g.ops->irecv(g.ctx[1], 2, 50 + (uint64_t)round, in,
                               sizeof(in), NULL, &rr));
        ASSERT_OK(g.ops->test(g.ctx[1], rr, &info));
        ASSERT_TRUE(tg_check(in, sizeof(in), (unsigned)round));
    }
    st = g.ops->test(g.ctx[1], hot, &info);
    ASSERT_STATUS(st, WEFT_INPROGRESS);
    tg_xfer(&g, 0, 1, 6, 10); /* peer 0 is still read */
    tg_fill(out, sizeof(out), 5);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 5, NULL, out, sizeof(out), NULL,
                           &sr));
    ASSERT_OK(tg_wait(&g, 1, hot, &info));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    tg_close(&g);
}

/* A hot peer whose read finishes a message on every call does not hide
 * the others: a message from peer 2 that nobody awaits is noticed on the
 * WF_TCP_EPOLL_MAX_SKIP-th call although no call was counted towards the
 * usual epoll_wait (each read finished a message). */
WF_TEST(transport_tcp_busy_hot_peer_leaves_others_to_epoll, 20)
{
    enum { FRAMES = WF_TCP_EPOLL_MAX_SKIP + 8 };
    tg_group_t g;
    wf_treq_t *rr[FRAMES], *late;
    wf_treq_info_t info;
    uint8_t in[FRAMES][8], late_in[8];

    open_two_senders(&g);
    /* Nothing awaited: this call asks epoll and resets its counts. */
    g.ops->progress(g.ctx[1]);
    ASSERT_EQ(g.ctx[1]->nhot, 0);
    uint64_t before = g.ctx[1]->m.unexp_arrivals;
    send_to_rank1(&g, 2, 50, 77);
    int calls = 0;
    for (int i = 0; i < FRAMES && g.ctx[1]->m.unexp_arrivals == before; i++) {
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 100 + (uint64_t)i, in[i],
                               sizeof(in[i]), NULL, &rr[i]));
        send_to_rank1(&g, 0, 100 + (uint64_t)i, (unsigned)i);
        uint64_t got = g.ctx[1]->peers[0].streams[0].bytes_in;
        g.ops->progress(g.ctx[1]);
        calls++;
        /* Every call's direct read brought this call's frame. */
        ASSERT_TRUE(g.ctx[1]->peers[0].streams[0].bytes_in > got);
        ASSERT_OK(g.ops->test(g.ctx[1], rr[i], &info));
        ASSERT_TRUE(tg_check(in[i], sizeof(in[i]), (unsigned)i));
    }
    printf("peer 2's message noticed after %d calls\n", calls);
    ASSERT_EQ(g.ctx[1]->m.unexp_arrivals, before + 1);
    ASSERT_EQ(calls, WF_TCP_EPOLL_MAX_SKIP);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 2, 50, late_in, sizeof(late_in), NULL,
                           &late));
    ASSERT_OK(g.ops->test(g.ctx[1], late, &info));
    ASSERT_TRUE(tg_check(late_in, sizeof(late_in), 77));
    tg_close(&g);
}
