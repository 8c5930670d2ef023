/*
 * tcp_cma.c - tests of the TCP transport's single-copy path between ranks
 * on one machine (transport/tcp/tcp_cma.c): the probe, that large
 * messages really take it (its byte counter), that either side can turn
 * it off, and two real processes.  The wire-level fault (an RTS pointing
 * at memory the sender does not have) is in tcp_wire.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcp/tcp.h"
#include "cma.h"
#include "tgroup.h"

WF_TEST(transport_tcp_cma_probe, 10)
{
    static volatile uint64_t cookie = 0x1234567890abcdefull;
    uint64_t addr = (uint64_t)(uintptr_t)&cookie;

    ASSERT_EQ(wf_cma_probe(getpid(), addr, cookie), 0);
    /* Another value at that address: not the process that offered it. */
    ASSERT_EQ(wf_cma_probe(getpid(), addr, cookie + 1), EPERM);
    ASSERT_EQ(wf_cma_probe(getpid(), 8, cookie), EFAULT);
    pid_t child = fork();
    ASSERT_TRUE(child >= 0);
    if (child == 0)
        _exit(0);
    ASSERT_EQ(waitpid(child, NULL, 0), child);
    ASSERT_EQ(wf_cma_probe(child, addr, cookie), ESRCH);
}

static void set_cma_min(wf_tconfig_t *cfg, int rank, void *mins)
{
    tg_knobs(cfg)->tcp_cma_min = ((const size_t *)mins)[rank];
}

/* Only Yama's scope 1 is lifted for the peers; 0 needs nothing, 2 and 3
 * cannot be lifted by the process. */
WF_TEST(transport_tcp_cma_yama_scope, 10)
{
    ASSERT_TRUE(wf_cma_yama_restricts("1\n"));
    ASSERT_TRUE(wf_cma_yama_restricts("1"));
    ASSERT_TRUE(!wf_cma_yama_restricts("0\n"));
    ASSERT_TRUE(!wf_cma_yama_restricts("2\n"));
    ASSERT_TRUE(!wf_cma_yama_restricts("3\n"));
    ASSERT_TRUE(!wf_cma_yama_restricts("12\n"));
    ASSERT_TRUE(!wf_cma_yama_restricts(""));
    ASSERT_TRUE(!wf_cma_yama_restricts(NULL));
}

/* Opens two TCP contexts with the given thresholds and connects them. */
static void open_pair(tg_group_t *g, size_t min0, size_t min1)
{
    size_t mins[2] = {min0, min1};

    tg_open_tcp_with(g, 2, 10000, set_cma_min, mins);
    tg_connect_pair(g, 0, 1);
}

static uint64_t cma_read_from(tg_group_t *g, int r, bool *readable, bool *ok)
{
    uint64_t n;
    ASSERT_OK(wf_tcp_cma_stats(g->ctx[r], 1 - r, &n, NULL, readable, ok));
    return n;
}

/* How many of the peer's single-copy messages rank r read into an
 * unexpected buffer before a receive claimed them. */
static uint64_t buffered_from(tg_group_t *g, int r)
{
    uint64_t n, buffered;
    bool readable, ok;
    ASSERT_OK(wf_tcp_cma_stats(g->ctx[r], 1 - r, &n, &buffered, &readable,
                               &ok));
    return buffered;
}

/* Connects the pair with a small message each way: the handshake has
 * settled single copy by then. */
static void wait_offered(tg_group_t *g)
{
    bool readable, ok;

    tg_xfer(g, 0, 1, 1, 8);
    tg_xfer(g, 1, 0, 1, 8);
    for (int r = 0; r < 2; r++) {
        cma_read_from(g, r, &readable, &ok);
        ASSERT_TRUE(readable && ok);
    }
}

struct seen {
    uint64_t tag;
    bool found;
};

static bool note_tag(void *arg, int peer, uint64_t tag, const uint64_t sig[2])
{
    struct seen *s = arg;
    (void)peer;
    (void)sig;
    s->found = s->found || tag == s->tag;
    return false;
}

/* Whether rank r holds an unexpected message with `tag`. */
static bool seen_tag(tg_group_t *g, int r, uint64_t tag, struct seen *s)
{
    s->tag = tag;
    s->found = false;
    g->ops->scan_unexpected(g->ctx[r], note_tag, s);
    return s->found;
}

/* Every message of at least the threshold is read from the sender's
 * memory, posted before or after it arrives, truncated or whole; smaller
 * ones go through the socket. */
WF_TEST(transport_tcp_cma_used, 30)
{
    tg_group_t g;
    bool readable, ok;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    size_t big = 3u << 20;
    uint8_t *sbuf = malloc(big), *rbuf = malloc(big);

    ASSERT_TRUE(sbuf && rbuf);
    open_pair(&g, 4096, 4096);
    wait_offered(&g);
    ASSERT_EQ(cma_read_from(&g, 1, &readable, &ok), 0);
    ASSERT_TRUE(readable && ok);
    tg_xfer(&g, 0, 1, 2, big);
    ASSERT_EQ(cma_read_from(&g, 1, &readable, &ok), big);
    tg_xfer(&g, 1, 0, 3, 4096);
    ASSERT_EQ(cma_read_from(&g, 0, &readable, &ok), 4096);
    tg_xfer(&g, 1, 0, 4, 4095); /* below the threshold: the socket */
    ASSERT_EQ(cma_read_from(&g, 0, &readable, &ok), 4096);

    /* Unexpected: the send completes before any receive is posted. */
    tg_fill(sbuf, big, 7);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 5, NULL, sbuf, big, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    memset(sbuf, 0, big); /* the receiver has its own copy by now */
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 5, rbuf, big, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_TRUE(info.len == big && !info.truncated);
    ASSERT_TRUE(tg_check(rbuf, big, 7));
    ASSERT_EQ(cma_read_from(&g, 1, &readable, &ok), 2 * big);
    ASSERT_EQ(buffered_from(&g, 1), 1);
    /* Its buffer went back to the pool (it was malloc'ed and freed per
     * message before), and the next unexpected message reads into it. */
    ASSERT_EQ(g.ctx[1]->m.nspare, 1);
    tg_fill(sbuf, big, 9);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 55, NULL, sbuf, big, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_EQ(g.ctx[1]->m.nspare, 0);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 55, rbuf, big, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_TRUE(info.len == big && tg_check(rbuf, big, 9));
    ASSERT_EQ(buffered_from(&g, 1), 2);
    ASSERT_EQ(g.ctx[1]->m.nspare, 1);

    /* Truncated: only what fits is read, the length is the message's. */
    tg_fill(sbuf, big, 8);
    memset(rbuf, 0xEE, big);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 6, rbuf, 5000, NULL, &rr));
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 6, NULL, sbuf, big, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_TRUE(info.len == big && info.truncated);
    ASSERT_TRUE(tg_check(rbuf, 5000, 8));
    ASSERT_EQ(rbuf[5000], 0xEE);
    ASSERT_EQ(cma_read_from(&g, 1, &readable, &ok), 3 * big + 5000);
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* A receive posted right after the progress() call that matched the RTS
 * (what the engine does when that call's completions enable it) reads
 * the message straight into its buffer: one copy, no unexpected buffer.
 * Reading every unclaimed RTS at once cost a second copy and a fresh
 * buffer per message and made a 2 MiB allreduce on 2 ranks 2x slower. */
WF_TEST(transport_tcp_cma_late_receive_reads_once, 30)
{
    tg_group_t g;
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;
    size_t big = 1u << 20;
    uint8_t *sbuf = malloc(big), *rbuf = malloc(big);
    struct seen seen = {0};

    ASSERT_TRUE(sbuf && rbuf);
    open_pair(&g, 4096, 4096);
    wait_offered(&g);
    for (int i = 0; i < 3; i++) {
        tg_fill(sbuf, big, 20 + i);
        ASSERT_OK(g.ops->isend(g.ctx[0], 1, 9, NULL, sbuf, big, NULL, &sr));
        /* Progress the receiver until its call matches the RTS. */
        for (int spins = 0; !seen_tag(&g, 1, 9, &seen); spins++) {
            ASSERT_TRUE(spins < 1000000);
            g.ops->progress(g.ctx[0]);
            g.ops->progress(g.ctx[1]);
        }
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 9, rbuf, big, NULL, &rr));
        ASSERT_OK(tg_wait(&g, 1, rr, &info));
        ASSERT_OK(tg_wait(&g, 0, sr, &info));
        ASSERT_TRUE(tg_check(rbuf, big, 20 + i));
    }
    ASSERT_EQ(buffered_from(&g, 1), 0);
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* A receive posted many progress() calls after its RTS arrived still
 * reads once, as long as the receiver was busy in between (here: posting
 * other receives, as the engine does while its scratch slots are taken).
 * Reading the RTS into a buffer on the next call instead read about a
 * third of a 3-rank ring allreduce's chunks twice. */
WF_TEST(transport_tcp_cma_busy_receiver_reads_once, 30)
{
    tg_group_t g;
    wf_treq_t *sr, *rr, *other[40];
    wf_treq_info_t info;
    size_t big = 1u << 20;
    uint8_t *sbuf = malloc(big), *rbuf = malloc(big), dummy[40];
    struct seen seen = {0};

    ASSERT_TRUE(sbuf && rbuf);
    open_pair(&g, 4096, 4096);
    wait_offered(&g);
    tg_fill(sbuf, big, 31);
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 9, NULL, sbuf, big, NULL, &sr));
    for (int spins = 0; !seen_tag(&g, 1, 9, &seen); spins++) {
        ASSERT_TRUE(spins < 1000000);
        g.ops->progress(g.ctx[0]);
        g.ops->progress(g.ctx[1]);
    }
    for (int i = 0; i < 40; i++) {
        ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 100 + (uint64_t)i, &dummy[i], 1,
                               NULL, &other[i]));
        g.ops->progress(g.ctx[1]);
        g.ops->progress(g.ctx[0]);
    }
    ASSERT_EQ(buffered_from(&g, 1), 0);
    ASSERT_OK(g.ops->irecv(g.ctx[1], 0, 9, rbuf, big, NULL, &rr));
    ASSERT_OK(tg_wait(&g, 1, rr, &info));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_TRUE(tg_check(rbuf, big, 31));
    ASSERT_EQ(buffered_from(&g, 1), 0);
    /* Idle, it does read an unclaimed message: the send completes. */
    ASSERT_OK(g.ops->isend(g.ctx[0], 1, 10, NULL, sbuf, big, NULL, &sr));
    ASSERT_OK(tg_wait(&g, 0, sr, &info));
    ASSERT_EQ(buffered_from(&g, 1), 1);
    for (int i = 0; i < 40; i++) {
        ASSERT_OK(g.ops->isend(g.ctx[0], 1, 100 + (uint64_t)i, NULL,
                               &dummy[i], 1, NULL, &sr));
        ASSERT_OK(tg_wait(&g, 0, sr, &info));
        ASSERT_OK(tg_wait(&g, 1, other[i], &info));
    }
    tg_close(&g);
    free(sbuf);
    free(rbuf);
}

/* A side with WEFT_TCP_CMA_MIN=0 neither offers its memory nor reads the
 * peer's: everything goes through the socket, in both directions. */
WF_TEST(transport_tcp_cma_off_on_one_side, 30)
{
    tg_group_t g;
    bool readable, ok;

    open_pair(&g, 1, 0);
    for (int i = 0; i < 20; i++) {
        tg_xfer(&g, 0, 1, 1, 100000);
        tg_xfer(&g, 1, 0, 2, 100000);
    }
    for (int r = 0; r < 2; r++) {
        ASSERT_EQ(cma_read_from(&g, r, &readable, &ok), 0);
        ASSERT_TRUE(!readable && !ok);
    }
    tg_close(&g);
}

/* query() tells the core the threshold, which chooses the cost model's
 * constants (docs/algorithms.md): each context its own, 0 when off. */
WF_TEST(transport_tcp_cma_query_reports_threshold, 10)
{
    tg_group_t g;
    wf_tdev_attr_t attr;

    open_pair(&g, 64 << 10, 0);
    ASSERT_OK(g.ops->query(g.ctx[0], &attr));
    ASSERT_EQ(attr.single_copy_min, 64 << 10);
    ASSERT_OK(g.ops->query(g.ctx[1], &attr));
    ASSERT_EQ(attr.single_copy_min, 0);
    tg_close(&g);
}

/* Two processes, as in a real job: the child receives 8 MiB from the
 * parent and says through its exit status whether it arrived intact and
 * by single copy. */
static int child_receive(int addr_out, int addr_in, size_t len)
{
    wf_tconfig_t cfg;
    wf_tctx_t *ctx;
    uint8_t addr[WF_TADDR_MAX];
    size_t alen = sizeof(addr);
    wf_treq_t *rr;
    wf_treq_info_t info;
    uint8_t *buf = malloc(len);
    weft_status_t st;
    uint64_t n;
    bool readable, ok;

    tg_make_cfg(&cfg, 1, 2, "lo", 10000);
    tg_knobs(&cfg)->tcp_cma_min = 64 << 10;
    if (!buf || wf_tcp_transport.init(&cfg, &ctx) != WEFT_OK ||
        wf_tcp_transport.get_address(ctx, addr, &alen) != WEFT_OK ||
        write(addr_out, &alen, sizeof(alen)) != sizeof(alen) ||
        write(addr_out, addr, alen) != (ssize_t)alen ||
        read(addr_in, &alen, sizeof(alen)) != sizeof(alen) ||
        read(addr_in, addr, alen) != (ssize_t)alen)
        return 10;
    wf_tcp_transport.connect(ctx, 0, addr, alen);
    /* Two messages: a small one, then the single copy. */
    for (int tag = 1; tag <= 2; tag++) {
        if (wf_tcp_transport.irecv(ctx, 0, (uint64_t)tag, buf, len, NULL,
                                   &rr) != WEFT_OK)
            return 11;
        while ((st = wf_tcp_transport.test(ctx, rr, &info)) ==
               WEFT_INPROGRESS)
            wf_tcp_transport.progress(ctx);
        if (st != WEFT_OK)
            return 12;
    }
    if (info.len != len || !tg_check(buf, len, 9))
        return 13;
    wf_tcp_cma_stats(ctx, 0, &n, NULL, &readable, &ok);
    wf_tcp_transport.fini(ctx);
    return n == len ? 0 : 14;
}

WF_TEST(transport_tcp_cma_two_processes, 30)
{
    int to_parent[2], to_child[2];
    size_t len = 8u << 20, alen;
    uint8_t addr[WF_TADDR_MAX], *buf = malloc(len);
    wf_tconfig_t cfg;
    wf_tctx_t *ctx;
    wf_treq_t *sr;
    wf_treq_info_t info;
    weft_status_t st;
    int status;

    ASSERT_TRUE(buf && pipe(to_parent) == 0 && pipe(to_child) == 0);
    pid_t child = fork();
    ASSERT_TRUE(child >= 0);
    if (child == 0)
        _exit(child_receive(to_parent[1], to_child[0], len));
    tg_make_cfg(&cfg, 0, 2, "lo", 10000);
    tg_knobs(&cfg)->tcp_cma_min = 64 << 10;
    ASSERT_OK(wf_tcp_transport.init(&cfg, &ctx));
    ASSERT_EQ(read(to_parent[0], &alen, sizeof(alen)), sizeof(alen));
    ASSERT_EQ(read(to_parent[0], addr, alen), alen);
    st = wf_tcp_transport.connect(ctx, 1, addr, alen);
    ASSERT_TRUE(st == WEFT_OK || st == WEFT_INPROGRESS);
    alen = sizeof(addr);
    ASSERT_OK(wf_tcp_transport.get_address(ctx, addr, &alen));
    ASSERT_EQ(write(to_child[1], &alen, sizeof(alen)), sizeof(alen));
    ASSERT_EQ(write(to_child[1], addr, alen), alen);
    tg_fill(buf, len, 9);
    for (int tag = 1; tag <= 2; tag++) {
        ASSERT_OK(wf_tcp_transport.isend(ctx, 1, (uint64_t)tag, NULL, buf,
                                         tag == 1 ? 8 : len, NULL, &sr));
        while ((st = wf_tcp_transport.test(ctx, sr, &info)) ==
               WEFT_INPROGRESS)
            wf_tcp_transport.progress(ctx);
        ASSERT_OK(st);
    }
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    wf_tcp_transport.fini(ctx);
    free(buf);
}
