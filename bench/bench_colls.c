/*
 * bench_colls.c - allreduce and the point-to-point measurements of
 * weft-bench (sendrecv in its three modes, latency), each with an
 * independent element-wise check, and the table of every collective.
 */
#include <string.h>

#include "bench.h"

#define NO_OP WEFT_OP_COUNT /* copy pattern: see bench_pattern */
#define MAX_WINDOW 1024

double bench_factor_one(const bench_ctx_t *c)
{
    (void)c;
    return 1.0;
}

double bench_factor_n1n(const bench_ctx_t *c)
{
    return (double)(c->size - 1) / c->size;
}

/* ---- allreduce ---------------------------------------------------------- */

static double allreduce_factor(const bench_ctx_t *c)
{
    return 2.0 * (c->size - 1) / c->size;
}

static weft_status_t allreduce_run(const bench_ctx_t *c, void *send,
                                   void *recv, size_t count)
{
    return weft_allreduce(send, recv, count, c->o->dtype, c->o->op, c->comm);
}

static void allreduce_fill(const bench_ctx_t *c, void *send, size_t count)
{
    bench_fill_pattern(c, send, count, c->rank, 0, c->o->op);
}

static size_t allreduce_check(const bench_ctx_t *c, const void *recv,
                              size_t count)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++)
        if (bench_get(recv, c->o->dtype, i) != bench_reduce_expect(c, i))
            wrong++;
    return wrong;
}

/* ---- sendrecv ------------------------------------------------------------ */

/* Waits for and releases n requests; returns the first failure. */
static weft_status_t wait_all(weft_request_t *reqs, int n)
{
    weft_status_t first = WEFT_OK;
    for (int i = 0; i < n; i++) {
        weft_status_t st = weft_wait(reqs[i]);
        if (first == WEFT_OK)
            first = st;
        weft_request_free(reqs[i]);
    }
    return first;
}

/* nccl-tests' sendrecv: a ring shift, each rank sends to rank+1 and
 * receives from rank-1 at the same time. */
static weft_status_t ring_run(const bench_ctx_t *c, void *send, void *recv,
                              size_t count)
{
    weft_request_t r[2];
    int right = (c->rank + 1) % c->size;
    int left = (c->rank + c->size - 1) % c->size;
    weft_status_t st = weft_irecv(recv, count, c->o->dtype, left, c->comm,
                                  &r[0]);
    if (st != WEFT_OK)
        return st;
    st = weft_isend(send, count, c->o->dtype, right, c->comm, &r[1]);
    if (st != WEFT_OK) {
        wait_all(r, 1);
        return st;
    }
    return wait_all(r, 2);
}

/* Posts `window` receives (recv != NULL) and/or sends of one buffer to or
 * from `peer`, then waits for all of them (osu_bw / osu_bibw). */
static weft_status_t window_run(const bench_ctx_t *c, void *send, void *recv,
                                size_t count, int peer)
{
    static weft_request_t reqs[2 * MAX_WINDOW];
    int n = 0;
    weft_status_t st = WEFT_OK;
    for (int i = 0; recv && i < c->o->window && st == WEFT_OK; i++)
        if ((st = weft_irecv(recv, count, c->o->dtype, peer, c->comm,
                             &reqs[n])) == WEFT_OK)
            n++;
    for (int i = 0; send && i < c->o->window && st == WEFT_OK; i++)
        if ((st = weft_isend(send, count, c->o->dtype, peer, c->comm,
                             &reqs[n])) == WEFT_OK)
            n++;
    weft_status_t w = wait_all(reqs, n);
    return st != WEFT_OK ? st : w;
}

static weft_status_t sendrecv_run(const bench_ctx_t *c, void *send,
                                  void *recv, size_t count)
{
    static int32_t ack;
    weft_status_t st;
    if (c->o->p2p == BENCH_P2P_RING)
        return ring_run(c, send, recv, count);
    if (c->rank > 1)
        return WEFT_OK; /* only ranks 0 and 1 take part */
    if (c->o->p2p == BENCH_P2P_BIDIR)
        return window_run(c, send, recv, count, 1 - c->rank);
    /* One direction; the receiver's acknowledgement closes the window so
     * the sender's clock covers the delivery of all of it. */
    if (c->rank == 0) {
        st = window_run(c, send, NULL, count, 1);
        return st != WEFT_OK ? st
                             : weft_recv(&ack, 1, WEFT_INT32, 1, c->comm);
    }
    st = window_run(c, NULL, recv, count, 0);
    return st != WEFT_OK ? st : weft_send(&ack, 1, WEFT_INT32, 0, c->comm);
}

static void copy_fill(const bench_ctx_t *c, void *send, size_t count)
{
    bench_fill_pattern(c, send, count, c->rank, 0, NO_OP);
}

/* The rank whose data this rank should have received, or -1. */
static int p2p_source(const bench_ctx_t *c)
{
    if (c->o->p2p == BENCH_P2P_RING)
        return (c->rank + c->size - 1) % c->size;
    if (c->rank > 1 || (c->o->p2p == BENCH_P2P_UNIDIR && c->rank == 0))
        return -1;
    return 1 - c->rank;
}

static size_t sendrecv_check(const bench_ctx_t *c, const void *recv,
                             size_t count)
{
    int src = p2p_source(c);
    return src < 0 ? 0 : bench_count_wrong(c, recv, count, src, 0, NO_OP);
}

static double sendrecv_factor(const bench_ctx_t *c)
{
    return c->o->p2p == BENCH_P2P_BIDIR ? 2.0 : 1.0; /* both directions */
}

static double sendrecv_msgs(const bench_ctx_t *c)
{
    return c->o->p2p == BENCH_P2P_RING ? 1.0 : (double)c->o->window;
}

/* ---- latency: ping-pong between ranks 0 and 1 (osu_latency) ------------- */

static weft_status_t latency_run(const bench_ctx_t *c, void *send, void *recv,
                                 size_t count)
{
    weft_status_t st;
    weft_dtype_t d = c->o->dtype;
    if (c->rank == 0) {
        st = weft_send(send, count, d, 1, c->comm);
        return st != WEFT_OK ? st : weft_recv(recv, count, d, 1, c->comm);
    }
    if (c->rank == 1) {
        st = weft_recv(recv, count, d, 0, c->comm);
        return st != WEFT_OK ? st : weft_send(send, count, d, 0, c->comm);
    }
    return WEFT_OK;
}

static size_t latency_check(const bench_ctx_t *c, const void *recv,
                            size_t count)
{
    if (c->rank > 1)
        return 0;
    return bench_count_wrong(c, recv, count, 1 - c->rank, 0, NO_OP);
}

/* One iteration is a round trip: the one-way latency is half of it. */
static double latency_msgs(const bench_ctx_t *c)
{
    (void)c;
    return 2.0;
}

static const bench_coll_t colls[] = {
    {.name = "allreduce", .bus_factor = allreduce_factor, .min_ranks = 1,
     .has_in_place = true, .reduces = true, .run = allreduce_run,
     .fill = allreduce_fill, .check = allreduce_check},
    {.name = "sendrecv", .bus_factor = sendrecv_factor, .min_ranks = 2,
     .msgs_per_iter = sendrecv_msgs, .run = sendrecv_run, .fill = copy_fill,
     .check = sendrecv_check},
    {.name = "latency", .bus_factor = bench_factor_one, .min_ranks = 2,
     .msgs_per_iter = latency_msgs, .run = latency_run, .fill = copy_fill,
     .check = latency_check},
};

const bench_coll_t *bench_coll_find(const char *name)
{
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (strcmp(colls[i].name, name) == 0)
            return &colls[i];
    return bench_colls2_find(name);
}

const char *bench_coll_names(void)
{
    return "allreduce broadcast reduce allgather reducescatter alltoall "
           "gather scatter barrier sendrecv latency";
}
