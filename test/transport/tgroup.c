/*
 * tgroup.c - helpers of the transport tests: a group of 2-4 contexts of one
 * transport in this process, address blobs exchanged in memory, waits that
 * drive progress() of every context and fail the test at a deadline, and a
 * logger that keeps the lines for assertions.
 */
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "route.h"
#include "tgroup.h"

uint64_t tg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- captured log lines ------------------------------------------------ */

static char tg_log_buf[16384];
static size_t tg_log_len;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

void tg_log_capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    fprintf(stderr, "%s\n", line);
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(line);
    if (tg_log_len + n + 2 < sizeof(tg_log_buf)) {
        memcpy(tg_log_buf + tg_log_len, line, n);
        tg_log_len += n;
        tg_log_buf[tg_log_len++] = '\n';
        tg_log_buf[tg_log_len] = '\0';
    }
    pthread_mutex_unlock(&log_mu);
}

/* ---- groups of contexts ------------------------------------------------ */

const uint8_t tg_secret[32] = "tgroup test secret, 32 bytes...";

int tg_tcp_streams = 1;
size_t tg_tcp_cma_min;
size_t tg_shm_cma_min = 32u << 10;
int tg_shm_slots = 64;

/* The snapshot each rank's cfg.knobs points at. */
static wf_config_t tg_knob_store[TG_MAXR];

wf_config_t *tg_knobs(wf_tconfig_t *cfg)
{
    return (wf_config_t *)cfg->knobs;
}

void tg_make_cfg(wf_tconfig_t *cfg, int rank, int size, const char *ifname,
                 int64_t timeout_ms)
{
    ASSERT_TRUE(rank >= 0 && rank < TG_MAXR);
    wf_config_t *k = &tg_knob_store[rank];
    memset(cfg, 0, sizeof(*cfg));
    cfg->rank = rank;
    cfg->size = size;
    cfg->job_key = TG_JOB_KEY;
    cfg->comm_key = TG_COMM_KEY;
    memcpy(cfg->secret, tg_secret, sizeof(cfg->secret));
    snprintf(cfg->ifname, sizeof(cfg->ifname), "%s", ifname);
    cfg->timeout_ms = timeout_ms;
    /* The verbs knobs come from the environment as in a communicator, so
     * make test-rdma runs the suite with WEFT_IB_QPS=2 and 4, with
     * several WEFT_IB_ZCOPY_MIN thresholds and over two rails
     * (WEFT_IB_HCA=rxe0,rxe1) as well. */
    if (wf_config_load(k, NULL) != WEFT_OK)
        memset(k, 0, sizeof(*k));
    k->ib_gid_index = -1; /* the transport picks the GID */
    /* The TCP knobs are the test's: no send buffer bound unless a test
     * asks (tcp_sndbuf.c), streams and single copy as the pass says. */
    k->tcp_sndbuf = 0;
    k->tcp_streams = tg_tcp_streams;
    k->tcp_stripe_min = tg_tcp_streams > 1 ? TG_STRIPE_MIN : 0;
    k->tcp_cma_min = tg_tcp_cma_min;
    k->shm_cma_min = (int64_t)tg_shm_cma_min;
    k->shm_slots = tg_shm_slots;
    cfg->knobs = k;
    cfg->topo_numa = -1; /* no topology: staging memory unbound */
}

void tg_open_one(tg_group_t *g, int r, const wf_tconfig_t *cfg)
{
    ASSERT_OK(g->ops->init(cfg, &g->ctx[r]));
    g->alen[r] = WF_TADDR_MAX;
    ASSERT_OK(g->ops->get_address(g->ctx[r], g->addr[r], &g->alen[r]));
    ASSERT_TRUE(g->alen[r] > 0 && g->alen[r] <= WF_TADDR_MAX);
}

void tg_open_ex(tg_group_t *g, const wf_transport_ops_t *ops, int n,
                const char *ifname, int64_t timeout_ms)
{
    wf_tconfig_t cfg;

    memset(g, 0, sizeof(*g));
    g->ops = ops;
    g->n = n;
    weft_set_logger(tg_log_capture, NULL);
    for (int r = 0; r < n; r++) {
        tg_make_cfg(&cfg, r, n, ifname, timeout_ms);
        tg_open_one(g, r, &cfg);
    }
}

void tg_open_tcp_with(tg_group_t *g, int n, int64_t timeout_ms,
                      void (*adjust)(wf_tconfig_t *cfg, int rank, void *arg),
                      void *arg)
{
    wf_tconfig_t cfg;

    memset(g, 0, sizeof(*g));
    g->ops = &wf_tcp_transport;
    g->n = n;
    weft_set_logger(tg_log_capture, NULL);
    for (int r = 0; r < n; r++) {
        tg_make_cfg(&cfg, r, n, "lo", timeout_ms);
        adjust(&cfg, r, arg);
        tg_open_one(g, r, &cfg);
    }
}

void tg_open(tg_group_t *g, const wf_transport_ops_t *ops, int n)
{
    tg_open_ex(g, ops, n, "lo", 10000);
}

void tg_fini(tg_group_t *g, int r)
{
    g->ops->fini(g->ctx[r]);
    g->ctx[r] = NULL;
}

void tg_close(tg_group_t *g)
{
    for (int r = 0; r < g->n; r++)
        tg_fini(g, r);
}

void tg_progress(tg_group_t *g)
{
    for (int r = 0; r < g->n; r++)
        if (g->ctx[r])
            ASSERT_TRUE(g->ops->progress(g->ctx[r]) >= 0);
}

/* Drives every context for `ms` milliseconds. */
void tg_spin(tg_group_t *g, int ms)
{
    uint64_t end = tg_now_ms() + (uint64_t)ms;
    while (tg_now_ms() < end) {
        tg_progress(g);
        usleep(200);
    }
}

void tg_connect(tg_group_t *g, int a, int b)
{
    weft_status_t st = g->ops->connect(g->ctx[a], b, g->addr[b], g->alen[b]);
    ASSERT_TRUE(st == WEFT_OK || st == WEFT_INPROGRESS);
}

/* Waits for a request of context `r`; returns its final status. */
weft_status_t tg_wait(tg_group_t *g, int r, wf_treq_t *req,
                      wf_treq_info_t *info)
{
    uint64_t deadline = tg_now_ms() + TG_WAIT_MS;
    weft_status_t st;

    while ((st = g->ops->test(g->ctx[r], req, info)) == WEFT_INPROGRESS) {
        if (tg_now_ms() > deadline)
            wf_test_fail(__FILE__, __LINE__, "request of rank %d hangs", r);
        tg_progress(g);
    }
    return st;
}

void tg_fill(uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 12));
}

bool tg_check(const uint8_t *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (uint8_t)(i * 131u + seed * 7u + (i >> 12)))
            return false;
    return true;
}

/* Posts a send of `len` bytes and a matching receive, waits for both and
 * checks data, length and signature. */
void tg_xfer(tg_group_t *g, int from, int to, uint64_t tag, size_t len)
{
    uint8_t *sbuf = malloc(len + 1), *rbuf = malloc(len + 1);
    uint64_t sig[2] = {tag * 3 + 1, ~tag};
    wf_treq_t *sr, *rr;
    wf_treq_info_t info;

    ASSERT_TRUE(sbuf && rbuf);
    tg_fill(sbuf, len, (unsigned)tag);
    memset(rbuf, 0, len + 1);
    ASSERT_OK(g->ops->isend(g->ctx[from], to, tag, sig, sbuf, len, NULL, &sr));
    ASSERT_OK(g->ops->irecv(g->ctx[to], from, tag, rbuf, len, NULL, &rr));
    ASSERT_OK(tg_wait(g, from, sr, &info));
    ASSERT_EQ(info.len, len);
    ASSERT_OK(tg_wait(g, to, rr, &info));
    ASSERT_EQ(info.len, len);
    ASSERT_TRUE(!info.truncated);
    ASSERT_TRUE(info.sig[0] == sig[0] && info.sig[1] == sig[1]);
    ASSERT_TRUE(tg_check(rbuf, len, (unsigned)tag));
    free(sbuf);
    free(rbuf);
}

void tg_connect_pair(tg_group_t *g, int a, int b)
{
    tg_connect(g, a, b);
    tg_connect(g, b, a);
}

/* Runs `fn` for every compiled-in transport. */
void tg_each_transport(void (*fn)(const wf_transport_ops_t *ops))
{
    char names[256], *save = NULL;

    /* Every compiled-in transport, then the route over them (auto). */
    snprintf(names, sizeof(names), "%s,route", wf_transport_names());
    for (char *n = strtok_r(names, ",", &save); n;
         n = strtok_r(NULL, ",", &save)) {
        const wf_transport_ops_t *ops = strcmp(n, "route") == 0
                                            ? &wf_route_transport
                                            : wf_transport_find(n);
        ASSERT_TRUE(ops != NULL);
        ASSERT_EQ(ops->size, sizeof(wf_transport_ops_t));
        if (ops == &wf_route_transport) {
            printf("transport route (auto: %s)\n", wf_transport_names());
            fn(ops);
            continue;
        }
        /* A transport compiled in for hardware this host lacks (verbs
         * without an RDMA device) is checked where it can run
         * (make test-rdma). */
        if (wf_transport_select(n, &ops) == WEFT_ERR_UNSUPPORTED) {
            printf("transport %s: not usable on this host, skipped\n", n);
            continue;
        }
        printf("transport %s\n", ops->name);
        fn(ops);
        if (ops == &wf_shm_transport) {
            tg_shm_cma_min = 0;
            tg_shm_slots = 8;
            printf("transport shm, rings only, 8 slots\n");
            fn(ops);
            tg_shm_cma_min = 1;
            tg_shm_slots = 64;
            printf("transport shm, single copy\n");
            fn(ops);
            tg_shm_cma_min = 32u << 10;
            continue;
        }
        if (ops != &wf_tcp_transport)
            continue;
        /* TCP again with several streams: every message of TG_STRIPE_MIN
         * bytes or more is striped, so the suite covers reassembly. */
        for (int k = 0; k < 2; k++) {
            tg_tcp_streams = k == 0 ? 2 : 4;
            printf("transport tcp, %d streams\n", tg_tcp_streams);
            fn(ops);
        }
        tg_tcp_streams = 1;
        /* And with every message a single copy between the contexts
         * (one process: process_vm_readv of its own memory). */
        tg_tcp_cma_min = 1;
        printf("transport tcp, single copy\n");
        fn(ops);
        tg_tcp_cma_min = 0;
    }
}

bool tg_fd_readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

const char *tg_log_text(void)
{
    return tg_log_buf;
}

void tg_log_clear(void)
{
    pthread_mutex_lock(&log_mu);
    tg_log_len = 0;
    tg_log_buf[0] = '\0';
    pthread_mutex_unlock(&log_mu);
}
