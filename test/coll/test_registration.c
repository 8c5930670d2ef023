/*
 * test_registration.c - the engine registers an operation's buffers with
 * a transport that asks for it (wf_tdev_attr_t.reg_min) and hands the
 * handles to every transfer on them (sched/reg.c).
 *
 * Each rank's engine runs over TCP behind a recording copy of its ops
 * table: mem_reg and mem_dereg are counted and checked, and every
 * isend/irecv records whether it came with a handle whose range holds
 * it.  TCP itself ignores the handles, so the collectives still run for
 * real and their results are checked.  Over verbs, the zero-copy path
 * takes these registrations (make test-rdma runs the collectives with
 * WEFT_IB_ZCOPY_MIN set).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll_util.h"
#include "comm.h"
#include "sched/engine_impl.h"
#include "test.h"

#define REG_MIN (64 * 1024)
#define MAX_REGS 16

typedef struct {
    const char *base;
    size_t len;
    bool live;
} reg_t;

/* What one rank's transport saw (under its engine's progress lock). */
typedef struct {
    wf_tctx_t *tctx;
    reg_t regs[MAX_REGS];
    int nregs, nderegs;
    int big_with_handle, big_without_handle, small_with_handle;
    int handle_outside; /* a transfer given a handle that does not hold it */
} record_t;

static record_t records[2];
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;

static record_t *record_of(wf_tctx_t *ctx)
{
    for (int i = 0; i < 2; i++)
        if (records[i].tctx == ctx)
            return &records[i];
    return NULL;
}

static weft_status_t rec_mem_reg(wf_tctx_t *ctx, void *buf, size_t len,
                                 int memtype, void **mh)
{
    record_t *r = record_of(ctx);
    ASSERT_TRUE(r && r->nregs < MAX_REGS && memtype == WF_MEM_HOST);
    r->regs[r->nregs] = (reg_t){buf, len, true};
    *mh = &r->regs[r->nregs++];
    return WEFT_OK;
}

static void rec_mem_dereg(wf_tctx_t *ctx, void *mh)
{
    record_t *r = record_of(ctx);
    reg_t *g = mh;
    ASSERT_TRUE(r && g >= r->regs && g < r->regs + r->nregs && g->live);
    g->live = false;
    r->nderegs++;
}

static void note_transfer(wf_tctx_t *ctx, const void *buf, size_t len,
                          void *mh)
{
    record_t *r = record_of(ctx);
    const reg_t *g = mh;
    ASSERT_TRUE(r != NULL);
    if (!g) {
        r->big_without_handle += len >= REG_MIN;
        return;
    }
    if (len >= REG_MIN)
        r->big_with_handle++;
    else
        r->small_with_handle++;
    const char *p = buf;
    if (!g->live || p < g->base || p + len > g->base + g->len)
        r->handle_outside++;
}

static weft_status_t rec_isend(wf_tctx_t *ctx, int peer, uint64_t tag,
                               const uint64_t sig[2], const void *buf,
                               size_t len, void *mh, wf_treq_t **req)
{
    note_transfer(ctx, buf, len, mh);
    return wf_tcp_transport.isend(ctx, peer, tag, sig, buf, len, NULL, req);
}

static weft_status_t rec_irecv(wf_tctx_t *ctx, int peer, uint64_t tag,
                               void *buf, size_t cap, void *mh,
                               wf_treq_t **req)
{
    note_transfer(ctx, buf, cap, mh);
    return wf_tcp_transport.irecv(ctx, peer, tag, buf, cap, NULL, req);
}

static wf_transport_ops_t recording_ops;

static void install_recorder(weft_comm_t comm, int rank, size_t reg_min)
{
    wf_engine_t *e = comm->impl->engine;
    pthread_mutex_lock(&records_lock);
    recording_ops = wf_tcp_transport;
    recording_ops.mem_reg = rec_mem_reg;
    recording_ops.mem_dereg = rec_mem_dereg;
    recording_ops.isend = rec_isend;
    recording_ops.irecv = rec_irecv;
    pthread_mutex_unlock(&records_lock);
    pthread_mutex_lock(&e->progress_lock);
    ASSERT_TRUE(e->tops == &wf_tcp_transport);
    records[rank] = (record_t){.tctx = e->tctx};
    e->tops = &recording_ops;
    e->reg_min = reg_min;
    pthread_mutex_unlock(&e->progress_lock);
}

/* A snapshot of the rank's record, taken under its engine's lock. */
static record_t snapshot(weft_comm_t comm, int rank)
{
    wf_engine_t *e = comm->impl->engine;
    pthread_mutex_lock(&e->progress_lock);
    record_t r = records[rank];
    pthread_mutex_unlock(&e->progress_lock);
    return r;
}

/* An in-place allreduce of n floats, checked against every rank's
 * pattern (coll_util.h). */
static void allreduce_checked(weft_comm_t comm, int rank, int size, size_t n)
{
    float *v = malloc(n * sizeof(float));
    ASSERT_TRUE(v != NULL);
    cu_fill(v, n, rank, WEFT_SUM, WEFT_FLOAT32);
    ASSERT_OK(weft_allreduce(v, v, n, WEFT_FLOAT32, WEFT_SUM, comm));
    ASSERT_EQ(cu_check_allreduce(v, n, size, WEFT_SUM, WEFT_FLOAT32,
                                 "allreduce"), 0);
    free(v);
}

typedef struct {
    const char *name;
    size_t reg_min;
} reg_case_t;

static void registration_rank(int rank, int size, void *arg)
{
    const reg_case_t *c = arg;
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem(c->name, rank, size,
                               "WEFT_TRANSPORT=tcp,WEFT_ALGO=allreduce:ring,"
                               "WEFT_CHUNK_SIZE=256k,WEFT_TCP_CMA_MIN=0",
                               &comm));
    install_recorder(comm, rank, c->reg_min);

    /* Small messages only: nothing to register. */
    allreduce_checked(comm, rank, size, 1024);
    record_t r = snapshot(comm, rank);
    ASSERT_EQ(r.nregs, 0);
    ASSERT_EQ(r.small_with_handle, 0);

    /* 4 MiB in 256 KiB chunks: the buffer is registered once for the
     * operation (send and receive buffer, the same memory in place, and
     * the ring's scratch), whatever the number of chunks, and released
     * when it ends. */
    allreduce_checked(comm, rank, size, 1 << 20);
    r = snapshot(comm, rank);
    if (c->reg_min == 0) {
        ASSERT_EQ(r.nregs, 0);
        ASSERT_EQ(r.big_with_handle, 0);
    } else {
        ASSERT_TRUE(r.nregs >= 1 && r.nregs <= 3);
        ASSERT_EQ(r.nderegs, r.nregs);
        ASSERT_TRUE(r.big_with_handle >= 8);
        ASSERT_EQ(r.big_without_handle, 0);
        ASSERT_EQ(r.handle_outside, 0);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

WF_TEST(coll_registration_once_per_operation, 60)
{
    reg_case_t c = {wf_test_unique("coll-reg"), REG_MIN};
    wf_test_run_threads(2, registration_rank, &c);
}

/* A transport that asks for nothing (reg_min 0, as TCP) is asked to
 * register nothing. */
WF_TEST(coll_registration_none_when_not_asked, 60)
{
    reg_case_t c = {wf_test_unique("coll-noreg"), 0};
    wf_test_run_threads(2, registration_rank, &c);
}

#ifdef WF_HAVE_IB
#include "ib/ib.h"

/* Registrations the verbs context made itself, not found in its cache. */
static uint64_t verbs_regs_made(weft_comm_t comm)
{
    wf_engine_t *e = comm->impl->engine;
    pthread_mutex_lock(&e->progress_lock);
    uint64_t made = ((struct wf_tctx *)e->tctx)->mrc.made;
    pthread_mutex_unlock(&e->progress_lock);
    return made;
}

/* Registrations verbs makes for one 4 MiB allreduce in 256 KiB chunks,
 * with the engine registering the operation's buffers or not. */
static uint64_t verbs_allreduce_regs(weft_comm_t comm, int rank, int size,
                                     bool engine_registers)
{
    wf_engine_t *e = comm->impl->engine;
    pthread_mutex_lock(&e->progress_lock);
    e->reg_min = engine_registers ? REG_MIN : 0;
    pthread_mutex_unlock(&e->progress_lock);
    uint64_t before = verbs_regs_made(comm);
    allreduce_checked(comm, rank, size, 1 << 20);
    return verbs_regs_made(comm) - before;
}

static void verbs_rank(int rank, int size, void *arg)
{
    weft_comm_t comm;
    ASSERT_OK(wf_test_comm_mem((const char *)arg, rank, size,
                               "WEFT_TRANSPORT=ib,WEFT_IB_ZCOPY_MIN=64k,"
                               "WEFT_ALGO=allreduce:ring,WEFT_CHUNK_SIZE=256k",
                               &comm));
    ASSERT_EQ(comm->impl->engine->reg_min, REG_MIN);
    allreduce_checked(comm, rank, size, 1 << 20); /* connections, first use */
    /* On 2 ranks each rank sends 16 chunks by zero copy, each pinning a
     * registration of its own unless it is given the operation's.  A
     * chunk that arrives before its receive is pulled into a buffer of
     * the transport's, registered either way, so only the sends are
     * certain: with the engine's registrations at least those 16 fewer,
     * less the engine's own (send, receive, scratch). */
    for (int round = 0; round < 3; round++) {
        uint64_t without = verbs_allreduce_regs(comm, rank, size, false);
        uint64_t with = verbs_allreduce_regs(comm, rank, size, true);
        if (without < 16 || with + 16 > without + 3)
            wf_test_fail(__FILE__, __LINE__, "rank %d: %llu registrations "
                         "for one allreduce with the engine's, %llu "
                         "without", rank, (unsigned long long)with,
                         (unsigned long long)without);
    }
    ASSERT_OK(weft_comm_destroy(comm));
}

/* On a real verbs device (make test-rdma's Soft-RoCE guest). */
WF_TEST(coll_registration_over_verbs, 120)
{
    char why[256];
    if (!wf_ib_probe(why, sizeof(why)))
        WF_SKIP("no usable RDMA device (%s): make test-rdma runs this", why);
    wf_test_run_threads(2, verbs_rank, (void *)wf_test_unique("coll-regib"));
}
#endif
