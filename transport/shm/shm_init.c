/*
 * shm_init.c - the shared-memory transport's context: its listening Unix
 * socket, eventfd and epoll set, the address it publishes, query, and
 * the ops table.
 *
 * Each context listens on an abstract Unix socket (no file, gone with the
 * process) named by random bytes; the address blob carries that name and
 * the machine's node key.  Abstract sockets belong to a network
 * namespace, so the node key counts the namespace in: two namespaces of
 * one kernel are two hosts to this transport, as they are to the tests
 * that stand them in for hosts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "cma.h"
#include "config.h"
#include "shm.h"


bool wf_shm_probe(char *why, size_t why_len)
{
    int fd = memfd_create("weft-shm-probe", MFD_CLOEXEC);

    if (fd < 0) {
        snprintf(why, why_len, "memfd_create: %s", strerror(errno));
        return false;
    }
    close(fd);
    return true;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static weft_status_t sys_fail(const char *what)
{
    WEFT_WARN(NET, "shm: %s failed: %s", what, strerror(errno));
    return WEFT_ERR_SYSTEM;
}

static weft_status_t open_listener(wf_tctx_t *ctx)
{
    uint8_t rnd[12];
    struct sockaddr_un sa;
    char *name = ctx->addr.sock;

    WEFT_CHECK(wf_auth_random(rnd, sizeof(rnd)));
    int n = snprintf(name, WF_SHM_SOCK_NAME, "weft-shm-");
    for (size_t i = 0; i < sizeof(rnd); i++)
        n += snprintf(name + n, (size_t)(WF_SHM_SOCK_NAME - n), "%02x",
                      rnd[i]);
    ctx->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      0);
    if (ctx->lfd < 0)
        return sys_fail("socket(AF_UNIX)");
    socklen_t sl = wf_shm_sockaddr(name, &sa);
    if (bind(ctx->lfd, (struct sockaddr *)&sa, sl) != 0)
        return sys_fail("bind of the abstract socket");
    if (listen(ctx->lfd, 128) != 0)
        return sys_fail("listen");
    return WEFT_OK;
}

static weft_status_t epoll_add(wf_tctx_t *ctx, int fd, uint64_t key)
{
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = key};

    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &e) != 0)
        return sys_fail("epoll_ctl");
    return WEFT_OK;
}

static weft_status_t open_context(wf_tctx_t *ctx)
{
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0)
        return sys_fail("epoll_create1");
    ctx->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->efd < 0)
        return sys_fail("eventfd");
    WEFT_CHECK(open_listener(ctx));
    WEFT_CHECK(epoll_add(ctx, ctx->lfd, WF_SHM_KEY_LISTEN));
    WEFT_CHECK(epoll_add(ctx, ctx->efd, WF_SHM_KEY_WAKE));
    WEFT_CHECK(wf_auth_random(&ctx->cookie, sizeof(ctx->cookie)));
    if (ctx->cma_min)
        wf_cma_allow_readers();
    ctx->addr.magic = WF_SHM_ADDR_MAGIC;
    ctx->addr.node = wf_shared_memory_key();
    ctx->addr.pid = (uint32_t)getpid();
    return WEFT_OK;
}

static void knobs_read(wf_tctx_t *ctx, const wf_config_t *k)
{
    int64_t slots = k ? k->shm_slots : 0;
    uint32_t s = 8;

    /* A power of two, so a slot's index is a mask of its position. */
    while (s < 4096 && (int64_t)s < slots)
        s <<= 1;
    ctx->slots = slots > 0 ? s : 64;
    ctx->cma_min = k ? (size_t)k->shm_cma_min : 0;
}

void wf_shm_fini(wf_tctx_t *ctx);

static weft_status_t wf_shm_init(const wf_tconfig_t *cfg, wf_tctx_t **out)
{
    weft_status_t st;
    wf_tctx_t *ctx;

    if (!cfg || !out || cfg->size < 1 || cfg->rank < 0 ||
        cfg->rank >= cfg->size)
        return WEFT_ERR_INVALID_ARG;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->lfd = ctx->efd = ctx->epfd = -1;
    wf_match_init(&ctx->m, "shm", cfg->rank, cfg->size, sizeof(wf_shm_msg_t));
    ctx->m.claim_remote = wf_shm_claim_remote;
    ctx->rank = cfg->rank;
    ctx->size = cfg->size;
    ctx->job_key = cfg->job_key;
    ctx->comm_key = cfg->comm_key;
    memcpy(ctx->secret, cfg->secret, sizeof(ctx->secret));
    ctx->timeout_ms = cfg->timeout_ms;
    knobs_read(ctx, cfg->knobs);
    ctx->peers = calloc((size_t)cfg->size, sizeof(*ctx->peers));
    ctx->up = calloc((size_t)cfg->size, sizeof(*ctx->up));
    if (!ctx->peers || !ctx->up) {
        wf_shm_fini(ctx);
        return WEFT_ERR_NO_MEMORY;
    }
    WF_MATCH_PEERS(&ctx->m, ctx->peers, m);
    for (int i = 0; i < cfg->size; i++) {
        wf_shm_peer_t *p = &ctx->peers[i];
        p->idx = i;
        p->fd = p->efd = -1;
        snprintf(p->desc, sizeof(p->desc), "peer %d", i);
        p->m.desc = p->desc;
    }
    st = open_context(ctx);
    if (st != WEFT_OK) {
        wf_shm_fini(ctx);
        return st;
    }
    WEFT_DEBUG(NET, "shm: rank %d listens on @%s (%u slots per ring, "
               "single copy from %zu bytes)", ctx->rank, ctx->addr.sock,
               ctx->slots, ctx->cma_min);
    *out = ctx;
    return WEFT_OK;
}

void wf_shm_fini(wf_tctx_t *ctx)
{
    if (!ctx)
        return;
    for (int i = 0; i < ctx->npend; i++)
        close(ctx->pend[i].fd);
    for (int i = 0; ctx->peers && i < ctx->size; i++) {
        wf_shm_peer_t *p = &ctx->peers[i];
        wf_shm_peer_close(ctx, p);
        free(p->fins);
    }
    wf_match_fini(&ctx->m);
    close_fd(&ctx->lfd);
    close_fd(&ctx->efd);
    close_fd(&ctx->epfd);
    free(ctx->peers);
    free(ctx->up);
    free(ctx);
}

static weft_status_t wf_shm_query(wf_tctx_t *ctx, wf_tdev_attr_t *attr)
{
    if (!ctx || !attr)
        return WEFT_ERR_INVALID_ARG;
    memset(attr, 0, sizeof(*attr));
    wf_strlcpy(attr->name, "shm", sizeof(attr->name));
    snprintf(attr->address, sizeof(attr->address), "pid %u @%s",
             ctx->addr.pid, ctx->addr.sock);
    attr->caps = WF_TCAP_HOST_MEM;
    attr->single_copy_min = ctx->cma_min;
    return WEFT_OK;
}

static weft_status_t wf_shm_get_address(wf_tctx_t *ctx, void *addr,
                                        size_t *len)
{
    if (!ctx || !addr || !len)
        return WEFT_ERR_INVALID_ARG;
    if (*len < sizeof(ctx->addr)) {
        WEFT_WARN(NET, "shm: address buffer of %zu bytes, need %zu", *len,
                  sizeof(ctx->addr));
        return WEFT_ERR_INVALID_ARG;
    }
    memcpy(addr, &ctx->addr, sizeof(ctx->addr));
    *len = sizeof(ctx->addr);
    return WEFT_OK;
}

static weft_status_t shm_mem_reg(wf_tctx_t *ctx, void *buf, size_t len,
                                 int memtype, void **mh)
{
    (void)ctx, (void)buf, (void)len;
    if (!mh)
        return WEFT_ERR_INVALID_ARG;
    *mh = NULL;
    return memtype == 0 ? WEFT_OK : WEFT_ERR_UNSUPPORTED;
}

static void shm_mem_dereg(wf_tctx_t *ctx, void *mh)
{
    (void)ctx, (void)mh;
}

/* Only a process of this machine and network namespace: its socket is
 * in our namespace and its memory in our kernel. */
static bool shm_reaches(wf_tctx_t *ctx, const void *addr, size_t len)
{
    wf_shm_addr_t a;

    if (!ctx || !addr || len != sizeof(a))
        return false;
    memcpy(&a, addr, sizeof(a));
    return a.magic == WF_SHM_ADDR_MAGIC && a.node == ctx->addr.node;
}

static int wf_shm_get_fd(wf_tctx_t *ctx)
{
    return ctx ? ctx->epfd : -1;
}

static const char *shm_peer_describe(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->size)
        return "peer ?";
    return ctx->peers[peer].desc;
}

static bool shm_peer_linked(wf_tctx_t *ctx, int peer)
{
    if (!ctx || peer < 0 || peer >= ctx->size)
        return false;
    int s = ctx->peers[peer].state;
    return s != WF_SHM_NONE && s != WF_SHM_FAILED;
}

const wf_transport_ops_t wf_shm_transport = {
    .size = sizeof(wf_transport_ops_t),
    .name = "shm",
    .caps = WF_TCAP_HOST_MEM,
    .init = wf_shm_init,
    .fini = wf_shm_fini,
    .query = wf_shm_query,
    .get_address = wf_shm_get_address,
    .connect = wf_shm_connect,
    .mem_reg = shm_mem_reg,
    .mem_dereg = shm_mem_dereg,
    .isend = wf_shm_isend,
    .irecv = wf_shm_irecv,
    .test = wf_match_test,
    .progress = wf_shm_progress,
    .get_fd = wf_shm_get_fd,
    .peer_describe = shm_peer_describe,
    .peer_linked = shm_peer_linked,
    .scan_unexpected = wf_match_scan_unexpected,
    .send_pulled = wf_shm_send_pulled,
    .wait_prepare = wf_shm_wait_prepare,
    .reaches = shm_reaches,
};
