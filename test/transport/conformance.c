/*
 * conformance.c - the transport conformance suite.
 *
 * Written against wf_transport_ops_t only, and run for every compiled-in
 * transport (wf_transport_names), so a new transport passes the same
 * checks.  Ranks are contexts of this one process with address blobs
 * exchanged in memory (tgroup.h); every wait drives progress() of all
 * contexts and has a deadline, so a bug fails the test instead of hanging
 * it.  All traffic stays on loopback.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "tgroup.h"
#include "weft_cuda.h"

/* ---- registry ---------------------------------------------------------- */

WF_TEST(transport_registry, 10)
{
    const wf_transport_ops_t *ops = NULL;

    ASSERT_STR_CONTAINS(wf_transport_names(), "tcp");
    ASSERT_TRUE(wf_transport_find("tcp") == &wf_tcp_transport);
    ASSERT_TRUE(wf_transport_find("nonesuch") == NULL);
    ASSERT_OK(wf_transport_select("auto", &ops));
    ASSERT_TRUE(ops != NULL);
    ASSERT_OK(wf_transport_select("tcp", &ops));
    ASSERT_TRUE(ops == &wf_tcp_transport);
    weft_set_logger(tg_log_capture, NULL);
    ASSERT_STATUS(wf_transport_select("carrier-pigeon", &ops),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STR_CONTAINS(tg_log_text(), "carrier-pigeon");
    ASSERT_STR_CONTAINS(tg_log_text(), "tcp");
}

/* ---- connection establishment ------------------------------------------ */

static void connect_first(const wf_transport_ops_t *ops, int first)
{
    int second = 1 - first;
    tg_group_t g;
    uint8_t out = 42, in = 0;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;

    tg_open(&g, ops, 2);
    /* `first` posts a send and makes progress alone for a while. */
    tg_connect(&g, first, second);
    ASSERT_OK(ops->isend(g.ctx[first], second, 5, NULL, &out, 1, NULL, &sr));
    tg_spin(&g, 100);
    tg_connect(&g, second, first);
    ASSERT_OK(ops->irecv(g.ctx[second], first, 5, &in, 1, NULL, &rr));
    ASSERT_OK(tg_wait(&g, first, sr, &info));
    ASSERT_OK(tg_wait(&g, second, rr, &info));
    ASSERT_EQ(in, 42);
    /* connect() is idempotent and reports the connection up. */
    ASSERT_OK(
        ops->connect(g.ctx[first], second, g.addr[second], g.alen[second]));
    ASSERT_OK(ops->connect(g.ctx[second], first, g.addr[first], g.alen[first]));
    tg_xfer(&g, second, first, 6, 1000);
    tg_close(&g);
}

static void run_lower_first(const wf_transport_ops_t *ops)
{
    connect_first(ops, 0);
}

static void run_higher_first(const wf_transport_ops_t *ops)
{
    connect_first(ops, 1);
}

WF_TEST(transport_connect_lower_first, 30)
{
    tg_each_transport(run_lower_first);
}

WF_TEST(transport_connect_higher_first, 30)
{
    tg_each_transport(run_higher_first);
}

static void run_four(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    uint8_t sbuf[TG_MAXR][TG_MAXR][64], rbuf[TG_MAXR][TG_MAXR][64];
    wf_treq_t *sr[TG_MAXR][TG_MAXR], *rr[TG_MAXR][TG_MAXR];
    wf_treq_info_t info;

    tg_open(&g, ops, 4);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            if (a == b)
                continue;
            tg_connect_pair(&g, a, b);
            memset(sbuf[a][b], a * 16 + b, 64);
            ASSERT_OK(ops->isend(g.ctx[a], b, 77, NULL, sbuf[a][b],
                                 (size_t)(a + b), NULL, &sr[a][b]));
            ASSERT_OK(
                ops->irecv(g.ctx[b], a, 77, rbuf[a][b], 64, NULL, &rr[a][b]));
        }
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            if (a == b)
                continue;
            ASSERT_OK(tg_wait(&g, a, sr[a][b], &info));
            ASSERT_OK(tg_wait(&g, b, rr[a][b], &info));
            ASSERT_EQ(info.len, a + b);
            ASSERT_TRUE(a + b == 0 || rbuf[a][b][0] == a * 16 + b);
        }
    ASSERT_STR_CONTAINS(ops->peer_describe(g.ctx[0], 3), "peer 3");
    tg_close(&g);
}

WF_TEST(transport_four_ranks, 30)
{
    tg_each_transport(run_four);
}

/* ---- messages ---------------------------------------------------------- */

static void run_sizes(const wf_transport_ops_t *ops)
{
    static const size_t sizes[] = {0, 1, 64 * 1024, 16 * 1024 * 1024};
    tg_group_t g;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        tg_xfer(&g, 0, 1, 100 + i, sizes[i]);
        tg_xfer(&g, 1, 0, 200 + i, sizes[i]);
    }
    tg_close(&g);
}

WF_TEST(transport_sizes, 60)
{
    tg_each_transport(run_sizes);
}

/* Zero-length messages with a NULL buffer, both posted orders. */
static void run_zero(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    uint64_t sig[2] = {11, 12};

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 1, NULL, 0, NULL, &rr));
    ASSERT_OK(ops->isend(g.ctx[0], 1, 1, sig, NULL, 0, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_EQ(info.len, 0);
    ASSERT_EQ(info.sig[1], 12);
    ASSERT_OK(ops->isend(g.ctx[0], 1, 2, sig, NULL, 0, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    tg_spin(&g, 20);
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 2, NULL, 0, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_EQ(info.len, 0);
    ASSERT_EQ(info.sig[0], 11);
    tg_close(&g);
}

WF_TEST(transport_zero_length, 30)
{
    tg_each_transport(run_zero);
}

#define NMSG 200
#define MSG_CAP 5000

/* Same tag: receives match in posting order, whether posted before or
 * after the message arrived. */
static void run_same_tag(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    static uint8_t sbuf[NMSG][MSG_CAP], rbuf[NMSG][MSG_CAP];
    wf_treq_t *sr[NMSG], *rr[NMSG];
    wf_treq_info_t info;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    for (int i = 0; i < NMSG / 2; i++)
        ASSERT_OK(ops->irecv(g.ctx[1], 0, 9, rbuf[i], MSG_CAP, NULL, &rr[i]));
    for (int i = 0; i < NMSG; i++) {
        size_t len = 4 + (size_t)(i * 37) % (MSG_CAP - 4);
        tg_fill(sbuf[i], len, (unsigned)i);
        memcpy(sbuf[i], &i, sizeof(i));
        ASSERT_OK(ops->isend(g.ctx[0], 1, 9, NULL, sbuf[i], len, NULL, &sr[i]));
    }
    for (int i = 0; i < NMSG; i++)
        ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
    tg_spin(&g, 20);
    for (int i = NMSG / 2; i < NMSG; i++)
        ASSERT_OK(ops->irecv(g.ctx[1], 0, 9, rbuf[i], MSG_CAP, NULL, &rr[i]));
    for (int i = 0; i < NMSG; i++) {
        int seq;
        ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
        memcpy(&seq, rbuf[i], sizeof(seq));
        ASSERT_EQ(seq, i);
        ASSERT_EQ(info.len, 4 + (size_t)(i * 37) % (MSG_CAP - 4));
    }
    tg_close(&g);
}

WF_TEST(transport_same_tag_order, 30)
{
    tg_each_transport(run_same_tag);
}

/* Sizes on both sides of any transport's large-message threshold (the
 * verbs transport's WEFT_IB_ZCOPY_MIN, TCP's striping) share one tag:
 * small and large messages must still match in posting order, the first
 * half into receives posted before the sends, the second half late (kept
 * unexpected), some of each truncated.  make test-rdma runs it with
 * several thresholds. */
static void run_mixed_one_tag(const wf_transport_ops_t *ops)
{
    static const size_t sizes[] = {100,       3 << 20, 0,   70000,
                                   1 << 20,   5,       (2 << 20) + 3,
                                   (1 << 20) - 1,      4096, 3 << 20};
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    tg_group_t g;
    uint8_t *sbuf[N], *rbuf[N];
    wf_treq_t *sr[N], *rr[N];
    wf_treq_info_t info;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    for (int i = 0; i < N; i++) {
        /* One byte past every receive buffer shows an overrun. */
        sbuf[i] = malloc(sizes[i] + 1);
        rbuf[i] = malloc(sizes[i] + 2);
        ASSERT_TRUE(sbuf[i] && rbuf[i]);
        memset(rbuf[i], 0xEE, sizes[i] + 2);
        tg_fill(sbuf[i], sizes[i], 40 + (unsigned)i);
    }
    /* Every third receive is 7 bytes short (or 0 bytes). */
#define CAP(i) ((i) % 3 == 1 ? sizes[i] - WF_MIN(sizes[i], 7) : sizes[i] + 1)
    for (int i = 0; i < N / 2; i++)
        ASSERT_OK(ops->irecv(g.ctx[1], 0, 77, rbuf[i], CAP(i), NULL, &rr[i]));
    for (int i = 0; i < N; i++) {
        uint64_t sig[2] = {(uint64_t)i, sizes[i]};
        ASSERT_OK(ops->isend(g.ctx[0], 1, 77, sig, sbuf[i], sizes[i], NULL,
                             &sr[i]));
    }
    tg_spin(&g, 20);
    for (int i = N / 2; i < N; i++)
        ASSERT_OK(ops->irecv(g.ctx[1], 0, 77, rbuf[i], CAP(i), NULL, &rr[i]));
    for (int i = 0; i < N; i++) {
        ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
        ASSERT_EQ(info.sig[0], i);
        ASSERT_EQ(info.len, sizes[i]);
        ASSERT_TRUE(info.truncated == (CAP(i) < sizes[i]));
        ASSERT_TRUE(tg_check(rbuf[i], WF_MIN(sizes[i], CAP(i)),
                             40 + (unsigned)i));
        ASSERT_EQ(rbuf[i][WF_MIN(sizes[i], CAP(i))], 0xEE);
    }
#undef CAP
    for (int i = 0; i < N; i++) {
        ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
        ASSERT_EQ(info.len, sizes[i]);
        free(sbuf[i]);
        free(rbuf[i]);
    }
    tg_close(&g);
}

WF_TEST(transport_mixed_sizes_one_tag, 60)
{
    tg_each_transport(run_mixed_one_tag);
}

/* Different tags match independently: the receive for the later tag is
 * posted first, the earlier message waits as unexpected. */
static void run_tags(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    uint8_t a[1000], b[3000], ra[1000], rb[3000];
    wf_treq_t *sa, *sb, *qa, *qb;
    wf_treq_info_t info;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    tg_fill(a, sizeof(a), 1);
    tg_fill(b, sizeof(b), 2);
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 0xB, rb, sizeof(rb), NULL, &qb));
    ASSERT_OK(ops->isend(g.ctx[0], 1, 0xA, NULL, a, sizeof(a), NULL, &sa));
    ASSERT_OK(ops->isend(g.ctx[0], 1, 0xB, NULL, b, sizeof(b), NULL, &sb));
    ASSERT_OK(tg_wait(&g, 1, qb, &info));
    ASSERT_EQ(info.len, sizeof(b));
    ASSERT_TRUE(tg_check(rb, sizeof(rb), 2));
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 0xA, ra, sizeof(ra), NULL, &qa));
    ASSERT_OK(tg_wait(&g, 1, qa, &info));
    ASSERT_TRUE(tg_check(ra, sizeof(ra), 1));
    ASSERT_OK(tg_wait(&g, 0, sa, &info));
    ASSERT_OK(tg_wait(&g, 0, sb, &info));
    /* Tags use all 64 bits. */
    tg_xfer(&g, 1, 0, UINT64_MAX, 10);
    tg_xfer(&g, 1, 0, 1ull << 63, 10);
    tg_close(&g);
}

WF_TEST(transport_tags_out_of_order, 30)
{
    tg_each_transport(run_tags);
}

/* scan_unexpected's visitor: records what it is shown. */
typedef struct {
    int n;
    int peer[8];
    uint64_t tag[8], sig0[8];
} seen_t;

static bool record_unexpected(void *arg, int peer, uint64_t tag,
                              const uint64_t sig[2])
{
    seen_t *s = arg;
    if (s->n < 8) {
        s->peer[s->n] = peer;
        s->tag[s->n] = tag;
        s->sig0[s->n] = sig[0];
    }
    s->n++;
    return false;
}

/* Spins until `ctx` has seen `n` unexpected messages arrive. */
static void wait_unexpected(tg_group_t *g, int r, uint64_t n)
{
    uint64_t deadline = tg_now_ms() + 10000;
    while (g->ops->scan_unexpected(g->ctx[r], NULL, NULL) < n) {
        ASSERT_TRUE(tg_now_ms() < deadline);
        tg_progress(g);
    }
}

/* Sends complete before their receives are posted; scan_unexpected shows
 * them, in order, until receives claim them. */
static void run_unexpected(const wf_transport_ops_t *ops)
{
    static const size_t sizes[] = {0, 100, 4 << 20, 16 << 20};
    enum { N = 4 };
    tg_group_t g;
    uint8_t *sbuf[N], *rbuf[N];
    wf_treq_t *sr[N], *rr[N];
    wf_treq_info_t info;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    for (int i = 0; i < N; i++) {
        sbuf[i] = malloc(sizes[i] + 1);
        rbuf[i] = malloc(sizes[i] + 1);
        tg_fill(sbuf[i], sizes[i], (unsigned)i);
        uint64_t sig[2] = {(uint64_t)i, 0xfeed};
        ASSERT_OK(ops->isend(g.ctx[0], 1, 30 + (uint64_t)i, sig, sbuf[i],
                             sizes[i], NULL, &sr[i]));
    }
    /* The first three complete without a receive; the last may still be in
     * flight when its receive is posted (a receive matching a message that
     * is half read). */
    for (int i = 0; i < N - 1; i++)
        ASSERT_OK(tg_wait(&g, 0, sr[i], &info));
    ASSERT_TRUE(ops->scan_unexpected != NULL);
    wait_unexpected(&g, 1, N);
    seen_t seen = {0};
    ASSERT_EQ(ops->scan_unexpected(g.ctx[1], record_unexpected, &seen), N);
    ASSERT_EQ(seen.n, N);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(seen.peer[i], 0);
        ASSERT_EQ(seen.tag[i], 30 + i);
        ASSERT_EQ(seen.sig0[i], i);
    }
    for (int i = N - 1; i >= 0; i--)
        ASSERT_OK(ops->irecv(g.ctx[1], 0, 30 + (uint64_t)i, rbuf[i], sizes[i],
                             NULL, &rr[i]));
    seen.n = 0; /* every message is claimed now */
    ASSERT_EQ(ops->scan_unexpected(g.ctx[1], record_unexpected, &seen), N);
    ASSERT_EQ(seen.n, 0);
    ASSERT_OK(tg_wait(&g, 0, sr[N - 1], &info));
    for (int i = 0; i < N; i++) {
        ASSERT_OK(tg_wait(&g, 1, rr[i], &info));
        ASSERT_EQ(info.len, sizes[i]);
        ASSERT_EQ(info.sig[0], i);
        ASSERT_TRUE(info.sig[1] == 0xfeed && !info.truncated);
        ASSERT_TRUE(tg_check(rbuf[i], sizes[i], (unsigned)i));
        free(sbuf[i]);
        free(rbuf[i]);
    }
    tg_close(&g);
}

WF_TEST(transport_unexpected, 60)
{
    tg_each_transport(run_unexpected);
}

/* Receives into a buffer that is too small: posted before the message,
 * posted after it, and large enough that the surplus spans many reads.
 * The next message on the same connection must arrive intact. */
static void truncate_one(tg_group_t *g, size_t len, size_t cap, bool late)
{
    const wf_transport_ops_t *ops = g->ops;
    uint8_t *sbuf = malloc(len), *rbuf = malloc(cap + 1);
    wf_treq_t *sr, *rr = NULL;
    wf_treq_info_t info;
    uint64_t sig[2] = {len, cap};

    tg_fill(sbuf, len, 5);
    memset(rbuf, 0xEE, cap + 1);
    if (!late)
        ASSERT_OK(ops->irecv(g->ctx[1], 0, 50, rbuf, cap, NULL, &rr));
    ASSERT_OK(ops->isend(g->ctx[0], 1, 50, sig, sbuf, len, NULL, &sr));
    ASSERT_OK(tg_wait(g, 0, sr, &info));
    if (late) {
        tg_spin(g, 20);
        ASSERT_OK(ops->irecv(g->ctx[1], 0, 50, rbuf, cap, NULL, &rr));
    }
    ASSERT_OK(tg_wait(g, 1, rr, &info));
    ASSERT_TRUE(info.truncated);
    ASSERT_EQ(info.len, len);
    ASSERT_EQ(info.sig[0], len);
    ASSERT_TRUE(tg_check(rbuf, cap, 5));
    ASSERT_EQ(rbuf[cap], 0xEE);
    tg_xfer(g, 0, 1, 51, 777);
    free(sbuf);
    free(rbuf);
}

static void run_truncation(const wf_transport_ops_t *ops)
{
    tg_group_t g;

    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    truncate_one(&g, 100, 10, false);
    truncate_one(&g, 100, 10, true);
    truncate_one(&g, 3 << 20, 1000, false);
    truncate_one(&g, 3 << 20, 0, true);
    tg_close(&g);
}

WF_TEST(transport_truncation, 30)
{
    tg_each_transport(run_truncation);
}

/* ---- failures ---------------------------------------------------------- */

/* A peer that goes away fails pending receives with WEFT_ERR_REMOTE; what
 * arrived before is still delivered; later posts fail. */
static void run_peer_fini(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    uint8_t buf[4096];
    wf_treq_t *sr, *rr, *early;
    wf_treq_info_t info;
    weft_status_t st;
    uint64_t start;

    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test */
    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 10);
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 2, buf, sizeof(buf), NULL, &rr));
    ASSERT_OK(ops->isend(g.ctx[0], 1, 3, NULL, "early", 5, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    tg_spin(&g, 100);
    tg_fini(&g, 0);
    start = tg_now_ms();
    ASSERT_STATUS(tg_wait(&g, 1, rr, &info), WEFT_ERR_REMOTE);
    ASSERT_TRUE(tg_now_ms() - start < 5000);
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 3, buf, sizeof(buf), NULL, &early));
    ASSERT_OK(tg_wait(&g, 1, early, &info));
    ASSERT_EQ(info.len, 5);
    /* Later posts fail, at once or through test(). */
    for (int i = 0; i < 3; i++) {
        st = ops->isend(g.ctx[1], 0, 4, NULL, buf, sizeof(buf), NULL, &sr);
        if (st == WEFT_OK)
            st = tg_wait(&g, 1, sr, &info);
        ASSERT_STATUS(st, WEFT_ERR_REMOTE);
        st = ops->irecv(g.ctx[1], 0, 4, buf, sizeof(buf), NULL, &rr);
        if (st == WEFT_OK)
            st = tg_wait(&g, 1, rr, &info);
        ASSERT_STATUS(st, WEFT_ERR_REMOTE);
    }
    ASSERT_STR_CONTAINS(ops->peer_describe(g.ctx[1], 0), "peer 0");
    tg_close(&g);
}

WF_TEST(transport_peer_fini, 30)
{
    tg_each_transport(run_peer_fini);
}

/* A peer whose sends are queued when the receiver vanishes: the sender
 * fails instead of spinning or dying of SIGPIPE. */
static void run_send_to_gone(const wf_transport_ops_t *ops)
{
    /* More than the socket buffers hold, on every stream. */
    const size_t LEN = (size_t)(8 << 20) * (size_t)tg_tcp_streams;
    tg_group_t g;
    uint8_t *buf = calloc(1, LEN);
    wf_treq_t *sr;
    wf_treq_info_t info;

    signal(SIGPIPE, SIG_DFL);
    tg_open(&g, ops, 2);
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 1, 0, 1, 10);
    ASSERT_OK(ops->isend(g.ctx[1], 0, 2, NULL, buf, LEN, NULL, &sr));
    tg_fini(&g, 0);
    ASSERT_STATUS(tg_wait(&g, 1, sr, &info), WEFT_ERR_REMOTE);
    tg_close(&g);
    free(buf);
}

WF_TEST(transport_send_to_gone_peer, 30)
{
    tg_each_transport(run_send_to_gone);
}

/* Dialing a closed port fails within the connection timeout, naming the
 * peer. */
static void run_unreachable(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    wf_treq_t *sr;
    wf_treq_info_t info;
    weft_status_t st;
    char port[16];
    uint64_t start;
    const char *desc;

    tg_open_ex(&g, ops, 2, "lo", 300);
    tg_fini(&g, 1); /* its address now points at a closed port */
    tg_log_clear();
    start = tg_now_ms();
    st = ops->connect(g.ctx[0], 1, g.addr[1], g.alen[1]);
    if (st == WEFT_OK || st == WEFT_INPROGRESS) {
        ASSERT_OK(ops->isend(g.ctx[0], 1, 1, NULL, "x", 1, NULL, &sr));
        st = tg_wait(&g, 0, sr, &info);
    }
    ASSERT_TRUE(st < 0);
    ASSERT_TRUE(tg_now_ms() - start < 5000);
    desc = ops->peer_describe(g.ctx[0], 1);
    printf("failed with %s, peer %s\n", weft_status_name(st), desc);
    ASSERT_STR_CONTAINS(desc, "peer 1");
    ASSERT_STR_CONTAINS(tg_log_text(), desc);
    /* The port of the vanished context appears in the description. */
    if (ops == &wf_tcp_transport) {
        uint16_t p;
        /* Blob v3: a 4-byte header, then entries {family, 0, port, ip}. */
        memcpy(&p, g.addr[1] + 4 + 2, 2);
        snprintf(port, sizeof(port), ":%d", (int)ntohs(p));
        ASSERT_STR_CONTAINS(desc, port);
    }
    tg_close(&g);
}

WF_TEST(transport_unreachable_peer, 30)
{
    tg_each_transport(run_unreachable);
}

/* ---- addresses, query, polling ----------------------------------------- */

static bool ipv6_loopback_works(void)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

    if (fd >= 0)
        close(fd);
    return ok;
}

static void run_ipv6(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    wf_tdev_attr_t attr;

    if (ops == &wf_shm_transport) {
        printf("shm has no network address; skipping the IPv6 checks\n");
        return;
    }
    tg_open_ex(&g, ops, 2, "::1", 10000);
    ASSERT_OK(ops->query(g.ctx[0], &attr));
    ASSERT_STR_CONTAINS(attr.address, "::1");
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 1 << 20);
    tg_xfer(&g, 1, 0, 2, 3);
    tg_close(&g);
}

WF_TEST(transport_ipv6_loopback, 30)
{
    if (!ipv6_loopback_works())
        WF_SKIP("this host cannot bind the IPv6 loopback ::1");
    tg_each_transport(run_ipv6);
}

static void run_query(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    wf_tdev_attr_t attr;
    uint8_t small[2];
    size_t len = sizeof(small);
    void *mh = (void *)1;

    tg_open(&g, ops, 2);
    ASSERT_OK(ops->query(g.ctx[0], &attr));
    ASSERT_TRUE(attr.caps & WF_TCAP_HOST_MEM);
    ASSERT_TRUE(attr.name[0] != '\0');
    /* Where the context listens: an IP and port, or shm's process and
     * abstract socket. */
    ASSERT_STR_CONTAINS(attr.address,
                        ops == &wf_shm_transport ? "pid " : "127.0.0.1:");
    ASSERT_STATUS(ops->get_address(g.ctx[0], small, &len),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_EQ(len, sizeof(small));
    ASSERT_TRUE(ops->peer_describe(g.ctx[0], 1) != NULL);
    ASSERT_TRUE(ops->peer_describe(g.ctx[0], 99) != NULL);
    ASSERT_STATUS(ops->connect(g.ctx[0], 0, g.addr[0], g.alen[0]),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_OK(ops->mem_reg(g.ctx[0], small, sizeof(small), WF_MEM_HOST, &mh));
    ops->mem_dereg(g.ctx[0], mh);
    /* Without direct device access a transport says so, and the engine
     * stages device buffers through host memory. */
    if (!(attr.caps & WF_TCAP_DEVICE_MEM))
        ASSERT_STATUS(ops->mem_reg(g.ctx[0], small, sizeof(small),
                                   WF_MEM_DEVICE, &mh),
                      WEFT_ERR_UNSUPPORTED);
    ops->fini(NULL);
    tg_close(&g);
}

WF_TEST(transport_query, 10)
{
    tg_each_transport(run_query);
}

/* get_fd() becomes readable when there is work and is quiet otherwise (no
 * permanent EPOLLOUT interest). */
static void run_get_fd(const wf_transport_ops_t *ops)
{
    tg_group_t g;
    int fd0, fd1;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    uint8_t b = 0;

    tg_open(&g, ops, 2);
    fd0 = ops->get_fd(g.ctx[0]);
    fd1 = ops->get_fd(g.ctx[1]);
    if (fd0 < 0 || fd1 < 0) {
        printf("%s has no fd; skipping the fd checks\n", ops->name);
        tg_close(&g);
        return;
    }
    tg_connect_pair(&g, 0, 1);
    tg_xfer(&g, 0, 1, 1, 100);
    tg_spin(&g, 20);
    ASSERT_TRUE(!tg_fd_readable(fd0, 0));
    ASSERT_TRUE(!tg_fd_readable(fd1, 0));
    ASSERT_OK(ops->irecv(g.ctx[1], 0, 2, &b, 1, NULL, &rr));
    /* The engine's order: wait_prepare, where there is one, finds
     * nothing to do, and the message arriving after it wakes the fd. */
    if (ops->wait_prepare)
        ASSERT_TRUE(!ops->wait_prepare(g.ctx[1]));
    ASSERT_OK(ops->isend(g.ctx[0], 1, 2, NULL, "z", 1, NULL, &sr));
    ASSERT_TRUE(tg_fd_readable(fd1, 5000));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_EQ(b, 'z');
    tg_spin(&g, 20);
    ASSERT_TRUE(!tg_fd_readable(fd0, 0));
    /* The woken side is quiet again too: a wake-up left readable would
     * keep an idle engine's poll() returning at once, a core spent. */
    if (ops->wait_prepare)
        ASSERT_TRUE(!ops->wait_prepare(g.ctx[1]));
    ASSERT_TRUE(!tg_fd_readable(fd1, 0));
    tg_close(&g);
}

WF_TEST(transport_get_fd, 20)
{
    tg_each_transport(run_get_fd);
}
