/*
 * ib_fake.c - the fake verbs provider of ib_fake.h.
 */
#include "ib_fake.h"

#if defined(WF_HAVE_IB)

#include <errno.h>

#define WIRE_MAX 4096 /* work requests in flight on the fake wire */
#define FQP_MAX 16
#define FMR_MAX 256
#define FK_RAILS WF_IB_RAILS_MAX

/* ---- the fake provider -------------------------------------------------- */

typedef struct {
    uint64_t wr_id;
    char *addr;
} fake_recv_t;

typedef struct fake_qp {
    struct ibv_qp qp;
    int side;               /* 0 or 1: whose CQ gets its completions */
    int rail;               /* which of the side's protection domains */
    uint32_t dest;          /* the peer's QP number, set at RTR */
    fake_recv_t rq[WF_IB_RECV_SLOTS];
    unsigned rq_head, rq_n;
} fake_qp_t;

typedef struct {
    fake_qp_t *from;
    uint64_t wr_id;
    enum ibv_wr_opcode op;  /* SEND, RDMA WRITE (credits) or RDMA READ */
    uint64_t remote;
    uint32_t rkey;
    bool lkey_ok;           /* the local key is the QP's rail's and covers */
    char *local;            /* READ: where the bytes go */
    uint32_t len;
    char data[WF_IB_SLOT_LEN]; /* SEND and WRITE: copied at post time */
} wire_wr_t;

static struct ibv_context fake_dev;
static struct ibv_pd fake_pd[2][FK_RAILS];
static struct ibv_cq fake_cq[2][FK_RAILS];
static struct ibv_wc cqe[2][FK_RAILS][WIRE_MAX];
static unsigned cqe_n[2][FK_RAILS];
static struct ibv_mr *fmr[FMR_MAX];
static uint32_t next_key;
uint64_t fk_rail_bytes[2][WF_IB_RAILS_MAX];
unsigned long fk_key_errors;
static fake_qp_t *fqp[FQP_MAX];
static int nfqp;
static wire_wr_t *wire[WIRE_MAX];
unsigned fk_nwire;
uint64_t fk_rng;
int fk_lazy;
bool fk_rnr;
enum ibv_wc_status fk_fail_read;
size_t fk_zcopy_min;
int fk_topo_numa = -1;
unsigned long fk_reads;
bool fk_hold_reads;
void (*fk_on_read)(const char *local, uint32_t len);
static int side_creating; /* which context create_qp is serving */

static unsigned rand_below(unsigned n)
{
    fk_rng = fk_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((fk_rng >> 33) % n);
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

/* Whether `key` names a live registration on protection domain `pd`
 * that covers [addr, addr + len): what the HCA checks. */
static bool key_covers(uint32_t key, const struct ibv_pd *pd, uint64_t addr,
                       uint32_t len)
{
    for (int i = 0; i < FMR_MAX; i++) {
        const struct ibv_mr *mr = fmr[i];
        if (mr && mr->lkey == key)
            return mr->pd == pd && addr >= (uintptr_t)mr->addr &&
                   addr + len <= (uintptr_t)mr->addr + mr->length;
    }
    return false;
}

static struct ibv_pd *qp_pd(const fake_qp_t *q)
{
    return &fake_pd[q->side][q->rail];
}

static void cq_push(const fake_qp_t *q, uint64_t wr_id,
                    enum ibv_wc_opcode op, uint32_t len)
{
    struct ibv_wc *wc = &cqe[q->side][q->rail][cqe_n[q->side][q->rail]++];

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
    if (!key_covers(wr->sg_list->lkey, qp_pd(q), wr->sg_list->addr,
                    wr->sg_list->length)) {
        fk_key_errors++;
        *bad = wr;
        return EINVAL;
    }
    q->rq[(q->rq_head + q->rq_n++) % WF_IB_RECV_SLOTS] = (fake_recv_t){
        .wr_id = wr->wr_id, .addr = (char *)(uintptr_t)wr->sg_list->addr};
    return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                          struct ibv_send_wr **bad)
{
    bool read = wr->opcode == IBV_WR_RDMA_READ;
    wire_wr_t *w = malloc(sizeof(*w));

    if (!w || fk_nwire == WIRE_MAX ||
        (!read && wr->sg_list->length > WF_IB_SLOT_LEN)) {
        free(w);
        *bad = wr;
        return ENOMEM;
    }
    w->from = fqp_of(qp);
    w->wr_id = wr->wr_id;
    w->op = wr->opcode;
    w->remote = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->len = wr->sg_list->length;
    w->local = (char *)(uintptr_t)wr->sg_list->addr;
    w->lkey_ok = key_covers(wr->sg_list->lkey, qp_pd(w->from),
                            wr->sg_list->addr, w->len);
    if (!read)
        memcpy(w->data, w->local, w->len);
    wire[fk_nwire++] = w;
    return 0;
}

/* Delivers the oldest work request of a QP chosen at random.  With
 * LAZY_OTHERS the QPs other than each side's first are picked only one
 * time in 64 while a first QP has work, so QP 0 runs far ahead of them
 * (many messages begin while an old one is still arriving); LAZY_FIRST
 * the other way round (fragments wait, held, for their headers). */

static bool is_first_qp(const fake_qp_t *q)
{
    for (int i = 0; i < nfqp; i++)
        if (fqp[i] && fqp[i]->side == q->side)
            return fqp[i] == q;
    return false;
}

bool fk_wire_step(void)
{
    unsigned pick, i;
    fake_qp_t *from, *to;
    wire_wr_t *w;

    if (!fk_nwire)
        return false;
    pick = rand_below(fk_nwire);
    if (fk_lazy != FK_LAZY_NONE &&
        is_first_qp(wire[pick]->from) == (fk_lazy == FK_LAZY_FIRST) &&
        rand_below(64) != 0)
        for (unsigned k = 0; k < fk_nwire; k++)
            if (is_first_qp(wire[k]->from) != (fk_lazy == FK_LAZY_FIRST)) {
                pick = k;
                break;
            }
    from = wire[pick]->from;

    for (i = 0; wire[i]->from != from; i++)
        ;
    w = wire[i];
    if (fk_hold_reads && w->op == IBV_WR_RDMA_READ)
        return false;
    memmove(&wire[i], &wire[i + 1], (fk_nwire - i - 1) * sizeof(wire[0]));
    fk_nwire--;
    to = fqp_by_num(from->dest);
    if (!w->lkey_ok ||
        (w->op != IBV_WR_SEND &&
         (!to || !key_covers(w->rkey, qp_pd(to), w->remote, w->len)))) {
        /* A key of another rail or range: the HCA refuses the request. */
        fk_key_errors++;
        cq_push(from, w->wr_id, IBV_WC_SEND, 0);
        cqe[from->side][from->rail][cqe_n[from->side][from->rail] - 1]
            .status = w->lkey_ok ? IBV_WC_REM_ACCESS_ERR : IBV_WC_LOC_PROT_ERR;
    } else if (w->op == IBV_WR_RDMA_WRITE) {
        memcpy((void *)(uintptr_t)w->remote, w->data, w->len);
        cq_push(from, w->wr_id, IBV_WC_RDMA_WRITE, 0);
    } else if (w->op == IBV_WR_RDMA_READ) {
        /* The responder's memory is read when the request gets there. */
        if (fk_fail_read) {
            cq_push(from, w->wr_id, IBV_WC_RDMA_READ, 0);
            cqe[from->side][from->rail][cqe_n[from->side][from->rail] - 1]
                .status = fk_fail_read;
            fk_fail_read = 0;
        } else {
            memcpy(w->local, (void *)(uintptr_t)w->remote, w->len);
            fk_reads++;
            fk_rail_bytes[to->side][from->rail] += w->len;
            if (fk_on_read)
                fk_on_read(w->local, w->len);
            cq_push(from, w->wr_id, IBV_WC_RDMA_READ, w->len);
        }
    } else if (!to || to->rq_n == 0) {
        fk_rnr = true;
    } else {
        fake_recv_t r = to->rq[to->rq_head];
        to->rq_head = (to->rq_head + 1) % WF_IB_RECV_SLOTS;
        to->rq_n--;
        memcpy(r.addr, w->data, w->len);
        fk_rail_bytes[from->side][from->rail] += w->len;
        cq_push(to, r.wr_id, IBV_WC_RECV, w->len);
        cq_push(from, w->wr_id, IBV_WC_SEND, 0);
    }
    free(w);
    return true;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    int at = (int)(cq - &fake_cq[0][0]);
    int side = at / FK_RAILS, rail = at % FK_RAILS;
    int got = 0;

    /* The wire moves a little on every poll, in random QP order. */
    for (unsigned k = rand_below(4); k > 0 && fk_nwire > 0; k--)
        fk_wire_step();
    while (got < n && cqe_n[side][rail] > 0) {
        wc[got++] = cqe[side][rail][0];
        memmove(&cqe[side][rail][0], &cqe[side][rail][1],
                --cqe_n[side][rail] * sizeof(cqe[side][rail][0]));
    }
    return got;
}

/* Every registration gets a key of its own, so a key used on another
 * rail's QP (another protection domain) is caught. */
static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                                  int access)
{
    struct ibv_mr *mr = calloc(1, sizeof(*mr));
    int i = 0;

    (void)access;
    while (i < FMR_MAX && fmr[i])
        i++;
    if (!mr || i == FMR_MAX) {
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    mr->pd = pd;
    mr->addr = addr;
    mr->length = len;
    mr->lkey = mr->rkey = 0x7700 + ++next_key;
    fmr[i] = mr;
    return mr;
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
    for (int i = 0; i < FMR_MAX; i++)
        if (fmr[i] == mr)
            fmr[i] = NULL;
    free(mr);
    return 0;
}

static struct ibv_qp *fake_create_qp(struct ibv_pd *pd,
                                     struct ibv_qp_init_attr *attr)
{
    fake_qp_t *q = calloc(1, sizeof(*q));
    int at = (int)(pd - &fake_pd[0][0]);

    /* A QP's CQ must belong to the device of its protection domain. */
    if (!q || nfqp == FQP_MAX || attr->cap.max_recv_wr > WF_IB_RECV_SLOTS ||
        at < 0 || at >= 2 * FK_RAILS || at / FK_RAILS != side_creating ||
        attr->send_cq != &fake_cq[0][0] + at ||
        attr->recv_cq != attr->send_cq) {
        free(q);
        errno = EINVAL;
        return NULL;
    }
    q->qp.context = &fake_dev;
    q->qp.qp_num = 0x100 + (uint32_t)nfqp;
    q->side = side_creating;
    q->rail = at % FK_RAILS;
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
    return st == IBV_WC_REM_ACCESS_ERR ? "remote access error"
                                       : "fake status";
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

weft_status_t fk_pair_open(fk_pair_t *w, const int qps[2])
{
    static const int one[2] = {1, 1};

    return fk_pair_open_rails(w, qps, one);
}

weft_status_t fk_pair_open_rails(fk_pair_t *w, const int qps[2],
                                 const int rails[2])
{
    weft_status_t st = WEFT_OK;

    memset(w, 0, sizeof(*w));
    fake_dev.ops.post_send = fake_post_send;
    fake_dev.ops.post_recv = fake_post_recv;
    fake_dev.ops.poll_cq = fake_poll_cq;
    nfqp = 0;
    fk_nwire = 0;
    memset(cqe_n, 0, sizeof(cqe_n));
    memset(fk_rail_bytes, 0, sizeof(fk_rail_bytes));
    fk_key_errors = 0;
    fk_rnr = false;
    fk_fail_read = 0;
    fk_reads = 0;
    fk_hold_reads = false;
    fk_on_read = NULL;
    for (int s = 0; s < 2; s++) {
        wf_tctx_t *c = &w->ctx[s];
        wf_ib_peer_t *p = &w->peers[s][1 - s];
        c->cfg.rank = s;
        c->cfg.size = 2;
        c->v = &fake_v;
        c->nqp = qps[s];
        c->zcopy_min = fk_zcopy_min;
        c->cfg.topo_numa = fk_topo_numa;
        c->nrails = rails[s];
        for (int r = 0; r < rails[s]; r++) {
            fake_cq[s][r].context = &fake_dev;
            c->rail[r].cq = &fake_cq[s][r];
            c->rail[r].pd = &fake_pd[s][r];
            c->rail[r].port.gid_index = -1;
            snprintf(c->rail[r].port.dev_name,
                     sizeof(c->rail[r].port.dev_name), "fake%d", r);
        }
        c->boot_ops = &fake_boot_ops;
        c->timer_fd = c->epfd = -1;
        c->peers = w->peers[s];
        p->nrrails = rails[1 - s];
        p->nrails = WF_MIN(rails[0], rails[1]);
        for (int r = 0; r < 2; r++) {
            w->peers[s][r].rank = r;
            snprintf(w->peers[s][r].desc, sizeof(w->peers[s][r].desc),
                     "peer %d", r);
        }
        wf_ib_match_open(c);
        side_creating = s;
        p->state = WF_IB_EXCHANGE;
        ASSERT_OK(wf_ib_qp_create(c, p, wf_ib_pair_qps(qps[s], p->nrails)));
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

void fk_pair_close(fk_pair_t *w)
{
    for (int s = 0; s < 2; s++) {
        wf_ib_qp_destroy(&w->ctx[s], &w->peers[s][1 - s]);
        wf_ib_xfer_free_all(&w->ctx[s]);
        wf_ib_mrcache_free(&w->ctx[s]);
    }
    while (fk_nwire > 0)
        free(wire[--fk_nwire]);
}

size_t fk_regs(const fk_pair_t *w, int s)
{
    return w->ctx[s].mrc.n;
}

#endif
