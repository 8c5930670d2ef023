/*
 * ib_stripe.c - the verbs transport's striping over several QPs per peer
 * and its reassembly, driven without a device.
 *
 * Two verbs contexts in this process are joined by a fake provider: the
 * real wf_ib_qp_create/wf_ib_qp_connect build the QPs (so the INFO blob is
 * encoded and decoded for real), the real isend/irecv/progress move the
 * messages.  The fake "wire" keeps each QP's work requests in order, as RC
 * does, but delivers the next one of a QP picked at random, so fragments
 * of one message and headers of the next overtake each other across QPs
 * in ways that differ with the seed; with some seeds the other QPs lag far
 * behind QP 0, with others QP 0 lags behind them.  A SEND that finds no posted receive
 * at the far end fails the test (the credits of that QP were wrong), as
 * does any message whose bytes, length, signature or matching order differ
 * from what was sent.  With several QPs the test also requires that some
 * fragment arrived before its message's header (the held path ran).
 */
#include "test.h"

#if defined(WF_HAVE_IB)

#include <errno.h>

#include "ib/ib.h"

#define WIRE_MAX 4096 /* work requests in flight on the fake wire */
#define FQP_MAX 16

/* ---- the fake provider -------------------------------------------------- */

typedef struct {
    uint64_t wr_id;
    char *addr;
} fake_recv_t;

typedef struct fake_qp {
    struct ibv_qp qp;
    int side;               /* 0 or 1: whose CQ gets its completions */
    uint32_t dest;          /* the peer's QP number, set at RTR */
    fake_recv_t rq[WF_IB_RECV_SLOTS];
    unsigned rq_head, rq_n;
} fake_qp_t;

typedef struct {
    fake_qp_t *from;
    uint64_t wr_id;
    bool write;             /* RDMA WRITE of a credit word */
    uint64_t remote;
    uint32_t len;
    char data[WF_IB_SLOT_LEN];
} wire_wr_t;

static struct ibv_context fake_dev;
static struct ibv_cq fake_cq[2];
static struct ibv_wc cqe[2][WIRE_MAX];
static unsigned cqe_n[2];
static fake_qp_t *fqp[FQP_MAX];
static int nfqp;
static wire_wr_t *wire[WIRE_MAX];
static unsigned nwire;
static uint64_t rng;
static int side_creating; /* which context create_qp is serving */
static bool rnr;          /* a SEND found no posted receive */

static unsigned rand_below(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

static fake_qp_t *fqp_of(struct ibv_qp *qp)
{
    return (fake_qp_t *)qp; /* qp is the first member */
}

static fake_qp_t *fqp_by_num(uint32_t num)
{
    for (int i = 0; i < nfqp; i++)
        if (fqp[i] && fqp[i]->qp.qp_num == num)
            return fqp[i];
    return NULL;
}

static void cq_push(int side, uint64_t wr_id, enum ibv_wc_opcode op,
                    uint32_t len)
{
    struct ibv_wc *wc = &cqe[side][cqe_n[side]++];

    memset(wc, 0, sizeof(*wc));
    wc->wr_id = wr_id;
    wc->status = IBV_WC_SUCCESS;
    wc->opcode = op;
    wc->byte_len = len;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                          struct ibv_recv_wr **bad)
{
    fake_qp_t *q = fqp_of(qp);

    if (q->rq_n == WF_IB_RECV_SLOTS) {
        *bad = wr;
        return ENOMEM;
    }
    q->rq[(q->rq_head + q->rq_n++) % WF_IB_RECV_SLOTS] = (fake_recv_t){
        .wr_id = wr->wr_id, .addr = (char *)(uintptr_t)wr->sg_list->addr};
    return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                          struct ibv_send_wr **bad)
{
    wire_wr_t *w = malloc(sizeof(*w));

    if (!w || nwire == WIRE_MAX || wr->sg_list->length > WF_IB_SLOT_LEN) {
        free(w);
        *bad = wr;
        return ENOMEM;
    }
    w->from = fqp_of(qp);
    w->wr_id = wr->wr_id;
    w->write = wr->opcode == IBV_WR_RDMA_WRITE;
    w->remote = wr->wr.rdma.remote_addr;
    w->len = wr->sg_list->length;
    memcpy(w->data, (void *)(uintptr_t)wr->sg_list->addr, w->len);
    wire[nwire++] = w;
    return 0;
}

/* Delivers the oldest work request of a QP chosen at random.  With
 * LAZY_OTHERS the QPs other than each side's first are picked only one
 * time in 64 while a first QP has work, so QP 0 runs far ahead of them
 * (many messages begin while an old one is still arriving); LAZY_FIRST
 * the other way round (fragments wait, held, for their headers). */
enum { LAZY_NONE, LAZY_OTHERS, LAZY_FIRST };
static int lazy_qps;

static bool is_first_qp(const fake_qp_t *q)
{
    for (int i = 0; i < nfqp; i++)
        if (fqp[i] && fqp[i]->side == q->side)
            return fqp[i] == q;
    return false;
}

static void wire_step(void)
{
    unsigned pick = rand_below(nwire), i;
    fake_qp_t *from, *to;
    wire_wr_t *w;

    if (lazy_qps != LAZY_NONE &&
        is_first_qp(wire[pick]->from) == (lazy_qps == LAZY_FIRST) &&
        rand_below(64) != 0)
        for (unsigned k = 0; k < nwire; k++)
            if (is_first_qp(wire[k]->from) != (lazy_qps == LAZY_FIRST)) {
                pick = k;
                break;
            }
    from = wire[pick]->from;

    for (i = 0; wire[i]->from != from; i++)
        ;
    w = wire[i];
    memmove(&wire[i], &wire[i + 1], (nwire - i - 1) * sizeof(wire[0]));
    nwire--;
    to = fqp_by_num(from->dest);
    if (w->write) {
        memcpy((void *)(uintptr_t)w->remote, w->data, w->len);
        cq_push(from->side, w->wr_id, IBV_WC_RDMA_WRITE, 0);
    } else if (!to || to->rq_n == 0) {
        rnr = true;
    } else {
        fake_recv_t r = to->rq[to->rq_head];
        to->rq_head = (to->rq_head + 1) % WF_IB_RECV_SLOTS;
        to->rq_n--;
        memcpy(r.addr, w->data, w->len);
        cq_push(to->side, r.wr_id, IBV_WC_RECV, w->len);
        cq_push(from->side, w->wr_id, IBV_WC_SEND, 0);
    }
    free(w);
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    int side = cq == &fake_cq[1];
    int got = 0;

    /* The wire moves a little on every poll, in random QP order. */
    for (unsigned k = rand_below(4); k > 0 && nwire > 0; k--)
        wire_step();
    while (got < n && cqe_n[side] > 0) {
        wc[got++] = cqe[side][0];
        memmove(&cqe[side][0], &cqe[side][1],
                --cqe_n[side] * sizeof(cqe[side][0]));
    }
    return got;
}

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                                  int access)
{
    struct ibv_mr *mr = calloc(1, sizeof(*mr));

    (void)pd, (void)access;
    if (mr) {
        mr->addr = addr;
        mr->length = len;
        mr->lkey = mr->rkey = 0x77;
    }
    return mr;
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
    free(mr);
    return 0;
}

static struct ibv_qp *fake_create_qp(struct ibv_pd *pd,
                                     struct ibv_qp_init_attr *attr)
{
    fake_qp_t *q = calloc(1, sizeof(*q));

    (void)pd;
    if (!q || nfqp == FQP_MAX || attr->cap.max_recv_wr > WF_IB_RECV_SLOTS) {
        free(q);
        errno = EINVAL;
        return NULL;
    }
    q->qp.context = &fake_dev;
    q->qp.qp_num = 0x100 + (uint32_t)nfqp;
    q->side = side_creating;
    fqp[nfqp++] = q;
    return &q->qp;
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    if (mask & IBV_QP_DEST_QPN)
        fqp_of(qp)->dest = a->dest_qp_num;
    return 0;
}

static int fake_destroy_qp(struct ibv_qp *qp)
{
    for (int i = 0; i < nfqp; i++)
        if (fqp[i] == fqp_of(qp))
            fqp[i] = NULL;
    free(fqp_of(qp));
    return 0;
}

static int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
                             void **cq_ctx)
{
    (void)ch, (void)cq, (void)cq_ctx;
    return -1; /* no event: progress() polls the CQ anyway */
}

static const char *fake_wc_str(enum ibv_wc_status st)
{
    (void)st;
    return "fake";
}

static int fake_boot_progress(wf_tctx_t *boot)
{
    (void)boot;
    return 0;
}

static const wf_ibv_t fake_v = {
    .reg_mr = fake_reg_mr,
    .dereg_mr = fake_dereg_mr,
    .create_qp = fake_create_qp,
    .modify_qp = fake_modify_qp,
    .destroy_qp = fake_destroy_qp,
    .get_cq_event = fake_get_cq_event,
    .wc_status_str = fake_wc_str,
};
static const wf_transport_ops_t fake_boot_ops = {
    .progress = fake_boot_progress};

/* ---- two contexts joined by the wire ------------------------------------ */

typedef struct {
    wf_tctx_t ctx[2];
    wf_ib_peer_t peers[2][2];
} pair_t;

/* Builds both sides with `qps[side]` QPs and connects them; returns the
 * status of the connect of side 0 (the one that checks side 1's INFO). */
static weft_status_t pair_open(pair_t *w, const int qps[2])
{
    weft_status_t st = WEFT_OK;

    memset(w, 0, sizeof(*w));
    fake_dev.ops.post_send = fake_post_send;
    fake_dev.ops.post_recv = fake_post_recv;
    fake_dev.ops.poll_cq = fake_poll_cq;
    nfqp = 0;
    nwire = 0;
    cqe_n[0] = cqe_n[1] = 0;
    rnr = false;
    for (int s = 0; s < 2; s++) {
        wf_tctx_t *c = &w->ctx[s];
        wf_ib_peer_t *p = &w->peers[s][1 - s];
        fake_cq[s].context = &fake_dev;
        c->cfg.rank = s;
        c->cfg.size = 2;
        c->v = &fake_v;
        c->nqp = qps[s];
        c->cq = &fake_cq[s];
        c->boot_ops = &fake_boot_ops;
        c->timer_fd = c->epfd = -1;
        c->port.gid_index = -1;
        c->peers = w->peers[s];
        for (int r = 0; r < 2; r++) {
            w->peers[s][r].rank = r;
            snprintf(w->peers[s][r].desc, sizeof(w->peers[s][r].desc),
                     "peer %d", r);
        }
        side_creating = s;
        p->state = WF_IB_EXCHANGE;
        ASSERT_OK(wf_ib_qp_create(c, p, qps[s]));
    }
    memcpy(w->peers[0][1].info_in, w->peers[1][0].info_out, WF_IB_INFO_LEN);
    memcpy(w->peers[1][0].info_in, w->peers[0][1].info_out, WF_IB_INFO_LEN);
    for (int s = 1; s >= 0; s--) {
        wf_ib_peer_t *p = &w->peers[s][1 - s];
        st = wf_ib_qp_connect(&w->ctx[s], p);
        if (st == WEFT_OK)
            p->state = WF_IB_UP;
    }
    return st;
}

static void pair_close(pair_t *w)
{
    for (int s = 0; s < 2; s++) {
        wf_ib_qp_destroy(&w->ctx[s], &w->peers[s][1 - s]);
        wf_ib_xfer_free_all(&w->ctx[s]);
    }
    while (nwire > 0)
        free(wire[--nwire]);
}

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

static void post_recv(pair_t *w, dir_t *d, int to, unsigned m)
{
    /* Message 2 meets a buffer 10 bytes short: truncated. */
    size_t cap = m == 2 ? sizes[m] - WF_MIN(sizes[m], 10) : sizes[m];

    d->rbuf[m] = calloc(1, sizes[m] + 1);
    ASSERT_TRUE(d->rbuf[m] != NULL);
    ASSERT_OK(wf_ib_irecv(&w->ctx[to], 1 - to, tag_of(m), d->rbuf[m], cap,
                          NULL, &d->rreq[m]));
}

static void check_recv(dir_t *d, unsigned m, int dir)
{
    size_t cap = m == 2 ? sizes[m] - WF_MIN(sizes[m], 10) : sizes[m];

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
static bool run_traffic(pair_t *w)
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
                         left, nwire);
        if (rounds == 50)
            for (int dir = 0; dir < 2; dir++)
                for (unsigned m = 0; m < NMSG; m++)
                    if (!EARLY(m))
                        post_recv(w, &d[dir], 1 - dir, m);
        for (int s = 0; s < 2; s++) {
            ASSERT_TRUE(wf_ib_progress(&w->ctx[s]) >= 0);
            held |= w->peers[s][1 - s].nheld > 0;
        }
        ASSERT_TRUE(!rnr);
        for (int dir = 0; dir < 2; dir++)
            for (unsigned m = 0; m < NMSG; m++) {
                wf_treq_info_t info;
                weft_status_t st = WEFT_INPROGRESS;
                if (!d[dir].sdone[m] &&
                    (st = wf_ib_test(&w->ctx[dir], d[dir].sreq[m], &info)) !=
                        WEFT_INPROGRESS) {
                    ASSERT_OK(st);
                    ASSERT_EQ(info.len, sizes[m]);
                    d[dir].sdone[m] = true;
                    left--;
                }
                if (d[dir].rreq[m] && !d[dir].rdone[m]) {
                    weft_status_t st = wf_ib_test(
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

WF_TEST(ib_stripe_reassembly, 60)
{
    static const int qps[] = {1, 2, 3, 4, 8};

    for (size_t k = 0; k < sizeof(qps) / sizeof(qps[0]); k++) {
        bool held = false;
        for (uint64_t seed = 1; seed <= 12; seed++) {
            pair_t w;
            int both[2] = {qps[k], qps[k]};
            rng = seed;
            lazy_qps = seed <= 4 ? LAZY_NONE
                                 : seed <= 8 ? LAZY_OTHERS : LAZY_FIRST;
            ASSERT_OK(pair_open(&w, both));
            held |= run_traffic(&w);
            pair_close(&w);
        }
        /* One QP keeps fragments in order; several must have overtaken. */
        ASSERT_TRUE(held == (qps[k] > 1));
    }
}

WF_TEST(ib_stripe_qps_differ, 10)
{
    pair_t w;
    int qps[2] = {2, 1};

    wf_test_log_capture();
    rng = 1;
    ASSERT_TRUE(pair_open(&w, qps) == WEFT_ERR_TRANSPORT);
    ASSERT_TRUE(strstr(wf_test_log_text(),
                       "the peer uses WEFT_IB_QPS=1, this rank 2") != NULL);
    pair_close(&w);
}

#else

WF_TEST(ib_stripe_reassembly, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(ib_stripe_qps_differ, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
