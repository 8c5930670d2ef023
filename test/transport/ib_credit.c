/*
 * ib_credit.c - the verbs transport's sender-side flow control, driven
 * without a device.
 *
 * The receiver returns credits by an RDMA WRITE into a word of the
 * sender's memory, so the word can change at any instant, also between two
 * reads of it by the sender.  This test makes that instant reproducible:
 * the credit word sits alone on a page with no access, every read of it
 * faults, the SIGSEGV handler lets the read through and arms a single-step
 * trap (x86 TF), and the trap handler, right after that one load, may land
 * the "receiver's" credit write before taking access away again.
 *
 * The rest of the verbs world is a fake ibv_context whose post_send
 * queues a success completion that poll_cq returns: sends complete as soon
 * as progress() looks.  The receiver returns credits, one batch at a time,
 * only once the sender is out of them with nothing in flight (the case in
 * which no completion will ever call the pump again), and the write lands
 * right after the Nth read the sender makes in that state.  Sweeping N puts
 * the write after every read the sender makes while it waits, in every
 * episode of a 64-fragment send; whatever N, the send must complete.
 * With several QPs per peer every QP has its own credit word (all on the
 * trapped page): the write lands in the word the sender just read, so the
 * sweep puts it after every read of every QP's word, with 1, 2 and 4 QPs.
 *
 * Before the fix wf_ib_pump read the word once to stop sending and again
 * to decide whether to wait for credits: a write landing in between left
 * a queued send with no SEND posted, no completion to come and no timer
 * armed, so nothing ever posted it (the coll_allreduce_procs_n3 hang of
 * make test-rdma).
 */
#include "test.h"

#if defined(WF_HAVE_IB) && defined(__x86_64__) && defined(__linux__)

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "ib/ib.h"

#define FRAGS 64             /* fragments in the message */
#define QPS_MAX 4            /* the largest QP count swept */
#define EFLAGS_TF 0x100ul    /* x86 trap flag: trap after one instruction */
#define MAX_ROUNDS 20000     /* progress() calls one transfer may take */

/* ---- the fake verbs provider ------------------------------------------- */

static uint64_t fake_wrid[FRAGS + WF_IB_SEND_SLOTS];
static unsigned fake_posted, fake_returned; /* SENDs posted / completed */
static struct ibv_qp *fake_qps;             /* QPS_MAX of them */
static unsigned qp_posted[QPS_MAX];         /* SENDs posted per QP */
static int nqp;
static unsigned nrecv;                      /* receive slots per QP */

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                          struct ibv_send_wr **bad)
{
    long qi = qp - fake_qps;

    if (wr->opcode != IBV_WR_SEND || fake_posted >= FRAGS || qi < 0 ||
        qi >= nqp) {
        *bad = wr;
        return EINVAL;
    }
    qp_posted[qi]++;
    fake_wrid[fake_posted++] = wr->wr_id;
    return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    int got = 0;

    (void)cq;
    for (; got < n && fake_returned < fake_posted; got++) {
        memset(&wc[got], 0, sizeof(wc[got]));
        wc[got].wr_id = fake_wrid[fake_returned++];
        wc[got].status = IBV_WC_SUCCESS;
        wc[got].opcode = IBV_WC_SEND;
    }
    return got;
}

static int fake_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
                             void **cq_ctx)
{
    (void)ch, (void)cq, (void)cq_ctx;
    return -1; /* no event: progress() polls the CQ anyway */
}

static int fake_boot_progress(wf_tctx_t *boot)
{
    (void)boot;
    return 0;
}

/* ---- the credit word and the receiver's writes into it ----------------- */

static char *credit_page;
static size_t page_len;
static volatile uint64_t *credit_word; /* one per QP */
static unsigned land_after;      /* the write lands after this idle read */
static volatile unsigned idle_reads, grants;
static volatile int grant_due;   /* 1 + the QP whose word gets the write */

/* What credit_limit() in ib_xfer.c makes of QP `qi`'s word. */
static uint64_t granted(int qi)
{
    return credit_word[qi] > nrecv ? credit_word[qi] : nrecv;
}

static void on_segv(int sig, siginfo_t *si, void *uc_arg)
{
    ucontext_t *uc = uc_arg;
    char *at = si->si_addr;
    int qi = (int)((at - credit_page) / (long)sizeof(uint64_t));

    (void)sig;
    if (at < credit_page || at >= credit_page + page_len || qi >= nqp) {
        signal(SIGSEGV, SIG_DFL); /* a real crash: let it happen */
        return;
    }
    mprotect(credit_page, page_len, PROT_READ | PROT_WRITE);
    /* This QP out of credits with every SEND completed: only a credit
     * write can get it going again. */
    if (qp_posted[qi] >= granted(qi) && fake_returned == fake_posted &&
        ++idle_reads == land_after)
        grant_due = qi + 1;
    uc->uc_mcontext.gregs[REG_EFL] |= EFLAGS_TF;
}

static void on_trap(int sig, siginfo_t *si, void *uc_arg)
{
    ucontext_t *uc = uc_arg;

    (void)sig, (void)si;
    uc->uc_mcontext.gregs[REG_EFL] &= ~EFLAGS_TF;
    if (grant_due) {
        int qi = grant_due - 1;
        credit_word[qi] = granted(qi) + WF_MAX(1u, nrecv / WF_IB_CREDIT_DIV);
        grant_due = 0;
        idle_reads = 0;
        grants++;
    }
    mprotect(credit_page, page_len, PROT_NONE);
}

static void trap_reads(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = on_segv;
    ASSERT_TRUE(sigaction(SIGSEGV, &sa, NULL) == 0);
    sa.sa_sigaction = on_trap;
    ASSERT_TRUE(sigaction(SIGTRAP, &sa, NULL) == 0);
}

/* ---- one transfer ------------------------------------------------------- */

typedef struct {
    struct ibv_context dev;
    struct ibv_qp qp[QPS_MAX];
    struct ibv_cq cq;
    struct ibv_mr mr;
    wf_ibv_t v;
    wf_transport_ops_t boot_ops;
    wf_ib_peer_t peers[2];
    wf_tctx_t ctx;
    uint64_t credit_out[QPS_MAX];
} fake_world_t;

static void world_init(fake_world_t *w, char *staging)
{
    wf_ib_peer_t *p = &w->peers[1];

    memset(w, 0, sizeof(*w));
    w->dev.ops.post_send = fake_post_send;
    w->dev.ops.poll_cq = fake_poll_cq;
    fake_qps = w->qp;
    w->cq.context = &w->dev;
    w->v.get_cq_event = fake_get_cq_event;
    w->boot_ops.progress = fake_boot_progress;
    w->ctx.cfg.rank = 0;
    w->ctx.cfg.size = 2;
    w->ctx.v = &w->v;
    w->ctx.rail[0].cq = &w->cq;
    w->ctx.nrails = 1;
    w->ctx.boot_ops = &w->boot_ops;
    w->ctx.timer_fd = w->ctx.epfd = -1; /* no sleeping here: rounds spin */
    w->ctx.peers = w->peers;
    for (int r = 0; r < 2; r++) {
        w->peers[r].rank = r;
        snprintf(w->peers[r].desc, sizeof(w->peers[r].desc), "peer %d", r);
    }
    wf_ib_match_open(&w->ctx);
    p->state = WF_IB_UP;
    p->nqp = nqp;
    wf_ib_qp_slots(nqp, &p->nrecv, &p->nsend);
    p->credit_batch = WF_MAX(1u, p->nrecv / WF_IB_CREDIT_DIV);
    p->nrails = 1;
    p->b.mr[0] = &w->mr;
    for (int i = 0; i < nqp; i++) {
        w->qp[i].context = &w->dev;
        w->qp[i].qp_num = 0x11 + (uint32_t)i;
        p->qp[i].qp = &w->qp[i];
        p->qp[i].send = staging + (size_t)i * p->nsend * WF_IB_SLOT_LEN;
        p->qp[i].credit_in = &credit_word[i];
        p->qp[i].credit_out = &w->credit_out[i];
    }
}

/* Sends FRAGS fragments to peer 1 over `qps` QPs with the credit write
 * landing after the `n`th idle read of each episode; fails the test if the
 * send gets stuck. */
static void transfer(int qps, unsigned n, char *staging, char *msg,
                     size_t len)
{
    unsigned nsend;

    fake_world_t w;
    wf_treq_t *req = NULL;
    wf_treq_info_t info;
    weft_status_t st = WEFT_INPROGRESS;
    int rounds = 0;

    nqp = qps;
    wf_ib_qp_slots(nqp, &nrecv, &nsend);
    fake_posted = fake_returned = 0;
    memset(qp_posted, 0, sizeof(qp_posted));
    idle_reads = grants = 0;
    grant_due = 0;
    land_after = n;
    mprotect(credit_page, page_len, PROT_READ | PROT_WRITE);
    for (int i = 0; i < nqp; i++)
        credit_word[i] = nrecv; /* the receives posted at connect */
    mprotect(credit_page, page_len, PROT_NONE);
    world_init(&w, staging);
    ASSERT_OK(wf_ib_isend(&w.ctx, 1, 7, NULL, msg, len, NULL, &req));
    while (st == WEFT_INPROGRESS && rounds++ < MAX_ROUNDS) {
        ASSERT_TRUE(wf_ib_progress(&w.ctx) >= 0);
        st = wf_match_test(&w.ctx, req, &info);
    }
    if (st == WEFT_INPROGRESS)
        wf_test_fail(__FILE__, __LINE__,
                     "%d QPs, credit write after idle read %u: the send "
                     "is stuck after %d progress rounds with %u of %d "
                     "fragments posted, %u in flight, %u credits of QP 1 "
                     "granted and %s waiting for credits",
                     nqp, n, MAX_ROUNDS, fake_posted, FRAGS,
                     fake_posted - fake_returned, (unsigned)granted(0),
                     w.peers[1].stalled ? "" : "not");
    ASSERT_OK(st);
    ASSERT_EQ(info.len, len);
    ASSERT_EQ(fake_posted, FRAGS);
    ASSERT_TRUE(grants > 0);
    wf_ib_xfer_free_all(&w.ctx);
}

WF_TEST(transport_ib_credit_write_between_reads, 60)
{
    /* 64 fragments: each starts with a fragment header, the first also
     * with the message header. */
    size_t len = (size_t)FRAGS * (WF_IB_SLOT_LEN - WF_IB_FRAG_LEN) -
                 WF_IB_HDR_LEN;
    char *staging = calloc((size_t)QPS_MAX * WF_IB_SEND_SLOTS, WF_IB_SLOT_LEN);
    char *msg = calloc(1, len);

    ASSERT_TRUE(staging && msg);
    page_len = (size_t)sysconf(_SC_PAGESIZE);
    credit_page = mmap(NULL, page_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(credit_page != MAP_FAILED);
    credit_word = (volatile uint64_t *)credit_page;
    trap_reads();
    for (int qps = 1; qps <= QPS_MAX; qps *= 2)
        for (unsigned n = 1; n <= 40; n++)
            transfer(qps, n, staging, msg, len);
    munmap(credit_page, page_len);
    free(staging);
    free(msg);
}

#else

WF_TEST(transport_ib_credit_write_between_reads, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev) on "
            "x86-64 Linux (the test single-steps the credit word's reads)");
}

#endif
