/*
 * ib_rndv.c - the verbs transport's zero-copy rendezvous state machine
 * (transport/ib/ib_rndv.c) over the fake provider of ib_fake.c.
 *
 *  - transport_ib_rndv_claimed_before_reads: an RTS that arrived unexpected
 *    and is claimed by a receive before its READs begin is read straight into
 *    the receive's buffer (no unexpected copy); one claimed after it was read
 *    completes from the unexpected buffer; data, lengths and order right.
 *  - transport_ib_rndv_read_fails: a READ that fails (the sender's QP or MR
 *    gone) fails the receive with WEFT_ERR_REMOTE and a message naming the
 *    peer and the verbs status; the sender, failed by its liveness channel as
 *    the bootstrap would, fails its send waiting for the FIN; every
 *    registration is released.
 *  - transport_ib_rndv_fail_while_awaiting: a peer failure fails every send
 *    that waits for a FIN, those whose RTS completed and those whose RTS is
 *    still in flight alike (failing the latter cut the list of the former: a
 *    send that never finished).
 *  - transport_ib_rndv_windows: a message larger than WF_IB_PULL_WINDOW is
 *    pulled one registered window of the destination at a time (a memlock
 *    limit below the message size still lets it through), truncated or not.
 *  - transport_ib_rndv_many_small_windows: more rendezvous messages than read
 *    slots and staging slots at once, with one QP, so FINs and RTSs wait for
 *    slots and credits and reads for read slots (back-pressure), in both
 *    directions at once, receives posted before and after.
 */
#include "ib_fake.h"
#include "common.h"

#if defined(WF_HAVE_IB)

static void spin(fk_pair_t *w, int rounds)
{
    for (int i = 0; i < rounds; i++)
        for (int s = 0; s < 2; s++)
            ASSERT_TRUE(wf_ib_progress(&w->ctx[s]) >= 0);
}

/* Drives both sides until `req` of side `s` is final; returns its
 * status. */
static weft_status_t wait_req(fk_pair_t *w, int s, wf_treq_t *req,
                              wf_treq_info_t *info)
{
    for (int i = 0; i < 200000; i++) {
        weft_status_t st = wf_match_test(&w->ctx[s], req, info);
        if (st != WEFT_INPROGRESS)
            return st;
        spin(w, 1);
    }
    wf_test_fail(__FILE__, __LINE__, "request of side %d never finished", s);
    return WEFT_ERR_TIMEOUT;
}

static void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(i * 7 + seed + (i >> 12));
}

static bool same(const char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (char)(i * 7 + seed + (i >> 12)))
            return false;
    return true;
}

static const char *watch_lo, *watch_hi;
static unsigned long reads_into_watch;

static void on_read(const char *local, uint32_t len)
{
    if (local >= watch_lo && local + len <= watch_hi)
        reads_into_watch++;
}

WF_TEST(transport_ib_rndv_claimed_before_reads, 20)
{
    enum { BIG = 4 << 20, SMALL = 1 << 20 };
    int one[2] = {1, 1};
    fk_pair_t w;
    char *a = malloc(BIG), *b = malloc(SMALL), *ra = malloc(BIG),
         *rb = malloc(SMALL);
    wf_treq_t *sa, *sb, *qa, *qb;
    wf_treq_info_t info;

    fill(a, BIG, 1);
    fill(b, SMALL, 2);
    fk_zcopy_min = 64 * 1024;
    fk_rng = 7;
    fk_lazy = FK_LAZY_NONE;
    ASSERT_OK(fk_pair_open(&w, one));
    fk_on_read = on_read;
    watch_lo = rb;
    watch_hi = rb + SMALL;
    /* Both RTSs arrive while READs are held: A (4 MiB) takes every read
     * slot of the one QP, so B's reads cannot begin. */
    fk_hold_reads = true;
    ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 10, NULL, a, BIG, NULL, &sa));
    ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 11, NULL, b, SMALL, NULL, &sb));
    for (int i = 0; i < 10000 && w.ctx[1].m.unexp_arrivals < 2; i++)
        spin(&w, 1);
    ASSERT_EQ(w.ctx[1].m.unexp_arrivals, 2);
    ASSERT_EQ(w.peers[1][0].qp[0].reads_out, WF_IB_READS_PER_QP);
    ASSERT_OK(wf_ib_irecv(&w.ctx[1], 0, 11, rb, SMALL, NULL, &qb));
    fk_hold_reads = false;
    ASSERT_OK(wait_req(&w, 1, qb, &info));
    ASSERT_EQ(info.len, SMALL);
    ASSERT_TRUE(same(rb, SMALL, 2));
    ASSERT_TRUE(reads_into_watch > 0); /* read into rb itself */
    /* A was read into its unexpected buffer; the receive copies it. */
    ASSERT_OK(wait_req(&w, 0, sa, &info));
    ASSERT_OK(wait_req(&w, 0, sb, &info));
    ASSERT_OK(wf_ib_irecv(&w.ctx[1], 0, 10, ra, BIG, NULL, &qa));
    ASSERT_OK(wait_req(&w, 1, qa, &info));
    ASSERT_EQ(info.len, BIG);
    ASSERT_TRUE(same(ra, BIG, 1));
    ASSERT_EQ(fk_regs(&w, 0), 0);
    ASSERT_EQ(fk_regs(&w, 1), 0);
    fk_pair_close(&w);
    fk_zcopy_min = 0;
    free(a), free(b), free(ra), free(rb);
}

WF_TEST(transport_ib_rndv_read_fails, 20)
{
    enum { LEN = 3 << 20 };
    int two[2] = {2, 2};
    fk_pair_t w;
    char *s = malloc(LEN), *r = malloc(LEN);
    wf_treq_t *sr, *rr, *later;
    wf_treq_info_t info;

    wf_test_log_capture();
    fill(s, LEN, 3);
    fk_zcopy_min = 64 * 1024;
    fk_rng = 3;
    fk_lazy = FK_LAZY_NONE;
    ASSERT_OK(fk_pair_open(&w, two));
    ASSERT_OK(wf_ib_irecv(&w.ctx[1], 0, 5, r, LEN, NULL, &rr));
    ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 5, NULL, s, LEN, NULL, &sr));
    ASSERT_EQ(fk_regs(&w, 0), 1);
    fk_fail_read = IBV_WC_REM_ACCESS_ERR;
    ASSERT_STATUS(wait_req(&w, 1, rr, &info), WEFT_ERR_REMOTE);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "ib: peer 0: rendezvous RDMA "
                                            "READ on QP");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "remote access error");
    ASSERT_EQ(fk_regs(&w, 1), 0); /* the receive buffer's registration */
    /* Later posts to the failed peer fail at once. */
    ASSERT_STATUS(wf_ib_irecv(&w.ctx[1], 0, 6, r, 10, NULL, &later),
                  WEFT_ERR_REMOTE);
    /* The sender learns through its bootstrap connection (ib_conn.c);
     * here directly.  Its send, waiting for a FIN, fails. */
    spin(&w, 100);
    ASSERT_TRUE(wf_match_test(&w.ctx[0], sr, &info) == WEFT_INPROGRESS);
    wf_ib_peer_fail(&w.ctx[0], &w.peers[0][1], WEFT_ERR_REMOTE,
                    "the peer's bootstrap connection broke");
    ASSERT_STATUS(wf_match_test(&w.ctx[0], sr, &info), WEFT_ERR_REMOTE);
    ASSERT_EQ(fk_regs(&w, 0), 0); /* released with the request */
    fk_pair_close(&w);
    fk_zcopy_min = 0;
    free(s), free(r);
}

WF_TEST(transport_ib_rndv_fail_while_awaiting, 20)
{
    enum { LEN = 1 << 20 };
    int one[2] = {1, 1};
    fk_pair_t w;
    char *s = calloc(1, LEN), *r = malloc(LEN);
    wf_treq_t *s1, *s2, *rr;
    wf_treq_info_t info;

    wf_test_log_capture();
    fk_zcopy_min = 64 * 1024;
    fk_rng = 1;
    fk_lazy = FK_LAZY_NONE;
    ASSERT_OK(fk_pair_open(&w, one));
    fk_hold_reads = true; /* no FIN can come */
    ASSERT_OK(wf_ib_irecv(&w.ctx[1], 0, 8, r, LEN, NULL, &rr));
    ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 8, NULL, s, LEN, NULL, &s1));
    for (int i = 0; i < 1000 && s1->frags_out; i++)
        spin(&w, 1);
    ASSERT_EQ(s1->frags_out, 0); /* its RTS completed, it waits for FIN */
    ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 8, NULL, s, LEN, NULL, &s2));
    ASSERT_EQ(s2->frags_out, 1); /* RTS posted, not completed */
    wf_ib_peer_fail(&w.ctx[0], &w.peers[0][1], WEFT_ERR_REMOTE,
                    "the peer's bootstrap connection broke");
    ASSERT_STATUS(wf_match_test(&w.ctx[0], s2, &info), WEFT_ERR_REMOTE);
    ASSERT_STATUS(wf_match_test(&w.ctx[0], s1, &info), WEFT_ERR_REMOTE);
    ASSERT_EQ(fk_regs(&w, 0), 0);
    fk_pair_close(&w);
    fk_zcopy_min = 0;
    free(s), free(r);
}

static const wf_tctx_t *watch_ctx;
static size_t largest_reg;

static void on_read_regs(const char *local, uint32_t len)
{
    (void)local, (void)len;
    for (size_t i = 0; i < watch_ctx->mrc.n; i++)
        largest_reg = WF_MAX(largest_reg, watch_ctx->mrc.regs[i]->len);
}

WF_TEST(transport_ib_rndv_windows, 30)
{
    const size_t LEN = 2 * WF_IB_PULL_WINDOW + 12345;
    int two[2] = {2, 2};
    fk_pair_t w;
    char *s = malloc(LEN), *r = malloc(LEN);
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;

    fill(s, LEN, 9);
    fk_zcopy_min = 1 << 20;
    fk_rng = 5;
    fk_lazy = FK_LAZY_NONE;
    ASSERT_OK(fk_pair_open(&w, two));
    watch_ctx = &w.ctx[1];
    fk_on_read = on_read_regs;
    /* Whole, then truncated to a window and a bit. */
    for (int k = 0; k < 2; k++) {
        size_t cap = k ? WF_IB_PULL_WINDOW + 7 : LEN;
        memset(r, 0, LEN);
        largest_reg = 0;
        ASSERT_OK(wf_ib_irecv(&w.ctx[1], 0, 4, r, cap, NULL, &rr));
        ASSERT_OK(wf_ib_isend(&w.ctx[0], 1, 4, NULL, s, LEN, NULL, &sr));
        ASSERT_OK(wait_req(&w, 1, rr, &info));
        ASSERT_EQ(info.len, LEN);
        ASSERT_TRUE(info.truncated == (k == 1));
        ASSERT_TRUE(same(r, cap, 9));
        ASSERT_TRUE(cap == LEN || r[cap] == 0);
        ASSERT_OK(wait_req(&w, 0, sr, &info));
        /* The sender's whole buffer is one registration; the receiver's
         * never more than a window. */
        ASSERT_TRUE(largest_reg > 0 && largest_reg <= WF_IB_PULL_WINDOW);
        ASSERT_EQ(fk_regs(&w, 0), 0);
        ASSERT_EQ(fk_regs(&w, 1), 0);
    }
    fk_pair_close(&w);
    fk_zcopy_min = 0;
    free(s), free(r);
}

WF_TEST(transport_ib_rndv_many_small_windows, 30)
{
    enum { N = 40, LEN = 300000 };
    int one[2] = {1, 1};
    fk_pair_t w;
    static char sbuf[2][N][LEN], rbuf[2][N][LEN];
    wf_treq_t *sr[2][N], *rr[2][N];
    wf_treq_info_t info;

    fk_zcopy_min = 1;
    fk_rng = 11;
    fk_lazy = FK_LAZY_NONE;
    ASSERT_OK(fk_pair_open(&w, one));
    /* The first half of the receives is posted before the sends, the
     * rest once the sends are queued (their RTSs kept unexpected). */
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N; i++) {
            fill(sbuf[d][i], LEN, (unsigned)(d * N + i));
            if (i < N / 2)
                ASSERT_OK(wf_ib_irecv(&w.ctx[1 - d], d, 3, rbuf[d][i], LEN,
                                      NULL, &rr[d][i]));
        }
    for (int i = 0; i < N; i++)
        for (int d = 0; d < 2; d++)
            ASSERT_OK(wf_ib_isend(&w.ctx[d], 1 - d, 3, NULL, sbuf[d][i], LEN,
                                  NULL, &sr[d][i]));
    spin(&w, 50);
    for (int d = 0; d < 2; d++)
        for (int i = N / 2; i < N; i++)
            ASSERT_OK(wf_ib_irecv(&w.ctx[1 - d], d, 3, rbuf[d][i], LEN, NULL,
                                  &rr[d][i]));
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N; i++) {
            ASSERT_OK(wait_req(&w, d, sr[d][i], &info));
            ASSERT_OK(wait_req(&w, 1 - d, rr[d][i], &info));
            ASSERT_EQ(info.len, LEN);
            ASSERT_TRUE(same(rbuf[d][i], LEN, (unsigned)(d * N + i)));
        }
    ASSERT_TRUE(!fk_rnr);
    ASSERT_EQ(fk_regs(&w, 0), 0);
    ASSERT_EQ(fk_regs(&w, 1), 0);
    fk_pair_close(&w);
    fk_zcopy_min = 0;
}

#else

WF_TEST(transport_ib_rndv_claimed_before_reads, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_rndv_read_fails, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_rndv_fail_while_awaiting, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_rndv_windows, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_rndv_many_small_windows, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
