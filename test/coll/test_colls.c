/*
 * test_colls.c - every registered algorithm of every collective through the
 * public API, over the real TCP transport: ranks as threads (world sizes
 * 1,2,3,4,5,7,8,13,16) and as processes over weft-rendezvous, edge counts,
 * dtype x op combinations, roots, in place and out of place, an odd
 * multi-MB count; results checked element-wise against serial references
 * (test/harness/coll_util.h).  Then the same cases with the library's own
 * choice, which for small calls among ranks of one machine is the shared
 * segment (src/node/), its slots cut to 4 KiB (WEFT_NODE_COLL_MAX) so that
 * counts up to 1000 floats fit and 1025 do not; allreduce, reduce and
 * allgather of 1000 floats fit only up to 4 ranks (its bound on what each
 * rank reads), and go by messages beyond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "coll_util.h"
#include "dev_fake.h"
#include "test.h"
#include "weft_cuda.h"

#define CHUNK 4096

static const struct {
    weft_dtype_t d;
    weft_op_t op;
} combos[] = {
    {WEFT_FLOAT32, WEFT_SUM}, {WEFT_FLOAT32, WEFT_PROD},
    {WEFT_FLOAT32, WEFT_MIN}, {WEFT_FLOAT32, WEFT_MAX},
    {WEFT_FLOAT32, WEFT_AVG}, {WEFT_INT8, WEFT_SUM},
    {WEFT_BFLOAT16, WEFT_AVG}, {WEFT_INT64, WEFT_MAX},
    {WEFT_UINT32, WEFT_PROD}, {WEFT_FLOAT16, WEFT_SUM},
};

static bool is_rooted(wf_coll_t c)
{
    return c == WF_COLL_BROADCAST || c == WF_COLL_REDUCE ||
           c == WF_COLL_GATHER || c == WF_COLL_SCATTER;
}

static weft_status_t call(weft_comm_t comm, wf_coll_t coll, const void *s,
                          void *r, size_t n, weft_dtype_t d, weft_op_t op,
                          int root)
{
    switch (coll) {
    case WF_COLL_ALLREDUCE: return weft_allreduce(s, r, n, d, op, comm);
    case WF_COLL_BROADCAST: return weft_broadcast(s, r, n, d, root, comm);
    case WF_COLL_REDUCE: return weft_reduce(s, r, n, d, op, root, comm);
    case WF_COLL_ALLGATHER: return weft_allgather(s, r, n, d, comm);
    case WF_COLL_REDUCE_SCATTER:
        return weft_reduce_scatter(s, r, n, d, op, comm);
    case WF_COLL_ALLTOALL: return weft_alltoall(s, r, n, d, comm);
    case WF_COLL_BARRIER: return weft_barrier(comm);
    case WF_COLL_GATHER: return weft_gather(s, r, n, d, root, comm);
    case WF_COLL_SCATTER: return weft_scatter(s, r, n, d, root, comm);
    default: return WEFT_ERR_INTERNAL;
    }
}

typedef struct {
    char *base, *send, *recv;
    uint64_t sb, rb;
    char *dev;     /* the same layout in (fake) device memory, or NULL */
    size_t bytes;  /* of base and dev */
} bufs_t;

/* The buffer the call gets: in device memory when the test runs there. */
static char *call_ptr(const bufs_t *b, char *host)
{
    return host && b->dev ? b->dev + (host - b->base) : host;
}

/* Buffers as weft.h lays them out (in place aliases), NULL where the rank
 * does not use one, input filled. */
static void layout(bufs_t *b, wf_coll_t coll, int rank, int size, size_t n,
                   weft_dtype_t d, weft_op_t op, int root, bool in_place,
                   bool device)
{
    wf_coll_args_t a = {.coll = coll, .count = n, .dtype = d, .op = op,
                        .elem_size = cu_dtype_size(d), .root = root,
                        .rank = rank, .size = size};
    wf_coll_buffer_bytes(&a, &b->sb, &b->rb);
    uint64_t block = n * a.elem_size;
    b->bytes = (b->sb + b->rb + 127) / 64 * 64;
    b->base = aligned_alloc(64, b->bytes);
    memset(b->base, 0x5a, b->sb + b->rb + 64);
    b->send = b->base;
    b->recv = b->base + (b->sb + 63) / 64 * 64;
    bool rooted_alias = coll == WF_COLL_GATHER || coll == WF_COLL_SCATTER;
    if (in_place && (!rooted_alias || rank == root)) {
        uint64_t own = (uint64_t)(rooted_alias ? root : rank) * block;
        if (coll == WF_COLL_ALLGATHER || coll == WF_COLL_GATHER)
            b->recv = b->base, b->send = b->base + own;
        else if (coll == WF_COLL_REDUCE_SCATTER || coll == WF_COLL_SCATTER)
            b->recv = b->base + own;
        else
            b->recv = b->base;
    }
    cu_fill(b->send, b->sb / a.elem_size, rank, cu_pattern_op(coll, op), d);
    if (!b->sb && !in_place)
        b->send = NULL;
    if (!b->rb && !in_place)
        b->recv = NULL;
    b->dev = device ? wf_fake_dev_alloc(b->bytes) : NULL;
    if (b->dev)
        wf_fake_dev_write(b->dev, b->base, b->bytes);
}

static void run_case(weft_comm_t comm, const wf_algo_t *algo, int rank,
                     int size, size_t n, weft_dtype_t d, weft_op_t op,
                     int root, bool in_place, bool device)
{
    bufs_t b;
    wf_coll_t coll = algo->coll;
    layout(&b, coll, rank, size, n, d, op, root, in_place, device);
    weft_status_t st = call(comm, coll, call_ptr(&b, b.send),
                            call_ptr(&b, b.recv), n, d, op, root);
    if (b.dev) { /* read the result back from the device */
        wf_fake_dev_read(b.base, b.dev, b.bytes);
        wf_fake_dev_free(b.dev);
    }
    char what[240];
    cu_case_name(what, sizeof(what), coll, algo->name, rank, size, d, op, n,
                 root, in_place);
    if (device)
        strncat(what, ", device buffers", sizeof(what) - strlen(what) - 1);
    if (st != WEFT_OK) {
        const char *msg = NULL;
        weft_comm_get_error(comm, &msg);
        wf_test_fail(__FILE__, __LINE__, "%s: %s (%s)", what,
                     weft_strerror(st), msg ? msg : "");
    }
    size_t wrong = cu_check_coll(coll, size, n, d, op, root, rank, b.recv,
                                 b.rb / cu_dtype_size(d), what);
    if (wrong)
        wf_test_fail(__FILE__, __LINE__, "%s: %zu wrong", what, wrong);
    free(b.base);
}

/* The cases one algorithm runs at one world size. */
static void algo_cases(weft_comm_t comm, const wf_algo_t *algo, int rank,
                       int size, bool big, bool device)
{
    bool reduces = wf_coll_reduces(algo->coll);
    size_t ce = CHUNK / 4;
    size_t counts[] = {0, 1, (size_t)size - 1, 1000, ce + 1};
    size_t big_world[] = {1, 1000}; /* fewer cases on 13 and 16 ranks */
    size_t *cs = size > 8 ? big_world : counts;
    size_t ncounts = size > 8 ? 2 : sizeof(counts) / sizeof(*counts);
    size_t ncombos = size > 8 ? 2 : sizeof(combos) / sizeof(*combos);
    /* Every root up to 5 ranks, the first and the last beyond. */
    int roots[5] = {0, size - 1, 1, 2, 3};
    int nroots = !is_rooted(algo->coll) || size == 1 ? 1
                 : size <= 5                       ? size
                                                   : 2;
    if (size <= 5)
        for (int k = 0; k < size; k++)
            roots[k] = k;
    if (algo->coll == WF_COLL_BARRIER) {
        for (int i = 0; i < 3; i++) {
            weft_status_t st = weft_barrier(comm);
            if (st != WEFT_OK)
                wf_test_fail(__FILE__, __LINE__, "barrier %d of 3 with "
                             "algorithm %s on %d ranks (rank %d): %s", i + 1,
                             algo->name, size, rank, weft_strerror(st));
        }
        return;
    }
    for (size_t k = 0; k < ncounts; k++)
        for (size_t c = 0; c < ncombos; c++) {
            if (!reduces && combos[c].op != WEFT_SUM)
                continue; /* the op does not matter */
            for (int r = 0; r < nroots; r++)
                for (int ip = 0; ip < 2; ip++)
                    run_case(comm, algo, rank, size, cs[k], combos[c].d,
                             combos[c].op, roots[r], ip, device);
        }
    if (big) { /* an odd multi-MB total */
        size_t per = ((3u << 20) / 2 + 7) /
                     (algo->coll == WF_COLL_ALLGATHER ||
                      algo->coll == WF_COLL_REDUCE_SCATTER ||
                      algo->coll == WF_COLL_ALLTOALL ||
                      algo->coll == WF_COLL_GATHER ||
                      algo->coll == WF_COLL_SCATTER ? (size_t)size : 1);
        run_case(comm, algo, rank, size, per | 1, WEFT_FLOAT32, WEFT_SUM,
                 size - 1, false, device);
        run_case(comm, algo, rank, size, per | 1, WEFT_INT8, WEFT_MAX, 0,
                 true, device);
    }
}

typedef struct {
    const char *job;
    const char *rdv; /* NULL: mem store */
    bool big;
    bool device; /* buffers in the fake layer's device memory */
    const char *extra; /* more config overrides, or NULL */
} colls_arg_t;

/* The shared segment's collectives, as pseudo-algorithms: no WEFT_ALGO. */
static const wf_algo_t node_algos[] = {
    {.name = "auto", .coll = WF_COLL_ALLREDUCE},
    {.name = "auto", .coll = WF_COLL_BROADCAST},
    {.name = "auto", .coll = WF_COLL_REDUCE},
    {.name = "auto", .coll = WF_COLL_ALLGATHER},
    {.name = "auto", .coll = WF_COLL_BARRIER},
};

static void colls_rank(int rank, int size, void *p)
{
    const colls_arg_t *a = p;
    size_t n, nnode = sizeof(node_algos) / sizeof(*node_algos);
    const wf_algo_t *const *reg = wf_algo_registry(&n);
    for (size_t i = 0; i < n + nnode; i++) {
        const wf_algo_t *algo = i < n ? reg[i] : &node_algos[i - n];
        /* Point-to-point and the vector collectives, with their per-rank
         * counts, have tests of their own (test_sendrecv.c, test_vcolls.c). */
        if (algo->coll == WF_COLL_SEND || algo->coll == WF_COLL_RECV ||
            wf_coll_is_vector(algo->coll))
            continue;
        /* The node-aware algorithms on made-up machines: 3 + 1 on 4 ranks,
         * 2 + 2 + 1 on 5, elsewhere two with the larger half first (2 + 1,
         * 4 + 3, ...); below 3 ranks no machine would have two. */
        bool hier = strcmp(algo->name, "hier") == 0;
        if (hier && size < 3)
            continue;
        char node_id[64] = "";
        if (hier)
            snprintf(node_id, sizeof(node_id), ",WEFT_NODE_ID=machine%d",
                     size == 4 ? rank / 3
                     : size == 5 ? rank / 2
                                 : (rank < (size + 1) / 2 ? 0 : 1));
        char cfg[384], job[256], uri[300];
        snprintf(cfg, sizeof(cfg), "WEFT_ALGO=%s:%s,WEFT_CHUNK_SIZE=%d,"
                 "WEFT_TIMEOUT=60s,WEFT_SOCKET_IFNAME=lo%s%s%s",
                 wf_coll_name(algo->coll), algo->name, CHUNK, node_id,
                 a->extra ? "," : "", a->extra ? a->extra : "");
        if (i >= n)
            snprintf(cfg, sizeof(cfg), "WEFT_CHUNK_SIZE=%d,WEFT_TIMEOUT=60s,"
                     "WEFT_NODE_COLL_MAX=%d,WEFT_SOCKET_IFNAME=lo%s%s", CHUNK,
                     CHUNK, a->extra ? "," : "",
                     a->extra ? a->extra : "");
        snprintf(job, sizeof(job), "%s-%zu", a->job, i);
        snprintf(uri, sizeof(uri), "mem://%s", job);
        weft_comm_params_t prm = {
            .field_mask = WEFT_COMM_PARAM_RANK | WEFT_COMM_PARAM_SIZE |
                          WEFT_COMM_PARAM_RENDEZVOUS | WEFT_COMM_PARAM_JOB_ID |
                          WEFT_COMM_PARAM_CONFIG,
            .rank = rank, .size = size, .rendezvous = a->rdv ? a->rdv : uri,
            .job_id = job, .config = cfg};
        weft_comm_t comm;
        weft_status_t st = weft_comm_create(&prm, &comm);
        if (st != WEFT_OK)
            wf_test_fail(__FILE__, __LINE__, "communicator for %s with "
                         "algorithm %s on %d ranks (rank %d): %s",
                         wf_coll_name(algo->coll), algo->name, size, rank,
                         weft_strerror(st));
        algo_cases(comm, algo, rank, size, a->big, a->device);
        ASSERT_OK(weft_comm_destroy(comm));
    }
}

static void threads(int size, bool big)
{
    colls_arg_t a = {wf_test_unique("colls"), NULL, big, false, NULL};
    wf_test_run_threads(size, colls_rank, &a);
}

/* Every algorithm over 4 TCP streams with a 1 KiB stripe threshold:
 * chunk-sized messages (chunk +-1 elements) are cut into pieces on four
 * connections and put back together; over two loopback addresses too. */
static void streams(int size, const char *extra)
{
    colls_arg_t a = {wf_test_unique("collss"), NULL, false, false, extra};
    wf_test_run_threads(size, colls_rank, &a);
}

/* The same matrix with every buffer in device memory of the fake device
 * layer (test/harness/dev_fake.c): staging through pinned buffers,
 * reductions and copies on the "device", events polled by the engine.
 * Fake device memory is scrambled, so a host touch of it shows as wrong
 * elements. */
static void fake_device_threads(int size, bool big)
{
    wf_dev_use_fake(true);
    colls_arg_t a = {wf_test_unique("collsd"), NULL, big, true, NULL};
    wf_test_run_threads(size, colls_rank, &a);
}

static void procs(int size)
{
    char addr[128];
    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    colls_arg_t a = {wf_test_unique("collsp"), addr, false, false, NULL};
    wf_test_run_procs(size, colls_rank, &a);
    wf_test_stop_process(pid);
}

WF_TEST(coll_matrix_threads_n1, 120) { threads(1, false); }
WF_TEST(coll_matrix_threads_n2, 300) { threads(2, false); }
WF_TEST(coll_matrix_threads_n3, 300) { threads(3, false); }
WF_TEST(coll_matrix_threads_n4, 300) { threads(4, true); }
WF_TEST(coll_matrix_threads_n5, 300) { threads(5, false); }
WF_TEST(coll_matrix_threads_n7, 300) { threads(7, false); }
WF_TEST(coll_matrix_threads_n8, 300) { threads(8, false); }
WF_TEST(coll_matrix_threads_n13, 300) { threads(13, false); }
WF_TEST(coll_matrix_threads_n16, 300) { threads(16, false); }
WF_TEST(coll_matrix_fake_device_n2, 300) { fake_device_threads(2, false); }
#define WF_STREAMS4 "WEFT_TCP_STREAMS=4,WEFT_TCP_STRIPE_MIN=1k"
WF_TEST(coll_matrix_tcp_streams4_n2, 300) { streams(2, WF_STREAMS4); }
WF_TEST(coll_matrix_tcp_streams4_n4, 300) { streams(4, WF_STREAMS4); }
WF_TEST(coll_matrix_tcp_streams2_two_addrs_n3, 300)
{
    streams(3, "WEFT_TCP_STREAMS=2,WEFT_TCP_STRIPE_MIN=1k,"
               "WEFT_SOCKET_IFNAME=127.0.0.1,127.0.0.2");
}
WF_TEST(coll_matrix_fake_device_n3, 300) { fake_device_threads(3, false); }
WF_TEST(coll_matrix_fake_device_n4, 300) { fake_device_threads(4, false); }
WF_TEST(coll_matrix_procs_n3, 300) { procs(3); }
WF_TEST(coll_matrix_procs_n4, 300) { procs(4); }
