/*
 * ib_stripe.c - the verbs transport's striping over several QPs per peer
 * and its reassembly, driven without a device.
 *
 * Two verbs contexts in this process are joined by a fake provider
 * (ib_fake.c): the real wf_ib_qp_create/wf_ib_qp_connect build the QPs (so
 * the INFO blob is encoded and decoded for real), the real
 * isend/irecv/progress move the messages.  The fake "wire" keeps each QP's
 * work requests in order, as RC does, but delivers the next one of a QP
 * picked at random, so fragments
 * of one message and headers of the next overtake each other across QPs
 * in ways that differ with the seed; with some seeds the other QPs lag far
 * behind QP 0, with others QP 0 lags behind them.  A SEND that finds no posted receive
 * at the far end fails the test (the credits of that QP were wrong), as
 * does any message whose bytes, length, signature or matching order differ
 * from what was sent.  With several QPs the test also requires that some
 * fragment arrived before its message's header (the held path ran).
 * transport_ib_rndv_reassembly runs the same traffic with a zero-copy
 * threshold, so the large messages go by rendezvous (RTS, RDMA READs
 * striped over the QPs, FIN) mixed on one tag with eager ones, matched
 * early and late and truncated, and every registration must be gone at the
 * end.
 */
#include "ib_fake.h"
#include "../topo/topo_test.h"

#if defined(WF_HAVE_IB)

/* ---- the traffic -------------------------------------------------------- */

/* Message sizes around every boundary: empty, within the first fragment,
 * exactly one full first fragment, one byte more, several fragments, and
 * a large message whose fragments go to every QP. */
static const size_t sizes[] = {
    0, 1, 1000, WF_IB_SLOT_LEN - WF_IB_FRAG_LEN - WF_IB_HDR_LEN,
    WF_IB_SLOT_LEN - WF_IB_FRAG_LEN - WF_IB_HDR_LEN + 1, 200000, 7,
    (4u << 20) + 13, 3 * WF_IB_SLOT_LEN, 65536, 0, 123457,
    /* One-fragment messages behind a striped one: with lazy QPs they all
     * complete on QP 0 while its last fragments wait on the others, so
     * many messages begin while an old one is still arriving. */
    300000, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
    40, 41, 42, 43, 44, 45, 46, 47, 48, 49};
#define NMSG (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pattern(size_t i, unsigned msg, int dir)
{
    return (uint8_t)(i * 31u + msg * 101u + (unsigned)dir * 7u + (i >> 16));
}

typedef struct {
    uint8_t *sbuf[NMSG], *rbuf[NMSG];
    wf_treq_t *sreq[NMSG], *rreq[NMSG];
    bool sdone[NMSG], rdone[NMSG];
    wf_treq_info_t rinfo[NMSG];
} dir_t;

/* Two groups of messages, each on one tag, so the receiver must match
 * them in send order: messages 0-5 (tag 5) are received after the traffic
 * began (unexpected messages, some caught while still arriving), messages
 * 6-11 (tag 6) into receives posted before the sends start. */
#define EARLY(m) ((m) >= 6)
static uint64_t tag_of(unsigned m)
{
    return EARLY(m) ? 6 : 5;
}

/* Messages 2 (eager), 5 (large, received late) and 7 (large, received
 * early) meet buffers 10 bytes short: truncated. */
static size_t cap_of(unsigned m)
{
    return m == 2 || m == 5 || m == 7 ? sizes[m] - WF_MIN(sizes[m], 10)
                                      : sizes[m];
}

static void post_recv(fk_pair_t *w, dir_t *d, int to, unsigned m)
{
    size_t cap = cap_of(m);

    d->rbuf[m] = calloc(1, sizes[m] + 1);
    ASSERT_TRUE(d->rbuf[m] != NULL);
    ASSERT_OK(wf_ib_irecv(&w->ctx[to], 1 - to, tag_of(m), d->rbuf[m], cap,
                          NULL, &d->rreq[m]));
}

static void check_recv(dir_t *d, unsigned m, int dir)
{
    size_t cap = cap_of(m);

    ASSERT_EQ(d->rinfo[m].len, sizes[m]);
    ASSERT_TRUE(d->rinfo[m].truncated == (cap < sizes[m]));
    ASSERT_TRUE(d->rinfo[m].sig[0] == m * 3 + 1 &&
                d->rinfo[m].sig[1] == (uint64_t)dir);
    for (size_t i = 0; i < cap; i++)
        if (d->rbuf[m][i] != pattern(i, m, dir))
            wf_test_fail(__FILE__, __LINE__,
                         "direction %d message %u (%zu bytes): byte %zu is "
                         "0x%02x, sent 0x%02x",
                         dir, m, sizes[m], i, d->rbuf[m][i],
                         pattern(i, m, dir));
    ASSERT_TRUE(d->rbuf[m][cap] == 0); /* nothing past the buffer */
}

/* Both directions at once; returns whether a fragment was ever held. */
static bool run_traffic(fk_pair_t *w)
{
    dir_t d[2];
    unsigned left = 4 * NMSG;
    bool held = false;
    int rounds = 0;

    memset(d, 0, sizeof(d));
    for (int dir = 0; dir < 2; dir++)
        for (unsigned m = 0; m < NMSG; m++)
            if (EARLY(m))
                post_recv(w, &d[dir], 1 - dir, m);
    for (int dir = 0; dir < 2; dir++)
        for (unsigned m = 0; m < NMSG; m++) {
            uint64_t sig[2] = {m * 3 + 1, (uint64_t)dir};
            d[dir].sbuf[m] = malloc(sizes[m] + 1);
            ASSERT_TRUE(d[dir].sbuf[m] != NULL);
            for (size_t i = 0; i < sizes[m]; i++)
                d[dir].sbuf[m][i] = pattern(i, m, dir);
            ASSERT_OK(wf_ib_isend(&w->ctx[dir], 1 - dir, tag_of(m), sig,
                                  d[dir].sbuf[m], sizes[m], NULL,
                                  &d[dir].sreq[m]));
        }
    while (left > 0) {
        if (rounds++ > 2000000)
            wf_test_fail(__FILE__, __LINE__,
                         "traffic stuck: %u requests open, %u work requests "
                         "on the wire",
                         left, fk_nwire);
        if (rounds == 50)
            for (int dir = 0; dir < 2; dir++)
                for (unsigned m = 0; m < NMSG; m++)
                    if (!EARLY(m))
                        post_recv(w, &d[dir], 1 - dir, m);
        for (int s = 0; s < 2; s++) {
            ASSERT_TRUE(wf_ib_progress(&w->ctx[s]) >= 0);
            held |= w->peers[s][1 - s].nheld > 0;
        }
        ASSERT_TRUE(!fk_rnr);
        for (int dir = 0; dir < 2; dir++)
            for (unsigned m = 0; m < NMSG; m++) {
                wf_treq_info_t info;
                weft_status_t st = WEFT_INPROGRESS;
                if (!d[dir].sdone[m] &&
                    (st = wf_match_test(&w->ctx[dir], d[dir].sreq[m], &info)) !=
                        WEFT_INPROGRESS) {
                    ASSERT_OK(st);
                    ASSERT_EQ(info.len, sizes[m]);
                    d[dir].sdone[m] = true;
                    left--;
                }
                if (d[dir].rreq[m] && !d[dir].rdone[m]) {
                    weft_status_t st = wf_match_test(
                        &w->ctx[1 - dir], d[dir].rreq[m], &d[dir].rinfo[m]);
                    if (st == WEFT_INPROGRESS)
                        continue;
                    ASSERT_OK(st);
                    d[dir].rdone[m] = true;
                    left--;
                }
            }
    }
    for (int dir = 0; dir < 2; dir++)
        for (unsigned m = 0; m < NMSG; m++) {
            check_recv(&d[dir], m, dir);
            free(d[dir].sbuf[m]);
            free(d[dir].rbuf[m]);
        }
    return held;
}

/* Every QP count and seed; returns for each QP count whether a fragment
 * was ever held. */
static void sweep(size_t zcopy_min, bool held_by_qps[5])
{
    static const int qps[] = {1, 2, 3, 4, 8};

    fk_zcopy_min = zcopy_min;
    for (size_t k = 0; k < sizeof(qps) / sizeof(qps[0]); k++) {
        held_by_qps[k] = false;
        for (uint64_t seed = 1; seed <= 12; seed++) {
            fk_pair_t w;
            int both[2] = {qps[k], qps[k]};
            fk_rng = seed;
            fk_lazy = seed <= 4 ? FK_LAZY_NONE
                                : seed <= 8 ? FK_LAZY_OTHERS : FK_LAZY_FIRST;
            ASSERT_OK(fk_pair_open(&w, both));
            held_by_qps[k] |= run_traffic(&w);
            ASSERT_TRUE((fk_reads > 0) == (zcopy_min > 0));
            /* Rendezvous registrations go with their requests. */
            ASSERT_EQ(fk_regs(&w, 0), 0);
            ASSERT_EQ(fk_regs(&w, 1), 0);
            fk_pair_close(&w);
        }
    }
    fk_zcopy_min = 0;
}

WF_TEST(transport_ib_stripe_reassembly, 60)
{
    bool held[5];

    sweep(0, held);
    /* One QP keeps fragments in order; several must have overtaken. */
    for (int k = 0; k < 5; k++)
        ASSERT_TRUE(held[k] == (k > 0));
}

WF_TEST(transport_ib_rndv_reassembly, 60)
{
    bool held[5];

    /* 200000 bytes and more by rendezvous, 123457 and less eager. */
    sweep(150000, held);
}

WF_TEST(transport_ib_stripe_qps_differ, 10)
{
    fk_pair_t w;
    int qps[2] = {2, 1};

    wf_test_log_capture();
    fk_rng = 1;
    ASSERT_TRUE(fk_pair_open(&w, qps) == WEFT_ERR_TRANSPORT);
    ASSERT_TRUE(strstr(wf_test_log_text(),
                       "the peer opens 1 QP(s) over 1 rail(s) for this "
                       "pair, this rank 2 over 1") != NULL);
    fk_pair_close(&w);
}

/* Two rails a side: the QPs alternate between them, every fragment and
 * READ uses the keys of its QP's rail (the fake refuses any other), and
 * both rails carry a fair share of both directions, eager and by
 * rendezvous.  With one rail on one side the pair uses one. */
WF_TEST(transport_ib_stripe_rails, 60)
{
    static const size_t zcopy[2] = {0, 150000};

    for (int z = 0; z < 2; z++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            fk_pair_t w;
            int qps[2] = {1, 1}, rails[2] = {2, 2};
            fk_zcopy_min = zcopy[z];
            fk_rng = seed;
            fk_lazy = FK_LAZY_NONE;
            ASSERT_OK(fk_pair_open_rails(&w, qps, rails));
            ASSERT_EQ(w.peers[0][1].nqp, 2); /* a QP per rail at least */
            ASSERT_EQ(w.peers[0][1].qp[1].rail, 1);
            run_traffic(&w);
            ASSERT_EQ(fk_key_errors, 0);
            for (int s = 0; s < 2; s++) {
                uint64_t r0 = fk_rail_bytes[s][0], r1 = fk_rail_bytes[s][1];
                if (r0 < (r0 + r1) / 4 || r1 < (r0 + r1) / 4)
                    printf("side %d zcopy %zu seed %llu: rail 0 %llu, rail "
                           "1 %llu bytes\n",
                           s, zcopy[z], (unsigned long long)seed,
                           (unsigned long long)r0, (unsigned long long)r1);
                ASSERT_TRUE(r0 >= (r0 + r1) / 4 && r1 >= (r0 + r1) / 4);
            }
            ASSERT_EQ(fk_regs(&w, 0), 0);
            ASSERT_EQ(fk_regs(&w, 1), 0);
            fk_pair_close(&w);
        }
    fk_zcopy_min = 0;

    fk_pair_t w;
    int qps[2] = {2, 2}, rails[2] = {2, 1};
    fk_rng = 3;
    ASSERT_OK(fk_pair_open_rails(&w, qps, rails));
    ASSERT_EQ(w.peers[0][1].nrails, 1);
    ASSERT_EQ(w.peers[1][0].nrails, 1);
    run_traffic(&w);
    ASSERT_EQ(fk_key_errors, 0);
    ASSERT_EQ(fk_rail_bytes[0][1], 0);
    ASSERT_TRUE(fk_rail_bytes[0][0] > 0);
    fk_pair_close(&w);
}

/* The slot block of a pair lives on the NUMA node the topology chose
 * (cfg.topo_numa), as the engine's and TCP's staging does; without a
 * topology it is ordinary memory. */
WF_TEST(transport_ib_slots_on_the_chosen_node, 10)
{
    fk_pair_t w;
    int qps[2] = {2, 2};
    int only = -1;

    wf_test_need_binding();
    fk_rng = 1;
    fk_topo_numa = 0;
    ASSERT_OK(fk_pair_open(&w, qps));
    fk_topo_numa = -1;
    ASSERT_TRUE(wf_test_mem_on_node(w.peers[0][1].b.mem, 0));
    ASSERT_TRUE(wf_test_mem_on_node(
        w.peers[0][1].b.mem + w.peers[0][1].b.len - 1, 0));
    run_traffic(&w);
    fk_pair_close(&w);

    ASSERT_OK(fk_pair_open(&w, qps));
    ASSERT_EQ(wf_test_mempolicy(w.peers[0][1].b.mem, &only), 0); /* MPOL_DEFAULT */
    fk_pair_close(&w);
}

#else

WF_TEST(transport_ib_slots_on_the_chosen_node, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_stripe_reassembly, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_rndv_reassembly, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_stripe_qps_differ, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_stripe_rails, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
